"""Bitwise and shift operators: ``right_shift``, ``left_shift``, ``bitwise_and/or/xor``.

Family ``bitwise`` of the operator registry.  The realized integer programs of quantization
(issue 29, ``passes.quantize.realize``) requantize with them: ``(q + 2**(k-1)) >> k``.
Names and pattern kinds are TVM's (``BROADCAST``, two operands of one dtype, numpy
broadcasting).

Dtypes (relations ``BroadcastShift`` and ``BroadcastBitwise``):

* ``right_shift`` / ``left_shift``: both operands of one integer dtype (signed or unsigned);
* ``bitwise_and`` / ``bitwise_or`` / ``bitwise_xor``: one integer dtype or ``bool`` (on bool
  they are the logical operations).

Semantics of the shifts (§5; defined for every shift amount, so that the oracle and a
compiled kernel agree where C and LLVM leave a shift undefined).  With ``s' = max(s, 0)``
(a negative amount shifts by zero):

* ``right_shift(x, s) = floor(x / 2**s')`` — an *arithmetic* shift on signed integers
  (the sign fills in), a logical one on unsigned integers.  An amount of at least the bit
  width gives ``-1`` for negative ``x`` and ``0`` otherwise (the limit of the formula);
* ``left_shift(x, s) = x * 2**s'`` wrapped to the dtype (two's complement), so an amount of
  at least the bit width gives ``0``.

The TVM lowering (``backends.tvm.lower.bitwise``) clamps the amount into ``[0, bits - 1]``
and selects the limit value for larger amounts, which computes exactly these values.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from semantics.dtypes import split_lanes
from semantics.expr import Attrs
from semantics.ops.reference import reference
from semantics.ops.registry import OpPattern, Relation, register_op, relation_error, tensor_args
from semantics.ops.relations import broadcast_shapes, require_arity, require_dtype_match
from semantics.shapes import DimSolver
from semantics.types import TensorType, Type

FAMILY = "bitwise"


def _is_integer(dtype: str) -> bool:
    base, _ = split_lanes(dtype)
    return base.startswith(("int", "uint"))


def _broadcast_of(name: str, allow_bool: bool) -> Relation:
    what = "an integer dtype or bool" if allow_bool else "an integer dtype"

    def rel(arg_types: tuple[Type, ...], attrs: Attrs, solver: DimSolver) -> Type | None:
        require_arity(name, arg_types, 2)
        ts = tensor_args(name, arg_types)
        if ts is None:
            return None
        dtype = require_dtype_match(name, arg_types, ts)
        base, _ = split_lanes(dtype)
        if not (_is_integer(dtype) or (allow_bool and base == "bool")):
            raise relation_error(name, arg_types, f"operands must have {what}, found {dtype}")
        shape = broadcast_shapes(name, arg_types, ts[0].shape, ts[1].shape, solver)
        return TensorType(shape, dtype)

    return Relation(name, rel, f"equal dtypes ({what}), broadcast shape, operand dtype")


BROADCAST_SHIFT = _broadcast_of("BroadcastShift", allow_bool=False)
BROADCAST_BITWISE = _broadcast_of("BroadcastBitwise", allow_bool=True)


# --- references ---------------------------------------------------------------------------

def _amounts(x: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The amounts clamped into ``[0, bits - 1]``, where the amount reaches the width, and
    the width."""
    width = x.dtype.itemsize * 8
    if s.dtype.kind == "u":
        clamped = np.minimum(s, np.asarray(width - 1, s.dtype))
        return clamped, s >= width, width
    clamped = np.clip(s, 0, width - 1).astype(s.dtype, copy=False)
    return clamped, s >= width, width


def right_shift_array(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``floor(x / 2**max(s, 0))`` in ``x``'s dtype (see the module docstring)."""
    clamped, wide, _ = _amounts(x, s)
    shifted = np.right_shift(x, clamped)
    if x.dtype.kind == "u":
        shifted = np.where(wide, np.zeros_like(shifted), shifted)
    # signed: a shift by bits - 1 already fills with the sign, which is the limit
    return np.asarray(shifted).astype(x.dtype, copy=False)


def left_shift_array(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``x * 2**max(s, 0)`` wrapped to ``x``'s dtype (see the module docstring)."""
    clamped, wide, _ = _amounts(x, s)
    shifted = np.left_shift(x, clamped)
    return np.where(wide, np.zeros_like(shifted), shifted).astype(x.dtype, copy=False)


def _right_shift(out: Type, x: np.ndarray, s: np.ndarray) -> np.ndarray:
    return right_shift_array(x, s)


def _left_shift(out: Type, x: np.ndarray, s: np.ndarray) -> np.ndarray:
    return left_shift_array(x, s)


def _bitwise(f: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    def compute(out: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(f(a, b)).astype(a.dtype, copy=False)
    compute.__name__ = f.__name__
    return compute


def _register(name: str, relation: Relation, compute: Callable[..., np.ndarray],
              doc: str) -> None:
    register_op(name, num_inputs=2, relation=relation, pattern=OpPattern.BROADCAST,
                impl=reference(name, relation, compute), doc=doc, family=FAMILY)


_register("right_shift", BROADCAST_SHIFT, _right_shift,
          "Arithmetic shift right of integers: floor(x / 2**max(s, 0)), with broadcasting.")
_register("left_shift", BROADCAST_SHIFT, _left_shift,
          "Shift left of integers: x * 2**max(s, 0) wrapped to the dtype, with broadcasting.")
_register("bitwise_and", BROADCAST_BITWISE, _bitwise(np.bitwise_and),
          "Elementwise bitwise AND of integer or bool tensors, with broadcasting.")
_register("bitwise_or", BROADCAST_BITWISE, _bitwise(np.bitwise_or),
          "Elementwise bitwise OR of integer or bool tensors, with broadcasting.")
_register("bitwise_xor", BROADCAST_BITWISE, _bitwise(np.bitwise_xor),
          "Elementwise bitwise XOR of integer or bool tensors, with broadcasting.")
