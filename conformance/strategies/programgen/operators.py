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
from conformance.strategies.programgen.scope import _Ctx, _ints, _is_pure
from conformance.strategies.typeutil import int_shape, type_key
from semantics.dtypes import is_float
from semantics.expr import Attrs, Call, Constant, Expr, Op, Tuple
from semantics.types import TensorType, TupleType, Type, TypeVar

_DIVISIONS = ("divide", "floor_divide", "mod", "floor_mod")
_ARITH = ("add", "subtract", "multiply")
# The operators of the classic algebraic rewrites each probe form exercises (``x - x → 0``,
# ``x == x → True``, ``min(x, x) → x``; ``x * 0 → 0``, ``x + 0 → x``, ``x / 1 → x``, ...).
_CLASSIC = {
    "self": ("subtract", "divide", "equal", "not_equal", "less_equal", "greater", "minimum",
             "maximum", "floor_mod"),
    "unit": ("multiply", "add", "subtract", "divide", "minimum", "maximum", "power"),
}


# The self probes' favourites: ``x - x -> 0``, ``x / x -> 1``, ``x == x -> True``.
_SELF_FOLDS = ("subtract", "divide", "equal")

# The operators of the paper's models (ResNet, MobileNet, DQN, the RNNs) and the layout,
# reduction and elementwise operators rewriting passes most often touch: one operator
# binding in four of ``main`` is drawn from these (those the configuration allows), the
# rest uniformly from every operator. A pass written for models (a student's simplifier, a
# fusion or layout pass) meets them first, and a slip in one of them (``max_pool2d``
# lowered as ``avg_pool2d``) is found after a few programs instead of a hundred.
_MODEL_OPS = ("nn.conv2d", "nn.dense", "nn.max_pool2d", "nn.avg_pool2d",
              "nn.global_avg_pool2d", "nn.batch_norm", "nn.relu", "nn.softmax", "nn.bias_add",
              "nn.batch_flatten", "add", "subtract", "multiply", "divide", "minimum",
              "maximum", "clip", "concatenate", "reshape", "transpose", "strided_slice",
              "sum", "mean", "max", "tanh", "sigmoid")

# Operators with an identity element (the probes' ``x * 1``, ``x + 0``, ``x - 0``).
_IDENTITY: dict[str, float] = {"multiply": 1, "divide": 1, "add": 0, "subtract": 0}


def _empty(t: Type) -> bool:
    """A tensor (or tuple of tensors) type with a zero dimension."""
    if isinstance(t, TensorType):
        return any(d == 0 for d in t.shape if isinstance(d, int))
    if isinstance(t, TupleType):
        return any(_empty(f) for f in t.fields)
    return False


def _has_float(types: tuple[Type, ...]) -> bool:
    """A float tensor among ``types`` (tuples opened)."""
    stack = list(types)
    while stack:
        t = stack.pop()
        if isinstance(t, TensorType) and is_float(t.dtype):
            return True
        if isinstance(t, TupleType):
            stack.extend(t.fields)
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
        model = [o for o in _MODEL_OPS if o in self.ops]
        op = name or (self.pick(self.focus_ops) if self.focus_ops and self.coin(2)
                      else self.pick(model) if model and self.coin(4) else self.pick(self.ops))
        call = self.valid_call(op)
        if call is None:
            return None
        args = [self._op_arg(call, i, t, ctx, d) for i, t in enumerate(call.arg_types)]
        return Call(Op(op), tuple(args), call.attrs), call.result

    def _op_arg(self, call: opcalls.OpCall, i: int, t: Type, ctx: _Ctx, d: int) -> Expr:
        if call.op == "nn.batch_norm" and i == 4 and isinstance(t, TensorType) and \
                self.coin(2):
            # A zero variance (with ``epsilon=0`` a division by zero: ±inf or NaN, which
            # SimplifyInference-style rewrites get wrong).
            zero = Constant(np.zeros(int_shape(t), dtype=t.dtype))
            self.s.pin(zero)
            return zero
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
        """A valid call of ``op`` (at most three draws): a call on or to zero-size tensors
        (whose results hide most mistakes: an empty slice, a window that fits nowhere) is
        redrawn, and so, half of the time, is a first call without a float argument (the
        families draw dtypes uniformly, most of them integer ones, while the special-value
        mistakes live in floats)."""
        call = None
        for attempt in range(3):
            call = opcalls.draw_valid_call(self.draw, op, self.cfg.dtypes, self.cfg.max_rank,
                                           self.cfg.max_dim)
            if call is None:
                return None
            empty = any(_empty(t) for t in call.arg_types) or _empty(call.result)
            if attempt == 0 and not empty and not _has_float(call.arg_types) and self.coin(2):
                continue
            if not empty:
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

    # --- edge probes ----------------------------------------------------------------------------
    def probe_call(self, ctx: _Ctx, d: int) -> tuple[Expr, Type] | None:
        """An *edge probe*: a binary call that puts an earlier tensor of ``main`` in the
        positions where rewriting passes make their classic special-value mistakes.

        Forms (one drawn): ``op(%x, %x)`` (``x - x``, ``x / x``, ``x == x``, ``min(x, x)``);
        ``op(%x, c)`` or ``op(c, %x)`` with ``c`` a constant filled with a unit or
        absorbing element (0, 1, -1, -0.0: ``x * 0``, ``x + 0``, ``min(x, 0)``); a chain
        ``op2(op1(%x, a), b)`` of ``add``/``subtract``/``multiply``, often one that undoes
        itself (``(x + c) - c``) with ``c`` near the dtype's range or precision limit, where
        rounding after every step differs from rounding once and intermediate results
        overflow; and a broadcast ``op(%x, %r)`` of a square ``%x`` with a lower-rank
        ``%r``, which tells a trailing-dimension alignment from a leading one; a *rounding*
        chain ``(x + c) - c`` in the narrowest float dtype (float16) with ``c`` large; a
        *window* ``strided_slice`` and a *layout* ``transpose`` (:meth:`_layout_probe`); a
        NaN-first ``minimum``/``maximum`` (:meth:`_minmax_probe`). ``%x`` is
        preferably a recent float tensor, whose NaN, ±inf and -0.0 elements (from the
        inputs) reach the probe. The constants are pinned (never lifted to parameters):
        a rewrite that keys on a constant sees one.

        Returns:
            ``(call, result type)``, or None when no operator fits.
        """
        form = self.pick(("self", "unit", "chain", "broadcast", "self", "unit", "widen",
                          "notcmp", "clip", "widen", "self", "round", "window", "layout",
                          "minmax", "minmax"))
        x, t = self._probe_operand(form, ctx)
        if form in ("window", "layout"):
            return self._layout_probe(form, x, t)
        made = self._minmax_probe(x, t, ctx) if form == "minmax" else \
            self._rounding_chain(x, t) if form == "round" else None
        if made is not None:
            return made, t
        form = {"minmax": "unit", "round": "chain"}.get(form, form)
        if form == "clip":
            if "clip" not in self.ops or t.dtype == "bool":
                return None
            lo = float(self.draw(_ints(-2, 1)))
            hi = lo + float(self.draw(_ints(1, 3)))
            return Call(Op("clip"), (x,), Attrs({"a_min": lo, "a_max": hi})), t
        if form == "notcmp":
            return self._not_comparison(x, t, ctx)
        if form == "widen":
            return self._widening(x, t)
        if form == "broadcast":
            low = TensorType(t.shape[1:], t.dtype)
            recent = ctx.by_key.get(type_key(low), [])[::-1][:3]
            r = self.pick(recent) if recent and self.coin(2) else self.literal(low, ctx, 0)
            a_t, b_t, a, b = (t, low, x, r) if self.coin(2) else (low, t, r, x)
            calls = opcalls.binary_calls(a_t, b_t, self.ops)
            if not calls:
                return None
            call = self.pick_call(calls)
            return self._probe_node(call, (a, b)), call.result
        calls = opcalls.binary_calls(t, t, self.ops)
        if not calls:
            return None
        if form == "chain":
            arith = [c for c in calls if c.op in _ARITH]
            if arith:
                return self._chain(arith, x, t, ctx), t
            form = "unit"
        # Half of the self probes are ``x - x``, ``x / x`` or ``x == x`` (the folds a
        # simplifier most often gets wrong: at NaN, ±inf and 0 / 0); half of the rest an
        # operator of the form's classic rewrite rules.
        folds = [c for c in calls if c.op in _SELF_FOLDS] if form == "self" else []
        classic = [c for c in calls if c.op in _CLASSIC[form]]
        if folds and self.coin(2):
            call = self.pick(folds)
        elif classic and self.coin(2):
            call = self.pick(classic)
        else:
            call = self.pick_call(calls)
        if form == "self":
            return self._probe_node(call, (x, x)), call.result
        c = self._unit_constant(t)
        args = (x, c) if self.coin(2) else (c, x)
        return self._probe_node(call, args), call.result

    def _probe_operand(self, form: str, ctx: _Ctx) -> tuple[Expr, TensorType]:
        """The operand ``%x`` of an edge probe of ``form``, and its type: an earlier tensor
        of ``main`` (a float by preference) or a new constant (a square one for
        ``broadcast``; for ``self``, mostly a float always lifted to a parameter)."""
        tensors = [(v, t) for v, t in ctx.vars if isinstance(t, TensorType) and
                   all(isinstance(x, int) for x in t.shape)][::-1]
        if form == "broadcast":
            tensors = [(v, t) for v, t in tensors if len(t.shape) == 2 and
                       t.shape[0] == t.shape[1] and int_shape(t)[0] >= 2]
        elif form in ("window", "layout"):
            tensors = [(v, t) for v, t in tensors if len(t.shape) >= (form == "layout") + 1
                       and max(int_shape(t)) >= 2]
        floats = [(v, t) for v, t in tensors if is_float(t.dtype)]
        x: Expr
        float_dtypes = [d for d in self.cfg.dtypes if is_float(d)]
        if form in ("round", "minmax") and float_dtypes:
            # The narrowest float (float16; for ``minmax`` any float): a recent one, else a
            # new parameter of two or more elements (odd integers and the IEEE specials of
            # the inputs reach it).
            narrow = min(float_dtypes, key=lambda d: np.dtype(d).itemsize) \
                if form == "round" else self.pick(float_dtypes)
            mine = [(v, t) for v, t in floats if t.dtype == narrow]
            if mine and self.coin(3):
                x, t = self.pick(mine[:4])
            else:
                t = self.tensor_type(narrow)
                if int(np.prod(int_shape(t))) < 2:
                    t = TensorType((2, *t.shape), t.dtype)
                x = self.literal(t, ctx, 0)
                self.s.always_lift(x)
        elif form == "self" and float_dtypes:
            # ``x - x`` is only wrong at NaN and ±inf: a self probe takes a float, mostly a
            # new parameter of two or more elements (the edge cases of the inputs reach
            # it), else a float bound before (which may be computed from constants only).
            if floats and self.coin(4):
                x, t = self.pick(floats[:4])
            else:
                t = self.tensor_type(self.pick(float_dtypes))
                if int(np.prod(int_shape(t))) < 2:
                    t = TensorType((2, *t.shape), t.dtype)
                x = self.literal(t, ctx, 0)
                self.s.always_lift(x)
        elif floats and not self.coin(4):
            x, t = self.pick(floats[:4])
        elif tensors and not self.coin(3):
            x, t = self.pick(tensors[:4])
        else:
            t = self.tensor_type()
            if form == "broadcast":
                k = self.draw(_ints(2, max(2, self.cfg.max_dim)))
                t = TensorType((k, k), t.dtype)
            elif form in ("window", "layout"):
                # Two or more elements along two axes (a window to shift, axes to swap).
                dims = [self.draw(_ints(2, max(2, self.cfg.max_dim))) for _ in range(2)]
                t = TensorType(tuple(dims), t.dtype)
            x = self.literal(t, ctx, 0)
        assert isinstance(t, TensorType)
        return x, t

    def _widening(self, x: Expr, t: TensorType) -> tuple[Expr, Type] | None:
        """``op(%x, c)`` or ``op(c, %x)`` with ``c`` a unit constant of a *bigger* shape
        (``(k, *shape)``): the call broadcasts ``%x``, so ``x * 1 -> x`` or ``x + 0 -> x``
        changes the result's shape."""
        k = self.draw(_ints(2, 3))
        big = TensorType((k, *t.shape), t.dtype)
        calls = opcalls.binary_calls(t, big, self.ops)
        if not calls:
            return None
        # Mostly an operator with an identity element, and that element: the constant
        # looks like a no-op, and only its shape makes it one no longer.
        identity = [c for c in calls if c.op in _IDENTITY]
        call = self.pick(identity) if identity and not self.coin(4) else self.pick_call(calls)
        if call.op in _IDENTITY and not self.coin(4):
            dt = np.dtype(t.dtype)
            c = Constant(np.full(int_shape(big), _IDENTITY[call.op], dtype=dt))
            self.s.pin(c)
        else:
            c = self._unit_constant(big)
        args = (x, c) if self.coin(2) else (c, x)
        return self._probe_node(call, args), call.result

    def _not_comparison(self, x: Expr, t: TensorType, ctx: _Ctx) -> tuple[Expr, Type] | None:
        """A fused comparison chain: ``logical_not(cmp(%x, y))``, half of the time inside
        ``where(..., %x, y)`` — wrong when a compiler turns ``!(a < b)`` into ``a >= b``,
        which differs at NaN (``y``: a recent variable, a special constant or ``%x``)."""
        cmps = [c for c in opcalls.binary_calls(t, t, self.ops)
                if c.op in ("less", "less_equal", "greater", "greater_equal", "equal",
                            "not_equal")]
        if not cmps or "logical_not" not in self.ops:
            return None
        recent = ctx.by_key.get(type_key(t), [])[::-1][:3]
        choice = self.draw(_ints(0, 2))
        y: Expr = self.pick(recent) if choice == 0 and recent else \
            self._unit_constant(t) if choice < 2 else x
        cmp = self.pick(cmps)
        mask: Expr = Call(Op("logical_not"), (Call(Op(cmp.op), (x, y), cmp.attrs),))
        if "where" in self.ops and self.coin(2):
            return Call(Op("where"), (mask, x, y)), t
        return mask, TensorType(t.shape, "bool")

    def _probe_node(self, call: opcalls.OpCall, args: tuple[Expr, ...]) -> Expr:
        return Call(Op(call.op), self._safe_divisor(call.op, args, call.arg_types), call.attrs)

    def _unit_constant(self, t: TensorType) -> Constant:
        """A pinned constant of type ``t`` filled with a unit or absorbing element."""
        dt = np.dtype(t.dtype)
        units: tuple[float | int | bool, ...] = (
            (False, True) if dt.kind == "b" else (0, 1, -1, -0.0) if dt.kind == "f"
            else (0, 1, -1) if dt.kind == "i" else (0, 1))
        if dt.kind in "fiu" and self.coin(4):
            # One time in four an IEEE special or an extreme of the dtype instead.
            # (Without ``finite_extremes``: NaN and ±inf only, see ProgramConfig.)
            extremes = (float(np.finfo(dt).max), float(np.finfo(dt).min)) \
                if dt.kind == "f" and self.cfg.finite_extremes else ()
            units = (np.nan, np.inf, -np.inf, *extremes) if dt.kind == "f" else \
                (int(np.iinfo(dt).max), int(np.iinfo(dt).min))
        c = Constant(np.full(int_shape(t), self.pick(units), dtype=dt))
        self.s.pin(c)
        return c

    def _layout_probe(self, form: str, x: Expr, t: TensorType) -> tuple[Expr, Type] | None:
        """A *window*: ``strided_slice(%x, begin=[b], end=[e])`` on one axis with
        ``0 <= b < e < dim`` (a window shifted by one still fits, and reads other elements);
        a *layout*: ``transpose(%x, axes=perm)`` with an explicit permutation that is not
        its own reverse. None when ``%x`` has no axis long enough (or rank < 2 for a
        layout) or the operator is not allowed."""
        shape = int_shape(t)
        if form == "window":
            axes = [i for i, n in enumerate(shape) if n >= 2]
            if "strided_slice" not in self.ops or not axes:
                return None
            axis = self.pick(axes)
            b = self.draw(_ints(0, shape[axis] - 2))
            e = self.draw(_ints(b + 1, shape[axis] - 1))
            attrs = {"begin": [b], "end": [e], "axes": [axis]}
            out = tuple(e - b if i == axis else n for i, n in enumerate(shape))
            return Call(Op("strided_slice"), (x,), Attrs(attrs)), TensorType(out, t.dtype)
        if "transpose" not in self.ops or len(shape) < 2:
            return None
        perm = list(self.draw(st.permutations(range(len(shape)))))
        if perm == sorted(perm):
            perm = perm[1:] + perm[:1]          # not the identity (never its own reverse)
        out = tuple(shape[i] for i in perm)
        return Call(Op("transpose"), (x,), Attrs({"axes": perm})), TensorType(out, t.dtype)

    def _minmax_probe(self, x: Expr, t: TensorType, ctx: _Ctx) -> Expr | None:
        """``minimum(%x, y)`` or ``maximum(%x, y)`` with ``%x`` a float (mostly a parameter,
        whose IEEE-heavy alternate input puts NaN there) in the *first* position and ``y``
        a unit constant or a recent variable: lowered as a select (``where(a < b, a, b)``)
        it returns ``y`` where ``minimum`` propagates the NaN. None for a non-float ``%x``
        or without either operator."""
        names = [o for o in ("minimum", "maximum") if o in self.ops]
        if not names or not is_float(t.dtype):
            return None
        recent = [v for v in ctx.by_key.get(type_key(t), [])[::-1][:3] if v is not x]
        y: Expr = self.pick(recent) if recent and self.coin(3) else self._unit_constant(t)
        return Call(Op(names[0] if self.coin(3) else self.pick(names)), (x, y))

    def _rounding_chain(self, x: Expr, t: TensorType) -> Expr | None:
        """``(x + c) - c``, ``(x - c) + c`` (either operand order of the inner call) with
        ``c`` a large constant (:meth:`_large_constant`): rounded after each step, ``x``'s
        low bits are lost (or the sum overflows to infinity); computed wider and rounded
        once (a fused float16 chain in float32), ``x`` comes back. None for a non-float
        ``%x`` or without ``add`` and ``subtract``."""
        if not is_float(t.dtype) or not {"add", "subtract"} <= set(self.ops):
            return None
        c = self._large_constant(t)
        if self.coin(2):
            inner: Expr = Call(Op("add"), (c, x) if self.coin(2) else (x, c))
            return Call(Op("subtract"), (inner, c))
        inner = Call(Op("subtract"), (x, c))
        return Call(Op("add"), (c, inner) if self.coin(2) else (inner, c))

    def _chain(self, arith: list[opcalls.OpCall], x: Expr, t: TensorType, ctx: _Ctx) -> Expr:
        """``op2(op1(%x, a), b)``: one time in two an operation undone by its inverse with
        the same operand (``(x + c) - c``, ``(x - c) + c``), the operand then often a
        constant of large magnitude (a rounding and overflow probe)."""
        names = [c.op for c in arith]
        if self.coin(2) and "add" in names and "subtract" in names:
            c = self._chain_operand(x, t, ctx) if self.coin(3) else self._large_constant(t)
            if self.coin(2):        # (x + c) - c, (c + x) - c
                inner: Expr = Call(Op("add"), (c, x) if self.coin(2) else (x, c))
                return Call(Op("subtract"), (inner, c))
            inner = Call(Op("subtract"), (x, c))        # (x - c) + c, c + (x - c)
            return Call(Op("add"), (c, inner) if self.coin(2) else (inner, c))
        op1, op2 = self.pick(names), self.pick(names)
        a, b = self._chain_operand(x, t, ctx), self._chain_operand(x, t, ctx)
        inner = Call(Op(op1), (a, x) if self.coin(3) else (x, a))
        return Call(Op(op2), (b, inner) if self.coin(4) else (inner, b))

    def _chain_operand(self, x: Expr, t: TensorType, ctx: _Ctx) -> Expr:
        """A chain's other operand: ``%x`` itself, a recent variable of its type, a large
        constant or a literal."""
        choice = self.draw(_ints(0, 3))
        if choice == 0:
            return x
        recent = ctx.by_key.get(type_key(t), [])[::-1][:3]
        if choice == 1 and recent:
            return self.pick(recent)
        if choice == 2:
            return self._large_constant(t)
        return self.literal(t, ctx, 0)

    def _large_constant(self, t: TensorType) -> Constant:
        """A pinned constant of type ``t`` whose elements sit near the dtype's limits: for a
        float dtype ``±2**(p+1)`` (where the gap between neighbouring values grows to 2),
        ``±0.75 * max`` and ``max`` (these two only with ``finite_extremes``); for an integer
        dtype its extremes."""
        dt = np.dtype(t.dtype)
        if dt.kind == "f":
            fi = np.finfo(dt)
            first = float(2 ** (fi.nmant + 1))
            options: tuple[float | int, ...] = (first, -first)
            if self.cfg.finite_extremes:
                options += (0.75 * float(fi.max), -0.75 * float(fi.max), float(fi.max))
        elif dt.kind in "iu":
            info = np.iinfo(dt)
            options = (int(info.max), int(info.min), int(info.max) // 2 + 1)
        else:
            options = (True,)
        c = Constant(np.full(int_shape(t), self.pick(options), dtype=dt))
        self.s.pin(c)
        return c

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
        shape = int_shape(t)
        n = int(np.prod(shape)) if shape else 1
        lo = 1 if np.dtype(t.dtype).kind == "u" else -self.cfg.value_bound
        vals = self.draw(st.lists(st.integers(lo, self.cfg.value_bound).filter(bool),
                                  min_size=n, max_size=n))
        divisor = Constant(np.array(vals, dtype=np.int64).astype(t.dtype).reshape(shape))
        self.s.pin(divisor)
        return (args[0], divisor)
