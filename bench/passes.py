"""Time per pass on a ResNet-50-sized module and on a 20,000-binding let chain.

Workloads:

* ``resnet50``: ``bench/typecheck.py``'s synthetic ResNet-50-sized module
  (300 bottleneck blocks, about 3,000 operator calls, weights as parameters);
* ``let_chain``: ``let %x{i+1} = add(%x{i}, 1)`` 20,000 times, plus a dead
  binding and a duplicate for every tenth step (work for DCE and CSE);
* ``constants``: the let chain over constants only (everything folds).

For each pass: the time of the pass alone on a type-checked module (best of
``--repeat``), and the time of type inference on the same module in the same
run as the baseline (every pass in a ``Sequential`` pays one ``infer`` after it).
Target: every pass under 1 s on each workload.

Run: ``python bench/passes.py [--repeat 3] [--blocks 300] [--length 20000]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

# This script is called passes.py, like the package it measures: drop its own folder from the
# import path so ``import passes`` finds the package, and load the ResNet builder by path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import importlib.util  # noqa: E402

import passes  # noqa: E402
from semantics import parse  # noqa: E402
from semantics.module import IRModule  # noqa: E402
from semantics.rewrite import fresh_copy, map_functions  # noqa: E402
from typechecker import infer  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_typecheck", _HERE / "typecheck.py")
assert _spec is not None and _spec.loader is not None
_typecheck = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_typecheck)
resnet_like = _typecheck.resnet_like


def let_chain(n: int, constants: bool = False) -> IRModule:
    first = "def @main() {\n  let %x0 = 1;" if constants else "def @main(%x0: int32) {"
    lines = [first]
    for i in range(n):
        lines.append(f"  let %x{i + 1} = add(%x{i}, 1);")
        if i % 10 == 0:
            lines.append(f"  let %dead{i} = multiply(%x{i}, 2);")
            lines.append(f"  let %dup{i} = add(%x{i}, 1);")
    lines.append(f"  %x{n}\n}}")
    return parse("\n".join(lines))


def best(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--blocks", type=int, default=300)
    ap.add_argument("--length", type=int, default=20_000)
    args = ap.parse_args(argv)
    workloads = {
        "resnet50": resnet_like(args.blocks, 1),
        "let_chain": let_chain(args.length),
        "constants": let_chain(args.length, constants=True),
    }
    all_passes = passes.list_passes()
    header = f"{'workload':10} {'nodes':>7} {'infer s':>8} " + " ".join(
        f"{p.func_name[:24]:>24}" for p in all_passes)
    print(header)
    print("-" * len(header))
    for name, mod in workloads.items():
        typed = infer(mod)
        assert isinstance(typed, IRModule)
        # The type checker remembers modules it has checked: time it on fresh copies.
        copies = [map_functions(mod, lambda _name, fn: fresh_copy(fn)) for _ in range(args.repeat)]
        t_infer = best(lambda c=copies: infer(c.pop()), args.repeat)
        cells = []
        for p in all_passes:
            t = best(lambda p=p, m=typed: p(m), args.repeat)
            cells.append(f"{t:8.3f} s ({t / t_infer:4.2f}x)".rjust(24))
        print(f"{name:10} {passes.manager.program_size(mod):7} {t_infer:8.3f} " + " ".join(cells))
    print("\n(x): the pass's time over the same module's type inference in this run")
    print("\nprimitive functions (fused kernels) per opt level:")
    for name, mod in workloads.items():
        counts = [passes.count_primitive_functions(passes.optimize(mod, level))
                  for level in range(4)]
        print(f"  {name:10} " + "  ".join(f"-O{lvl}: {n}" for lvl, n in enumerate(counts)))


if __name__ == "__main__":
    main()
