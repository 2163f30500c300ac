"""Int8 against float32 kernels on the TVM backend: a ResNet-18-like 3×3 convolution and a
dense layer, each with the realized requantize epilogue (issue 29, item 6).

Run: ``PYTHONPATH=. python bench/int8_kernels.py [--runs N]``.  For each workload the int8
program (``int8 × int8 → int32`` accumulation, ``+ bias + 2**(k-1)``, ``right_shift``,
``clip``, ``cast`` to int8, ``relu`` — the shape ``passes.quantize.realize`` emits) and the
float32 program (``conv/dense + bias + relu``) are built with ``backends.tvm.build`` at -O3
with bound weights, checked against the oracle once (int8: exactly), then timed in turn
(interleaved, so the machine's drift affects both alike).  Prints the median with min–max
in milliseconds, the ratio of medians, and the load average before and after.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# the repository first: bench/ holds modules named like packages (interpreter.py)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
if sys.path[1:2] == [str(Path(__file__).resolve().parent)]:
    del sys.path[1]

from backends.tvm import build  # noqa: E402

CONV_INT8 = """def @main(%x: Tensor[(1, 64, 56, 56), int8], %w: Tensor[(64, 64, 3, 3), int8],
          %b: Tensor[(64, 1, 1), int32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1], channels=64, kernel_size=[3, 3], out_dtype="int32");
  %1 = add(%0, %b);
  %2 = right_shift(add(%1, 512), 10);
  nn.relu(cast(clip(%2, a_min=-127f, a_max=127f), dtype="int8"))
}"""

CONV_F32 = """def @main(%x: Tensor[(1, 64, 56, 56), float32], %w: Tensor[(64, 64, 3, 3), float32],
          %b: Tensor[(64, 1, 1), float32]) {
  nn.relu(add(nn.conv2d(%x, %w, padding=[1, 1], channels=64, kernel_size=[3, 3]), %b))
}"""

DENSE_INT8 = """def @main(%x: Tensor[(16, 1024), int8], %w: Tensor[(1024, 1024), int8],
          %b: Tensor[(1024), int32]) {
  %0 = add(nn.dense(%x, %w, units=1024, out_dtype="int32"), %b);
  %1 = right_shift(add(%0, 512), 10);
  nn.relu(cast(clip(%1, a_min=-127f, a_max=127f), dtype="int8"))
}"""

DENSE_F32 = """def @main(%x: Tensor[(16, 1024), float32], %w: Tensor[(1024, 1024), float32],
          %b: Tensor[(1024), float32]) {
  nn.relu(add(nn.dense(%x, %w, units=1024), %b))
}"""


def _workload(text: str, shapes: dict[str, tuple[int, ...]], dtype: str, seed: int
              ) -> tuple[str, dict[str, np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)

    def draw(shape: tuple[int, ...], bias: bool) -> np.ndarray:
        if dtype == "int8":
            if bias:
                return rng.integers(-2000, 2000, shape).astype("int32")
            return rng.integers(-128, 128, shape).astype("int8")
        return rng.standard_normal(shape).astype("float32")

    params = {"w": draw(shapes["w"], False), "b": draw(shapes["b"], True)}
    return text, params, draw(shapes["x"], False)


def _timings(fns: dict[str, Callable[[], Any]], runs: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()                                   # warm up
    for _ in range(runs):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            out[name].append((time.perf_counter() - start) * 1e3)
    return out


def main(argv: list[str] | None = None) -> None:
    from interpreter import evaluate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args(argv)
    conv_shapes = {"x": (1, 64, 56, 56), "w": (64, 64, 3, 3), "b": (64, 1, 1)}
    dense_shapes = {"x": (16, 1024), "w": (1024, 1024), "b": (1024,)}
    cases = {
        "conv 3x3 64->64 56x56": ((CONV_INT8, conv_shapes), (CONV_F32, conv_shapes)),
        "dense 16x1024 -> 1024": ((DENSE_INT8, dense_shapes), (DENSE_F32, dense_shapes)),
    }
    print(f"load average before: {os.getloadavg()}")
    for label, ((t8, s8), (t32, s32)) in cases.items():
        text8, p8, x8 = _workload(t8, s8, "int8", 0)
        text32, p32, x32 = _workload(t32, s32, "float32", 0)
        exe8 = build(text8, params=p8)
        exe32 = build(text32, params=p32)
        assert np.array_equal(exe8(x8), evaluate(text8, x8, p8["w"], p8["b"])), label
        times = _timings({"int8": functools.partial(exe8, x8),
                          "float32": functools.partial(exe32, x32)}, args.runs)
        med = {k: float(np.median(v)) for k, v in times.items()}
        for k, v in times.items():
            print(f"{label:24s} {k:8s} median {med[k]:8.3f} ms  (min {min(v):.3f}, "
                  f"max {max(v):.3f}, {len(v)} runs)")
        print(f"{label:24s} int8/float32 time ratio {med['int8'] / med['float32']:.2f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
