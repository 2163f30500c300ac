"""Leaf-level comparisons and hash keys shared by alpha-equality and hashing.

Part of :mod:`semantics.alpha` ("Leaves"): attribute values compare by value
(numbers numerically, ``NaN`` equal to ``NaN``; bools, strings, ``None`` and
lists exactly), constants by dtype, shape and exact bytes; names hash through
CRC-32 so hashes are stable across processes. Also the small helpers both
sides use (scoped-stack pop, the name of a parameterless ADT type).
"""

from __future__ import annotations

import functools
import math
import zlib
from typing import Any

from semantics.expr import (
    EMPTY_ATTRS,
    Attrs,
    Constant,
    Constructor,
    GlobalVar,
    Op,
    Var,
)
from semantics.types import GlobalTypeVar, Type, TypeCall

Node = Any  # Expr | Type | Pattern | Clause | IRModule

LEAVES = (Var, GlobalVar, Op, Constructor, Constant)


# --- attribute values -------------------------------------------------------------------------

def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _attr_value_equal(x: object, y: object) -> bool:
    if _is_number(x) and _is_number(y):
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            return True
        return x == y
    if isinstance(x, tuple) and isinstance(y, tuple):
        return len(x) == len(y) and all(_attr_value_equal(a, b) for a, b in zip(x, y))
    return type(x) is type(y) and x == y


def attrs_equal(a: Attrs | None, b: Attrs | None) -> bool:
    if a is b:
        return True
    if a is None or b is None:
        return False
    if not isinstance(a, Attrs) or not isinstance(b, Attrs):
        return bool(a == b)
    if len(a) != len(b):
        return False
    if not len(a):
        return True
    for key, value in a.items():
        if key not in b or not _attr_value_equal(value, b[key]):
            return False
    return True


@functools.lru_cache(maxsize=8192)
def str_hash(s: str) -> int:
    return zlib.crc32(s.encode("utf-8", "surrogatepass"))


def _attr_value_hash(v: object) -> int:
    if isinstance(v, bool):
        return hash((1, int(v)))
    if _is_number(v):
        if isinstance(v, float) and math.isnan(v):
            return 7
        return hash(v)  # hash(1) == hash(1.0): numbers compare numerically
    if isinstance(v, str):
        return hash((2, str_hash(v)))
    if v is None:
        return 3
    if isinstance(v, tuple):
        return hash((4, *(_attr_value_hash(x) for x in v)))
    return 5


def attrs_hash(a: Attrs | None) -> int:
    if a is None or a is EMPTY_ATTRS or not isinstance(a, Attrs) or not len(a):
        return 0
    return hash(tuple(sorted((str_hash(k), _attr_value_hash(v)) for k, v in a.items())))


def relation_name(rel: object) -> str:
    return str(getattr(rel, "name", rel))


def constants_equal(c1: Constant, c2: Constant) -> bool:
    d1, d2 = c1.data, c2.data
    return d1.dtype == d2.dtype and d1.shape == d2.shape and d1.tobytes() == d2.tobytes()


def nullary_adt_name(t: Type) -> str | None:
    """``Name`` for the types ``Name`` (a bare ``GlobalTypeVar``) and ``Name[]`` (a
    ``TypeCall`` without arguments), which both denote a parameterless ADT; else None."""
    if type(t) is GlobalTypeVar:
        return t.name
    if type(t) is TypeCall and not t.args:
        return t.func.name
    return None


def pop_binding(table: dict[int, list[Any]], key: int) -> None:
    stack = table[key]
    stack.pop()
    if not stack:
        del table[key]
