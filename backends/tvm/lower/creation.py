"""Lowerings of the ``creation`` family for ``llvm`` (semantics: :mod:`semantics.ops.creation`).

``zeros``/``ones``/``*_like`` are constant fills; ``full``/``full_like`` broadcast their 0-d
fill value converted with the §5 cast (:func:`backends.tvm.lower.tensor.cast_expr`, the
reference's :func:`~semantics.ops.reference.cast_array`).  ``arange`` has no lowering: its
length depends on the *values* of its arguments, while a kernel is specialized to argument
shapes — the executors run it through its reference.
"""

from __future__ import annotations

from typing import Any

from backends.tvm.lower.base import OpCall, const, lowering, no_lowering
from backends.tvm.lower.tensor import cast_expr


def _fill(call: OpCall, value: Any) -> Any:
    from tvm import te

    return te.compute(call.out_shape, lambda *i: value, name=call.op)


@lowering("zeros", "zeros_like")
def _zeros(call: OpCall) -> Any:
    return _fill(call, const(0, call.out_dtype))


@lowering("ones", "ones_like")
def _ones(call: OpCall) -> Any:
    return _fill(call, const(1, call.out_dtype))


@lowering("full")
def _full(call: OpCall) -> Any:
    fill = call.inputs[0]
    return _fill(call, cast_expr(fill[()], call.in_dtype(0), call.out_dtype))


@lowering("full_like")
def _full_like(call: OpCall) -> Any:
    fill = call.inputs[1]
    return _fill(call, cast_expr(fill[()], call.in_dtype(1), call.out_dtype))


no_lowering("arange", "its length depends on the values of its arguments (a kernel is "
            "specialized to argument shapes); executors run its reference")
