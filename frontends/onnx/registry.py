"""The table of ONNX converters: ``op_type`` → the function converting one node and the
attributes it understands. Family modules register with :func:`converter`; the importer
(``frontends.onnx.importer``) checks every node against the table, then calls the entries.
A converter is ``fn(ctx, node, inputs, attrs) -> outputs`` with ``ctx`` the importer's
``Context`` of the (sub)graph, ``inputs`` the node's input values (None for a missing
optional input) and ``attrs`` its attributes by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from frontends.onnx.builder import Value

Converter = Callable[[Any, Any, list[Value | None], dict[str, Any]], list[Value]]


@dataclass(frozen=True)
class OpEntry:
    """A converter and the attribute names it understands."""

    fn: Converter
    attrs: frozenset[str]
    since: int = 1


#: op_type → entry; filled by the family modules (``ops_math``, ``ops_nn``, ...).
CONVERTERS: dict[str, OpEntry] = {}


def converter(*op_types: str, attrs: tuple[str, ...] = ()) -> Callable[[Converter], Converter]:
    """Register ``fn`` as the converter of ``op_types``, accepting the attributes ``attrs``."""
    def deco(fn: Converter) -> Converter:
        for t in op_types:
            CONVERTERS[t] = OpEntry(fn, frozenset(attrs))
        return fn
    return deco
