"""Compiling a kernel from a tuning record: what ``build(..., tuning=DB)`` does per kernel.

:func:`compile_tuned` finds the kernel's record by its Relay-level key; when the record's
tuned kernel won, the kernel is compiled with :class:`TunedSchedule` — the record's trace
replayed on the kernel's ``PrimFunc`` after checking that the ``PrimFunc`` is the record's
workload — through the usual compiler (``compile_function(..., schedule=)``: such kernels
are not put in the kernel cache, they compile at each build). Any failure (a stale record, a
trace TVM refuses) gives None, and the caller compiles our own kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backends.tvm.target import Target
from backends.tvm.tune.database import TuningDatabase, TuningRecord, relay_key
from backends.tvm.tune.search import apply_trace, workload_of

__all__ = ["StaleRecord", "TunedSchedule", "compile_tuned", "kernel_prim", "workload_hash"]


class StaleRecord(Exception):
    """The kernel's ``PrimFunc`` is not the workload its record was tuned for."""


def workload_hash(prim: Any) -> str:
    """The structural hash of a kernel's workload (:func:`~.search.workload_of`), as hex."""
    import tvm_ffi

    return f"{tvm_ffi.structural_hash(workload_of(prim)) & (2 ** 64 - 1):016x}"


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
    Raises (when called):
        StaleRecord: the ``PrimFunc`` is not ``workload``.
    """

    def __init__(self, trace: Any, workload: Any = None) -> None:
        self.trace = trace
        self.workload = workload

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
                  cache: Any = None) -> Any:
    """The kernel of ``func`` compiled from its winning tuning record, or None (no record, a
    record that lost, or one that no longer applies)."""
    record = db.by_relay_key(relay_key(func, arg_types))
    if record is None or not record.won:
        return None
    return compile_with(record, func, arg_types, target, cache)


def compile_with(record: TuningRecord, func: Any, arg_types: Sequence[Any], target: Target,
                 cache: Any = None) -> Any:
    """``func`` compiled with ``record``'s trace (None: the trace does not apply)."""
    from backends.tvm.kernel.compile import compile_function
    from backends.tvm.kernel.runtime import NoLowering
    from backends.tvm.sched import ScheduleReport

    try:
        workload = record.module()
    except Exception:  # noqa: BLE001 - TVM cannot read the workload back: not this record
        return None
    try:
        kernel = compile_function(func, list(arg_types), target=target, cache=cache,
                                  schedule=TunedSchedule(record.trace, workload))
    except (NoLowering, ValueError, RuntimeError):
        return None
    kernel.schedule = ScheduleReport(
        chosen=f"tuned (MetaSchedule, {record.trials} trials: {record.speedup:.2f}x ours)")
    return kernel
