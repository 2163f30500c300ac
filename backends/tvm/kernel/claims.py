"""Parallel loops that share their work by claiming it (issue 35: the thread pool's late wake).

TVM runs a ``parallel`` loop by splitting its range into one contiguous piece per thread of its
pool, the calling thread taking the first; the call returns when every piece is done. With the
pool's spinning off (the bench protocol, and any machine that should not burn a core between
kernels), a worker sleeps between kernels and wakes some tens of microseconds after the call
starts — on this VM 35 µs typically, and several hundred when the hypervisor has parked its
virtual CPU. A static split makes every parallel kernel wait that long on top of its half of
the work: MobileNet's 1×1 convolutions scaled 1.2–1.3× from one thread to two where
onnxruntime's, whose pool hands out work dynamically, scaled 1.6–1.8×.

:func:`claim_parallel_loops` (a TIR pass, run last in the kernels' lowering pipeline,
:func:`pipeline`) rewrites each ``parallel`` loop of extent ``E`` into ``W`` *walkers* over a
ring of ``U`` *units* (consecutive runs of the loop's iterations):

* a flag per unit, cleared before the loop; a thread **claims** a unit by an atomic
  test-and-set of its flag (``lock bts``: LLVM's ``llvm.x86.atomic.bts`` — TIR's own
  ``atomic_add`` has no CPU code generation), after a plain read that skips a unit already
  taken; every unit runs exactly once, whichever thread runs it, and the kernel's results do
  not depend on the schedule of the threads;
* walker ``w`` starts at unit ``w·U/W`` and claims **forward** around the ring until it
  meets a taken unit; then, if it claimed anything, **backward** from the unit before its
  start until it meets a taken one. A walker whose first unit was taken returns at once.

TVM's pool gives the ``W`` walkers to its threads in contiguous groups, so each thread's first
walker starts at the first unit of the thread's share, sweeps it forward as a static split
would (contiguous, in order), and goes on into the next share while that share's thread has
not started; then it helps the previous share from its end, backward, until it meets that
share's forward sweep in the middle. A thread that wakes late finds its share partly or
wholly done, and the threads that are awake never wait for it; its other walkers, and the
walkers of a thread whose share was taken, return after one read. ``W`` is at most
:data:`MAX_WALKERS` (and ``U``), so up to that many threads share a kernel; ``U`` is at most
:data:`MAX_UNITS`.

Completeness: suppose a unit ``a`` were never claimed, and look at the unit ``a - 1`` before
it (the ring has one; some unit is claimed, since the first walker to run finds all free).
A forward sweep that claimed ``a - 1`` would have gone on to ``a``; so a backward sweep
claimed it, which starts at the unit before its walker's start — so that walker starts at
``a``, and, having swept backward, claimed its first unit ``a``. Either way ``a`` is claimed.

Only x86-64 has the instruction; other targets keep TVM's static split (:func:`applies`).
"""

from __future__ import annotations

import platform
from typing import Any

from backends.tvm.target import Target

__all__ = ["MAX_UNITS", "MAX_WALKERS", "applies", "claim_parallel_loops", "pipeline",
           "pipeline_for"]

MAX_UNITS = 64
"""The most claimable units of one parallel loop (its flags: 256 bytes on the stack)."""

MAX_WALKERS = 64
"""The most walkers (so threads) one parallel loop is shared among."""

PIPELINE = "relay_claims"
"""The name the lowering pipeline with :func:`claim_parallel_loops` is registered under."""


def applies(target: Target) -> bool:
    """Whether kernels for ``target`` can get claimed parallel loops: x86-64 (the host's
    triple when the target names none); ``target.claims`` says whether they do."""
    return _x86_64(target.mtriple)


def pipeline_for(triple: str) -> str:
    """The lowering pipeline of a kernel for the LLVM ``triple`` (empty: the host's): this
    module's on x86-64, TVM's default elsewhere (for ``tvm.compile``'s ``tir_pipeline``)."""
    return pipeline() if _x86_64(triple) else "default"


def _x86_64(triple: str) -> bool:
    return (triple or platform.machine()).split("-")[0] in ("x86_64", "amd64", "AMD64")


def claim_parallel_loops() -> Any:
    """The TIR pass (on lowered, flattened TIR) that rewrites every ``parallel`` loop into
    walkers claiming units (module docstring)."""
    import tvm

    def transform(func: Any, _mod: Any, _ctx: Any) -> Any:
        body = _rewrite(func.body)
        return func if body.same_as(func.body) else func.with_body(body)

    return tvm.tirx.transform.prim_func_pass(transform, opt_level=0, name="ClaimParallelLoops")


def pipeline() -> str:
    """The name of TVM's default ``s_tir`` lowering pipeline followed by
    :func:`claim_parallel_loops`, registered on first use (for ``tvm.compile``'s
    ``tir_pipeline``)."""
    from tvm.s_tir import pipeline as s_tir_pipeline
    from tvm.tirx import compilation_pipeline as registry

    if PIPELINE not in registry.PIPELINE_MAP:
        def factory() -> tuple[Any, Any, Any]:
            import tvm

            lower, host, device = s_tir_pipeline.default_s_tir_pipeline()
            return tvm.transform.Sequential([lower, claim_parallel_loops()]), host, device

        registry.register_tir_pipeline(PIPELINE, factory)
    return PIPELINE


def _rewrite(stmt: Any) -> Any:
    """``stmt`` with its parallel loops rewritten (the same object when it has none)."""
    from tvm import tirx

    if isinstance(stmt, tirx.SeqStmt):
        seq = [_rewrite(s) for s in stmt.seq]
        if all(a.same_as(b) for a, b in zip(seq, stmt.seq)):
            return stmt
        return tirx.SeqStmt(seq)
    if isinstance(stmt, tirx.For):
        if stmt.kind == tirx.ForKind.PARALLEL:
            return _claimed(stmt)
        body = _rewrite(stmt.body)
        if body.same_as(stmt.body):
            return stmt
        return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, body,
                        stmt.thread_binding, stmt.annotations, stmt.step)
    if isinstance(stmt, tirx.AttrStmt):
        body = _rewrite(stmt.body)
        return stmt if body.same_as(stmt.body) else tirx.AttrStmt(
            stmt.node, stmt.attr_key, stmt.value, body)
    if isinstance(stmt, tirx.IfThenElse):
        then = _rewrite(stmt.then_case)
        other = None if stmt.else_case is None else _rewrite(stmt.else_case)
        if then.same_as(stmt.then_case) and (other is None or other.same_as(stmt.else_case)):
            return stmt
        return tirx.IfThenElse(stmt.condition, then, other)
    if isinstance(stmt, tirx.While):
        body = _rewrite(stmt.body)
        return stmt if body.same_as(stmt.body) else tirx.While(stmt.condition, body)
    return stmt


def _claimed(loop: Any) -> Any:
    """The walkers that replace the parallel ``loop`` (module docstring)."""
    from tvm import tirx

    i32 = "int32"
    extent = loop.extent
    dtype = str(loop.loop_var.ty)
    units = min(int(extent), MAX_UNITS) if isinstance(extent, tirx.IntImm) else MAX_UNITS
    if units <= 1:
        return tirx.For(loop.loop_var, loop.min, extent, tirx.ForKind.SERIAL, loop.body)
    walkers = min(units, MAX_WALKERS)

    def c(v: int) -> Any:
        return tirx.const(v, i32)

    flags = tirx.decl_buffer((units,), i32, name="claim_flags")
    # a walker's state: [the unit it tries next, still claiming, claimed its first unit]
    state = tirx.decl_buffer((3,), i32, name="claim_state", scope="local")
    walker, phase = tirx.Var("claim_walker", i32), tirx.Var("claim_phase", i32)
    unit, clear = tirx.Var("claim_unit", i32), tirx.Var("claim_clear", i32)
    pos, going, started = (tirx.BufferLoad(state, [c(k)]) for k in range(3))

    def put(index: int, value: Any) -> Any:
        return tirx.BufferStore(state, value, [c(index)])

    # the unit's iterations of the original loop: [u * E / U, (u + 1) * E / U)
    ext = extent if str(extent.ty) == dtype else tirx.Cast(dtype, extent)

    def iteration(u: Any) -> Any:
        return tirx.floordiv(tirx.Cast(dtype, u) * ext, tirx.const(units, dtype))

    work = tirx.For(loop.loop_var, loop.min + iteration(unit),
                    iteration(unit + c(1)) - iteration(unit), tirx.ForKind.SERIAL, loop.body)
    taken = tirx.call_llvm_intrin(i32, "llvm.x86.atomic.bts.i32",
                                  tirx.address_of(tirx.BufferLoad(flags, [pos])),
                                  tirx.const(0, "int8"))
    forward = phase == c(0)
    step = tirx.Select(forward, c(1), c(units - 1))        # +1 or -1, around the ring
    stop = put(1, c(0))
    # a plain read first: a unit seen taken costs no locked instruction
    claim = tirx.IfThenElse(
        tirx.BufferLoad(flags, [pos]) == c(0),
        tirx.IfThenElse(taken == c(0), tirx.SeqStmt([
            tirx.LetStmt(unit, pos),
            work,
            put(2, c(1)),
            put(0, tirx.floormod(pos + step, c(units))),
        ]), stop),
        stop)
    first = tirx.floordiv(walker * c(units), c(walkers))
    sweep = tirx.IfThenElse(tirx.any(forward, started != c(0)), tirx.SeqStmt([
        put(0, tirx.Select(forward, first, tirx.floormod(first + c(units - 1), c(units)))),
        put(1, c(1)),
        tirx.While(going != c(0), claim),
    ]), None)
    walk = tirx.SeqStmt([
        tirx.AllocBuffer(state),
        put(2, c(0)),
        tirx.For(phase, c(0), c(2), tirx.ForKind.SERIAL, sweep),
    ])
    return tirx.SeqStmt([
        tirx.AllocBuffer(flags),
        tirx.For(clear, c(0), c(units), tirx.ForKind.SERIAL,
                 tirx.BufferStore(flags, c(0), [clear])),
        tirx.For(walker, c(0), c(walkers), tirx.ForKind.PARALLEL, walk),
    ])
