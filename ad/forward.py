"""Forward-mode automatic differentiation with dual numbers (paper §4.2, last paragraph).

Design note: the lifting of :mod:`ad.lift` with the *dual number* as the pair: a floating-point
tensor ``T`` becomes ``(T, T)``, its value and its tangent (the derivative of the value in the
chosen input direction). Function types are lifted argument- and result-wise with no extra
parameter; tuples, references and polymorphic ADTs structurally, as in reverse mode (the same
lifted copies of ADTs with float fields). A float literal is ``(c, zeros_like(c))``;
a primitive call applies the operator to the primal values and the operator's tangent rule
(``semantics.ops.tables.TANGENTS``, written in Relay by :mod:`ad.rules`) to the argument
tangents. Control flow, recursion, closures and references need nothing special: the tangent
travels with the value.

* :func:`jvp_function` builds ``fn(x1..xn, v1..vn) -> (O, O)``: the duals ``(x_i, v_i)`` go
  through the lifted function, the result's primal and tangent parts come back.
* :func:`forward_grad` builds the same gradient function as reverse mode
  (``fn(T1..Tn) -> (O, (T1..Tn))``, Type-Gradient) by one forward sweep per element of each
  float argument (one-hot tangents), summing the output tangent (the seed ``ones_like`` of the
  output) and stacking the results into each argument's shape. Its size is linear in the number
  of input elements, so it needs static shapes and is limited to
  :data:`MAX_FORWARD_ELEMENTS` input elements (use reverse mode beyond).

Nested ``grad(e)`` nodes are expanded (reverse mode) first, as for reverse mode; forward over
reverse then differentiates through the expansion's references and closures.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ad.lift import (
    ENTRY,
    Lifted,
    Lifter,
    all_bool,
    by_type,
    carries_float,
    close_globals,
    is_float_type,
    let_bound_functions,
    lifted_globals,
    no_float,
    non_tensor_part,
    prepare,
    project,
    resolve_function,
)
from semantics.errors import InternalError, RelayTypeError
from semantics.expr import Attrs, Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var
from semantics.module import IRModule
from semantics.ops.tables import TANGENTS
from semantics.printer import pretty
from semantics.rewrite import LetList
from semantics.types import FuncType, TensorType, TupleType, Type
from semantics.visitor import run_recursive

__all__ = ["MAX_FORWARD_ELEMENTS", "ForwardLifter", "forward_grad", "jvp_function"]

MAX_FORWARD_ELEMENTS = 4096
"""The largest number of float input elements :func:`forward_grad` unrolls a sweep for."""


def _op(name: str, *args: Expr, **attrs: Any) -> Call:
    return Call(Op(name), tuple(args), Attrs(attrs))


def _dual_type(t: TensorType) -> Type:
    return TupleType((t, t))


class ForwardLifter(Lifter):
    """``ADTerm`` of forward mode (dual numbers); there is no context."""

    suffix = "fwd"

    def __init__(self, mod: IRModule):
        super().__init__(mod, _dual_type, ())

    def lift_constant(self, c: Constant, ll: LetList) -> Expr:
        return ll.push(Tuple((c, _op("zeros_like", c))), "c")

    def tangent_expr(self, la: Expr, t: Type) -> Expr:
        """The tangent carried by the lifted value ``la`` (original type ``t``)."""
        def leaf(path: tuple[int, ...], u: Type) -> Expr:
            e = project(la, path)
            if is_float_type(u):
                return TupleGetItem(e, 1)
            if isinstance(u, TensorType):
                return _op("zeros_like", e)
            raise InternalError(f"ad: no tangent for a value of type {u!r}")
        return by_type(t, leaf)

    def dual(self, v: Expr, tv: Expr, t: Type) -> Expr:
        """The lifted value with primal ``v`` and tangent ``tv`` (both of type ``t``)."""
        def leaf(path: tuple[int, ...], u: Type) -> Expr:
            e = project(v, path)
            return Tuple((e, project(tv, path))) if is_float_type(u) else e
        return by_type(t, leaf, no_float)

    def zero_dual(self, v: Expr, t: Type) -> Expr:
        """The lifted value of the primal ``v`` with a zero tangent."""
        def leaf(path: tuple[int, ...], u: Type) -> Expr:
            e = project(v, path)
            return Tuple((e, _op("zeros_like", e))) if is_float_type(u) else e
        return by_type(t, leaf, no_float)

    def op_call(self, e: Call, ll: LetList, ctx: Any) -> Expr:
        op = e.op
        assert isinstance(op, Op)
        prims: list[Expr] = []
        tangents: list[Expr | None] = []
        for a in e.args:
            t = a.checked_type
            if t is None:
                raise InternalError(f"ad: untyped argument of {op.name}")
            if isinstance(a, Constant):
                prims.append(Constant(a.data, span=a.span, checked_type=t))
                tangents.append(None)
                continue
            la = self.atom(a, ll)
            prims.append(self.primal(la, t, ll))
            if carries_float(t):
                tv = Var("t", None, checked_type=t)
                ll.bind(tv, self.tangent_expr(la, t))
                tangents.append(tv)
            else:
                tangents.append(None)
        out_t = e.checked_type
        if out_t is None:
            raise InternalError(f"ad: untyped call of {op.name}")
        v = Var("v", None, checked_type=out_t)
        call = Call(op, tuple(prims), e.attrs, e.type_args, span=e.span, checked_type=out_t)
        ll.bind(v, call)
        flows = any(t is not None for t in tangents)
        if not carries_float(out_t):
            if flows and not all_bool(out_t) and not TANGENTS.has(op.name):
                _lookup(op, e)
            return v
        if not flows:
            return ll.push(self.zero_dual(v, out_t), "lv")
        rule = _lookup(op, e)
        tangent = rule(call, v, tangents)
        if tangent is None:
            return ll.push(self.zero_dual(v, out_t), "lv")
        tv_out = ll.push(tangent, "tv")
        return ll.push(self.dual(v, tv_out, out_t), "lv")


def _lookup(op: Op, e: Call) -> Any:
    try:
        return TANGENTS.lookup(op.name)
    except RelayTypeError as err:
        err.with_span(e.span)
        raise


# --- drivers ----------------------------------------------------------------------------------

def _lift(f: Expr, mod: IRModule | None, defs: dict[int, tuple[Var, Function]] | None,
          ) -> tuple[ForwardLifter, FuncType, LetList, Expr]:
    """Prepare ``f``, lift it into a new let list; returns the lifted function atom."""
    from ad.reverse import _nested

    if defs is None:
        defs = let_bound_functions(list(mod.functions.values())) if mod is not None else {}
    target = resolve_function(f, defs)
    prepared, free = prepare(target, mod, _nested)
    lifter = ForwardLifter(prepared)
    entry = prepared[ENTRY]
    ftype = entry.body.checked_type
    assert isinstance(ftype, FuncType)
    for t in (*ftype.arg_types, ftype.ret_type):
        _check_io(t, f.span)
    ll = LetList()
    for p, orig in zip(entry.params, free):
        pt = p.checked_type or p.type_annotation
        assert pt is not None
        _check_io(pt, orig.span)
        lifter.env[id(p)] = ll.push(lifter.zero_dual(orig, pt), orig.name_hint)
    fl = run_recursive(lifter.scope(entry.body, None, ll))
    return lifter, ftype, ll, fl


def _check_io(t: Type, span: Any) -> None:
    bad = non_tensor_part(t)
    if bad is not None:
        raise RelayTypeError("grad: arguments and results must be tensors or tuples of "
                             f"tensors (Type-Gradient), found {pretty(bad)}", span)


def _finish(lifter: ForwardLifter, params: list[Var], ll: LetList, out: Expr,
            span: Any) -> Lifted:
    lifted = lifted_globals(lifter)
    outer = LetList()
    body = close_globals(ll.get(out), lifted, outer)
    return Lifted(Function(tuple(params), outer.get(body), span=span), {}, lifter.lifted_types)


def _param_names(f: Expr, n: int, mod: IRModule | None = None) -> list[str]:
    from ad.reverse import _param_names as written

    names = written(f, mod)
    return [names[i] if i < len(names) else f"x{i}" for i in range(n)]


def jvp_function(f: Expr, mod: IRModule | None = None, *,
                 defs: dict[int, tuple[Var, Function]] | None = None) -> Lifted:
    """``fn(x1..xn, v1..vn) -> (O, O)``: ``f(x)`` and its derivative in direction ``v``.

    Args:
        f: the function expression (see :func:`ad.reverse.reverse_grad`).
        mod: the module of its globals and ADTs.
        defs: let-bound function literals by variable identity.
    Returns:
        ``Lifted`` holding the closed JVP function (and the lifted ADT copies it uses).
    Raises:
        RelayTypeError: ``f`` is not differentiable.
    """
    lifter, ftype, ll, fl = _lift(f, mod, defs)
    names = _param_names(f, len(ftype.arg_types), mod)
    xs = [Var(n, t) for n, t in zip(names, ftype.arg_types)]
    vs = [Var("d" + n, t) for n, t in zip(names, ftype.arg_types)]
    duals = [ll.push(lifter.dual(x, v, t), x.name_hint) for x, v, t in zip(xs, vs, ftype.arg_types)]
    r = ll.push(Call(fl, tuple(duals)), "r")
    out = Tuple((lifter.primal_expr(r, ftype.ret_type), lifter.tangent_expr(r, ftype.ret_type)))
    return _finish(lifter, [*xs, *vs], ll, out, f.span)


def _float_leaves(t: Type, path: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], TensorType]]:
    out = []
    stack: list[tuple[Type, tuple[int, ...]]] = [(t, path)]
    while stack:
        u, p = stack.pop()
        if isinstance(u, TupleType):
            stack.extend((ft, (*p, i)) for i, ft in reversed(list(enumerate(u.fields))))
        elif is_float_type(u):
            assert isinstance(u, TensorType)
            out.append((p, u))
    return out


def forward_grad(f: Expr, mod: IRModule | None = None, *,
                 defs: dict[int, tuple[Var, Function]] | None = None) -> Lifted:
    """The gradient function of ``f`` (Type-Gradient) computed by forward sweeps.

    Args:
        f: the function expression (see :func:`ad.reverse.reverse_grad`).
        mod: the module of its globals and ADTs.
        defs: let-bound function literals by variable identity.
    Returns:
        ``Lifted`` holding the closed function ``fn(T1..Tn) -> (O, (T1..Tn))`` (and the
        lifted ADT copies it uses).
    Raises:
        RelayTypeError: ``f`` is not differentiable, an argument has a symbolic shape, or the
            arguments have more than :data:`MAX_FORWARD_ELEMENTS` float elements.
    """
    lifter, ftype, ll, fl = _lift(f, mod, defs)
    names = _param_names(f, len(ftype.arg_types), mod)
    xs = [Var(n, t) for n, t in zip(names, ftype.arg_types)]
    leaves = []
    total = 0
    for i, at in enumerate(ftype.arg_types):
        for path, lt in _float_leaves(at):
            dims = tuple(d for d in lt.shape if isinstance(d, int))
            if len(dims) != len(lt.shape):
                raise RelayTypeError("grad (forward mode): argument shapes must be static, "
                                     f"found {pretty(lt)}", f.span)
            leaves.append((i, path, lt.dtype, dims))
            total += int(np.prod(dims, dtype=np.int64))
    if total > MAX_FORWARD_ELEMENTS:
        raise RelayTypeError(f"grad (forward mode): {total} input elements is more than "
                             f"{MAX_FORWARD_ELEMENTS} forward sweeps; use reverse mode", f.span)
    out_leaves = _float_leaves(ftype.ret_type)

    def sweep(hot: tuple[int, tuple[int, ...], np.ndarray] | None) -> Var:
        duals = []
        for i, (x, at) in enumerate(zip(xs, ftype.arg_types)):
            def tangent(path: tuple[int, ...], t: TensorType, x: Expr = x, i: int = i) -> Expr:
                if hot is not None and hot[0] == i and hot[1] == path:
                    return Constant(hot[2])
                return _op("zeros_like", project(x, path))
            duals.append(ll.push(_dual_input(x, at, tangent), x.name_hint))
        return ll.push(Call(fl, tuple(duals)), "r")

    first: Var | None = None
    leaf_grads: dict[tuple[int, tuple[int, ...]], Expr] = {}
    for i, path, dtype, dims in leaves:
        n = int(np.prod(dims, dtype=np.int64))
        sums = []
        for k in range(n):
            onehot = np.zeros(n, dtype=dtype)
            onehot[k] = 1
            r = sweep((i, path, onehot.reshape(dims)))
            first = first or r
            sums.append(ll.push(_output_sum(lifter, r, out_leaves, dtype), "s"))
        if dims == ():
            leaf_grads[(i, path)] = sums[0]
        elif n == 0:
            # a zero-size input: no sweep, and its gradient is the empty array of its shape
            # (``stack`` of no tensor would be ill-typed)
            leaf_grads[(i, path)] = Constant(np.zeros(dims, dtype=dtype))
        else:
            stacked = _op("stack", Tuple(tuple(sums)), axis=0)
            leaf_grads[(i, path)] = ll.push(_op("reshape", stacked, newshape=list(dims)), "grad")
    if first is None:
        first = sweep(None)
    grads = Tuple(tuple(_assemble(x, at, i, leaf_grads)
                        for i, (x, at) in enumerate(zip(xs, ftype.arg_types))))
    out = Tuple((lifter.primal_expr(first, ftype.ret_type), grads))
    return _finish(lifter, xs, ll, out, f.span)


def _dual_input(x: Expr, t: Type, tangent: Any) -> Expr:
    def leaf(path: tuple[int, ...], u: Type) -> Expr:
        e = project(x, path)
        return Tuple((e, tangent(path, u))) if is_float_type(u) else e
    return by_type(t, leaf, no_float)


def _output_sum(lifter: ForwardLifter, r: Expr, out_leaves: list[tuple[tuple[int, ...],
                TensorType]], dtype: str) -> Expr:
    """The sum of every element of every float leaf of the result's tangent (the directional
    derivative of ``sum(output)``), as a 0-d tensor of ``dtype``."""
    total: Expr | None = None
    for path, t in out_leaves:
        part: Expr = _op("sum", TupleGetItem(project(r, path), 1))
        if t.dtype != dtype:
            part = _op("cast", part, dtype=dtype)
        total = part if total is None else _op("add", total, part)
    return total if total is not None else Constant(np.zeros((), dtype=dtype))


def _assemble(x: Expr, t: Type, i: int,
              leaf_grads: dict[tuple[int, tuple[int, ...]], Expr]) -> Expr:
    def leaf(path: tuple[int, ...], u: Type) -> Expr:
        if is_float_type(u):
            return leaf_grads[(i, path)]
        return _op("zeros_like", project(x, path))
    return by_type(t, leaf)
