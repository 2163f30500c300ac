"""Sequence models before → after one kernel per recurrent step (issue 35, item 3).

For ``lstm`` and ``gru`` (35 steps, against onnxruntime), ``char_rnn`` and ``tree_lstm``
(against PyTorch eager), on the VM at ``-O3``, in one run:

* **before**: the build as it was before this work, obtained by switching off its three
  parts — ``passes.fuse_cells`` (one kernel per step), the host run of dynamic-shape data
  movement (``backends.tvm.host_movement``) and the 1 MiB floor of a parallel GEMV
  (``backends.tvm.sched.dense.GEMV_PARALLEL_MIN_BYTES``) — with its own empty in-memory
  kernel cache (a kernel's cache key does not see those switches);
* **after**: the build as it is;
* **static**: the build as it is but for the parallel loops, which keep TVM's static split
  (the Target record's ``claims`` off: ``backends.tvm.kernel.claims``' before and after);
* the peer on the same weights and inputs (``bench/paper.py``'s runners, outputs checked
  against ours before timing).

Per model: compiled-kernel calls per run (counted) and the kernels a new sequence length
compiles (``lstm``/``gru``: a second length after the first), then the three systems timed
by ``bench.protocol.time_in_blocks`` (alternating blocks, thread spinning off), median
[min–max], the load average before and after, the CPU and vector width.

Usage: ``python bench/cells.py [--threads N] [--runs N] [--blocks N] [--models ...]``
(``--threads 1``: one thread for TVM and the peer; run it as its own process — the thread
count is read when the pools start).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

if __name__ == "__main__":      # the thread count must be set before any pool starts
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            os.environ["TVM_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = sys.argv[i + 1]

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import numpy as np  # noqa: E402

from bench.protocol import machine_line, time_in_blocks  # noqa: E402  (before the backend)

MODELS = ("lstm", "gru", "char_rnn", "tree_lstm")
PEER = {"lstm": "onnxruntime", "gru": "onnxruntime", "char_rnn": "PyTorch",
        "tree_lstm": "PyTorch"}


def _switch_modules() -> tuple[Any, Any, Any]:
    """The modules holding the switches (``host_movement`` is called from
    ``backends.tvm.kernel_table``)."""
    import importlib

    return tuple(importlib.import_module(m) for m in (  # type: ignore[return-value]
        "backends.tvm.kernel_table", "backends.tvm.sched.dense", "passes.fuse_cells"))


class _Before:
    """The switches that give the build as it was before (module docstring)."""

    def __enter__(self) -> None:
        b, d, f = _switch_modules()
        self.saved = (f.fuse_cells, b.host_movement, d.GEMV_PARALLEL_MIN_BYTES)
        f.fuse_cells = lambda m: m
        b.host_movement = lambda func: None
        d.GEMV_PARALLEL_MIN_BYTES = 0

    def __exit__(self, *exc: Any) -> None:
        b, d, f = _switch_modules()
        f.fuse_cells, b.host_movement, d.GEMV_PARALLEL_MIN_BYTES = self.saved


def _counted_build(name: str, before: bool, claims: bool = True) -> tuple[Any, list[int]]:
    """A VM build of ``name`` whose compiled kernels count their calls (in ``calls[0]``);
    ``claims`` False: the Target record's claimed parallel loops off."""
    import models
    from backends.tvm import build
    from backends.tvm.build import KernelTable
    from backends.tvm.fallback import FallbackKernel
    from backends.tvm.kernel.cache import KernelCache
    from backends.tvm.kernel_table import FlatArgs
    from backends.tvm.target import Target

    calls = [0]
    original = KernelTable.kernel_for

    def kernel_for(self: Any, func: Any) -> Any:
        k = original(self, func)
        # compiled kernels (static, per-shape slots, tuple-argument adapters), not the host
        # data movement (a reference or a row view)
        if isinstance(k, FallbackKernel) or type(k).__name__ == "_RowTake":
            return k
        # the VM calls a tuple-argument kernel through its flat_call: count that one
        inner = k.flat_call if isinstance(k, FlatArgs) else k

        def run(*args: Any, **kw: Any) -> Any:
            calls[0] += 1
            return inner(*args, **kw)
        return run

    mod, params = models.get(name)
    target = Target.host().replace(claims=claims)
    KernelTable.kernel_for = kernel_for  # type: ignore[method-assign]
    try:
        with _Before() if before else _Null():
            exe = build(mod, params=params, executor="vm", cache=KernelCache(disk=False),
                        target=target)
    finally:
        KernelTable.kernel_for = original  # type: ignore[method-assign]
    return exe, calls


def _peer(name: str, workdir: Path) -> tuple[Any, Any]:
    from bench import paper

    if PEER[name] == "onnxruntime":
        return paper.onnx_runtime(name, workdir)
    return paper.torch_eager(name)


def measure(name: str, args: argparse.Namespace, workdir: Path, notes: list[str]
            ) -> list[Any]:
    """One row: kernel calls, new-length compiles, and the timings (module docstring)."""
    import models
    from bench.paper import _as_array

    inputs = models.example_inputs(name)
    systems: dict[str, Any] = {}
    counts: dict[str, Any] = {}
    want = None
    for label, old, claims in (("before", True, True), ("static", False, False),
                               ("after", False, True)):
        exe, calls = _counted_build(name, old, claims)
        exe(*inputs)
        calls[0] = 0
        out = _as_array(exe(*inputs))
        counts[label] = calls[0]
        if name in ("lstm", "gru"):
            specs = len(exe.kernels.compiled_specs)
            with _Before() if old else _Null():
                exe(np.random.default_rng(1).standard_normal((12, 1, 650)).astype("float32"))
            counts[label + " new"] = len(exe.kernels.compiled_specs) - specs
        if want is None:
            want = out
        elif not np.allclose(out, want, rtol=1e-4, atol=1e-5):
            notes.append(f"{name}: {label} differs from before "
                         f"({np.abs(out - want).max():.3g})")
        systems[label] = lambda exe=exe: exe(*inputs)
    assert want is not None
    peer = PEER[name]
    try:
        run, convert = _peer(name, workdir)
        peer_in = convert(inputs)
        got = _as_array(run(*peer_in))
        if np.allclose(got, want, rtol=1e-3, atol=1e-3 * max(1.0, float(np.abs(want).max()))):
            systems[peer] = lambda run=run, a=peer_in: run(*a)
        else:
            notes.append(f"{name}: {peer}'s output differs from ours; not timed")
    except Exception as e:  # noqa: BLE001 - a missing peer is reported, not fatal
        notes.append(f"{peer} on {name}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
    measured = time_in_blocks(systems, blocks=args.blocks, runs=args.runs)
    notes.append(f"{name}: {measured.describe()}")
    t = measured.timings
    before, after, static, p = t["before"], t["after"], t["static"], t.get(peer)

    def ratio(a: Any, b: Any) -> str:
        return "—" if a is None or b is None else f"{a.median / b.median:.2f}"

    steps = 35 if name in ("lstm", "gru") else None
    per_step = (lambda c: f"{c / steps:.2f}") if steps else (lambda c: "—")
    return [name, counts["before"], counts["after"], per_step(counts["before"]),
            per_step(counts["after"]), counts.get("before new", "—"),
            counts.get("after new", "—"), before.ms(), after.ms(), ratio(before, after),
            static.ms(), ratio(static, after), peer, "—" if p is None else p.ms(),
            ratio(p, before), ratio(p, after)]


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


HEADER = ["model", "kernel calls before", "after", "per step before", "after",
          "new-length compiles before", "after", "before (ms)", "after (ms)",
          "before / after", "static split (ms)", "static / after", "peer", "peer (ms)",
          "peer / before", "peer / after"]


def main(argv: list[str] | None = None) -> int:
    from bench.paper import table
    from bench.report import format_load, load_average

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--blocks", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None,
                    help="TVM and peer threads (set before the pools start)")
    args = ap.parse_args(argv)
    if args.threads is not None:
        from bench import paper

        paper.THREADS = args.threads
    import tempfile

    rows: list[list[Any]] = []
    notes: list[str] = []
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            rows.append(measure(name, args, Path(tmp), notes))
            print(table(HEADER, rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    print(machine_line() + "\n")
    print(table(HEADER, rows))
    print(f"\nVM at -O3, batch 1, {os.environ.get('TVM_NUM_THREADS')} threads; 1-minute load "
          f"average {format_load(load_before)} → {format_load(load_average())} "
          f"({os.cpu_count()} CPUs); kernel calls: compiled kernels per run, per-shape slots "
          f"included (the VM's host rules for scalar integers and the host data movement not "
          f"counted); ratios above 1: the system on the right of the slash is faster.")
    for note in notes:
        print(f"* {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
