"""Lowering of ``annotation.simulated_quantize`` (simQ) for ``llvm``.

One ``te.compute`` over ``data``'s shape, following the reference
(:mod:`semantics.ops.annotation`) step by step in ``data``'s dtype: ``v = data / dom_scale``,
the rounding (``round`` half away from zero as the registry's ``round`` lowers it; ``floor``;
``ceil``), the NaN-propagating clip, the product with ``dom_scale``.

Stochastic rounding draws the same numbers as the reference: the row-major flat index of
the element, plus the mixed seed (a build-time constant), goes through the 32-bit mix
``lowbias32`` in ``uint32`` arithmetic (TIR's ``*`` and ``>>`` on ``uint32`` wrap and shift
as numpy's); the top 24 bits scaled by ``2**-24`` are compared, in float64 (both sides
exact), with the fractional part ``v - floor(v)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from backends.tvm.lower.base import OpCall, const, lowering, nan_max, nan_min
from backends.tvm.lower.tensor import round_half_away
from semantics.ops.annotation import MIX_1, MIX_2, UNIFORM_BITS, mix32


def _mix32(x: Any) -> Any:
    from tvm import tirx

    u = "uint32"
    x = tirx.bitwise_xor(x, tirx.shift_right(x, const(16, u)))
    x = x * const(MIX_1, u)
    x = tirx.bitwise_xor(x, tirx.shift_right(x, const(15, u)))
    x = x * const(MIX_2, u)
    return tirx.bitwise_xor(x, tirx.shift_right(x, const(16, u)))


def _flat_index(idx: tuple[Any, ...], shape: tuple[int, ...]) -> Any:
    from tvm import tirx

    flat: Any = tirx.const(0, "int64")
    for i, d in zip(idx, shape, strict=True):
        flat = flat * tirx.const(d, "int64") + tirx.Cast("int64", i)
    return flat


@lowering("annotation.simulated_quantize")
def _simulated_quantize(call: OpCall) -> Any:
    from tvm import te, tirx

    data, scale_t, lo_t, hi_t = call.inputs
    dtype = call.out_dtype
    shape = call.out_shape
    rounding = call.attrs["rounding"]
    key = int(mix32(np.asarray(call.attrs["seed"], dtype=np.uint32)))

    def body(*idx: Any) -> Any:
        scale = tirx.Cast(dtype, scale_t[()])
        lo = tirx.Cast(dtype, lo_t[()])
        hi = tirx.Cast(dtype, hi_t[()])
        v = data[idx] / scale
        if rounding == "round":
            r = round_half_away(v, dtype)
        elif rounding == "floor":
            r = tirx.floor(v)
        elif rounding == "ceil":
            r = tirx.ceil(v)
        else:
            down = tirx.floor(v)
            frac = tirx.Cast("float64", v - down)
            counter = tirx.Cast("uint32", _flat_index(idx, shape)) + const(key, "uint32")
            top = tirx.shift_right(_mix32(counter), const(32 - UNIFORM_BITS, "uint32"))
            u = tirx.Cast("float64", top) * tirx.const(math.ldexp(1.0, -UNIFORM_BITS),
                                                       "float64")
            r = tirx.Select(u < frac, down + tirx.const(1.0, dtype), down)
        clipped = nan_max(nan_min(r, hi, dtype), lo, dtype)
        return clipped * scale

    return te.compute(shape, body, name="simulated_quantize")
