"""Machine-checked obligations (docs/architecture.md#toolchain): ``proofs.run(only=None)``.

Three classes of obligations, each discharged by Z3 (SymPy translates symbolic dims):

* ``relation.<Name>`` — every type relation in the registry agrees with its operator's
  definition (:mod:`proofs.relations`; the six relations that decline symbolic dims are
  proved over symbolic dims *and attributes* by :mod:`proofs.relations_symbolic`);
* ``rewrite.<pass>.<rule>`` — every algebraic rewrite a pass performs is an identity under
  its side conditions, reductions over symbolic extents by induction
  (:mod:`proofs.rewrites`);
* ``soundness.<...>`` — type soundness: the first-order core (:mod:`proofs.soundness`),
  functions, ``let``, a sum ADT and ``match`` (:mod:`proofs.soundness_binders`), both
  proved by structural induction in Z3; the full language by a bounded model check.

See ``docs/proofs.md`` for what each verdict means and what is proved versus tested.
"""

from __future__ import annotations

from proofs.core import PROVED, REFUTED, UNKNOWN, Obligation, Verdict
from proofs.runner import registered, run

__all__ = ["PROVED", "REFUTED", "UNKNOWN", "Obligation", "Verdict", "registered", "run"]
