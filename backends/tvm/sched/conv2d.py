"""Convolution schedules for the CPU: ``nn.conv2d`` with a blocked ``NCHW{c}c`` output.

Registered for ``nn.conv2d`` (see :mod:`backends.tvm.sched`). The kernel is the lowering of
:mod:`backends.tvm.lower.nn`: one reduction block ``conv2d`` over the output's axes with the
reduction axes ``rc`` (input channels of a group), ``ry``, ``rx`` (kernel taps), the zero
padding an ``if_then_else`` inside it (the pad stage is inlined), and the fused epilogue
(``add`` of a bias or a residual, ``nn.relu``, ``clip``, ``multiply``, ...) as elementwise
blocks after it. AlterOpLayout (``passes/alter_op_layout.py``) gives every convolution whose
output channels the block divides an ``NCHW{c}c`` output: ordinary ones (``OIHW{c}i{c}o``
kernels), depthwise ones (``OIHW1i{c}o``) and those with few input channels (data read in
``NCHW``, ``OIHW{c}o`` kernels) — all take this recipe:

1. Every elementwise stage is inlined: the epilogue chain collapses into the one output block
   ``E`` that reads the convolution (when the convolution itself is the output, a
   ``cache_write`` creates ``E`` as a copy).
2. The convolution's loops are tiled: the output width split by the register tile ``tw``
   (and, when ``tw`` is short, the output rows by a row tile ``th``, :func:`row_tile`), the
   input channels by the channel block (``rc_outer``, ``rc_inner``), in the order
   ``(batch, channel block, row tile, width tile) | rc_outer, ry, rx, rc_inner | th, tw,
   lanes``.
   The four outer loops are fused and ``parallel`` (work below :data:`PARALLEL_MIN` scalar
   outputs stays serial: waking the thread pool costs microseconds); the ``tw`` loop is
   unrolled and the lane loop (the output channel block) vectorized: each weight vector
   loaded once serves ``tw`` FMAs into ``tw`` accumulator registers, each input value is
   broadcast once.
3. The accumulator (``th × tw × lanes`` values) is a ``local`` buffer initialized once per tile
   (``decompose_reduction``), and ``E`` is moved into the tile (``reverse_compute_at``):
   bias, residual and activation are applied in the tile's vectorized write-back loop, at no
   extra pass over memory.

The tile width is the largest divisor of the output width not above :data:`MAX_TILE`
(``th × tw`` accumulators plus a weight vector and a broadcast fit AVX-512's 32 registers): no
search, so a kernel costs one LLVM compilation. A kernel the recipe does not recognize (not
float32, another block structure, a non-blocked output) gets ``None``: the default recipe
(:mod:`backends.tvm.schedules`) runs.

:func:`enable_isnan_vectorization` is applied once when this module schedules a kernel: it
lets TVM vectorize ``tirx.isnan`` (used by the NaN-propagating ``max`` of ``nn.relu``), which
TVM 0.27 otherwise scalarizes, turning every relu epilogue into gathers.
"""

from __future__ import annotations

import re
from typing import Any

from backends.tvm.sched import KernelInfo, register_schedule

__all__ = ["MAX_TILE", "enable_isnan_vectorization", "row_tile", "schedule_conv2d",
           "width_tile"]

MAX_TILE = 12
"""The largest register tile along the output width."""

TILE_TARGET = 8
"""The preferred width tile. Measured here (one thread, ResNet-18's 3×3 layers): tiles of
7-8 columns were consistently the fastest, 14 and 28 columns erratic and up to 3x slower
(the 28-column accumulator stays a stack buffer: the code zeroes it with ``memset``), 4
columns 30-50 % slower."""

TILE_BUDGET = 8
"""The most accumulators (rows × columns of 16 lanes) of one register tile."""

_BLOCKED = re.compile(r"NCHW[1-9][0-9]*c")

PARALLEL_MIN = 16384
"""Multiply-adds below which a kernel stays single-threaded."""

MAX_ROWS = 4
"""The most output rows in one register tile."""

ROW_TILES = True
"""Tile output rows too when the width tile is short (see :func:`row_tile`)."""

UNROLL_IC = False
"""Unroll the inner input-channel loop too: measured 3-7 % faster per kernel here (with
28-column tiles), but LLVM then takes 2-3x longer per kernel (cold builds): off."""


def enable_isnan_vectorization() -> None:
    """Let TVM's vectorizer keep ``tirx.isnan`` in vector form (idempotent).

    The NaN-propagating ``max`` of ``nn.relu`` (and of pooling, ``clip``) tests ``isnan``;
    TVM 0.27 does not mark that intrinsic vectorizable, so every loop containing it is
    scalarized (and LLVM then re-vectorizes it with gathers). Its LLVM code generation is an
    unordered compare, which is elementwise on vectors: marking it ``TVectorizable`` is sound
    (checked by the tests on NaN and infinity inputs).
    """
    import tvm

    op = tvm.ir.Op.get("tirx.isnan")
    if not op.get_attr("TVectorizable"):
        op.set_attr("TVectorizable", True)


def width_tile(width: int, cap: int | None = None) -> int:
    """The register tile along the output width: the divisor of ``width`` nearest to
    :data:`TILE_TARGET` among those up to ``cap`` (the larger one on a tie).

    Args:
        width: the output width (> 0).
        cap: the largest tile allowed (default :data:`MAX_TILE`).
    Returns:
        The tile (1 when ``width`` has no divisor in ``2..cap``).
    """
    limit = MAX_TILE if cap is None else cap
    divisors = [t for t in range(1, min(width, limit) + 1) if width % t == 0]
    return min(divisors, key=lambda t: (abs(t - TILE_TARGET), -t))


def _extent(sch: Any, loop: Any) -> int:
    return int(sch.get(loop).extent)


def _inline_elementwise(sch: Any, keep: str) -> None:
    """Inline every block except ``keep`` and the outputs (repeated until nothing changes):
    an elementwise chain after the convolution collapses into its output block."""
    root = sch.get_sblock("root")
    changed = True
    while changed:
        changed = False
        outputs = {sch.get(b).name_hint for b in sch.get_output_blocks(root)}
        for block in sch.get_child_blocks(root):
            name = sch.get(block).name_hint
            if name == keep or name in outputs:
                continue
            try:
                sch.compute_inline(block)
                changed = True
            except Exception:  # noqa: BLE001 - a reduction or a non-inlinable stage
                continue


def _conv_shape(sch: Any, block: Any) -> tuple[list[int], list[int]] | None:
    """The (spatial extents, reduction extents) of a ``conv2d`` block shaped like our
    lowering's (spatial then ``rc, ry, rx``), or None."""
    stmt = sch.get(block)
    kinds = [int(iv.iter_type) for iv in stmt.iter_vars]
    if kinds[-3:] != [2, 2, 2] or any(k != 0 for k in kinds[:-3]):
        return None
    try:
        dom = [int(iv.dom.extent) for iv in stmt.iter_vars]
    except (TypeError, ValueError):
        return None
    return dom[:-3], dom[-3:]


def schedule_conv2d(prim: Any, info: KernelInfo) -> Any:
    """The scheduled ``IRModule`` of a convolution kernel, or None (see the module docstring).

    Args:
        prim: the kernel's ``PrimFunc``.
        info: the kernel's operators, function, argument types and target.
    Returns:
        The scheduled module, or None when the kernel is not a single float32 convolution
        with an ``NCHW{c}c`` output (a channel block of at least 4).
    """
    import tvm
    from tvm import s_tir

    if info.ops.count("nn.conv2d") != 1:
        return None
    conv_call = _conv_call(info)
    if conv_call is None:
        return None
    attrs = conv_call.attrs
    out_layout = attrs.get("out_layout") or attrs.get("data_layout") or "NCHW"
    sch = s_tir.Schedule(tvm.IRModule({"main": prim}))
    try:
        conv = sch.get_sblock("conv2d")
    except Exception:  # noqa: BLE001 - an empty convolution (no reduction block)
        return None
    shape = _conv_shape(sch, conv)
    if shape is None or str(sch.get(conv).writes[0].source.dtype) != "float32":
        return None
    spatial, reduction = shape
    if not (_BLOCKED.fullmatch(out_layout) and len(spatial) == 5 and spatial[-1] >= 4):
        return None
    _inline_elementwise(sch, "conv2d")
    conv = sch.get_sblock("conv2d")
    consumers = sch.get_consumers(conv)
    if not consumers:
        epilogue = sch.cache_write(conv, 0, "global")
        conv = sch.get_sblock("conv2d")
    elif len(consumers) == 1:
        epilogue = consumers[0]
    else:
        return None
    if len(sch.get_loops(epilogue)) != len(spatial):
        return None
    _tile_blocked(sch, conv, epilogue, spatial, reduction)
    return sch.mod


def _conv_call(info: KernelInfo) -> Any:
    from semantics.expr import Call, Op
    from semantics.visitor import post_order

    for node in post_order(info.func.body):
        if isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == "nn.conv2d":
            return node
    return None


def _tile_blocked(sch: Any, conv: Any, epilogue: Any, spatial: list[int],
                  reduction: list[int]) -> None:
    """``NCHW{c}c``: lanes over the channel block, a register tile over the output width."""
    n, cb, oh, ow, lane, rc, ry, rx = sch.get_loops(conv)
    tw = width_tile(spatial[3])
    th = row_tile(spatial[2], tw)
    owo, owi = sch.split(ow, [None, tw])
    if th > 1:
        oho, ohi = sch.split(oh, [None, th])
    else:
        oho, ohi = oh, None
    ic_block = _inner_block(_extent(sch, rc), spatial[-1])
    if ic_block > 1:
        rco, rci = sch.split(rc, [None, ic_block])
        inner = [rco, ry, rx, rci]
    else:
        rco = rc
        inner = [rc, ry, rx]
    tile = [owi, lane] if ohi is None else [ohi, owi, lane]
    sch.reorder(n, cb, oho, owo, *inner, *tile)
    outer = sch.fuse(n, cb, oho, owo)
    work = 1
    for e in (*spatial, *reduction):
        work *= e
    if work >= PARALLEL_MIN:
        sch.parallel(outer)
    sch.vectorize(lane)
    sch.unroll(owi)
    if ohi is not None:
        sch.unroll(ohi)
    if ic_block > 1 and UNROLL_IC:
        sch.unroll(inner[-1])
    sch.reverse_compute_at(epilogue, outer)
    sch.set_scope(conv, 0, "local")
    init = sch.decompose_reduction(conv, rco)
    sch.vectorize(sch.get_loops(init)[-1])
    sch.vectorize(sch.get_loops(epilogue)[-1])


def row_tile(height: int, tw: int) -> int:
    """Output rows per register tile: when the width tile is short (a 7- or 14-wide output),
    the largest divisor ``th`` of ``height`` with ``th * tw <= MAX_TILE`` (at most
    :data:`MAX_ROWS`), so a weight vector still serves many FMAs; 1 with ``ROW_TILES`` off.

    Args:
        height: the output height.
        tw: the width tile.
    Returns:
        The row tile (>= 1).
    """
    if not ROW_TILES:
        return 1
    for t in range(min(height, MAX_ROWS, TILE_BUDGET // max(tw, 1)), 0, -1):
        if height % t == 0:
            return t
    return 1


def _inner_block(rc_extent: int, lanes: int) -> int:
    """The inner input-channel loop: the channel block when it divides ``rc``."""
    for b in (lanes, 16, 8, 4):
        if b <= rc_extent and rc_extent % b == 0:
            return b
    return 1


try:
    enable_isnan_vectorization()   # every kernel compiled after the schedule table loads
except ImportError:                # no TVM: nothing to compile either
    pass


@register_schedule("nn.conv2d", priority=100)
def _rule(prim: Any, info: KernelInfo) -> Any:
    return schedule_conv2d(prim, info)
