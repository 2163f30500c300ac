"""Machine-checked obligations (ARCHITECTURE.md §8): ``proofs.run(only=None)``.

Three classes of obligations, each discharged by Z3 (SymPy translates symbolic dims):

* ``relation.<Name>`` — every type relation in the registry agrees with its operator's
  definition (:mod:`proofs.relations`);
* ``rewrite.<pass>.<rule>`` — every algebraic rewrite a pass performs is an identity under
  its side conditions (:mod:`proofs.rewrites`);
* ``soundness.<...>`` — type soundness of the core calculus (:mod:`proofs.soundness`).

See ``docs/proofs.md`` for what each verdict means and what is proved versus tested.
"""

from __future__ import annotations

from proofs.core import PROVED, REFUTED, UNKNOWN, Obligation, Verdict, registered, run

__all__ = ["PROVED", "REFUTED", "UNKNOWN", "Obligation", "Verdict", "registered", "run"]
