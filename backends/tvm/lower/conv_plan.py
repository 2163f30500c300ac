"""The plan of a direct convolution that its lowering and its schedule share: the shape
record, the register tile chosen from the :class:`~backends.tvm.target.Target`, and the names
of the blocks the lowering makes and the schedules look up.

An ``NCHW``/``OIHW`` float32 convolution is lowered (``backends.tvm.lower.nn``) in three
stages laid out for a register tile of ``Tile.oct`` output channels × ``Tile.tw`` output
columns (``backends.tvm.sched.conv2d_nchw`` schedules them):

* :data:`NCHW_PAD` — the zero-padded data, ``(N, C, Hp, S, Q)`` for a stride ``S`` along the
  width: padded column ``q * S + p`` at ``[..., p, q]`` (phases), so that output column ``ow``
  of tap ``rx`` reads column ``ow + rx*d // S`` of phase ``rx*d % S`` — consecutive output
  columns read consecutive memory at every stride (``S = 1``: the plain padded image);
* :data:`NCHW_ACC` — the convolution of the padded data, no bounds test left, over the output
  width rounded up to the tile (``Tile.padded_width``: the extra columns are computed and never
  written), summing ``rc, ry, rx``;
* :data:`CONV` — the copy of the valid columns into the result, which a fused epilogue reads.

The tile is decided here, at lowering time, because it fixes the padded width of the stages;
the schedule recomputes it from the same shape and target and declines a kernel whose stages
do not fit it. The blocked layouts' staged input is :data:`CONV_PAD`.
"""

from __future__ import annotations

from dataclasses import dataclass

from backends.tvm.target import Target

__all__ = ["CONV", "CONV_PAD", "NCHW_ACC", "NCHW_PAD", "ConvShape", "Tile", "accumulators",
           "choose_tile", "pad_extents", "tile_cost"]

CONV = "conv2d"
"""The convolution's result stage (every layout)."""

CONV_PAD = "conv2d_pad"
"""The staged (zero-padded, channels-last) input of a convolution in a blocked layout."""

NCHW_PAD = "conv2d_pad_w"
"""The zero-padded, width-phased data of an ``NCHW`` convolution (a ``conv2d_pad`` stage)."""

NCHW_ACC = "conv2d_nchw"
"""The ``NCHW`` convolution over the padded data and the tile-padded output width."""

RESERVED_REGISTERS = 4
"""Vector registers a tile leaves for the input vectors and a broadcast weight: the tile has
at most ``target.registers - 4`` accumulators (12 of AVX2's 16)."""

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


def pad_extents(shape: ConvShape, tile: Tile) -> tuple[int, int, int]:
    """``(Hp, S, Q)`` of :data:`NCHW_PAD`: the padded rows the convolution reads, the width
    stride (phases) and the columns per phase covering every column the tile-padded
    convolution reads."""
    sh, sw = shape.strides
    dh, dw = shape.dilation
    hp = (shape.oh - 1) * sh + (shape.kh - 1) * dh + 1
    wp = (tile.padded_width(shape.ow) - 1) * sw + (shape.kw - 1) * dw + 1
    return hp, sw, -(-wp // sw)
