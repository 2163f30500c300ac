"""A Fig. 14 analogue: VTA-offloaded inference against CPU-only, for ResNet-18 and MobileNet
(issue 30; the Relay paper's §5.4).

For each model: ``models.get`` (batch 1), ``passes.quantize`` with the default ``QConfig``
(one random calibration input), ``backends.vta.build`` with the default VTA configuration (the CPU
stages built with ``backends.tvm.build``, or ``--cpu oracle``), one run on the simulator
(checked against the oracle with ``--check``), then:

* what ran on VTA (conv2d/dense groups, GEMM micro-ops, MACs) and what stayed on the CPU;
* the cycle model's estimate per board (the same instruction streams re-timed with
  ``cycle_model`` for ``ultra96`` at 333 MHz / 128-bit bus and ``pynq`` at 100 MHz / 64-bit),
  the compute floor (GEMM micro-ops / clock) and the MAC utilization;
* an end-to-end latency estimate: VTA time plus the CPU's share (the MACs of the convolutions
  and dense layers left on the CPU), against CPU-only (every MAC on the CPU).

**The CPU is an assumption, not a measurement**: the paper's host is the Ultra-96's quad
Cortex-A53 (1.2 GHz), which is not attached here.  We assume it sustains
``--cpu-gflops`` (default 6) GFLOP/s on these layers: its fp32 NEON peak is 4 cores x 1.2 GHz x
4 FLOP/cycle (one 64-bit-wide FMA pipe per core: two fp32 multiply-adds per cycle) = 19.2
GFLOP/s, and about a third of peak is typical of tuned convolution on in-order cores.  That
figure is our estimate, not a published measurement; elementwise operators are not counted on
either side.  The paper reports 2.5x-11.7x lower latency with VTA on its models; compare our
ratio with that range only for plausibility.

Usage: ``python bench/vta.py [--models resnet18 mobilenet] [--cpu-gflops G] [--check]
[--cpu tvm|oracle]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BOARDS = ("ultra96", "pynq")


def cpu_macs(exe: Any) -> int:
    """Multiply-adds of the nn.conv2d / nn.dense calls left on the CPU."""
    from semantics.expr import Call, Op

    part = exe.partition
    total = 0
    for e in part.order:
        if not (isinstance(e, Call) and isinstance(e.op, Op)):
            continue
        if id(e) in part.internal or id(e) in part.groups:
            continue
        if e.op.name == "nn.conv2d":
            out = [int(d) for d in e.checked_type.shape]
            w = [int(d) for d in e.args[1].checked_type.shape]
            total += int(np.prod(out)) * w[1] * w[2] * w[3]
        elif e.op.name == "nn.dense":
            out = [int(d) for d in e.checked_type.shape]
            w = [int(d) for d in e.args[1].checked_type.shape]
            total += int(np.prod(out)) * w[1]
    return total


def measure(name: str, cpu_gflops: float, check: bool, cpu: str = "tvm") -> dict[str, Any]:
    import models
    from backends.vta import Config, isa
    from backends.vta import build as vta_build
    from backends.vta.simulator import cycle_model
    from passes.quantize import QConfig, quantize

    mod, params = models.get(name)
    shape = [int(d) for d in mod["main"].params[0].type_annotation.shape]
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    t0 = time.time()
    qmod = quantize(mod, params, QConfig(), dataset=[x])
    t1 = time.time()
    exe = vta_build(qmod, cpu=cpu)
    t2 = time.time()
    out = exe(x)
    t3 = time.time()
    row: dict[str, Any] = {"model": name, "quantize_s": t1 - t0, "build_s": t2 - t1,
                           "simulate_s": t3 - t2, "stats": dict(exe.stats),
                           "offloaded": exe.offloaded, "cpu_ops": exe.cpu_ops,
                           "rejected": exe.partition.rejected, "cpu": cpu,
                           "cpu_report": exe.cpu_report}
    if check:
        from interpreter import evaluate

        t4 = time.time()
        row["equal_to_oracle"] = bool(np.array_equal(out, evaluate(qmod, x)))
        row["oracle_s"] = time.time() - t4
    vta_macs = exe.stats["macs"]
    rest = cpu_macs(exe)
    row["vta_macs"], row["cpu_macs"] = vta_macs, rest
    cpu_only_ms = 2 * (vta_macs + rest) / (cpu_gflops * 1e9) * 1e3
    cpu_part_ms = 2 * rest / (cpu_gflops * 1e9) * 1e3
    row["cpu_only_ms"] = cpu_only_ms
    for board in BOARDS:
        cfg = Config(TARGET=board)
        cycles = sum(cycle_model(isa.decode_stream(s, cfg), cfg)["cycles"]
                     for s in exe.instructions)
        vta_ms = cycles / (cfg.CLOCK_MHZ * 1e3)
        floor_ms = exe.stats["gemm_counter"] / (cfg.CLOCK_MHZ * 1e3)
        row[board] = {"cycles": cycles, "vta_ms": vta_ms, "floor_ms": floor_ms,
                      "utilization": exe.stats["gemm_counter"] / cycles if cycles else 0.0,
                      "total_ms": vta_ms + cpu_part_ms,
                      "speedup": cpu_only_ms / (vta_ms + cpu_part_ms)}
    return row


def report(rows: list[dict[str, Any]], cpu_gflops: float) -> str:
    lines = [f"Fig. 14 analogue: VTA (simulated, cycle model) vs CPU-only "
             f"(assumed Cortex-A53 at {cpu_gflops:g} GFLOP/s sustained)", ""]
    for r in rows:
        st = r["stats"]
        lines.append(f"{r['model']}: {st['invocations']} layers on VTA, "
                     f"{st['gemm_counter']:,} GEMM micro-ops, {r['vta_macs'] / 1e9:.3f} GMAC on "
                     f"VTA, {r['cpu_macs'] / 1e9:.3f} GMAC on the CPU")
        if "equal_to_oracle" in r:
            lines.append(f"  output equal to the oracle: {r['equal_to_oracle']}")
        lines.append(f"  traffic: inp {st['inp_load_nbytes']:,} B, wgt {st['wgt_load_nbytes']:,}"
                     f" B, acc {st['acc_load_nbytes']:,} B, uop {st['uop_load_nbytes']:,} B, "
                     f"out {st['out_store_nbytes']:,} B; ALU micro-ops {st['alu_counter']:,}")
        cpu = ", ".join(f"{k} x{v}" for k, v in sorted(r["cpu_ops"].items()))
        lines.append(f"  on the CPU: {cpu}")
        for why in r["rejected"]:
            lines.append(f"    kept on the CPU: {why}")
        stages = [x for x in r["cpu_report"] if x.startswith("stage")]
        on_tvm = sum(" on TVM" in x for x in stages)
        lines.append(f"  CPU part (cpu={r['cpu']}): {len(stages)} stages, {on_tvm} built with "
                     f"backends.tvm, {len(stages) - on_tvm} on the oracle")
        lines.extend(f"    {x}" for x in r["cpu_report"] if "oracle:" in x or "fallback" in x)
        for board in BOARDS:
            b = r[board]
            lines.append(f"  {board:8s}: {b['cycles']:,} cycles = {b['vta_ms']:.1f} ms on VTA "
                         f"(compute floor {b['floor_ms']:.1f} ms, MAC utilization "
                         f"{100 * b['utilization']:.0f}%); + CPU share = {b['total_ms']:.1f} ms"
                         f" vs CPU-only {r['cpu_only_ms']:.1f} ms: {b['speedup']:.1f}x")
        oracle = f", oracle {r['oracle_s']:.0f} s" if "oracle_s" in r else ""
        lines.append(f"  (quantize {r['quantize_s']:.0f} s, build {r['build_s']:.0f} s, "
                     f"run {r['simulate_s']:.0f} s (simulator + CPU stages){oracle})")
        lines.append("")
    lines.append("The paper reports 2.5x-11.7x (plausibility range only: our CPU figure is an "
                 "assumption and the cycle model's overheads are not calibrated).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--models", nargs="+", default=["resnet18", "mobilenet"])
    ap.add_argument("--cpu-gflops", type=float, default=6.0,
                    help="assumed sustained GFLOP/s of the host CPU (default 6)")
    ap.add_argument("--check", action="store_true",
                    help="compare the output with the oracle's (adds the oracle's run time)")
    ap.add_argument("--cpu", choices=["tvm", "oracle"], default="tvm",
                    help="how the CPU stages run: backends.tvm.build (default) or the oracle")
    args = ap.parse_args(argv)
    rows = [measure(name, args.cpu_gflops, args.check, args.cpu) for name in args.models]
    print(report(rows, args.cpu_gflops))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
