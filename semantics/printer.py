"""The printer of the Relay text format (docs/architecture.md#text): ``pretty(node) -> str``.

Output is TVM Relay text 0.0.5 and always re-parses (:mod:`semantics.parser`)
to a program alpha-equal to the input (:func:`semantics.alpha.alpha_equal`,
sharing included); printing is idempotent: ``pretty(parse(pretty(x))) ==
pretty(x)``.

Layout
------
* Modules: ``#[version = "0.0.5"]``, then ADT definitions (``type List[A] {
  Cons(A, List[A]), Nil, }``, one constructor per line), then ``def``s, each
  separated by a blank line; a ``#[metadata]`` section ends the text when
  there are non-scalar constants. Prelude definitions the parser would merge
  back in by itself (the very objects of :func:`semantics.prelude.prelude_module`)
  are left out unless ``show_prelude=True``, so ``relay fmt`` prints only the
  user's program.
* Statements of a block (function body, ``if`` branch, ``match`` clause, the
  top level) go one per line, indented two spaces per level: ``let %x: T =
  v;``, sequencing ``e;`` (a ``let`` of an unused, unannotated ``%_``), graph
  bindings ``%N = e;`` and ``free_var %x: T;`` declarations of annotated free
  variables; then the block's result. A ``let`` in expression position is
  parenthesized as TVM does: ``(let %x = 1; %x)``.
* Calls are printed as calls, never with infix sugar: ``add(%a, %b)``,
  ``nn.dense(%x, %w, units=20)``; attributes as written in ``Call.attrs``
  (ints, floats as ``0.5f``, quoted strings, ``True``/``False``, ``None``,
  lists ``[1, 1]``). Function attributes follow the parameters:
  ``fn (%x: T, Primitive=1) -> T { ... }``. A nullary constructor call is its
  name (``Nil``).
* Scalar constants are exact literals (``1``, ``1i64``, ``2.5f``, ``2.0f16``,
  ``True``, ``inff``, ``nanf``); every literal is checked to decode to the
  same bits, and a constant that has no exact literal (a NaN with a payload,
  a negative NaN) or is not a scalar is written ``meta[relay.Constant][i]``,
  its bytes in the JSON metadata section.
* Types: ``float32`` for scalars, ``Tensor[(1, 10), float32]`` (one dim as
  ``(10)``), dims ``?``, ``2*n``, ``n + 1``, ``floor(n/2)`` (printed from
  their normalized SymPy form with only the operators the parser reads),
  ``(T, U)``, ``(T,)``, ``fn [A](T) -> U``, ``Ref[T]``, ``List[T]``.

Sharing (graph bindings)
------------------------
A non-leaf node reachable along several paths (``count_uses > 1``) is
printed once, as ``%N = e;``, in the innermost block that contains all of
its uses — computed before printing as the lowest common ancestor of the
blocks of its use sites in the block tree — and placed just before the
first statement of that block that uses it. Each statement of a block is
preceded by a *hole* (a slot in the output rope); a shared node is printed
into the hole of its block when the printer first meets it, so it follows
every ``let`` it may refer to and precedes every use. Leaves (variables,
globals, operators, constructors, constants) are simply printed again.
A node shared between a recursive ``let``'s function and code after that
``let`` that mentions the ``let``'s own variable cannot be bound at any
single point of the text; it is printed at each use instead (the one case
where sharing is not preserved — see Limits).

Unshared nodes print inline (readable for small programs) — except that an
inline expression nested more than :data:`INLINE_DEPTH` calls deep is cut
into graph bindings, so a 20,000-operator chain prints as short lines
rather than one line 20,000 calls deep. Graph numbers count up in text
order from 0 in each definition, skipping numbers used as variable names.

Names
-----
A variable prints as ``%name_hint``. A binder never shadows a name that is
in scope: when its hint is taken (by an enclosing binder, or by any free
variable), it gets the first free ``name1``, ``name2``, ... (``name_1`` when
the hint ends in a digit); so re-parsing binds every use to the right
variable, and sibling scopes keep their original names. Free variables are
named first (distinct objects get distinct names across a whole module,
because the parser makes one free variable per name per text); empty or
malformed hints are sanitized (``v`` when nothing is left). Type parameters
follow the same rule and also avoid dtype, reserved and ADT names.

Implementation
--------------
No Python recursion over expressions: the printer is a set of generators
driven by :func:`semantics.visitor.run_recursive`; a ``let`` spine is a
loop. Output is a rope (nested lists of string fragments and graph-number
tokens) flattened once at the end. Analyses (use counts, the block tree,
inline depths) are linear passes over the DAG. Types and attribute values
are shallow and printed recursively.

This module is the entry point and prints modules (leaving the prelude
out); the rest lives in :mod:`semantics.printing`, one concept per module:
``literals`` (dims, attribute values, exact scalar literals), ``rope`` (the
output rope and graph numbering), ``names`` (per-call state, name
allocation, scopes), ``types`` (types, ADT definitions, patterns),
``sharing`` (where graph bindings go) and ``exprs`` (expressions, blocks).

Limits
------
What has no spelling in the text format the parser reads is printed as
closely as possible but does not round-trip: a nullary constructor used as
a value rather than called (``Nil`` parses as the call ``Nil()``, TVM's
convention); explicit type arguments of calls (``Call.type_args``, never
printed, as in TVM); attributes on calls of non-operators; ``where``
constraints of function types (printed in a comment); free type variables,
type relations and incomplete types (printed ``A``, ``R(T)``, ``_``); and
the recursive-``let`` sharing case above. Round trips are exact for
well-formed programs (each variable used only inside its binder's scope).
"""

from __future__ import annotations

from typing import Any

from semantics.expr import Clause, Expr, Function, Match, Pattern, Tuple
from semantics.module import IRModule
from semantics.parsing.prelude_link import prelude
from semantics.printing.exprs import PrintUnit
from semantics.printing.names import PrintContext
from semantics.printing.rope import join_rope
from semantics.printing.sharing import INLINE_DEPTH
from semantics.types import GlobalTypeVar, Type, TypeCall, TypeData
from semantics.visitor import run_recursive

__all__ = ["INLINE_DEPTH", "pretty"]

VERSION_HEADER = '#[version = "0.0.5"]'


# --- public API ------------------------------------------------------------------------------

def pretty(node: Any, *, show_prelude: bool = False) -> str:
    """Print a module, expression, type, ADT definition, pattern or clause as Relay text.

    Args:
        node: an :class:`IRModule`, :class:`Expr`, :class:`Type` (including
            :class:`TypeData`), :class:`Pattern` or :class:`Clause`.
        show_prelude: for a module, also print the prelude definitions that
            the parser would merge back in by itself (left out by default).
    Returns:
        The text. Modules start with the version header; expressions and
        types do not. Non-scalar constants make the text end with a
        ``#[metadata]`` section.
    Raises:
        TypeError: ``node`` is not a Relay node.
    """
    ctx = PrintContext()
    if isinstance(node, IRModule):
        return _print_module(node, ctx, show_prelude)
    if isinstance(node, Expr):
        ctx.name_free_vars([node])
        rope: list[Any] = []
        unit = PrintUnit(ctx, node)
        run_recursive(unit.top_expression(rope))
        return _finish(rope, ctx, strip_first_newline=True)
    if isinstance(node, TypeData):
        rope = []
        PrintUnit(ctx, None).type_definition(node, rope)
        return join_rope(rope)
    if isinstance(node, Type):
        return PrintUnit(ctx, None).type_text(node)
    if isinstance(node, Pattern):
        unit = PrintUnit(ctx, None)
        rope = []
        unit.pattern(node, rope)
        return join_rope(rope)
    if isinstance(node, Clause):
        expr_unit = PrintUnit(ctx, Match(Tuple(()), (node,)))
        rope = []
        run_recursive(expr_unit.clause_alone(node, rope))
        return _finish(rope, ctx, strip_first_newline=True)
    raise TypeError(f"pretty: not a Relay node: {type(node).__name__}")

def _finish(rope: list[Any], ctx: PrintContext, *, strip_first_newline: bool = False) -> str:
    text = join_rope(rope, ctx.numeric_names)
    if strip_first_newline and text.startswith("\n"):
        text = text[1:]
    return text + ctx.metadata_section()

# --- modules ---------------------------------------------------------------------------------

def _print_module(mod: IRModule, ctx: PrintContext, show_prelude: bool) -> str:
    functions = dict(mod.functions)
    types = dict(mod.types)
    if not show_prelude:
        functions, types = _without_prelude(functions, types)
    ctx.adt_names |= set(mod.types)
    ctx.name_free_vars(list(functions.values()))
    rope: list[Any] = [VERSION_HEADER, "\n"]
    first = True
    for td in types.values():
        if not first:
            rope.append("\n")
        first = False
        PrintUnit(ctx, None).type_definition(td, rope)
        rope.append("\n")
    for name, fn in functions.items():
        if not first:
            rope.append("\n")
        first = False
        unit = PrintUnit(ctx, fn)
        body: list[Any] = []
        run_recursive(unit.definition(name, fn, body))
        rope.append(join_rope(body, ctx.numeric_names))
        rope.append("\n")
    return join_rope(rope) + ctx.metadata_section()


def _without_prelude(functions: dict[str, Function], types: dict[str, TypeData]
                     ) -> tuple[dict[str, Function], dict[str, TypeData]]:
    """Drop the prelude's own definitions that parsing the rest would merge back in."""
    link = prelude()
    pre = link.prelude_module()
    cand_f = {k for k, v in functions.items() if pre.functions.get(k) is v}
    cand_t = {k for k, v in types.items() if pre.types.get(k) is v}
    if not cand_f and not cand_t:
        return functions, types
    kept_f = {k: v for k, v in functions.items() if k not in cand_f}
    kept_t = {k: v for k, v in types.items() if k not in cand_t}
    while True:
        global_refs, type_refs = _references(kept_f, kept_t)
        try:
            need_f, need_t = link.needed_definitions(
                global_refs, type_refs, kept_f, kept_t,
                {c.name for td in kept_t.values() for c in td.constructors})
        except Exception:  # noqa: BLE001 - a clash: print everything rather than guess
            return functions, types
        extra_f = {k for k in cand_f if k not in kept_f and
                   (k not in need_f or need_f[k] is not functions[k])}
        extra_t = {k for k in cand_t if k not in kept_t and
                   (k not in need_t or need_t[k] is not types[k])}
        if not extra_f and not extra_t:
            break
        kept_f.update((k, functions[k]) for k in extra_f)
        kept_t.update((k, types[k]) for k in extra_t)
    return ({k: v for k, v in functions.items() if k in kept_f},
            {k: v for k, v in types.items() if k in kept_t})


def _references(functions: dict[str, Function], types: dict[str, TypeData]
                ) -> tuple[dict[str, None], dict[str, None]]:
    """Global names and ADT names the printed definitions mention (what the parser records)."""
    from semantics.analysis import _expr_types, _type_walk, constructors_used, global_vars

    globals_: dict[str, None] = {}
    adts: dict[str, None] = {}

    def on_type(t: Type) -> None:
        if isinstance(t, TypeCall):
            adts[t.func.name] = None
        elif isinstance(t, GlobalTypeVar):
            adts[t.name] = None

    for fn in functions.values():
        for gv in global_vars(fn):
            globals_[gv.name_hint] = None
        for c in constructors_used(fn):
            adts[c.belong_to.name] = None
        _expr_types(fn, lambda t, bound: _type_walk(t, bound, lambda tv: None, on_type))
    for td in types.values():
        _type_walk(td, {}, lambda tv: None, on_type)
    return globals_, adts
