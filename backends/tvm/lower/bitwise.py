"""Lowerings of the ``bitwise`` family (shifts and bitwise logic) for ``llvm``.

The references (:mod:`semantics.ops.bitwise`) define a shift for every amount; LLVM's
``shl``/``ashr``/``lshr`` are poison for an amount outside ``[0, bits)``.  So the amount is
clamped into ``[0, bits - 1]`` before the shift and the limit value is selected where the
amount reaches the width:

* ``right_shift``: signed — ``x >> clamp(s)`` (an arithmetic shift by ``bits - 1`` is
  already the sign fill, the limit); unsigned — ``0`` where ``s >= bits``;
* ``left_shift``: ``0`` where ``s >= bits``, else ``x << clamp(s)`` (two's complement: the
  high bits fall off, as the reference's wrapping);
* ``bitwise_and/or/xor``: TIR's ``&``, ``|``, ``^`` (on bool they are the logical
  operations, as numpy's).
"""

from __future__ import annotations

from typing import Any

from backends.tvm.lower.base import OpCall, bits, broadcast_compute, const, is_signed, lowering


def _tirx() -> Any:
    from tvm import tirx

    return tirx


def _clamped(s: Any, dtype: str) -> Any:
    tirx = _tirx()
    top = tirx.min(s, const(bits(dtype) - 1, dtype))
    return tirx.max(top, const(0, dtype)) if is_signed(dtype) else top


def _wide(s: Any, dtype: str) -> Any:
    return s >= const(bits(dtype), dtype)


@lowering("right_shift")
def _right_shift(call: OpCall) -> Any:
    tirx = _tirx()
    dtype = call.in_dtype(0)
    if is_signed(dtype):
        return broadcast_compute(call, lambda x, s: tirx.shift_right(x, _clamped(s, dtype)))
    return broadcast_compute(call, lambda x, s: tirx.Select(
        _wide(s, dtype), const(0, dtype), tirx.shift_right(x, _clamped(s, dtype))))


@lowering("left_shift")
def _left_shift(call: OpCall) -> Any:
    tirx = _tirx()
    dtype = call.in_dtype(0)
    return broadcast_compute(call, lambda x, s: tirx.Select(
        _wide(s, dtype), const(0, dtype), tirx.shift_left(x, _clamped(s, dtype))))


@lowering("bitwise_and")
def _bitwise_and(call: OpCall) -> Any:
    return broadcast_compute(call, lambda a, b: _tirx().bitwise_and(a, b))


@lowering("bitwise_or")
def _bitwise_or(call: OpCall) -> Any:
    return broadcast_compute(call, lambda a, b: _tirx().bitwise_or(a, b))


@lowering("bitwise_xor")
def _bitwise_xor(call: OpCall) -> Any:
    return broadcast_compute(call, lambda a, b: _tirx().bitwise_xor(a, b))
