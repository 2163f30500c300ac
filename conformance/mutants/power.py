"""Measuring the kit's power: run mutant passes against one sample of generated programs.

:func:`sample_programs` draws ``n`` programs once (a fixed Hypothesis seed, generation
phase only); :func:`hunt` runs one mutant over them in order and stops at the first
program on which its outcome differs from the oracle's (the oracle's outcomes are
computed once and shared by every mutant); :func:`mutation_score` does it for a list
of mutants (a mutated program that runs out of :data:`MUTANT_FUEL` counts as caught: its
original terminates). A mutant pass that *raises* is not caught by a disagreement: the
hunt counts the programs it crashed on (:attr:`Kill.crashes`, the first message kept) and
goes on to the next program, so a broken mutant shows as such instead of as a catch. A
mutant's *time to catch* is the generation time of the programs it needed (the sample's
average) plus the oracle and mutant runs on them.
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
    """One mutant's result: caught (by a disagreement) or not, after how many programs and
    seconds; ``crashes``: programs on which the mutant pass itself raised."""

    name: str
    category: str
    caught: bool
    examples: int | None
    seconds: float
    message: str = ""
    applied: int = 0              # programs the mutant changed (up to the catch)
    crashes: int = 0              # programs on which the mutant pass raised
    crash: str = ""               # the first such exception
    catches: int = 0              # programs that tell it apart (all of them with ``every``)


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


def hunt(mutant: Mutant, sample: Sample, *, limit: int | None = None,
         every: bool = False) -> Kill:
    """Run ``mutant`` over ``sample``'s programs until one tells it apart from the oracle
    (``every``: over all of them, counting the programs that catch it in :attr:`Kill.catches`:
    how robust the catch is)."""
    per_program = sample.gen_seconds / max(1, len(sample.programs))
    kill = Kill(mutant.name, mutant.category, False, None, 0.0)
    crashes: list[str] = []
    programs = sample.programs[:limit] if limit else sample.programs
    for i, p in enumerate(programs):
        start = time.perf_counter()
        if not kill.caught:
            kill.seconds += per_program + sample.oracle_seconds[i]
        message = _try(mutant, p, sample, i, crashes)
        if message is not None:
            kill.applied += not kill.caught
        if message and not kill.caught:
            kill.caught, kill.examples, kill.message = True, i + 1, message
        kill.catches += bool(message)
        if kill.examples is None or kill.examples == i + 1:
            kill.seconds += time.perf_counter() - start
        if kill.caught and not every:
            break
    kill.crashes, kill.crash = len(crashes), crashes[0] if crashes else ""
    return kill


def _try(mutant: Mutant, p: Any, sample: Sample, i: int, crashes: list[str]) -> str | None:
    """``None``: no site in program ``i`` (or the mutant raised, noted in ``crashes``);
    ``""``: a site, same outcome; else the disagreement's first line."""
    try:
        out = mutant.fn(p.module)
    except Exception as err:  # noqa: BLE001 - a broken mutant: counted apart, not a catch
        crashes.append(f"program {i + 1}: {type(err).__name__}: {err}")
        return None
    if out is p.module:           # no site in this program: the same outcome
        return None
    try:
        check_program(_constant(out), p.module, p.inputs, name=mutant.name,
                      oracle=sample.oracles[i], alternates=getattr(p, "alternates", ()),
                      alternate_oracles=sample.alternate_oracles[i], fuel=MUTANT_FUEL)
    except AssertionError as err:
        return str(err).split("\n", 1)[0] or "disagreement"
    return ""


def _constant(out: IRModule) -> Callable[[IRModule], IRModule]:
    """A transform that returns ``out`` (the mutated module, computed once)."""

    def transform(_mod: IRModule) -> IRModule:
        return out

    return transform


def mutation_score(mutants: Sequence[Mutant], sample: Sample, *, limit: int | None = None,
                   every: bool = False) -> tuple[float, list[Kill]]:
    """``(caught / total, per-mutant results)`` over ``sample`` (caught: by a disagreement;
    a mutant that only crashed is not caught)."""
    kills = [hunt(m, sample, limit=limit, every=every) for m in mutants]
    caught = sum(k.caught for k in kills)
    return caught / max(1, len(kills)), kills
