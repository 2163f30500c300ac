"""Benchmark of the conformance kit's power: the mutation score of generated programs.

Usage::

    python bench/kit_power.py [--examples 300] [--seed 0] [--only NAME ...] [--every]

Draws ``--examples`` well-typed programs once (default generator configuration, a fixed
Hypothesis seed), runs every mutant pass of :mod:`conformance.mutants` over them until
the first program whose outcome differs from the oracle's, and prints one row per
mutant: its family, whether it was caught, after how many programs and in how many
seconds (generation share + oracle + mutant runs), on how many of those programs it
found a site to rewrite and on how many the mutant pass itself raised (``crash``: a broken
mutant, never counted as a catch), then the mutation score (caught by a disagreement /
total), the crashed mutants by name, and the generation throughput (programs/s).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="*", default=None, help="mutant names to run")
    parser.add_argument("--verbose", action="store_true", help="print why each was caught")
    parser.add_argument("--every", action="store_true",
                        help="run every mutant over every program and count the programs that "
                             "catch it (column 'catches': the margin of a catch; slower)")
    args = parser.parse_args()

    from conformance.mutants import all_mutants
    from conformance.mutants.power import mutation_score, sample_programs

    mutants = [m for m in all_mutants() if not args.only or m.name in args.only]
    start = time.perf_counter()
    sample = sample_programs(args.examples, seed=args.seed)
    print(f"generated {len(sample.programs)} programs in {sample.gen_seconds:.1f} s "
          f"({len(sample.programs) / sample.gen_seconds:.1f} programs/s); oracle "
          f"{sum(sample.oracle_seconds):.1f} s")
    score, kills = mutation_score(mutants, sample, every=args.every)
    print(f"\n{'mutant':<32} {'family':<14} {'caught':>6} {'examples':>8} {'seconds':>8} "
          f"{'sites':>6} {'crash':>5}" + (f" {'catches':>7}" if args.every else ""))
    for k in kills:
        shown = str(k.examples) if k.examples is not None else "-"
        print(f"{k.name:<32} {k.category:<14} {'yes' if k.caught else 'NO':>6} {shown:>8} "
              f"{k.seconds:8.2f} {k.applied:6d} {k.crashes:5d}"
              + (f" {k.catches:7d}" if args.every else ""), flush=True)
        if args.verbose and k.caught:
            print(f"    {k.message[:150]}")
        if k.crashes:
            print(f"    CRASHED: {k.crash[:150]}")
    caught = sum(k.caught for k in kills)
    crashed = [k.name for k in kills if k.crashes]
    print(f"\nmutation score: {caught}/{len(kills)} = {100 * score:.1f} % at "
          f"{len(sample.programs)} examples (total {time.perf_counter() - start:.0f} s; "
          f"load average {os.getloadavg()[0]:.1f})")
    print(f"mutants that crashed (not counted as caught): {crashed or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
