"""The Relay type checker: kinding, inference with type relations, symbolic shapes.

Public API (docs/architecture.md#api): :func:`infer`, :func:`type_of`, :func:`check`.
The design follows the paper's §3.3.3 and RULES.md ("Kinding", "Typing"):

* :mod:`typechecker.kinding` — Kind-* rules for written types and ADTs;
* :mod:`typechecker.infer` — constraint generation, one case per Type-* rule;
* :mod:`typechecker.schemes` — instantiation and generalization of type schemes;
* :mod:`typechecker.builtin_relations` — the checker's projection and gradient relations;
* :mod:`typechecker.unify` — union-find over type variables and dimension holes;
* :mod:`typechecker.solver` — the relation queue and dependency graph;
* :mod:`typechecker.shape_solver` — dimension equalities with SymPy and Z3;
* :mod:`typechecker.patterns` — pattern typing and match exhaustiveness;
* :mod:`typechecker.program` — modules (SCCs of globals, generalization);
* :mod:`typechecker.annotate` — the annotated output program;
* :mod:`typechecker.messages` — the error-message registry.
"""

from __future__ import annotations

from typechecker.api import check, infer, type_of

__all__ = ["check", "infer", "type_of"]
