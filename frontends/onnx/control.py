"""ONNX control flow and sequences → Relay: ``If`` → ``if``, ``Loop`` → a let-bound
tail-recursive function (the paper's Fig. 2 conversion), sequences → the prelude's ``List``.

``Loop(M, cond, v...)`` with body ``(i, c, v...) -> (c', v'..., )`` becomes::

    let %loop = fn (%i: int64, %c: bool, %v: T...) -> (T...,) {
      if (%c && %i < M) { <body>; %loop(%i + 1i64, c', v'...) } else { (%v...,) }
    };
    %loop(0i64, cond, v...)

Scan outputs of ``Loop`` are supported when the number of iterations is static (a constant
trip count and a condition that stays true): each is an accumulator of shape
``(trips, *elem)`` carried through the recursion, row ``i`` written at iteration ``i``. With a
data-dependent iteration count their shape is dynamic; they, and the ``Scan`` operator, are
reported as unsupported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, const, project, static_ints
from frontends.onnx.importer import Context, converter
from frontends.onnx.ops_math import _req
from semantics.expr import Call, Function, GlobalVar, If, Let, Tuple, Var
from semantics.types import FuncType, TensorType, TupleType, TypeCall, scalar_type


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
    if str(t.type) != str(e.type):
        raise Unsupported(f"If branches have different types: {t.type} and {e.type}")
    n = len(node.output)
    return _unpack(Value(t.type, If(cond.expr, t.expr, e.expr)), n)


@converter("Loop", attrs=("body",))
def _loop(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    body = attrs["body"]
    carried = [v for v in ins[2:]]
    if any(v is None for v in carried):
        raise Unsupported("missing loop-carried input")
    vs: list[Value] = [v for v in carried if v is not None]
    n_scan = len(body.output) - 1 - len(vs)
    i64 = scalar_type("int64")
    boolean = scalar_type("bool")
    i_var = Var("i", i64)
    c_var = Var("cond", boolean)
    v_vars = [Var(f"v{k}", v.type) for k, v in enumerate(vs)]
    i_val, c_val = Value(i64, i_var), Value(boolean, c_var)
    v_vals = [Value(v.type, var) for v, var in zip(vs, v_vars)]
    outs = ctx.convert_graph(body, [i_val, c_val] + v_vals)
    m = ins[0]
    trips = _static_trip_count(m, ins[1], outs[0], c_var) if n_scan else None
    if n_scan and trips is None:
        raise Unsupported("Loop scan outputs need a static trip count and a loop condition "
                          "that stays true (the number of iterations fixes their shape)")
    # Scan outputs: an accumulator of shape (trips, *elem) per output, row i written at
    # iteration i.
    scans = outs[1 + len(vs):]
    acc_vars = [Var(f"scan{k}", _scan_type(trips or 0, s)) for k, s in enumerate(scans)]
    acc_vals = [Value(var.type_annotation, var) for var in acc_vars]  # type: ignore[arg-type]
    state_types = tuple(v.type for v in vs) + tuple(a.type for a in acc_vals)
    ret = TupleType(state_types)
    loop_var = Var("loop", FuncType((i64, boolean) + state_types, ret))
    next_i = call("add", [i_val, const(np.int64(1))])
    next_c = _scalar_cond(outs[0])
    for k, (new, old) in enumerate(zip(outs[1:], vs)):
        if str(new.type) != str(old.type):
            raise Unsupported(f"loop-carried value {k} changes type: {old.type} -> {new.type}")
    next_accs = [_write_row(acc, elem, i_val, trips or 0) for acc, elem in zip(acc_vals, scans)]
    recur = Call(loop_var, (next_i.expr, next_c.expr)
                 + tuple(o.expr for o in outs[1:1 + len(vs)])
                 + tuple(a.expr for a in next_accs))
    done = Tuple(tuple(v_vars) + tuple(acc_vars))
    guard: Value | None = c_val if ins[1] is not None else None
    if m is not None:
        below = call("less", [i_val, call("reshape", [m], newshape=())])
        guard = below if guard is None else call("logical_and", [guard, below])
    if guard is None:
        raise Unsupported("a Loop without trip count and condition never ends")
    fn = Function(tuple([i_var, c_var] + v_vars + acc_vars), If(guard.expr, recur, done), ret)
    c0 = _scalar_cond(ins[1]) if ins[1] is not None else const(np.bool_(True))
    acc0 = [const(np.zeros(_static_dims(a.type), a.dtype)) for a in acc_vals]
    start = Call(loop_var, (const(np.int64(0)).expr, c0.expr) + tuple(v.expr for v in vs)
                 + tuple(a.expr for a in acc0))
    result = Value(ret, Let(loop_var, fn, start))
    return [project(result, k) for k in range(len(state_types))]


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


# --- sequences as List ---------------------------------------------------------------------

def _prelude() -> Any:
    from semantics.prelude import prelude_module
    return prelude_module()


def _list_type(elem: Any) -> TypeCall:
    mod = _prelude()
    gtv = mod.types["List"].header
    return TypeCall(gtv, (elem,))


def _cons(head: Value, tail: Value) -> Value:
    ctor = _prelude().constructors["Cons"]
    return Value(tail.type, Call(ctor, (head.expr, tail.expr)))


def _nil(elem: Any) -> Value:
    ctor = _prelude().constructors["Nil"]
    return Value(_list_type(elem), Call(ctor, ()))


def _elem_type(seq: Value) -> Any:
    t = seq.type
    if not isinstance(t, TypeCall):
        raise Unsupported(f"expected a sequence, got {t}")
    return t.args[0]


def _global(name: str) -> GlobalVar:
    return GlobalVar(name)


@converter("SequenceConstruct")
def _seq_construct(ctx: Context, node: Any, ins: list[Value | None],
                   attrs: dict[str, Any]) -> list[Value]:
    vals = [v for v in ins if v is not None]
    acc = _nil(vals[0].type)
    for v in reversed(vals):
        if str(v.type) != str(vals[0].type):
            raise Unsupported("sequence elements of different types")
        acc = _cons(v, acc)
    return [acc]


@converter("SequenceEmpty", attrs=("dtype",))
def _seq_empty(ctx: Context, node: Any, ins: list[Value | None],
               attrs: dict[str, Any]) -> list[Value]:
    raise Unsupported("an empty sequence's element shape is unknown to a static importer")


@converter("SequenceAt")
def _seq_at(ctx: Context, node: Any, ins: list[Value | None],
            attrs: dict[str, Any]) -> list[Value]:
    seq = _req(ins, 0)
    pos = static_ints(ins[1], "the SequenceAt position")[0]
    if pos < 0:
        raise Unsupported("negative SequenceAt positions are not supported")
    idx = const(np.int32(pos))
    return [Value(_elem_type(seq), Call(_global("nth"), (seq.expr, idx.expr)))]


@converter("SequenceLength")
def _seq_length(ctx: Context, node: Any, ins: list[Value | None],
                attrs: dict[str, Any]) -> list[Value]:
    seq = _req(ins, 0)
    n = Value(scalar_type("int32"), Call(_global("length"), (seq.expr,)))
    return [call("cast", [n], dtype="int64")]


@converter("SequenceInsert")
def _seq_insert(ctx: Context, node: Any, ins: list[Value | None],
                attrs: dict[str, Any]) -> list[Value]:
    seq, v = _req(ins, 0), _req(ins, 1)
    if len(ins) > 2 and ins[2] is not None:
        raise Unsupported("SequenceInsert at a position is not supported (only appending)")
    single = _cons(v, _nil(v.type))
    return [Value(seq.type, Call(_global("concat"), (seq.expr, single.expr)))]

