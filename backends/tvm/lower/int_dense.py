"""Integer ``nn.dense`` on the CPU's dot-product instructions (issue 29, item 6).

The matrix product ``int8 × int8 → int32`` (also ``int8 × int8 → int16`` and
``int16 × int16 → int32``) with a bound weight runs on the words of
:mod:`backends.tvm.lower.int_dot`: ``G`` consecutive values of the reduction axis ``K`` in
one 32-bit word (2 int16 for ``vpmaddwd``, 4 bytes for ``vpdpbusd``), one dot-product call
per word.

* The weight ``(N, K)`` is packed at build time into words ``[N / T, K / G, T]``
  (:func:`pack_dense_words`): tile ``t`` holds output columns ``t·T ..`` of ``G`` values of
  ``K`` each, zero past ``N`` and ``K``. ``T`` is the GEMV tile of
  :func:`backends.tvm.lower.nn.gemv_tile` (at most ``GEMV_MAX_ROWS`` data rows) or the
  GEMM block :data:`backends.tvm.lower.nn.PACK`; the blocks keep the names the schedules of
  :mod:`backends.tvm.sched.dense` recognize, which vectorize the tile's lanes: the data word
  is broadcast, the weight words are one vector load.
* The data word of ``G`` values is formed in the reduction's body (the values past ``K``
  read as the padding: zero, or the shifted zero 128); with ``vpdpbusd`` the data is shifted
  by +128 into unsigned bytes and ``dense`` subtracts ``128 · Σ_k w[j, k]``
  (:func:`~backends.tvm.lower.int_dot.weight_correction`, at build time).
* The accumulator is int32. For the 8/16 scheme (``out_dtype="int16"``) ``dense`` casts it
  to int16: the exact sum wrapped to 32 bits and then to 16 is the exact sum wrapped to 16,
  which is what the oracle's int16 accumulator holds (every int8 product fits int16).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from backends.tvm.lower.base import OpCall, aligned_empty
from backends.tvm.lower.int_dot import DotPath, dot_call, pack_data, weight_correction
from backends.tvm.target import Target

__all__ = ["dense_dot", "dense_path", "pack_dense_words"]


def dense_path(target: Target, in_dtype: str, out_dtype: str) -> DotPath | None:
    """The dot-product path of an integer ``nn.dense``, or None (the plain lowering runs).

    ``vpdpbusd`` (VNNI, int8 data; 16 lanes with AVX-512, else 8) accumulates ``int32`` or
    ``int16``; ``vpmaddwd`` (AVX2, 8 lanes) also takes int16 data into ``int32``.
    """
    if (in_dtype, out_dtype) not in (("int8", "int32"), ("int8", "int16"),
                                     ("int16", "int32")):
        return None
    if target.vnni and in_dtype == "int8":
        return DotPath("vpdpbusd", 16 if target.avx512 else 8, 4, True)
    if target.avx2:
        return DotPath("vpmaddwd", 8, 2, False)
    return None


def pack_dense_words(w: np.ndarray, path: DotPath, tile: int) -> np.ndarray:
    """The weight ``(N, K)`` as words ``[ceil(N / tile), ceil(K / G), tile]`` (``uint32``):
    word ``[t, p, l]`` holds ``w[t·tile + l, p·G + g]`` for ``g < G``, lowest first (zero
    past ``N`` and ``K``), as int16 halves (``vpmaddwd``) or bytes (``vpdpbusd``)."""
    n, k = w.shape
    group = path.group
    small = np.dtype("int8" if path.instruction == "vpdpbusd" else "int16")
    tiles, words = -(-n // tile), -(-k // group)
    full = np.zeros((tiles * tile, words * group), small)
    full[:n, :k] = w
    grid = full.reshape(tiles, tile, words, group).transpose(0, 2, 1, 3)
    out = aligned_empty((tiles, words, tile), np.dtype("uint32"))
    out[...] = np.ascontiguousarray(grid).view(np.uint32)[..., 0]
    return out


def dense_dot(call: OpCall, rows: int, gemv_rows: int, gemv_tile: Any, pack: int,
              names: tuple[str, str]) -> Any:
    """``nn.dense`` of ``call`` on the dot-product words (module docstring), or None: no
    :func:`dense_path`, or a weight computed at run time.

    Args:
        call: the ``nn.dense`` call; rows: the data rows (product of its leading dims).
        gemv_rows: the most rows of the GEMV form; gemv_tile: ``(n, rows, lanes) -> T``.
        pack: the GEMM's column block; names: the GEMV's and the GEMM's accumulator blocks.
    """
    from tvm import te, tirx

    w = call.constant(1)
    if w is None or call.hide is None or call.in_dtype(0) != call.in_dtype(1):
        return None
    path = dense_path(call.target or Target.host(), call.in_dtype(0), call.out_dtype)
    if path is None:
        return None
    data = call.inputs[0]
    n, k = (int(d) for d in call.in_shape(1))
    tile = gemv_tile(n, rows, path.lanes) if rows <= gemv_rows else pack
    words = call.add_constant(pack_dense_words(np.asarray(w), path, tile), "dense_words")
    width = int(words.shape[0]) * tile
    rp = te.reduce_axis((0, int(words.shape[1])), name="k")

    def read(lead: Sequence[Any], kk: Any) -> Any:
        if k % path.group == 0:
            return data[(*lead, kk)]
        return data[(*lead, tirx.min(kk, k - 1))]

    def word(lead: Sequence[Any], p: Any) -> Any:
        # with K % G != 0, the values of the last word past K read as the padding
        inside = None if k % path.group == 0 else (lambda g: p * path.group + g < k)
        return pack_data(inside, path, lambda g: read(lead, p * path.group + g))

    acc = te.compute((*call.out_shape[:-1], width), lambda *i: te.sum(
        dot_call(path, word(i[:-1], rp),
                 words[tirx.floordiv(i[-1], tile), rp, tirx.floormod(i[-1], tile)]),
        axis=rp), name=names[0] if rows <= gemv_rows else names[1])
    corr = (call.add_constant(weight_correction(np.asarray(w)), "dense_correction")
            if path.shift else None)
    odt = call.out_dtype

    def out(*i: Any) -> Any:
        v = acc[i]
        if corr is not None:
            v = v - corr[i[-1]]
        return v if odt == "int32" else tirx.Cast(odt, v)

    return te.compute(call.out_shape, out, name="dense")

