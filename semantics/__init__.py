"""The Relay language: AST, text format, structural operations, errors, operators, prelude.

This package re-exports its part of the public API (docs/architecture.md#api),
loading each piece on first use so that submodules import independently.
The AST lives in :mod:`semantics.expr` and :mod:`semantics.types`.
"""

from __future__ import annotations

import importlib
from typing import Any

from semantics import prelude as _prelude  # noqa: F401  (links the prelude to the text layer)
from semantics.errors import (
    ParseError,
    RelayArgumentTypeError,
    RelayArgumentValueError,
    RelayError,
    RelayRuntimeError,
    RelayTypeError,
)
from semantics.module import IRModule

_LAZY = {
    "alpha_equal": "semantics.alpha", "types_equal": "semantics.alpha",
    "structural_hash": "semantics.alpha",
    "parse": "semantics.parser", "parse_expr": "semantics.parser",
    "parse_type": "semantics.parser",
    "pretty": "semantics.printer",
}

__all__ = [
    "IRModule", "ParseError", "RelayArgumentTypeError", "RelayArgumentValueError",
    "RelayError", "RelayRuntimeError", "RelayTypeError",
    "alpha_equal", "parse", "parse_expr", "parse_type", "pretty", "structural_hash",
    "types_equal",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'semantics' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
