"""The text layer's view of the prelude: an interface it declares and the prelude fills in.

The parser resolves prelude names (``Cons``, ``@map``, ``List``) to the prelude's own objects
and merges the definitions a program uses; the printer leaves those merged definitions out.
The prelude is itself Relay text, parsed by this parser, so it sits *above* the text layer
(docs/architecture.md#layers): the text layer may not import it. Instead
:mod:`semantics.prelude` registers itself here when it is imported, and the package facade
(``semantics/__init__.py``) imports it, so the link is made before any module of
``semantics`` can be used.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol

from semantics.errors import InternalError
from semantics.expr import Function
from semantics.module import IRModule
from semantics.span import Span
from semantics.types import TypeData

__all__ = ["Prelude", "register", "prelude"]


class Prelude(Protocol):
    """What the parser and the printer need of the prelude."""

    def prelude_module(self) -> IRModule:
        """The parsed prelude (its objects are *the* prelude constructors and ADTs)."""
        ...

    def needed_definitions(self, global_refs: Mapping[str, Span | None],
                           type_refs: Mapping[str, Span | None],
                           defined_functions: Collection[str] = (),
                           defined_types: Collection[str] = (),
                           defined_constructors: Collection[str] = (),
                           ) -> tuple[dict[str, Function], dict[str, TypeData]]:
        """The prelude definitions a program needs (see :mod:`semantics.prelude`)."""
        ...


_PRELUDE: Prelude | None = None


def register(p: Prelude) -> None:
    """Called once by :mod:`semantics.prelude` when it is imported."""
    global _PRELUDE
    _PRELUDE = p


def prelude() -> Prelude:
    """The registered prelude.

    Raises:
        InternalError: nothing registered one (``semantics/__init__.py`` imports the prelude,
            so this means the facade was bypassed).
    """
    if _PRELUDE is None:
        raise InternalError("the prelude is not linked: semantics/__init__.py imports "
                            "semantics.prelude, which registers it")
    return _PRELUDE
