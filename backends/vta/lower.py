"""Lowering one int8 convolution (or dense) with its integer epilogue to a VTA instruction stream.

A :class:`ConvLayer` is the static description the partitioner (:mod:`backends.vta.partition`)
extracts: NCHW int8 data, OIHW int8 weights, strides and padding, and the epilogue as a list
of :class:`Step` s (per-channel add, full-tensor add through ACC, ALU op with an immediate).
``nn.dense`` is the 1x1 convolution of the data transposed to ``(1, K, N, 1)``.

Layouts (the host packs and unpacks; graph_pack's layouts):

* data NCHW -> ``(N/B, C/BI, H, W, B, BI)`` ("NCHW1n16c"); channels and batch are padded with
  zeros to multiples of BLOCK_IN and BATCH;
* weights OIHW -> ``(O/BO, I/BI, KH, KW, BO, BI)`` ("OIHW16o16i");
* per-channel operands -> ``(O/BO, B, BO)`` int32; full-tensor operands and the output ->
  ``(N/B, O/BO, OH, OW, B, BO)``.

Tiling: a tile is ``tco`` output-channel blocks (a divisor of O/BO) by ``th`` output rows of
one batch block.  Its input rows (``(th-1)*stride + KH``, all input-channel blocks, the width
with its padding) go to INP, its weights (``tco * IC/BI * KH * KW`` elements) to WGT, its
outputs and tensor operands to ACC.  Every buffer is split in two halves and tiles alternate
between them (double buffering); the tile shape is the largest that fits the halves and the
micro-op buffer (``uop`` kernels per half and per tile shape).  The micro-op kernel of the GEMM
enumerates (kw, channel block, output pixel) with the pixel innermost, so that no ACC row is
written by two micro-ops less than three apart (VTA's hazard rule; a tile of fewer than three
rows is padded with micro-ops into scratch rows, see :func:`_gemm_kernel`);
``iter_out`` runs over the input-channel blocks and ``iter_in`` over the kernel rows.  The
epilogue runs as ALU instructions of one micro-op each over the whole tile (``iter_out`` =
channel blocks, ``iter_in`` = pixels); the tile always ends with an ALU instruction before its
STORE (``SHR 0`` when the epilogue has none), as the hardware stores the ALU's output.

Tokens per tile ``t`` of ``T`` (half ``t % 2``): its first load pops ``g2l`` when ``t >= 2``,
its last load pushes ``l2g``; its first compute instruction pops ``l2g`` (and ``s2g`` when
``t >= 2``), its main GEMM pushes ``g2l`` when ``t + 2 < T``, its last ALU pushes ``g2s``;
its STORE pops ``g2s`` and pushes ``s2g``.  The stream ends with one compute no-op popping
each remaining ``s2g`` token, then FINISH.  A tile's WGT load is skipped when the same half
already holds those weights (tile ``t - 2`` of the same channel blocks).

The INP loads do padding up to 15 that is smaller than the kernel (so that no load is all
padding); larger padding is done on the host.  A layer that fits no
tile (e.g. a 7x7 stride-2 convolution of a 224-wide image) is not offloadable
(:func:`plan` returns ``None``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from backends.vta import isa
from backends.vta.config import Config
from backends.vta.simulator import Simulator

__all__ = ["Step", "ConvLayer", "Plan", "plan", "compile_layer", "run_layer", "PAGE"]

PAGE = 4096
#: A GEMM micro-op must not write an ACC row either of the previous two wrote.
HAZARD_DISTANCE = 2


@dataclass(frozen=True)
class Step:
    """One epilogue step on the int32 accumulator.

    ``kind`` is ``"imm"`` (ALU ``alu_opcode`` with ``imm``), ``"channel"`` (ALU ADD of a
    per-output-channel int32 operand, ``operand`` indexing the layer's extra inputs) or
    ``"tensor"`` (ALU ADD of an int32 operand of the output's shape, loaded through ACC) or
    ``"sign_round"`` (``x + imm + (x >> shift)`` through a scratch copy of the tile).
    """

    kind: str
    alu_opcode: int = isa.ALU_ADD
    imm: int = 0
    operand: int = -1
    shift: int = 0


@dataclass(frozen=True)
class ConvLayer:
    """A convolution NCHW x OIHW -> NCHW int32, its epilogue, and an int8 result."""

    n: int
    c: int
    h: int
    w: int
    o: int
    kh: int
    kw: int
    stride: tuple[int, int]
    padding: tuple[int, int, int, int]      # top, left, bottom, right
    steps: tuple[Step, ...]

    @property
    def oh(self) -> int:
        return (self.h + self.padding[0] + self.padding[2] - self.kh) // self.stride[0] + 1

    @property
    def ow(self) -> int:
        return (self.w + self.padding[1] + self.padding[3] - self.kw) // self.stride[1] + 1

    @property
    def macs(self) -> int:
        return self.n * self.o * self.oh * self.ow * self.c * self.kh * self.kw


@dataclass
class Plan:
    """The tiling of a layer for a configuration (see the module docstring)."""

    layer: ConvLayer
    config: Config
    nb: int                  # batch blocks
    icb: int
    ocb: int
    h: int                   # input height/width after host padding
    w: int
    pads: tuple[int, int, int, int]   # padding done by the loads
    host_pads: tuple[int, int, int, int]
    tco: int
    th: int
    n_channel: int
    n_tensor: int
    addresses: dict[str, int] = field(default_factory=dict)
    dram_bytes: int = 0


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def plan(layer: ConvLayer, config: Config) -> Plan | None:
    """The tiling of ``layer`` for ``config``, or ``None`` when no tile fits."""
    cfg = config
    nb = _ceil_div(layer.n, cfg.BATCH)
    icb = _ceil_div(layer.c, cfg.BLOCK_IN)
    ocb = _ceil_div(layer.o, cfg.BLOCK_OUT)
    # the loads pad up to 15, and never a whole tile (a load of no row would be a no-op)
    kernel = (layer.kh, layer.kw, layer.kh, layer.kw)
    host = tuple(p if p > 15 or p >= k else 0 for p, k in zip(layer.padding, kernel))
    pads = tuple(p - q for p, q in zip(layer.padding, host))
    h = layer.h + host[0] + host[2]
    w = layer.w + host[1] + host[3]
    wp = w + pads[1] + pads[3]
    oh, ow = layer.oh, layer.ow
    sh, _ = layer.stride
    n_channel = sum(1 for s in layer.steps if s.kind == "channel")
    n_tensor = sum(1 for s in layer.steps if s.kind in ("tensor", "sign_round"))
    inp_half = min(cfg.INP_BUFF_DEPTH, cfg.ACC_BUFF_DEPTH) // 2
    wgt_half = cfg.WGT_BUFF_DEPTH // 2
    acc_half = cfg.ACC_BUFF_DEPTH // 2
    uop_room = cfg.UOP_BUFF_DEPTH - 64
    limit = (1 << 14) - 1
    if ow > limit or icb > limit or layer.kh > limit:
        return None
    best: tuple[int, int] | None = None
    for tco in [d for d in range(ocb, 0, -1) if ocb % d == 0]:
        if tco * icb * layer.kh * layer.kw > wgt_half:
            continue
        for th in range(oh, 0, -1):
            rin = (th - 1) * sh + layer.kh
            p = th * ow
            if icb * rin * wp > inp_half or rin * wp >= (1 << cfg.LOG_INP_BUFF_DEPTH):
                continue
            # + HAZARD_DISTANCE scratch rows for the padding micro-ops of tiny tiles
            if tco * p * (1 + n_tensor) + tco * n_channel + HAZARD_DISTANCE > acc_half:
                continue
            if 4 * tco * layer.kw * p > uop_room or p > limit or tco > limit:
                continue
            if best is None or tco * th > best[0] * best[1]:
                best = (tco, th)
            break
    if best is None:
        return None
    return Plan(layer, cfg, nb, icb, ocb, h, w, pads, host, best[0], best[1],  # type: ignore
                n_channel, n_tensor)


class _Stream:
    """Instructions and micro-op kernels being emitted."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.insns: list[isa.Insn] = []
        self.uops: list[isa.Uop] = []
        self.kernels: dict[tuple, tuple[int, int]] = {}

    def kernel(self, key: tuple, uops: list[isa.Uop]) -> tuple[int, int]:
        if key not in self.kernels:
            start = len(self.uops)
            self.uops.extend(uops)
            self.kernels[key] = (start, len(self.uops))
        return self.kernels[key]


def compile_layer(p: Plan) -> tuple[list[isa.Insn], np.ndarray]:
    """The instruction stream of a planned layer and its micro-op words (``uint32``).

    DRAM addresses are those of ``p.addresses`` (set here: data, weights, channel and tensor
    operands, output, micro-ops), all 4 KiB aligned from ``PAGE``.
    """
    addr = _assign_addresses(p)
    s = _Stream(p.config)
    oh = p.layer.oh
    rows_per_tile = [min(p.th, oh - r) for r in range(0, oh, p.th)]
    tiles = [(n, co, r0, th) for n in range(p.nb) for co in range(0, p.ocb, p.tco)
             for r0, th in zip(range(0, oh, p.th), rows_per_tile)]
    held_wgt: dict[int, int] = {}
    for t, tile in enumerate(tiles):
        _emit_tile(p, s, t, len(tiles), tile, held_wgt)
    return _finish_stream(p, s, addr, len(tiles))


def _assign_addresses(p: Plan) -> int:
    """Lay out the layer's DRAM operands page-aligned from ``PAGE`` into ``p.addresses``;
    returns the first free address after them (where the micro-ops go)."""
    cfg, layer = p.config, p.layer
    B, BI, BO = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    oh, ow = layer.oh, layer.ow
    sizes = {"data": p.nb * p.icb * p.h * p.w * B * BI,
             "weight": p.ocb * p.icb * layer.kh * layer.kw * BO * BI,
             "output": p.nb * p.ocb * oh * ow * B * BO}
    for i in range(p.n_channel):
        sizes[f"channel{i}"] = p.ocb * B * BO * 4
    for i in range(p.n_tensor):
        sizes[f"tensor{i}"] = p.nb * p.ocb * oh * ow * B * BO * 4
    addr = PAGE
    for name, size in sizes.items():
        p.addresses[name] = addr
        addr += _ceil_div(size, PAGE) * PAGE
    return addr


def _emit_tile(p: Plan, s: _Stream, t: int, total: int, tile: tuple[int, int, int, int],
               held_wgt: dict[int, int]) -> None:
    """Emit the load, compute and store instructions of tile number ``t`` (of ``total``),
    double-buffered: even tiles use the lower halves of the buffers, odd tiles the upper."""
    cfg, layer = p.config, p.layer
    n, co, r0, th = tile
    oh, ow = layer.oh, layer.ow
    half = t % 2
    npix = th * ow
    rin = (th - 1) * layer.stride[0] + layer.kh
    inp_base = half * (min(cfg.INP_BUFF_DEPTH, cfg.ACC_BUFF_DEPTH) // 2)
    wgt_base = half * (cfg.WGT_BUFF_DEPTH // 2)
    acc_base = half * (cfg.ACC_BUFF_DEPTH // 2)
    loads = _tile_loads(p, tile, rin, inp_base, wgt_base, held_wgt.get(half) != co)
    held_wgt[half] = co
    if t >= 2:
        loads[0].pop_next_dep = 1
    loads[-1].push_next_dep = 1
    s.insns.extend(loads)
    compute, regions, scratch = _acc_operand_loads(p, tile, acc_base)
    one = s.kernel(("tile", acc_base), [isa.Uop(acc_base, 0, 0)])
    compute.append(isa.GemmInsn(reset_reg=1, uop_bgn=one[0], uop_end=one[1],
                                iter_out=p.tco, iter_in=npix, dst_factor_out=npix,
                                dst_factor_in=1))
    g = s.kernel(("gemm", half, th), _gemm_kernel(p, acc_base, inp_base, wgt_base, npix,
                                                  scratch=scratch))
    wp = p.w + p.pads[1] + p.pads[3]
    main = isa.GemmInsn(uop_bgn=g[0], uop_end=g[1], iter_out=p.icb, iter_in=layer.kh,
                        src_factor_out=rin * wp, src_factor_in=wp,
                        wgt_factor_out=layer.kh * layer.kw, wgt_factor_in=layer.kw)
    if t + 2 < total:
        main.push_prev_dep = 1
    compute.append(main)
    alus = _tile_alus(p, s, regions, acc_base, one, npix)
    alus[-1].push_next_dep = 1
    compute.extend(alus)
    compute[0].pop_prev_dep = 1
    if t >= 2:
        compute[0].pop_next_dep = 1
    s.insns.extend(compute)
    s.insns.append(isa.MemInsn(
        opcode=isa.OP_STORE, memory_type=isa.MEM_OUT, sram_base=acc_base,
        dram_base=p.addresses["output"] // cfg.OUT_ELEM_BYTES
        + ((n * p.ocb + co) * oh + r0) * ow,
        y_size=p.tco, x_size=npix, x_stride=oh * ow, pop_prev_dep=1, push_prev_dep=1))


def _tile_loads(p: Plan, tile: tuple[int, int, int, int], rin: int, inp_base: int,
                wgt_base: int, load_weights: bool) -> list[isa.Insn]:
    """The load module's instructions of a tile: its weight block (unless that half of the
    weight buffer already holds it) and ``rin`` padded input rows per input-channel block."""
    cfg, layer = p.config, p.layer
    n, co, r0, _ = tile
    kh, kw = layer.kh, layer.kw
    wp = p.w + p.pads[1] + p.pads[3]
    loads: list[isa.Insn] = []
    if load_weights:
        count = p.tco * p.icb * kh * kw
        loads.append(isa.MemInsn(opcode=isa.OP_LOAD, memory_type=isa.MEM_WGT,
                                 sram_base=wgt_base,
                                 dram_base=p.addresses["weight"] // cfg.WGT_ELEM_BYTES
                                 + co * p.icb * kh * kw,
                                 y_size=1, x_size=count, x_stride=count))
    top = r0 * layer.stride[0] - p.pads[0]
    ypad0 = max(0, -top)
    ypad1 = max(0, top + rin - p.h)
    ysize = rin - ypad0 - ypad1
    for ic in range(p.icb):
        base = p.addresses["data"] // cfg.INP_ELEM_BYTES + ((n * p.icb + ic) * p.h
                                                              + max(top, 0)) * p.w
        loads.append(isa.MemInsn(opcode=isa.OP_LOAD, memory_type=isa.MEM_INP,
                                 sram_base=inp_base + ic * rin * wp, dram_base=base,
                                 y_size=ysize, x_size=p.w if ysize else 0, x_stride=p.w,
                                 y_pad_0=ypad0, y_pad_1=ypad1, x_pad_0=p.pads[1],
                                 x_pad_1=p.pads[3]))
    return loads


def _acc_operand_loads(p: Plan, tile: tuple[int, int, int, int],
                       acc_base: int) -> tuple[list[isa.Insn], list[int], int]:
    """Loads of a tile's per-channel and per-pixel epilogue operands into the accumulator
    buffer above the tile's own rows.  Returns the instructions, each step's operand region
    (``-1`` for immediate steps) and the first free accumulator row (GEMM scratch)."""
    cfg, layer = p.config, p.layer
    n, co, r0, th = tile
    oh, ow = layer.oh, layer.ow
    tco, npix = p.tco, th * ow
    compute: list[isa.Insn] = []
    regions: list[int] = []
    region = acc_base + tco * npix
    n_ch = n_te = 0
    for step in layer.steps:
        if step.kind == "channel":
            compute.append(isa.MemInsn(
                opcode=isa.OP_LOAD, memory_type=isa.MEM_ACC, sram_base=region,
                dram_base=p.addresses[f"channel{n_ch}"] // cfg.ACC_ELEM_BYTES + co,
                y_size=1, x_size=tco, x_stride=tco))
            regions.append(region)
            region += tco
            n_ch += 1
        elif step.kind == "tensor":
            compute.append(isa.MemInsn(
                opcode=isa.OP_LOAD, memory_type=isa.MEM_ACC, sram_base=region,
                dram_base=p.addresses[f"tensor{n_te}"] // cfg.ACC_ELEM_BYTES
                + ((n * p.ocb + co) * oh + r0) * ow,
                y_size=tco, x_size=npix, x_stride=oh * ow))
            regions.append(region)
            region += tco * npix
            n_te += 1
        elif step.kind == "sign_round":
            regions.append(region)
            region += tco * npix
        else:
            regions.append(-1)
    return compute, regions, region


def _tile_alus(p: Plan, s: _Stream, regions: list[int], acc_base: int,
               one: tuple[int, int], npix: int) -> list[isa.GemmInsn | isa.AluInsn]:
    """The epilogue of a tile: one or more ALU instructions per layer step (an identity
    shift when there are none, so the store always has an instruction to wait on)."""
    tco = p.tco
    alus: list[isa.GemmInsn | isa.AluInsn] = []
    for step, src in zip(p.layer.steps, regions):
        if step.kind == "imm":
            alus.append(isa.AluInsn(alu_opcode=step.alu_opcode, use_imm=1, imm=step.imm,
                                    uop_bgn=one[0], uop_end=one[1], iter_out=tco,
                                    iter_in=npix, dst_factor_out=npix, dst_factor_in=1))
        elif step.kind == "sign_round":
            # scratch = 0; scratch += x; scratch >>= shift; x += imm; x += scratch
            whole = {"iter_out": tco, "iter_in": npix, "dst_factor_out": npix,
                     "dst_factor_in": 1}
            copy = {**whole, "src_factor_out": npix, "src_factor_in": 1}
            zero = s.kernel(("tile", src), [isa.Uop(src, 0, 0)])
            into = s.kernel(("pair", src, acc_base), [isa.Uop(src, acc_base, 0)])
            back = s.kernel(("pair", acc_base, src), [isa.Uop(acc_base, src, 0)])
            alus.append(isa.GemmInsn(reset_reg=1, uop_bgn=zero[0], uop_end=zero[1],
                                     **whole))
            alus.append(isa.AluInsn(alu_opcode=isa.ALU_ADD, uop_bgn=into[0],
                                    uop_end=into[1], **copy))
            alus.append(isa.AluInsn(alu_opcode=isa.ALU_SHR, use_imm=1, imm=step.shift,
                                    uop_bgn=zero[0], uop_end=zero[1], **whole))
            alus.append(isa.AluInsn(alu_opcode=isa.ALU_ADD, use_imm=1, imm=step.imm,
                                    uop_bgn=one[0], uop_end=one[1], **whole))
            alus.append(isa.AluInsn(alu_opcode=isa.ALU_ADD, uop_bgn=back[0],
                                    uop_end=back[1], **copy))
        else:
            k2 = s.kernel(("pair", acc_base, src), [isa.Uop(acc_base, src, 0)])
            per_pixel = 1 if step.kind == "tensor" else 0
            alus.append(isa.AluInsn(alu_opcode=isa.ALU_ADD, uop_bgn=k2[0], uop_end=k2[1],
                                    iter_out=tco, iter_in=npix, dst_factor_out=npix,
                                    dst_factor_in=1,
                                    src_factor_out=npix if per_pixel else 1,
                                    src_factor_in=per_pixel))
    if not alus:
        alus.append(isa.AluInsn(alu_opcode=isa.ALU_SHR, use_imm=1, imm=0, uop_bgn=one[0],
                                uop_end=one[1], iter_out=tco, iter_in=npix,
                                dst_factor_out=npix, dst_factor_in=1))
    return alus


def _finish_stream(p: Plan, s: _Stream, addr: int,
                   total: int) -> tuple[list[isa.Insn], np.ndarray]:
    """Close the stream of ``total`` tiles (drain the dependence tokens, FINISH), encode the
    micro-ops, place them at ``addr`` and prepend the one load of all of them."""
    cfg = p.config
    for _ in range(min(total, 2)):
        s.insns.append(isa.MemInsn(opcode=isa.OP_LOAD, memory_type=isa.MEM_UOP,
                                   pop_next_dep=1))
    s.insns.append(isa.FinishInsn())
    # the micro-ops are loaded once, first
    words = np.array([int.from_bytes(isa.encode_uop(u, cfg), "little") for u in s.uops],
                     dtype=np.uint32)
    if words.size > cfg.UOP_BUFF_DEPTH:
        raise ValueError("micro-op kernels exceed the UOP buffer")
    p.addresses["uop"] = addr
    p.dram_bytes = addr + _ceil_div(words.size * 4, PAGE) * PAGE + PAGE
    head = isa.MemInsn(opcode=isa.OP_LOAD, memory_type=isa.MEM_UOP, sram_base=0,
                       dram_base=addr // 4, y_size=1, x_size=int(words.size),
                       x_stride=int(words.size))
    return [head] + s.insns, words


def _gemm_kernel(p: Plan, acc_base: int, inp_base: int, wgt_base: int, npix: int,
                 scratch: int) -> list[isa.Uop]:
    """The main GEMM's micro-ops of a tile: for each kernel column ``k``, each output-channel
    block ``c``, each output pixel (innermost).  Every row of the tile (``tco * npix`` of
    them) is written once per ``k`` block, and the blocks repeat with the same period across
    ``iter_in``/``iter_out``, so a row is written again only ``tco * npix`` micro-ops later:
    with 3 or more rows that keeps the hazard rule (no ACC row written by either of the two
    micro-ops before).  A tile of 1 or 2 rows gets padding micro-ops that accumulate into
    scratch rows (``scratch``, ``scratch + 1``: past the tile's regions, never stored)."""
    layer = p.layer
    sh, sw = layer.stride
    kh, kw = layer.kh, layer.kw
    ow = layer.ow
    wp = p.w + p.pads[1] + p.pads[3]
    rows = p.tco * npix
    uops: list[isa.Uop] = []
    for k in range(kw):
        for c in range(p.tco):
            for pix in range(npix):
                uops.append(isa.Uop(acc_base + c * npix + pix,
                                    inp_base + (pix // ow) * sh * wp + (pix % ow) * sw + k,
                                    wgt_base + c * p.icb * kh * kw + k))
        for j in range(max(0, HAZARD_DISTANCE + 1 - rows)):
            last = uops[-1]
            uops.append(isa.Uop(scratch + j, last.src_idx, last.wgt_idx))
    return uops


# -- host side: packing, running, unpacking ---------------------------------------------------

def pack_data(x: np.ndarray, p: Plan) -> np.ndarray:
    """NCHW int8 -> (N/B, C/BI, H, W, B, BI), zero-padded (batch, channels, host padding)."""
    cfg = p.config
    n, c = x.shape[:2]
    pt, pl, pb, pr = p.host_pads
    full = np.zeros((p.nb * cfg.BATCH, p.icb * cfg.BLOCK_IN, p.h, p.w), np.int8)
    full[:n, :c, pt:pt + x.shape[2], pl:pl + x.shape[3]] = x
    return full.reshape(p.nb, cfg.BATCH, p.icb, cfg.BLOCK_IN, p.h, p.w).transpose(
        0, 2, 4, 5, 1, 3)


def pack_weight(wt: np.ndarray, p: Plan) -> np.ndarray:
    """OIHW int8 -> (O/BO, I/BI, KH, KW, BO, BI), zero-padded channels."""
    cfg = p.config
    o, c, kh, kw = wt.shape
    full = np.zeros((p.ocb * cfg.BLOCK_OUT, p.icb * cfg.BLOCK_IN, kh, kw), np.int8)
    full[:o, :c] = wt
    return full.reshape(p.ocb, cfg.BLOCK_OUT, p.icb, cfg.BLOCK_IN, kh, kw).transpose(
        0, 2, 4, 5, 1, 3)


def pack_channel(v: np.ndarray, p: Plan) -> np.ndarray:
    """A per-channel int32 vector -> (O/BO, B, BO), broadcast over the batch."""
    cfg = p.config
    full: np.ndarray = np.zeros(p.ocb * cfg.BLOCK_OUT, np.int32)
    full[:v.size] = v
    blocks = full.reshape(p.ocb, 1, cfg.BLOCK_OUT)
    return np.broadcast_to(blocks, (p.ocb, cfg.BATCH, cfg.BLOCK_OUT))


def pack_output_like(v: np.ndarray, p: Plan, dtype: type) -> np.ndarray:
    """NCHW (output-shaped) -> (N/B, O/BO, OH, OW, B, BO)."""
    cfg = p.config
    n, o, oh, ow = v.shape
    full: np.ndarray = np.zeros((p.nb * cfg.BATCH, p.ocb * cfg.BLOCK_OUT, oh, ow), dtype)
    full[:n, :o] = v
    return full.reshape(p.nb, cfg.BATCH, p.ocb, cfg.BLOCK_OUT, oh, ow).transpose(
        0, 2, 4, 5, 1, 3)


def run_layer(p: Plan, stream: bytes, words: np.ndarray, data: np.ndarray,
              weight: np.ndarray | None, operands: list[np.ndarray], sim: Simulator,
              schedule: str = "serial", seed: int = 0,
              packed_weight: np.ndarray | None = None) -> tuple[np.ndarray, dict[str, int]]:
    """Run a compiled layer: pack into ``sim.dram``, run, unpack the int8 NCHW output.

    ``operands`` are the epilogue's channel operands (1-D, length O) and tensor operands
    (NCHW int32, the output's shape), in step order.  ``packed_weight`` (``pack_weight``'s
    result, packed once at build time) replaces ``weight``.
    """
    cfg, layer = p.config, p.layer
    if sim.dram.size < p.dram_bytes:
        raise ValueError(f"the layer needs {p.dram_bytes} bytes of DRAM, the simulator has "
                         f"{sim.dram.size}")

    def put(name: str, array: np.ndarray) -> None:
        raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        start = p.addresses[name]
        sim.dram[start:start + raw.size] = raw

    put("data", pack_data(data, p))
    if packed_weight is None:
        assert weight is not None
        packed_weight = pack_weight(weight, p)
    put("weight", packed_weight)
    n_ch = n_te = 0
    for step, value in zip([s for s in layer.steps if s.kind in ("channel", "tensor")], operands):
        if step.kind == "channel":
            put(f"channel{n_ch}", pack_channel(value.astype(np.int32), p))
            n_ch += 1
        else:
            put(f"tensor{n_te}", pack_output_like(value.astype(np.int32), p, np.int32))
            n_te += 1
    put("uop", words)
    counters = sim.run(stream, schedule=schedule, seed=seed)
    oh, ow = layer.oh, layer.ow
    size = p.nb * p.ocb * oh * ow * cfg.BATCH * cfg.BLOCK_OUT
    start = p.addresses["output"]
    packed = sim.dram[start:start + size].view(np.int8).reshape(
        p.nb, p.ocb, oh, ow, cfg.BATCH, cfg.BLOCK_OUT)
    out = packed.transpose(0, 4, 1, 5, 2, 3).reshape(p.nb * cfg.BATCH, p.ocb * cfg.BLOCK_OUT,
                                                     oh, ow)
    return np.ascontiguousarray(out[:layer.n, :layer.o]), counters
