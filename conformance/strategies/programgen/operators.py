"""Operator calls in generated programs.

Type-directed elementwise calls wherever a tensor is wanted (``_gen_op``, sometimes
``op(%e, %e)`` with one shared pure argument), and valid calls of any registered operator
(``random_op_call``, drawn by :mod:`conformance.strategies.opcalls`) for ``let`` bindings
whose results ``main`` observes.
"""

from __future__ import annotations

import numpy as np

from conformance.strategies import opcalls
from conformance.strategies.programgen.base import _GenBase
from conformance.strategies.programgen.scope import _Ctx, _is_pure
from conformance.strategies.typeutil import type_key
from semantics.expr import Call, Constant, Expr, Op, Tuple
from semantics.types import TensorType, Type


class _OpGen(_GenBase):
    """Operator calls: elementwise producers and registered valid calls."""

    # --- elementwise calls anywhere a tensor is wanted -------------------------------------------
    def _gen_op(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        assert isinstance(t, TensorType)
        call = self.pick(opcalls.producers(t, self.ops, self.cfg.dtypes))
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
        node = Call(Op(call.op), args, call.attrs)
        self._note(node, t, ctx)
        return node

    # --- operator bindings ----------------------------------------------------------------------
    def random_op_call(self, ctx: _Ctx, d: int, name: str | None = None
                       ) -> tuple[Expr, Type] | None:
        """A valid call of ``name`` (or a random operator) with generated arguments."""
        op = name or self.pick(self.ops)
        call = self.valid_call(op)
        if call is None:
            return None
        args = [self._op_arg(call, i, t, ctx, d) for i, t in enumerate(call.arg_types)]
        return Call(Op(op), tuple(args), call.attrs), call.result

    def _op_arg(self, call: opcalls.OpCall, i: int, t: Type, ctx: _Ctx, d: int) -> Expr:
        if call.arg_values is not None and call.arg_values[i] is not None:
            value = call.arg_values[i]
            if isinstance(value, tuple):
                return Tuple(tuple(Constant(np.asarray(v)) for v in value))
            return Constant(np.asarray(value))
        return self.gen(t, ctx, d)

    def valid_call(self, op: str) -> opcalls.OpCall | None:
        return opcalls.draw_valid_call(self.draw, op, self.cfg.dtypes, self.cfg.max_rank,
                                       self.cfg.max_dim)
