"""Schedules of ``nn.softmax`` and ``nn.log_softmax`` over the contiguous (last) axis.

The lowering (:mod:`backends.tvm.lower.nn`) computes a row's maximum (``softmax_max``), the
exponentials of the shifted row (``softmax_exp``), their sum (``softmax_sum``) and the result
(``softmax``: the exponentials divided by the sum; ``log_softmax``: the shifted row minus the
sum's logarithm).  The default recipe runs each stage over the whole tensor and splits the
reductions into vector partial sums with ``rfactor``; here a row is the unit of work:

* the rows are fused into one loop — ``parallel`` when the tensor has at least
  :data:`backends.tvm.sched.default.PARALLEL_MIN` elements and more than one row — and every stage
  is computed under it (``compute_at``), so the row stays in L1 between the stages and the
  intermediate buffers shrink to one row;
* ``softmax_exp`` is materialized for ``softmax`` (the result and the sum both read it: inlining
  it would compute every exponential twice) and inlined into the sum for ``log_softmax``;
* the elementwise stages (the exponentials and the result) are vectorized over the row (16,
  8 or 4 lanes, whichever divides the row length, else the whole row if short);
* the maximum and the sum reduce a row in 16 or 8 vector lanes (``rfactor``) when that
  divides the row length, else sequentially (a partial vector would need a predicated tail);
* the exponentials of float32 rows are computed in vector arithmetic
  (:func:`backends.tvm.lower.vecmath.exp_nonpositive_f32`, chosen by the lowering).

A softmax over another axis (a strided row) is left to the default recipe (the rule returns
None).
"""

from __future__ import annotations

from typing import Any

from backends.tvm.sched import KernelInfo, register_schedule
from backends.tvm.sched.default import PARALLEL_MIN, refused, schedule_error, schedule_spatial
from backends.tvm.sched.dense import attach_epilogue, inline_into_consumers

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


def _names(sch: Any) -> list[str]:
    return [sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_sblock("root"))]


def _vector_partials(sch: Any, stage: str) -> list[str]:
    """Split the row sum ``stage`` into vector partial sums: its reduction loop split by 16 or
    8 (only when that divides the row: a partial vector would need a predicate) and the lanes
    ``rfactor``-ed (the NaN-propagating maximum has no reducer ``rfactor`` knows: it stays
    sequential).  Returns the new block's name (none when the split does not apply)."""
    block = sch.get_sblock(stage)
    loop = sch.get_loops(block)[-1]
    ext = int(sch.get(loop).extent)
    v = next((w for w in (16, 8) if ext % w == 0 and ext > w), 0)
    if not v:
        return []
    snapshot = sch.copy()
    try:
        _, lanes = sch.split(loop, [None, v])
        rf = sch.rfactor(lanes, 0)
        return [sch.get(rf).name_hint]
    except schedule_error() as err:   # the sum stays sequential
        refused("softmax: rfactor the sum", err)
        sch.state = snapshot.state
        return []


def _vectorize_lanes(sch: Any, stage: str) -> None:
    """Under the row loop: the partial sums' lane loop moved innermost (below the reduction
    loop) and vectorized."""
    rf = sch.get_sblock(stage)
    lane, *_, ko = sch.get_loops(rf)[1:]
    sch.reorder(ko, lane)
    sch.vectorize(lane)
    init = sch.decompose_reduction(rf, ko)
    sch.vectorize(sch.get_loops(init)[-1])


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
    partials = _vector_partials(sch, "softmax_sum")
    # ``out`` is the only consumer: pull the stages under the row loop, last producer first
    for stage in ("softmax_sum", *partials, "softmax_exp", "softmax_max"):
        if stage in keep | set(partials) and stage in _names(sch):
            sch.compute_at(sch.get_sblock(stage), row, preserve_unit_loops=True)
    vectorize_row(sch, sch.get_loops(out)[-1])
    if "softmax_exp" in keep and "softmax_exp" in names:
        vectorize_row(sch, sch.get_loops(sch.get_sblock("softmax_exp"))[-1])
    moved = attach_epilogue(sch, out_name, row)
    for name in moved:
        vectorize_row(sch, sch.get_loops(sch.get_sblock(name))[-1])
    if n_rows * extents[-1] >= PARALLEL_MIN and n_rows >= 2:
        sch.parallel(row)
    for stage in partials:      # last: decompose_reduction ends the other steps' checks
        _vectorize_lanes(sch, stage)
    done = {*keep, *moved, *(f"{p}{suffix}" for p in partials for suffix in ("", "_init",
                                                                            "_update"))}
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
