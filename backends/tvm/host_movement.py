"""Dynamic-shape data movement on the host (issue 35, item 3: a new sequence length compiles
nothing).

A recurrent loop over a sequence of dynamic length has a few groups whose types have ``Any``
dimensions: ``shape_of`` of the sequence, the reshapes around its input projection, and,
per step, ``take(projection, t, axis=0)`` — the step's row. ``KernelTable.kernel_for``
would give each a ``KernelSlot`` (a kernel compiled per shape, so per sequence length); a
group made only of the operators in :data:`HOST_MOVEMENT` runs on the host instead
(:func:`host_movement`), the row take as a view of the row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from backends.tvm.fallback import FallbackKernel
from semantics.expr import Call, Function, Op
from semantics.types import TensorType
from semantics.visitor import post_order

__all__ = ["HOST_MOVEMENT", "host_movement"]


HOST_MOVEMENT = frozenset({"take", "reshape", "shape_of", "squeeze", "expand_dims"})
"""Operators a group with ``Any``/symbolic dimensions may consist of to run on the host."""


def host_movement(func: Function) -> FallbackKernel | _RowTake | None:
    """The numpy-reference kernel of a dynamic-shape group of pure data movement (every
    operator in :data:`HOST_MOVEMENT`: a recurrent loop's row of the whole sequence's input
    projection, the reshapes and the ``shape_of`` of the sequence), else None.

    Such a group moves at most a row per call, or makes a view: the numpy references serve
    every shape, so a new sequence length compiles nothing (``backends.tvm.kernel_table.KernelSlot``
    would compile a kernel per length). It is not a fallback: nothing failed to lower.
    """
    names = [n.op.name for n in post_order(func.body)
             if isinstance(n, Call) and isinstance(n.op, Op)]
    if not names or not all(name in HOST_MOVEMENT for name in names):
        return None
    general = FallbackKernel(func, name="host_" + "_".join(dict.fromkeys(names)),
                             reason="dynamic-shape data movement runs on the host")
    return _RowTake.of(func, general) or general


class _RowTake:
    """``take(data, i, axis=0)`` with a scalar integer ``i`` (a recurrent step's row of the
    whole sequence's input projection) as a view of the row: about a microsecond, where the
    general reference path took 270 µs a call in an LSTM run under load. Edge cases (an
    empty axis, an index out of range in mode ``fast``, ``out=`` buffers) go to the
    reference, which raises or writes as the oracle does."""

    __slots__ = ("general", "mode", "name")

    def __init__(self, general: FallbackKernel, mode: str) -> None:
        self.general, self.mode, self.name = general, mode, "host_row_take"

    @staticmethod
    def of(func: Function, general: FallbackKernel) -> _RowTake | None:
        body = func.body
        if not (isinstance(body, Call) and isinstance(body.op, Op) and body.op.name == "take"
                and len(func.params) == 2 and body.args == tuple(func.params)):
            return None
        index = func.params[1].type_annotation
        mode = body.attrs.get("mode") or "clip"
        if body.attrs.get("axis") != 0 or (body.attrs.get("batch_dims") or 0) != 0 \
                or mode not in ("clip", "wrap", "fast") or not isinstance(index, TensorType) \
                or index.shape != () or not index.dtype.startswith("int"):
            return None
        return _RowTake(general, mode)

    def __call__(self, data: Any, index: Any, out: Any = None) -> Any:
        n = data.shape[0] if type(data) is np.ndarray and data.ndim else 0
        i = int(index)
        if n == 0 or out is not None or (self.mode == "fast" and not 0 <= i < n):
            return self.general(data, index) if out is None else \
                self.general(data, index, out=out)
        i = min(max(i, 0), n - 1) if self.mode == "clip" else i % n
        return data[i]
