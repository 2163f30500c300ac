"""The parser's state and the services every layer uses (docs/architecture.md#text).

:class:`ParserBase` holds one parse of one text: the token arrays (read
through local aliases for speed), the position, the scopes and what the parse
has seen of the module and the prelude. Its methods are the shared services:
errors (:meth:`~ParserBase.error`, :meth:`~ParserBase.expect`), the nesting
budget for the shallow grammars (types, shapes, attribute values), and name
resolution -- a scope is a name → stack-of-bindings table with an undo log
(O(1) bind and unbind); see "Names resolve while parsing" in
:mod:`semantics.parser`.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np

from semantics import dtypes
from semantics.errors import ParseError
from semantics.expr import Constant, Constructor, Expr, Var
from semantics.lexer import KEYWORDS, Tokens
from semantics.module import IRModule
from semantics.parsing.prelude_link import prelude
from semantics.span import Span
from semantics.types import TypeData, TypeVar

__all__ = ["ARG_END", "MAX_NESTING", "RESERVED", "Gen", "ParserBase"]

Gen = Generator[Any, Any, Any]

ARG_END = frozenset({",", ")"})
RESERVED = KEYWORDS | {"True", "False", "Tensor", "Ref", "_", "nullptr"}
MAX_NESTING = 100   # types, shapes and attribute values (shallow by nature)


class ParserBase:
    """One parse of one text. Token arrays are read through local aliases for speed."""

    def __init__(self, toks: Tokens, *, use_prelude: bool, open_terms: bool = False):
        self.toks = toks
        self.open_terms = open_terms
        self.span = toks.span
        self.K = toks.kinds
        self.V = toks.texts
        self.i = 0
        self.env: dict[str, list[Expr]] = {}
        self.undo: list[str] = []
        self.tenv: dict[str, list[TypeVar]] = {}
        self.tundo: list[str] = []
        self.free_vars: dict[str, Var] = {}
        self.type_names: dict[str, int] = {}
        self.types: dict[str, TypeData] = {}
        self.ctors: dict[str, Constructor] = {}
        self.global_refs: dict[str, Span] = {}
        self.prelude_types_used: dict[str, Span] = {}
        self.depth = 0
        self.metadata: list[np.ndarray] | None = None
        self.meta_consts: dict[int, Constant] = {}
        self.prelude: IRModule | None = None
        self.prelude_ctors: dict[str, Constructor] = {}
        self.prelude_types: frozenset[str] = frozenset()
        self.literals: dict[str, tuple[Any, str]] = {}
        if use_prelude:
            self.prelude = prelude().prelude_module()
            self.prelude_ctors = dict(self.prelude.constructors)
            self.prelude_types = frozenset(self.prelude.types)
        from semantics import ops

        self.op_exists = ops.exists

    # --- errors ------------------------------------------------------------------------------
    def error(self, message: str, i: int | None = None) -> ParseError:
        return ParseError(message, self.toks.span(self.i if i is None else i))

    def expect(self, kind: str, context: str) -> int:
        """Consume a token of ``kind`` (its index is returned) or raise "expected ..."."""
        i = self.i
        if self.K[i] != kind:
            raise self.error(f"expected `{kind}` {context}, found {self.toks.describe(i)}")
        self.i = i + 1
        return i

    def nest(self, i: int) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error("nested too deeply (types, shapes and attribute values may nest "
                             f"at most {MAX_NESTING} levels)", i)

    # --- scopes ----------------------------------------------------------------------------
    def bind(self, name: str, value: Expr) -> None:
        stack = self.env.get(name)
        if stack is None:
            self.env[name] = [value]
        else:
            stack.append(value)
        self.undo.append(name)

    def restore(self, mark: int) -> None:
        undo, env = self.undo, self.env
        while len(undo) > mark:
            env[undo.pop()].pop()

    def bind_type(self, name: str, tv: TypeVar) -> None:
        self.tenv.setdefault(name, []).append(tv)
        self.tundo.append(name)

    def restore_types(self, mark: int) -> None:
        while len(self.tundo) > mark:
            self.tenv[self.tundo.pop()].pop()

    def lookup_local(self, i: int) -> Expr:
        name = self.V[i]
        stack = self.env.get(name)
        if stack:
            return stack[-1]
        var = self.free_vars.get(name)
        if var is None:
            if not self.open_terms:
                raise self.error(f"{name}: this local variable has not been previously declared "
                                 f"(bind it with `let`, a parameter, or `free_var {name};`)", i)
            var = Var(name[1:], span=self.span(i))
            self.free_vars[name] = var
        return var

    def lookup_ctor(self, name: str, i: int) -> Constructor | None:
        ctor = self.ctors.get(name)
        if ctor is not None:
            return ctor
        if self.prelude_ctors:
            ctor = self.prelude_ctors.get(name)
            if ctor is not None and ctor.belong_to.name not in self.type_names:
                self.prelude_types_used.setdefault(ctor.belong_to.name, self.span(i))
                return ctor
        return None

    def is_adt(self, name: str, i: int) -> bool:
        if name in self.type_names:
            return True
        if name in self.prelude_types:
            self.prelude_types_used.setdefault(name, self.span(i))
            return True
        return False

    def check_name(self, i: int, what: str) -> str:
        """The IDENT at ``i`` as a new name for ``what``; reserved words are rejected."""
        if self.K[i] != "IDENT":
            if self.K[i] in KEYWORDS:
                raise self.error(f"`{self.V[i]}` is reserved and cannot be used as {what}", i)
            raise self.error(f"expected {what}, found {self.toks.describe(i)}", i)
        name = self.V[i]
        if name in RESERVED or dtypes.is_dtype(name) or "." in name:
            raise self.error(f"`{name}` is reserved and cannot be used as {what}", i)
        return name

    def comma_or(self, close: str, context: str) -> None:
        """After a list element: consume `,` or stay before ``close``; anything else is an error."""
        k = self.K[self.i]
        if k == ",":
            self.i += 1
        elif k != close:
            raise self.error(f"expected `,` or `{close}` {context}, "
                             f"found {self.toks.describe(self.i)}")
