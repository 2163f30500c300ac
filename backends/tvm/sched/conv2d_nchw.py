"""Convolution schedule for the CPU: ``nn.conv2d`` on ``NCHW`` data and ``OIHW`` weights.

Registered for ``nn.conv2d`` (see :mod:`backends.tvm.sched`) below the blocked rule of
:mod:`backends.tvm.sched.conv2d`, and declining (``None``) every other layout: it schedules
the convolutions AlterOpLayout leaves alone — all of them at ``-O0``/``-O1``/``-O2``, where
that pass does not run and the weights stay ``OIHW`` as the model gave them — which the
default recipe left scalar (its vector loop over the output columns meets the padding's
``if_then_else`` on every lane, and TVM scalarizes the loop: ResNet-18 took 1.25 s at
``-O0`` on an idle machine).

A direct convolution whose vector runs along the output **width** (the weights are
broadcast, never repacked: a kernel costs no per-call work on its weights), in three steps:

1. **Stages** (made by the lowering, ``backends.tvm.lower.nn``, in the form
   ``backends.tvm.lower.conv_plan`` describes, for the tile of this target):

   * ``conv2d_pad_w``: a zero-padded copy of the data, ``(N, C, Hp, S, Q)`` for a stride
     ``S`` along the width, phased so that consecutive output columns read consecutive
     memory at every stride. At width stride 1, ``decompose_padding`` splits it into a
     block writing zeros and a block copying the data over the rectangle where it lands:
     no condition in either (a vector loop over a condition that depends on the lane is
     what TVM scalarizes; should TVM refuse, the copy keeps its bounds test and the refusal
     is in the kernel's schedule notes). At larger strides the region a phase receives is
     not a rectangle of the stage's axes, and the copy keeps its bounds test. The copy
     costs one pass over the input, under 1/``OC`` of the convolution's work; its loops
     are left to LLVM's vectorizer (TVM's vectorizer on a 224-wide row cost seconds of
     compilation and ran no faster);
   * ``conv2d_nchw``: the convolution of the padded data, no condition left, over an output
     width rounded up to the register tile (``OWp``, the extra columns computed into the
     accumulator and never written), summing ``rc, ry, rx``;
   * ``conv2d``: the copy of its ``OW`` valid columns, which the fused epilogue (bias,
     residual ``add``, ``relu``, ``clip``, ...) reads.

2. **Tile**: output channels by ``oct`` and output columns by ``tw`` (:func:`choose_tile`),
   loops ``(n, oc outer, oh, ow outer) | rc, ry, rx | oc inner, ow inner``: the four outer
   loops fused and ``parallel`` (below :data:`PARALLEL_MIN` multiply-adds, serial); the
   ``oct`` loop unrolled, the ``tw`` loop vectorized (``tw / lanes`` registers per
   channel): each step loads ``tw`` input columns once and broadcasts ``oct`` weights into
   ``oct × tw`` FMAs on an accumulator held in registers (a ``local`` buffer, initialized
   once per tile by ``decompose_reduction``).

3. **Write back**: the elementwise stages after the convolution are inlined into the one
   output block, which moves into the tile (``reverse_compute_at``): the copy, the bias, the
   residual and the activation happen in the tile's write-back, vectorized — except when the
   output width is not a multiple of the tile: the last tile's write-back then carries a
   predicate and stays scalar (a small part of the work; the accumulation is not affected).

Measured on this machine (AMD EPYC, 2 cores shared with other work, load 3-5; graph
executor, median of 5 runs): at ``-O0`` ResNet-18 3.9 s → 0.14 s per inference, MobileNet
1.1 s → 0.055 s, VGG-16 68 s → 1.5 s, DQN 5.1 ms → 2.3 ms. Per layer, the tile of 8
channels × 8 columns was the fastest or within noise of the fastest among 4×8, 4×16, 2×32
and 16×8 (24-column tiles ran 5-10x slower, see :data:`WIDTH_MULTIPLES`).

The tile is chosen by a small cost model of the build's target (``KernelInfo.target``; on
this machine AMD Zen 3: AVX2 + FMA, 16 ``ymm`` registers of 8 float32, two FMAs and three
loads per cycle, FMA latency 4): at most :func:`accumulators` accumulator registers (the
target's registers less four), the estimated cycles of one reduction step the largest of
the FMAs / ``fma_per_cycle``, the loads / ``loads_per_cycle`` and the FMA latency, and the
useful lanes (``OW / OWp``) counted. Grouped and depthwise convolutions take the same
recipe (a tile's channels may read different input channels); 1×1 convolutions too.

Anything else — not float32, not ``NCHW``/``OIHW``, stages not lowered in this form or padded
for another tile — gets ``None`` (the next rule or the default
recipe), so this rule can make a kernel slower than it could be, never wrong.
"""

from __future__ import annotations

from typing import Any

from backends.tvm.lower.conv_plan import (
    NCHW_ACC,
    NCHW_PAD,
    ConvShape,
    Tile,
    accumulators,
    choose_tile,
    tile_cost,
)
from backends.tvm.sched import KernelInfo, register_schedule
from backends.tvm.sched.default import inline_blocks, refused, schedule_error

__all__ = ["ConvShape", "Tile", "accumulators", "choose_tile", "conv_shape",
           "schedule_conv2d_nchw", "tile_cost"]

PARALLEL_MIN = 1 << 16
"""Multiply-adds below which a kernel stays single-threaded (waking TVM's thread pool costs
microseconds)."""

VECTORIZE_PAD = False
"""Let TVM vectorize the padding copies' column loops (off: LLVM's loop vectorizer does it,
as fast here, while a 224-lane TVM vector cost 2 s of compilation)."""


# --- recognizing the kernel -----------------------------------------------------------------

def conv_shape(info: KernelInfo) -> ConvShape | None:
    """The convolution of ``info``'s kernel when it is a single float32 ``NCHW``/``OIHW``
    one with static shapes, else None."""
    from semantics.expr import Call, Op
    from semantics.ops import nn_relations as N
    from semantics.ops.registry import get as get_op
    from semantics.types import TensorType
    from semantics.visitor import post_order

    if info.ops.count("nn.conv2d") != 1:
        return None
    call = next((n for n in post_order(info.func.body) if isinstance(n, Call)
                 and isinstance(n.op, Op) and n.op.name == "nn.conv2d"), None)
    if call is None:
        return None
    schema = get_op("nn.conv2d").attrs
    attrs = {**{k: spec.default for k, spec in schema.items()},
             **{k: call.attrs[k] for k in call.attrs}}
    if attrs["data_layout"] != "NCHW" or attrs["kernel_layout"] != "OIHW" \
            or (attrs["out_layout"] or "NCHW") != "NCHW" \
            or (attrs["out_dtype"] or "float32") != "float32":
        return None
    types = [getattr(a, "checked_type", None) for a in call.args]
    out = getattr(call, "checked_type", None)
    if not all(isinstance(t, TensorType) and t.dtype == "float32" for t in (*types, out)):
        return None
    try:
        n, c, h, w = (int(d) for d in types[0].shape)  # type: ignore[union-attr]
        oc, cg, kh, kw = (int(d) for d in types[1].shape)  # type: ignore[union-attr]
        on, ooc, oh, ow = (int(d) for d in out.shape)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        return None
    groups = int(attrs["groups"])
    if min(n, c, h, w, oc, cg, kh, kw, oh, ow, groups) <= 0 or (on, ooc) != (n, oc) \
            or c != cg * groups or oc % groups:
        return None
    pt, pl, _, _ = N.pad4(attrs["padding"])
    return ConvShape(n, c, h, w, oc, cg, kh, kw, oh, ow, N.pair(attrs["strides"]),
                     N.pair(attrs["dilation"]), int(pt), int(pl), groups)


# --- the schedule ---------------------------------------------------------------------------

def schedule_conv2d_nchw(prim: Any, info: KernelInfo, tile: Tile | None = None) -> Any:
    """The scheduled ``IRModule`` of an NCHW convolution kernel, or None (see the module
    docstring).

    Args:
        prim: the kernel's ``PrimFunc``.
        info: the kernel's operators, function, argument types and target.
        tile: the register tile (default :func:`choose_tile` for ``info.target``).
    Returns:
        The scheduled module, or None when the kernel is not one this recipe handles.
    """
    import tvm
    from tvm import s_tir

    shape = conv_shape(info)
    if shape is None:
        return None
    tile = choose_tile(shape, info.target) if tile is None else tile
    sch = s_tir.Schedule(tvm.IRModule({"main": prim}))
    try:
        conv = sch.get_sblock(NCHW_ACC)
        pad = sch.get_sblock(NCHW_PAD)
    except schedule_error():   # not lowered in the tiled form (another target or shape)
        return None
    acc = sch.get(conv).writes[0].source
    if int(acc.shape[-1]) != tile.padded_width(shape.ow) or int(acc.shape[1]) % tile.oct:
        return None            # stages padded for another tile
    if shape.strides[1] == 1:       # phases make the copied region no rectangle: S > 1
        try:                        # keeps the bounds test in its copy (LLVM vectorizes it)
            sch.decompose_padding(pad, sch.get_loops(pad)[0])
        except schedule_error() as err:
            refused("conv2d (NCHW): decompose the padding into a fill and a copy", err)
    return _tile(sch, shape, tile).mod


def _tile(sch: Any, shape: ConvShape, tile: Tile) -> Any:
    """Steps 2 and 3 of the recipe on the rewritten kernel (and the padding blocks' loops);
    returns the schedule."""
    inline_blocks(sch, lambda name: name == "conv2d_nchw" or name.startswith("conv2d_pad"))
    conv = sch.get_sblock("conv2d_nchw")
    (epilogue,) = sch.get_consumers(conv)
    n, oc, oh, ow, rc, ry, rx = sch.get_loops(conv)
    oco, oci = sch.split(oc, [None, tile.oct])
    owo, owi = sch.split(ow, [None, tile.tw])
    sch.reorder(n, oco, oh, owo, rc, ry, rx, oci, owi)
    outer = sch.fuse(n, oco, oh, owo)
    if shape.macs >= PARALLEL_MIN:
        sch.parallel(outer)
    sch.unroll(oci)
    sch.vectorize(owi)
    sch.reverse_compute_at(epilogue, outer)
    sch.set_scope(conv, 0, "local")
    init = sch.decompose_reduction(conv, rc)
    sch.vectorize(sch.get_loops(init)[-1])
    loops = sch.get_loops(epilogue)
    try:
        sch.vectorize(loops[-1])
    except schedule_error() as err:   # a partial tile's predicate: a scalar write-back
        refused("conv2d (NCHW): vectorize the epilogue", err)
    return _schedule_pad(sch, shape)


def _schedule_pad(sch: Any, shape: ConvShape) -> Any:
    """The padding blocks: outer loops fused and ``parallel`` (for a large enough input),
    the column loop vectorized by TVM only with :data:`VECTORIZE_PAD` (else by LLVM)."""
    root = sch.get_sblock("root")
    for block in sch.get_child_blocks(root):
        if not sch.get(block).name_hint.startswith("conv2d_pad"):
            continue
        loops = sch.get_loops(block)
        outer = sch.fuse(*loops[:-1])
        if shape.n * shape.c * shape.h * shape.w >= PARALLEL_MIN:
            sch.parallel(outer)
        if VECTORIZE_PAD:
            sch.vectorize(loops[-1])
    return sch


@register_schedule("nn.conv2d", priority=90)
def _rule(prim: Any, info: KernelInfo) -> Any:
    return schedule_conv2d_nchw(prim, info)
