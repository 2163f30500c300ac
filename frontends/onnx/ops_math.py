"""ONNX element-wise, comparison, variadic and reduction operators → Relay calls."""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, const, keep_offset, static_ints
from frontends.onnx.builder import required as _req
from frontends.onnx.context import Context, onnx_dtype
from frontends.onnx.registry import converter

_UNARY = {
    "Abs": "abs", "Neg": "negative", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
    "Floor": "floor", "Ceil": "ceil", "Sign": "sign", "Sin": "sin", "Cos": "cos",
    "Tanh": "tanh", "Sigmoid": "sigmoid", "Erf": "erf", "Relu": "nn.relu", "Not": "logical_not",
}
_BINARY = {
    "Add": "add", "Sub": "subtract", "Mul": "multiply", "Pow": "power",
    "Equal": "equal", "Less": "less", "Greater": "greater", "LessOrEqual": "less_equal",
    "GreaterOrEqual": "greater_equal", "And": "logical_and", "Or": "logical_or",
    "Xor": "not_equal",
}


def scalar(value: float, like: Value) -> Value:
    """A scalar constant of ``like``'s dtype."""
    return const(np.asarray(value, dtype=like.dtype))


@converter(*_UNARY)
def _unary(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    if node.op_type == "Relu" and x.dtype.startswith(("int", "uint")):
        return [call("maximum", [x, scalar(0, x)])]
    return [call(_UNARY[node.op_type], [x])]


@converter(*_BINARY)
def _binary(ctx: Context, node: Any, ins: list[Value | None],
            attrs: dict[str, Any]) -> list[Value]:
    a, b = _req(ins, 0), _req(ins, 1)
    if node.op_type == "Pow" and a.dtype != b.dtype:
        b = call("cast", [b], dtype=a.dtype)
    y = call(_BINARY[node.op_type], [a, b])
    if node.op_type in ("Add", "Sub") and y.const is None:
        # A run-time counter plus or minus a constant: remember the offset (dynamic Slice).
        if b.const is not None and b.const.size == 1 and a.const is None:
            keep_offset(y, a, int(b.const.reshape(-1)[0]) * (1 if node.op_type == "Add" else -1))
        elif a.const is not None and a.const.size == 1 and node.op_type == "Add":
            keep_offset(y, b, int(a.const.reshape(-1)[0]))
    return [y]


@converter("Div")
def _div(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    a, b = _req(ins, 0), _req(ins, 1)
    # ONNX integer division truncates toward zero, as Relay's integer divide does: exact in
    # the dtype (it went through float64 before, wrong beyond 2**53)
    return [call("divide", [a, b])]


@converter("Mod", attrs=("fmod",))
def _mod(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    a, b = _req(ins, 0), _req(ins, 1)
    if attrs.get("fmod", 0):
        return [call("mod", [a, b])]
    if not a.dtype.startswith("float"):
        return [call("floor_mod", [a, b])]
    return [_float_floor_mod(a, b)]


def _float_floor_mod(a: Value, b: Value) -> Value:
    """numpy's (Python's) float ``a % b``, which the ONNX reference uses for ``fmod=0``:
    ``r = fmod(a, b)`` (exact), plus ``b`` when ``r`` is nonzero with the other sign than
    ``b``; a zero remainder takes ``b``'s sign. Unlike ``a - floor(a / b) * b`` (Relay's
    ``floor_mod``) this is exact, and ``±x % ±inf`` is ``x`` or ``±inf``, not NaN."""
    r = call("mod", [a, b])
    zero = scalar(0.0, r)
    r_neg = call("less", [r, zero])
    b_neg = call("less", [b, zero])
    adjust = call("logical_and", [call("not_equal", [r, zero]),
                                  call("not_equal", [r_neg, b_neg])])
    r = call("where", [adjust, call("add", [r, b]), r])
    signed_zero = call("where", [b_neg, scalar(-0.0, r), zero])
    return call("where", [call("equal", [r, zero]), signed_zero, r])


@converter("Round")
def _round(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    """ONNX rounds half to even: ``r = floor(x + 0.5)``, minus one where ``x`` is exactly
    halfway and ``r`` is odd."""
    x = _req(ins, 0)
    r = call("floor", [call("add", [x, scalar(0.5, x)])])
    half = call("equal", [call("subtract", [r, x]), scalar(0.5, x)])
    odd = call("equal", [call("floor_mod", [r, scalar(2, x)]), scalar(1, x)])
    fix = call("logical_and", [half, odd])
    return [call("where", [fix, call("subtract", [r, scalar(1, x)]), r])]


@converter("Identity")
def _identity(ctx: Context, node: Any, ins: list[Value | None],
              attrs: dict[str, Any]) -> list[Value]:
    return [_req(ins, 0)]


@converter("Reciprocal")
def _reciprocal(ctx: Context, node: Any, ins: list[Value | None],
                attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    return [call("divide", [scalar(1, x), x])]


@converter("Tan")
def _tan(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    return [call("divide", [call("sin", [x]), call("cos", [x])])]


@converter("Softsign")
def _softsign(ctx: Context, node: Any, ins: list[Value | None],
              attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    return [call("divide", [x, call("add", [scalar(1, x), call("abs", [x])])])]


@converter("Softplus")
def _softplus(ctx: Context, node: Any, ins: list[Value | None],
              attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    return [call("log", [call("add", [call("exp", [x]), scalar(1, x)])])]


@converter("LeakyRelu", attrs=("alpha",))
def _leaky(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    return [call("nn.leaky_relu", [_req(ins, 0)], alpha=float(attrs.get("alpha", 0.01)))]


@converter("Elu", attrs=("alpha",))
def _elu(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    alpha = float(attrs.get("alpha", 1.0))
    neg = call("multiply", [scalar(alpha, x), call("subtract", [call("exp", [x]), scalar(1, x)])])
    return [call("where", [call("less", [x, scalar(0, x)]), neg, x])]


@converter("Selu", attrs=("alpha", "gamma"))
def _selu(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    alpha = float(attrs.get("alpha", 1.67326319217681884765625))
    gamma = float(attrs.get("gamma", 1.05070102214813232421875))
    neg = call("multiply", [scalar(alpha, x), call("subtract", [call("exp", [x]), scalar(1, x)])])
    return [call("multiply", [scalar(gamma, x),
                              call("where", [call("less_equal", [x, scalar(0, x)]), neg, x])])]


@converter("HardSigmoid", attrs=("alpha", "beta"))
def _hard_sigmoid(ctx: Context, node: Any, ins: list[Value | None],
                  attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    alpha, beta = float(attrs.get("alpha", 0.2)), float(attrs.get("beta", 0.5))
    y = call("add", [call("multiply", [x, scalar(alpha, x)]), scalar(beta, x)])
    return [call("clip", [y], a_min=0.0, a_max=1.0)]


@converter("HardSwish")
def _hard_swish(ctx: Context, node: Any, ins: list[Value | None],
                attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    y = call("add", [call("multiply", [x, scalar(1 / 6, x)]), scalar(0.5, x)])
    return [call("multiply", [x, call("clip", [y], a_min=0.0, a_max=1.0)])]


@converter("ThresholdedRelu", attrs=("alpha",))
def _thresholded_relu(ctx: Context, node: Any, ins: list[Value | None],
                      attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    alpha = float(attrs.get("alpha", 1.0))
    return [call("where", [call("greater", [x, scalar(alpha, x)]), x, scalar(0, x)])]


@converter("PRelu")
def _prelu(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x, slope = _req(ins, 0), _req(ins, 1)
    return [call("where", [call("less", [x, scalar(0, x)]), call("multiply", [x, slope]), x])]


@converter("Clip", attrs=("min", "max"))
def _clip(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    lo: Value | None
    hi: Value | None
    if ctx.opset < 11:
        lo = scalar(attrs["min"], x) if "min" in attrs else None
        hi = scalar(attrs["max"], x) if "max" in attrs else None
    else:
        lo = ins[1] if len(ins) > 1 else None
        hi = ins[2] if len(ins) > 2 else None
    if lo is not None:
        x = call("maximum", [x, lo])
    if hi is not None:
        x = call("minimum", [x, hi])
    return [x]


@converter("Max", "Min", "Sum", "Mean")
def _variadic(ctx: Context, node: Any, ins: list[Value | None],
              attrs: dict[str, Any]) -> list[Value]:
    name = {"Max": "maximum", "Min": "minimum", "Sum": "add", "Mean": "add"}[node.op_type]
    vals = [v for v in ins if v is not None]
    acc = vals[0]
    for v in vals[1:]:
        acc = call(name, [acc, v])
    if node.op_type == "Mean":
        acc = call("divide", [acc, scalar(len(vals), acc)])
    return [acc]


@converter("Where")
def _where(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    return [call("where", [_req(ins, 0), _req(ins, 1), _req(ins, 2)])]


@converter("Cast", attrs=("to", "saturate"))
def _cast(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    return [call("cast", [_req(ins, 0)], dtype=onnx_dtype(int(attrs["to"])))]


@converter("CastLike", attrs=("saturate",))
def _cast_like(ctx: Context, node: Any, ins: list[Value | None],
               attrs: dict[str, Any]) -> list[Value]:
    return [call("cast", [_req(ins, 0)], dtype=_req(ins, 1).dtype)]


_REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min",
           "ReduceProd": "prod", "ReduceL1": "sum", "ReduceL2": "sum", "ReduceSumSquare": "sum",
           "ReduceLogSum": "sum", "ReduceLogSumExp": "sum"}


@converter(*_REDUCE, attrs=("axes", "keepdims", "noop_with_empty_axes"))
def _reduce(ctx: Context, node: Any, ins: list[Value | None],
            attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    keep = bool(attrs.get("keepdims", 1))
    if "axes" in attrs:
        axes: list[int] | None = [int(a) for a in attrs["axes"]]
    elif len(ins) > 1 and ins[1] is not None:
        axes = static_ints(ins[1], f"{node.op_type} axes")
    else:
        axes = None
    if axes is not None and not axes:
        axes = None
    if axes is None and attrs.get("noop_with_empty_axes", 0):
        return [x]
    op = node.op_type
    if op in ("ReduceMax", "ReduceMin") and any(d == 0 for d in x.shape):
        return [_empty_extreme(x, axes, keep, op == "ReduceMax")]
    if x.dtype == "bool" and op in ("ReduceMax", "ReduceMin"):
        name = "any" if op == "ReduceMax" else "all"
        return [call(name, [x], axis=tuple(axes) if axes else None, keepdims=keep)]
    if op == "ReduceL1":
        x = call("abs", [x])
    elif op in ("ReduceL2", "ReduceSumSquare"):
        x = call("multiply", [x, x])
    elif op == "ReduceLogSumExp":
        x = call("exp", [x])
    ax = tuple(axes) if axes is not None else None
    y = call(_REDUCE[op], [x], axis=ax, keepdims=keep)
    if op == "ReduceL2":
        y = call("sqrt", [y])
    elif op in ("ReduceLogSum", "ReduceLogSumExp"):
        y = call("log", [y])
    return [y]


@converter("ArgMax", "ArgMin", attrs=("axis", "keepdims", "select_last_index"))
def _arg(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    name = "argmax" if node.op_type == "ArgMax" else "argmin"
    y = call(name, [_req(ins, 0)], axis=(int(attrs.get("axis", 0)),),
             keepdims=bool(attrs.get("keepdims", 1)),
             select_last_index=bool(attrs.get("select_last_index", 0)))
    return [call("cast", [y], dtype="int64")]


def _empty_extreme(x: Value, axes: list[int] | None, keep: bool, is_max: bool) -> Value:
    """ONNX's max/min over an empty set: the identity of the reduction (-inf / +inf, or the
    dtype's extreme), with the reduced shape."""
    shape = x.static_shape()
    red = set(range(x.ndim)) if axes is None else {a % x.ndim for a in axes}
    if not any(shape[a] == 0 for a in red):
        raise Unsupported("reduction of an empty tensor")
    out = tuple(1 if i in red else d for i, d in enumerate(shape) if keep or i not in red)
    dt = np.dtype(x.dtype)
    if dt == np.bool_:
        fill: Any = not is_max
    elif dt.kind == "f":
        fill = -np.inf if is_max else np.inf
    else:
        info = np.iinfo(dt)
        fill = info.min if is_max else info.max
    return const(np.full(out, fill, dtype=dt))


@converter("BitShift", attrs=("direction",))
def _bit_shift(ctx: Context, node: Any, ins: list[Value | None],
               attrs: dict[str, Any]) -> list[Value]:
    """Integer shifts as arithmetic: ``LEFT`` is ``x * 2**s`` wrapped to the width (the
    same bits as a shift, signed or not), ``RIGHT`` is ``floor(x / 2**s)`` (the arithmetic
    shift of signed values). A shift outside ``[0, width)`` gives 0 (``RIGHT`` of a negative
    signed value: -1), as the ONNX reference defines it; so does a signed ``RIGHT`` by
    ``width - 1``, whose ``2**s`` the dtype cannot hold."""
    a, b = _req(ins, 0), _req(ins, 1)
    direction = attrs.get("direction", b"")
    direction = direction.decode() if isinstance(direction, bytes) else str(direction)
    if direction not in ("LEFT", "RIGHT") or not a.dtype.startswith(("int", "uint")):
        raise Unsupported(f"BitShift direction {direction!r} on {a.dtype}")
    if b.dtype != a.dtype:
        b = call("cast", [b], dtype=a.dtype)
    bits = int(a.dtype.lstrip("uint"))
    signed = a.dtype.startswith("int")
    limit = bits - 1 if signed and direction == "RIGHT" else bits
    ok = call("logical_and", [call("greater_equal", [b, scalar(0, b)]),
                              call("less", [b, scalar(limit, b)])])
    power = call("power", [scalar(2, a), call("where", [ok, b, scalar(0, b)])])
    if direction == "LEFT":
        return [call("where", [ok, call("multiply", [a, power]), scalar(0, a)])]
    shifted = call("floor_divide", [a, power])
    fill = call("where", [call("less", [a, scalar(0, a)]), scalar(-1, a), scalar(0, a)]) \
        if signed else scalar(0, a)
    return [call("where", [ok, shifted, fill])]


@converter("BitwiseAnd", "BitwiseOr", "BitwiseXor")
def _bitwise(ctx: Context, node: Any, ins: list[Value | None],
             attrs: dict[str, Any]) -> list[Value]:
    """The registry's ``bitwise_and/or/xor`` (numpy broadcasting, one integer dtype)."""
    name = {"BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or",
            "BitwiseXor": "bitwise_xor"}[node.op_type]
    return [call(name, [_req(ins, 0), _req(ins, 1)])]


@converter("BitwiseNot")
def _bitwise_not(ctx: Context, node: Any, ins: list[Value | None],
                 attrs: dict[str, Any]) -> list[Value]:
    """``x ^ ~0``: ``bitwise_xor`` with the all-ones value of the dtype (-1, or the maximum
    of an unsigned dtype)."""
    x = _req(ins, 0)
    if not x.dtype.startswith(("int", "uint")):
        raise Unsupported(f"BitwiseNot of {x.dtype} tensors")
    ones = np.asarray(np.iinfo(np.dtype(x.dtype)).max if x.dtype.startswith("uint") else -1,
                      dtype=x.dtype)
    return [call("bitwise_xor", [x, const(ones)])]
