"""ONNX control flow and sequences → Relay: ``If`` → ``if``, ``Loop`` → a let-bound
tail-recursive function (the paper's Fig. 2 conversion), sequences → the prelude's ``List``.

``Loop(M, cond, v...)`` with body ``(i, c, v...) -> (c', v'..., )`` becomes::

    let %loop = fn (%i: int64, %c: bool, %v: T...) -> (T...,) {
      if (%c && %i < M) { <body>; %loop(%i + 1i64, c', v'...) } else { (%v...,) }
    };
    %loop(0i64, cond, v...)

Scan outputs of ``Loop`` and the ``Scan`` operator would need a list → tensor stacking
operator the registry lacks; they are reported as unsupported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, const, project, static_ints
from frontends.onnx.importer import Context, converter
from frontends.onnx.ops_math import _req
from semantics.expr import Call, Function, GlobalVar, If, Let, Tuple, Var
from semantics.types import FuncType, TupleType, TypeCall, scalar_type


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
    then_outs = ctx.convert_graph(attrs["then_branch"], [])
    else_outs = ctx.convert_graph(attrs["else_branch"], [])
    if cond.const is not None:
        return then_outs if bool(cond.const) else else_outs
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
    if n_scan:
        raise Unsupported(f"Loop scan outputs ({n_scan}) are not supported")
    i64 = scalar_type("int64")
    boolean = scalar_type("bool")
    i_var = Var("i", i64)
    c_var = Var("cond", boolean)
    v_vars = [Var(f"v{k}", v.type) for k, v in enumerate(vs)]
    i_val, c_val = Value(i64, i_var), Value(boolean, c_var)
    v_vals = [Value(v.type, var) for v, var in zip(vs, v_vars)]
    outs = ctx.convert_graph(body, [i_val, c_val] + v_vals)
    ret = TupleType(tuple(v.type for v in vs))
    loop_var = Var("loop", FuncType((i64, boolean) + tuple(v.type for v in vs), ret))
    next_i = call("add", [i_val, const(np.int64(1))])
    next_c = _scalar_cond(outs[0])
    for k, (new, old) in enumerate(zip(outs[1:], vs)):
        if str(new.type) != str(old.type):
            raise Unsupported(f"loop-carried value {k} changes type: {old.type} -> {new.type}")
    recur = Call(loop_var, (next_i.expr, next_c.expr) + tuple(o.expr for o in outs[1:]))
    done = Tuple(tuple(var for var in v_vars))
    m = ins[0]
    guard: Value | None = c_val if ins[1] is not None else None
    if m is not None:
        below = call("less", [i_val, call("reshape", [m], newshape=())])
        guard = below if guard is None else call("logical_and", [guard, below])
    if guard is None:
        raise Unsupported("a Loop without trip count and condition never ends")
    fn = Function(tuple([i_var, c_var] + v_vars), If(guard.expr, recur, done), ret)
    c0 = _scalar_cond(ins[1]) if ins[1] is not None else const(np.bool_(True))
    start = Call(loop_var, (const(np.int64(0)).expr, c0.expr) + tuple(v.expr for v in vs))
    result = Value(ret, Let(loop_var, fn, start))
    return [project(result, k) for k in range(len(vs))]


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

