"""Measuring the kit's power: run mutant passes against one sample of generated programs.

:func:`sample_programs` draws ``n`` programs once (a fixed Hypothesis seed, generation
phase only); :func:`hunt` runs one mutant over them in order and stops at the first
program on which its outcome differs from the oracle's (the oracle's outcomes are
computed once and shared by every mutant); :func:`mutation_score` does it for a list
of mutants (a mutated program that runs out of :data:`MUTANT_FUEL` counts as caught: its
original terminates). A mutant's *time to catch* is the generation time of the programs it
needed (the sample's average) plus the oracle and mutant runs on them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.harness import Outcome, check_program, run_oracle
from conformance.mutants.core import Mutant
from semantics.module import IRModule

__all__ = ["Kill", "Sample", "sample_programs", "hunt", "mutation_score", "MUTANT_FUEL"]

# Rule applications a mutated program may spend. Generated programs need far fewer (their
# loops run at most ``recursion_bound`` times); a mutant that breaks a loop's counter would
# otherwise spin through the harness's default budget (ten times ``ORACLE_FUEL``) before
# it is caught, which only costs time.
MUTANT_FUEL = 200_000


@dataclass
class Kill:
    """One mutant's result: caught or not, after how many programs and seconds."""

    name: str
    category: str
    caught: bool
    examples: int | None
    seconds: float
    message: str = ""
    applied: int = 0              # programs the mutant changed (up to the catch)


@dataclass
class Sample:
    """Generated programs with their oracle outcomes and per-program costs."""

    programs: list[Any]
    oracles: list[Outcome]
    gen_seconds: float
    oracle_seconds: list[float]
    alternate_oracles: list[list[Outcome]]


def sample_programs(n: int, *, seed: int = 0, config: Any = None) -> Sample:
    """``n`` generated programs (``Program`` s) drawn with Hypothesis seed ``seed``."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from conformance.strategies.programs import well_typed_modules

    programs: list[Any] = []

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              derandomize=False, suppress_health_check=list(HealthCheck))
    @given(well_typed_modules(config))
    def collect(p: Any) -> None:
        programs.append(p)

    start = time.perf_counter()
    collect()
    gen = time.perf_counter() - start
    oracles, costs, alternates = [], [], []
    for p in programs:
        t0 = time.perf_counter()
        oracles.append(run_oracle(p.module, p.inputs))
        alternates.append([run_oracle(p.module, alt) for alt in getattr(p, "alternates", ())])
        costs.append(time.perf_counter() - t0)
    return Sample(programs, oracles, gen, costs, alternates)


def hunt(mutant: Mutant, sample: Sample, *, limit: int | None = None) -> Kill:
    """Run ``mutant`` over ``sample``'s programs until one tells it apart from the oracle."""
    per_program = sample.gen_seconds / max(1, len(sample.programs))
    spent = 0.0
    applied = 0
    programs = sample.programs[:limit] if limit else sample.programs
    for i, p in enumerate(programs):
        start = time.perf_counter()
        spent += per_program + sample.oracle_seconds[i]
        try:
            out = mutant.fn(p.module)
        except Exception as err:  # noqa: BLE001 - a crashing pass is caught
            spent += time.perf_counter() - start
            return Kill(mutant.name, mutant.category, True, i + 1, spent,
                        f"crashed: {type(err).__name__}: {err}", applied + 1)
        if out is p.module:           # no site in this program: the same outcome
            spent += time.perf_counter() - start
            continue
        applied += 1
        try:
            check_program(_constant(out), p.module, p.inputs, name=mutant.name,
                          oracle=sample.oracles[i], alternates=getattr(p, "alternates", ()),
                          alternate_oracles=sample.alternate_oracles[i], fuel=MUTANT_FUEL)
        except AssertionError as err:
            spent += time.perf_counter() - start
            return Kill(mutant.name, mutant.category, True, i + 1, spent,
                        str(err).split("\n", 1)[0], applied)
        spent += time.perf_counter() - start
    return Kill(mutant.name, mutant.category, False, None, spent, "", applied)


def _constant(out: IRModule) -> Callable[[IRModule], IRModule]:
    """A transform that returns ``out`` (the mutated module, computed once)."""

    def transform(_mod: IRModule) -> IRModule:
        return out

    return transform


def mutation_score(mutants: Sequence[Mutant], sample: Sample, *, limit: int | None = None
                   ) -> tuple[float, list[Kill]]:
    """``(caught / total, per-mutant results)`` over ``sample``."""
    kills = [hunt(m, sample, limit=limit) for m in mutants]
    caught = sum(k.caught for k in kills)
    return caught / max(1, len(kills)), kills
