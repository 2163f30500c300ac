"""Numeric literals and attribute values (docs/architecture.md#text; semantics.parser "Literals").

:meth:`LiteralParser.literal` turns a number token into a :class:`Constant`
(int32/float32 by default, suffixes for the other dtypes, out-of-range values
rejected; a folded minus makes the negative minimum fine). Attribute values --
numbers, strings, ``True``/``False``, ``None``/``nullptr``, lists and tuples,
a bare identifier as a string -- are shallow and recurse behind the nesting
budget.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from semantics.expr import Attrs, Constant
from semantics.lexer import decode_number, decode_string
from semantics.parsing.base import ParserBase

__all__ = ["LiteralParser"]


class LiteralParser(ParserBase):
    """The parser layer for numeric literals and ``key=value`` attributes."""

    def literal(self, i: int, negative: bool = False, start: int | None = None) -> Constant:
        first = i if start is None else start
        raw = self.V[i]
        key = "-" + raw if negative else raw
        decoded = self.literals.get(key)
        if decoded is None:
            try:
                decoded = decode_number(raw, negative)
            except ValueError as exc:
                raise self.error(str(exc), first) from None
            self.literals[key] = decoded
        return Constant(np.array(decoded[0], dtype=decoded[1]), span=self.span(first, i))

    # --- attributes -------------------------------------------------------------------------
    def attributes(self, close: str) -> Attrs:
        """``key=value, ...`` up to (not including) ``close``."""
        items: dict[str, Any] = {}
        while self.K[self.i] != close:
            if self.K[self.i] != "IDENT" or self.K[self.i + 1] != "=":
                raise self.error("expected an attribute `name=value` (positional arguments come "
                                 f"before attributes), found {self.toks.describe(self.i)}")
            key_i = self.i
            key = self.V[key_i]
            if key in items:
                raise self.error(f"duplicate attribute {key}", key_i)
            self.i += 2
            items[key] = self.attr_value()
            self.comma_or(close, "after an attribute")
        return Attrs(items)

    def attr_value(self) -> Any:
        K = self.K
        i = self.i
        k = K[i]
        if k == "NUM" or (k == "-" and K[i + 1] == "NUM"):
            negative = k == "-"
            num_i = i + 1 if negative else i
            try:
                value, _ = decode_number(self.V[num_i], negative, check_range=False)
            except ValueError as exc:
                raise self.error(str(exc), i) from None
            self.i = num_i + 1
            return value
        if k == "STR":
            self.i += 1
            try:
                return decode_string(self.V[i])
            except ValueError as exc:
                raise self.error(str(exc), i) from None
        if k == "IDENT":
            self.i += 1
            name = self.V[i]
            if name in ("True", "False"):
                return name == "True"
            if name in ("None", "nullptr"):
                return None
            return name
        if k in ("[", "("):
            close = "]" if k == "[" else ")"
            self.nest(i)
            try:
                self.i += 1
                values: list[Any] = []
                commas = 0
                while K[self.i] != close:
                    values.append(self.attr_value())
                    if K[self.i] == ",":
                        commas += 1
                    self.comma_or(close, "in an attribute list")
                self.i += 1
            finally:
                self.depth -= 1
            if k == "(" and len(values) == 1 and commas == 0:
                return values[0]
            return tuple(values)
        raise self.error("expected an attribute value (number, string, True/False, None or a "
                         f"list), found {self.toks.describe(i)}")
