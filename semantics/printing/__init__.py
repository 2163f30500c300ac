"""Internals of the Relay text printer; the entry point is :func:`semantics.printer.pretty`.

One concept per module (the layout and rules are in :mod:`semantics.printer`'s
design note): :mod:`~semantics.printing.literals` (dims, attribute values,
exact scalar literals), :mod:`~semantics.printing.rope` (the output rope and
graph numbering), :mod:`~semantics.printing.names` (per-call state, name
allocation and binder scopes), :mod:`~semantics.printing.types` (types, ADT
definitions, patterns), :mod:`~semantics.printing.sharing` (where graph
bindings go) and :mod:`~semantics.printing.exprs` (expressions and blocks).
Nothing here is public API, so this package re-exports nothing.
"""

from __future__ import annotations

__all__: list[str] = []
