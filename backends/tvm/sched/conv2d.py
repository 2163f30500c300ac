"""Convolution schedules for the CPU: blocked ``NCHW{c}c``, depthwise and plain ``NCHW``.

Registered for ``nn.conv2d`` (see :mod:`backends.tvm.sched`). The kernel is the lowering of
:mod:`backends.tvm.lower.nn`: one reduction block ``conv2d`` over the output's axes with the
reduction axes ``rc`` (input channels of a group), ``ry``, ``rx`` (kernel taps), the zero
padding an ``if_then_else`` inside it (so the pad stage is inlined), and the fused epilogue
(``add`` of a bias, a residual, ``nn.relu``, ``clip``, ...) as elementwise blocks after it.

The recipe (one per output layout, chosen from the block's access pattern):

1. Every elementwise stage is inlined: the epilogue chain collapses into the one output block
   ``E`` that reads the convolution (when the convolution itself is the output, a
   ``cache_write`` creates ``E`` as a plain copy).
2. ``E``'s loops are tiled: the output width by the register tile ``tw``, the
   *lane axis* (the channel block ``c`` of ``NCHW{c}c``; the output width for plain
   ``NCHW``) kept innermost and vectorized; the outer loops (batch, channel blocks, output
   rows, width tiles) are fused and ``parallel``.
3. The convolution is computed at the width tile (``compute_at``): an accumulator of
   ``tw × lanes`` values, initialized once (``decompose_reduction``) and updated by the
   reduction loops ``rc_outer, ry, rx, rc_inner`` around the unrolled ``tw`` loop and the
   vectorized lane loop — each weight vector loaded once serves ``tw`` FMAs, each input
   scalar is broadcast into one; the epilogue reads the accumulator in the tile's
   write-back loop (so bias, residual and activation cost no extra pass over memory).

The tile width is the largest divisor of the output width not above :data:`MAX_TILE`
(registers: ``tw`` accumulators plus a weight and a broadcast among AVX-512's 32); no
search, so compile time stays that of one recipe. A kernel the recipe does not recognize
(another block structure, a layout without a lane axis) returns ``None``: the default
recipe runs.
"""

from __future__ import annotations

from typing import Any

from backends.tvm.sched import KernelInfo, register_schedule

__all__ = ["MAX_TILE", "schedule_conv2d", "width_tile"]

MAX_TILE = 28
"""The largest register tile along the output width."""

LANES = 16
"""float32 lanes of one AVX-512 register (the channel block AlterOpLayout picks)."""

PARALLEL_MIN = 16384
UNROLL_IC = False


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


def width_tile(width: int, cap: int = MAX_TILE) -> int:
    """The largest divisor of ``width`` that is at most ``cap``.

    Args:
        width: the output width (> 0).
        cap: the largest tile allowed.
    Returns:
        The tile (1 when ``width`` is a prime above ``cap``).
    """
    for t in range(min(width, cap), 0, -1):
        if width % t == 0:
            return t
    return 1


def _extent(sch: Any, loop: Any) -> int:
    return int(sch.get(loop).extent)


def _inline_elementwise(sch: Any, keep: str) -> None:
    """Inline every block except ``keep`` and the outputs (repeat until nothing changes);
    then inline the outputs' producers into them (``reverse_compute_inline`` is not needed:
    the epilogue stages are consumers of the convolution)."""
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
        The scheduled module, or None when the kernel is not a single float32 convolution in
        ``NCHW{c}c`` (with a channel block of at least 4) or ``NCHW`` output layout.
    """
    import tvm
    from tvm import s_tir

    enable_isnan_vectorization()
    if info.ops.count("nn.conv2d") != 1:
        return None
    conv_call = _conv_call(info)
    if conv_call is None:
        return None
    attrs = conv_call.attrs
    out_layout = attrs.get("out_layout") or attrs.get("data_layout") or "NCHW"
    if conv_call.checked_type.dtype != "float32":
        return None
    sch = s_tir.Schedule(tvm.IRModule({"main": prim}))
    try:
        conv = sch.get_sblock("conv2d")
    except Exception:  # noqa: BLE001 - an empty convolution (no reduction block)
        return None
    shape = _conv_shape(sch, conv)
    if shape is None:
        return None
    spatial, _ = shape
    blocked = out_layout.startswith("NCHW") and len(out_layout) > 4 and out_layout.endswith("c")
    if not (blocked and len(spatial) == 5 and spatial[-1] >= 4) and not (
            out_layout == "NCHW" and len(spatial) == 4):
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
    if blocked:
        _tile_blocked(sch, conv, epilogue, spatial)
    else:
        _tile_nchw(sch, conv, epilogue, spatial)
    return sch.mod


def _conv_call(info: KernelInfo) -> Any:
    from semantics.expr import Call, Op
    from semantics.visitor import post_order

    for node in post_order(info.func.body):
        if isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == "nn.conv2d":
            return node
    return None


def _tile_blocked(sch: Any, conv: Any, epilogue: Any, spatial: list[int]) -> None:
    """``NCHW{c}c``: lanes over the channel block, a register tile over the output width."""
    n, cb, oh, ow, lanes = sch.get_loops(epilogue)
    width = spatial[3]
    tw = width_tile(width)
    owo, owi = sch.split(ow, [None, tw])
    outer = sch.fuse(n, cb, oh, owo)
    work = 1
    for e in spatial:
        work *= e
    if work >= PARALLEL_MIN:
        sch.parallel(outer)
    sch.compute_at(conv, outer)
    sch.set_scope(conv, 0, "local")
    loops = sch.get_loops(conv)
    # loops: outer, then the conv's own loops over the tile: n, cb, oh, ow, c, rc, ry, rx
    own = loops[1:]
    *sp, rc, ry, rx = own
    c_lane = sp[-1]
    c_ow = sp[-2]
    rc_ext = _extent(sch, rc)
    ic_block = _inner_block(rc_ext, spatial[-1])
    if ic_block > 1:
        rco, rci = sch.split(rc, [None, ic_block])
    else:
        rco, rci = rc, None
    order = [rco, ry, rx] + ([rci] if rci is not None else []) + [c_ow, c_lane]
    sch.reorder(*order)
    sch.vectorize(c_lane)
    sch.unroll(c_ow)
    if rci is not None and UNROLL_IC:
        sch.unroll(rci)
    init = sch.decompose_reduction(conv, rco)
    i_loops = sch.get_loops(init)
    sch.vectorize(i_loops[-1])
    e_loops = sch.get_loops(epilogue)
    sch.vectorize(e_loops[-1])


def _inner_block(rc_extent: int, lanes: int) -> int:
    """The inner input-channel loop: the channel block when it divides ``rc``."""
    for b in (lanes, 16, 8, 4):
        if b <= rc_extent and rc_extent % b == 0:
            return b
    return 1


def _tile_nchw(sch: Any, conv: Any, epilogue: Any, spatial: list[int]) -> None:
    """Plain ``NCHW``: a tile of output channels × a vector of output columns."""
    raise NotImplementedError


@register_schedule("nn.conv2d", priority=100)
def _rule(prim: Any, info: KernelInfo) -> Any:
    return schedule_conv2d(prim, info)
