"""The parser of the Relay text format (ARCHITECTURE.md §3).

Entry points: :func:`parse` (a module), :func:`parse_expr` (an expression),
:func:`parse_expr_with_module` (an expression and the prelude definitions it
needs) and :func:`parse_type`.

Design
------
* **Hand-written, two phases.** :mod:`semantics.lexer` cuts the text into
  tokens (and matches brackets); this module is a recursive-descent parser
  with an operator-precedence (shunting-yard) loop for the infix sugar. The
  C-like precedence table, loosest first: ``:=``, ``||``, ``&&``,
  ``== !=``, ``< <= > >=``, ``+ -``, ``* /``; then the prefix operators
  ``-`` (``negative``; folded into a numeric literal: ``-3`` is a constant)
  and ``!`` (``ref_read``); then call ``f(...)`` and projection ``e.0``.
  Binary operators are left-associative.
* **No recursion limit can be hit.** Expression nesting (parentheses, calls,
  function bodies, branches, patterns) is parsed by generators driven by
  :func:`semantics.visitor.run_recursive`: a nested construct ``yield``s the
  sub-parser and receives its result, so 5,000 nested parentheses need no
  Python stack. Statement spines — ``let %x = e;``, ``e;`` and graph
  bindings ``%0 = e;`` — are parsed by a loop that builds the ``Let`` nodes
  bottom-up afterwards, so a 20,000-binding chain costs one generator.
  Types, shapes and attribute values are shallow; they recurse directly
  behind a nesting budget (``ParseError`` "nested too deeply").
* **Names resolve while parsing.** A scope is a name → stack-of-bindings
  table with an undo log (O(1) bind and unbind). ``%x`` is the innermost
  binding (a :class:`Var` binder, or for a graph binding the bound node
  itself, so every use of ``%0`` is the *same object*: sharing); an unbound
  ``%x`` is a free ``Var``, one per name per parse. ``let %f = fn ...;``
  binds ``%f`` inside its value (recursion) exactly when the value is a
  function literal, decided by looking at the tokens before parsing it; any
  other let value sees the outer ``%f``. ``e1; e2`` is
  ``Let(Var("_"), e1, e2)``. Bare identifiers are constructors (module
  first, then prelude) or registered operators (``semantics.ops.exists``);
  anything else is a ``ParseError``. A nullary constructor written as an
  expression is the call ``Nil()`` — ``Call(Nil, ())`` — as in TVM, where
  constructors have function types; ``Cons`` alone is the constructor.
* **Modules are order-independent.** A first pass skims the top-level items
  (using the bracket table), then every ``type`` definition is parsed, then
  every ``def``; so a function may use a constructor defined further down
  and ADTs may refer to each other.
* **Prelude.** Unless disabled, a name the text uses but does not define is
  looked up in :func:`semantics.prelude.prelude_module` (constructors and
  ADT names resolve to the prelude's own objects) and the prelude
  definitions needed (transitively) are merged into the result; see
  :mod:`semantics.prelude`.
* **Spans.** Every node the parser creates carries the span of its text
  (1-based line/column, end exclusive); every ``ParseError`` carries the
  span of the offending token and says what was expected. No other
  exception escapes for any input string (a non-``str`` argument is a
  ``TypeError``).
* **Speed.** Tokens are parallel lists (no token objects), spans are cut
  from offsets by bisection, and the cyclic garbage collector is paused
  while parsing (no cycles are created; collections cost ~40% on large
  inputs): about 20,000 bindings per second of CPU, lexing included
  (``bench/parse.py``).

Statements and blocks
---------------------
A block (a function body, a branch, a clause body, the inside of parentheses
or of ``{ }``, a whole ``parse_expr`` text) is ``stmt* expr`` where a
statement is ``let %x[: T] = e;``, a graph binding ``%name = e;`` (usually
``%0``), ``free_var %x[: T];`` or ``e;``. Bindings are scoped to their
block; graph bindings are also visible in nested functions. A clause body
may be wrapped in ``{ }`` (as TVM prints it); ``(p)`` in a pattern is a
one-element tuple pattern, as in TVM.

Literals
--------
``1`` int32, ``1.5``/``1e5`` float32; suffixes ``i8 i16 i32 i64 u8 u16 u32
u64 f f16 f32 f64``; ``inff``, ``nanf16``, ``-inff`` ...; ``True``/``False``.
Out-of-range literals are errors (``2147483648`` needs ``i64``), except that
the negative minimum (``-2147483648``) is fine because the minus is folded.
Attribute values are ints, floats, ``"strings"`` (escapes ``\\\\ \\" \\n \\t
\\r \\0 \\xHH \\uHHHH``), ``True``/``False``, ``None`` (also ``nullptr``),
lists ``[...]`` and tuples, stored in ``Call.attrs`` as written (lists
become tuples; a bare identifier is taken as a string).

Types
-----
``float32`` is ``Tensor[(), float32]``; ``Tensor[(d, ...), dtype]`` where a
dim is an integer (an ``i32``/``i64`` suffix is ignored), ``?`` (``ANY``), a
shape variable (any identifier: ``shapes.shape_var(name)``) or arithmetic
``+ - * / %`` / ``floor(e)`` / ``ceil(e)`` over them (SymPy, normalized with
``shapes.normalize``); ``(10)`` and ``(10,)`` are both one dimension. Tuples
``()``, ``(T,)``, ``(T, U)`` (``(T)`` is just ``T``); ``fn [A](T) -> U``
(also ``<A>``); ``Ref[T]`` (also TVM's ``ref(T)``); ``List[T]``; type
parameters in scope (``[A]``, ``[n: Shape]``, kinds ``Type Shape BaseType
Constraint AdtHandle``); ``_`` is an ``IncompleteType`` as in TVM.

Metadata section
----------------
Non-scalar constants are written ``meta[relay.Constant][i]`` (also the
paper's ``meta[Constant][i]``) and the text ends with a line ``#[metadata]``
followed by JSON. Our format (what :mod:`semantics.printer` writes)::

    #[metadata]
    {"relay.Constant": [{"dtype": "float32", "shape": [2, 3],
                         "data": "<base64 of the C-order little-endian bytes>"}]}

The arrays are read back bit-exactly. TVM's own node-graph JSON (``root``,
``nodes``, ``b64ndarrays`` holding serialized NDArrays) is accepted too.
Each index resolves to one ``Constant`` object, so repeated references
share it.

Limits
------
Explicit type arguments at calls (``@f[int32](...)``), ``where`` clauses,
TVM's ``virtual_device`` annotations, dictionary attribute values
``{k=v}`` and ``meta[...]`` for anything but constants are not supported
(``ParseError``). A bare nullary ``Constructor`` node (not a call) has no
text of its own: ``Nil`` always parses to ``Call(Nil, ())``.
"""

from __future__ import annotations

import base64
import binascii
import gc
import json
import math
import struct
from collections.abc import Generator
from typing import Any

import numpy as np
import sympy

from semantics import dtypes, shapes
from semantics.errors import ParseError
from semantics.expr import (
    EMPTY_ATTRS,
    Attrs,
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Grad,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from semantics.lexer import (
    KEYWORDS,
    Tokens,
    decode_number,
    decode_string,
    tokenize,
    version_of,
)
from semantics.module import IRModule
from semantics.span import Span
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeVar,
)
from semantics.visitor import run_recursive

__all__ = ["parse", "parse_expr", "parse_expr_with_module", "parse_type"]

Gen = Generator[Any, Any, Any]

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
_ARG_END = frozenset({",", ")"})
_BLOCK_END = frozenset({"}", ")", "]", ",", "EOF"})
_KINDS = {
    "Type": Kind.Type, "Shape": Kind.ShapeVar, "ShapeVar": Kind.ShapeVar,
    "BaseType": Kind.BaseType, "Constraint": Kind.Constraint, "Relation": Kind.Constraint,
    "AdtHandle": Kind.AdtHandle, "ADT": Kind.AdtHandle,
}
RESERVED = KEYWORDS | {"True", "False", "Tensor", "Ref", "_", "nullptr"}
_MAX_NESTING = 100   # types, shapes and attribute values (shallow by nature)
_SUPPORTED_VERSIONS = ("0.0.3", "0.0.4", "0.0.5")


# --- public API ------------------------------------------------------------------------------

def parse(text: str, source_name: str = "<string>", *, prelude: bool = True) -> IRModule:
    """Parse a module: ``def`` and ``type`` definitions (§3).

    Args:
        text: the program text (an optional ``#[version = "0.0.5"]`` header, definitions, an
            optional ``#[metadata]`` section).
        source_name: the file name used in spans and error messages.
        prelude: when True (the default), prelude definitions the text uses but does not
            define are added to the module (with their dependencies).
    Returns:
        The :class:`IRModule`; ``mod["main"]`` is ``@main``.
    Raises:
        ParseError: for any malformed text, with the span of the offending token.
    """
    return _run(text, source_name, prelude, _Parser.parse_module)


def parse_expr(text: str, source_name: str = "<string>") -> Expr:
    """Parse one expression (statements such as ``let``/``free_var`` included).

    Prelude names resolve to the prelude's objects; use :func:`parse_expr_with_module`
    to also get the prelude definitions the expression needs.

    Raises:
        ParseError: for any malformed text (including empty input).
    """
    return parse_expr_with_module(text, source_name)[0]


def parse_expr_with_module(text: str, source_name: str = "<string>") -> tuple[Expr, IRModule]:
    """Parse an expression and return it with a module of the prelude definitions it uses.

    Returns:
        ``(expr, mod)``: ``mod`` holds exactly the prelude functions and ADTs ``expr``
        needs (transitively); it is empty when none are needed.
    Raises:
        ParseError: for any malformed text (including empty input).
    """
    return _run(text, source_name, True, _Parser.parse_expression)


def parse_type(text: str, source_name: str = "<string>") -> Type:
    """Parse one type, e.g. ``Tensor[(n, 3), float32]`` or ``fn [A](A) -> List[A]``.

    Raises:
        ParseError: for any malformed text; type variables must be bound (``fn [A](A) -> A``).
    """
    return _run(text, source_name, True, _Parser.parse_type_text)


def _run(text: str, source_name: str, use_prelude: bool, entry: Any) -> Any:
    """Tokenize ``text`` and run the parser method ``entry`` on it.

    The cyclic garbage collector is paused meanwhile: parsing allocates many objects and
    creates no reference cycles, so collections would only cost time (about 40% on large
    inputs). A Python recursion overflow (which the design avoids) would become a
    ParseError at the current token, never a RecursionError.
    """
    if not isinstance(text, str):
        raise TypeError(f"expected program text (str), got {type(text).__name__}")
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        if use_prelude:
            from semantics.prelude import prelude_module

            prelude_module()   # parse (and cache) the prelude outside this parse
        parser = _Parser(tokenize(text, source_name), use_prelude=use_prelude)
        try:
            return entry(parser)
        except RecursionError:
            raise ParseError("expression nested too deeply to parse",
                             parser.toks.span(min(parser.i, len(parser.K) - 1))) from None
    finally:
        if paused:
            gc.enable()


# --- the parser ------------------------------------------------------------------------------

class _Parser:
    """One parse of one text. Token arrays are read through local aliases for speed."""

    def __init__(self, toks: Tokens, *, use_prelude: bool):
        self.toks = toks
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
            from semantics.prelude import prelude_module

            self.prelude = prelude_module()
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
        if self.depth > _MAX_NESTING:
            raise self.error("nested too deeply (types, shapes and attribute values may nest "
                             f"at most {_MAX_NESTING} levels)", i)

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

    # --- entry points -----------------------------------------------------------------------
    def skip_version(self) -> None:
        if self.K[self.i] == "VERSION":
            version = version_of(self.V[self.i])
            if version not in _SUPPORTED_VERSIONS:
                raise self.error(f"unsupported text format version \"{version}\" "
                                 f"(supported: {', '.join(_SUPPORTED_VERSIONS)})")
            self.i += 1

    def check_metadata(self) -> None:
        """Decode a ``#[metadata]`` section up front, so a malformed one is always reported."""
        if self.toks.metadata is not None:
            self.load_metadata(len(self.K) - 1)

    def parse_expression(self) -> tuple[Expr, IRModule]:
        self.skip_version()
        self.check_metadata()
        if self.K[self.i] == "EOF":
            raise self.error("expected an expression, found end of input")
        expr = run_recursive(self.block())
        if self.K[self.i] != "EOF":
            raise self.error(f"expected end of input after the expression, "
                             f"found {self.toks.describe(self.i)}")
        from semantics.prelude import needed_definitions

        funcs, types = needed_definitions(self.global_refs, self.prelude_types_used, (), (), ())
        return expr, IRModule(funcs, types, source_name=self.toks.source.name)

    def parse_type_text(self) -> Type:
        if self.K[self.i] == "EOF":
            raise self.error("expected a type, found end of input")
        t = self.type_()
        if self.K[self.i] != "EOF":
            raise self.error(f"expected end of input after the type, "
                             f"found {self.toks.describe(self.i)}")
        return t

    def parse_module(self) -> IRModule:
        self.skip_version()
        self.check_metadata()
        type_items, def_items = self.skim_items()
        for start in type_items:
            self.i = start
            td = self.type_definition()
            self.types[td.header.name] = td
        functions: dict[str, Function] = {}
        for start in def_items:
            self.i = start + 1
            name_i = self.expect("GLOBAL", "after `def`")
            name = self.V[name_i][1:]
            if name in functions:
                raise self.error(f"duplicate definition of global @{name}", name_i)
            functions[name] = run_recursive(self.function(start))
        if self.prelude is None:
            return IRModule(functions, self.types, source_name=self.toks.source.name)
        from semantics.prelude import needed_definitions

        extra_funcs, extra_types = needed_definitions(
            self.global_refs, self.prelude_types_used, functions, self.types, self.ctors)
        functions.update((k, v) for k, v in extra_funcs.items() if k not in functions)
        all_types = dict(self.types)
        all_types.update((k, v) for k, v in extra_types.items() if k not in all_types)
        return IRModule(functions, all_types, source_name=self.toks.source.name)

    def skim_items(self) -> tuple[list[int], list[int]]:
        """Start indices of the top-level ``type`` and ``def`` items; registers ADT names."""
        K, M = self.K, self.toks.match
        types: list[int] = []
        defs: list[int] = []
        j = self.i
        while K[j] != "EOF":
            k = K[j]
            if k == "def":
                defs.append(j)
                b = j + 1
                while K[b] not in ("{", "EOF", "def", "type", "}"):
                    b += 1
                if K[b] != "{":
                    return types, defs   # malformed: the full parse reports it
                j = M[b] + 1
            elif k == "type" or (k == "extern" and K[j + 1] == "type"):
                types.append(j)
                n = j + 1 if k == "type" else j + 2
                if K[n] == "IDENT":
                    name = self.V[n]
                    if name in self.type_names:
                        raise self.error(f"duplicate definition of type {name}", n)
                    self.type_names[name] = n
                b = n + 1
                if K[b] == "[":
                    b = M[b] + 1
                j = M[b] + 1 if K[b] == "{" else b
            elif k == "VERSION":
                raise self.error("the `#[version = ...]` header must come first", j)
            else:
                raise self.error(f"expected `def` or `type` at the top level, "
                                 f"found {self.toks.describe(j)}", j)
        return types, defs

    # --- ADT definitions --------------------------------------------------------------------
    def type_definition(self) -> TypeData:
        start = self.i
        if self.K[self.i] == "extern":
            self.i += 1
        self.expect("type", "to start a type definition")
        name_i = self.i
        name = self.check_name(name_i, "a type name")
        self.i += 1
        header = GlobalTypeVar(name, span=self.span(name_i))
        tmark = len(self.tundo)
        type_vars = self.type_params() if self.K[self.i] == "[" else ()
        ctors: list[Constructor] = []
        if self.K[self.i] == "{":
            self.i += 1
            while self.K[self.i] != "}":
                c_i = self.i
                cname = self.check_name(c_i, "a constructor name")
                self.i += 1
                if cname in self.ctors:
                    raise self.error(f"duplicate constructor {cname}", c_i)
                inputs: list[Type] = []
                if self.K[self.i] == "(":
                    self.i += 1
                    while self.K[self.i] != ")":
                        inputs.append(self.type_())
                        self.comma_or(")", "in the fields of a constructor")
                    self.i += 1
                ctor = Constructor(cname, tuple(inputs), header, len(ctors),
                                   span=self.span(c_i, self.i - 1))
                self.ctors[cname] = ctor
                ctors.append(ctor)
                self.comma_or("}", "after a constructor")
            self.i += 1
        self.restore_types(tmark)
        return TypeData(header, tuple(type_vars), tuple(ctors), span=self.span(start, self.i - 1))

    def comma_or(self, close: str, context: str) -> None:
        """After a list element: consume `,` or stay before ``close``; anything else is an error."""
        k = self.K[self.i]
        if k == ",":
            self.i += 1
        elif k != close:
            raise self.error(f"expected `,` or `{close}` {context}, "
                             f"found {self.toks.describe(self.i)}")

    def type_params(self) -> tuple[TypeVar, ...]:
        """``[A, B: Shape]`` or ``<A>``; binds each in the type scope."""
        close = "]" if self.K[self.i] == "[" else ">"
        self.i += 1
        params: list[TypeVar] = []
        seen: set[str] = set()
        while self.K[self.i] != close:
            p_i = self.i
            name = self.check_name(p_i, "a type parameter name")
            self.i += 1
            if name in seen:
                raise self.error(f"duplicate type parameter {name}", p_i)
            seen.add(name)
            kind = Kind.Type
            if self.K[self.i] == ":":
                self.i += 1
                kind_name = self.V[self.i] if self.K[self.i] == "IDENT" else ""
                if kind_name not in _KINDS:
                    raise self.error(f"expected a kind ({', '.join(_KINDS)}), "
                                     f"found {self.toks.describe(self.i)}")
                kind = _KINDS[kind_name]
                self.i += 1
            tv = TypeVar(name, kind, span=self.span(p_i))
            self.bind_type(name, tv)
            params.append(tv)
            self.comma_or(close, "in a type parameter list")
        self.i += 1
        return tuple(params)

    # --- functions ----------------------------------------------------------------------------
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

    # --- statements (the let spine, iteratively) ----------------------------------------------
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
            for var, value, start in reversed(pending):
                if var is None:
                    var = Var("_", span=self.span(start))
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

    # --- expressions ------------------------------------------------------------------------
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
        attr_i = -1
        while K[self.i] != ")":
            k = K[self.i]
            if k == "IDENT" and K[self.i + 1] == "=":
                attr_i = self.i
                attrs = self.attributes(")")
                break
            if k in _SIMPLE_ATOMS and K[self.i + 1] in _ARG_END:
                arg = self.simple_atom()
                assert arg is not None
            else:
                arg = yield self.block()
            args.append(arg)
            self.comma_or(")", "in the arguments of a call")
        self.expect(")", "to end the arguments of a call")
        if attr_i >= 0 and not isinstance(callee, Op):
            raise self.error("attributes are only allowed in calls of operators", attr_i)
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
        if self.op_exists(name):
            return Op(name, span=self.span(i))
        if name == "_":
            raise self.error("`_` is only allowed in patterns", i)
        if dtypes.is_dtype(name) or name in self.type_names or name == "Tensor" or \
                name in self.prelude_types:
            raise self.error(f"`{name}` is a type, not an expression", i)
        raise self.error(f"unknown operator or constructor `{name}`", i)

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
            if K[self.i] in _SIMPLE_ATOMS and K[self.i + 1] in _ARG_END:
                fields.append(self.simple_atom())  # type: ignore[arg-type]
            else:
                fields.append((yield self.block()))
        self.expect(")", "to end a tuple")
        return Tuple(tuple(fields), span=self.span(start, self.i - 1))

    def if_(self) -> Gen:
        """``if (c) { e } else { e }``, with ``else if`` chains as in the Relay docs."""
        start = self.i
        self.i += 1
        self.expect("(", "after `if`")
        cond = yield self.block()
        self.expect(")", "after the condition of `if`")
        self.expect("{", "to start the then-branch of `if`")
        then = yield self.block()
        self.expect("}", "to end the then-branch of `if`")
        self.expect("else", "after the then-branch of `if`")
        if self.K[self.i] == "if":  # `else if (...) {...}`: sugar for `else { if ... }`
            other = yield from self.if_()
            return If(cond, then, other, span=self.span(start, self.i - 1))
        self.expect("{", "after `else`")
        other = yield self.block()
        self.expect("}", "to end the else-branch of `if`")
        return If(cond, then, other, span=self.span(start, self.i - 1))

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
        raise self.error("expected a pattern (`_`, `%x`, a constructor or a tuple), "
                         f"found {self.toks.describe(i)}")

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

    # --- metadata ---------------------------------------------------------------------------
    def meta_reference(self) -> Constant:
        K, V = self.K, self.V
        start = self.i
        self.i += 1
        self.expect("[", "after `meta`")
        if K[self.i] != "IDENT":
            raise self.error(f"expected a metadata kind such as `relay.Constant`, "
                             f"found {self.toks.describe(self.i)}")
        kind = V[self.i]
        if kind not in ("relay.Constant", "Constant"):
            raise self.error(f"unsupported metadata kind `{kind}` (only relay.Constant)")
        self.i += 1
        self.expect("]", "after the metadata kind")
        self.expect("[", "before the metadata index")
        if K[self.i] != "NUM" or not V[self.i].isdigit() or len(V[self.i]) > 9:
            raise self.error(f"expected a metadata index, found {self.toks.describe(self.i)}")
        index = int(V[self.i])
        self.i += 1
        self.expect("]", "after the metadata index")
        table = self.load_metadata(start)
        if index >= len(table):
            raise self.error(f"meta[{kind}][{index}] is out of range: the metadata section "
                             f"has {len(table)} constant(s)", start)
        const = self.meta_consts.get(index)
        if const is None:
            const = Constant(table[index], span=self.span(start, self.i - 1))
            self.meta_consts[index] = const
        return const

    def load_metadata(self, at: int) -> list[np.ndarray]:
        if self.metadata is not None:
            return self.metadata
        text = self.toks.metadata
        if text is None:
            raise self.error("`meta[...]` is used but the text has no `#[metadata]` section", at)
        try:
            self.metadata = decode_metadata(text)
        except MetadataError as exc:
            offset = self.toks.metadata_offset + min(max(exc.pos, 0), len(text))
            raise ParseError(exc.message, self.toks.span_offsets(offset, offset)) from None
        return self.metadata

    # --- types ------------------------------------------------------------------------------
    def type_(self) -> Type:
        i = self.i
        self.nest(i)
        try:
            return self.type_inner(i)
        finally:
            self.depth -= 1

    def type_inner(self, i: int) -> Type:
        K, V = self.K, self.V
        k = K[i]
        if k == "IDENT":
            name = V[i]
            self.i = i + 1
            if dtypes.is_dtype(name):
                return TensorType((), name, span=self.span(i))
            stack = self.tenv.get(name)
            if stack:
                return stack[-1]
            if name == "Tensor":
                self.expect("[", "after `Tensor`")
                shape = self.shape()
                self.expect(",", "between the shape and the dtype of a tensor type")
                dtype = self.dtype()
                self.expect("]", "to end a tensor type")
                return TensorType(shape, dtype, span=self.span(i, self.i - 1))
            if name == "Ref":
                self.expect("[", "after `Ref`")
                value = self.type_()
                self.expect("]", "to end `Ref[...]`")
                return RefType(value, span=self.span(i, self.i - 1))
            if name == "_":
                return IncompleteType(span=self.span(i))
            if self.is_adt(name, i):
                args: list[Type] = []
                if K[self.i] == "[":
                    self.i += 1
                    while K[self.i] != "]":
                        args.append(self.type_())
                        self.comma_or("]", "in the arguments of a type call")
                    self.i += 1
                return TypeCall(GlobalTypeVar(name, span=self.span(i)), tuple(args),
                                span=self.span(i, self.i - 1))
            if self.lookup_ctor(name, i) is not None:
                raise self.error(f"`{name}` is a constructor, not a type", i)
            raise self.error(f"unknown type `{name}`", i)
        if k == "(":
            self.i = i + 1
            if K[self.i] == ")":
                self.i += 1
                return TupleType((), span=self.span(i, self.i - 1))
            first = self.type_()
            if K[self.i] == ")":
                self.i += 1
                return first
            fields = [first]
            while K[self.i] == ",":
                self.i += 1
                if K[self.i] == ")":
                    break
                fields.append(self.type_())
            self.expect(")", "to end a tuple type")
            return TupleType(tuple(fields), span=self.span(i, self.i - 1))
        if k == "fn":
            self.i = i + 1
            tmark = len(self.tundo)
            type_params = self.type_params() if K[self.i] in ("[", "<") else ()
            self.expect("(", "to start the parameter types of a function type")
            arg_types: list[Type] = []
            while K[self.i] != ")":
                arg_types.append(self.type_())
                self.comma_or(")", "in the parameter types of a function type")
            self.i += 1
            self.expect("->", "after the parameter types of a function type")
            ret = self.type_()
            self.restore_types(tmark)
            return FuncType(tuple(arg_types), ret, type_params, span=self.span(i, self.i - 1))
        if k == "ref":
            self.i = i + 1
            self.expect("(", "after `ref` in a type")
            value = self.type_()
            self.expect(")", "to end `ref(...)`")
            return RefType(value, span=self.span(i, self.i - 1))
        raise self.error(f"expected a type, found {self.toks.describe(i)}", i)

    def dtype(self) -> str:
        i = self.i
        if self.K[i] != "IDENT" or not dtypes.is_dtype(self.V[i]):
            raise self.error(f"expected a dtype such as `float32`, found {self.toks.describe(i)}")
        self.i += 1
        return self.V[i]

    def shape(self) -> tuple[shapes.Dim, ...]:
        """``(d, ...)``: ``(10)`` and ``(10,)`` are both one dimension."""
        self.expect("(", "to start the shape of a tensor type")
        dims: list[shapes.Dim] = []
        while self.K[self.i] != ")":
            dims.append(self.dimension())
            self.comma_or(")", "in a shape")
        self.i += 1
        return tuple(dims)

    def dimension(self) -> shapes.Dim:
        start = self.i
        k = self.K[start]
        if self.K[start + 1] in _ARG_END:
            if k == "?":
                self.i += 1
                return shapes.ANY
            if k == "NUM" and self.V[start].isdigit() and len(self.V[start]) < 19:
                self.i += 1
                return int(self.V[start])
        try:
            dim = shapes.normalize(self.dim_sum())
        except (TypeError, ValueError, ZeroDivisionError, AttributeError, OverflowError) as exc:
            raise self.error(f"invalid dimension: {exc}", start) from None
        if isinstance(dim, int):
            if dim < 0:
                raise self.error(f"negative dimension {dim}", start)
            return dim
        if isinstance(dim, sympy.Basic) and (dim.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo)
                                             or dim.is_number):
            raise self.error(f"invalid dimension {dim} (dimensions are integers)", start)
        return dim

    def dim_sum(self) -> Any:
        left = self.dim_product()
        while self.K[self.i] in ("+", "-"):
            op = self.K[self.i]
            self.i += 1
            right = self.dim_product()
            left = left + right if op == "+" else left - right
        return left

    def dim_product(self) -> Any:
        K = self.K
        left = self.dim_unary()
        while True:
            k = K[self.i]
            op_i = self.i
            if k in ("*", "/", "%"):
                self.i += 1
                right = self.dim_unary()
            elif k == "LOCAL":   # `n %2` lexes `%2` as a local name: it is `%` then `2`
                text = self.V[self.i][1:]
                self.i += 1
                k = "%"
                right = int(text) if text.isdigit() and len(text) < 20 else \
                    self.shape_variable(text, op_i)
            else:
                return left
            if k == "*":
                left = left * right
            elif isinstance(right, int) and right == 0:
                raise self.error("division by zero in a dimension", op_i)
            elif k == "/":
                left = sympy.Rational(left, right) if isinstance(left, int) and \
                    isinstance(right, int) else sympy.sympify(left) / right
            elif isinstance(left, int) and isinstance(right, int):
                left = left % right
            else:
                left = sympy.Mod(left, right)

    def dim_unary(self) -> Any:
        i = self.i
        if self.K[i] == "-":
            self.nest(i)
            try:
                self.i += 1
                return -self.dim_unary()
            finally:
                self.depth -= 1
        return self.dim_atom()

    def dim_atom(self) -> Any:
        K, V = self.K, self.V
        i = self.i
        k = K[i]
        if k == "NUM":
            text = V[i]
            digits = text[:-3] if text.endswith(("i64", "i32")) else text
            if not digits.isdigit() or len(digits) > 18:
                raise self.error(f"expected an integer dimension, found `{text}`", i)
            self.i += 1
            return int(digits)
        if k == "IDENT":
            name = V[i]
            self.i += 1
            if name in ("floor", "ceil") and K[self.i] == "(":
                self.nest(i)
                try:
                    self.i += 1
                    inner = self.dim_sum()
                    self.expect(")", f"to end `{name}(...)`")
                finally:
                    self.depth -= 1
                return sympy.floor(inner) if name == "floor" else sympy.ceiling(inner)
            return self.shape_variable(name, i)
        if k == "(":
            self.nest(i)
            try:
                self.i += 1
                inner = self.dim_sum()
                self.expect(")", "in a dimension")
            finally:
                self.depth -= 1
            return inner
        if k == "?":
            raise self.error("`?` must be a whole dimension, not part of an expression", i)
        raise self.error(f"expected a dimension (an integer, `?` or a shape variable), "
                         f"found {self.toks.describe(i)}", i)

    def shape_variable(self, name: str, i: int) -> sympy.Symbol:
        if name in RESERVED or dtypes.is_dtype(name):
            raise self.error(f"`{name}` cannot be a shape variable", i)
        return shapes.shape_var(name)


# --- metadata decoding -----------------------------------------------------------------------

class MetadataError(Exception):
    """A malformed metadata section; ``pos`` is the character offset in the JSON text."""

    def __init__(self, message: str, pos: int = 0):
        super().__init__(message)
        self.message = message
        self.pos = pos


def decode_metadata(text: str) -> list[np.ndarray]:
    """The constant table of a ``#[metadata]`` section (our JSON format or TVM's).

    Raises:
        MetadataError: malformed JSON or an entry that does not describe a tensor (the
            parser turns it into a ParseError at that position).
    """
    start = len(text) - len(text.lstrip())
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MetadataError(f"malformed metadata section: {exc.msg}", exc.pos) from None
    except (ValueError, RecursionError) as exc:
        raise MetadataError(f"malformed metadata section: {exc}", start) from None
    try:
        if isinstance(obj, dict) and "b64ndarrays" in obj and "nodes" in obj:
            return _decode_tvm_metadata(obj)
        if not isinstance(obj, dict):
            raise ValueError("expected a JSON object")
        entries = obj.get("relay.Constant", obj.get("Constant", []))
        if not isinstance(entries, list):
            raise ValueError("\"relay.Constant\" must be a list")
        return [_decode_entry(k, e) for k, e in enumerate(entries)]
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, AttributeError,
            struct.error, binascii.Error) as exc:
        raise MetadataError(f"malformed metadata section: {exc}", start) from None


def _decode_entry(k: int, entry: Any) -> np.ndarray:
    if not isinstance(entry, dict):
        raise ValueError(f"constant {k} is not an object")
    dtype, shape, data = entry.get("dtype"), entry.get("shape"), entry.get("data")
    if not isinstance(dtype, str) or dtype not in dtypes.SCALAR_DTYPES:
        raise ValueError(f"constant {k} has no valid \"dtype\"")
    if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**40 for d in shape):
        raise ValueError(f"constant {k} has no valid \"shape\"")
    if not isinstance(data, str):
        raise ValueError(f"constant {k} has no \"data\" string")
    raw = base64.b64decode(data.encode("ascii"), validate=True)
    return _array_from_bytes(raw, dtype, shape, f"constant {k}")


def _array_from_bytes(raw: bytes, dtype: str, shape: list[int], what: str) -> np.ndarray:
    np_dtype = np.dtype(dtype)
    count = math.prod(shape)
    if len(raw) != count * np_dtype.itemsize:
        raise ValueError(f"{what}: {len(raw)} data bytes for {count} element(s) of {dtype}")
    if dtype == "bool":
        if any(b > 1 for b in raw):
            raise ValueError(f"{what}: boolean data must be bytes 0 or 1")
        arr = np.frombuffer(raw, dtype=np.uint8).astype(np.bool_)
    else:
        arr = np.frombuffer(raw, dtype=np_dtype.newbyteorder("<")).astype(np_dtype)
    return arr.reshape(shape)


_TVM_NDARRAY_MAGIC = 0xDD5E40F096B4A13F
_DL_CODES = {0: "int", 1: "uint", 2: "float"}


def _decode_tvm_metadata(obj: dict[str, Any]) -> list[np.ndarray]:
    """TVM's node-graph JSON: root Map -> "relay.Constant" Array -> Constant nodes whose
    ``attrs.data`` indexes ``b64ndarrays`` (each a serialized DLTensor)."""
    nodes = obj["nodes"]
    root = nodes[int(obj["root"])]
    keys, values = root.get("keys", []), root.get("data", [])
    arrays = obj["b64ndarrays"]
    for key, index in zip(keys, values, strict=False):
        if key != "relay.Constant":
            continue
        array_node = nodes[int(index)]
        out = []
        for node_index in array_node.get("data", []):
            node = nodes[int(node_index)]
            if node.get("type_key") != "relay.Constant":
                raise ValueError(f"node {node_index} is not a relay.Constant")
            blob = base64.b64decode(arrays[int(node["attrs"]["data"])], validate=True)
            out.append(_decode_tvm_ndarray(blob))
        return out
    return []


def _decode_tvm_ndarray(blob: bytes) -> np.ndarray:
    magic, _reserved, _dev_type, _dev_id, ndim, code, bits, lanes = \
        struct.unpack_from("<QQiiiBBH", blob, 0)
    if magic != _TVM_NDARRAY_MAGIC:
        raise ValueError("bad NDArray magic number")
    if not 0 <= ndim <= 64 or lanes != 1:
        raise ValueError("unsupported NDArray header")
    offset = 32
    shape = list(struct.unpack_from(f"<{ndim}q", blob, offset))
    offset += 8 * ndim
    (nbytes,) = struct.unpack_from("<q", blob, offset)
    offset += 8
    if (code == 1 and bits == 1) or (code == 6 and bits == 8):
        dtype = "bool"
    elif code in _DL_CODES:
        dtype = f"{_DL_CODES[code]}{bits}"
    else:
        raise ValueError(f"unsupported NDArray dtype code {code}")
    if dtype not in dtypes.SCALAR_DTYPES or any(d < 0 for d in shape):
        raise ValueError(f"unsupported NDArray dtype {dtype}")
    data = blob[offset:offset + nbytes]
    if len(data) != nbytes:
        raise ValueError("truncated NDArray data")
    return _array_from_bytes(data, dtype, shape, "NDArray")
