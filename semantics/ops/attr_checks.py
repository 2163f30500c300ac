"""Attribute checks: the ``AttrSpec.check`` callables the operator families share.

Each check takes a value that already has the right *kind* (``OpDef.normalize_attrs`` ran
:func:`~semantics.ops.registry.coerce_attr` first) and returns ``None`` when it is
acceptable, else the end of a message (``"must be >= 1, got 0"``) that the registry turns
into ``RelayTypeError("bad attribute: <op> attribute '<name>' <problem>")``.
:func:`bad_attribute` builds the error for problems that only show in combination
(lengths of several attributes, ranges against each other), from inside a relation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from semantics.dtypes import SCALAR_DTYPES
from semantics.errors import RelayTypeError


def bad_attribute(op: str, why: str) -> RelayTypeError:
    """An attribute problem that only shows in combination (lengths, ranges vs. each other)."""
    return RelayTypeError(f"bad attribute: {op}: {why}")


def check_ints_len(*lengths: int, minimum: int | None = None) -> Callable[[Any], str | None]:
    """A list of ints of one of ``lengths`` elements, each ``>= minimum``."""
    def check(v: Any) -> str | None:
        if lengths and len(v) not in lengths:
            want = " or ".join(str(n) for n in lengths)
            return f"must have {want} element(s), got {len(v)}"
        if minimum is not None and any(x < minimum for x in v):
            return f"elements must be >= {minimum}, got {list(v)}"
        return None
    return check


def check_at_least(minimum: int | float) -> Callable[[Any], str | None]:
    """A number ``>= minimum``."""
    def check(v: Any) -> str | None:
        return None if v >= minimum else f"must be >= {minimum}, got {v}"
    return check


def check_choice(*choices: str) -> Callable[[Any], str | None]:
    """One of the strings ``choices``."""
    def check(v: Any) -> str | None:
        return None if v in choices else f"must be one of {', '.join(choices)}, got {v!r}"
    return check


def check_optional_dtype(v: Any) -> str | None:
    """``""`` (the input's dtype) or a scalar dtype."""
    if v == "" or v in SCALAR_DTYPES:
        return None
    return f"must be \"\" (same as the input) or a dtype, got {v!r}"


def is_int_value(x: Any) -> bool:
    """An int that is not a bool."""
    return isinstance(x, int) and not isinstance(x, bool)


def check_ints_or_none(v: Any) -> str | None:
    """A list of ints, some of which may be None (strided_slice's begin/end)."""
    if isinstance(v, tuple) and all(x is None or is_int_value(x) for x in v):
        return None
    return f"must be a list of integers (or None entries), got {v!r}"


def check_permutation(letters: str, allow_empty: bool = False) -> Callable[[Any], str | None]:
    """A layout that is a permutation of ``letters`` (or "" if allowed)."""
    def check(v: Any) -> str | None:
        if allow_empty and v == "":
            return None
        if isinstance(v, str) and len(v) == len(letters) and sorted(v) == sorted(letters):
            return None
        extra = " or \"\"" if allow_empty else ""
        return f"must be a permutation of {letters}{extra}, got {v!r}"
    return check


def check_pad_width(v: Any) -> str | None:
    """nn.pad's pad_width: a list of (before, after) pairs of non-negative ints."""
    if not isinstance(v, tuple):
        return f"must be a list of [before, after] pairs, got {v!r}"
    for p in v:
        if (not isinstance(p, (tuple, list)) or len(p) != 2
                or not all(is_int_value(x) for x in p)):
            return f"must be a list of [before, after] integer pairs, got {v!r}"
        if p[0] < 0 or p[1] < 0:
            return f"must not contain negative widths, got {v!r}"
    return None
