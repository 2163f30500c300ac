"""PyTorch's higher-order operators → Relay control flow (the paper's §4.1 conversions).

* ``torch.cond(pred, true_fn, false_fn, operands)`` → ``if (pred) { true } else { false }``
  (both branches inlined with the operands; a predicate known at import time keeps only
  the branch taken).
* ``while_loop(cond_fn, body_fn, carried, additional)`` → a let-bound, tail-recursive
  function, written once (no unrolling)::

      let %while = fn (%v0: T0, ..., %vk: Tk) -> (T0, ..., Tk) {
        if (<cond_fn(%v...)>) { %while(<body_fn(%v...)>...) } else { (%v0, ..., %vk) }
      };
      %while(init...)

  PyTorch requires (and checks when exporting) that the carried values keep their shapes;
  a symbolic shape stays symbolic through the loop.
* ``scan(combine_fn, init, xs, additional)`` → the same recursion over a counter ``%i`` up
  to ``xs``'s leading size: the carries pass through, ``xs[i]`` is a ``take``, and each
  per-step output is written into an accumulator: row ``i`` of a ``(n, ...)`` tensor when
  ``n`` is static (one shape, one kernel), appended by ``concatenate`` to a ``(?, ...)``
  tensor when ``n`` is symbolic. ``map`` (``map_impl``) is a scan without carries.
* ``additional`` operands (values the functions close over) stay free variables of the
  Relay function: closures.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, call_tuple, const, project
from frontends.torch.registry import SymValue, higher_order, size_of
from semantics.expr import Call, Function, If, Let, Tuple, Var
from semantics.shapes import ANY, is_concrete
from semantics.types import FuncType, TensorType, TupleType, scalar_type


def _predicate(v: Any) -> Value | bool:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, SymValue):
        v = v.runtime
    if not isinstance(v, Value):
        raise Unsupported(f"the predicate is not a tensor ({type(v).__name__})")
    if v.const is not None:
        return bool(np.asarray(v.const).reshape(-1)[0])
    if v.dtype != "bool":
        v = call("cast", [v], dtype="bool")
    return call("reshape", [v], newshape=()) if v.ndim else v


def _tensors(vals: list[Any], what: str) -> list[Value]:
    out: list[Value] = []
    for v in vals:
        if isinstance(v, SymValue):
            v = v.runtime
        if not isinstance(v, Value):
            raise Unsupported(f"{what} must be tensors, got {type(v).__name__}")
        out.append(v)
    return out


def _pack(vals: list[Value]) -> Value:
    return Value(TupleType(tuple(v.type for v in vals)), Tuple(tuple(v.expr for v in vals)))


@higher_order("higher_order.cond")
def _cond(ctx: Any, node: Any, pred: Any, true_gm: Any, false_gm: Any,
          operands: Any) -> list[Value]:
    ops = list(operands)
    p = _predicate(pred)
    if isinstance(p, bool):
        return ctx.subgraph(true_gm if p else false_gm, ops, node)
    then_outs = _tensors(ctx.subgraph(true_gm, ops, node), "cond outputs")
    else_outs = _tensors(ctx.subgraph(false_gm, ops, node), "cond outputs")
    t, e = _pack(then_outs), _pack(else_outs)
    if str(t.type) != str(e.type):
        raise Unsupported(f"the branches of cond return different types: {t.type} and "
                          f"{e.type}")
    both = Value(t.type, If(p.expr, t.expr, e.expr))
    return [project(both, k) for k in range(len(then_outs))]


@higher_order("higher_order.while_loop")
def _while_loop(ctx: Any, node: Any, cond_gm: Any, body_gm: Any, carried: Any,
                additional: Any) -> list[Value]:
    init = _tensors(list(carried), "while_loop carried values")
    extra = list(additional)
    types = [v.type for v in init]
    vs = [Var(f"{node.name}_v{k}", t) for k, t in enumerate(types)]
    vals = [Value(t, var) for t, var in zip(types, vs)]
    (cond,) = ctx.subgraph(cond_gm, vals + extra, node)
    new = _tensors(ctx.subgraph(body_gm, vals + extra, node), "while_loop results")
    for k, (t, n) in enumerate(zip(types, new)):
        if str(t) != str(n.type):      # PyTorch checks this too when it exports
            raise Unsupported(f"while_loop carried value {k} changes type: {t} -> {n.type}")
    p = _predicate(cond)
    if p is False:
        return init                    # a condition false from the start: no iteration
    if p is True:
        raise Unsupported("the while_loop condition is constantly true: it never ends")
    ret = TupleType(tuple(types))
    loop = Var(node.name, FuncType(tuple(types), ret))
    step = Call(loop, tuple(n.expr for n in new))
    fn = Function(tuple(vs), If(p.expr, step, Tuple(tuple(vs))), ret)
    result = Value(ret, Let(loop, fn, Call(loop, tuple(v.expr for v in init))))
    return [project(result, k) for k in range(len(types))]


@higher_order("higher_order.scan")
def _scan(ctx: Any, node: Any, combine_gm: Any, init: Any, xs: Any,
          additional: Any) -> list[Value]:
    return _scan_loop(ctx, node, combine_gm, _tensors(list(init), "scan carries"),
                      _tensors(list(xs), "scanned inputs"), list(additional))


@higher_order("higher_order.map_impl")
def _map(ctx: Any, node: Any, body_gm: Any, xs: Any, args: Any) -> list[Value]:
    return _scan_loop(ctx, node, body_gm, [], _tensors(list(xs), "mapped inputs"),
                      list(args))


def _scan_loop(ctx: Any, node: Any, gm: Any, init: list[Value], xs: list[Value],
               extra: list[Any]) -> list[Value]:
    """``(final carries..., stacked outputs...)`` of ``gm`` applied along ``xs``' axis 0."""
    if not xs:
        raise Unsupported("scan over no inputs")
    n = size_of(xs[0], 0)
    i64 = scalar_type("int64")
    i_var = Var(f"{node.name}_i", i64)
    i_val = Value(i64, i_var)
    c_vars = [Var(f"{node.name}_c{k}", v.type) for k, v in enumerate(init)]
    c_vals = [Value(v.type, var) for v, var in zip(init, c_vars)]
    elems = [call("take", [x, i_val], axis=0, mode="fast") for x in xs]
    outs = _tensors(ctx.subgraph(gm, c_vals + elems + extra, node), "scan outputs")
    new_c, ys = outs[:len(init)], outs[len(init):]
    for k, (a, b) in enumerate(zip(init, new_c)):
        if str(a.type) != str(b.type):
            raise Unsupported(f"scan carry {k} changes type: {a.type} -> {b.type}")
    static_n = int(n) if n.is_static else None
    acc_types = [_acc_type(y, static_n) for y in ys]
    a_vars = [Var(f"{node.name}_ys{k}", t) for k, t in enumerate(acc_types)]
    a_vals = [Value(t, var) for t, var in zip(acc_types, a_vars)]
    next_acc = [_append(a, y, i_val, static_n) for a, y in zip(a_vals, ys)]
    state = tuple(v.type for v in init) + tuple(acc_types)
    ret = TupleType(state)
    loop = Var(node.name, FuncType((i64,) + state, ret))
    # the trip count, computed once outside the recursion
    n_var = Var(f"{node.name}_n", i64)
    more = call("less", [i_val, n.runtime if n.is_static else Value(i64, n_var)])
    one = const(np.int64(1))
    step = Call(loop, (call("add", [i_val, one]).expr,) + tuple(c.expr for c in new_c)
                + tuple(a.expr for a in next_acc))
    fn = Function((i_var, *c_vars, *a_vars), If(more.expr, step, Tuple((*c_vars, *a_vars))),
                  ret)
    acc0 = [const(np.zeros((static_n or 0, *_static(y)), y.dtype)) for y in ys]
    start = Call(loop, (const(np.int64(0)).expr,) + tuple(v.expr for v in init)
                 + tuple(a.expr for a in acc0))
    body = Let(loop, fn, start)
    result = Value(ret, body if n.is_static else Let(n_var, n.runtime.expr, body))
    return [project(result, k) for k in range(len(state))]


def _static(y: Value) -> tuple[int, ...]:
    if not all(is_concrete(d) for d in y.shape):
        raise Unsupported(f"a scan output of symbolic shape {y.shape}")
    return tuple(int(d) for d in y.shape)


def _acc_type(y: Value, n: int | None) -> TensorType:
    return TensorType((n if n is not None else ANY, *_static(y)), y.dtype)


def _append(acc: Value, y: Value, i: Value, n: int | None) -> Value:
    """``acc`` with ``y`` as row ``i``: written in place of row ``i`` of a ``(n, ...)``
    accumulator, or appended to a ``(?, ...)`` one."""
    row = call("expand_dims", [y], axis=0)
    if n is None:
        return call_tuple("concatenate", [acc, row], axis=0)
    rows = const(np.arange(n, dtype=np.int64).reshape((n,) + (1,) * y.ndim))
    return call("where", [call("equal", [rows, i]), row, acc])
