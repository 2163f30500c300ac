"""The simulated quantizer ``annotation.simulated_quantize`` (simQ) as the passes see it.

Design note. simQ is the paper's ``simQ(x, β, σ, ρ)``: TVM's four tensor inputs
``(data, dom_scale, clip_min, clip_max)`` and attributes ``kind`` (1 input, 2 weight,
3 activation), ``sign`` and ``rounding``; it computes
``clip(round(x / dom_scale), clip_min, clip_max) * dom_scale``. This module builds and reads
such calls and keeps the scale arithmetic in one place:

* a *range* ``r`` (the largest magnitude represented) and ``b`` bits give
  ``valid = b - sign`` value bits, ``dom_scale = r / 2^valid`` and the clip bounds
  ``±(2^valid - 1)`` (``[0, 2^valid - 1]`` unsigned) — TVM's ``_set_params``;
* the smallest signed integer type holding a clip range is the realized dtype of a
  quantized value (int8 for signed 8-bit, int16 for unsigned 8-bit);
* ``power2_range`` rounds a max-abs up to a power of two (``weight_scale="power2"``).

Invariants: the scalar inputs of every simQ built here are float32 :class:`Constant`\\ s, so
calibration rewrites them and realize reads them without evaluating anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from semantics.expr import Attrs, Call, Constant, Expr, Op

__all__ = [
    "ACTIVATION", "INPUT", "SIMQ", "WEIGHT", "SimQ", "clip_bounds", "dom_scale_for",
    "integer_dtype", "is_simq", "make_simq", "power2_range", "read_simq", "round_values",
]

SIMQ = "annotation.simulated_quantize"
INPUT, WEIGHT, ACTIVATION = 1, 2, 3
KIND_NAMES = {INPUT: "input", WEIGHT: "weight", ACTIVATION: "activation"}


def static_shape(t: object) -> tuple[int, ...] | None:
    """The shape of a tensor type whose dims are all integers, else None."""
    from semantics.types import TensorType

    if not isinstance(t, TensorType):
        return None
    dims = tuple(t.shape)
    if not all(isinstance(d, (int, np.integer)) for d in dims):
        return None
    return tuple(int(d) for d in dims)  # type: ignore[arg-type]


def is_simq(e: Expr) -> bool:
    """Whether ``e`` is a call of the simulated quantizer."""
    return type(e) is Call and type(e.op) is Op and e.op.name == SIMQ


def clip_bounds(bits: int, sign: bool) -> tuple[int, int]:
    """The integer range of ``bits`` bits: ``±(2^(bits-1) - 1)`` signed, ``[0, 2^bits - 1]``."""
    valid = bits - int(sign)
    top = 2 ** valid - 1
    return (-top if sign else 0), top


def dom_scale_for(value_range: float, bits: int, sign: bool) -> float:
    """The step (``dom_scale``) that maps ``value_range`` to the top of ``bits`` bits."""
    valid = bits - int(sign)
    if not math.isfinite(value_range) or value_range <= 0:
        value_range = 1.0
    return float(np.float32(value_range / 2.0 ** valid))


def power2_range(max_abs: float) -> float:
    """``max_abs`` rounded up to a power of two (1.0 for zero)."""
    if not math.isfinite(max_abs) or max_abs <= 0:
        return 1.0
    return float(2.0 ** math.ceil(math.log2(max_abs)))


def integer_dtype(clip_min: float, clip_max: float) -> str:
    """The smallest signed integer dtype holding ``[clip_min, clip_max]``."""
    for bits in (8, 16, 32, 64):
        top = 2 ** (bits - 1)
        if -top <= clip_min and clip_max <= top - 1:
            return f"int{bits}"
    return "int64"


def _scalar(value: float) -> Constant:
    return Constant(np.asarray(value, dtype=np.float32))


def make_simq(data: Expr, dom_scale: float, clip_min: float, clip_max: float, *, kind: int,
              sign: bool = True, rounding: str = "round") -> Call:
    """``annotation.simulated_quantize(data, dom_scale, clip_min, clip_max)`` with constants."""
    attrs = Attrs({"kind": int(kind), "sign": bool(sign), "rounding": str(rounding)})
    return Call(Op(SIMQ), (data, _scalar(dom_scale), _scalar(clip_min), _scalar(clip_max)),
                attrs, span=data.span)


@dataclass(frozen=True)
class SimQ:
    """A simQ call read back: its data argument, scalars and attributes."""

    data: Expr
    dom_scale: float
    clip_min: float
    clip_max: float
    kind: int
    sign: bool
    rounding: str


def read_simq(call: Call) -> SimQ | None:
    """The parts of a simQ call, or None when a scalar input is not a constant."""
    scalars = []
    for arg in call.args[1:4]:
        if type(arg) is not Constant or arg.data.size != 1:
            return None
        scalars.append(float(arg.data.reshape(())))
    attrs = call.attrs
    return SimQ(call.args[0], scalars[0], scalars[1], scalars[2], int(attrs.get("kind", 1)),
                bool(attrs.get("sign", True)), str(attrs.get("rounding", "round")))


def with_dom_scale(call: Call, dom_scale: float,
                   clip: tuple[float, float] | None = None) -> Call:
    """``call`` (a simQ) with another ``dom_scale`` (and clip bounds, when given); its
    attributes kept."""
    bounds = tuple(call.args[2:4]) if clip is None else (_scalar(clip[0]), _scalar(clip[1]))
    args = (call.args[0], _scalar(dom_scale), *bounds)
    return Call(call.op, args, call.attrs, call.type_args, span=call.span)


def round_values(x: np.ndarray, rounding: str) -> np.ndarray:
    """``x`` rounded as simQ's mode does, for calibration statistics (stochastic is bounded
    by the ceiling of the magnitude, its worst case)."""
    if rounding == "floor":
        return np.floor(x)
    if rounding == "ceil":
        return np.ceil(x)
    if rounding == "stochastic":
        return np.sign(x) * np.ceil(np.abs(x))
    return np.sign(x) * np.floor(np.abs(x) + 0.5)
