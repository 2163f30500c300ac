"""Schedules of ``nn.softmax`` and ``nn.log_softmax`` over the contiguous (last) axis.

The lowering (:mod:`backends.tvm.lower.nn`) computes a row's maximum (``softmax_max``), the
exponentials of the shifted row (``softmax_exp``), their sum (``softmax_sum``) and the result
(``softmax``: the exponentials divided by the sum; ``log_softmax``: the shifted row minus the
sum's logarithm).  The default recipe runs each stage over the whole tensor and splits the
reductions into vector partial sums with ``rfactor``; here a row is the unit of work:

* the rows are fused into one loop — ``parallel`` when the tensor has at least
  :data:`backends.tvm.schedules.PARALLEL_MIN` elements and more than one row — and every stage
  is computed under it (``compute_at``), so the row stays in L1 between the stages and the
  intermediate buffers shrink to one row;
* ``softmax_exp`` is materialized for ``softmax`` (the result and the sum both read it: inlining
  it would compute every exponential twice) and inlined into the sum for ``log_softmax``;
* the elementwise stages (the exponentials and the result) are vectorized over the row (16,
  8 or 4 lanes, whichever divides the row length, else the whole row if short);
* the maximum and the sum stay sequential reductions (the exact order of the reference's
  row sums is not required, but a vector split of a row of odd length would need a
  predicated tail).

A softmax over another axis (a strided row) is left to the default recipe (the rule returns
None).
"""

from __future__ import annotations

from typing import Any

from backends.tvm.sched import KernelInfo, register_schedule
from backends.tvm.sched.dense import attach_epilogue, inline_into_consumers
from backends.tvm.schedules import PARALLEL_MIN, schedule_spatial

__all__ = ["schedule_softmax"]

_STAGES = ("softmax_max", "softmax_exp", "softmax_sum")


def vectorize_row(sch: Any, loop: Any, lanes: int = 16) -> None:
    """Vectorize ``loop``: split by the largest of ``lanes``, 8, 4 that divides its extent
    (a row of at most 64 elements is vectorized whole; otherwise the loop stays serial)."""
    ext = int(sch.get(loop).extent)
    if ext <= 64 and ext not in (lanes, 8, 4) and ext % lanes:
        sch.vectorize(loop)
        return
    for v in (lanes, 8, 4):
        if ext % v == 0 and ext >= v:
            if ext > v:
                _, loop = sch.split(loop, [None, v])
            sch.vectorize(loop)
            return


def _reduces_last_axis(sch: Any, block: Any) -> bool:
    """Whether every read of the reduction ``block`` indexes its last dim by the reduction
    variable (a row along the contiguous axis)."""
    from tvm.tirx.analysis import undefined_vars

    stmt = sch.get(block)
    red = [iv.var for iv in stmt.iter_vars if int(iv.iter_type) == 2]
    if len(red) != 1:
        return False
    for region in stmt.reads:
        if not region.region:
            return False
        used = undefined_vars(region.region[-1].min)
        if not any(u.same_as(red[0]) for u in used):
            return False
    return True


def _schedule(prim: Any, info: KernelInfo, out_name: str) -> Any:
    import tvm
    from tvm import s_tir

    sch = s_tir.Schedule(tvm.IRModule({"main": prim}))
    root = sch.get_sblock("root")
    names = [sch.get(b).name_hint for b in sch.get_child_blocks(root)]
    if names.count(out_name) != 1 or any(names.count(s) != 1 for s in _STAGES[::2]):
        return None
    if not _reduces_last_axis(sch, sch.get_sblock("softmax_max")):
        return None
    keep = {out_name, "softmax_max", "softmax_sum"}
    if out_name == "softmax":
        keep.add("softmax_exp")
    inline_into_consumers(sch, keep)
    out = sch.get_sblock(out_name)
    loops = sch.get_loops(out)
    if len(loops) < 2:
        return None
    rows = loops[:-1]
    extents = [int(sch.get(lp).extent) for lp in loops]
    n_rows = 1
    for e in extents[:-1]:
        n_rows *= e
    row = sch.fuse(*rows) if len(rows) > 1 else rows[0]
    # ``out`` is the only consumer: pull the stages under the row loop, last producer first
    for stage in ("softmax_sum", "softmax_exp", "softmax_max"):
        if stage in keep and stage in names:
            sch.compute_at(sch.get_sblock(stage), row, preserve_unit_loops=True)
    vectorize_row(sch, sch.get_loops(out)[-1])
    if "softmax_exp" in keep and "softmax_exp" in names:
        vectorize_row(sch, sch.get_loops(sch.get_sblock("softmax_exp"))[-1])
    moved = attach_epilogue(sch, out_name, row)
    for name in moved:
        vectorize_row(sch, sch.get_loops(sch.get_sblock(name))[-1])
    if n_rows * extents[-1] >= PARALLEL_MIN and n_rows >= 2:
        sch.parallel(row)
    done = {*keep, *moved}
    for name in [sch.get(b).name_hint for b in sch.get_child_blocks(root)]:
        if name not in done:
            schedule_spatial(sch, sch.get_sblock(name))
    return sch.mod


@register_schedule("nn.softmax", priority=20)
def schedule_softmax(prim: Any, info: KernelInfo) -> Any:
    """The scheduled ``IRModule`` of a kernel whose anchor is ``nn.softmax`` (see the module
    docstring), or None for a softmax over a non-contiguous axis.

    Args:
        prim: the kernel's TensorIR ``PrimFunc``.
        info: the kernel's operators and primitive function.
    Returns:
        The scheduled module, or None.
    """
    if info.ops.count("nn.softmax") != 1:
        return None
    return _schedule(prim, info, "softmax")


@register_schedule("nn.log_softmax", priority=20)
def schedule_log_softmax(prim: Any, info: KernelInfo) -> Any:
    """As :func:`schedule_softmax`, for ``nn.log_softmax``."""
    if info.ops.count("nn.log_softmax") != 1:
        return None
    return _schedule(prim, info, "log_softmax")
