"""The printer's output rope: nested lists of string fragments and graph-number tokens.

Part of the printer (:mod:`semantics.printer`, "Implementation"). A graph
binding's left-hand side is a :class:`BindingDef` and each use a :class:`BindingRef`;
:func:`join_rope` flattens the rope once, iteratively, numbering the bindings in
text order and skipping numbers taken by variable names.
"""

from __future__ import annotations

from typing import Any

from semantics.errors import InternalError

# --- the output rope -------------------------------------------------------------------------

class BindingDef:
    """The ``%N`` of a graph binding's left-hand side; numbered when the rope is flattened."""

    __slots__ = ("counter", "number")

    def __init__(self, counter: list[int]):
        self.counter = counter
        self.number = -1


class BindingRef:
    """A use ``%N`` of a graph binding (printed after its :class:`BindingDef`)."""

    __slots__ = ("target",)

    def __init__(self, target: BindingDef):
        self.target = target


def join_rope(rope: list[Any], taken: set[int] | None = None) -> str:
    """Flatten the rope once, numbering graph bindings in text order (skipping ``taken``)."""
    parts: list[str] = []
    stack = [iter(rope)]
    while stack:
        for item in stack[-1]:
            cls = type(item)
            if cls is str:
                parts.append(item)
            elif cls is list:
                stack.append(iter(item))
                break
            elif cls is BindingDef:
                n = item.counter[0]
                while taken and n in taken:
                    n += 1
                item.counter[0] = n + 1
                item.number = n
                parts.append(f"%{n}")
            elif cls is BindingRef:
                parts.append(f"%{item.target.number}")
            else:
                raise InternalError(f"printer rope holds a {cls.__name__}")
        else:
            stack.pop()
    return "".join(parts)
