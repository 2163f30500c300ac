"""Kernels for groups whose dynamic dimension is a row axis: compiled once, run in row blocks
(issue 35, item 3: a new sequence length compiles nothing).

A recurrent model projects its whole input sequence at once: ``nn.dense(xs, w) + b`` over
``Tensor[(?, 650), float32]``. :class:`~backends.tvm.kernel_table.KernelSlot` would compile
that group again for every sequence length (and a dynamic-batch MLP for every batch size).
When every row of the result depends only on the same row of the inputs, the group is
*row-separable*, and one kernel compiled for a block of ``R`` rows serves every length: the
rows run block by block, each block a view of the arguments and of the result.

A group is row-separable (:func:`row_plan`) when

* each parameter is a static tensor, or a tensor whose only unknown dimension is axis 0
  (a *row tensor*); the result is a row tensor;
* each call with a row-tensor argument has a row-tensor result and is one of
  - an elementwise or broadcasting operator whose row-tensor operands have the result's rank
    and whose static operands cannot span rows (a lower rank, or a first dimension of 1):
    numpy broadcasting aligns from the right, so such an operand repeats for every row;
  - ``nn.dense`` of a row tensor by a static weight;
  - ``nn.bias_add`` on an axis other than 0;
  - ``reshape`` that keeps axis 0 and the size of a row;
* no operator in the group depends on an element's position (``tile``, ``repeat``,
  ``broadcast_to``, creation operators, stochastic ``annotation.simulated_quantize``) —
  :data:`POSITIONAL` lists them.

Blocks are :func:`block_rows` rows, read from the build's Target: the small block is the
row count of the GEMM's register tile on 16 packed columns
(:func:`backends.tvm.sched.dense.gemm_tile`: 6 on AVX2, 8 with AVX-512's 32 registers), the
large one six of them. A block streams the whole weight once, and a block that is not a
multiple of the tile's rows runs a narrower tile (measured on AVX2, two threads, a 2600×650
weight: 8 rows in 445 µs, 6 in 218 µs, 36 in 1.15 ms). As many full large blocks as fit
run first; the remainder runs in small blocks when they hold at most half a large block's
rows, else in one large block, padded. The padding
repeats the last real row, never zeros: every value a padded row computes on is a value a
real row computes on, so an integer division that would trap on 0 cannot be introduced.
A call whose row tensors disagree in length goes to the ordinary per-signature slot, which
reports what the oracle reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from semantics.expr import Call, Function, Op
from semantics.ops.registry import OpPattern, get
from semantics.shapes import is_concrete
from semantics.types import TensorType
from semantics.visitor import post_order

__all__ = ["POSITIONAL", "RowBlocks", "RowPlan", "block_plan", "block_rows", "row_plan"]


def block_rows(target: Any) -> tuple[int, int]:
    """``(large, small)``: the row blocks a row-separable group is compiled for on
    ``target`` (a :class:`~backends.tvm.target.Target`; module docstring)."""
    from backends.tvm.sched.dense import gemm_tile

    small, _ = gemm_tile(840, 16, target.lanes, target.registers)   # 840: every row count
    return 6 * small, small


def block_plan(n: int, large: int, small: int) -> list[int]:
    """The blocks ``n`` rows run in (the last one padded when the rows run out)."""
    plan = [large] * (n // large)
    rest = n - large * len(plan)
    if rest:
        count = -(-rest // small)
        plan += [small] * count if count * small <= large // 2 else [large]
    return plan


POSITIONAL = frozenset({"broadcast_to", "expand_dims", "repeat", "tile", "full", "ones",
                        "zeros", "annotation.simulated_quantize"})
"""Elementwise/broadcast-pattern operators that are not row-separable: they make or place
elements by position (or, for simulated quantization, may round by position)."""


class _Table(Protocol):
    target: Any

    def resolve(self, func: Function, arg_types: Sequence[TensorType]) -> Any: ...


@dataclass(frozen=True)
class RowPlan:
    """What :class:`RowBlocks` needs: which parameters are row tensors, and the result's
    row shape (dimensions after axis 0) and dtype."""

    rows: tuple[bool, ...]
    out_row: tuple[int, ...]
    out_dtype: str


def _row_tensor(t: object) -> bool:
    """A tensor type whose only unknown dimension is axis 0."""
    return (isinstance(t, TensorType) and t.ndim >= 1 and not is_concrete(t.shape[0])
            and all(is_concrete(d) for d in t.shape[1:]))


def _static(t: object) -> bool:
    return isinstance(t, TensorType) and all(is_concrete(d) for d in t.shape)


def _size(shape: Sequence[object]) -> int:
    return int(np.prod([int(d) for d in shape], dtype=np.int64))  # type: ignore[call-overload]


def _separable_call(name: str, call: Call, types: list[TensorType], out: TensorType) -> bool:
    """Whether a call with a row-tensor argument computes each row of ``out`` from the same
    row of its row-tensor arguments (module docstring)."""
    if name == "nn.dense":
        return _row_tensor(types[0]) and types[0].ndim == 2 and _static(types[1])
    if name == "reshape":
        return _row_tensor(types[0]) and _size(types[0].shape[1:]) == _size(out.shape[1:])
    if name == "nn.bias_add":
        axis = int(call.attrs.get("axis", 1)) if call.attrs else 1
        return _row_tensor(types[0]) and _static(types[1]) and axis % types[0].ndim != 0
    if get(name).pattern > OpPattern.BROADCAST or name in POSITIONAL:
        return False
    for t in types:
        if _row_tensor(t):
            if t.ndim != out.ndim:
                return False
        elif not (_static(t) and (t.ndim < out.ndim or t.shape[0] == 1)):
            return False
    return True


def _param_types(func: Function) -> list[Any]:
    return [p.type_annotation if p.type_annotation is not None else p.checked_type
            for p in func.params]


def row_plan(func: Function) -> RowPlan | None:
    """The :class:`RowPlan` of a row-separable primitive function, else None."""
    params = _param_types(func)
    if not all(_row_tensor(t) or _static(t) for t in params) or not any(map(_row_tensor, params)):
        return None
    result = getattr(func.body, "checked_type", None)
    if not isinstance(result, TensorType) or not _row_tensor(result):
        return None
    for node in post_order(func.body):
        if type(node) is not Call:
            continue
        if not isinstance(node.op, Op):
            return None
        out = getattr(node, "checked_type", None)
        types = [t for a in node.args
                 if isinstance(t := getattr(a, "checked_type", None), TensorType)]
        if not isinstance(out, TensorType) or len(types) != len(node.args):
            return None
        if not any(map(_row_tensor, types)):
            if not _static(out):
                return None
            continue
        if not (_row_tensor(out) and _separable_call(node.op.name, node, types, out)):
            return None
    return RowPlan(tuple(map(_row_tensor, params)), tuple(int(d) for d in result.shape[1:]),  # type: ignore[arg-type]
                   result.dtype)


class RowBlocks:
    """A row-separable group's kernel: compiled for the :func:`block_rows` sizes, run block by
    block over any number of rows (module docstring). ``slot`` serves calls that are not
    row-aligned (row tensors of different lengths, wrong dtypes): it compiles for their
    exact signature or reports the error, as for any dynamic group."""

    __slots__ = ("func", "plan", "table", "slot", "kernels", "name", "blocks", "_types")

    def __init__(self, func: Function, plan: RowPlan, table: _Table, slot: Any) -> None:
        self.func, self.plan, self.table, self.slot = func, plan, table, slot
        self._types: list[TensorType] = _param_types(func)
        self.kernels: dict[int, Any] = {}
        self.name = "row_blocks"
        self.blocks = block_rows(table.target)

    def _kernel(self, rows: int) -> Any:
        k = self.kernels.get(rows)
        if k is None:
            types = []
            for t, is_row in zip(_param_types(self.func), self.plan.rows, strict=True):
                types.append(TensorType((rows, *t.shape[1:]), t.dtype) if is_row else t)
            k = self.kernels[rows] = self.table.resolve(self.func, types)
        return k

    def _aligned(self, args: Sequence[Any]) -> int | None:
        """The common row count of the row arguments, if every argument has its parameter's
        dtype and static dimensions; else None."""
        n = None
        for a, t, is_row in zip(args, self._types, self.plan.rows, strict=True):
            if type(a) is not np.ndarray or a.dtype.name != t.dtype or a.ndim != t.ndim:
                return None
            if is_row:
                if a.shape[1:] != tuple(t.shape[1:]) or (n is not None and a.shape[0] != n):
                    return None
                n = a.shape[0]
            elif a.shape != tuple(t.shape):
                return None
        return n

    def __call__(self, *args: Any, out: list[np.ndarray] | None = None) -> Any:
        n = self._aligned(args) if len(args) == len(self.plan.rows) else None
        if n is None:
            return self.slot(*args, out=out) if out is not None else self.slot(*args)
        result = out[0] if out is not None else np.empty((n, *self.plan.out_row),
                                                         self.plan.out_dtype)
        if len(self.kernels) < len(set(self.blocks)):
            for block in self.blocks:     # both now: a later length compiles nothing
                self._kernel(block)
        start = 0
        for block in block_plan(n, *self.blocks):
            self._run(block, args, start, min(block, n - start), result)
            start += block
        return result

    def _run(self, block: int, args: Sequence[np.ndarray], start: int, count: int,
             result: np.ndarray) -> None:
        """Rows ``start .. start + count`` through the ``block``-row kernel (padded by
        repeating the last row when ``count < block``)."""
        k = self._kernel(block)
        stop = start + count
        if count == block:
            block_args = [np.ascontiguousarray(a[start:stop]) if r else a
                          for a, r in zip(args, self.plan.rows, strict=True)]
            k(*block_args, out=[result[start:stop]])
            return
        padded = []
        for a, r in zip(args, self.plan.rows, strict=True):
            if r:
                rows = np.empty((block, *a.shape[1:]), a.dtype)
                rows[:count] = a[start:stop]
                rows[count:] = a[stop - 1]
                padded.append(rows)
            else:
                padded.append(a)
        tail = k(*padded)
        result[start:stop] = tail[:count]
