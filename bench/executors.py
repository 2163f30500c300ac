"""Benchmark of the executors' overhead on the recurrent and tree models (issues 14 and 16 §3).

Usage::

    python bench/executors.py [--runs N] [--warmup N] [--models NAME ...]
                              [--executors vm aot] [--no-peers]

For each NLP workload — ``lstm`` and ``gru`` over 35 steps, ``char_rnn`` for all 20 steps (its
end-of-sequence exit disabled, as the peers are timed: the module's ``equal(%top, 58)`` test is
rewritten to a test that never holds, and the peers' loops do not break either), ``tree_lstm``
on a random tree of 25 nodes — it prints per executor (``-O3``):

* the median latency (ms) of ``exe(*inputs)``;
* the time spent inside the kernels (compiled or numpy fallback), measured in a second build
  whose kernels are wrapped by timers (the timers' own cost, two clock reads per call, is
  counted as kernel time), and the rest, "outside": the executor's own overhead, of which
  "args" is the conversion of the inputs (``interpreter.convert``, shared by all executors);
* PyTorch eager and onnxruntime on the same model in the same run (``bench/paper.py``'s
  runners), when installed.

Timings are wall clock on a shared machine; compare rows of one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TVM_NUM_THREADS", "2")
os.environ.setdefault("OMP_NUM_THREADS", "2")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import models  # noqa: E402
from models import recurrent  # noqa: E402

MODELS = ("lstm", "gru", "char_rnn", "tree_lstm")
TREE_NODES = 25


def median_time(fn: Callable[[], Any], runs: int, warmup: int) -> float:
    """Median wall-clock seconds of ``fn()`` over ``runs`` runs after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def workload(name: str) -> tuple[Any, dict[str, np.ndarray], tuple[Any, ...]]:
    """``(module, params, inputs)`` of a benchmark workload (see the module docstring)."""
    from semantics import parse

    source = models.text(name)
    _, params = models.get(name)
    if name == "char_rnn":
        eos = f"equal(%top, {recurrent.CHAR_LETTERS - 1})"
        if eos not in source:
            raise RuntimeError("char_rnn: the end-of-sequence test was not found in the model")
        source = source.replace(eos, "equal(%top, -1)")
    mod = parse(source, source_name=f"<bench {name}>")
    if name == "tree_lstm":
        rng = np.random.default_rng(1000)
        tree = recurrent.random_tree(rng, TREE_NODES, (1, recurrent.TREE_INPUT))
        return mod, params, (models.relay_tree(tree),)
    return mod, params, models.example_inputs(name)


class _Timed:
    """A kernel wrapped by a timer (adds the time of each call to ``inside[0]``)."""

    __slots__ = ("kernel", "inside", "name")

    def __init__(self, kernel: Any, inside: list[float]) -> None:
        self.kernel = kernel
        self.inside = inside
        self.name = getattr(kernel, "name", "kernel")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        r = self.kernel(*args, **kwargs)
        self.inside[0] += time.perf_counter() - t0
        return r


def build_timed(mod: Any, params: dict[str, np.ndarray], executor: str
                ) -> tuple[Any, list[float]]:
    """A build whose kernels are wrapped by timers, and the accumulator they add to."""
    from backends.tvm import build
    from backends.tvm.build import KernelTable

    inside = [0.0]
    original = KernelTable.kernel_for

    def kernel_for(self: Any, func: Any) -> Any:
        return _Timed(original(self, func), inside)

    KernelTable.kernel_for = kernel_for  # type: ignore[method-assign]
    try:
        exe = build(mod, params=params, executor=executor)
    finally:
        KernelTable.kernel_for = original  # type: ignore[method-assign]
    return exe, inside


def ours(name: str, executor: str, runs: int, warmup: int) -> dict[str, Any]:
    from backends.tvm import build
    from backends.tvm.kernel.cache import default_cache

    mod, params, inputs = workload(name)
    exe = build(mod, params=params, executor=executor)
    default_cache().flush()     # background disk writes must not overlap the timing
    total = median_time(lambda: exe(*inputs), runs, warmup)
    timed, inside = build_timed(mod, params, executor)
    timed(*inputs)
    samples = []
    for _ in range(max(3, runs // 2)):
        inside[0] = 0.0
        t0 = time.perf_counter()
        timed(*inputs)
        samples.append((inside[0], time.perf_counter() - t0))
    samples.sort(key=lambda s: s[1])
    k_in, k_total = samples[len(samples) // 2]
    fraction = k_in / k_total if k_total else 0.0
    return {"ms": total * 1e3, "kernel_ms": fraction * total * 1e3, "fraction": fraction,
            "args_ms": argument_time(exe, inputs, runs, warmup) * 1e3,
            "result": exe(*inputs), "fallbacks": len(exe.fallbacks)}


def argument_time(exe: Any, inputs: tuple[Any, ...], runs: int, warmup: int) -> float:
    """Seconds ``exe`` spends converting ``inputs`` (``interpreter.convert``, part of every
    call, the same for every executor)."""
    from interpreter.convert import convert_arguments

    fn = exe.module.functions["main"]
    types = [p.type_annotation if p.type_annotation is not None else p.checked_type
             for p in fn.params]
    return median_time(lambda: convert_arguments(fn.params, list(inputs), exe.module, "@main",
                                                 types), runs, warmup)


def _no_eos_generate(cell: Any, category: Any, letter: Any, max_length: int = 20) -> list[int]:
    """The peers' CharRNN loop for all ``max_length`` steps (no end-of-sequence exit)."""
    import torch

    letters = letter.shape[1]
    out: list[int] = []
    x, hidden = letter, torch.zeros(1, recurrent.CHAR_HIDDEN)
    for _ in range(max_length):
        logp, hidden = cell(category, x, hidden)
        top = int(torch.as_tensor(logp).argmax(1)[0])
        out.append(top)
        x = torch.zeros(1, letters)
        x[0, top] = 1
    return out


def peers(name: str, inputs: tuple[Any, ...], runs: int, warmup: int, workdir: Path,
          threads: int) -> dict[str, float | str]:
    """PyTorch eager and onnxruntime latencies (ms), or the reason they are missing."""
    # (not ``import paper`` with bench/ on the path: bench/passes.py would then shadow the
    # ``passes`` package for every later build)
    from bench import paper

    paper.THREADS = threads
    from models import torch_reference as tr

    out: dict[str, float | str] = {}
    saved = tr.char_rnn_generate
    tr.char_rnn_generate = _no_eos_generate  # type: ignore[assignment]
    try:
        for label, factory in (("pytorch", paper.torch_eager),
                               ("onnxruntime", lambda n: paper.onnx_runtime(n, workdir))):
            try:
                run, convert = factory(name)
                args = convert(inputs)
                out[label] = median_time(lambda run=run, a=args: run(*a), runs, warmup) * 1e3
            except Exception as e:  # noqa: BLE001 - a missing peer is reported, not fatal
                out[label] = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
    finally:
        tr.char_rnn_generate = saved  # type: ignore[assignment]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--executors", nargs="*", default=["vm", "aot"], choices=["vm", "aot"])
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for TVM's kernels and the peers (default: $TVM_NUM_THREADS, "
                         "else 2, bench/paper.py's protocol)")
    args = ap.parse_args()
    if args.threads is not None:
        os.environ["TVM_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(args.threads)
    threads = int(os.environ["TVM_NUM_THREADS"])
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / "relay-bench-onnx"
    workdir.mkdir(exist_ok=True)
    print(f"threads: {threads}")
    print(f"{'model':<10}{'system':<13}{'ms':>9}{'in kernels ms':>15}{'outside ms':>12}"
          f"{'(args ms)':>11}{'kernel %':>10}")
    for name in args.models:
        for executor in args.executors:
            r = ours(name, executor, args.runs, args.warmup)
            print(f"{name:<10}{executor:<13}{r['ms']:>9.3f}{r['kernel_ms']:>15.3f}"
                  f"{r['ms'] - r['kernel_ms']:>12.3f}{r['args_ms']:>11.3f}"
                  f"{100 * r['fraction']:>9.0f}%"
                  + (f"  ({r['fallbacks']} fallback groups)" if r["fallbacks"] else ""))
        if not args.no_peers:
            _, _, inputs = workload(name)
            for label, v in peers(name, inputs, args.runs, args.warmup, workdir,
                                  threads).items():
                text = f"{v:>9.3f}" if isinstance(v, float) else f"  missing: {v}"
                print(f"{name:<10}{label:<13}{text}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
