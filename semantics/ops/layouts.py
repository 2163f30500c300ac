"""Layout strings, parsed once: ``"NCHW"``, ``"NHWC"``, ``"NCHW16c"``, ``"OIHW4i4o"``.

The one parser every layer uses (operator relations and references, the layout passes,
the TVM lowerings). A layout names a tensor's axes in order: an upper-case letter is a
*primal* axis (``N``, ``C``, ``H``, ``W``, ``O``, ``I``), a lower-case letter with a
positive factor is a *block* of its primal axis (``16c``: channel ``c`` of each block of
16 channels; the primal ``C`` axis then counts blocks). Each letter appears once, and a
block axis needs its primal axis.
"""

from __future__ import annotations

import re

from semantics.ops.attr_checks import bad_attribute

__all__ = ["is_blocked", "parse_layout"]

_LAYOUT_RE = re.compile(r"(?:[0-9]*[A-Za-z])+")
_LAYOUT_TOKEN = re.compile(r"([0-9]*)([A-Za-z])")


def parse_layout(op: str, text: str) -> list[tuple[str, int]]:
    """``"NCHW4c"`` -> ``[("N", 0), ("C", 0), ("H", 0), ("W", 0), ("c", 4)]``.

    Upper-case letters are primal axes (factor 0); a lower-case letter with a factor is a
    block of its primal axis.

    Raises:
        RelayTypeError: ``bad attribute`` (naming ``op``) for anything else.
    """
    if not _LAYOUT_RE.fullmatch(text):
        raise bad_attribute(op, f"{text!r} is not a layout such as \"NCHW\" or \"NCHW4c\"")
    axes: list[tuple[str, int]] = []
    for factor, letter in _LAYOUT_TOKEN.findall(text):
        if letter.isupper():
            if factor:
                raise bad_attribute(op, f"layout {text!r}: primal axis {letter} has a factor")
            axes.append((letter, 0))
        else:
            if not factor or int(factor) < 1:
                raise bad_attribute(op, f"layout {text!r}: block axis {letter} needs a "
                                        "positive factor")
            axes.append((letter, int(factor)))
    letters = [a for a, _ in axes]
    if len(set(letters)) != len(letters):
        raise bad_attribute(op, f"layout {text!r} repeats an axis")
    for a, _ in axes:
        if a.islower() and a.upper() not in letters:
            raise bad_attribute(op, f"layout {text!r}: block axis {a} without {a.upper()}")
    return axes


def is_blocked(layout: str) -> bool:
    """The layout has a block axis (a lower-case letter: ``NCHW16c``)."""
    return any(ch.islower() for ch in layout)
