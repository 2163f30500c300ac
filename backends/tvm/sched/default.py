"""The default schedule of a kernel: inline, parallel outer loop, vectorized inner loop.

apache-tvm 0.27 has no ``te.create_schedule`` and no ``topi.x86`` schedules: a TE
computation becomes a TensorIR ``PrimFunc`` (``te.create_prim_func``) and is scheduled with
``tvm.s_tir.Schedule``.  :func:`default_schedule` applies one generic recipe to every
kernel, correctness first (speed is a later concern; schedules can be swapped per kernel
through the ``schedule`` argument of the kernel compiler):

1. **Inline** every block that is not an output (nor named ``keep_...``: a stage the
   lowering wants materialized) into its consumers
   (``compute_inline``; it fails — and the block stays — for reductions and blocks that
   cannot be inlined).  A fused elementwise chain thus becomes one loop nest.
2. **Spatial blocks** (no reduction axis): all loops fused into one, split by the vector
   width ``v`` (the largest of 16, 8, 4, 2 that divides the extent, in elements of at most
   one vector register of the target: 32 bytes with AVX2, 64 with AVX-512), the inner loop
   ``vectorize``-d, the outer one ``parallel``.  When no full register divides the extent
   (650 = 2 × 325), ``loop_partition`` splits off a main loop of whole registers and a tail
   loop (one short vector): before, such a kernel ran 2 lanes wide (measured here, the LSTM
   cell's ``sigmoid``/``tanh`` over 650 elements: 6.5 µs → 2.2 µs a call).
3. **Reduction blocks** (``sum``, ``dense``, ``conv2d``, pooling, ``softmax``'s parts): the
   innermost *spatial* loop is split by ``v`` and its inner part moved below the reduction
   loops and vectorized (so a dense or convolution accumulates ``v`` outputs at once) —
   unless some read's last index follows a reduction variable only (a sum over the last
   axis), where the lanes would gather: then the innermost reduction loop is split by ``v``
   and ``rfactor``-ed into ``v`` vectorized partial reductions.  The outer spatial loops are
   fused and made ``parallel``.  A reduction to a scalar gets the ``rfactor`` treatment
   (vector lanes, one thread).
4. Work below :data:`PARALLEL_MIN` scalar operations (output elements times the reduction
   extent) is not parallelized: launching TVM's thread pool costs microseconds (measured
   here, same run: an ``add`` of 16,384 float32 takes 2.0 µs serial and 4.3 µs parallel; of
   65,536, 7.0 µs and 9.2 µs; the pool's launch is about 2.4 µs).

A schedule step that TVM rejects for a particular block is skipped (the block keeps its
loops), so the recipe never makes a kernel fail to compile; the result is always correct,
only possibly slower.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

from backends.tvm.target import Target, vector_bytes

PARALLEL_MIN = 1 << 16
KEEP = "keep_"
"""Name prefix of a stage a lowering wants materialized (never inlined): e.g. ``nn.dense``'s
transposed weight, read contiguously by the vectorized loop."""
VECTOR_BYTES = 64

Schedule = Callable[[Any], Any]


NOTES: contextvars.ContextVar[list[tuple[str, str]] | None] = contextvars.ContextVar(
    "relay_schedule_notes", default=None)


def refused(step: str, err: BaseException) -> None:
    """Record that TVM refused ``step`` of the recipe being applied (``err``: its error).

    A recipe calls this where it catches TVM's ``ScheduleError`` and carries on without the
    step; outside a call of ``backends.tvm.sched.Scheduler`` it does nothing.
    """
    notes = NOTES.get()
    if notes is not None:
        notes.append((step, first_line(err)))


def schedule_error() -> tuple[type[Exception], ...]:
    """What a schedule step raises when TVM refuses it for a block: ``ScheduleError`` (the
    primitive does not apply) and ``InternalError`` (a failed check inside a primitive, e.g.
    ``compute_inline`` of a reduction's block realize). The recipes catch these, record them
    (:func:`refused`) and carry on without the step; anything else (a renamed API after a TVM
    upgrade) is a broken recipe, which ``backends.tvm.sched.Scheduler`` records as failed."""
    from tvm.error import InternalError
    from tvm.s_tir import ScheduleError

    return (ScheduleError, InternalError)


def first_line(err: BaseException) -> str:
    """``Type: last line of the message`` of an error (TVM's messages end with the cause)."""
    lines = [ln.strip() for ln in str(err).strip().splitlines() if ln.strip()]
    text = lines[-1] if lines else ""
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _extent(sch: Any, loop: Any) -> int | None:
    ext = sch.get(loop).extent
    try:
        return int(ext)
    except (TypeError, ValueError):
        return None


def _vector_width(extent: int, dtype_bits: int, width_bytes: int = VECTOR_BYTES) -> int:
    limit = min(16, width_bytes * 8 // max(dtype_bits, 8))
    for v in (16, 8, 4, 2):  # limit < 2: no vectorization
        if v <= limit and extent % v == 0 and extent >= v:
            return v
    return 1


def _block_dtype_bits(sch: Any, block: Any) -> int:
    stmt = sch.get(block)
    try:
        return max(int(w.source.dtype.bits) for w in stmt.writes)
    except (AttributeError, ValueError, TypeError):
        return 32


def inline_blocks(sch: Any, skip: Callable[[str], bool], budget: int | None = None) -> None:
    """Inline every block that can be, except the outputs and the blocks whose name ``skip``
    accepts, repeated until nothing changes: an elementwise chain collapses into the block
    that consumes it (the fused group's "master" stage, or its output's write-back).

    ``budget`` (None: no limit) bounds the buffer reads of a consumer's value after an
    inlining (:func:`inlined_reads`): a block whose value is read several times by its
    consumer (``relu``'s NaN test and select, a rounding's sign and magnitude) is copied
    into every read, so a chain of such blocks grows its consumer's expression
    exponentially — a float convolution's quantize epilogue grew to 350 KB of TIR and took
    two minutes in LLVM. A block over the budget stays, and its caller computes it as its
    own stage (at the consumer's tile, for the convolution recipe)."""
    refusals = schedule_error()
    root = sch.get_sblock("root") if _has_root(sch) else None
    changed = True
    while changed:
        changed = False
        outputs = {sch.get(b).name_hint for b in sch.get_output_blocks(root)}
        for block in sch.get_child_blocks(root):
            name = sch.get(block).name_hint
            if name in outputs or skip(name):
                continue
            if budget is not None and inlined_reads(sch, block) > budget:
                continue
            try:
                sch.compute_inline(block)
                changed = True
            except refusals:
                continue  # a reduction, or a stage that cannot be inlined


INLINE_READS = 24
"""The buffer reads a fused epilogue's value may hold after inlining (the convolution
recipe's ``budget`` of :func:`inline_blocks`): a conv + bias + relu epilogue reads 8
(``relu`` reads its argument four times), a realized requantize of it about 20; a float
convolution's quantize epilogue (divide, round half away from zero, NaN-propagating clip,
cast) would read 700 if inlined whole."""


def inlined_reads(sch: Any, block: Any) -> int:
    """The most buffer reads a consumer of ``block`` holds once ``block`` is inlined into it:
    its own reads, less its reads of ``block``'s buffer, plus that many copies of
    ``block``'s reads."""
    stmt = sch.get(block)
    produced = stmt.writes[0].source.name if stmt.writes else None
    own = _reads(stmt.body)
    worst = 0
    for consumer in sch.get_consumers(block):
        counts = _read_counts(sch.get(consumer).body)
        uses = counts.get(produced, 0) if produced is not None else 0
        worst = max(worst, sum(counts.values()) - uses + uses * own)
    return worst


def _reads(body: Any) -> int:
    return sum(_read_counts(body).values())


_FIELDS = ("a", "b", "value", "condition", "true_value", "false_value", "args", "indices",
           "then_case", "else_case", "body")
"""The fields of TIR nodes that hold sub-expressions or statements (the wheel exposes no
visitor to Python)."""


def _read_counts(body: Any) -> dict[str, int]:
    """Buffer reads (``TensorLoad`` nodes) under a block's body, by buffer name (a repeated
    sub-expression counts once per occurrence)."""
    from tvm.ir.expr import TensorLoad

    counts: dict[str, int] = {}
    nodes = [body]
    while nodes:
        node = nodes.pop()
        if isinstance(node, TensorLoad):
            counts[node.source.name] = counts.get(node.source.name, 0) + 1
        for field in _FIELDS:
            child = getattr(node, field, None)
            if child is None or isinstance(child, (str, bytes, int, float)):
                continue
            if hasattr(child, "__iter__") and not hasattr(child, "dtype"):
                nodes.extend(c for c in child if c is not None)
            else:
                nodes.append(child)
    return counts


def _has_root(sch: Any) -> bool:
    try:
        sch.get_sblock("root")
        return True
    except schedule_error():
        return False


def _iter_kinds(sch: Any, block: Any) -> list[int]:
    """The iteration kinds of the block's iter vars (0 = spatial, 2 = reduction)."""
    return [int(iv.iter_type) for iv in sch.get(block).iter_vars]


def _contiguous_in_last_spatial(sch: Any, block: Any, n_spatial: int) -> bool:
    """Whether every buffer the block reads is indexed, in its last dim, by the innermost
    spatial iteration variable or by none at all (then a vector loop over that variable
    reads contiguous or broadcast elements).  A read whose last dim follows only reduction
    variables (``sum`` over the last axis, ``softmax``) would turn each vector load into a
    gather."""
    from tvm.tirx.analysis import undefined_vars

    stmt = sch.get(block)
    ivs = [iv.var for iv in stmt.iter_vars]
    inner = ivs[n_spatial - 1]
    reduce_vars = ivs[n_spatial:]
    for region in stmt.reads:
        if not region.region:
            continue
        used = undefined_vars(region.region[-1].min)
        uses_inner = any(u.same_as(inner) for u in used)
        uses_reduce = any(u.same_as(r) for u in used for r in reduce_vars)
        if uses_reduce and not uses_inner:
            return False
    return True


def _schedule_rfactor(sch: Any, block: Any, spatial: list[Any], reduce: list[Any], work: int,
                      bits: int) -> None:
    """A reduction along the contiguous axis: ``rfactor`` the innermost reduction loop split
    by the vector width, so ``v`` partial sums run in vector lanes (reading contiguously),
    then a short reduction of the partials; the outer spatial loops are ``parallel``."""
    name = sch.get(block).name_hint
    last_extent = _extent(sch, reduce[-1]) or 1
    v = _vector_width(last_extent, bits)
    n_spatial = len(spatial)
    if v > 1 and len(sch.get(block).writes) == 1:
        _, lanes = sch.split(reduce[-1], [None, v])
        rf = sch.rfactor(lanes, 0)
        rf_loops = sch.get_loops(rf)
        sch.vectorize(rf_loops[-1])
        if n_spatial:
            outer = sch.fuse(*rf_loops[:n_spatial]) if n_spatial > 1 else rf_loops[0]
            if work >= PARALLEL_MIN and (_extent(sch, outer) or 1) >= 2:
                sch.parallel(outer)
        final = sch.get_loops(sch.get_sblock(name))[:n_spatial]
    else:
        final = spatial
    if not final:
        return
    fused = sch.fuse(*final) if len(final) > 1 else final[0]
    if work >= PARALLEL_MIN and (_extent(sch, fused) or 1) >= 2:
        sch.parallel(fused)


def _schedule_block(sch: Any, block: Any, native: int = VECTOR_BYTES) -> None:
    loops = list(sch.get_loops(block))
    if not loops:
        return
    extents = [_extent(sch, lp) for lp in loops]
    if any(e is None or e == 0 for e in extents):
        return
    kinds = _iter_kinds(sch, block)
    n_spatial = sum(1 for k in kinds if k == 0)
    if len(kinds) != len(loops) or kinds != [0] * n_spatial + [2] * (len(kinds) - n_spatial):
        n_spatial = 0           # unusual loop structure: leave the block serial
        if len(kinds) == len(loops) and kinds and kinds[0] == 0:
            n_spatial = 1
            if int(extents[0] or 0) >= 2:
                sch.parallel(loops[0])
        return
    work = 1
    for e in extents:
        work *= int(e or 1)
    bits = _block_dtype_bits(sch, block)
    if len(sch.get(block).writes) > 1:
        bits = 1024             # a tuple reduction (argmax): no vectorized loop
    spatial, reduce = loops[:n_spatial], loops[n_spatial:]
    if not spatial:             # a reduction to a scalar: vectorized partial reductions
        _schedule_rfactor(sch, block, spatial, reduce, 0, bits)
        return
    if not reduce:
        fused = sch.fuse(*spatial) if len(spatial) > 1 else spatial[0]
        total = _extent(sch, fused) or 1
        v = _vector_width(total, bits, native)
        widest = _vector_width(1 << 16, bits, native)
        if v < widest and total > widest:
            # No full vector divides the extent (650 = 2 * 325): a main loop of whole
            # vectors, then a tail loop (vectorized by what divides it).
            main = total - total % widest
            fused, tail = sch.loop_partition(fused, [main])
            if total - main > 1:
                sch.vectorize(tail)       # fewer lanes than a register: one short vector
            total, v = main, widest
        if v > 1:
            outer, inner = sch.split(fused, [None, v])
            sch.vectorize(inner)
        else:
            outer = fused
        if work >= PARALLEL_MIN and total // v >= 2:
            sch.parallel(outer)
        return
    last = spatial[-1]
    v = _vector_width(int(extents[n_spatial - 1] or 1), bits)
    if not _contiguous_in_last_spatial(sch, block, n_spatial):
        # e.g. a sum over the last axis: vector lanes over the outputs would gather.
        _schedule_rfactor(sch, block, spatial, reduce, work, bits)
        return
    inner = None
    if v > 1:
        lo, inner = sch.split(last, [None, v])
        spatial = [*spatial[:-1], lo]
        sch.reorder(*spatial, *reduce, inner)
    fused = sch.fuse(*spatial) if len(spatial) > 1 else spatial[0]
    if inner is not None:
        try:
            sch.vectorize(inner)
        except schedule_error() as err:   # the loop stays serial
            refused("vectorize the inner loop", err)
    if work >= PARALLEL_MIN and (_extent(sch, fused) or 1) >= 2:
        sch.parallel(fused)


def schedule_spatial(sch: Any, block: Any, target: Target | None = None) -> None:
    """Steps 2–4 of the recipe for one block of ``sch`` (a rule's leftover blocks); a step
    TVM rejects raises (the caller decides what to keep). ``target``: the kernel's
    :class:`~backends.tvm.target.Target` (None: the host)."""
    _schedule_block(sch, block, vector_bytes(target))


def default_schedule(func: Any, target: Target | None = None) -> Any:
    """The scheduled ``IRModule`` of a TensorIR ``PrimFunc`` (see the module docstring) for
    ``target`` (a :class:`~backends.tvm.target.Target`; None: the host)."""
    import tvm
    from tvm import s_tir

    sch = s_tir.Schedule(tvm.IRModule({"main": func}))
    if not _has_root(sch):
        return sch.mod
    inline_blocks(sch, lambda name: name.startswith(KEEP))
    names = [sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_sblock("root"))]
    native = vector_bytes(target)
    for name in names:
        snapshot = sch.copy()
        try:
            _schedule_block(sch, sch.get_sblock(name), native)
        except schedule_error() as err:   # a refused step: the block keeps its loops
            refused(f"schedule block {name}", err)
            sch = snapshot
    return sch.mod
