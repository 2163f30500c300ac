"""Operator calls in generated programs.

Type-directed elementwise calls wherever a tensor is wanted (``_gen_op``, sometimes
``op(%e, %e)`` with one shared pure argument), and valid calls of any registered operator
(``random_op_call``, drawn by :mod:`conformance.strategies.opcalls`) for ``let`` bindings
whose results ``main`` observes.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from conformance.strategies import opcalls
from conformance.strategies.programgen.base import _GenBase
from conformance.strategies.programgen.scope import _Ctx, _is_pure
from conformance.strategies.typeutil import type_key
from semantics.expr import Call, Constant, Expr, Op, Tuple
from semantics.types import TensorType, TupleType, Type, TypeVar

_DIVISIONS = ("divide", "floor_divide", "mod", "floor_mod")


def _empty(t: Type) -> bool:
    """A tensor (or tuple of tensors) type with a zero dimension."""
    if isinstance(t, TensorType):
        return any(d == 0 for d in t.shape if isinstance(d, int))
    if isinstance(t, TupleType):
        return any(_empty(f) for f in t.fields)
    return False


class _OpGen(_GenBase):
    """Operator calls: elementwise producers and registered valid calls."""

    # --- elementwise calls anywhere a tensor is wanted -------------------------------------------
    def _gen_op(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        assert isinstance(t, TensorType)
        call = self.pick_call(opcalls.producers(t, self.ops, self.cfg.dtypes))
        same = len(call.arg_types) > 1 and len({type_key(a) for a in call.arg_types}) == 1
        if same and "sharing" in self.f and self.coin(3):
            # ``op(%e, %e)``: one pure node used twice (a graph binding when printed).
            at = call.arg_types[0]
            arg = self._gen_op(at, ctx, max(d - 1, 0)) if isinstance(at, TensorType) and \
                opcalls.producers(at, self.ops, self.cfg.dtypes) else self.gen(at, ctx, d)
            if _is_pure(arg, self.s.pure):
                args = (arg,) * len(call.arg_types)
            else:
                args = (arg, *(self.gen(a, ctx, d) for a in call.arg_types[1:]))
        else:
            args = tuple(self.gen(a, ctx, d) for a in call.arg_types)
        args = self._safe_divisor(call.op, args, call.arg_types)
        node = Call(Op(call.op), args, call.attrs)
        self._note(node, t, ctx)
        return node

    # --- operator bindings ----------------------------------------------------------------------
    def random_op_call(self, ctx: _Ctx, d: int, name: str | None = None
                       ) -> tuple[Expr, Type] | None:
        """A valid call of ``name`` (or a random operator) with generated arguments."""
        op = name or (self.pick(self.focus_ops) if self.focus_ops and self.coin(2)
                      else self.pick(self.ops))
        call = self.valid_call(op)
        if call is None:
            return None
        args = [self._op_arg(call, i, t, ctx, d) for i, t in enumerate(call.arg_types)]
        return Call(Op(op), tuple(args), call.attrs), call.result

    def _op_arg(self, call: opcalls.OpCall, i: int, t: Type, ctx: _Ctx, d: int) -> Expr:
        if call.arg_values is not None and call.arg_values[i] is not None:
            value = call.arg_values[i]
            if isinstance(value, tuple):
                parts = tuple(Constant(np.asarray(v)) for v in value)
                self.s.pin(*parts)
                return Tuple(parts)
            const = Constant(np.asarray(value))
            self.s.pin(const)
            return const
        if self.coin(2):
            # A simple argument: a variable of the type, else a constant (which ``main``
            # may lift to a parameter), so inputs and edge cases reach the operator.
            same = ctx.by_key.get(type_key(t))
            if same and self.coin(2):
                return self.pick(same[::-1][:3])
            if not isinstance(t, TypeVar):
                return self.literal(t, ctx, 0)
        return self.gen(t, ctx, d)

    def valid_call(self, op: str) -> opcalls.OpCall | None:
        """A valid call of ``op``; calls on zero-size tensors (whose results hide most
        mistakes) are redrawn once."""
        call = None
        for _ in range(2):
            call = opcalls.draw_valid_call(self.draw, op, self.cfg.dtypes, self.cfg.max_rank,
                                           self.cfg.max_dim)
            if call is None or not any(_empty(t) for t in call.arg_types):
                return call
        return call

    # --- dataflow steps -------------------------------------------------------------------------
    def flow_call(self, ctx: _Ctx, d: int) -> tuple[Expr, Type] | None:
        """An elementwise call over tensors ``main`` bound before (values flow on).

        The result type is that of an earlier tensor variable (the most recent ones
        first), and each argument is, by preference, one of the recent variables of its
        type (possibly the same one twice: ``subtract(%x, %x)``), else a constant or a
        generated expression.
        """
        tensors = [t for _, t in ctx.vars if isinstance(t, TensorType) and
                   all(isinstance(x, int) for x in t.shape)]
        if tensors and not self.coin(4):
            t = self.pick(tensors[::-1][:4])
        else:
            t = self.tensor_type()
        calls = opcalls.producers(t, self.ops, self.cfg.dtypes)
        if not calls:
            return None
        call = self.pick_call(calls)
        args: list[Expr] = []
        # One call in four passes one variable for all its same-typed arguments.
        same = self.coin(4)
        for at in call.arg_types:
            recent = ctx.by_key.get(type_key(at), [])[::-1][:3]
            if same and recent:
                args.append(recent[0])
            elif recent and not self.coin(3):
                args.append(self.pick(recent))
            elif self.coin(2):
                args.append(self.literal(at, ctx, 0))
            elif isinstance(at, TensorType) and self.coin(2) and \
                    opcalls.producers(at, self.ops, self.cfg.dtypes):
                args.append(self._gen_op(at, ctx, 0))     # a nested elementwise call
            else:
                args.append(self.gen(at, ctx, d))
        return Call(Op(call.op), self._safe_divisor(call.op, tuple(args), call.arg_types),
                    call.attrs), t

    def pick_call(self, calls: list[opcalls.OpCall]) -> opcalls.OpCall:
        """One of ``calls``: half of the time one of the program's focus operators."""
        if self.focus_ops:
            focus = [c for c in calls if c.op in self.focus_ops]
            if focus and self.coin(2):
                return self.pick(focus)
        return self.pick(calls)

    def _safe_divisor(self, op: str, args: tuple[Expr, ...], types: tuple[Type, ...]
                      ) -> tuple[Expr, ...]:
        """Integer division by a generated value traps when it is zero (the whole run then
        ends in the trap and observes nothing); most of the time the divisor becomes a
        nonzero constant (pinned: never lifted to a parameter)."""
        t = types[-1] if types else None
        if op not in _DIVISIONS or not isinstance(t, TensorType) or len(args) != 2 or \
                np.dtype(t.dtype).kind not in "iu" or self.coin(4):
            return args
        n = int(np.prod(t.shape)) if t.shape else 1
        lo = 1 if np.dtype(t.dtype).kind == "u" else -self.cfg.value_bound
        vals = self.draw(st.lists(st.integers(lo, self.cfg.value_bound).filter(bool),
                                  min_size=n, max_size=n))
        divisor = Constant(np.array(vals, dtype=np.int64).astype(t.dtype).reshape(t.shape))
        self.s.pin(divisor)
        return (args[0], divisor)
