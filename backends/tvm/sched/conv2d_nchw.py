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

1. **Rewrite** (TVMScript in, TVMScript out; :func:`rewrite_conv`): the lowering's
   ``conv2d`` block (the zero padding an ``if_then_else`` around each load) becomes

   * a zero-padded copy of the data, ``(N, C, Hp, S, Q)`` for a stride ``S`` along the
     width: padded column ``q * S + p`` at ``[..., p, q]`` (phases), so that output column
     ``ow`` of tap ``rx`` reads column ``ow + rx*d // S`` of phase ``rx*d % S`` —
     consecutive output columns read consecutive memory at every stride (``S = 1``: the
     plain padded image). Block ``conv2d_pad_fill`` writes zeros, then one block per phase
     ``conv2d_pad_p{k}`` copies the data's columns of that phase over the rectangle where
     they land: no condition anywhere (a vector loop over a condition that depends on the
     lane is what TVM scalarizes). The copy costs one pass over the input, under 1/``OC``
     of the convolution's work; its loops are left to LLVM's vectorizer (TVM's vectorizer
     on a 224-wide row cost seconds of compilation and ran no faster);
   * ``conv2d_nchw``: the convolution of the padded data, no condition left, over an output
     width rounded up to the register tile (``OWp``, the extra columns computed into the
     accumulator and never written), summing ``rc, ry, rx`` in the lowering's order;
   * ``conv2d``: the copy of its ``OW`` valid columns into the lowering's own buffer, which
     the fused epilogue (bias, residual ``add``, ``relu``, ``clip``, ...) reads as before.

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

Anything else — not float32, not ``NCHW``/``OIHW``, a block structure the rewrite does not
recognize, TVMScript that does not parse back — gets ``None`` (the next rule or the default
recipe), so this rule can make a kernel slower than it could be, never wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from backends.tvm.sched import KernelInfo, register_schedule
from backends.tvm.sched.default import inline_blocks, refused, schedule_error
from backends.tvm.target import Target

__all__ = ["ConvShape", "Tile", "accumulators", "choose_tile", "rewrite_conv",
           "schedule_conv2d_nchw"]

RESERVED_REGISTERS = 4
"""Vector registers a tile leaves for the input vectors and a broadcast weight: the tile has
at most ``target.registers - 4`` accumulators (12 of AVX2's 16)."""

PARALLEL_MIN = 1 << 16
"""Multiply-adds below which a kernel stays single-threaded (waking TVM's thread pool costs
microseconds)."""

VECTORIZE_PAD = False
"""Let TVM vectorize the padding copies' column loops (off: LLVM's loop vectorizer does it,
as fast here, while a 224-lane TVM vector cost 2 s of compilation)."""

WIDTH_MULTIPLES = (1, 2, 4)
"""The output-column tiles considered, in vectors of ``target.lanes`` (AVX2: 8, 16 and 32
columns; a 24-lane vector measured 5-10x slower than 8 or 16 lanes here: LLVM does not split
it into whole registers)."""


def accumulators(target: Target) -> int:
    """The most accumulator registers of a tile on ``target`` (:data:`RESERVED_REGISTERS`)."""
    return max(1, target.registers - RESERVED_REGISTERS)


@dataclass(frozen=True)
class ConvShape:
    """The shapes and attributes of one NCHW/OIHW convolution (concrete ints)."""

    n: int
    c: int
    h: int
    w: int
    oc: int
    cg: int
    kh: int
    kw: int
    oh: int
    ow: int
    strides: tuple[int, int]
    dilation: tuple[int, int]
    pad_top: int
    pad_left: int
    groups: int

    @property
    def depthwise(self) -> bool:
        return self.groups > 1 and self.cg == 1

    @property
    def macs(self) -> int:
        return self.n * self.oc * self.oh * self.ow * self.cg * self.kh * self.kw


@dataclass(frozen=True)
class Tile:
    """A register tile: ``oct`` output channels × ``tw`` output columns."""

    oct: int
    tw: int

    def padded_width(self, ow: int) -> int:
        return -(-ow // self.tw) * self.tw


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def tile_cost(shape: ConvShape, tile: Tile, target: Target | None = None) -> float:
    """Estimated cycles per useful multiply-add lane of ``tile`` on ``target`` (default the
    host; lower is better): the largest of the FMAs over ``target.fma_per_cycle``, the loads
    over ``target.loads_per_cycle`` and ``target.fma_latency``."""
    cpu = target or Target.host()
    vectors = max(1, tile.tw // cpu.lanes)
    acc = tile.oct * vectors
    loads = tile.oct + (acc if shape.depthwise else vectors)
    cycles = max(acc / cpu.fma_per_cycle, loads / cpu.loads_per_cycle, cpu.fma_latency)
    useful = tile.oct * tile.tw * shape.ow / tile.padded_width(shape.ow)
    return cycles / useful


def choose_tile(shape: ConvShape, target: Target | None = None) -> Tile:
    """The register tile of a convolution on ``target`` (default the host; see the module
    docstring's cost model): among output-column tiles of :data:`WIDTH_MULTIPLES` vectors
    and channel tiles that divide the output channels with at most :func:`accumulators`
    accumulators, the cheapest per useful lane; on a tie the larger tile."""
    cpu = target or Target.host()
    budget = accumulators(cpu)
    best: tuple[float, int, Tile] | None = None
    for vectors in WIDTH_MULTIPLES:
        tw = vectors * cpu.lanes
        fitting = [d for d in _divisors(shape.oc) if d * vectors <= budget]
        if not fitting:
            continue
        tile = Tile(max(fitting), tw)
        key = (tile_cost(shape, tile, cpu), -tile.oct * tile.tw, tile)
        if best is None or key[:2] < best[:2]:
            best = key
    return best[2] if best is not None else Tile(1, cpu.lanes)


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


# --- the rewrite ----------------------------------------------------------------------------

_SBLOCK_CONV = 'T.sblock("conv2d")'

_OWN_NAMES = frozenset(
    {"n", "c", "h", "k", "q", "oc", "oh", "ow", "rc", "ry", "rx"}
    | {f"v_{x}" for x in ("n", "c", "h", "k", "q", "oc", "oh", "ow", "rc", "ry", "rx")})
"""The loop and block variables of the blocks :func:`rewrite_conv` writes."""


def rewrite_conv(script: str, shape: ConvShape, tile: Tile, data: str, weight: str,
                 out: str) -> str | None:
    """The TVMScript of the kernel with its ``conv2d`` block replaced by the padded copy, the
    condition-free convolution over the padded width and the copy of the valid columns (see
    the module docstring), or None when the script is not shaped as expected.

    Args:
        script: ``prim.script()`` of the lowered kernel.
        shape, tile: the convolution and its register tile.
        data, weight, out: the names of the convolution's data, weight and output buffers.
    """
    lines = script.split("\n")
    at = [i for i, line in enumerate(lines) if line.strip() == f"with {_SBLOCK_CONV}:"]
    if len(at) != 1 or at[0] == 0:
        return None
    block_line = at[0]
    head = lines[block_line - 1]
    indent = len(head) - len(head.lstrip())
    if not head.lstrip().startswith("for ") or indent < 4 \
            or len(lines[block_line]) - len(lines[block_line].lstrip()) != indent + 4:
        return None
    end = block_line + 1
    while end < len(lines) and (not lines[end].strip()
                                or len(lines[end]) - len(lines[end].lstrip()) > indent):
        end += 1
    rest = "\n".join([*lines[:block_line - 1], *lines[end:]])
    names = set(re.findall(r"\b\w+\b", rest))
    if names & _OWN_NAMES:
        return None                 # a buffer named like one of our loop variables
    pad, acc = _fresh("conv2d_pad", names), _fresh("conv2d_acc", names)
    pad_dims, pad_text = _pad_block(shape, tile, data, pad)
    conv_text = _conv_block(shape, tile, pad, weight, acc)
    copy_text = _copy_block(shape, acc, out)
    owp = tile.padded_width(shape.ow)
    allocs = [f"{pad} = T.sblock_alloc_buffer(({', '.join(map(str, pad_dims))},))",
              f"{acc} = T.sblock_alloc_buffer(({shape.n}, {shape.oc}, {shape.oh}, {owp}))"]
    new = [*allocs, *pad_text, *conv_text, *copy_text]
    prefix = " " * indent
    return "\n".join([*lines[:block_line - 1], *(prefix + s for s in new), *lines[end:]])


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _pad_extents(shape: ConvShape, tile: Tile) -> tuple[int, int, int]:
    """``(Hp, S, Q)``: the padded rows the convolution reads, the width stride (phases) and
    the columns per phase covering every column the padded-width convolution reads."""
    sh, sw = shape.strides
    dh, dw = shape.dilation
    hp = (shape.oh - 1) * sh + (shape.kh - 1) * dh + 1
    wp = (tile.padded_width(shape.ow) - 1) * sw + (shape.kw - 1) * dw + 1
    return hp, sw, -(-wp // sw)


def _pad_block(shape: ConvShape, tile: Tile, data: str, pad: str
               ) -> tuple[tuple[int, ...], list[str]]:
    """The padded copy ``(N, C, Hp, S, Q)``: a block ``conv2d_pad_fill`` writing zeros
    everywhere, then per phase ``k`` a block ``conv2d_pad_p{k}`` copying the data's columns
    of that phase over the (rectangular) range of rows and columns where they land — no
    condition anywhere, so every loop vectorizes."""
    hp, s, q = _pad_extents(shape, tile)
    pt, pl = shape.pad_top, shape.pad_left
    dims = (shape.n, shape.c, hp, s, q)
    text = [f"for n, c, h, k, q in T.grid({', '.join(map(str, dims))}):",
            '    with T.sblock("conv2d_pad_fill"):',
            '        v_n, v_c, v_h, v_k, v_q = T.axis.remap("SSSSS", [n, c, h, k, q])',
            f"        {pad}[v_n, v_c, v_h, v_k, v_q] = T.float32(0.0)"]
    rows = min(shape.h, hp - pt)
    for phase in range(s):
        # padded column q * s + phase holds data column q * s + phase - pl when in range
        first = max(0, -(-(pl - phase) // s))
        last = min(q, -(-(shape.w + pl - phase) // s))
        if rows <= 0 or last <= first:
            continue
        column = f"(v_q + {first}) * {s} + {phase - pl}"
        text += [f"for n, c, h, q in T.grid({shape.n}, {shape.c}, {rows}, {last - first}):",
                 f'    with T.sblock("conv2d_pad_p{phase}"):',
                 '        v_n, v_c, v_h, v_q = T.axis.remap("SSSS", [n, c, h, q])',
                 f"        {pad}[v_n, v_c, v_h + {pt}, {phase}, v_q + {first}] = "
                 f"{data}[v_n, v_c, v_h, {column}]"]
    return dims, text


def _conv_block(shape: ConvShape, tile: Tile, pad: str, weight: str, acc: str) -> list[str]:
    sh, sw = shape.strides
    dh, dw = shape.dilation
    og = shape.oc // shape.groups
    channel = f"v_oc // {og} * {shape.cg} + v_rc" if shape.groups > 1 else "v_rc"
    row = f"v_oh * {sh} + v_ry * {dh}"
    if sw == 1:
        x = f"{pad}[v_n, {channel}, {row}, 0, v_ow + v_rx * {dw}]"
    else:
        x = f"{pad}[v_n, {channel}, {row}, v_rx * {dw} % {sw}, v_ow + v_rx * {dw} // {sw}]"
    out = f"{acc}[v_n, v_oc, v_oh, v_ow]"
    grid = (shape.n, shape.oc, shape.oh, tile.padded_width(shape.ow), shape.cg, shape.kh,
            shape.kw)
    return [f"for n, oc, oh, ow, rc, ry, rx in T.grid({', '.join(map(str, grid))}):",
            '    with T.sblock("conv2d_nchw"):',
            "        v_n, v_oc, v_oh, v_ow, v_rc, v_ry, v_rx = T.axis.remap("
            '"SSSSRRR", [n, oc, oh, ow, rc, ry, rx])',
            "        with T.init():",
            f"            {out} = T.float32(0.0)",
            f"        {out} = {out} + {x} * {weight}[v_oc, v_rc, v_ry, v_rx]"]


def _copy_block(shape: ConvShape, acc: str, out: str) -> list[str]:
    grid = (shape.n, shape.oc, shape.oh, shape.ow)
    return [f"for n, oc, oh, ow in T.grid({', '.join(map(str, grid))}):",
            f"    with {_SBLOCK_CONV}:",
            '        v_n, v_oc, v_oh, v_ow = T.axis.remap("SSSS", [n, oc, oh, ow])',
            f"        {out}[v_n, v_oc, v_oh, v_ow] = {acc}[v_n, v_oc, v_oh, v_ow]"]


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
        conv = sch.get_sblock("conv2d")
    except schedule_error():   # no reduction block (an empty convolution)
        return None
    stmt = sch.get(conv)
    buffers = [r.source for r in stmt.reads]
    if len(buffers) != 2 or len(stmt.writes) != 1 or len(stmt.iter_vars) != 7:
        return None
    data, weight, out = buffers[0], buffers[1], stmt.writes[0].source
    want = [(shape.n, shape.c, shape.h, shape.w), (shape.oc, shape.cg, shape.kh, shape.kw),
            (shape.n, shape.oc, shape.oh, shape.ow)]
    if [tuple(int(d) for d in b.shape) for b in (data, weight, out)] != want \
            or any(str(b.dtype) != "float32" for b in (data, weight, out)):
        return None
    text = rewrite_conv(prim.script(), shape, tile, data.name, weight.name, out.name)
    if text is None:
        return None
    rewritten = tvm.script.from_source(text)
    for key in ("global_symbol",):
        if prim.attrs is not None and key in prim.attrs:
            rewritten = rewritten.with_attr(key, prim.attrs[key])
    if len(rewritten.params) != len(prim.params):
        return None
    sch = s_tir.Schedule(tvm.IRModule({"main": rewritten}))
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
