"""The Relay language: AST, text format, structural operations, errors, operators, prelude.

This package re-exports its part of the public API (ARCHITECTURE.md §4).
The AST lives in :mod:`semantics.expr` and :mod:`semantics.types`.
"""

from __future__ import annotations

from semantics.alpha import alpha_equal, structural_hash, types_equal
from semantics.errors import ParseError, RelayError, RelayRuntimeError, RelayTypeError
from semantics.module import IRModule
from semantics.parser import parse, parse_expr, parse_type
from semantics.printer import pretty

__all__ = [
    "IRModule", "ParseError", "RelayError", "RelayRuntimeError", "RelayTypeError",
    "alpha_equal", "parse", "parse_expr", "parse_type", "pretty", "structural_hash",
    "types_equal",
]
