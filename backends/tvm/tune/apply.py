"""Compiling a kernel from a tuning record: what ``build(..., tuning=DB)`` does per kernel.

:func:`compile_tuned` finds the kernel's record by its Relay-level key; when the record's
tuned kernel won, the kernel is compiled with :class:`TunedSchedule` — the record's trace
replayed on the kernel's ``PrimFunc`` after checking that the ``PrimFunc`` is the record's
workload — through the usual compiler (``compile_function(..., schedule=, variant=)``). The
kernel goes into the kernel cache under a key made of our kernel's key and
:func:`record_variant` (a digest of the record's workload and trace: what decides the
code), so a warm build with the same database compiles nothing, a build without it never
meets the tuned kernel, and ``exe.save`` copies it like any other. Any failure (a stale
record, a trace TVM refuses) gives None, and the caller compiles our own kernel; the verdict
is kept in the kernel cache (``KernelCache.remember_stale``, on disk), so later builds, in
this process or another, do not try the record again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from backends.tvm.target import Target
from backends.tvm.tune.database import TuningDatabase, TuningRecord, relay_key
from backends.tvm.tune.search import apply_trace, workload_of

__all__ = ["StaleRecord", "TunedSchedule", "compile_tuned", "compile_with", "kernel_prim",
           "record_variant", "tuned_key", "workload_hash"]


class StaleRecord(Exception):
    """The kernel's ``PrimFunc`` is not the workload its record was tuned for."""


def workload_hash(prim: Any) -> str:
    """The structural hash of a kernel's workload (:func:`~.search.workload_of`), as hex."""
    import tvm_ffi

    return f"{tvm_ffi.structural_hash(workload_of(prim)) & (2 ** 64 - 1):016x}"


def record_variant(record: TuningRecord) -> str:
    """The name of a record's schedule in kernel cache keys: a digest of its workload and
    trace (its measured times and verdict are left out: they do not change the code)."""
    text = json.dumps([record.workload_hash, record.workload, record.trace], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def tuned_key(record: TuningRecord, func: Any, arg_types: Sequence[Any], target: Target,
              cache: Any = None) -> str:
    """The kernel cache key of ``func`` compiled with ``record``'s schedule.

    Raises:
        LoweringFailed: ``func`` has no key (a lowering that declines).
    """
    from backends.tvm.kernel.cache import default_cache, variant_key

    store = default_cache() if cache is None else cache
    return variant_key(store.key_of(func, list(arg_types), target), record_variant(record))


def kernel_prim(func: Any, arg_types: Sequence[Any], target: Target) -> tuple[Any, Any]:
    """``(prim, lowered)``: the kernel's ``PrimFunc`` exactly as the compiler makes it before
    scheduling (lowered, element-aligned buffers), and the lowering."""
    from tvm import te

    from backends.tvm.kernel.compile import _relax_alignment
    from backends.tvm.te_build import build_te

    lowered = build_te(func, list(arg_types), target)
    prim = te.create_prim_func([*lowered.inputs, *lowered.constants, *lowered.outputs])
    prim, _ = _relax_alignment(prim)
    return prim, lowered


class TunedSchedule:
    """The scheduling function ``PrimFunc -> IRModule`` replaying a MetaSchedule trace.

    Args:
        trace: the trace as plain JSON (:func:`~.search.plain_json`).
        workload: the ``IRModule`` the trace was tuned for (None: not checked).
        report: the :class:`~backends.tvm.sched.ScheduleReport` the compiler records with
            the kernel (None: none).
    Raises (when called):
        StaleRecord: the ``PrimFunc`` is not ``workload``.
    """

    def __init__(self, trace: Any, workload: Any = None, report: Any = None) -> None:
        self.trace = trace
        self.workload = workload
        self.report = report

    def __call__(self, prim: Any) -> Any:
        import tvm
        import tvm_ffi

        name = str(prim.attrs["global_symbol"]) if prim.attrs is not None \
            and "global_symbol" in prim.attrs else "main"
        if self.workload is not None and \
                not tvm_ffi.structural_equal(workload_of(prim), self.workload):
            raise StaleRecord("the kernel's PrimFunc differs from the tuned workload")
        mod = apply_trace(prim, self.trace)
        fn = mod[mod.get_global_vars()[0]].with_attr("global_symbol", name)
        return tvm.IRModule({name: fn})


def compile_tuned(db: TuningDatabase, func: Any, arg_types: Sequence[Any], target: Target,
                  cache: Any = None) -> tuple[Any, TuningRecord] | None:
    """``(kernel, record)``: the kernel of ``func`` compiled from its winning tuning record
    (through the kernel cache), or None (no record, a record that lost, or one that no longer
    applies)."""
    from backends.tvm.kernel.cache import default_cache
    from backends.tvm.te_build import LoweringFailed

    record = db.by_relay_key(relay_key(func, arg_types))
    if record is None or not record.won:
        return None
    store = default_cache() if cache is None else cache
    try:
        key = tuned_key(record, func, arg_types, target, store)
    except LoweringFailed:
        return None
    if store.stale(key) is not None:     # found so before, by this or an earlier process
        return None
    kernel = compile_with(record, func, arg_types, target, store)
    if kernel is None:
        store.remember_stale(key, f"the record of {record.relay_key[:12]} does not apply: "
                                  f"its workload differs, or TVM refuses its trace")
        return None
    return kernel, record


def compile_with(record: TuningRecord, func: Any, arg_types: Sequence[Any], target: Target,
                 cache: Any = None, keep: bool = True) -> Any:
    """``func`` compiled with ``record``'s trace (None: the trace does not apply).

    ``keep``: put the kernel in the kernel cache (under :func:`tuned_key`); False for a
    candidate being judged (``relay tune``), which is not kept.
    """
    from backends.tvm.kernel.compile import compile_function
    from backends.tvm.kernel.runtime import NoLowering
    from backends.tvm.sched import ScheduleReport

    report = ScheduleReport(
        chosen=f"tuned (MetaSchedule, {record.trials} trials: {record.speedup:.2f}x ours)")
    try:
        workload = record.module()
    except Exception:  # noqa: BLE001 - TVM cannot read the workload back: not this record
        return None
    try:
        kernel = compile_function(func, list(arg_types), target=target, cache=cache,
                                  schedule=TunedSchedule(record.trace, workload, report),
                                  variant=record_variant(record) if keep else None)
    except (NoLowering, ValueError, RuntimeError):
        return None
    kernel.schedule = report         # this record's figures (a cached kernel has its own)
    return kernel
