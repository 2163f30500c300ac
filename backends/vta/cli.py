"""The VTA side of the command line: ``relay build FILE --target vta [--vta-config K=V ...]
[-o DIR]`` and ``relay run FILE --backend vta [--vta-config K=V ...]``.

``relay build --target vta`` compiles the program, runs ``main`` once on zero-valued inputs
(the counters and the cycle estimate do not depend on the values) and prints what was
offloaded, what stays on the CPU and the statistics; with ``-o DIR`` it also writes each
invocation's instruction stream (``invocation_NN.bin``, 16 bytes per instruction) and its
disassembly (``invocation_NN.asm``).  ``relay run --backend vta`` runs ``main`` on the given
arguments, prints the result on standard output and the statistics on standard error.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

import numpy as np

__all__ = ["config_from_args", "build_vta", "run_vta", "format_stats"]


def config_from_args(pairs: list[str] | None) -> Any:
    """The :class:`Config` of ``--vta-config`` pairs (a ``RelayTypeError`` when invalid)."""
    from backends.vta.config import Config
    from semantics.errors import RelayTypeError

    try:
        return Config.from_strings(list(pairs or []))
    except ValueError as exc:
        raise RelayTypeError(f"--vta-config: {exc}") from None


def format_stats(exe: Any) -> str:
    """The statistics of a VTA executable's last run, one ``name: value`` per line."""
    cfg = exe.config
    st = exe.stats
    lines = [f"vta config: {cfg.TARGET_NAME} target={cfg.TARGET} {cfg.CLOCK_MHZ} MHz "
             f"bus={cfg.BUS_WIDTH} bits"]
    for key, value in st.items():
        lines.append(f"  {key}: {value}")
    cycles = st.get("cycles", 0)
    if cycles:
        ms = cycles / (cfg.CLOCK_MHZ * 1e3)
        util = st.get("gemm_counter", 0) / cycles
        lines.append(f"  estimated accelerator time: {ms:.3f} ms "
                     f"(MAC utilization {100 * util:.1f}%)")
    lines.append(f"offloaded ({len(exe.offloaded)}):")
    lines.extend(f"  {line}" for line in exe.offloaded)
    cpu = ", ".join(f"{k} x{v}" for k, v in sorted(exe.cpu_ops.items())) or "nothing"
    lines.append(f"on the CPU: {cpu}")
    lines.extend(f"  {line}" for line in exe.cpu_report)
    if exe.partition.reason:
        lines.append(f"not partitioned: {exe.partition.reason}")
    for why in exe.partition.rejected:
        lines.append(f"  kept on the CPU: {why}")
    return "\n".join(lines)


def _zeros_for(exe: Any) -> list[np.ndarray]:
    from semantics.errors import RelayTypeError
    from semantics.types import TensorType

    main = exe.module.functions["main"]
    out = []
    for p in main.params:
        t = p.checked_type if p.type_annotation is None else p.type_annotation
        if not isinstance(t, TensorType) or not all(isinstance(d, int) for d in t.shape):
            raise RelayTypeError(f"relay build --target vta: parameter %{p.name_hint} needs a "
                                 f"static tensor type to estimate the statistics")
        out.append(np.zeros(tuple(int(d) for d in t.shape),  # type: ignore[arg-type]
                            dtype=t.dtype))
    return out


def build_vta(mod: Any, params: dict[str, np.ndarray] | None, pairs: list[str] | None,
              output: str | None, out: TextIO = sys.stdout) -> int:
    """``relay build --target vta``."""
    from backends.vta import build, isa

    exe = build(mod, params=params, config=config_from_args(pairs))
    exe(*_zeros_for(exe))
    if output:
        os.makedirs(output, exist_ok=True)
        for i, stream in enumerate(exe.instructions):
            with open(os.path.join(output, f"invocation_{i:02d}.bin"), "wb") as f:
                f.write(stream)
            with open(os.path.join(output, f"invocation_{i:02d}.asm"), "w") as f:
                f.write(isa.disassemble(stream, exe.config) + "\n")
        print(f"built {output}: {len(exe.instructions)} VTA instruction streams", file=out)
    print(format_stats(exe), file=out)
    return 0


def run_vta(mod: Any, values: list[Any], entry: str, params: dict[str, np.ndarray] | None,
            pairs: list[str] | None) -> Any:
    """``relay run --backend vta``: the result; the statistics go to standard error."""
    from backends.vta import build

    exe = build(mod, params=params, config=config_from_args(pairs))
    result = exe.run(entry, *values)
    print(format_stats(exe), file=sys.stderr)
    return result
