"""One-import facade (docs/architecture.md#api): ``import relay; relay.parse(...)``.

Components that are not installed yet are simply absent from the facade.
"""

from __future__ import annotations

import importlib
import importlib.util

from semantics import (  # noqa: F401
    IRModule,
    ParseError,
    RelayError,
    RelayRuntimeError,
    RelayTypeError,
    alpha_equal,
    parse,
    parse_expr,
    parse_type,
    pretty,
    types_equal,
)

__all__ = [
    "IRModule", "ParseError", "RelayError", "RelayRuntimeError", "RelayTypeError",
    "alpha_equal", "parse", "parse_expr", "parse_type", "pretty", "types_equal",
]

_OPTIONAL = {
    "typechecker": ("infer", "type_of", "check"),
    "interpreter": ("evaluate", "ConstructorValue", "Closure", "RefValue"),
    "ad": ("grad", "jvp"),
    "pe": ("partial_evaluate",),
}

for _pkg, _names in _OPTIONAL.items():
    if importlib.util.find_spec(_pkg) is None:
        continue
    _mod = importlib.import_module(_pkg)
    for _name in _names:
        if hasattr(_mod, _name):
            globals()[_name] = getattr(_mod, _name)
            __all__.append(_name)
