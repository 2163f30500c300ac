"""ONNX signal operators: the window functions, ``MelWeightMatrix`` and ``DFT``.

**Windows** (``HannWindow``, ``HammingWindow``, ``BlackmanWindow``).

A window depends only on its length, which must be known at import time: the converter
computes it in numpy and returns a constant. With ``N' = size`` (``periodic=1``, the
default) or ``size - 1`` (``periodic=0``) and ``n = 0 .. size - 1``:

* Hann: ``sin²(π n / N')``;
* Hamming: ``a - (1 - a) cos(2π n / N')`` with ``a = 25/46``;
* Blackman: ``0.42 - 0.5 cos(2π n / N') + 0.08 cos(4π n / N')``;

cast to ``output_datatype`` (default ``float32``).

**DFT** (opsets 17 and 20) is a matrix product along its axis with the cosine and sine
matrices ``cos(2π jk/n)``, ``sin(2π jk/n)`` built at import time (``n`` the ``dft_length``,
static; a shorter input is zero-padded, a longer one truncated — the matrices' columns),
computed in float64 and cast back: the forward transform ``Re = R·C + I·S``,
``Im = I·C - R·S`` (only the bins ``0..n/2`` when ``onesided``), the inverse
``(R·C - I·S, I·C + R·S) / n``, and the one-sided inverse (a real signal from the bins
``0..n/2``, each but the first and, for an even ``n``, the middle counted twice).
The contraction is a ``transpose``, a ``reshape`` to two dimensions and an ``nn.dense``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import (
    Unsupported,
    Value,
    call,
    call_tuple,
    const,
    required,
    static,
    static_ints,
)
from frontends.onnx.registry import converter


def window(kind: str, size: int, periodic: bool) -> np.ndarray:
    """The window ``kind`` of ``size`` points (float64)."""
    if size < 0:
        raise Unsupported(f"a window of negative size {size}")
    n = np.arange(size, dtype=np.float64)
    denom = size if periodic else size - 1
    if kind == "HannWindow":
        return np.sin(n * np.pi / denom) ** 2
    if kind == "HammingWindow":
        a = 25.0 / 46.0
        return a - np.cos(n * np.pi * 2 / denom) * (1 - a)
    return 0.42 - 0.5 * np.cos(n * np.pi * 2 / denom) + 0.08 * np.cos(n * np.pi * 4 / denom)


@converter("HannWindow", "HammingWindow", "BlackmanWindow", attrs=("periodic", "output_datatype"))
def _window(ctx: Any, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    from onnx import helper
    (size,) = static_ints(required(ins, 0), f"the {node.op_type} size")
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(attrs.get("output_datatype", 1))))
    with np.errstate(divide="ignore", invalid="ignore"):
        values = window(node.op_type, size, bool(attrs.get("periodic", 1)))
    return [const(values.astype(dtype))]


def _contract(v: Value, axis: int, m: np.ndarray) -> Value:
    """``v`` with its ``axis`` (length ``m.shape[1]``) replaced by ``m @`` that axis."""
    shape = v.static_shape()
    perm = [d for d in range(len(shape)) if d != axis] + [axis]
    moved = call("transpose", [v], axes=tuple(perm))
    flat = call("reshape", [moved], newshape=(-1, shape[axis]))
    out = call("nn.dense", [flat, const(m.astype(v.dtype))])
    rest = tuple(shape[d] for d in perm[:-1])
    back = call("reshape", [out], newshape=rest + (m.shape[0],))
    inverse = [perm.index(d) for d in range(len(shape))]
    return call("transpose", [back], axes=tuple(inverse))


def _trig(n_out: int, n_in: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``cos(2π jk/n)`` and ``sin(2π jk/n)`` for bins ``k < n_out`` and inputs ``j < n_in``
    (zero for ``j >= n``: the input truncated to ``n``)."""
    k = np.arange(n_out, dtype=np.float64)[:, None]
    j = np.arange(n_in, dtype=np.float64)[None, :]
    angle = 2 * np.pi * ((k * j) % n) / n
    keep = (j < n).astype(np.float64)
    return np.cos(angle) * keep, np.sin(angle) * keep


@converter("DFT", attrs=("axis", "inverse", "onesided"))
def _dft(ctx: Any, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = required(ins, 0)
    shape = x.static_shape()
    if len(shape) < 2 or shape[-1] not in (1, 2) or not x.dtype.startswith("float"):
        raise Unsupported(f"DFT needs a float signal whose last dim is 1 or 2, got {shape}")
    if ctx.opset >= 20 and len(ins) > 2 and ins[2] is not None:
        (axis,) = static_ints(ins[2], "the DFT axis")
    else:
        axis = int(attrs.get("axis", 1 if ctx.opset < 20 else -2))
    axis %= len(shape)
    if axis == len(shape) - 1:
        raise Unsupported("the DFT axis cannot be the last (real/imaginary) dimension")
    inverse, onesided = bool(attrs.get("inverse", 0)), bool(attrs.get("onesided", 0))
    n_in = shape[axis]
    given = ins[1] if len(ins) > 1 else None
    n = (static_ints(given, "the DFT length")[0] if given is not None
         else 2 * (n_in - 1) if inverse and onesided else n_in)
    if n <= 0:
        raise Unsupported(f"DFT length {n} must be positive")
    work = call("cast", [x], dtype="float64")
    re = call("take", [work, const(np.int64(0))], axis=len(shape) - 1)
    im = (call("take", [work, const(np.int64(1))], axis=len(shape) - 1)
          if shape[-1] == 2 else None)
    if inverse and onesided:
        bins = min(n_in, n // 2 + 1)
        c, s = _trig(n, n_in, n)
        k = np.arange(n_in)
        weight = np.where((k == 0) | (2 * k == n), 1.0, 2.0) * (k < bins) / n
        c, s = (c * weight[None, :]), (s * weight[None, :])
        y = _contract(re, axis, c)
        if im is not None:
            y = call("subtract", [y, _contract(im, axis, s)])
        out = call("expand_dims", [y], axis=len(shape) - 1)
        return [call("cast", [out], dtype=x.dtype)]
    n_out = n // 2 + 1 if onesided else n
    c, s = _trig(n_out, n_in, n)
    sign = 1.0 if inverse else -1.0        # the exponent's sign: e^(sign · 2πi jk/n)
    scale = 1.0 / n if inverse else 1.0
    real = _contract(re, axis, c * scale)
    imag = _contract(re, axis, sign * s * scale)
    if im is not None:
        real = call("subtract", [real, _contract(im, axis, sign * s * scale)])
        imag = call("add", [imag, _contract(im, axis, c * scale)])
    out = call_tuple("stack", [real, imag], axis=len(shape) - 1)
    return [call("cast", [out], dtype=x.dtype)]


def mel_weights(bins: int, dft_length: int, rate: int, low_hz: float,
                high_hz: float) -> np.ndarray:
    """The ``(dft_length // 2 + 1, bins)`` matrix of triangular mel filters (HTK's mel scale
    ``2595 log10(1 + f / 700)``): ``bins + 2`` points equally spaced in mel from ``low_hz``
    (with the ONNX definition's step, the mel span over ``bins + 2``), mapped back to hertz
    and to spectrogram bins ``floor((dft_length + 1) f / rate)``; filter ``i`` rises from
    point ``i`` to ``i + 1`` and falls to ``i + 2``."""
    def to_mel(hz: float) -> float:
        return float(2595 * np.log1p(hz / 700) / np.log(10))

    lo, hi = to_mel(low_hz), to_mel(high_hz)
    mels = np.arange(bins + 2) * ((hi - lo) / (bins + 2)) + lo
    hz = 700 * np.expm1(mels / 2595 * np.log(10))
    points = (((dft_length + 1) * hz) // rate).astype(np.int64)
    out = np.zeros((dft_length // 2 + 1, bins))
    for i in range(bins):
        left, center, right = (int(p) for p in points[i:i + 3])
        if center == left:
            out[center, i] = 1
        else:
            j = np.arange(left, center + 1)
            out[j, i] = (j - left) / (center - left)
        if right > center:
            j = np.arange(center, right)
            out[j, i] = (right - j) / (right - center)
    return out


@converter("MelWeightMatrix", attrs=("output_datatype",))
def _mel_weight_matrix(ctx: Any, node: Any, ins: list[Value | None],
                       attrs: dict[str, Any]) -> list[Value]:
    from onnx import helper
    (bins,) = static_ints(required(ins, 0), "num_mel_bins")
    (dft_length,) = static_ints(required(ins, 1), "dft_length")
    (rate,) = static_ints(required(ins, 2), "sample_rate")
    low, high = (float(np.asarray(static(required(ins, i), "the edge frequencies")))
                 for i in (3, 4))
    if bins <= 0 or dft_length <= 0 or rate <= 0:
        raise Unsupported(f"MelWeightMatrix sizes {bins}, {dft_length}, {rate} must be positive")
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(attrs.get("output_datatype", 1))))
    return [const(mel_weights(bins, dft_length, rate, low, high).astype(dtype))]
