"""Tensor creation operators: zeros, ones, full, zeros_like, ones_like, full_like, arange.

Family ``creation`` of the operator registry (paper §3.3.2).  TVM (≥ 0.8) conventions:

* ``zeros(shape=[...], dtype="float32")`` / ``ones(...)`` take no inputs (relation
  ``InitOp``); ``full(%fill_value, shape=[...], dtype=...)`` takes the fill value as a
  rank-0 tensor input (relation ``Full``; without ``dtype`` the fill value's dtype is used);
  all ``ELEMWISE``, as TVM registers them.
* ``zeros_like(%x)`` / ``ones_like(%x)`` (``Identity``) and ``full_like(%x, %fill_value)``
  (``FullLike``) keep ``%x``'s type; ``ELEMWISE``.
* ``arange(%start, %stop, %step, dtype="float32")`` takes three rank-0 inputs of the
  ``dtype`` attribute; its length depends on run-time values, so the relation ``Arange``
  answers ``Tensor[(?), dtype]`` and the reference computes the length; ``OPAQUE`` as in
  TVM.

Semantics (§5): the fill value is converted with the ``cast`` rules
(:func:`semantics.ops.reference.cast_array`: float to integer truncates and wraps, NaN
becomes 0).  ``arange`` has ``max(0, ceil((stop - start) / step))`` elements — computed
exactly for integer dtypes and in float64 for float dtypes — and element ``i`` is
``start + step * i`` evaluated in the dtype (integers wrap, floats round per operation, as
TVM's compute does).  A zero step, a non-finite bound or a length above ``2**31 - 1`` (TVM
types the length as int32) raises ``RelayRuntimeError``; an empty range gives an empty
tensor (TVM's constant-folded relation would reject it).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from semantics.dtypes import is_dtype
from semantics.errors import RelayRuntimeError
from semantics.ops.reference import cast_array, np_dtype, reference
from semantics.ops.registry import AttrSpec, OpPattern, Relation, Traps, register_op
from semantics.ops.relations import ARANGE, FULL, FULL_LIKE, IDENTITY, INIT_OP
from semantics.types import Type

FAMILY = "creation"

MAX_ARANGE_LENGTH = 2 ** 31 - 1


def _register(name: str, num_inputs: int, relation: Relation, pattern: OpPattern,
              fn: Callable[..., np.ndarray], doc: str, attrs: tuple[AttrSpec, ...] = (),
              traps: Traps = Traps.NEVER) -> None:
    register_op(name, num_inputs=num_inputs, relation=relation, pattern=pattern,
                impl=reference(name, relation, fn), attrs=attrs, doc=doc, family=FAMILY,
                traps=traps)


def _nonnegative_dims(shape: tuple[int, ...]) -> str | None:
    bad = [d for d in shape if d < 0]
    return f"must have nonnegative dimensions, got {list(shape)}" if bad else None


def _optional_dtype(v: object) -> str | None:
    if v == "" or (isinstance(v, str) and is_dtype(v)):
        return None
    return f"expects a dtype such as \"float32\" (or None), got {v!r}"


def _shape_attr() -> AttrSpec:
    return AttrSpec("shape", "ints", required=True, check=_nonnegative_dims,
                    doc="the result shape")


# --- references ---------------------------------------------------------------------------

def _zeros(out: Type, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return np.zeros(shape, dtype=np_dtype(dtype))


def _ones(out: Type, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return np.ones(shape, dtype=np_dtype(dtype))


def _full(out: Type, fill_value: np.ndarray, shape: tuple[int, ...],
          dtype: str | None) -> np.ndarray:
    out_dtype = dtype or fill_value.dtype.name
    return np.broadcast_to(cast_array(fill_value, out_dtype), shape).copy()


def _zeros_like(out: Type, x: np.ndarray) -> np.ndarray:
    return np.zeros_like(x)


def _ones_like(out: Type, x: np.ndarray) -> np.ndarray:
    return np.ones_like(x)


def _full_like(out: Type, x: np.ndarray, fill_value: np.ndarray) -> np.ndarray:
    return np.broadcast_to(cast_array(fill_value, x.dtype.name), x.shape).copy()


def arange_length(start: np.ndarray, stop: np.ndarray, step: np.ndarray) -> int:
    """Number of elements of ``arange(start, stop, step)`` (see the module docstring).

    Raises:
        RelayRuntimeError: zero step, non-finite bounds, or a length above int32.
    """
    if start.dtype.kind in "iu":
        a, b, s = int(start), int(stop), int(step)
        if s == 0:
            raise RelayRuntimeError("arange: step must be nonzero")
        n = -((a - b) // s)           # exact ceil((b - a) / s)
    else:
        fa, fb, fs = float(start), float(stop), float(step)
        if fs == 0.0:
            raise RelayRuntimeError("arange: step must be nonzero")
        q = (fb - fa) / fs
        if not math.isfinite(q):
            raise RelayRuntimeError(f"arange: length of [{fa}, {fb}) by {fs} is not finite")
        n = math.ceil(q)
    n = max(0, n)
    if n > MAX_ARANGE_LENGTH:
        raise RelayRuntimeError(f"arange: {n} elements exceed the int32 length limit")
    return n


def _arange(out: Type, start: np.ndarray, stop: np.ndarray, step: np.ndarray,
            dtype: str) -> np.ndarray:
    n = arange_length(start, stop, step)
    index = cast_array(np.arange(n, dtype=np.int64), dtype)
    return np.add(start, np.multiply(step, index)).astype(np_dtype(dtype), copy=False)


# --- registration -------------------------------------------------------------------------

_E = OpPattern.ELEMWISE

_register("zeros", 0, INIT_OP, _E, _zeros, "A tensor of zeros of the given shape and dtype.",
          attrs=(_shape_attr(), AttrSpec("dtype", "dtype", default="float32")))
_register("ones", 0, INIT_OP, _E, _ones, "A tensor of ones of the given shape and dtype.",
          attrs=(_shape_attr(), AttrSpec("dtype", "dtype", default="float32")))
_register("full", 1, FULL, _E, _full,
          "A tensor of the given shape filled with the scalar input (cast to 'dtype').",
          attrs=(_shape_attr(),
                 AttrSpec("dtype", "any", default=None, check=_optional_dtype,
                          doc="result dtype; None or \"\" = the fill value's dtype")))
_register("zeros_like", 1, IDENTITY, _E, _zeros_like, "Zeros with the type of the input.")
_register("ones_like", 1, IDENTITY, _E, _ones_like, "Ones with the type of the input.")
_register("full_like", 2, FULL_LIKE, _E, _full_like,
          "The input's type filled with the scalar second input (cast to its dtype).")
_register("arange", 3, ARANGE, OpPattern.OPAQUE, _arange,
          "Evenly spaced values start, start + step, ... below stop (length known at run time).",
          attrs=(AttrSpec("dtype", "dtype", default="float32"),), traps=Traps.ALWAYS)
