"""Per-kernel profile of a vision model on the TVM graph executor (issue 16: where the time goes).

Builds ``models.get(NAME)`` with its weights bound at the given opt level (graph executor),
runs it once through :meth:`Executable.profile` — every kernel timed on its real inputs, the
median of ``--repeat`` calls — and prints two tables:

1. the kernels, slowest first (``--top``): operators, output shape, milliseconds, share of the
   total, GFLOP/s of the convolution or dense product it contains (against the machine's
   attainable fp32 peak measured in this run, :func:`bench.peak.sgemm_gflops`);
2. the time per anchor operator (the kernel's first operator among convolution, dense,
   pooling, softmax, layout transform; else "elementwise").

The sum of the kernel times is compared with an end-to-end run (median of ``--repeat`` runs),
so the executor's own overhead shows as the difference.

Usage: ``python bench/kernel_profile.py resnet18 [-O N] [--repeat N] [--top N]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("TVM_NUM_THREADS", "2")

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import numpy as np  # noqa: E402

import models  # noqa: E402
from bench.paper import table  # noqa: E402
from bench.peak import sgemm_gflops  # noqa: E402

ANCHORS = ("nn.conv2d", "nn.dense", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
           "nn.global_max_pool2d", "nn.softmax", "layout_transform", "nn.batch_flatten")


def anchor(ops: tuple[str, ...]) -> str:
    """The operator a kernel is named after in the second table."""
    for name in ANCHORS:
        if name in ops:
            return name
    return "elementwise"


def profile(name: str, opt_level: int, repeat: int) -> tuple[list[Any], float]:
    """The step profiles of one run of ``name`` and the end-to-end median seconds."""
    from backends.tvm import build
    from backends.tvm.kernel.cache import default_cache

    mod, params = models.get(name)
    exe = build(mod, params=params, opt_level=opt_level, executor="graph")
    default_cache().flush()     # background disk writes must not overlap the timing
    inputs = models.example_inputs(name)
    exe(*inputs)
    rows = exe.profile(*inputs, repeat=repeat)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        exe(*inputs)
        times.append(time.perf_counter() - start)
    return rows, float(np.median(times))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", choices=models.names())
    ap.add_argument("-O", dest="opt_level", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    peak = sgemm_gflops()
    rows, total = profile(args.model, args.opt_level, args.repeat)
    kernel_sum = sum(r.seconds for r in rows)
    print(f"# {args.model} -O{args.opt_level}: {len(rows)} kernels, sum {kernel_sum * 1e3:.2f} ms,"
          f" end to end {total * 1e3:.2f} ms (executor overhead "
          f"{(total - kernel_sum) * 1e3:.2f} ms)\n")
    slow = sorted(rows, key=lambda r: -r.seconds)[:args.top]
    print(table(["step", "operators", "output", "ms", "%", "GFLOP/s", "% peak"], [
        [r.step, " ".join(r.ops), "×".join(map(str, r.shapes[0])) if r.shapes else "",
         r.seconds * 1e3, 100 * r.seconds / kernel_sum, r.gflops or "",
         100 * r.gflops / peak if r.gflops else ""] for r in slow]))
    per: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for r in rows:
        acc = per[anchor(r.ops)]
        acc[0] += r.seconds
        acc[1] += r.flops
        acc[2] += 1
    print()
    print(table(["anchor", "kernels", "ms", "%", "GFLOP/s"], [
        [k, int(v[2]), v[0] * 1e3, 100 * v[0] / kernel_sum, v[1] / v[0] / 1e9 if v[1] else ""]
        for k, v in sorted(per.items(), key=lambda kv: -kv[1][0])]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
