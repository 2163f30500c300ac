"""Reductions: sum, mean, prod, max, min, all, any, argmax, argmin, variance.

Family ``reduce`` of the operator registry (paper §3.3.2).  TVM (≥ 0.8) conventions, all
``COMM_REDUCE``:

* attributes ``axis`` (None, an int or a list of ints; None or ``[]`` = every axis),
  ``keepdims`` (reduced axes stay as 1s), ``exclude`` (reduce every axis *not* listed;
  needs an explicit ``axis``); ``argmax``/``argmin`` add ``select_last_index``,
  ``variance`` adds ``unbiased``;
* relations ``Reduce`` (result in the input dtype), ``ArgReduce`` (``int32`` indices, input
  of rank ≥ 1) and ``Variance``.  Negative axes count from the end; an axis out of range or
  given twice is a type error.
* ``variance(%data, %mean, ...)`` takes the mean as its second input, as TVM's operator does
  (``relay.variance(x)`` in TVM's Python API builds ``variance(x, mean(x, keepdims=True))``);
  the mean must have the data's rank and broadcast to it; float dtypes only.

Dtype classes: ``sum mean prod max min argmax argmin`` take integers and floats,
``all``/``any`` take bool, ``variance`` floats.

Semantics (§5):

* integer ``sum``/``prod`` wrap in the dtype; float sums and products are numpy's (pairwise
  summation; float16 accumulates in float32 and rounds once at the end).  The order of a
  floating-point reduction is unspecified, so a backend may differ in the last bits (TVM
  accumulates float16 sums in float16);
* ``mean`` is ``sum / count`` with TVM's arithmetic: for integers the count is converted to
  the dtype (wrapping) and the division truncates (a count that wraps to 0 traps with
  ``RelayRuntimeError``); float16 ``mean`` and ``variance`` accumulate in float32 and round
  back, as TVM does; an empty float mean is NaN;
* ``variance`` is ``sum((data - mean)**2) / (count - unbiased)``;
* ``max``/``min`` of an empty reduction give the identity (the dtype's lowest / highest
  value, ∓inf for floats) and propagate NaN; ``all``/``any`` of nothing are True / False;
* ``argmax``/``argmin`` over several axes return the flattened (row-major) index over the
  reduced axes, as TVM's ``topi.argmax`` does; ties pick the first index (the last with
  ``select_last_index``); an empty reduction gives -1 (TVM's reducer identity); a reduction
  over no axis (``exclude`` with every axis listed) gives 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from semantics.dtypes import scalar
from semantics.ops.reference import reference
from semantics.ops.registry import AttrSpec, OpPattern, Relation, register_op
from semantics.ops.relations import (
    ARG_REDUCE,
    BOOL,
    REDUCE,
    VARIANCE,
    reduce_axes,
    reduce_relation,
    reduced_shape,
)
from semantics.ops.tensor import trunc_divide_int
from semantics.types import Type

FAMILY = "reduce"

REDUCE_BOOL = reduce_relation(BOOL)

REDUCE_ATTRS = (
    AttrSpec("axis", "optional_ints", default=None,
             doc="axes to reduce (None or [] = all); negative counts from the end"),
    AttrSpec("keepdims", "bool", default=False, doc="keep reduced axes as size 1"),
    AttrSpec("exclude", "bool", default=False, doc="reduce the axes NOT listed in axis"),
)


def _register(name: str, num_inputs: int, relation: Relation, fn: Callable[..., np.ndarray],
              doc: str, extra: tuple[AttrSpec, ...] = ()) -> None:
    register_op(name, num_inputs=num_inputs, relation=relation, pattern=OpPattern.COMM_REDUCE,
                impl=reference(name, relation, fn), attrs=REDUCE_ATTRS + extra, doc=doc,
                family=FAMILY)


def _axes(name: str, x: np.ndarray, axis: tuple[int, ...] | None,
          exclude: bool) -> tuple[int, ...]:
    return reduce_axes(name, (), axis, x.ndim, exclude)


def _count(x: np.ndarray, axes: tuple[int, ...]) -> int:
    n = 1
    for a in axes:
        n *= x.shape[a]
    return n


def _sum(out: Type, x: np.ndarray, axis: tuple[int, ...] | None, keepdims: bool,
         exclude: bool) -> np.ndarray:
    return np.sum(x, axis=_axes("sum", x, axis, exclude), dtype=x.dtype, keepdims=keepdims)


def _prod(out: Type, x: np.ndarray, axis: tuple[int, ...] | None, keepdims: bool,
          exclude: bool) -> np.ndarray:
    return np.prod(x, axis=_axes("prod", x, axis, exclude), dtype=x.dtype, keepdims=keepdims)


def _lowest(dtype: np.dtype) -> Any:
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype: np.dtype) -> Any:
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


def _max(out: Type, x: np.ndarray, axis: tuple[int, ...] | None, keepdims: bool,
         exclude: bool) -> np.ndarray:
    return np.max(x, axis=_axes("max", x, axis, exclude), keepdims=keepdims,
                  initial=_lowest(x.dtype))


def _min(out: Type, x: np.ndarray, axis: tuple[int, ...] | None, keepdims: bool,
         exclude: bool) -> np.ndarray:
    return np.min(x, axis=_axes("min", x, axis, exclude), keepdims=keepdims,
                  initial=_highest(x.dtype))


def _all(out: Type, x: np.ndarray, axis: tuple[int, ...] | None, keepdims: bool,
         exclude: bool) -> np.ndarray:
    return np.asarray(np.all(x, axis=_axes("all", x, axis, exclude), keepdims=keepdims))


def _any(out: Type, x: np.ndarray, axis: tuple[int, ...] | None, keepdims: bool,
         exclude: bool) -> np.ndarray:
    return np.asarray(np.any(x, axis=_axes("any", x, axis, exclude), keepdims=keepdims))


def _mean(out: Type, x: np.ndarray, axis: tuple[int, ...] | None, keepdims: bool,
          exclude: bool) -> np.ndarray:
    axes = _axes("mean", x, axis, exclude)
    count = _count(x, axes)
    if x.dtype.kind in "iu":
        total = np.asarray(np.sum(x, axis=axes, dtype=x.dtype, keepdims=keepdims))
        return trunc_divide_int(total, scalar(count, x.dtype.name), "mean")
    acc = np.float32 if x.dtype == np.float16 else x.dtype
    total = np.asarray(np.sum(x.astype(acc, copy=False), axis=axes, dtype=acc, keepdims=keepdims))
    return np.divide(total, np.asarray(count, dtype=acc)).astype(x.dtype, copy=False)


def _variance(out: Type, x: np.ndarray, mean: np.ndarray, axis: tuple[int, ...] | None,
              keepdims: bool, exclude: bool, unbiased: bool) -> np.ndarray:
    axes = _axes("variance", x, axis, exclude)
    count = _count(x, axes) - (1 if unbiased else 0)
    diff = np.subtract(x, mean)
    square = np.multiply(diff, diff)
    acc = np.float32 if x.dtype == np.float16 else x.dtype
    total = np.asarray(np.sum(square.astype(acc, copy=False), axis=axes, dtype=acc,
                              keepdims=keepdims))
    return np.divide(total, np.asarray(count, dtype=acc)).astype(x.dtype, copy=False)


def _arg_reduce(name: str, pick: Callable[..., np.ndarray], x: np.ndarray,
                axis: tuple[int, ...] | None, keepdims: bool, exclude: bool,
                select_last_index: bool) -> np.ndarray:
    axes = _axes(name, x, axis, exclude)
    kept = [i for i in range(x.ndim) if i not in axes]
    kept_shape = [x.shape[i] for i in kept]
    k = _count(x, axes)
    flat = np.transpose(x, kept + list(axes)).reshape(kept_shape + [k])
    if k == 0:
        idx = np.full(kept_shape, -1, dtype=np.int64)
    elif select_last_index:
        idx = (k - 1) - pick(flat[..., ::-1], axis=-1)
    else:
        idx = pick(flat, axis=-1)
    out = np.asarray(idx).astype(np.int32)
    if keepdims:
        out = out.reshape(cast(tuple[int, ...], reduced_shape(x.shape, axes, True)))
    return out


def _argmax(out: Type, x: np.ndarray, axis: tuple[int, ...] | None, keepdims: bool, exclude: bool,
            select_last_index: bool) -> np.ndarray:
    return _arg_reduce("argmax", np.argmax, x, axis, keepdims, exclude, select_last_index)


def _argmin(out: Type, x: np.ndarray, axis: tuple[int, ...] | None, keepdims: bool, exclude: bool,
            select_last_index: bool) -> np.ndarray:
    return _arg_reduce("argmin", np.argmin, x, axis, keepdims, exclude, select_last_index)


# --- registration -------------------------------------------------------------------------

_LAST = (AttrSpec("select_last_index", "bool", default=False,
                  doc="on ties, return the last index instead of the first"),)

_register("sum", 1, REDUCE, _sum, "Sum over the given axes (integers wrap).")
_register("mean", 1, REDUCE, _mean, "Arithmetic mean over the given axes (integers truncate).")
_register("prod", 1, REDUCE, _prod, "Product over the given axes (integers wrap).")
_register("max", 1, REDUCE, _max, "Maximum over the given axes (NaN propagates).")
_register("min", 1, REDUCE, _min, "Minimum over the given axes (NaN propagates).")
_register("all", 1, REDUCE_BOOL, _all, "Logical AND of a bool tensor over the given axes.")
_register("any", 1, REDUCE_BOOL, _any, "Logical OR of a bool tensor over the given axes.")
_register("argmax", 1, ARG_REDUCE, _argmax,
          "int32 index of the maximum over the given axes (flattened over them).", _LAST)
_register("argmin", 1, ARG_REDUCE, _argmin,
          "int32 index of the minimum over the given axes (flattened over them).", _LAST)
_register("variance", 2, VARIANCE, _variance,
          "variance(data, mean): mean squared deviation from the given mean over the axes.",
          (AttrSpec("unbiased", "bool", default=False, doc="divide by count - 1"),))
