"""The timing protocol of the benchmarks that compare systems (issue 35, item 5).

Measured on the issue's machine: TVM's worker threads keep a core spinning about 150 ms after
each parallel kernel, and onnxruntime's intra-op pool spins too, so a system timed right after
the other one read up to 3× slower. The protocol therefore:

* **turns spinning off** in both runtimes: ``TVM_THREAD_POOL_SPIN_COUNT=0`` is set when this
  module is imported — it must be imported before TVM's thread pool starts (the first parallel
  kernel), which :func:`spinning_is_off` checks — and onnxruntime sessions are made with
  :func:`ort_session_options` (``session.intra_op.allow_spinning`` and
  ``session.inter_op.allow_spinning`` ``"0"``);
* **times the systems in alternating blocks** (:func:`time_in_blocks`): block after block,
  each system runs a warm-up call and then ``runs`` timed calls, the order of the systems
  rotating from block to block, so every system sees the machine's slow and fast phases
  alike and none always runs right after the same other one;
* **reports** the median and the min–max of every system's timed calls, the 1-minute load
  average before and after, and names the CPU and the vector width from the Target record
  (:func:`machine_line`): a ratio of two systems means something only with those beside it.

Usage from a benchmark: ``from bench.protocol import ...`` *before* importing the backend.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ["TVM_THREAD_POOL_SPIN_COUNT"] = "0"
os.environ.setdefault("TVM_NUM_THREADS", "2")
os.environ.setdefault("OMP_NUM_THREADS", "2")

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from bench.report import Timing, format_load, load_average  # noqa: E402

__all__ = ["BlockTimings", "machine_line", "ort_session_options", "spinning_is_off",
           "time_in_blocks"]


def spinning_is_off() -> bool:
    """TVM's pool was told not to spin (the variable is read when the pool starts: import this
    module before the first parallel kernel runs)."""
    return os.environ.get("TVM_THREAD_POOL_SPIN_COUNT") == "0"


def ort_session_options(threads: int) -> Any:
    """onnxruntime ``SessionOptions`` with ``threads`` intra-op threads, one inter-op thread,
    and thread spinning off in both pools."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return opts


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return "unknown CPU"


def machine_line() -> str:
    """The CPU (its name and LLVM's), the float32 lanes and registers of the Target record,
    the threads, and the spinning settings: one line for a benchmark's header."""
    try:
        from backends.tvm.target import Target

        t = Target.host()
        unit = {16: "AVX-512", 8: "AVX2", 4: "128-bit"}.get(t.lanes, "?")
        target = (f"LLVM {t.mcpu}, {t.lanes} float32 lanes ({unit}), {t.registers} vector "
                  f"registers, L2 {t.l2_bytes // 1024} KiB")
    except ImportError:
        target = "no TVM backend"
    threads = os.environ.get("TVM_NUM_THREADS", "?")
    return (f"{_cpu_model()} ({target}); {threads} threads; thread spinning off "
            f"(TVM_THREAD_POOL_SPIN_COUNT=0, onnxruntime allow_spinning=0)")


@dataclass
class BlockTimings:
    """What :func:`time_in_blocks` measured: a :class:`~bench.report.Timing` per system (over
    all its timed calls), the blocks and calls per block, and the load before and after."""

    timings: dict[str, Timing]
    blocks: int
    runs: int
    load_before: float | None
    load_after: float | None
    samples: dict[str, list[float]] = field(default_factory=dict)

    def describe(self) -> str:
        """One line: the protocol and the load."""
        return (f"{self.blocks} alternating blocks of {self.runs} timed calls per system "
                f"(after one warm-up call per block), median [min–max]; 1-minute load "
                f"average before → after: {format_load(self.load_before)} → "
                f"{format_load(self.load_after)} ({os.cpu_count() or 1} CPUs)")


def time_in_blocks(systems: dict[str, Callable[[], Any]], *, blocks: int = 5, runs: int = 5,
                   gap: float = 0.05) -> BlockTimings:
    """Time each of ``systems`` (name → a call to time) in ``blocks`` alternating blocks of
    ``runs`` calls (module docstring), sleeping ``gap`` seconds between blocks.

    Raises:
        ValueError: no systems, or fewer than one block or run.
    """
    if not systems or blocks < 1 or runs < 1:
        raise ValueError("time_in_blocks needs systems, blocks >= 1 and runs >= 1")
    names = list(systems)
    samples: dict[str, list[float]] = {n: [] for n in names}
    before = load_average()
    for b in range(blocks):
        order = names[b % len(names):] + names[:b % len(names)]
        for name in order:
            fn = systems[name]
            fn()
            for _ in range(runs):
                start = time.perf_counter()
                fn()
                samples[name].append(time.perf_counter() - start)
            time.sleep(gap)
    after = load_average()
    return BlockTimings({n: Timing.of(s) for n, s in samples.items()}, blocks, runs, before,
                        after, samples)

