"""Vision-model latency of the TVM backend against the peers (issue 16 §4; part of ``make paper``).

For each vision model (``models.get``: ``dqn``, ``mobilenet``, ``resnet18``, ``vgg16``) this
measures, in one run:

* our TVM backend (graph executor) built at ``-O0``, at ``-O3``, at ``-O3`` with the Target
  record's ``winograd`` switch off (every convolution direct: the Winograd rule's before and
  after in one run), and at ``-O3`` with its ``claims`` switch off (TVM's static split of the
  parallel loops: ``backends.tvm.kernel.claims``' before and after) (``backends.tvm.build`` with
  the model's weights bound as ``params``), and the build time of each (a fresh in-memory
  kernel cache with ``--cold``: every kernel compiled; else the default cache, whose disk
  copy makes a second run warm);
* onnxruntime and PyTorch eager on the same weights (the helpers of ``bench/paper.py``:
  ``ours``-style builds, ``torch_eager``, ``onnx_runtime``, ``median_time``), outputs checked
  against ours before timing;
* the model's arithmetic: multiply-adds of every ``nn.conv2d`` and ``nn.dense`` counted from
  the type-checked module (2 FLOPs each), and our ``-O3`` throughput in GFLOP/s against the
  machine's attainable fp32 peak, measured at the start of the same run
  (:func:`bench.peak.sgemm_gflops`: numpy's BLAS SGEMM with the same thread count; the
  nominal peak from ``/proc/cpuinfo`` is printed beside it).

Protocol (``bench/protocol.py``): batch 1, two threads everywhere, thread spinning off in
TVM's and onnxruntime's pools, every system (ours at each level and the peers) timed in
``--blocks`` alternating blocks of ``--runs`` calls, median [min–max] of all of them, wall
clock, the load average before and after and the CPU and vector width printed with the table.
A peer that is not installed is a ``—`` cell and a note, never a made-up number. Timings on a
shared machine are noisy: compare columns of one run.

Usage: ``python bench/models.py [--models NAME ...] [--runs N] [--blocks N] [--quick]
[--cold]`` (``--quick``: 2 blocks of 3 calls).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TVM_NUM_THREADS", "2")
os.environ.setdefault("OMP_NUM_THREADS", "2")

_HERE = Path(__file__).resolve().parent
# This file is ``bench/models.py``: the ``models`` package must win over it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import numpy as np  # noqa: E402

import models  # noqa: E402
from bench.paper import (  # noqa: E402
    THREADS,
    Missing,
    Ratio,
    Timing,
    load_average,
    onnx_runtime,
    table,
    torch_eager,
)
from bench.peak import nominal_gflops, sgemm_gflops  # noqa: E402
from bench.protocol import machine_line, time_in_blocks  # noqa: E402  (before the backend)
from semantics.expr import Call, Op  # noqa: E402
from semantics.module import IRModule  # noqa: E402
from semantics.types import TensorType  # noqa: E402
from semantics.visitor import post_order  # noqa: E402


def model_flops(mod: IRModule) -> int:
    """FLOPs (2 per multiply-add) of the ``nn.conv2d`` and ``nn.dense`` calls of ``@main``.

    Args:
        mod: a model as ``models.get`` returns it (``NCHW``/``OIHW`` convolutions).
    Returns:
        The count, from the inferred types (output elements × reduction length).
    Raises:
        ValueError: a convolution or dense whose types are not concrete tensors.
    """
    import typechecker

    typed = typechecker.infer(mod)
    assert isinstance(typed, IRModule)
    total = 0
    for node in post_order(typed.functions["main"].body):
        if not (isinstance(node, Call) and isinstance(node.op, Op)):
            continue
        name = node.op.name
        if name not in ("nn.conv2d", "nn.dense"):
            continue
        out, weight = node.checked_type, node.args[1].checked_type
        if not isinstance(out, TensorType) or not isinstance(weight, TensorType) or not all(
                type(d) is int for d in (*out.shape, *weight.shape)):
            raise ValueError(f"{name} without concrete types")
        outputs = int(np.prod([int(d) for d in out.shape], dtype=np.int64))  # type: ignore[call-overload]
        wdims = [int(d) for d in weight.shape]  # type: ignore[call-overload]
        if name == "nn.dense":        # weight (units, K)
            reduction = wdims[1]
        else:                         # OIHW: each output sums I/groups * KH * KW products
            layout = node.attrs.get("kernel_layout") or "OIHW"
            if layout != "OIHW":
                raise ValueError(f"model_flops expects OIHW kernels, got {layout}")
            reduction = wdims[1] * wdims[2] * wdims[3]
        total += 2 * outputs * reduction
    return total


def _build(name: str, opt_level: int, cold: bool, winograd: bool = True,
           claims: bool = True) -> tuple[Any, float]:
    """Our graph-executor build of ``name`` at ``opt_level`` (``winograd`` False: the Target
    record's switch off, every convolution direct; ``claims`` False: TVM's static split of
    parallel loops instead of claimed units) and its build seconds."""
    try:
        from backends.tvm import build
        from backends.tvm.kernel.cache import KernelCache, default_cache
        from backends.tvm.target import Target
    except ImportError as e:
        raise Missing(f"the TVM backend is not available ({e})") from e
    mod, params = models.get(name)
    cache = KernelCache(disk=False) if cold else None
    target = Target.host().replace(winograd=winograd, claims=claims)
    start = time.perf_counter()
    exe = build(mod, params=params, opt_level=opt_level, executor="graph", cache=cache,
                target=target)
    seconds = time.perf_counter() - start
    (cache or default_cache()).flush()   # background disk writes must not overlap the timing
    return exe, seconds


def _close(got: Any, want: np.ndarray) -> bool:
    got = np.asarray(got.detach().numpy() if hasattr(got, "detach") else got)
    scale = max(1.0, float(np.abs(want).max()))
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=1e-3,
                                                        atol=1e-3 * scale))


def measure(name: str, args: argparse.Namespace, workdir: Path, notes: list[str]
            ) -> list[Any]:
    """One row of the table for model ``name`` (see the module docstring)."""
    inputs = models.example_inputs(name)
    mod, _ = models.get(name)
    flops = model_flops(mod)
    times: dict[str, Timing | None] = {}
    builds: dict[str, float] = {}
    want: np.ndarray | None = None
    systems: dict[str, Any] = {}
    for key, level, winograd, claims in (("O0", 0, True, True), ("O3 direct", 3, False, True),
                                         ("O3 static", 3, True, False), ("O3", 3, True, True)):
        exe, seconds = _build(name, level, args.cold, winograd, claims)
        builds[key] = seconds
        out = np.asarray(exe(*inputs))
        if want is None:
            want = out
        elif not _close(out, want):
            notes.append(f"{name}: {key} disagrees with -O0 (max |diff| "
                         f"{float(np.abs(out - want).max()):.3g})")
        systems[key] = lambda exe=exe: exe(*inputs)
    assert want is not None
    for label, factory in (("onnxruntime", lambda n: onnx_runtime(n, workdir)),
                           ("PyTorch", torch_eager)):
        try:
            run, convert = factory(name)
            peer_in = convert(inputs)
            if not _close(run(*peer_in), want):
                notes.append(f"{name}: {label}'s output differs from ours; not timed")
                continue
            systems[label] = lambda run=run, a=peer_in: run(*a)
        except Missing as e:
            notes.append(f"{label} on {name}: {e}")
        except Exception as e:  # noqa: BLE001 - a peer's failure is reported, not hidden
            notes.append(f"{label} on {name}: {type(e).__name__}: "
                         f"{str(e).splitlines()[0][:160] if str(e) else ''}")
    # every system in alternating blocks, spinning off (bench.protocol)
    timed = {k: v for k, v in systems.items() if k not in args.skip}
    measured = time_in_blocks(timed, blocks=args.blocks, runs=args.runs)
    notes.append(f"{name}: {measured.describe()}")
    times.update(measured.timings)
    o0, o3, direct = times.get("O0"), times["O3"], times.get("O3 direct")
    static = times.get("O3 static")
    assert o3 is not None
    ort, pt = times.get("onnxruntime"), times.get("PyTorch")
    gflops = flops / o3.median / 1e9

    def ms(t: Timing | None) -> Any:
        return "—" if t is None else t.ms()

    def ratio(t: Timing | None) -> Any:
        return "—" if t is None else Ratio.of(t, o3).cell()

    return [name, flops / 1e9, ms(o0), ms(direct), ms(o3), ratio(o0), ratio(direct),
            ratio(static), ms(ort), ratio(ort),
            "—" if ort is None or direct is None else Ratio.of(ort, direct).cell(),
            ms(pt), ratio(pt), gflops, 100 * gflops / args.peak, builds["O0"], builds["O3"]]


HEADER = ["model", "GFLOP", "-O0 (ms)", "-O3 direct (ms)", "-O3 (ms)", "-O3 speedup",
          "Winograd speedup", "claims speedup", "onnxruntime (ms)", "ort / ours",
          "ort / ours direct",
          "PyTorch (ms)", "PyTorch / ours", "GFLOP/s (-O3)", "% of peak", "build -O0 (s)",
          "build -O3 (s)"]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table (see the module docstring).

    Returns:
        0 (a model that cannot be built is reported in the notes).
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="*", default=list(models.VISION),
                    choices=list(models.VISION))
    ap.add_argument("--runs", type=int, default=5, help="timed calls per block")
    ap.add_argument("--blocks", type=int, default=5, help="alternating blocks per system")
    ap.add_argument("--quick", action="store_true", help="2 blocks of 3 calls")
    ap.add_argument("--skip", nargs="*", default=[],
                    choices=["O0", "O3 direct", "O3 static", "onnxruntime", "PyTorch"],
                    help="systems built and checked but not timed (their cells are —)")
    ap.add_argument("--cold", action="store_true",
                    help="build with an empty in-memory kernel cache (cold build times)")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs, args.blocks = 3, 2
    args.peak = sgemm_gflops()
    nominal = nominal_gflops(THREADS)
    rows: list[list[Any]] = []
    notes: list[str] = []
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            try:
                rows.append(measure(name, args, Path(tmp), notes))
                print(table(HEADER, rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
            except Missing as e:
                notes.append(f"{name}: {e}")
            except Exception as e:  # noqa: BLE001 - reported, the other models still run
                notes.append(f"{name}: our build or run failed: {type(e).__name__}: {e}")
    load_after = load_average()
    cpus = os.cpu_count() or 1
    loads = f"{_load(load_before)} → {_load(load_after)}"
    if any(x is not None and x > cpus for x in (load_before, load_after)):
        print(f"> **Warning: the machine was loaded beyond its {cpus} CPUs** (1-minute load "
              f"average before → after: {loads}): read the times with their [min–max] "
              f"ranges.\n")
    print(machine_line() + "\n")
    print(table(HEADER, rows) if rows else "(no model measured)")
    print(f"\nbatch 1, {THREADS} threads, median [min–max] of {args.blocks} alternating "
          f"blocks of {args.runs} calls per system (bench.protocol: every system in turn, "
          f"thread spinning off; -O3 direct: the Target's winograd switch off); "
          f"1-minute load average "
          f"before → after: {loads} ({cpus} CPUs); GFLOP/s from the -O3 median; peak "
          f"{args.peak:.0f} GFLOP/s (numpy's BLAS SGEMM, {THREADS} threads, "
          f"this run; nominal "
          f"{'unknown' if nominal is None else f'{nominal:.0f}'} GFLOP/s); "
          f"ratios above 1: we are faster; "
          f"build times {'cold (empty kernel cache)' if args.cold else 'with the kernel cache'}.")
    for note in notes:
        print(f"* {note}")
    return 0


def _load(x: float | None) -> str:
    return "unknown" if x is None else f"{x:.2f}"


if __name__ == "__main__":
    raise SystemExit(main())
