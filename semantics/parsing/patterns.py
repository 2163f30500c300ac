"""The patterns of ``match`` clauses (docs/architecture.md#text).

``_``, ``%x[: T]``, ``Ctor``, ``Ctor(p, ...)`` and ``(p, ...)`` (so ``(p)``
is a one-element tuple pattern, as in TVM). Pattern variables are bound in
the current scope as they are read (the clause pops them) and may appear once
per pattern; constructors resolve through the module, then the prelude.
Nested patterns are sub-generators driven by
:func:`semantics.visitor.run_recursive`, so depth costs no Python stack. The
``match`` expression itself is in :mod:`semantics.parsing.expressions`.
"""

from __future__ import annotations

from semantics.expr import (
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    Var,
)
from semantics.parsing.base import Gen
from semantics.parsing.types import TypeParser

__all__ = ["PatternParser"]


class PatternParser(TypeParser):
    """The parser layer for patterns (it reads the type annotations of pattern variables)."""

    def pattern(self, seen: set[str]) -> Gen:
        """``_``, ``%x[: T]``, ``Ctor``, ``Ctor(p, ...)``, ``(p, ...)``; binds pattern variables."""
        K = self.K
        i = self.i
        k = K[i]
        if k == "IDENT":
            name = self.V[i]
            self.i += 1
            if name == "_":
                return PatternWildcard(span=self.span(i))
            ctor = self.lookup_ctor(name, i)
            if ctor is None and name in ("True", "False"):
                raise self.error(f"`{name}` is a bool literal, and Relay has no literal patterns "
                                 "(`match` takes apart ADT values and tuples); to branch on a "
                                 "bool, write `if (c) { ... } else { ... }`", i)
            if ctor is None:
                raise self.error(f"unknown constructor `{name}` in pattern (to bind a variable, "
                                 f"write `%{name}`)", i)
            fields: list[Pattern] = []
            if K[self.i] == "(":
                self.i += 1
                while K[self.i] != ")":
                    fields.append((yield self.pattern(seen)))
                    self.comma_or(")", "in a constructor pattern")
                self.i += 1
            return PatternConstructor(ctor, tuple(fields), span=self.span(i, self.i - 1))
        if k == "LOCAL":
            name = self.V[i]
            self.i += 1
            if name in seen:
                raise self.error(f"variable {name} bound twice in one pattern", i)
            seen.add(name)
            ann = None
            if K[self.i] == ":":
                self.i += 1
                ann = self.type_()
            var = Var(name[1:], ann, span=self.span(i))
            self.bind(name, var)
            return PatternVar(var, span=self.span(i, self.i - 1))
        if k == "(":
            self.i += 1
            fields = []
            while K[self.i] != ")":
                fields.append((yield self.pattern(seen)))
                self.comma_or(")", "in a tuple pattern")
            self.i += 1
            return PatternTuple(tuple(fields), span=self.span(i, self.i - 1))
        if k == "NUM" or (k == "-" and K[i + 1] == "NUM"):
            literal = self.V[i] if k == "NUM" else "-" + self.V[i + 1]
            raise self.error(f"`{literal}` is a numeric literal, and Relay has no literal "
                             "patterns; to branch on a value, compare it in an `if`, such as "
                             "`if (%x == 0) { ... } else { ... }`", i)
        raise self.error("expected a pattern (`_`, `%x`, a constructor or a tuple), "
                         f"found {self.toks.describe(i)}")
