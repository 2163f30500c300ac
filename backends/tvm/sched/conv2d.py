"""Convolution schedules for the CPU: ``nn.conv2d`` with a blocked ``NCHW{c}c`` output.

Registered for ``nn.conv2d`` (see :mod:`backends.tvm.sched`). The kernel is the lowering of
:mod:`backends.tvm.lower.nn`: one reduction block ``conv2d`` over the output's axes with the
reduction axes ``rc`` (input channels of a group), ``ry``, ``rx`` (kernel taps), reading a
zero-padded copy of the input (the stage ``conv2d_pad``, present when the convolution pads),
and the fused epilogue (``add`` of a bias or a residual, ``nn.relu``, ``clip``, ``multiply``,
...) as elementwise blocks after it. AlterOpLayout (``passes/alter_op_layout.py``) gives every
convolution whose output channels the block divides an ``NCHW{c}c`` output: ordinary ones
(``OIHW{c}i{c}o`` kernels), depthwise ones (``OIHW1i{c}o``) and those with few input channels
(data read in ``NCHW``, ``OIHW{c}o`` kernels) — all take this recipe:

1. The padded input is **materialized** once per call (its own parallel, vectorized loop
   nest), so the inner loop loads without a bounds test. Measured here (Zen 3, one core,
   3×3 64→64 on 56×56): 79–84 GFLOP/s against 40–45 with the test inlined in every load
   (the default recipe's choice, which the lowering keeps available). A convolution with a
   short reduction per output (depthwise, :data:`PAD_MIN_REDUCTION`) keeps the inlined test:
   for it the copy would double the memory traffic. Neither does a convolution that does
   not pad (1×1 layers): its staged input is only a re-indexing of the data, and reading the
   data in place saves a pass over it and a parallel launch (measured here, one thread, the
   same process: MobileNet's 1×1 layers 5–25 % faster, 128→128 on 56×56 1.58 → 1.19 ms).
2. Every elementwise stage after the convolution is inlined: the epilogue chain collapses into
   the one output block ``E`` that reads the convolution (when the convolution itself is the
   output, a ``cache_write`` creates ``E`` as a copy) — up to a budget of buffer reads
   (:data:`~backends.tvm.sched.default.INLINE_READS`): a stage its consumer reads several
   times is copied into each read, and a realized quantize (divide, round half away from zero,
   NaN-propagating clip, cast) inlined whole was 350 KB of TIR that LLVM took two minutes
   over (MobileNet's float first convolution, 117 s → 0.7 s). Over the budget the chain stays
   a few blocks, every one computed in the tile like ``E`` (step 4).
3. The convolution's loops are tiled into a **register tile** of ``tw`` output columns ×
   ``ocb`` output-channel blocks (:func:`register_tile`), the input channels split by the
   channel block, in the order ``(batch, channel-block group, row, column group) | rc_outer,
   ry, rx, rc_inner | ocb, tw, lanes``. The three outer loops are fused and ``parallel``
   (work below :data:`PARALLEL_MIN` multiply-adds stays serial: waking the thread pool costs
   microseconds), the column tiles of a row run serially inside: fusing them into the
   parallel loop too puts a division and remainders per tile into the index arithmetic,
   which a short reduction cannot hide (measured here, two threads: 1×1 32→64 on 112×112
   0.86 → 0.54 ms, MobileNet's first 3×3 on 3 channels 0.33 → 0.24 ms; long reductions
   unchanged); ``ocb`` and ``tw`` are unrolled and the lanes (one channel block)
   vectorized: each input value is broadcast once for ``ocb`` FMAs, each weight vector loaded
   once for ``tw`` FMAs, into ``tw × ocb`` accumulator registers.
4. The accumulators are a ``local`` buffer initialized once per tile (``decompose_reduction``),
   and ``E`` (with the chain's other blocks, in order) is moved into the tile
   (``reverse_compute_at``): bias, residual and activation
   are applied in the tile's vectorized write-back loop, at no extra pass over memory.
5. A large convolution with many input channels (:func:`k_blocked`) is reduced in passes of
   :func:`k_chunk` input-channel blocks instead (8; 2 on a 14×14 output): for each group of
   output-channel blocks (the parallel loop), every pass sweeps all tiles, accumulating into
   the result, and the epilogue runs over the group's outputs after the last pass (while
   they are in cache). The register tile's weight budget then counts one pass's weights,
   not the whole reduction's (VGG-16's 512→512 layers on 14×14: 2 columns × 4 blocks instead
   of 7 × 1; 10.1 → 7.8 ms each, measured here in one process).

The tile comes from the target's vector unit (``KernelInfo.target``: lanes, registers, L2
size), not from a search, so a kernel costs one LLVM compilation. A kernel the recipe does
not recognize (not float32, another block structure, a non-blocked output) gets ``None``:
the next rule, or the default recipe (:mod:`backends.tvm.sched.default`), runs.

:func:`enable_isnan_vectorization` is applied once when this module schedules a kernel: it
lets TVM vectorize ``tirx.isnan`` (used by the NaN-propagating ``max`` of ``nn.relu``), which
TVM 0.27 otherwise scalarizes, turning every relu epilogue into gathers.
"""

from __future__ import annotations

import re
from typing import Any

from backends.tvm.lower.conv_plan import CONV_PAD
from backends.tvm.sched import KernelInfo, register_schedule
from backends.tvm.sched.default import INLINE_READS, inline_blocks, schedule_error
from backends.tvm.target import Target

__all__ = ["ACC_TARGET", "K_CHUNK", "K_CHUNK_SMALL", "enable_isnan_vectorization",
           "k_blocked", "k_chunk", "register_tile", "schedule_conv2d"]

ACC_TARGET = 8
"""Accumulator registers a tile aims for: a fused multiply-add has a latency of about four
cycles and two of them issue per cycle, so eight independent sums keep both units busy.
Measured here (Zen 3, one core, ResNet-18's 3×3 layers, GFLOP/s): 4 columns × 2 channel
blocks 69–83, 2 × 4 60–81, 8 × 1 67–70, 7 × 1 (seven sums) 51–66; 14 or 16 sums spill on
AVX2's 16 registers (43–51)."""

ACCUMULATORS = ("float32", "int32")
"""Accumulator dtypes the recipe schedules: float32, and int32 (integer convolutions with
int8/int16 operands, ``out_dtype="int32"``: the products of sign-extended operands, which
LLVM turns into ``vpmaddwd``; see docs/quantization_kernels.md)."""

MAX_COLUMNS = 8
"""The widest column tile."""

MAX_CHANNEL_BLOCKS = 4
"""The most output-channel blocks in one tile."""

WEIGHT_SHARE_OF_L2 = 0.75
"""The share of a core's L2 cache the weights of one tile's channel blocks may take (the
reduction loop walks them once per tile; measured: eight 147 KB blocks of a 512-channel
layer, 1.2 MB, ran at 29 GFLOP/s where one block ran at 60)."""

K_CHUNK = 8
"""Input-channel blocks reduced in one pass over the tiles of a large convolution
(:func:`k_blocked`). The values one tile reads then come from a few channels' worth of
memory that stays in cache from tile to tile, and the weights of the pass are reused by every
tile. Measured here (one core, GFLOP/s, one pass against passes of 8 blocks): 256→256 3×3 on
56×56 48 → 75, 512→512 on 28×28 65 → 69, 128→128 on 28×28 84 → 87; strided and 7×7 layers
lose (50 → 45, 55 → 53)."""

K_CHUNK_SMALL = 2
"""Input-channel blocks per pass on a small output (at most :data:`K_MIN_POSITIONS`
positions): the whole output of a channel-block group then stays in L1 from pass to pass, and
the shorter passes keep the weights they walk there too. Measured here (two threads, same
process, interleaved; ms): 256→256 3×3 on 14×14 1.43 → 1.36 (twice), 512→512 3×3 on 14×14
8.0 → 7.5 (with the 2 × 4 tile below)."""

K_MIN_BLOCKS = 16
"""Input-channel blocks from which a convolution is reduced in passes."""

K_MIN_POSITIONS = 196
"""Output positions (rows × columns) from which a convolution is reduced in passes."""

_BLOCKED = re.compile(r"NCHW[1-9][0-9]*c")

PARALLEL_MIN = 16384
"""Multiply-adds below which a kernel stays single-threaded."""

PAD = CONV_PAD
"""The padded-input stage of the lowering (``backends.tvm.lower.conv_plan.CONV_PAD``)."""

PAD_MIN_REDUCTION = 16
"""Multiply-adds per output from which the padded input is materialized. A convolution with a
short reduction (depthwise: the taps of one channel) reads each input value a few times only,
and the copy would double its memory traffic: its loads test the bounds instead."""


def register_tile(width: int, channel_blocks: int, block_lanes: int, weight_block_bytes: int,
                  cpu: Target | None = None) -> tuple[int, int]:
    """The register tile of a blocked convolution: ``(columns, channel blocks)``.

    Among columns ``tw`` dividing ``width`` (at most :data:`MAX_COLUMNS`) and channel blocks
    ``ocb`` dividing ``channel_blocks`` (at most :data:`MAX_CHANNEL_BLOCKS`, and only as many as
    fit :data:`WEIGHT_SHARE_OF_L2`), whose ``tw × ocb × (block_lanes / lanes)`` accumulators
    take at most half the vector registers (or :data:`ACC_TARGET`), the rule takes the tile
    with the most accumulators up to :data:`ACC_TARGET`, then the fewest loads per
    multiply-add (``(tw + ocb) / (tw × ocb)``), then the widest.

    Args:
        width: the output width.
        channel_blocks: the number of output-channel blocks.
        block_lanes: channels per block (the layout's ``c``).
        weight_block_bytes: the weight bytes of one output-channel block that a tile walks
            before the next tile reuses them (one pass's share when the input channels are
            reduced in passes).
        cpu: the target (its ``lanes``, ``registers`` and ``l2_bytes``; default the host).
    Returns:
        ``(tw, ocb)``, both >= 1.
    """
    cpu = cpu or Target.host()
    per_block = max(1, block_lanes // cpu.lanes)
    budget = WEIGHT_SHARE_OF_L2 * cpu.l2_bytes
    best: tuple[tuple[float, ...], tuple[int, int]] | None = None
    for tw in range(1, min(width, MAX_COLUMNS) + 1):
        if width % tw:
            continue
        for ocb in range(1, min(channel_blocks, MAX_CHANNEL_BLOCKS) + 1):
            if channel_blocks % ocb or (ocb > 1 and ocb * weight_block_bytes > budget):
                continue
            acc = tw * ocb * per_block
            if acc > max(ACC_TARGET, cpu.registers // 2) and (tw, ocb) != (1, 1):
                continue
            score = (min(acc, ACC_TARGET), -(tw + ocb) / (tw * ocb), tw)
            if best is None or score > best[0]:
                best = (score, (tw, ocb))
    return best[1] if best is not None else (1, 1)


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


def _extent(sch: Any, loop: Any) -> int:
    return int(sch.get(loop).extent)


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
    except schedule_error():   # an empty convolution (no reduction block)
        return None
    shape = _conv_shape(sch, conv)
    if shape is None or str(sch.get(conv).writes[0].source.dtype) not in ACCUMULATORS:
        return None
    spatial, reduction = shape
    if not (_BLOCKED.fullmatch(out_layout) and len(spatial) == 5 and spatial[-1] >= 4):
        return None
    pads = any(int(v) for v in (attrs.get("padding") or (0,)))
    materialize = (pads and reduction[0] * reduction[1] * reduction[2] >= PAD_MIN_REDUCTION
                   or _staged_words(sch))
    keep = {"conv2d", PAD} if materialize else {"conv2d"}
    # the epilogue joins the output block, up to a budget of reads (a long quantize chain
    # stays a few stages, each computed in the tile)
    inline_blocks(sch, keep.__contains__, budget=INLINE_READS)
    conv = sch.get_sblock("conv2d")
    chain = _epilogue_chain(sch, conv)
    if chain is None:
        return None
    if not chain:
        chain = [sch.cache_write(conv, 0, "global")]
        conv = sch.get_sblock("conv2d")
    if any(len(sch.get_loops(b)) != len(spatial) for b in chain):
        return None
    strided = any(int(v) > 1 for v in (attrs.get("strides") or (1, 1)))
    _tile_blocked(sch, conv, chain, spatial, reduction, _weight_block_bytes(info, spatial),
                  strided, info.target)
    if materialize:
        _materialize_pad(sch, spatial[-1])
    return sch.mod


def _epilogue_chain(sch: Any, conv: Any) -> list[Any] | None:
    """The elementwise blocks after the convolution, in order, each the one consumer of the
    one before (empty: the convolution is the output), or None when the epilogue branches."""
    chain: list[Any] = []
    block = conv
    while True:
        consumers = sch.get_consumers(block)
        if not consumers:
            return chain
        if len(consumers) != 1:
            return None
        block = consumers[0]
        chain.append(block)


def _staged_words(sch: Any) -> bool:
    """Whether the staged input holds the 32-bit words of the dot-product lowering
    (``backends.tvm.lower.int_dot``): packing them costs several operations per word, so
    they are materialized once even for a short (depthwise) reduction."""
    try:
        pad = sch.get_sblock(PAD)
    except schedule_error():   # no staged input
        return False
    return str(sch.get(pad).writes[0].source.dtype) == "uint32"


def _conv_call(info: KernelInfo) -> Any:
    from semantics.expr import Call, Op
    from semantics.visitor import post_order

    for node in post_order(info.func.body):
        if isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == "nn.conv2d":
            return node
    return None


def _weight_block_bytes(info: KernelInfo, spatial: list[int]) -> int:
    """The weight bytes one output-channel block reads: input channels per group × taps ×
    block lanes × 4 (the weight is the kernel's second argument or a constant)."""
    conv = _conv_call(info)
    wtype = getattr(conv.args[1], "checked_type", None) if conv is not None else None
    shape = getattr(wtype, "shape", None)
    if not shape:
        return 0
    total = 1
    for d in shape:
        total *= int(d)
    out_channels = spatial[1] * spatial[-1]
    return 4 * total // max(out_channels, 1) * spatial[-1]


def _tile_blocked(sch: Any, conv: Any, chain: list[Any], spatial: list[int],
                  reduction: list[int], weight_block_bytes: int, strided: bool,
                  target: Target) -> None:
    """``NCHW{c}c``: lanes over the channel block, a register tile of columns × channel
    blocks (:func:`register_tile`); the input channels in passes of :func:`k_chunk` blocks
    when :func:`k_blocked` says so."""
    n, cb, oh, ow, lane, rc, ry, rx = sch.get_loops(conv)
    ic_block = _inner_block(_extent(sch, rc), spatial[-1])
    in_blocks = _extent(sch, rc) // ic_block
    positions = spatial[2] * spatial[3]
    passes_of = k_chunk(positions) if k_blocked(positions, in_blocks, strided) else in_blocks
    # the weights a tile walks before the next tile reuses them: one pass's share of a block
    tw, ocb = register_tile(spatial[3], spatial[1], spatial[-1],
                            weight_block_bytes * passes_of // in_blocks, target)
    cbo, cbi = sch.split(cb, [None, ocb])
    owo, owi = sch.split(ow, [None, tw])
    if ic_block > 1:
        rco, rci = sch.split(rc, [None, ic_block])
        inner = [rco, ry, rx, rci]
    else:
        rco = rc
        inner = [rc, ry, rx]
    work = 1
    for e in (*spatial, *reduction):
        work *= e
    if passes_of < in_blocks:
        # For each group of channel blocks: the input channels in passes over every tile,
        # accumulating in the (global) result; the epilogue after the last pass.
        passes, rco = sch.split(rco, [None, passes_of])
        inner[0] = rco
        sch.reorder(n, cbo, passes, oh, owo, *inner, cbi, owi, lane)
        outer = sch.fuse(n, cbo)
        first = passes
        tile = outer
    else:
        # Parallel over (batch, channel-block group, row); the column tiles of a row run
        # serially inside, each with its accumulators and write-back.
        sch.reorder(n, cbo, oh, owo, *inner, cbi, owi, lane)
        outer = sch.fuse(n, cbo, oh)
        tile = owo
        sch.set_scope(conv, 0, "local")
        first = rco
    if work >= PARALLEL_MIN and _extent(sch, outer) >= 2:
        sch.parallel(outer)
    sch.vectorize(lane)
    sch.unroll(cbi)
    sch.unroll(owi)
    for block in chain:
        sch.reverse_compute_at(block, tile)
    init = sch.decompose_reduction(conv, first)
    sch.vectorize(sch.get_loops(init)[-1])
    for block in chain:
        sch.vectorize(sch.get_loops(block)[-1])


def k_chunk(positions: int) -> int:
    """Input-channel blocks per pass of a convolution reduced in passes: :data:`K_CHUNK`, or
    :data:`K_CHUNK_SMALL` on an output of at most :data:`K_MIN_POSITIONS` positions."""
    return K_CHUNK_SMALL if positions <= K_MIN_POSITIONS else K_CHUNK


def k_blocked(positions: int, channel_blocks: int, strided: bool) -> bool:
    """Whether a convolution's input channels are reduced in passes of :func:`k_chunk`
    blocks: many input channel blocks (at least :data:`K_MIN_BLOCKS`) over a large output
    (at least :data:`K_MIN_POSITIONS` positions) at stride 1.

    Args:
        positions: output rows × columns.
        channel_blocks: input channel blocks of the reduction.
        strided: the convolution has a stride above 1.
    """
    return not strided and positions >= K_MIN_POSITIONS and channel_blocks >= K_MIN_BLOCKS


def _materialize_pad(sch: Any, lanes: int) -> None:
    """Schedule the staged input (padded, channels last) as its own loop nest: batch, rows
    and columns fused and parallel, the channels split by the vector width and vectorized
    when it divides them."""
    try:
        pad = sch.get_sblock(PAD)
    except schedule_error():   # no staged input: the convolution reads its data
        return
    *outer, channels = sch.get_loops(pad)
    fused = sch.fuse(*outer)
    if _extent(sch, fused) >= 2:
        sch.parallel(fused)
    vec = min(lanes, 8)
    if _extent(sch, channels) % vec == 0:
        _, inner = sch.split(channels, [None, vec])
        sch.vectorize(inner)


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
