"""ONNX window functions: ``HannWindow``, ``HammingWindow``, ``BlackmanWindow``.

A window depends only on its length, which must be known at import time: the converter
computes it in numpy and returns a constant. With ``N' = size`` (``periodic=1``, the
default) or ``size - 1`` (``periodic=0``) and ``n = 0 .. size - 1``:

* Hann: ``sin²(π n / N')``;
* Hamming: ``a - (1 - a) cos(2π n / N')`` with ``a = 25/46``;
* Blackman: ``0.42 - 0.5 cos(2π n / N') + 0.08 cos(4π n / N')``;

cast to ``output_datatype`` (default ``float32``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, const, required, static_ints
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
