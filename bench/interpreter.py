"""Interpreter speed: rule applications per second, and overhead over direct numpy.

Workloads (all evaluated unchecked, so only evaluation is timed):

* ``fib(N)``, ``ackermann(2, N)`` and ``ackermann(3, N)`` — scalar recursion with
  operator calls on 0-d tensors;
* ``map`` + ``foldl`` over a list of 10,000 elements (the prelude's);
* a 100,000-step Peano-numeral loop (ADTs and tail calls, no operator at all).

For each: rule applications (counted with ``trace``, in a separate run), the
best CPU time (``time.process_time``) of ``--repeat`` runs, and their ratio; then
the share of that time spent inside the operator implementations (``OpDef.impl``,
timed in a separate instrumented run, see ``bench/oracle.py``) and the rate the
interpreter alone achieves (rules / the time outside the operators). (An earlier
"raw operators" column swapped each ``impl`` for its ``__wrapped__`` numpy function;
only the element-wise families expose one, and a raw ufunc returns numpy scalars
rather than arrays, so the column compared unlike things; the share measures the
split directly.)

Then a small MLP (``nn.dense`` -> ``nn.bias_add`` -> ``nn.relu`` -> ``nn.dense``,
batch 8, 64 hidden units): time per ``evaluate`` against the same numpy
operations called directly, and the ratio, both measured in this run.

Usage: ``python bench/interpreter.py [--repeat 3] [--quick]``
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import operator_share  # noqa: E402

from interpreter import ConstructorValue, evaluate  # noqa: E402
from semantics import parse  # noqa: E402

SCALARS = """
def @fib(%n: int32) -> int32 {
  if (%n < 2) { %n } else { @fib(%n - 1) + @fib(%n - 2) }
}
def @ackermann(%m: int32, %n: int32) -> int32 {
  if (%m == 0) { %n + 1 } else {
    if (%n == 0) { @ackermann(%m - 1, 1) } else { @ackermann(%m - 1, @ackermann(%m, %n - 1)) }
  }
}
def @range(%n: int32) -> List[int32] {
  let %go = fn (%i: int32, %acc: List[int32]) -> List[int32] {
    if (%i == 0) { %acc } else { %go(%i - 1, Cons(%i, %acc)) }
  };
  %go(%n, Nil)
}
def @map_fold(%xs: List[int32]) -> int32 {
  @foldl(fn (%a: int32, %b: int32) -> int32 { %a + %b }, 0,
         @map(fn (%x: int32) -> int32 { %x * 2 }, %xs))
}
type Nat { Z, S(Nat), }
def @count(%n: Nat, %acc: Nat) -> Nat {
  match (%n) { Z => %acc, S(%m) => @count(%m, S(%acc)) }
}
"""

MLP = """
def @main(%x: Tensor[(8, 32), float32], %w1: Tensor[(64, 32), float32],
          %b1: Tensor[(64), float32], %w2: Tensor[(10, 64), float32]) -> Tensor[(8, 10), float32] {
  %0 = nn.dense(%x, %w1, units=64);
  %1 = nn.bias_add(%0, %b1);
  %2 = nn.relu(%1);
  nn.dense(%2, %w2, units=10)
}
"""


def best_cpu(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def count_rules(mod: Any, args: tuple[Any, ...], entry: str) -> int:
    n = 0

    def trace(name: str, node: Any) -> None:
        nonlocal n
        n += 1

    evaluate(mod, *args, entry=entry, check=False, trace=trace)
    return n


def nat(k: int) -> ConstructorValue:
    v = ConstructorValue("Z")
    for _ in range(k):
        v = ConstructorValue("S", (v,))
    return v


def workloads(quick: bool) -> list[tuple[str, str, tuple[Any, ...]]]:
    n_list = 2_000 if quick else 10_000
    xs = ConstructorValue("Nil")
    for i in range(n_list, 0, -1):
        xs = ConstructorValue("Cons", (np.int32(i), xs))
    return [
        ("fib(15)" if quick else "fib(20)", "fib", (15 if quick else 20,)),
        ("ackermann(2, 50)", "ackermann", (2, 50)),
        ("ackermann(3, 3)" if quick else "ackermann(3, 5)", "ackermann", (3, 3 if quick else 5)),
        (f"map+foldl over {n_list:,}", "map_fold", (xs,)),
        (f"Peano loop {10 * n_list:,} steps", "count", (nat(10 * n_list), ConstructorValue("Z"))),
    ]


def rule_table(repeat: int, quick: bool) -> None:
    mod = parse(SCALARS)
    print(f"{'workload':<28} {'rules':>10} {'cpu s':>8} {'rules/s':>10} "
          f"{'ops share':>9} {'interp. rules/s':>15}")
    for label, entry, args in workloads(quick):
        rules = count_rules(mod, args, entry)

        def once(args: tuple[Any, ...] = args, entry: str = entry) -> Any:
            return evaluate(mod, *args, entry=entry, check=False)

        t = best_cpu(once, repeat)
        share = operator_share(once, 1)
        print(f"{label:<28} {rules:>10,} {t:>8.3f} {rules / t:>10,.0f} "
              f"{share:>9.0%} {rules / (t * (1 - share)):>15,.0f}")


def mlp_table(repeat: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 32)).astype(np.float32)
    w1 = rng.standard_normal((64, 32)).astype(np.float32)
    b1 = rng.standard_normal(64).astype(np.float32)
    w2 = rng.standard_normal((10, 64)).astype(np.float32)
    mod = parse(MLP)

    def direct() -> np.ndarray:
        h = np.maximum(x @ w1.T + b1, np.float32(0))
        return h @ w2.T

    expected = direct()
    got = evaluate(mod, x, w1, b1, w2, check=False)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    loops = 200

    def many(fn: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(loops):
                fn()
        return run

    t_numpy = best_cpu(many(direct), repeat) / loops
    t_interp = best_cpu(many(lambda: evaluate(mod, x, w1, b1, w2, check=False)), repeat) / loops
    share = operator_share(many(lambda: evaluate(mod, x, w1, b1, w2, check=False)), 1)
    print(f"{'MLP (batch 8, 64 hidden)':<28} {'µs/run':>10} {'× numpy':>9}")
    print(f"{'numpy, direct':<28} {t_numpy * 1e6:>10.1f} {1.0:>9.1f}")
    print(f"{'evaluate':<28} {t_interp * 1e6:>10.1f} {t_interp / t_numpy:>9.1f}")
    print(f"{'  of which in operators':<28} {t_interp * share * 1e6:>10.1f} "
          f"{t_interp * share / t_numpy:>9.1f}")
    print(f"{'  of which interpreter':<28} {t_interp * (1 - share) * 1e6:>10.1f} "
          f"{t_interp * (1 - share) / t_numpy:>9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller workloads")
    args = parser.parse_args()
    rule_table(args.repeat, args.quick)
    print()
    mlp_table(args.repeat)


if __name__ == "__main__":
    main()
