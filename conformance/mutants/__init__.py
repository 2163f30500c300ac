"""Mutant passes: how many plausible bugs does the conformance kit catch? (its *power*).

Each :class:`~conformance.mutants.core.Mutant` is a deliberately wrong pass
``IRModule -> IRModule`` modelling a plausible slip, in four families:

* :mod:`~conformance.mutants.operators` — wrong operator, swapped operands, wrong
  attribute (axis, keepdims, slice window, index, broadcast alignment);
* :mod:`~conformance.mutants.special` — simplifications wrong only at NaN, ±inf, -0.0 or
  integer extremes (``x - x → 0``, ``x * 0 → 0``, saturating arithmetic, ...);
* :mod:`~conformance.mutants.structural` — branches, tuples, projections, effects,
  binders, matches and call arguments rebuilt wrongly;
* :mod:`~conformance.mutants.typelevel` — right value, wrong dtype;
* :mod:`~conformance.mutants.student` — a student's simplifier slips (``x + 0 -> x``,
  ``x * 1 -> x`` under broadcasting, ``max_pool2d`` as ``avg_pool2d``, a CSE merging two
  ``ref`` allocations), filed in the families above.

Every mutant is non-equivalent: its ``witness`` program tells it apart from the oracle.
:func:`~conformance.mutants.power.mutation_score` runs them against generated programs
(``bench/kit_power.py`` prints the table at 300 examples; the test suite keeps the score
above a bar).
"""

from __future__ import annotations

from conformance.mutants.core import Mutant


def all_mutants() -> list[Mutant]:
    """Every registered mutant, by family (operator, special-value, structural, type-level)."""
    from conformance.mutants import operators, special, structural, student, typelevel

    return [*operators.MUTANTS, *special.MUTANTS, *structural.MUTANTS, *typelevel.MUTANTS,
            *student.MUTANTS]


def get_mutant(name: str) -> Mutant:
    """The mutant called ``name`` (``KeyError`` otherwise)."""
    for m in all_mutants():
        if m.name == name:
            return m
    raise KeyError(f"unknown mutant {name!r}")


__all__ = ["Mutant", "all_mutants", "get_mutant"]
