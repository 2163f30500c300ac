"""ONNX control flow → Relay: ``If`` → ``if``, ``Loop`` and ``Scan`` → let-bound
tail-recursive functions (the paper's Fig. 2 conversion), one per loop, never unrolled.

``Loop(M, cond, v...)`` with body ``(i, c, v...) -> (c', v'..., s...)`` becomes::

    let %loop = fn (%i: int64, %c: bool, %v: T..., %acc: A...) -> (T..., A...) {
      if (%c && %i < M) { <body>; %loop(%i + 1i64, c', v'..., acc'...) } else { (%v..., %acc...) }
    };
    %loop(0i64, cond, v..., acc0...)

Loop-carried values: the body is converted with the initial values' types; while an output's
type differs from its input's (a value that grows each iteration), the carried type becomes
their join (``?`` where dims differ, see ``ops_seq.join``) and the body is converted again.

Scan outputs ``s``: when the number of iterations is static (a constant trip count and a
condition that stays true) and ``s`` has a static shape, an accumulator of shape
``(trips, *s)`` whose row ``i`` is written at iteration ``i``; otherwise a ``List`` the
iterations cons onto, stacked after the loop (a recursive function, ``ops_seq.concat_list``)
into a ``Tensor[(?, *s)]`` — zero iterations give ``(0, *s)`` when ``s``'s shape is static.

``Scan`` (opset 9 on) is the same recursion over the scanned axis: iteration ``i`` takes
element ``i`` (``T - 1 - i`` for a reverse input) of every scan input with ``take``; scan
outputs are lists stacked in iteration order (reversed for a reverse output), reshaped to
their static shape when the length is static, and moved to their ``scan_output_axes``.
Scan-8 (a leading batch axis) runs that recursion on each row of its static batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, call_tuple, const, project
from frontends.onnx.context import Context
from frontends.onnx.ops_math import _req
from frontends.onnx.ops_seq import concat_list
from frontends.onnx.registry import converter
from frontends.onnx.seq_types import conform, cons, elem_type, join, list_type, nil
from semantics.expr import Call, Function, If, Let, Tuple, Var
from semantics.shapes import is_concrete
from semantics.types import FuncType, TensorType, TupleType, Type, scalar_type


def _scalar_cond(v: Value) -> Value:
    if v.dtype != "bool":
        v = call("cast", [v], dtype="bool")
    if v.ndim:
        v = call("reshape", [v], newshape=())
    return v


def _pack(vals: list[Value]) -> Value:
    if len(vals) == 1:
        return vals[0]
    return Value(TupleType(tuple(v.type for v in vals)), Tuple(tuple(v.expr for v in vals)))


def _unpack(v: Value, n: int) -> list[Value]:
    return [v] if n == 1 else [project(v, i) for i in range(n)]


@converter("If", attrs=("then_branch", "else_branch"))
def _if(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    cond = _scalar_cond(_req(ins, 0))
    if cond.const is not None:
        # Known at import time: only the branch taken is converted (the other may not even
        # type-check for these inputs, e.g. a 3-D branch of a 2-D model).
        return ctx.convert_graph(attrs["then_branch" if bool(cond.const) else "else_branch"],
                                 [])
    then_outs = ctx.convert_graph(attrs["then_branch"], [])
    else_outs = ctx.convert_graph(attrs["else_branch"], [])
    t, e = _pack(then_outs), _pack(else_outs)
    try:
        ty = join(t.type, e.type)
    except Unsupported as err:
        raise Unsupported(f"If branches have different types: {t.type} and {e.type} "
                          f"({err})") from None
    # Each branch as a value of the joined type (a tensor of another rank wrapped in its
    # rank union, a plain value in ``Some``).
    n = len(node.output)
    types = _unpack_types(ty, n)
    t = _pack([conform(v, u) for v, u in zip(then_outs, types)])
    e = _pack([conform(v, u) for v, u in zip(else_outs, types)])
    return _unpack(Value(ty, If(cond.expr, t.expr, e.expr)), n)


def _unpack_types(t: Type, n: int) -> list[Type]:
    return [t] if n == 1 else list(t.fields)  # type: ignore[attr-defined]


@converter("Loop", attrs=("body",))
def _loop(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    body = attrs["body"]
    if any(v is None for v in ins[2:]):
        raise Unsupported("missing loop-carried input")
    vs: list[Value] = [v for v in ins[2:] if v is not None]
    n_scan = len(body.output) - 1 - len(vs)
    i64, boolean = scalar_type("int64"), scalar_type("bool")
    i_var, c_var = Var("i", i64), Var("cond", boolean)
    i_val, c_val = Value(i64, i_var), Value(boolean, c_var)

    def convert(types: list[Type]) -> tuple[list[Var], list[Value]]:
        v_vars = [Var(f"v{k}", t) for k, t in enumerate(types)]
        outs = ctx.convert_graph(body, [i_val, c_val] + [Value(t, x) for t, x in
                                                         zip(types, v_vars)])
        return v_vars, outs

    v_vars, outs, types = _settle(convert, [v.type for v in vs], 1)
    m = ins[0]
    trips = _static_trip_count(m, ins[1], outs[0], c_var) if n_scan else None
    scans = outs[1 + len(vs):]
    static = trips is not None and all(_is_static(s) for s in scans)
    # Scan outputs: with a static trip count, an accumulator of shape (trips, *elem) whose
    # row i is written at iteration i; otherwise a list the iterations cons onto, stacked
    # (in iteration order) after the loop into a tensor with a leading ``?`` dimension.
    acc_types: list[Type] = ([_scan_type(trips or 0, s) for s in scans] if static
                             else [list_type(s.type) for s in scans])
    acc_vars = [Var(f"scan{k}", t) for k, t in enumerate(acc_types)]
    acc_vals = [Value(t, var) for t, var in zip(acc_types, acc_vars)]
    state_types = tuple(types) + tuple(acc_types)
    ret = TupleType(state_types)
    loop_var = Var("loop", FuncType((i64, boolean) + state_types, ret))
    next_i = call("add", [i_val, const(np.int64(1))])
    next_c = _scalar_cond(outs[0])
    next_accs = ([_write_row(acc, elem, i_val, trips or 0) for acc, elem in zip(acc_vals, scans)]
                 if static else [cons(elem, acc) for acc, elem in zip(acc_vals, scans)])
    recur = Call(loop_var, (next_i.expr, next_c.expr)
                 + tuple(conform(o, t).expr for o, t in zip(outs[1:1 + len(vs)], types))
                 + tuple(a.expr for a in next_accs))
    done = Tuple(tuple(v_vars) + tuple(acc_vars))
    guard: Value | None = c_val if ins[1] is not None else None
    if m is not None:
        below = call("less", [i_val, call("cast", [call("reshape", [m], newshape=())],
                                              dtype="int64")])
        guard = below if guard is None else call("logical_and", [guard, below])
    if guard is None:
        raise Unsupported("a Loop without trip count and condition never ends")
    fn = Function(tuple([i_var, c_var] + v_vars + acc_vars), If(guard.expr, recur, done), ret)
    c0 = _scalar_cond(ins[1]) if ins[1] is not None else const(np.bool_(True))
    acc0 = ([const(np.zeros(_static_dims(t), t.dtype)) for t in acc_types  # type: ignore
             ] if static else [nil(s.type) for s in scans])
    start = Call(loop_var, (const(np.int64(0)).expr, c0.expr)
                 + tuple(conform(v, t).expr for v, t in zip(vs, types))
                 + tuple(a.expr for a in acc0))
    result = Value(ret, Let(loop_var, fn, start))
    finals = [project(result, k) for k in range(len(state_types))]
    if not static:
        finals[len(vs):] = [_stack(acc, reverse=False) for acc in finals[len(vs):]]
    return finals


def _settle(convert: Any, types: list[Type], skip: int) -> tuple[list[Var], list[Value],
                                                                   list[Type]]:
    """Convert a loop body until the types of its loop-carried values settle: a value whose
    shape changes between iterations gets the join of its types (``?`` where dims differ).
    ``skip`` outputs come before the carried ones."""
    for _ in range(8):
        v_vars, outs = convert(types)
        new = [join(t, o.type) for t, o in zip(types, outs[skip:skip + len(types)])]
        if all(str(a) == str(b) for a, b in zip(new, types)):
            return v_vars, outs, types
        types = new
    raise Unsupported("the types of the loop-carried values do not settle")


def _is_static(v: Value) -> bool:
    return isinstance(v.type, TensorType) and all(is_concrete(d) for d in v.type.shape)


def _stack(acc: Value, reverse: bool) -> Value:
    """The tensors of list ``acc`` (the last iteration first) stacked along a new axis 0 in
    iteration order (``reverse``: the last iteration first)."""
    elem = elem_type(acc)
    empty = None
    if isinstance(elem, TensorType) and all(is_concrete(d) for d in elem.shape):
        empty = const(np.zeros((0,) + _static_dims(elem), elem.dtype))
    return concat_list(acc, 0, True, reverse=not reverse, empty=empty)


@converter("Scan", attrs=("body", "num_scan_inputs", "scan_input_axes", "scan_input_directions",
                          "scan_output_axes", "scan_output_directions", "directions"))
def _scan(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    body = attrs["body"]
    m = int(attrs["num_scan_inputs"])
    if ctx.opset < 9:
        return _scan8(ctx, body, m, ins, list(attrs.get("directions", [0] * m)))
    vals = [_req(ins, k) for k in range(len(ins))]
    states, xs = vals[:len(vals) - m], vals[len(vals) - m:]
    n_out = len(body.output) - len(states)
    in_axes = [a % x.ndim for a, x in zip(attrs.get("scan_input_axes", [0] * m), xs)]
    in_dirs = list(attrs.get("scan_input_directions", [0] * m))
    out_dirs = list(attrs.get("scan_output_directions", [0] * n_out))
    out_axes = list(attrs.get("scan_output_axes", [0] * n_out))
    return _scan_core(ctx, body, states, xs, in_axes, in_dirs, out_dirs, out_axes)


def _scan8(ctx: Context, body: Any, m: int, ins: list[Value | None],
           dirs: list[int]) -> list[Value]:
    """Scan-8: states ``(B, ...)`` and scan inputs ``(B, T, ...)``; the opset-9 scan of each
    batch row (a static batch), stacked. Per-row ``sequence_lens`` are not supported."""
    if ins and ins[0] is not None:
        raise Unsupported("Scan-8 with sequence_lens is not supported")
    vals = [_req(ins, k) for k in range(1, len(ins))]
    states, xs = vals[:len(vals) - m], vals[len(vals) - m:]
    batch = xs[0].shape[0]
    if not is_concrete(batch):
        raise Unsupported(f"Scan-8 needs a static batch size, got {xs[0].shape}")
    n_out = len(body.output) - len(states)
    rows = []
    for b in range(int(batch)):
        row = [call("take", [v, const(np.int64(b))], axis=0) for v in states + xs]
        rows.append(_scan_core(ctx, body, row[:len(states)], row[len(states):], [0] * m, dirs,
                               [0] * n_out, [0] * n_out))
    return [call_tuple("stack", [r[k] for r in rows], axis=0) for k in range(len(rows[0]))]


def _scan_core(ctx: Context, body: Any, states: list[Value], xs: list[Value],
               in_axes: list[int], in_dirs: list[int], out_dirs: list[int],
               out_axes: list[int]) -> list[Value]:
    i64 = scalar_type("int64")
    i_var = Var("i", i64)
    i_val = Value(i64, i_var)
    dim = xs[0].shape[in_axes[0]]
    trips = (const(np.int64(int(dim))) if is_concrete(dim) else call("cast", [call(
        "take", [call("shape_of", [xs[0]]), const(np.int64(in_axes[0]))], axis=0)],
        dtype="int64"))
    last = call("subtract", [trips, const(np.int64(1))])
    elems = [call("take", [x, call("subtract", [last, i_val]) if d else i_val], axis=a)
             for x, a, d in zip(xs, in_axes, in_dirs)]

    def convert(types: list[Type]) -> tuple[list[Var], list[Value]]:
        s_vars = [Var(f"s{k}", t) for k, t in enumerate(types)]
        outs = ctx.convert_graph(body, [Value(t, v) for t, v in zip(types, s_vars)] + elems)
        return s_vars, outs

    s_vars, outs, types = _settle(convert, [s.type for s in states], 0)
    scans = outs[len(states):]
    acc_types = [list_type(s.type) for s in scans]
    acc_vars = [Var(f"scan{k}", t) for k, t in enumerate(acc_types)]
    state_types = tuple(types) + tuple(acc_types)
    ret = TupleType(state_types)
    f_var = Var("scan", FuncType((i64,) + state_types, ret))
    recur = Call(f_var, (call("add", [i_val, const(np.int64(1))]).expr,)
                 + tuple(conform(o, t).expr for o, t in zip(outs[:len(states)], types))
                 + tuple(cons(o, Value(t, a)).expr for o, t, a in zip(scans, acc_types,
                                                                      acc_vars)))
    done = Tuple(tuple(s_vars) + tuple(acc_vars))
    guard = call("less", [i_val, trips])
    fn = Function(tuple([i_var] + s_vars + acc_vars), If(guard.expr, recur, done), ret)
    start = Call(f_var, (const(np.int64(0)).expr,)
                 + tuple(conform(s, t).expr for s, t in zip(states, types))
                 + tuple(nil(s.type).expr for s in scans))
    result = Value(ret, Let(f_var, fn, start))
    finals = [project(result, k) for k in range(len(state_types))]
    for k, (acc, scan) in enumerate(zip(finals[len(states):], scans)):
        y = _stack(acc, reverse=bool(out_dirs[k]))
        if is_concrete(dim) and _is_static(scan):
            y = call("reshape", [y], newshape=(int(dim),) + tuple(int(d) for d in scan.shape))
        axis = out_axes[k] % (scan.ndim + 1)
        if axis:
            perm = list(range(1, scan.ndim + 1))
            perm.insert(axis, 0)
            y = call("transpose", [y], axes=tuple(perm))
        finals[len(states) + k] = y
    return finals


def _static_trip_count(m: Value | None, cond: Value | None, cond_out: Value,
                       c_var: Var) -> int | None:
    """The number of iterations when it is known at import time: a constant trip count, an
    initial condition that is absent or constant true, and a body condition that is the
    incoming condition passed through (or constant true)."""
    if m is None or m.const is None:
        return None
    if cond is not None and (cond.const is None or not bool(np.asarray(cond.const).all())):
        return None
    passthrough = cond_out.expr_ is c_var or (
        cond_out.const is not None and bool(np.asarray(cond_out.const).all()))
    if not passthrough:
        return None
    return max(int(np.asarray(m.const).reshape(-1)[0]), 0)


def _static_dims(t: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in t.shape)


def _scan_type(trips: int, elem: Value) -> TensorType:
    return TensorType((trips,) + tuple(elem.static_shape()), elem.dtype)


def _write_row(acc: Value, elem: Value, i: Value, trips: int) -> Value:
    """``acc`` with row ``i`` replaced by ``elem``."""
    rows = const(np.arange(trips, dtype=np.int64).reshape((trips,) + (1,) * elem.ndim))
    mask = call("equal", [rows, i])
    return call("where", [mask, call("expand_dims", [elem], axis=0), acc])


