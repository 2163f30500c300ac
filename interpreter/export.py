"""Results crossing back from the interpreter to Python (docs/architecture.md#api, ``evaluate``).

:func:`export_value` prepares a result for the caller: arrays that came straight out
of the program's constants (read-only) are copied, so every array a caller receives
is an ordinary writable ndarray. (Arguments go the other way in
:mod:`interpreter.convert`, which re-exports this function.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from interpreter.values import ConstructorValue

__all__ = ["export_value"]


def export_value(v: Any) -> Any:
    """``v`` with every read-only array (a program constant) replaced by a writable copy.

    Tuples and ADT values are rebuilt only where something changed (most results
    contain no constant, and are returned as they are); references and closures are
    returned as they are (their identity is their meaning). Iterative, memoized by
    identity (values may share sub-values).
    """
    if type(v) is np.ndarray:
        return v if v.flags.writeable else v.copy()
    if type(v) is not tuple and type(v) is not ConstructorValue:
        return v
    if not _has_read_only_array(v):
        return v
    done: dict[int, Any] = {}
    stack: list[tuple[Any, bool]] = [(v, False)]
    while stack:
        x, expanded = stack.pop()
        if id(x) in done:
            continue
        if type(x) is np.ndarray:
            done[id(x)] = x if x.flags.writeable else x.copy()
            continue
        if type(x) is tuple:
            kids = x
        elif type(x) is ConstructorValue:
            kids = x.fields
        else:
            done[id(x)] = x
            continue
        if not expanded:
            stack.append((x, True))
            stack.extend((k, False) for k in kids if id(k) not in done)
            continue
        new = tuple(done[id(k)] for k in kids)
        if all(a is b for a, b in zip(new, kids)):
            done[id(x)] = x
        elif type(x) is tuple:
            done[id(x)] = new
        else:
            done[id(x)] = ConstructorValue(x.name, new, x.constructor)
    return done[id(v)]


def _has_read_only_array(v: Any) -> bool:
    seen: set[int] = set()
    stack = [v]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is np.ndarray:
            if not x.flags.writeable:
                return True
        elif t is tuple or t is ConstructorValue:
            if id(x) in seen:
                continue
            seen.add(id(x))
            stack.extend(x if t is tuple else x.fields)
    return False
