"""The Relay conformance kit (docs/architecture.md#api "Conformance kit").

A product of its own: people test their own Relay implementations and passes
with it, and grade course assignments. It offers

* Hypothesis strategies (:mod:`conformance.strategies`): random ASTs over the
  whole grammar, well-kinded types, runtime values of a type, and
  type-directed generation of *well-typed* programs with inputs;
* the differential harness :func:`assert_equivalent` (a pass or a backend
  against the oracle, ``interpreter.evaluate``), with shrunk counterexamples
  printed as Relay text;
* :func:`coverage`: which ``Semantics-*`` rules of ``semantics/RULES.md`` and
  which operators the generated programs exercise;
* :mod:`conformance.external`: the stdin/stdout protocol for testing another
  implementation (``relay conformance --impl CMD``), and
  :mod:`conformance.transforms`, the registry behind ``relay conformance --pass``.

Names load on first use, so ``import conformance`` is cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "assert_equivalent": "conformance.harness",
    "check_program": "conformance.harness",
    "values_equal": "conformance.harness",
    "value_has_type": "conformance.harness",
    "show_value": "conformance.harness",
    "coverage": "conformance.coverage",
    "CoverageReport": "conformance.coverage",
    "AstConfig": "conformance.strategies.ast",
    "ast_exprs": "conformance.strategies.ast",
    "ast_modules": "conformance.strategies.ast",
    "ast_patterns": "conformance.strategies.ast",
    "ast_types": "conformance.strategies.ast",
    "dtypes": "conformance.strategies.types",
    "shapes": "conformance.strategies.types",
    "well_kinded_types": "conformance.strategies.types",
    "values_of": "conformance.strategies.values",
    "ExternalImpl": "conformance.external",
    "register_transform": "conformance.transforms",
    "get_transform": "conformance.transforms",
    "ProgramConfig": "conformance.strategies.programs",
    "Program": "conformance.strategies.programs",
    "well_typed_exprs": "conformance.strategies.programs",
    "well_typed_modules": "conformance.strategies.programs",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'conformance' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
