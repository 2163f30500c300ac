"""Seven wrong submissions of the simplifier assignment, to try a grading setup on.

Each is the reference solution (``simplifier_solution.simplify``) followed by one slip a
student makes, taken from the kit's mutation benchmark (``conformance.mutants``)::

    relay conformance --pass examples/assignments/slips.py:x_plus_zero

must exit with status 1 and print a small counterexample (docs/assignments.md).
"""

from __future__ import annotations

from collections.abc import Callable

from simplifier_solution import simplify

from conformance.mutants import get_mutant
from semantics.module import IRModule


def _with_slip(mutant: str) -> Callable[[IRModule], IRModule]:
    slip = get_mutant(mutant)

    def submission(mod: IRModule) -> IRModule:
        return slip(simplify(mod))

    submission.__doc__ = f"the reference simplifier, then: {slip.doc}"
    return submission


x_plus_zero = _with_slip("x + 0 -> x")
x_times_one = _with_slip("x * 1 -> x (broadcast)")
x_minus_x = _with_slip("x - x -> 0")
x_div_x = _with_slip("x / x -> 1")
clip_swapped = _with_slip("clip bounds swapped")
max_pool_as_avg = _with_slip("max_pool2d as avg_pool2d")
cse_merges_refs = _with_slip("CSE merges two ref allocations")

SLIPS = ("x_plus_zero", "x_times_one", "x_minus_x", "x_div_x", "clip_swapped",
         "max_pool_as_avg", "cse_merges_refs")
