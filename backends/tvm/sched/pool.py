"""Schedules of the pooling kernels: ``nn.max_pool2d``, ``nn.avg_pool2d`` and the global pools.

The lowerings (:mod:`backends.tvm.lower.nn`) write a pool as one reduction block over the
window (``max_pool2d``; ``avg_pool_sum`` then the division ``avg_pool2d``; ``global_*``), a
tap in the padding as a load of the clamped border element whose value a ``Select``
discards.  The default recipe fuses every output loop into one parallel loop of a few
elements each and accumulates in the output buffer; here:

* **windowed pools**: the output loops but the innermost are fused into the row loop
  (``parallel`` above :data:`backends.tvm.sched.default.PARALLEL_MIN` window taps); the innermost
  output axis (``W`` in ``NCHW``) is split by the vector width, its lanes below the (unrolled)
  window loops, and the accumulators of a vector of outputs live in a local buffer
  (``cache_write``), written back once; the average's division runs in the same tile;
* **blocked windowed pools** (``NCHW{c}c``, the innermost axis one vector): the loops above
  ``W`` are the parallel row loop, ``W`` runs in tiles of up to 8 columns
  (:func:`column_tile`), each column a vector of the block's channels — contiguous loads, 8
  vector accumulators.  On 64 channels of 112×112, 3×3/2 (ResNet-18's pool, one run): 0.15
  ms against 1.55 ms for the ``NCHW`` kernel, whose vectors along ``W`` gather strided taps;
  VGG-16's 2×2/2 on 224×224: 1.5 against 4.0 ms;
* **global pools**: the reduction over ``H × W`` per channel stays a sequential loop, the
  channels are the parallel loop (above the threshold), and the average's division is
  computed right after each channel's sum; a blocked global pool is a blocked windowed one
  whose window is the whole plane (vectors of channels: 128 blocks of 8 over 7×7, 9 µs
  against 25 µs per channel).

A kernel in another form (two pools, an unusual loop nest) makes the rule return None: the
default recipe schedules it.
"""

from __future__ import annotations

from typing import Any

from backends.tvm.sched import KernelInfo, register_schedule
from backends.tvm.sched.default import PARALLEL_MIN, refused, schedule_error, schedule_spatial
from backends.tvm.sched.dense import attach_epilogue, inline_into_consumers

__all__ = ["column_tile", "schedule_pool"]

_WINDOWED = {"nn.max_pool2d": "max_pool2d", "nn.avg_pool2d": "avg_pool_sum"}
_GLOBAL = {"nn.global_max_pool2d": "global_max_pool2d", "nn.global_avg_pool2d": "global_avg_sum"}


def _lanes(extent: int, bits: int) -> int:
    limit = max(1, min(16, 512 // bits))
    for v in (16, 8, 4, 2):
        if v <= limit and extent % v == 0:
            return v
    return 1


def _one_vector(extent: int, bits: int) -> bool:
    """An innermost axis of ``extent`` elements is exactly one vector (``NCHW{c}c``'s block)."""
    return extent > 1 and _lanes(extent, bits) == extent


def column_tile(width: int) -> int:
    """Output columns pooled together in a blocked layout: the largest divisor of the width
    up to 8 (8 vector accumulators, well within 16 registers)."""
    return next(t for t in range(min(8, width), 0, -1) if width % t == 0)


def _names(sch: Any) -> list[str]:
    return [sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_sblock("root"))]


def _windowed(sch: Any, name: str) -> Any:
    block = sch.get_sblock(name)
    loops = sch.get_loops(block)
    kinds = [int(iv.iter_type) for iv in sch.get(block).iter_vars]
    n_sp = kinds.count(0)
    if kinds != [0] * n_sp + [2] * (len(kinds) - n_sp) or n_sp < 2 or len(loops) != len(kinds):
        return None
    ext = [int(sch.get(lp).extent) for lp in loops]
    spatial, reduce = loops[:n_sp], loops[n_sp:]
    work = 1
    for e in ext:
        work *= e
    bits = int(sch.get(block).writes[0].source.dtype.bits)
    v = _lanes(ext[n_sp - 1], bits)
    if n_sp > 2 and _one_vector(ext[n_sp - 1], bits):
        # the innermost axis is one vector (NCHW{c}c's channel block): a row of outputs
        # per parallel iteration, a tile of columns (each a vector of channels) at a time
        row = sch.fuse(*spatial[:-2]) if n_sp > 3 else spatial[0]
        outer_w, cols = sch.split(spatial[-2], [None, column_tile(ext[n_sp - 2])])
        lanes = spatial[-1]
        sch.reorder(outer_w, *reduce, cols, lanes)
        sch.unroll(cols)
    elif v > 1:
        row = sch.fuse(*spatial[:-1]) if n_sp > 2 else spatial[0]
        outer_w, lanes = sch.split(spatial[-1], [None, v])
        sch.reorder(outer_w, *reduce, lanes)
    else:
        row = sch.fuse(*spatial[:-1]) if n_sp > 2 else spatial[0]
        outer_w, lanes = spatial[-1], None
        sch.reorder(outer_w, *reduce)
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, outer_w, preserve_unit_loops=True)
    moved = attach_epilogue(sch, sch.get(local).name_hint, outer_w)
    for moved_name in [sch.get(local).name_hint, *moved]:
        mloops = sch.get_loops(sch.get_sblock(moved_name))
        if len(mloops) > 2 and v > 1:
            try:
                sch.vectorize(mloops[-1])
            except schedule_error() as err:   # the loop stays serial
                refused(f"pool: vectorize {moved_name}", err)
    taps = 1
    for e in ext[n_sp:]:
        taps *= e
    if taps <= 16:
        for lp in reduce:
            sch.unroll(lp)
    if lanes is not None:
        sch.vectorize(lanes)
    if work >= PARALLEL_MIN and int(sch.get(row).extent) >= 2:
        sch.parallel(row)
    init = sch.decompose_reduction(block, reduce[0])
    if lanes is not None:
        iloops = sch.get_loops(init)
        sch.vectorize(iloops[-1])
    return {name, f"{name}_init", f"{name}_update", sch.get(local).name_hint, *moved}


def _blocked(sch: Any, name: str) -> bool:
    """The pool's output is blocked (``NCHW{c}c``): its innermost axis is one vector."""
    block = sch.get_sblock(name)
    shape = [int(e) for e in sch.get(block).writes[0].source.shape]
    bits = int(sch.get(block).writes[0].source.dtype.bits)
    return len(shape) == 5 and _one_vector(shape[-1], bits)


def _global(sch: Any, name: str) -> Any:
    block = sch.get_sblock(name)
    loops = sch.get_loops(block)
    kinds = [int(iv.iter_type) for iv in sch.get(block).iter_vars]
    n_sp = kinds.count(0)
    if kinds != [0] * n_sp + [2] * (len(kinds) - n_sp) or n_sp < 1 or len(loops) != len(kinds):
        return None
    ext = [int(sch.get(lp).extent) for lp in loops]
    work = 1
    for e in ext:
        work *= e
    channels = sch.fuse(*loops[:n_sp]) if n_sp > 1 else loops[0]
    moved = attach_epilogue(sch, name, channels)
    if work >= PARALLEL_MIN and int(sch.get(channels).extent) >= 2:
        sch.parallel(channels)
    return {name, *moved}


def _schedule(prim: Any, info: KernelInfo, op: str) -> Any:
    import tvm
    from tvm import s_tir

    if sum(info.ops.count(o) for o in (*_WINDOWED, *_GLOBAL)) != 1:
        return None
    sch = s_tir.Schedule(tvm.IRModule({"main": prim}))
    name = _WINDOWED.get(op) or _GLOBAL[op]
    if _names(sch).count(name) != 1:
        return None
    inline_into_consumers(sch, {name})
    done = _windowed(sch, name) if op in _WINDOWED or _blocked(sch, name) else \
        _global(sch, name)
    if done is None:
        return None
    for other in _names(sch):
        if other not in done:
            schedule_spatial(sch, sch.get_sblock(other))
    return sch.mod


def schedule_pool(prim: Any, info: KernelInfo, op: str) -> Any:
    """The scheduled ``IRModule`` of a kernel whose anchor is the pooling operator ``op``
    (see the module docstring), or None when the kernel is not in the expected form.

    Args:
        prim: the kernel's TensorIR ``PrimFunc``.
        info: the kernel's operators.
        op: ``nn.max_pool2d``, ``nn.avg_pool2d``, ``nn.global_max_pool2d`` or
            ``nn.global_avg_pool2d``.
    Returns:
        The scheduled module, or None.
    """
    return _schedule(prim, info, op)


def _register(op: str) -> None:
    def rule(prim: Any, info: KernelInfo) -> Any:
        return _schedule(prim, info, op)

    rule.__qualname__ = rule.__name__ = f"schedule_{op.replace('nn.', '')}"
    register_schedule(op, priority=20)(rule)


for _op in (*_WINDOWED, *_GLOBAL):
    _register(_op)
