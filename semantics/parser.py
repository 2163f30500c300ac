"""The parser of the Relay text format (docs/architecture.md#text).

Entry points: :func:`parse` (a module), :func:`parse_expr` (an expression),
:func:`parse_expr_with_module` (an expression and the prelude definitions it
needs) and :func:`parse_type`.

Design
------
* **Hand-written, two phases.** :mod:`semantics.lexer` cuts the text into
  tokens (and matches brackets); the parser is recursive descent with an
  operator-precedence (shunting-yard) loop for the infix sugar. The
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
  bottom-up afterwards, so a 20,000-binding chain costs one generator;
  ``else if`` chains likewise (one loop per chain).
  Types nest to any depth the same way (:mod:`semantics.parsing.types`);
  dimension arithmetic and attribute values are shallow and recurse directly
  behind a nesting budget (``ParseError`` "nested too deeply").
* **Names resolve while parsing.** A scope is a name → stack-of-bindings
  table with an undo log (O(1) bind and unbind). ``%x`` is the innermost
  binding (a :class:`Var` binder, or for a graph binding the bound node
  itself, so every use of ``%0`` is the *same object*: sharing). A ``%x``
  bound nowhere is a ``ParseError`` ("this local variable has not been
  previously declared", TVM's message) unless declared ``free_var %x;``, or
  parsed with ``open_terms=True`` (then it is a free ``Var``, one per name per
  parse): :func:`parse` (programs) is strict by default, :func:`parse_expr`
  (terms in a context) open by default. ``let %f = fn ...;``
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
``1`` int32 (as in TVM, an unsuffixed integer too large for int32 is int64:
``2147483648``), ``1.5``/``1e5`` float32; suffixes ``i`` (int32), ``i8 i16
i32 i64 u8 u16 u32 u64 f f16 f32 f64``; ``inff``, ``nanf16``, ``-inff`` ...;
``True``/``False``. Out-of-range literals are errors (beyond int64; a float
beyond its dtype's largest finite value, ``65505f16`` or ``1e39f``), and the
negative minimum (``-2147483648``) is int32 because the minus is folded.
Attribute values are ints, floats, ``"strings"`` (escapes ``\\\\ \\" \\n \\t
\\r \\0 \\xHH \\uHHHH``), ``True``/``False``, ``None`` (also ``nullptr``),
lists ``[...]`` and tuples, stored in ``Call.attrs`` as written (lists
become tuples; a bare identifier is taken as a string). Any call may carry
attributes, as in TVM: for an operator they are its attributes; for a call
of a function, a closure or a constructor they are kept in ``Call.attrs``,
printed back, and ignored by the type checker and the interpreter. Names
``%base/x`` may contain ``/`` (TVM's importers write them). Only the header
``#[version = "0.0.5"]`` is accepted (TVM rejects every other version too).

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

Layout
------
This module holds the entry points. The parser itself is one class built in
layers, one concept per module of :mod:`semantics.parsing`: ``base`` (state,
errors, scopes, name resolution), ``metadata`` (``meta[...]`` and the
``#[metadata]`` section, TVM's NDArray format included), ``literals``
(numbers and attribute values), ``types`` (types, shapes, type parameters),
``patterns``, ``expressions`` (the operator-precedence core and the atoms),
``blocks`` (statements and functions) and ``items`` (modules, ``type``
definitions and the whole-text entry points).
"""

from __future__ import annotations

import gc
from typing import Any

from semantics.errors import ParseError
from semantics.expr import Expr
from semantics.lexer import tokenize
from semantics.module import IRModule
from semantics.parsing.base import RESERVED  # noqa: F401  (re-exported)
from semantics.parsing.items import ModuleParser as _Parser
from semantics.parsing.metadata import MetadataError, decode_metadata  # noqa: F401  (re-exported)
from semantics.parsing.prelude_link import prelude
from semantics.types import Type

__all__ = ["parse", "parse_expr", "parse_expr_with_module", "parse_type"]


# --- public API ------------------------------------------------------------------------------

def parse(text: str, source_name: str = "<string>", *, prelude: bool = True,
          open_terms: bool = False) -> IRModule:
    """Parse a module: ``def`` and ``type`` definitions (§3).

    Args:
        text: the program text (an optional ``#[version = "0.0.5"]`` header, definitions, an
            optional ``#[metadata]`` section).
        source_name: the file name used in spans and error messages.
        prelude: when True (the default), prelude definitions the text uses but does not
            define are added to the module (with their dependencies).
        open_terms: when True, a ``%x`` bound nowhere is a free variable (one per name)
            instead of a ``ParseError``; see :func:`parse_expr`.
    Returns:
        The :class:`IRModule`; ``mod["main"]`` is ``@main``.
    Raises:
        ParseError: for any malformed text, with the span of the offending token; also for
            a local variable used without a binder (as in TVM: "this local variable has not
            been previously declared").
    """
    return _run(text, source_name, prelude, _Parser.parse_module, open_terms)


def parse_expr(text: str, source_name: str = "<string>", *, open_terms: bool = True) -> Expr:
    """Parse one expression (statements such as ``let``/``free_var`` included).

    Prelude names resolve to the prelude's objects; use :func:`parse_expr_with_module`
    to also get the prelude definitions the expression needs.

    Args:
        text: the expression text.
        source_name: the file name used in spans and error messages.
        open_terms: True (the default for an expression, unlike :func:`parse`): an unbound
            ``%x`` is a free :class:`Var` (the same object for every use of the name), so an
            expression is a term in a context its caller supplies (substituted into,
            type-checked against an environment, an open term of a free-variable analysis:
            the type checker reports a free variable left unbound as ``RelayTypeError``).
            False: every local must be bound (``let``, a parameter, a pattern, a graph
            binding or ``free_var %x[: T];``), as TVM's parser requires and :func:`parse`
            does by default. The printer declares every free variable with ``free_var``,
            so printed text parses back either way.
    Raises:
        ParseError: for any malformed text (including empty input), and for a local
            variable used without a binder unless ``open_terms``.
    """
    return parse_expr_with_module(text, source_name, open_terms=open_terms)[0]


def parse_expr_with_module(text: str, source_name: str = "<string>", *,
                           open_terms: bool = True) -> tuple[Expr, IRModule]:
    """Parse an expression and return it with a module of the prelude definitions it uses.

    Args:
        text, source_name, open_terms: as for :func:`parse_expr`.
    Returns:
        ``(expr, mod)``: ``mod`` holds exactly the prelude functions and ADTs ``expr``
        needs (transitively); it is empty when none are needed.
    Raises:
        ParseError: for any malformed text (including empty input).
    """
    return _run(text, source_name, True, _Parser.parse_expression, open_terms)


def parse_type(text: str, source_name: str = "<string>") -> Type:
    """Parse one type, e.g. ``Tensor[(n, 3), float32]`` or ``fn [A](A) -> List[A]``.

    Raises:
        ParseError: for any malformed text; type variables must be bound (``fn [A](A) -> A``).
    """
    return _run(text, source_name, True, _Parser.parse_type_text)


def _run(text: str, source_name: str, use_prelude: bool, entry: Any,
         open_terms: bool = False) -> Any:
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
            prelude().prelude_module()   # parse (and cache) the prelude outside this parse
        parser = _Parser(tokenize(text, source_name), use_prelude=use_prelude,
                         open_terms=open_terms)
        try:
            return entry(parser)
        except RecursionError:
            raise ParseError("expression nested too deeply to parse",
                             parser.toks.span(min(parser.i, len(parser.K) - 1))) from None
    finally:
        if paused:
            gc.enable()

