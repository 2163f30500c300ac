"""Schedules of ``nn.dense`` kernels: streaming GEMVs at batch ≤ 4, a register-tiled GEMM above.

The lowering (:func:`backends.tvm.lower.nn._dense`) already shapes the computation for one of
the recipes here; the rule recognizes the form by its block names:

* **Packed GEMV** (``keep_dense_gemv``: the weight is a constant of the kernel, packed at
  build time into tiles ``[N / T, K, T]``, :func:`backends.tvm.lower.nn.gemv_tile`): the tile
  loop runs over the ``T`` outputs of a tile (5 vectors of 8 lanes for the LSTM's 2600
  outputs on AVX2); under it, ``k`` walks the tile's contiguous run of ``K * T`` weights, each
  step one broadcast of ``x[k]`` times ``T / L`` whole vectors into as many accumulators
  (``cache_write`` to registers: the row and block loops unrolled, the lanes vectorized), so
  there is no horizontal sum and no ``K % L`` tail; the accumulators are written back per
  tile, and ``dense`` with its fused elementwise epilogue (bias, gates) is one vectorized
  pass after the tiles. The tile loop is ``parallel`` when the weight does not fit a core's
  L2 cache (:func:`gemv_parallel`). Measured on this machine (AMD EPYC Zen 3, AVX2, one
  thread, 2600×650 float32, same process, interleaved, quietest run): 115 µs (58 GB/s)
  against 187 µs for the row-streaming GEMV below and 151 µs for numpy's ``x @ W.T``
  (OpenBLAS, one thread).
* **GEMV** (``keep_dense_partial`` + ``dense``: a weight computed at run time; at most
  ``GEMV_MAX_ROWS`` rows): the weight is read once, row by row in its own layout.  The
  output columns are tiled by ``jb`` (4, 2 or 1 rows of the weight at once); under a tile,
  the partial sums ``[rows, jb, L]`` live in a local buffer (registers: the row and column
  loops unrolled, the ``L`` lanes vectorized) while the reduction loop walks ``K`` in steps
  of ``L``; then ``dense`` adds the lanes (and the ``K % L`` tail), and the fused elementwise
  epilogue runs on the tile's outputs right after (``reverse_compute_at``).  The tile loop
  is ``parallel`` only when the weight does not fit a core's L2 (:func:`gemv_parallel`)
  (launching TVM's thread pool costs microseconds; the recurrent models call small GEMVs
  thousands of times).
* **GEMM** (``keep_dense_acc`` + ``dense``, and ``keep_dense_pack`` when the weight is
  computed at run time): the packed weight ``[N/16, K, 16]`` is a constant packed at build
  time, or built per call (vectorized over the 16 columns); the accumulation is tiled ``mb``
  rows × ``nb`` (16 or 32) columns (:func:`gemm_tile`: as many accumulators as the
  registers hold), the tile's accumulators in a local buffer (``cache_write``), ``k``
  outermost in the tile and unrolled by 4, the row loop unrolled and the column loop
  vectorized; the copy into ``dense`` and the epilogue become the tile's write-back. Column
  and row tiles are fused, columns outermost (a block of packed weights is read from memory
  once and reused by every row block), and ``parallel`` above :data:`GEMM_PARALLEL_MIN`
  multiply-adds. Measured here (two threads, 35 × 650 by 2600 × 650, the LSTM's input
  projection over a whole sequence): 5.5 ms with the weight packed per call and 8-row tiles
  that fell back to one row (35 has no divisor among 8, 6, 4, 3, 2) → 1.18 ms.

Any other form (an integer dense TVM refuses to vectorize, a kernel with two dense calls) makes
the rule return None — or raise, which :func:`backends.tvm.sched.pick_schedule` treats the
same way: the default recipe schedules the kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backends.tvm.sched import KernelInfo, register_schedule
from backends.tvm.sched.default import KEEP, refused, schedule_error, schedule_spatial
from backends.tvm.target import Target

__all__ = ["GEMM_PARALLEL_MIN", "GEMM_ROWS_MAX", "GEMV_PARALLEL_MIN_BYTES", "box_row_tiles",
           "gemm_tile", "gemv_parallel",
           "schedule_dense"]


GEMV_PARALLEL_MIN_BYTES = 1 << 20
"""The smallest weight (bytes) a GEMV splits over the cores, whatever the L2 size."""


def gemv_parallel(elements: int, bits: int = 32, target: Target | None = None) -> bool:
    """Whether a GEMV over a weight of ``elements`` values of ``bits`` bits is split over the
    cores: when the weight does not fit one core's L2 cache (``target.l2_bytes``; default
    the host) and is at least :data:`GEMV_PARALLEL_MIN_BYTES` (1 MiB).

    A GEMV is memory-bound. A weight that fits a core's L2 streams from it faster than the
    thread pool launches (measured on an AVX-512 machine with 1 MB of L2: 450×300 takes 7 µs
    serial, 16 µs parallel); a larger one streams from the shared L3, and two cores draw
    more of it than one. Measured here (Zen 3, 512 KB of L2, two threads, same process,
    interleaved): the RNN language model, whose 650×650 weights (1.7 MB) were serial under
    the previous fixed threshold of 4 MB, 2.83 → 1.97 ms for 35 steps. On a machine whose
    other core is busy (another process), the static split waits for it: a 2600×650 GEMV
    took 2.3 ms with two threads against 0.26 ms with one, measured here under a load of 4.
    The 1 MiB floor (issue 35): the TreeLSTM's 450×300 input GEMV (540 KB, just above this
    machine's 512 KB of L2) ran parallel at 367 µs a call in a TreeLSTM run under a load of 9
    (80 µs on one thread; 7 µs serial against 16 µs parallel on the quiet AVX-512 machine):
    a weight that small streams from L3 faster than the pool's wake-up.
    """
    size = elements * bits // 8
    return size > (target or Target.host()).l2_bytes and size >= GEMV_PARALLEL_MIN_BYTES


GEMM_PARALLEL_MIN = 1 << 18
"""Multiply-adds from which a GEMM's tiles run in parallel."""

GEMV_ROW_BLOCKS = (4, 2, 1)
"""Weight rows a GEMV tile reads at once (the first that divides N), times the data rows."""

GEMV = f"{KEEP}dense_gemv"
PARTIAL = f"{KEEP}dense_partial"
PACKED = f"{KEEP}dense_pack"
ACC = f"{KEEP}dense_acc"


def _bits(sch: Any, block: Any) -> int:
    """The bits of the value ``block`` writes."""
    return int(sch.get(block).writes[0].source.dtype.bits)


def _extents(sch: Any, loops: Any) -> list[int]:
    return [int(sch.get(lp).extent) for lp in loops]


def _block_names(sch: Any) -> list[str]:
    root = sch.get_sblock("root")
    return [sch.get(b).name_hint for b in sch.get_child_blocks(root)]


def inline_into_consumers(sch: Any, keep: set[str]) -> None:
    """Inline every block not in ``keep`` that is not an output and can be inlined (the
    elementwise chain between a reduction and the kernel's output).

    A ``keep_<op>_arg`` block stays too: the lowering's cut of a ``Let`` nested in another's
    value (``backends.tvm.lower.tensor._cut_let_nesting``; LLVM's code generation time
    doubles with each level). Inlined, it undid the cut: a GRU step merged with its hidden
    projection (``tanh`` of a sum holding a ``sigmoid``, the ``tanh`` read twice) took 195 s
    to compile."""
    changed = True
    while changed:
        changed = False
        root = sch.get_sblock("root")
        outputs = {sch.get(b).name_hint for b in sch.get_output_blocks(root)}
        for block in sch.get_child_blocks(root):
            name = sch.get(block).name_hint
            if name in keep or name in outputs or (
                    name.startswith(KEEP) and name.endswith("_arg")):
                continue
            try:
                sch.compute_inline(block)
                changed = True
            except schedule_error():   # a reduction, or not inlinable: keep the block
                continue


def attach_epilogue(sch: Any, producer: str, loop: Any) -> list[str]:
    """Move the consumers of ``producer`` that are outputs under ``loop`` (their part of the
    tile, right after it is computed); returns the names of the blocks moved."""
    moved = []
    block = sch.get_sblock(producer)
    for consumer in sch.get_consumers(block):
        name = sch.get(consumer).name_hint
        try:
            sch.reverse_compute_at(consumer, loop, preserve_unit_loops=False)
        except schedule_error():   # a consumer over another shape: left in place
            continue
        moved.append(name)
    return moved


def vectorize_inner(sch: Any, block: Any, lanes: int) -> None:
    """Vectorize the innermost loop of ``block`` (split by ``lanes`` when it divides)."""
    loops = sch.get_loops(block)
    if not loops:
        return
    inner = loops[-1]
    ext = int(sch.get(inner).extent)
    if ext % lanes == 0 and ext > lanes:
        _, inner = sch.split(inner, [None, lanes])
    if ext <= 64 or ext % lanes == 0:
        sch.vectorize(inner)


def _vectorize_tile(sch: Any, block: Any, n_outer: int) -> None:
    """Vectorize the innermost loop of a block placed under a tile (below its ``n_outer``
    tile loops); TVM scalarizes a predicated (partial) tile."""
    loops = sch.get_loops(block)[n_outer:]
    if not loops:
        return
    try:
        sch.vectorize(loops[-1])
    except schedule_error() as err:   # the loop stays serial
        refused("vectorize the inner tile loop", err)
        return


@register_schedule("nn.dense", priority=30)
def schedule_dense(prim: Any, info: KernelInfo) -> Any:
    """The scheduled ``IRModule`` of a kernel whose anchor is ``nn.dense`` (module
    docstring), or None when the kernel is not in one of the two forms.

    Args:
        prim: the kernel's TensorIR ``PrimFunc``.
        info: the kernel's operators and argument types.
    Returns:
        The scheduled module, or None.
    """
    import tvm
    from tvm import s_tir

    sch = s_tir.Schedule(tvm.IRModule({"main": prim}))
    names = _block_names(sch)
    if names.count("dense") != 1 or info.ops.count("nn.dense") != 1:
        return None
    if GEMV in names:
        return _packed_gemv(sch, info)
    if PARTIAL in names:
        return _gemv(sch, info.target)
    if ACC in names:
        return _gemm(sch, info)
    return None


def _packed_gemv(sch: Any, info: KernelInfo) -> Any:
    """The GEMV over a weight packed at build time (module docstring)."""
    inline_into_consumers(sch, {GEMV})
    acc = sch.get_sblock(GEMV)
    packed = next(r.source for r in sch.get(acc).reads if len(r.source.shape) == 3)
    tiles, k, tile = (int(d) for d in packed.shape)
    lanes = max(1, min(tile, info.target.vector_bytes * 8 // int(packed.dtype.bits)))
    while tile % lanes:
        lanes //= 2
    *rows, col, kk = sch.get_loops(acc)
    jo, ji = sch.split(col, [None, tile])
    ju, jl = sch.split(ji, [None, lanes])
    sch.reorder(jo, kk, *rows, ju, jl)
    local = sch.cache_write(acc, 0, "local")
    sch.reverse_compute_at(local, jo, preserve_unit_loops=True)
    wloops = sch.get_loops(local)[1:]
    for lp in wloops[:-1]:
        sch.unroll(lp)
    vectorize_inner(sch, local, lanes)
    for lp in rows:
        sch.unroll(lp)
    sch.unroll(ju)
    sch.vectorize(jl)
    if gemv_parallel(tiles * tile * k, int(packed.dtype.bits), info.target) and tiles >= 2:
        sch.parallel(jo)
    init = sch.decompose_reduction(acc, kk)
    iloops = sch.get_loops(init)[1:]
    for lp in iloops[:-1]:
        sch.unroll(lp)
    sch.vectorize(iloops[-1])
    _schedule_rest(sch, {GEMV, f"{GEMV}_init", f"{GEMV}_update", sch.get(local).name_hint},
                   info.target)
    return sch.mod


def _gemv(sch: Any, target: Target) -> Any:
    inline_into_consumers(sch, {PARTIAL, "dense"})
    partial = sch.get_sblock(PARTIAL)
    ploops = sch.get_loops(partial)
    pext = _extents(sch, ploops)
    k_main = pext[-1] * pext[-2]           # ko steps × lanes
    dense = sch.get_sblock("dense")
    dloops = sch.get_loops(dense)
    *rows, col, _ = dloops
    dext = _extents(sch, dloops)
    m = 1
    for e in dext[:len(rows)]:
        m *= e
    n = dext[len(rows)]
    jb = next(b for b in GEMV_ROW_BLOCKS if n % b == 0 and m * b <= max(GEMV_ROW_BLOCKS))
    jo, _ = sch.split(col, [None, jb])
    sch.compute_at(partial, jo, preserve_unit_loops=True)
    sch.set_scope(partial, 0, "local")
    ploops = sch.get_loops(partial)
    n_outer = len(rows) + 1
    *spatial, lane_loop, ko = ploops[n_outer:]
    sch.reorder(ko, *spatial, lane_loop)
    for lp in spatial:
        sch.unroll(lp)
    sch.vectorize(lane_loop)
    moved = attach_epilogue(sch, "dense", jo)
    for name in moved:
        _vectorize_tile(sch, sch.get_sblock(name), n_outer)
    outer = sch.get_loops(sch.get_sblock("dense"))[:n_outer]
    fused = sch.fuse(*outer) if len(outer) > 1 else outer[0]
    if gemv_parallel(n * k_main, _bits(sch, partial), target) and n // jb >= 2:
        sch.parallel(fused)
    init = sch.decompose_reduction(partial, ko)
    iloops = sch.get_loops(init)[1:]
    for lp in iloops[:-1]:
        sch.unroll(lp)
    sch.vectorize(iloops[-1])
    _schedule_rest(sch, {PARTIAL, "dense", *moved}, target)
    return sch.mod


GEMM_ROWS_MAX = 8
"""The most data rows in one GEMM register tile."""


def box_row_tiles(rows: Sequence[int]) -> set[int]:
    """The row tiles ``mb`` that cut the data rows ``rows`` (the extents of the leading axes,
    fused row-major) into boxes: every run of ``mb`` consecutive fused rows starting at a
    multiple of ``mb`` is a product of index ranges. Those are ``c × rows[j+1] × ...`` with
    ``c`` dividing ``rows[j]``.

    Only such a tile can be written back per tile: the write-back and the epilogue are
    placed under the fused row loop (``reverse_compute_at``) over the original axes, and
    they cover the bounding box of the tile's rows — with a tile that is not a box (7 rows
    of a ``(7, 3)`` lead), rows of the neighbouring tiles were written from accumulators
    that did not hold them (errors up to 18 on the AVX-512 tile of 7 rows, and on AVX2 with
    a ``(5, 2)`` lead and a tile of 5)."""
    out: set[int] = set()
    inner = 1
    for extent in reversed(list(rows)):
        out.update(c * inner for c in range(1, extent + 1) if extent % c == 0)
        inner *= extent
    return out or {1}


def gemm_tile(m: int, np_: int, lanes: int, registers: int,
              rows: Sequence[int] | None = None) -> tuple[int, int]:
    """The register tile ``(mb, nb)`` of a GEMM with ``m`` data rows and ``np_`` packed columns
    (a multiple of 16), on a vector unit of ``lanes`` float32 lanes and ``registers`` vector
    registers: ``mb`` divides ``m`` (at most :data:`GEMM_ROWS_MAX`) and is one of
    :func:`box_row_tiles` of ``rows`` (the leading axes' extents; default ``(m,)``), ``nb``
    is 32 or 16 and divides ``np_``, and the ``mb × nb / lanes`` accumulators leave a
    register for the broadcast row value and one for each weight vector of a row
    (``nb / lanes``). Among those: the most accumulators, then the fewest loads per
    multiply-add, then the taller tile. (On AVX2, 16 registers of 8 lanes: 35 rows × 2600
    columns take 5 × 16; a 32-column tile of 3 rows holds 12 accumulators but, with its 4
    weight vectors and the broadcast, 17 registers: it spilled, and ran a 36 × 650 by
    1950 product at 38 µs a row against 26 for 4 × 16 tiles, same process.)"""
    boxes = box_row_tiles(rows if rows is not None else (m,))
    best: tuple[tuple[float, ...], tuple[int, int]] | None = None
    for nb in (32, 16):
        if np_ % nb:
            continue
        per_row = max(1, nb // lanes)
        budget = max(1, registers - per_row - 1)
        for mb in range(min(m, GEMM_ROWS_MAX), 0, -1):
            if m % mb or mb not in boxes or (mb * per_row > budget and mb > 1):
                continue
            acc = mb * per_row
            score = (acc, -(mb + per_row) / acc, mb)
            if best is None or score > best[0]:
                best = (score, (mb, nb))
    return best[1] if best is not None else (1, 16)


def _gemm(sch: Any, info: KernelInfo) -> Any:
    """The GEMM (module docstring): the packed weight per call (``keep_dense_pack``) or a
    constant packed at build time; the tiles walk the columns outermost so each packed
    column block is read from memory once and reused by every row block."""
    names = set(_block_names(sch))
    inline_into_consumers(sch, {PACKED, ACC, "dense"})
    acc = sch.get_sblock(ACC)
    loops = sch.get_loops(acc)
    ext = _extents(sch, loops)
    *rows, col, k = loops
    rows_fused = sch.fuse(*rows) if len(rows) > 1 else rows[0]
    m, np_, kk = 1, ext[-2], ext[-1]
    for e in ext[:-2]:
        m *= e
    mb, nb = gemm_tile(m, np_, info.target.lanes, info.target.registers, ext[:-2])
    io, ii = sch.split(rows_fused, [None, mb])
    jo, ji = sch.split(col, [None, nb])
    sch.reorder(jo, io, k, ii, ji)
    local = sch.cache_write(acc, 0, "local")
    local_name = sch.get(local).name_hint
    sch.reverse_compute_at(local, io, preserve_unit_loops=True)
    # the write-back: the copy out of the accumulators, then the epilogue, per tile
    lx = sch.get_loops(local)[2:]
    for lp in lx[:-1]:
        sch.unroll(lp)
    vectorize_inner(sch, local, 16)
    try:
        sch.compute_inline(sch.get_sblock("dense"))     # the epilogue reads the tile
    except schedule_error():   # ``dense`` is the output itself
        pass
    moved = attach_epilogue(sch, local_name, io)
    for name in moved:
        _vectorize_tile(sch, sch.get_sblock(name), 2)
    if kk % 4 == 0 and kk > 4:
        k, k_in = sch.split(k, [None, 4])
        sch.unroll(k_in)
    sch.unroll(ii)
    if nb > 16:
        ji_o, ji_i = sch.split(ji, [None, 16])
        sch.unroll(ji_o)
        ji = ji_i
    sch.vectorize(ji)
    fused = sch.fuse(jo, io)
    if m * np_ * kk >= GEMM_PARALLEL_MIN and int(sch.get(fused).extent) >= 2:
        sch.parallel(fused)
    init = sch.decompose_reduction(acc, k)
    ix = sch.get_loops(init)[1:]
    for lp in ix[:-1]:
        sch.unroll(lp)
    vectorize_inner(sch, init, 16)
    done = {ACC, f"{ACC}_init", f"{ACC}_update", local_name, "dense", *moved}
    if PACKED in names:
        pack = sch.get_sblock(PACKED)
        ploops = sch.get_loops(pack)
        sch.vectorize(ploops[-1])
        if gemv_parallel(np_ * kk, _bits(sch, pack), info.target) \
                and int(sch.get(ploops[0]).extent) >= 2:
            sch.parallel(ploops[0])
        done.add(PACKED)
    _schedule_rest(sch, done, info.target)
    return sch.mod


def _schedule_rest(sch: Any, done: set[str], target: Target) -> None:
    """The default recipe for the blocks the dense recipe did not place (other outputs)."""
    for name in _block_names(sch):
        if name in done:
            continue
        block = sch.get_sblock(name)
        if sch.get_loops(block) and int(sch.get(sch.get_loops(block)[0]).extent) > 0:
            schedule_spatial(sch, block, target)
