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

3. **per convolution, ours against onnxruntime** (``--no-peer`` skips it): onnxruntime runs
   the model exported from its PyTorch module (``bench.paper.onnx_runtime``) with its node
   profiler on, ``--repeat`` times; each of its convolution nodes (``Conv``, ``FusedConv``,
   NCHWc ones included) is paired with our kernel holding the same convolution (the same
   FLOPs, in order), and the table gives both medians, their ratio, and both GFLOP/s and
   fractions of the measured peak. A Winograd kernel's GFLOP/s are *effective* (the direct
   convolution's FLOPs over its time: ``backends.tvm.exec.graph.kernel_flops``), so they may
   exceed the peak.

The run follows ``bench/protocol.py`` (thread spinning off in both runtimes; ours, then
onnxruntime, each in its own block) and prints the CPU, vector width and load.

Usage: ``python bench/kernel_profile.py resnet18 [-O N] [--repeat N] [--top N] [--no-peer]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import numpy as np  # noqa: E402

import models  # noqa: E402
from bench.paper import THREADS, Missing, onnx_runtime, table  # noqa: E402
from bench.peak import sgemm_gflops  # noqa: E402
from bench.protocol import machine_line, ort_session_options  # noqa: E402
from bench.report import format_load, load_average  # noqa: E402

CONVS = ("nn.conv2d", "nn.contrib_conv2d_winograd_without_weight_transform")
ORT_CONVS = ("Conv", "FusedConv", "NhwcFusedConv")

ANCHORS = (*CONVS, "nn.dense", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
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


def ort_conv_profile(name: str, repeat: int, workdir: Path) -> list[tuple[str, float, int]]:
    """onnxruntime's convolution nodes in execution order: (op type, median seconds over
    ``repeat`` profiled runs, FLOPs from the node's shapes, 0 when it does not say)."""
    import onnxruntime as ort

    onnx_runtime(name, workdir)                 # exports workdir/<name>.onnx
    opts = ort_session_options(THREADS)
    opts.enable_profiling = True
    opts.profile_file_prefix = str(workdir / f"{name}_ort")
    sess = ort.InferenceSession(str(workdir / f"{name}.onnx"), opts,
                                providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: np.asarray(models.example_inputs(name)[0], np.float32)}
    sess.run(None, feed)
    for _ in range(repeat):
        sess.run(None, feed)
    events = json.loads(Path(sess.end_profiling()).read_text())
    per: dict[str, list[float]] = defaultdict(list)
    kinds: dict[str, tuple[str, int]] = {}
    order: list[str] = []
    for e in sorted((e for e in events if e.get("cat") == "Node"), key=lambda e: e["ts"]):
        args = e.get("args", {})
        op = args.get("op_name", "")
        if op not in ORT_CONVS or not e["name"].endswith("_kernel_time"):
            continue
        node = e["name"][:-len("_kernel_time")]
        if node not in kinds:
            kinds[node] = (op, _ort_flops(args))
            order.append(node)
        per[node].append(e["dur"] / 1e6)
    return [(kinds[n][0], float(np.median(per[n][1:] or per[n])), kinds[n][1]) for n in order]


def _ort_flops(args: dict[str, Any]) -> int:
    """2 × outputs × (weight elements / output channels) from a profiled node's shapes."""
    try:
        ins = [list(d.values())[0] for d in args["input_type_shape"]]
        out = list(args["output_type_shape"][0].values())[0]
    except (KeyError, IndexError, AttributeError):
        return 0
    if len(ins) < 2 or len(out) < 2:
        return 0
    weight = int(np.prod(ins[1]))
    return 2 * int(np.prod(out)) * (weight // max(int(ins[1][0]), 1))


def conv_table(rows: list[Any], peer: list[tuple[str, float, int]], peak: float) -> str:
    """Ours against onnxruntime per convolution (module docstring, table 3)."""
    ours = [r for r in rows if any(op in CONVS for op in r.ops)]
    used: set[int] = set()
    out = []
    for k, r in enumerate(ours):
        match = next((i for i, (_, _, f) in enumerate(peer) if i not in used and f and
                      abs(f - r.flops) <= 0.02 * r.flops), None)
        if match is None and k < len(peer) and k not in used:
            match = k
        kind = "winograd" if CONVS[1] in r.ops else "direct"
        shape = "×".join(map(str, r.shapes[0])) if r.shapes else ""
        if match is None:
            out.append([k, kind, shape, r.seconds * 1e3, "—", "—", r.gflops,
                        100 * r.gflops / peak, "—", "—"])
            continue
        used.add(match)
        op, secs, _ = peer[match]
        ort_gflops = r.flops / secs / 1e9 if secs > 0 else 0.0
        out.append([k, kind, shape, r.seconds * 1e3, f"{secs * 1e3:.3g} ({op})",
                    secs / r.seconds, r.gflops, 100 * r.gflops / peak, ort_gflops,
                    100 * ort_gflops / peak])
    total_ours = sum(r.seconds for r in ours)
    total_ort = sum(peer[i][1] for i in used)
    out.append(["all", "", "", total_ours * 1e3, f"{total_ort * 1e3:.3g}",
                total_ort / total_ours if total_ours else "", "", "", "", ""])
    return table(["conv", "ours", "output", "ours (ms)", "onnxruntime (ms)", "ort / ours",
                  "ours GFLOP/s", "ours % peak", "ort GFLOP/s", "ort % peak"], out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", choices=models.names())
    ap.add_argument("-O", dest="opt_level", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--no-peer", action="store_true", help="skip onnxruntime's per-conv table")
    args = ap.parse_args(argv)
    peak = sgemm_gflops()
    load_before = load_average()
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
    if not args.no_peer:
        print()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                peer = ort_conv_profile(args.model, args.repeat, Path(tmp))
            print(conv_table(rows, peer, peak))
        except (ImportError, Missing) as e:
            print(f"(no onnxruntime table: {e})")
    print(f"\n{machine_line()}; peak {peak:.0f} GFLOP/s (numpy's BLAS SGEMM, this run); "
          f"1-minute load average before → after: {format_load(load_before)} → "
          f"{format_load(load_average())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
