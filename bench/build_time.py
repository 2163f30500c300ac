"""Build time of the TVM backend: cold and warm builds of vision models (issue 35).

For each model (``models.get``; default ``resnet18`` and ``mobilenet``, ``--models`` for others,
``vgg16`` included) at ``-O3`` with the graph executor, ``--repeats`` times:

* a **cold** build: a kernel cache in a fresh temporary directory (``KernelCache(dir)``),
  so every kernel compiles and the pass pipeline runs (the libraries the process remembers by
  code are forgotten and the compile workers stopped first, see :func:`_forget_compiled_code`);
* a **warm** build: a new ``KernelCache`` on the same directory (nothing in memory, as in a
  new process; the disk holds the kernels and the memo of the fused module).

It prints min / median / max of the wall-clock seconds and of this process's CPU seconds
(``time.process_time``: on a shared machine the wall clock also counts waiting for a CPU),
the build report's phases (median), the kernels each build compiled (a warm build compiles
none), and a table of the ten kernels that took the longest to compile in the first cold
build, by step (:class:`backends.tvm.kernel.compile.CompileTimes`: lowering, schedule,
``tvm.compile`` — TIR passes and LLVM IR optimization —, machine code and link). The load
average is printed before and after, with the CPU (``bench.protocol.machine_line``).

``--jobs N`` compiles with ``N - 1`` worker processes besides this one (their CPU time is
not in the CPU column, and their kernels are not in the table); without it, the build's
default (``backends.tvm.kernel.workers._default_jobs``: workers when the load average
leaves a CPU free; the number it picks at the start is printed). Repeat 0 is the first build
of the process (lazy imports, fresh memory); the workers, once started, serve every repeat.

Usage: ``python bench/build_time.py [--models NAME ...] [--repeats N] [--jobs N]``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TVM_NUM_THREADS", "2")

_HERE = Path(__file__).resolve().parent
# ``bench/models.py`` must not shadow the ``models`` package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from bench.protocol import machine_line  # noqa: E402


def _spread(xs: list[float]) -> str:
    return f"{min(xs):6.2f} {statistics.median(xs):6.2f} {max(xs):6.2f}"


def _one_build(mod: Any, params: Any, cache: Any, jobs: int | None
               ) -> tuple[float, float, Any]:
    from backends.tvm import build

    wall, cpu = time.perf_counter(), time.process_time()
    exe = build(mod, params=params, opt_level=3, executor="graph", cache=cache, jobs=jobs)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    cache.flush()          # the background disk writes must not overlap the next build
    return wall, cpu, exe.report


def _forget_compiled_code() -> None:
    """Make the next build cold in this process too: forget the libraries this process and
    its workers remember by code (``backends.tvm.kernel.compile.TWINS``: a kernel compiled
    by an earlier repeat would be a twin) and stop the workers (new ones start fresh)."""
    from backends.tvm.kernel.compile import TWINS
    from backends.tvm.kernel.workers import shutdown_workers

    TWINS.clear()
    shutdown_workers()


def measure(name: str, repeats: int, jobs: int | None) -> dict[str, Any]:
    """Cold and warm builds of model ``name``: seconds, phases, kernels compiled, and the
    per-kernel compile times of the first cold build."""
    from backends.tvm.kernel import KernelCache
    from backends.tvm.kernel.compile import record_compile_times

    mod, params = importlib.import_module("models").get(name)
    out: dict[str, Any] = {"cold": [], "warm": [], "cold_cpu": [], "warm_cpu": [],
                           "phases": {"cold": [], "warm": []}, "compiled": {}, "kernels": []}
    for rep in range(repeats):
        directory = Path(tempfile.mkdtemp(prefix="relay-build-time-"))
        _forget_compiled_code()
        try:
            with record_compile_times() as times:
                wall, cpu, report = _one_build(mod, params, KernelCache(directory), jobs)
            if rep == 0:
                out["kernels"] = sorted(times, key=lambda t: -t.total)
            out["cold"].append(wall)
            out["cold_cpu"].append(cpu)
            out["phases"]["cold"].append(report.phases)
            out["compiled"]["cold"] = report.kernels_compiled
            wall, cpu, report = _one_build(mod, params, KernelCache(directory), jobs)
            out["warm"].append(wall)
            out["warm_cpu"].append(cpu)
            out["phases"]["warm"].append(report.phases)
            out["compiled"]["warm"] = report.kernels_compiled
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    return out


def _phases(rows: list[dict[str, float]]) -> str:
    names = list(dict.fromkeys(k for r in rows for k in r))
    return ", ".join(f"{k} {statistics.median(r.get(k, 0.0) for r in rows):.2f}" for k in names)


def _kernel_table(kernels: list[Any], top: int = 10) -> list[str]:
    steps = ["lower", "schedule", "tvm.compile", "codegen+link"]
    lines = [f"    {'total':>6} " + " ".join(f"{s:>12}" for s in steps) + "  operators / shapes"]
    for t in kernels[:top]:
        ops = ",".join(sorted(set(t.ops)))
        shape = "x".join(map(str, t.shapes[0])) if t.shapes else ""
        lines.append(f"    {t.total:6.2f} " + " ".join(f"{t.steps.get(s, 0.0):12.2f}"
                                                       for s in steps) + f"  {ops} {shape}")
    total = {s: sum(t.steps.get(s, 0.0) for t in kernels) for s in steps}
    lines.append(f"    {sum(total.values()):6.2f} " + " ".join(f"{total[s]:12.2f}"
                                                              for s in steps)
                 + f"  all {len(kernels)} kernels compiled in this process")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["resnet18", "mobilenet"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=None)
    args = ap.parse_args(argv)
    from backends.tvm.kernel.workers import _default_jobs

    jobs = args.jobs if args.jobs is not None else f"default ({_default_jobs()} now)"
    print(f"# {machine_line()}")
    print(f"# load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"-O3, graph executor, {args.repeats} repeats, jobs={jobs}; "
          f"seconds as min median max")
    for name in args.models:
        r = measure(name, args.repeats, args.jobs)
        print(f"\n{name}: cold build {_spread(r['cold'])} s wall, {_spread(r['cold_cpu'])} s CPU"
              f" ({r['compiled']['cold']} kernels compiled)")
        print("  in order (wall/CPU): "
              + ", ".join(f"{w:.2f}/{c:.2f}" for w, c in zip(r["cold"], r["cold_cpu"])))
        print(f"  phases (median): {_phases(r['phases']['cold'])}")
        print(f"{name}: warm build {_spread(r['warm'])} s wall, {_spread(r['warm_cpu'])} s CPU"
              f" ({r['compiled']['warm']} kernels compiled)")
        print(f"  phases (median): {_phases(r['phases']['warm'])}")
        print("  the 10 slowest kernels of the first cold build (CPU seconds by step):")
        print("\n".join(_kernel_table(r["kernels"])))
    print(f"\n# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
