"""The schedule of a Winograd convolution kernel (``backends/tvm/lower/winograd.py``).

The kernel's stages and what each gets:

1. **Input transform** (``keep_winograd_input``, ``V[eps, nu, p, c]``): parallel over the
   tiles ``p``; for each tile and each vector of channels (``c`` split by the lanes and
   vectorized) the ``a x a`` points ``(eps, nu)`` are unrolled, so every ``Select`` of the
   lowering resolves to its branch: only the non-zero terms of ``B^T d B`` remain, and the
   loads of one tile's ``a x a`` inputs are shared by the points (LLVM's CSE of the unrolled
   body). The zero padding stays a test in the load (one per tile row and column, not per
   lane).
2. **Batched GEMM** (``winograd_gemm``, ``M[eps, nu, p, o]``) blocked like our direct
   convolution (:mod:`backends.tvm.sched.conv2d`): a register tile of ``tp`` tiles ×
   ``ocb`` output-channel vectors (:func:`~backends.tvm.sched.conv2d.register_tile`, from the
   target's registers and L2), the input channels as the reduction loop inside, the
   accumulators in a ``local`` buffer written back once per register tile; the points
   ``(eps, nu)`` and the channel-vector groups fused into the ``parallel`` loop. Each
   ``V`` value is broadcast once for ``ocb`` FMAs, each packed weight vector loaded once for
   ``tp``.
3. **Output transform and epilogue**: the output stage has no reduction, so it is inlined
   into the fused elementwise chain (bias, residual, ReLU): one output block, whose rows and
   columns are split by the tile size and unrolled (the ``Select`` on the position in the
   tile resolves: ``A^T M A`` with the non-zero terms only), the channel block vectorized, the
   batch, channel-block and tile-row loops fused and ``parallel``. Every output value is
   written once, with its epilogue applied.

A kernel this recipe does not recognize (no GEMM block: an empty convolution) gets
``None``, and the default schedule runs. Every step TVM refuses is recorded
(:func:`~backends.tvm.sched.default.refused`) and skipped.
"""

from __future__ import annotations

from typing import Any

from backends.tvm.lower.nn import LayoutMap
from backends.tvm.lower.winograd import (
    GEMM,
    INPUT,
    INPUT_ROWS,
    INPUT_TILE,
    OUTPUT_COLS,
    PACK,
)
from backends.tvm.sched import KernelInfo, register_schedule
from backends.tvm.sched.conv2d import register_tile
from backends.tvm.sched.default import inline_blocks, refused, schedule_error
from semantics.ops.winograd import WITHOUT_WEIGHT_TRANSFORM

__all__ = ["schedule_winograd"]

PARALLEL_MIN = 16384
"""Multiply-adds below which a stage stays single-threaded."""


def _extent(sch: Any, loop: Any) -> int:
    return int(sch.get(loop).extent)


def _winograd_attrs(info: KernelInfo) -> Any:
    """The attributes of the kernel's Winograd call (None: there is none)."""
    from semantics.expr import Call, Op
    from semantics.visitor import post_order

    for node in post_order(info.func.body):
        if isinstance(node, Call) and isinstance(node.op, Op) \
                and node.op.name == WITHOUT_WEIGHT_TRANSFORM:
            return node.attrs
    return None


def _tile_size(info: KernelInfo) -> int | None:
    attrs = _winograd_attrs(info)
    return int(attrs.get("tile_size", 0)) or None if attrs is not None else None


def _channel_block(info: KernelInfo) -> int | None:
    """The channel block of the Winograd call's data layout (8 for ``NCHW8c``), if any."""
    attrs = _winograd_attrs(info)
    if attrs is None:
        return None
    block = LayoutMap(str(attrs.get("data_layout") or "NCHW")).factor.get("C")
    return int(block) if block else None


def schedule_winograd(prim: Any, info: KernelInfo) -> Any:
    """The scheduled ``IRModule`` of a Winograd kernel, or None (module docstring)."""
    import tvm
    from tvm import s_tir

    if info.ops.count(WITHOUT_WEIGHT_TRANSFORM) != 1:
        return None
    m = _tile_size(info)
    sch = s_tir.Schedule(tvm.IRModule({"main": prim}))
    try:
        gemm = sch.get_sblock(GEMM)
    except schedule_error():
        return None
    if m is None:
        return None
    inline_blocks(sch, {INPUT, INPUT_ROWS, INPUT_TILE, GEMM, PACK, OUTPUT_COLS}.__contains__)
    _schedule_input(sch, _channel_block(info))
    _schedule_pack(sch)
    _schedule_gemm(sch, gemm, info)
    _schedule_output(sch, m, info)
    return sch.mod


def _schedule_input(sch: Any, block_c: int | None) -> None:
    """Parallel over tiles, a vector of channels inside: at most the data layout's channel
    block (a vector crossing ``NCHW8c`` blocks is a gather, one scalar load per lane: 1,600
    of them in a ``F(4x4, 3x3)`` kernel, which tripled its compile time)."""
    block = sch.get_sblock(INPUT)
    eps, nu, p, c = sch.get_loops(block)
    channels = _extent(sch, c)
    vec = next((v for v in (16, 8, 4) if channels % v == 0
                and (block_c is None or block_c % v == 0)), 1)
    co, ci = sch.split(c, [None, vec])
    sch.reorder(p, co, eps, nu, ci)
    half = sch.get_sblock(INPUT_ROWS)
    sch.compute_at(half, co)
    h_eps, h_j, h_c = sch.get_loops(half)[-3:]
    tile = sch.get_sblock(INPUT_TILE)
    sch.compute_at(tile, co)
    t_i, t_j, t_c = sch.get_loops(tile)[-3:]
    sch.unroll(t_i)
    sch.unroll(t_j)
    sch.unroll(h_eps)
    sch.unroll(h_j)
    sch.unroll(eps)
    sch.unroll(nu)
    if vec > 1:
        sch.vectorize(ci)
        sch.vectorize(h_c)
        sch.vectorize(t_c)
    if _extent(sch, p) >= 2:
        sch.parallel(p)


def _schedule_pack(sch: Any) -> None:
    try:
        block = sch.get_sblock(PACK)
    except schedule_error():
        return   # packed at build time
    loops = sch.get_loops(block)
    sch.vectorize(loops[-1])
    outer = sch.fuse(*loops[:3])
    sch.parallel(outer)


def _schedule_gemm(sch: Any, gemm: Any, info: KernelInfo) -> None:
    a, b, p, o, rc = sch.get_loops(gemm)
    tiles, channels, reduction = _extent(sch, p), _extent(sch, o), _extent(sch, rc)
    lanes = _gemm_lanes(sch)
    blocks = channels // lanes
    tp, ocb = register_tile(tiles, blocks, lanes, 4 * reduction * lanes, info.target)
    ob, ol = sch.split(o, [None, lanes])
    obo, obi = sch.split(ob, [None, ocb])
    po, pi = sch.split(p, [None, tp])
    sch.reorder(a, b, obo, po, rc, obi, pi, ol)
    write_back = sch.cache_write(gemm, 0, "local")
    outer = sch.fuse(a, b, obo)
    work = _extent(sch, outer) * tiles * lanes * ocb * reduction
    if work >= PARALLEL_MIN and _extent(sch, outer) >= 2:
        sch.parallel(outer)
    sch.vectorize(ol)
    sch.unroll(obi)
    sch.unroll(pi)
    sch.reverse_compute_at(write_back, po)
    init = sch.decompose_reduction(gemm, rc)
    sch.vectorize(sch.get_loops(init)[-1])
    sch.vectorize(sch.get_loops(write_back)[-1])


def _gemm_lanes(sch: Any) -> int:
    """The packed weight's vector width (the last extent of the GEMM's second read)."""
    stmt = sch.get(sch.get_sblock(GEMM))
    for region in stmt.reads:
        if len(region.source.shape) == 5:
            return int(region.source.shape[-1])
    return 1


def _schedule_output(sch: Any, m: int, info: KernelInfo) -> None:
    """The output block (the output transform inlined into the epilogue)."""
    root = sch.get_sblock("root")
    outputs = sch.get_output_blocks(root)
    if len(outputs) != 1:
        return
    block = outputs[0]
    loops = list(sch.get_loops(block))
    names = _output_axes(info)
    if names is None or len(names) != len(loops):
        return
    at = dict(zip(names, loops, strict=True))
    ho, hi = sch.split(at["H"], [None, m])
    wo, wi = sch.split(at["W"], [None, m])
    lane = at.get("c")
    order = [at[n] for n in names if n not in ("H", "W", "c")]
    sch.reorder(*order, ho, wo, hi, wi, *([lane] if lane is not None else []))
    cols = sch.get_sblock(OUTPUT_COLS)
    sch.compute_at(cols, wo)
    c_a, c_q, c_o = sch.get_loops(cols)[-3:]
    sch.unroll(c_a)
    sch.unroll(c_q)
    if lane is not None:
        sch.vectorize(c_o)
    sch.unroll(hi)
    sch.unroll(wi)
    if lane is not None:
        try:
            sch.vectorize(lane)
        except schedule_error() as err:
            refused("vectorize the output's channel block", err)
    outer = sch.fuse(*order, ho)
    if _extent(sch, outer) >= 2:
        sch.parallel(outer)


def _output_axes(info: KernelInfo) -> list[str] | None:
    """The output's axis letters (``N C H W c`` for ``NCHW16c``), from the Winograd call."""
    attrs = _winograd_attrs(info)
    if attrs is None:
        return None
    layout = attrs.get("out_layout") or attrs.get("data_layout") or "NCHW"
    return [ch for ch in layout if ch.isalpha()]


@register_schedule(WITHOUT_WEIGHT_TRANSFORM, priority=100)
def _rule(prim: Any, info: KernelInfo) -> Any:
    return schedule_winograd(prim, info)

