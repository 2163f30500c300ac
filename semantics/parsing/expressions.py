"""The expression parser core (docs/architecture.md#text, "Design" in :mod:`semantics.parser`).

Infix operators by precedence -- an iterative shunting-yard loop, C-like
precedence, left-associative (``:=`` builds ``RefWrite``); prefix ``-``
(``negative``, folded into a numeric literal) and ``!`` (``ref_read``);
postfix calls ``f(...)`` (with ``key=value`` attributes, on any callee as in
TVM) and projections ``e.0``; atoms: names (resolved while parsing),
literals, parentheses and tuples, ``{ }`` blocks, ``fn``, ``if``/``else if``,
``match``, ``ref``/``ref_read``/``ref_write``/``grad`` and ``meta[...]``.
Nested constructs are generators driven by
:func:`semantics.visitor.run_recursive`: they ``yield`` a sub-parser and
receive its result, so nesting costs no Python stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from semantics import dtypes
from semantics.expr import (
    EMPTY_ATTRS,
    Call,
    Clause,
    Constant,
    Expr,
    GlobalVar,
    Grad,
    If,
    Match,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
)
from semantics.ops.registry import canonical_name
from semantics.parsing.base import ARG_END, Gen
from semantics.parsing.literals import LiteralParser
from semantics.parsing.metadata import MetadataReader
from semantics.parsing.patterns import PatternParser

__all__ = ["ExprParser"]

# Binary operators: token -> (precedence, operator name); ':=' builds RefWrite.
_BINOPS: dict[str, tuple[int, str]] = {
    ":=": (1, ""),
    "||": (2, "logical_or"),
    "&&": (3, "logical_and"),
    "==": (4, "equal"), "!=": (4, "not_equal"),
    "<": (5, "less"), "<=": (5, "less_equal"), ">": (5, "greater"), ">=": (5, "greater_equal"),
    "+": (6, "add"), "-": (6, "subtract"),
    "*": (7, "multiply"), "/": (7, "divide"),
}
_SIMPLE_ATOMS = frozenset({"LOCAL", "GLOBAL", "NUM", "IDENT"})


class ExprParser(PatternParser, LiteralParser, MetadataReader):
    """The parser layer for expressions; blocks and functions come from the layer above."""

    if TYPE_CHECKING:   # defined by BlockParser (semantics.parsing.blocks), which extends this
        def block(self) -> Gen: ...
        def function(self, start: int) -> Gen: ...

    def expr(self) -> Gen:
        """Infix expressions by operator precedence (iterative shunting-yard, left-assoc)."""
        K = self.K
        start = self.i
        first = yield from self.unary()
        info = _BINOPS.get(K[self.i])
        if info is None:
            return first
        operands: list[tuple[Expr, int, int]] = [(first, start, self.i - 1)]
        ops: list[tuple[int, str, int]] = []
        while info is not None:
            prec = info[0]
            while ops and ops[-1][0] >= prec:
                self.reduce(operands, ops)
            ops.append((prec, info[1], self.i))
            self.i += 1
            o_start = self.i
            operand = yield from self.unary()
            operands.append((operand, o_start, self.i - 1))
            info = _BINOPS.get(K[self.i])
        while ops:
            self.reduce(operands, ops)
        return operands[0][0]

    def reduce(self, operands: list[tuple[Expr, int, int]],
               ops: list[tuple[int, str, int]]) -> None:
        _, name, op_i = ops.pop()
        right, _, r_end = operands.pop()
        left, l_start, _ = operands.pop()
        span = self.span(l_start, r_end)
        if name:
            node: Expr = Call(self.operator(name, op_i), (left, right), span=span)
        else:
            node = RefWrite(left, right, span=span)
        operands.append((node, l_start, r_end))

    def operator(self, name: str, i: int) -> Op:
        name = canonical_name(name)
        if not self.op_exists(name):
            raise self.error(f"unknown operator {name}", i)
        return Op(name, span=self.span(i))

    def unary(self) -> Gen:
        """Prefix ``-`` (negative; folded into a numeric literal) and ``!`` (ref_read)."""
        K = self.K
        prefixes: list[int] = []
        while K[self.i] == "-" or K[self.i] == "!":
            prefixes.append(self.i)
            self.i += 1
        if prefixes and K[prefixes[-1]] == "-" and K[self.i] == "NUM" and \
                K[self.i + 1] not in ("(", "PROJ"):
            minus = prefixes.pop()
            node: Expr = self.literal(self.i, negative=True, start=minus)
            self.i += 1
        else:
            node = yield from self.postfix()
        end = self.i - 1
        for p in reversed(prefixes):
            span = self.span(p, end)
            if K[p] == "-":
                node = Call(self.operator("negative", p), (node,), span=span)
            else:
                node = RefRead(node, span=span)
        return node

    def postfix(self) -> Gen:
        """An atom followed by calls ``(...)`` and projections ``.n``."""
        K = self.K
        start = self.i
        node = self.simple_atom()
        if node is None:
            node = yield self.atom()
        while True:
            k = K[self.i]
            if k == "(":
                node = yield from self.call(node, start)
            elif k == "PROJ":
                text = self.V[self.i]
                if len(text) > 12:
                    raise self.error(f"tuple index {text[1:]} is too large")
                node = TupleGetItem(node, int(text[1:]), span=self.span(start, self.i))
                self.i += 1
            else:
                return node

    def call(self, callee: Expr, start: int) -> Gen:
        K = self.K
        self.i += 1
        args: list[Expr] = []
        attrs = EMPTY_ATTRS
        while K[self.i] != ")":
            k = K[self.i]
            if k == "IDENT" and K[self.i + 1] == "=":
                attrs = self.attributes(")")
                break
            if k in _SIMPLE_ATOMS and K[self.i + 1] in ARG_END:
                arg = self.simple_atom()
                assert arg is not None
            else:
                arg = yield self.block()
            args.append(arg)
            self.comma_or(")", "in the arguments of a call")
        self.expect(")", "to end the arguments of a call")
        return Call(callee, tuple(args), attrs, span=self.span(start, self.i - 1))

    def simple_atom(self) -> Expr | None:
        """A one-token atom (name or literal), or None when the atom needs the full parser."""
        i = self.i
        k = self.K[i]
        if k == "LOCAL":
            self.i = i + 1
            return self.lookup_local(i)
        if k == "GLOBAL":
            self.i = i + 1
            name = self.V[i][1:]
            span = self.span(i)
            self.global_refs.setdefault(name, span)
            return GlobalVar(name, span=span)
        if k == "NUM":
            self.i = i + 1
            return self.literal(i)
        if k == "IDENT":
            self.i = i + 1
            return self.identifier(i)
        return None

    def identifier(self, i: int) -> Expr:
        name = self.V[i]
        if name == "True" or name == "False":
            return Constant(np.array(name == "True"), span=self.span(i))
        ctor = self.lookup_ctor(name, i)
        if ctor is not None:
            if not ctor.inputs and self.K[i + 1] != "(":
                return Call(ctor, (), span=self.span(i))
            return ctor
        if self.op_exists(canonical_name(name)):
            return Op(canonical_name(name), span=self.span(i))
        if name == "_":
            raise self.error("`_` is only allowed in patterns", i)
        if dtypes.is_dtype(name) or name in self.type_names or name == "Tensor" or \
                name in self.prelude_types:
            raise self.error(f"`{name}` is a type, not an expression", i)
        raise self.error(f"unknown operator or constructor `{name}`", i)

    # --- compound atoms ---------------------------------------------------------------------
    def atom(self) -> Gen:
        K = self.K
        i = self.i
        k = K[i]
        if k == "(":
            return (yield from self.parenthesized())
        if k == "{":
            self.i += 1
            body = yield self.block()
            self.expect("}", "to end a block")
            return body
        if k == "fn":
            self.i += 1
            return (yield self.function(i))
        if k == "if":
            return (yield from self.if_())
        if k == "match":
            return (yield from self.match())
        if k in ("ref", "ref_read", "grad"):
            self.i += 1
            self.expect("(", f"after `{k}`")
            value = yield self.block()
            self.expect(")", f"to end `{k}(...)`")
            span = self.span(i, self.i - 1)
            if k == "ref":
                return RefCreate(value, span=span)
            if k == "ref_read":
                return RefRead(value, span=span)
            return Grad(value, span=span)
        if k == "ref_write":
            self.i += 1
            self.expect("(", "after `ref_write`")
            ref = yield self.block()
            self.expect(",", "between the reference and the value of `ref_write`")
            value = yield self.block()
            self.expect(")", "to end `ref_write(...)`")
            return RefWrite(ref, value, span=self.span(i, self.i - 1))
        if k == "meta":
            return self.meta_reference()
        if k == "STR":
            raise self.error("a string literal is only allowed as an attribute value")
        if k == "let":
            raise self.error("`let` must start a statement; wrap it in parentheses or braces")
        if k == "%":
            raise self.error("expected a name after `%` (such as `%x` or `%0`)")
        if k in ("def", "type", "extern"):
            raise self.error(f"`{k}` starts a module definition, which is not an expression "
                             "(parse modules with `parse`)")
        raise self.error(f"expected an expression, found {self.toks.describe(i)}")

    def parenthesized(self) -> Gen:
        """``()`` unit, ``(e)`` grouping, ``(e,)`` and ``(e, ...)`` tuples."""
        K = self.K
        start = self.i
        self.i += 1
        if K[self.i] == ")":
            self.i += 1
            return Tuple((), span=self.span(start, self.i - 1))
        first = yield self.block()
        if K[self.i] == ")":
            self.i += 1
            return first
        if K[self.i] != ",":
            raise self.error("expected `,` or `)` in parentheses, "
                             f"found {self.toks.describe(self.i)}")
        fields = [first]
        while K[self.i] == ",":
            self.i += 1
            if K[self.i] == ")":
                break
            if K[self.i] in _SIMPLE_ATOMS and K[self.i + 1] in ARG_END:
                atom = self.simple_atom()
                assert atom is not None     # a simple-atom token always gives an atom
                fields.append(atom)
            else:
                fields.append((yield self.block()))
        self.expect(")", "to end a tuple")
        return Tuple(tuple(fields), span=self.span(start, self.i - 1))

    def if_(self) -> Gen:
        """``if (c) { e } else { e }``, with ``else if`` chains as in the Relay docs.

        A chain ``if (c1) {..} else if (c2) {..} ... else {..}`` is read by one loop (an
        ``else if`` costs no parser level, so a chain is as long as the input allows);
        the ``If`` nodes are built from the last link outwards, each spanning from its
        own ``if`` to the end of the chain.
        """
        links: list[tuple[int, Expr, Expr]] = []
        while True:
            start = self.i
            self.i += 1
            self.expect("(", "after `if`")
            cond = yield self.block()
            self.expect(")", "after the condition of `if`")
            self.expect("{", "to start the then-branch of `if`")
            then = yield self.block()
            self.expect("}", "to end the then-branch of `if`")
            self.expect("else", "after the then-branch of `if`")
            links.append((start, cond, then))
            if self.K[self.i] != "if":  # `else if (...) {...}`: sugar for `else { if ... }`
                break
        self.expect("{", "after `else`")
        node = yield self.block()
        self.expect("}", "to end the else-branch of `if`")
        end = self.i - 1
        for start, cond, then in reversed(links):
            node = If(cond, then, node, span=self.span(start, end))
        return node

    def match(self) -> Gen:
        K = self.K
        start = self.i
        self.i += 1
        complete = True
        if K[self.i] == "?":
            complete = False
            self.i += 1
        if K[self.i] == "{":
            raise self.error("expected the value to match, such as `(%x)`, found `{`")
        data = yield from self.postfix()
        self.expect("{", "to start the clauses of `match`")
        clauses: list[Clause] = []
        while K[self.i] != "}":
            c_start = self.i
            mark = len(self.undo)
            lhs = yield self.pattern(set())
            self.expect("=>", "after pattern")
            rhs = yield self.block()
            self.restore(mark)
            clauses.append(Clause(lhs, rhs, span=self.span(c_start, self.i - 1)))
            self.comma_or("}", "after a match clause")
        self.i += 1
        return Match(data, tuple(clauses), complete, span=self.span(start, self.i - 1))
