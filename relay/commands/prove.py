"""``relay prove [--only NAME] [--list]``: discharge the machine-checked obligations (§7, §8).

One line per obligation: status (``proved`` / ``refuted`` / ``unknown``), time, name and
the method (``z3``, ``z3-induction``, ``bounded-...``); a refuted obligation prints its
counterexample indented below it, an unknown one the reason. A closing line gives the
counts and the total time. ``--only`` takes an obligation name or a prefix (``relation``,
``rewrite.fold_scale_axis``, ``soundness``). Exit status 0 when every selected obligation
is proved, 1 otherwise, 2 when ``--only`` matches nothing.
"""

from __future__ import annotations

import argparse
import sys
import time


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prove", help="discharge the proof obligations (relations, rewrites, "
                                     "type soundness)")
    p.add_argument("--only", metavar="NAME",
                   help="one obligation, or a class/prefix such as relation or rewrite")
    p.add_argument("--list", action="store_true",
                   help="list the obligations and their statements without running them")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import proofs
    from proofs.runner import discharge, select

    try:
        chosen = select(args.only)
    except KeyError as exc:
        sys.stderr.write(f"error: {exc.args[0]}\n")
        return 2
    if args.list:
        for d in chosen:
            sys.stdout.write(f"{d.name}: {d.statement}\n")
        return 0
    start = time.perf_counter()
    counts = {proofs.PROVED: 0, proofs.REFUTED: 0, proofs.UNKNOWN: 0}
    width = max(len(d.name) for d in chosen)
    for d in chosen:
        ob = discharge(d)
        counts[ob.status] = counts.get(ob.status, 0) + 1
        sys.stdout.write(f"{ob.status:<8} {ob.seconds:7.2f}s  {ob.name:<{width}}  "
                         f"[{ob.method}]\n")
        if ob.counterexample:
            sys.stdout.write(f"    counterexample: {ob.counterexample}\n")
        if ob.status != proofs.PROVED and ob.detail:
            sys.stdout.write(f"    {ob.detail}\n")
        sys.stdout.flush()
    total = time.perf_counter() - start
    sys.stdout.write(f"{len(chosen)} obligations: {counts[proofs.PROVED]} proved, "
                     f"{counts[proofs.REFUTED]} refuted, {counts[proofs.UNKNOWN]} unknown "
                     f"in {total:.1f}s\n")
    return 0 if counts[proofs.PROVED] == len(chosen) else 1
