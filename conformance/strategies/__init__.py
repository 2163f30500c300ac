"""Hypothesis strategies of the conformance kit.

* :mod:`conformance.strategies.ast` — random, well-scoped ASTs over the whole grammar
  (syntax-level properties such as print∘parse);
* :mod:`conformance.strategies.types` — dtypes, shapes, well-kinded types;
* :mod:`conformance.strategies.values` — runtime values of a given type;
* :mod:`conformance.strategies.programs` — type-directed generation of well-typed
  expressions and modules with inputs (the differential harness's programs);
* :mod:`conformance.strategies.differentiable` — smooth programs over float tensors with
  inputs, for checking automatic differentiation against finite differences.

Names are loaded on first use so that importing the syntax strategies does not
import the interpreter or the type checker.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "AstConfig": "ast", "ast_exprs": "ast", "ast_modules": "ast", "ast_patterns": "ast",
    "ast_types": "ast",
    "dtypes": "types", "dims": "types", "shapes": "types", "concrete_shapes": "types",
    "tensor_types": "types", "well_kinded_types": "types", "symbolic_dims": "types",
    "scalars": "values", "arrays": "values", "tensors": "values", "values_of": "values",
    "ProgramConfig": "programs", "Program": "programs", "well_typed_exprs": "programs",
    "well_typed_modules": "programs", "well_typed_programs": "programs",
    "DifferentiableProgram": "differentiable", "differentiable_programs": "differentiable",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'conformance.strategies' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"conformance.strategies.{module}"), name)
    globals()[name] = value
    return value
