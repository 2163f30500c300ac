"""Blocks of statements and function literals (docs/architecture.md#text, "Statements and blocks").

A block is ``stmt* expr`` where a statement is ``let %x[: T] = e;``, a graph
binding ``%0 = e;``, ``free_var %x[: T];`` or ``e;`` (``Let(Var("_"), e, ...)``).
The let spine is parsed by a loop and the ``Let`` nodes are built bottom-up
afterwards, so a 20,000-binding chain costs one generator. ``let %f = fn ...;``
binds ``%f`` inside its value exactly when the value is a function literal,
decided by looking at the tokens first. Functions (``fn`` and ``def``) bind
their type parameters and parameters for their body.
"""

from __future__ import annotations

from semantics.expr import EMPTY_ATTRS, Expr, Function, Let, Var
from semantics.parsing.base import Gen
from semantics.parsing.expressions import ExprParser
from semantics.types import TypeVar

__all__ = ["BlockParser"]

_BLOCK_END = frozenset({"}", ")", "]", ",", "EOF"})


class BlockParser(ExprParser):
    """The parser layer for blocks (statements, the let spine) and functions."""

    def function(self, start: int) -> Gen:
        """``[A](%x: T, attr=v) -> T { body }`` after ``fn`` or ``def @name``.

        ``start`` is the index of the ``fn``/``def`` keyword (where the span starts).
        """
        mark, tmark = len(self.undo), len(self.tundo)
        type_params: tuple[TypeVar, ...] = ()
        if self.K[self.i] in ("[", "<"):
            type_params = self.type_params()
        self.expect("(", "to start the parameters of a function")
        params: list[Var] = []
        seen: set[str] = set()
        attrs = EMPTY_ATTRS
        while self.K[self.i] != ")":
            k = self.K[self.i]
            if k == "LOCAL":
                p_i = self.i
                name = self.V[p_i]
                self.i += 1
                if name in seen:
                    raise self.error(f"duplicate parameter {name}", p_i)
                seen.add(name)
                ann = None
                if self.K[self.i] == ":":
                    self.i += 1
                    ann = self.type_()
                var = Var(name[1:], ann, span=self.span(p_i))
                self.bind(name, var)
                params.append(var)
            elif k == "IDENT" and self.K[self.i + 1] == "=":
                attrs = self.attributes(")")
                break
            else:
                raise self.error(f"expected a parameter such as `%x: T` or `)`, "
                                 f"found {self.toks.describe(self.i)}")
            self.comma_or(")", "after a function parameter")
        self.expect(")", "to end the parameters of a function")
        ret_type = None
        if self.K[self.i] == "->":
            self.i += 1
            ret_type = self.type_()
        self.expect("{", "to start the body of a function")
        body = yield self.block()
        self.expect("}", "to end the body of a function")
        self.restore(mark)
        self.restore_types(tmark)
        return Function(tuple(params), body, ret_type, type_params, attrs,
                        span=self.span(start, self.i - 1))

    def block(self) -> Gen:
        """``stmt* expr`` where a stmt is ``let %x = e;``, ``%0 = e;``, ``free_var %x;``, ``e;``.

        Bindings made here are popped at the end; lets are built bottom-up.
        """
        K, V = self.K, self.V
        mark = len(self.undo)
        pending: list[tuple[Var | None, Expr, int]] = []
        while True:
            k = K[self.i]
            if k == "let":
                let_i = self.i
                self.i += 1
                if K[self.i] != "LOCAL":
                    raise self.error("expected a variable such as `%x` after `let`, "
                                     f"found {self.toks.describe(self.i)}")
                name_i = self.i
                name = V[name_i]
                self.i += 1
                ann = None
                if K[self.i] == ":":
                    self.i += 1
                    ann = self.type_()
                var = Var(name[1:], ann, span=self.span(name_i))
                self.expect("=", f"after `let {name}`")
                recursive = self.is_function_literal(self.i)
                if recursive:
                    self.bind(name, var)
                value = yield self.expr()
                self.expect(";", f"after the value of `let {name}`")
                if not recursive:
                    self.bind(name, var)
                pending.append((var, value, let_i))
            elif k == "LOCAL" and K[self.i + 1] == "=":
                name = V[self.i]
                self.i += 2
                value = yield self.expr()
                self.expect(";", f"after the graph binding `{name} = ...`")
                self.bind(name, value)
            elif k == "free_var":
                self.i += 1
                if K[self.i] != "LOCAL":
                    raise self.error("expected a variable such as `%x` after `free_var`, "
                                     f"found {self.toks.describe(self.i)}")
                name_i = self.i
                name = V[name_i]
                self.i += 1
                ann = None
                if K[self.i] == ":":
                    self.i += 1
                    ann = self.type_()
                self.expect(";", f"after `free_var {name}`")
                if name in self.free_vars:
                    raise self.error(f"free variable {name} declared twice or used before "
                                     "its `free_var` declaration", name_i)
                self.free_vars[name] = Var(name[1:], ann, span=self.span(name_i))
            else:
                if k in _BLOCK_END and (pending or self.undo[mark:]):
                    raise self.error("expected an expression after the last `;` (a block ends "
                                     f"with an expression), found {self.toks.describe(self.i)}")
                start = self.i
                e = yield self.expr()
                if K[self.i] != ";":
                    body = e
                    break
                self.i += 1
                if K[self.i] in _BLOCK_END:
                    raise self.error("expected an expression after `;`, "
                                     f"found {self.toks.describe(self.i)}")
                pending.append((None, e, start))
        self.restore(mark)
        if pending:
            last = self.i - 1
            for maybe_var, value, start in reversed(pending):
                var = Var("_", span=self.span(start)) if maybe_var is None else maybe_var
                body = Let(var, value, body, span=self.span(start, last))
        return body

    def is_function_literal(self, i: int) -> bool:
        """Whether the let value starting at token ``i`` is a function literal: ``fn ... { }``
        (possibly parenthesized) followed by the let's ``;``."""
        K = self.K
        parens = 0
        while K[i] == "(":
            parens += 1
            i += 1
        if K[i] != "fn":
            return False
        while K[i] not in ("{", ";", "EOF", "}"):
            i += 1
        if K[i] != "{":
            return False
        i = self.toks.match[i] + 1
        while parens and K[i] == ")":
            parens -= 1
            i += 1
        return parens == 0 and K[i] == ";"
