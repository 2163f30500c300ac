"""ONNX quantization operators on integer tensors: ``QuantizeLinear``,
``DequantizeLinear``, ``DynamicQuantizeLinear``, ``MatMulInteger``, ``QLinearMatMul`` (and, in
``ops_nn``, ``ConvInteger`` and ``QLinearConv``).

* ``QuantizeLinear``: ``saturate(round(x / scale) + zero_point)`` — rounding half to even,
  saturation to the zero point's dtype (``uint8`` without one); a 1-D scale is per slice of
  ``axis``. The division is done in the scale's dtype, as ONNX's reference does.
* ``DynamicQuantizeLinear``: ``uint8`` with the scale ``(max(x, 0) - min(x, 0)) / 255`` and
  the zero point ``saturate(round(-min(x, 0) / scale))``, also returned.
* ``MatMulInteger``: ``(a - a_zero_point) @ (b - b_zero_point)`` in ``int32`` (an integer
  ``nn.batch_matmul``: exact).
* ``QLinearMatMul``: that ``int32`` product times ``a_scale * b_scale / y_scale`` (computed in
  the scales' dtype), in ``float64``, plus ``y_zero_point``, rounded half to even and
  saturated to ``y_zero_point``'s dtype.

The products take operands of rank 2, or of rank 3 with one batch (a rank-2 right operand is
shared by every batch).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, const, required
from frontends.onnx.registry import converter


def _opt(ins: list[Value | None], i: int) -> Value | None:
    return ins[i] if len(ins) > i else None


def _saturate(y: Value, dtype: str) -> Value:
    """``y`` (a float tensor) rounded half to even, clipped to ``dtype``'s range, cast."""
    info = np.iinfo(np.dtype(dtype))
    y = call("clip", [call("round", [y])], a_min=float(info.min), a_max=float(info.max))
    return call("cast", [y], dtype=dtype)


def _per_axis(v: Value, ndim: int, axis: int) -> Value:
    """A 1-D ``v`` reshaped to broadcast along ``axis`` of a rank-``ndim`` tensor."""
    if v.ndim != 1 or ndim == 0:
        return v
    axis %= ndim
    return call("reshape", [v], newshape=(-1,) + (1,) * (ndim - axis - 1))


@converter("QuantizeLinear", attrs=("axis", "saturate"))
def _quantize_linear(ctx: Any, node: Any, ins: list[Value | None],
                     attrs: dict[str, Any]) -> list[Value]:
    x, scale = required(ins, 0), required(ins, 1)
    zp = _opt(ins, 2)
    dtype = zp.dtype if zp is not None else "uint8"
    if not dtype.startswith(("int", "uint")) or dtype.endswith("64"):
        raise Unsupported(f"QuantizeLinear to {dtype} is not supported")
    axis = int(attrs.get("axis", 1))
    scale = _per_axis(scale, x.ndim, axis)
    if x.dtype != scale.dtype:
        x = call("cast", [x], dtype=scale.dtype)
    y = call("cast", [call("round", [call("divide", [x, scale])])], dtype="float64")
    if zp is not None:
        y = call("add", [y, call("cast", [_per_axis(zp, x.ndim, axis)], dtype="float64")])
    return [_saturate(y, dtype)]


@converter("DynamicQuantizeLinear")
def _dynamic_quantize_linear(ctx: Any, node: Any, ins: list[Value | None],
                             attrs: dict[str, Any]) -> list[Value]:
    x = required(ins, 0)
    zero = const(np.zeros((), x.dtype))
    hi = call("maximum", [call("max", [x]), zero])
    lo = call("minimum", [call("min", [x]), zero])
    scale = call("divide", [call("subtract", [hi, lo]), const(np.asarray(255, x.dtype))])
    zp = _saturate(call("divide", [call("subtract", [zero, lo]), scale]), "uint8")
    y = call("add", [call("round", [call("divide", [x, scale])]),
                     call("cast", [zp], dtype=x.dtype)])
    return [_saturate(y, "uint8"), scale, zp]


def _centered(v: Value, zp: Value | None, row_axis: int | None) -> Value:
    """``v - zp`` in int32; a 1-D zero point of a left operand is per row (``row_axis``)."""
    out = call("cast", [v], dtype="int32")
    if zp is None:
        return out
    z = call("cast", [zp], dtype="int32")
    if row_axis is not None and z.ndim == 1 and z.shape[0] != 1:
        z = call("reshape", [z], newshape=(-1, 1))
    return call("subtract", [out, z])


def int_matmul(a: Value, b: Value) -> Value:
    """``a @ b`` of int32 tensors: ranks 2 × 2, 3 × 3 (one batch) or 3 × 2."""
    if a.ndim == 2 and b.ndim == 2:
        out = call("nn.batch_matmul", [call("expand_dims", [a], axis=0),
                                       call("expand_dims", [b], axis=0)], transpose_b=False)
        return call("squeeze", [out], axis=(0,))
    if a.ndim == 3 and b.ndim == 2:
        b = call("broadcast_to", [call("expand_dims", [b], axis=0)],
                 shape=(a.shape[0],) + tuple(b.shape))
    if a.ndim == 3 and b.ndim == 3:
        return call("nn.batch_matmul", [a, b], transpose_b=False)
    raise Unsupported(f"integer products of ranks {a.ndim} and {b.ndim} are not supported")


@converter("MatMulInteger")
def _matmul_integer(ctx: Any, node: Any, ins: list[Value | None],
                    attrs: dict[str, Any]) -> list[Value]:
    a = _centered(required(ins, 0), _opt(ins, 2), 0)
    b = _centered(required(ins, 1), _opt(ins, 3), None)
    return [int_matmul(a, b)]


@converter("QLinearMatMul")
def _qlinear_matmul(ctx: Any, node: Any, ins: list[Value | None],
                    attrs: dict[str, Any]) -> list[Value]:
    a = _centered(required(ins, 0), _opt(ins, 2), 0)
    b = _centered(required(ins, 3), _opt(ins, 5), None)
    a_scale, b_scale, y_scale = required(ins, 1), required(ins, 4), required(ins, 6)
    factor = call("divide", [call("multiply", [a_scale, b_scale]), y_scale])
    y = call("multiply", [call("cast", [int_matmul(a, b)], dtype="float64"),
                          call("cast", [factor], dtype="float64")])
    yzp = _opt(ins, 7)
    if yzp is not None:
        y = call("add", [y, call("cast", [yzp], dtype="float64")])
    return [_saturate(y, yzp.dtype if yzp is not None else required(ins, 0).dtype)]


@converter("DequantizeLinear", attrs=("axis",))
def _dequantize_linear(ctx: Any, node: Any, ins: list[Value | None],
                       attrs: dict[str, Any]) -> list[Value]:
    """``(x - zero_point) * scale`` in float64, cast to the scale's dtype (the same values as
    the reference's float32 arithmetic: each step is exact in float64 but the last)."""
    x, scale = required(ins, 0), required(ins, 1)
    zp = _opt(ins, 2)
    if not x.dtype.startswith(("int", "uint")):
        raise Unsupported(f"DequantizeLinear of {x.dtype} is not supported")
    axis = int(attrs.get("axis", 1))
    dx = call("cast", [x], dtype="float64")
    if zp is not None:
        dx = call("subtract", [dx, call("cast", [_per_axis(zp, x.ndim, axis)],
                                        dtype="float64")])
    y = call("multiply", [dx, call("cast", [_per_axis(scale, x.ndim, axis)], dtype="float64")])
    return [call("cast", [y], dtype=scale.dtype)]
