"""``tune``: tune the kernels of a program that our schedules leave furthest from peak.

The run (``relay tune`` calls :func:`tune`):

1. **Kernels.** The program goes through ``build``'s pipeline (:func:`backends.tvm.build.prepare`)
   and its kernels at static shapes are compiled as usual (through the kernel cache). Equal
   kernels (the same Relay-level key) count once, with the number of places that call them.
2. **Measure ours.** Each kernel runs on random inputs (:func:`measure`, blocks of calls);
   its FLOPs come from its convolutions and dense products (``kernel_flops``). The peak is
   the best float32 matrix product of numpy's BLAS measured now (:func:`measured_peak`, the
   figure of ``bench/peak.py``: :mod:`backends.peak`), or
   the caller's figure.
3. **Pick** the ``kernels`` kernels with the most time lost against the peak
   (:func:`~backends.tvm.tune.decide.rank`).
4. **Search** each with MetaSchedule, ``trials`` measured candidates per kernel
   (:func:`~backends.tvm.tune.search.search`; on a tracker's devices with ``rpc``).
5. **Judge.** The best candidates (and the database's earlier record of the kernel, if any)
   are compiled into kernels with the usual compiler, checked against our kernel's outputs on
   the same inputs, and timed against ours in alternating blocks in this process; the fastest
   is kept only when it beats ours (:func:`~backends.tvm.tune.decide.decide`).
6. **Record** every tuned kernel's outcome — won or lost — in the database, atomically after
   each kernel (an interrupted run keeps what it finished).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from backends.peak import sgemm_gflops
from backends.tvm.target import Target, TargetError, TargetSpec
from backends.tvm.tune.apply import compile_with, kernel_prim, workload_hash
from backends.tvm.tune.database import (
    TuningDatabase,
    TuningRecord,
    default_directory,
    relay_key,
)
from backends.tvm.tune.decide import Decision, KernelCost, decide, rank
from backends.tvm.tune.search import RPCSpec, search
from semantics.errors import RelayArgumentTypeError, RelayArgumentValueError

__all__ = ["KernelOutcome", "TuneReport", "measure", "measured_peak", "tune"]


@dataclass
class KernelOutcome:
    """One tuned kernel: its cost as ours, and the decision on the tuned one."""

    cost: KernelCost
    ops: list[str]
    decision: Decision
    candidates: int


@dataclass
class TuneReport:
    """What a tuning run measured and decided.

    Attributes:
        target: the tuning target; ``database``: the ``records.json`` written.
        peak_gflops: the peak the kernels were ranked against.
        costs: every kernel of the program as measured (ours).
        tuned: the outcome of each kernel tuned.
        seconds: the run's wall time.
    """

    target: Target
    database: Path
    peak_gflops: float
    costs: list[KernelCost] = field(default_factory=list)
    tuned: list[KernelOutcome] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        """The report as text (``relay tune``'s output)."""
        kept = sum(o.decision.keep for o in self.tuned)
        lines = [f"tuned {len(self.tuned)} of {len(self.costs)} kernels for {self.target} "
                 f"(peak {self.peak_gflops:.1f} GFLOP/s): {kept} kept, "
                 f"database {self.database} ({self.seconds:.1f} s)"]
        for o in self.tuned:
            c = o.cost
            eff = c.efficiency(self.peak_gflops * 1e9)
            lines.append(f"  {c.name:36} {'+'.join(o.ops)[:40]:40} ours "
                         f"{o.decision.ours * 1e6:9.1f} us ({eff:5.1%} of peak), tuned "
                         f"{o.decision.tuned * 1e6:9.1f} us: "
                         f"{'tuned kept' if o.decision.keep else 'ours kept'}: "
                         f"{o.decision.reason}")
        return "\n".join(lines)


def measured_peak(n: int = 1024, repeat: int = 3) -> float:
    """GFLOP/s of the best of ``repeat`` float32 ``n × n`` products by numpy's BLAS: the
    attainable peak of this machine, measured as ``bench/peak.py`` does
    (:func:`backends.peak.sgemm_gflops`; smaller and fewer products, a tuning run
    measures it once)."""
    return sgemm_gflops(n, repeat)


def random_inputs(kernel: Any, seed: int = 0) -> list[np.ndarray]:
    """Inputs of a kernel's input types: normal floats, small integers, random booleans."""
    rng = np.random.default_rng(seed)
    out = []
    for t in kernel.input_types:
        shape = tuple(int(d) for d in t.shape)
        dtype = np.dtype(t.dtype)
        if dtype.kind == "f":
            out.append(rng.standard_normal(shape).astype(dtype))
        elif dtype.kind == "b":
            out.append(rng.integers(0, 2, shape).astype(dtype))
        else:
            out.append(rng.integers(0, 8, shape).astype(dtype))
    return out


def _flat(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _flat(v)]
    return [np.array(value, copy=True)]


def same_results(a: Any, b: Any, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    """Whether two kernels' outputs agree (floats within ``rtol`` of the outputs' scale)."""
    xs, ys = _flat(a), _flat(b)
    if len(xs) != len(ys):
        return False
    for x, y in zip(xs, ys):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.dtype.kind == "f":
            scale = float(np.max(np.abs(x))) if x.size else 0.0
            if not np.allclose(x, y, rtol=rtol, atol=atol + rtol * scale, equal_nan=True):
                return False
        elif not np.array_equal(x, y):
            return False
    return True


def measure(kernels: Sequence[Callable[..., Any]], args: Sequence[np.ndarray],
            blocks: int = 5, block_seconds: float = 0.02) -> list[list[float]]:
    """Seconds per call of each kernel, one entry per block, the kernels alternating.

    Each block calls a kernel ``n`` times (``n`` chosen so that the first kernel's block
    takes about ``block_seconds``); block ``i`` runs the kernels in turn, in reverse order
    on odd blocks, so that neither always runs right after the other.
    """
    for k in kernels:
        k(*args)
    start = time.perf_counter()
    kernels[0](*args)
    once = max(time.perf_counter() - start, 1e-7)
    n = max(1, min(10_000, int(block_seconds / once)))
    times: list[list[float]] = [[] for _ in kernels]
    for b in range(blocks):
        order = list(range(len(kernels)))
        if b % 2:
            order.reverse()
        for i in order:
            k = kernels[i]
            start = time.perf_counter()
            for _ in range(n):
                k(*args)
            times[i].append((time.perf_counter() - start) / n)
    return times


@dataclass
class _Kernel:
    """A distinct kernel of the program: its function, types, our compiled kernel."""

    func: Any
    types: list[Any]
    key: str
    ours: Any
    calls: int = 1
    flops: int = 0


def _check(trials: Any, kernels: Any) -> None:
    for name, value in (("trials", trials), ("kernels", kernels)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise RelayArgumentTypeError(f"{name} must be a positive integer, not {value!r}")
        if value < 1:
            raise RelayArgumentValueError(f"{name} must be a positive integer, not {value}")


def tune(mod: Any, params: Mapping[str, Any] | None = None, *, target: TargetSpec = None,
         trials: int = 32, kernels: int = 3, db: str | Path | None = None,
         rpc: RPCSpec | None = None, opt_level: int = 3, peak_gflops: float | None = None,
         cache: Any = None, seed: int = 0,
         log: Callable[[str], None] | None = None) -> TuneReport:
    """Tune the kernels of a program (see the module docstring) into a tuning database.

    Args:
        mod, params, target, opt_level: as for ``backends.tvm.build``.
        trials: MetaSchedule candidates measured per tuned kernel.
        kernels: how many kernels to tune (those furthest from peak).
        db: the database directory (default :func:`~.database.default_directory`).
        rpc: run the search's candidates on a TVM RPC tracker's devices.
        peak_gflops: the peak to rank against (default: :func:`measured_peak`).
        cache: the kernel cache for our kernels (default: the compiler's).
        seed: the search's seed.
        log: called with a line of progress now and then.
    Returns:
        The :class:`TuneReport`.
    Raises:
        ParseError, RelayTypeError: as ``build``; bad ``trials``/``kernels``.
        TargetError: an unknown target, or one whose kernels cannot run on this machine
            (they are timed here: an instruction set extension it lacks).
        TuningDatabaseError: the database cannot be read (damaged) or written.
    """
    from backends.tvm.build import KernelTable, prepare

    _check(trials, kernels)
    say = log or (lambda _line: None)
    started = time.perf_counter()
    record = _runnable(Target.of(target))
    database = TuningDatabase(default_directory() if db is None else db, record)
    database.load()                          # a damaged database stops the run before tuning
    fused = prepare(mod, params, opt_level, record)
    found = _kernels(KernelTable(record, cache).requests(fused), record, cache)
    peak = float(peak_gflops) if peak_gflops else measured_peak()
    report = TuneReport(record, database.path, peak)
    say(f"{len(found)} kernels compiled; measuring them (peak {peak:.1f} GFLOP/s)")
    costs: dict[str, KernelCost] = {}
    for k in found.values():
        times = measure([k.ours], random_inputs(k.ours))[0]
        costs[k.key] = KernelCost(str(k.ours.name), k.flops, float(np.median(times)), k.calls)
    report.costs = list(costs.values())
    chosen = rank(report.costs, peak * 1e9, kernels)
    picked = [next(k for k in found.values() if costs[k.key] is c) for c in chosen]
    for k in picked:
        say(f"tuning {k.ours.name} ({'+'.join(k.ours.ops)}): {trials} trials")
        outcome, rec = _tune_one(k, costs[k.key], database, record, trials, rpc, seed, cache)
        report.tuned.append(outcome)
        if rec is not None:
            database.update([rec])
        say(f"  ours {outcome.decision.ours * 1e6:.1f} us, tuned "
            f"{outcome.decision.tuned * 1e6:.1f} us: {outcome.decision.reason}")
    if not database.path.exists():
        database.update([])             # the target's database exists even with no record
    report.seconds = time.perf_counter() - started
    return report


def _runnable(target: Target) -> Target:
    """``target``, when its kernels can run on this machine (where they are timed).

    Raises:
        TargetError: it uses an instruction set extension this machine lacks.
    """
    host = Target.host()
    missing = target.missing_here()
    if missing:
        raise TargetError(f"cannot tune for {target} on this machine ({host}): the kernels "
                          f"are timed here, and it lacks {', '.join(missing)}")
    return target


def _kernels(requests: Sequence[tuple[Any, list[Any]]], target: Target,
             cache: Any) -> dict[str, _Kernel]:
    """The distinct compiled kernels of ``requests`` by Relay-level key (fallbacks skipped)."""
    from backends.tvm.exec.graph import kernel_flops
    from backends.tvm.kernel.compile import compile_function
    from backends.tvm.kernel.runtime import NoLowering

    found: dict[str, _Kernel] = {}
    for func, types in requests:
        key = relay_key(func, types)
        if key in found:
            found[key].calls += 1
            continue
        try:
            ours = compile_function(func, types, target=target, cache=cache)
        except NoLowering:
            continue
        found[key] = _Kernel(func, list(types), key, ours, 1, kernel_flops(func))
    return found


def _tune_one(k: _Kernel, cost: KernelCost, database: TuningDatabase, target: Target,
              trials: int, rpc: RPCSpec | None, seed: int, cache: Any
              ) -> tuple[KernelOutcome, TuningRecord | None]:
    """Search one kernel, judge its candidates against ours, and its record (None: no
    candidate built)."""
    import tvm

    prim, _ = kernel_prim(k.func, k.types, target)
    whash = workload_hash(prim)
    ops = list(k.ours.ops)
    with tempfile.TemporaryDirectory(prefix="relay-tune-") as work:
        traces = search({"kernel": prim}, target, trials, work, rpc=rpc, seed=seed)["kernel"]
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    workload = tvm.ir.save_json(_workload(prim))
    candidates = [TuningRecord(whash, workload, k.key, ops, t, 0.0, 0.0, trials, False,
                               k.flops, stamp) for t in traces]
    previous = database.records.get(whash)
    if previous is not None and previous.won:
        candidates.append(previous)
    args = random_inputs(k.ours, seed=1)
    want = k.ours(*args)
    want = _flat(want)
    best: tuple[Decision, TuningRecord] | None = None
    for cand in candidates:
        tuned = compile_with(cand, k.func, k.types, target, cache, keep=False)
        if tuned is None:
            continue
        same = same_results(want, tuned(*args))
        ours_t, tuned_t = measure([k.ours, tuned], args)
        decision = decide(ours_t, tuned_t, same_results=same)
        if best is None or (decision.keep, -decision.tuned) > (best[0].keep, -best[0].tuned):
            best = (decision, cand)
    if best is None:
        none = Decision(False, cost.seconds, 0.0, "no candidate of the search compiled")
        return KernelOutcome(cost, ops, none, len(candidates)), None
    decision, cand = best
    rec = TuningRecord(whash, workload, k.key, ops, cand.trace, decision.ours, decision.tuned,
                       max(trials, cand.trials if cand is previous else trials),
                       decision.keep, k.flops, stamp)
    return KernelOutcome(cost, ops, decision, len(candidates)), rec


def _workload(prim: Any) -> Any:
    from backends.tvm.tune.search import workload_of

    return workload_of(prim)
