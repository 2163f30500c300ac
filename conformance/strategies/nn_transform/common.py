"""Shared building blocks of the ``nn`` and ``transform`` call strategies.

The dtype groups (aliases of :mod:`conformance.strategies.ops`'s), the operator lists
:data:`NN_OPS` and :data:`TRANSFORM_OPS`, small constructors (:func:`T`, :func:`shapes`,
:func:`dtypes`), the attribute helpers ``_maybe`` (write a default only sometimes) and
``_perm`` (layout strings), :data:`MATMUL_DTYPES` (dense and conv2d), and the generic
invalid-call makers (``_non_tensor_arg``, ``_extra_arg``, ``_with_attrs``, ``_generic_bad``)
that every family's invalid strategy mixes in. Registers nothing; the underscored helpers
are internal to :mod:`conformance.strategies.nn_transform`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from conformance.strategies import ops as O
from semantics.types import TensorType, Type

SearchStrategy = st.SearchStrategy
CallArgs = tuple[tuple[Type, ...], dict[str, Any]]

NUMERIC = O.NUMERIC_DTYPES
FLOATS = O.FLOAT_FIRST
ALL = O.ALL_DTYPES
INTEGER = O.INTEGER_DTYPES
NOT_A_TENSOR = O.NOT_A_TENSOR

NN_OPS = ("nn.relu", "nn.leaky_relu", "nn.softmax", "nn.log_softmax", "nn.dense", "nn.bias_add",
          "nn.batch_norm", "nn.dropout", "nn.batch_flatten", "nn.conv2d", "nn.max_pool2d",
          "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d", "nn.pad")
TRANSFORM_OPS = ("reshape", "reshape_like", "transpose", "expand_dims", "squeeze",
                 "concatenate", "stack", "split", "take", "strided_slice", "tile", "repeat",
                 "reverse", "broadcast_to", "broadcast_to_like", "collapse_sum_like", "shape_of",
                 "layout_transform")


def T(shape: Sequence[int], dtype: str) -> TensorType:
    return TensorType(tuple(shape), dtype)


def shapes(min_rank: int = 0, max_rank: int = 4, min_dim: int = 0, max_dim: int = 5
           ) -> SearchStrategy:
    return O.small_shapes(min_rank=min_rank, max_rank=max_rank, min_dim=min_dim,
                          max_dim=max_dim)


def dtypes(group: Sequence[str]) -> SearchStrategy:
    return st.sampled_from(tuple(group))


def _maybe(draw: st.DrawFn, attrs: dict[str, Any], key: str, value: Any, default: Any) -> None:
    """Write ``key=value`` unless it is the default (then write it half of the time)."""
    if value != default or draw(st.booleans()):
        attrs[key] = value


def _perm(letters: str, common: Sequence[str]) -> SearchStrategy:
    return st.one_of(st.sampled_from(tuple(common)),
                     st.permutations(list(letters)).map("".join))


# (data dtype, weight dtype, out_dtype attribute)
MATMUL_DTYPES = (("float32", "float32", ""), ("float64", "float64", ""),
                 ("float16", "float16", ""), ("int8", "int8", "int32"), ("int32", "int32", ""),
                 ("uint8", "int8", "int32"), ("int8", "int8", "float32"),
                 ("int16", "int16", "int8"), ("float16", "float16", "float32"),
                 ("uint64", "uint64", ""), ("int8", "int8", "int16"),
                 ("int16", "int16", "int32"))


# --- helpers for invalid calls ------------------------------------------------------------------

@st.composite
def _non_tensor_arg(draw: st.DrawFn, call: SearchStrategy) -> CallArgs:
    arg_types, attrs = draw(call)
    i = draw(st.integers(0, len(arg_types) - 1))
    return arg_types[:i] + (NOT_A_TENSOR,) + arg_types[i + 1:], attrs


@st.composite
def _extra_arg(draw: st.DrawFn, call: SearchStrategy) -> CallArgs:
    arg_types, attrs = draw(call)
    return arg_types + (T((), "float32"),), attrs


@st.composite
def _with_attrs(draw: st.DrawFn, call: SearchStrategy, bad: SearchStrategy) -> CallArgs:
    arg_types, attrs = draw(call)
    return arg_types, {**attrs, **draw(bad)}


def _generic_bad(call: SearchStrategy, bad_attrs: SearchStrategy | None = None
                 ) -> list[SearchStrategy]:
    out = [_non_tensor_arg(call), _extra_arg(call),
           _with_attrs(call, st.just({"no_such_attribute": 1}))]
    if bad_attrs is not None:
        out.append(_with_attrs(call, bad_attrs))
    return out
