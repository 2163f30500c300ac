"""The obligations ``relation.<Name>``: one per case of :data:`proofs.relations.CASES`.

A case is discharged by the bounded/symbolic check of :mod:`proofs.relcheck`; the relations
that check cannot resolve over symbolic dims are then proved over symbolic dims *and*
attributes by :mod:`proofs.relations_symbolic`. This module only joins the two, so that the
case table and the symbolic proofs (which read the case table's shape models) import in one
direction.
"""

from __future__ import annotations

from collections.abc import Callable

from proofs import relations_symbolic
from proofs.core import PROVED, Verdict, obligation
from proofs.relations import CASES
from proofs.relcheck import RelationCase, check_case

__all__: list[str] = []


def _checker(case: RelationCase) -> Callable[[], Verdict]:
    def check() -> Verdict:
        v = check_case(case)
        if v.status != PROVED or case.relation not in relations_symbolic.PROOFS:
            return v
        w = relations_symbolic.check(case.relation)
        if w.status != PROVED:
            return w
        return Verdict(PROVED, method=f"{w.method} + {v.method}")
    return check


for _case in CASES:
    obligation(f"relation.{_case.relation}",
               f"relation {_case.relation} (operator {_case.op}) is sound and complete for the "
               f"operator's definition" + (f" [{_case.note}]" if _case.note else ""),
               _checker(_case))
