"""The printer of the Relay text format (ARCHITECTURE.md §3): ``pretty(node) -> str``.

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

import base64
import functools
import json
import math
import re
from collections.abc import Generator
from typing import Any

import numpy as np
import sympy

from semantics import dtypes, shapes
from semantics.errors import InternalError
from semantics.expr import (
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
    children,
)
from semantics.module import IRModule
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
    TypeRelation,
    TypeVar,
)
from semantics.visitor import post_order, run_recursive

__all__ = ["INLINE_DEPTH", "pretty"]

VERSION_HEADER = '#[version = "0.0.5"]'
INLINE_DEPTH = 8
"""Inline expressions nest at most this many calls deep before being cut into graph bindings."""

Gen = Generator[Any, Any, Any]

_LEAVES = (Var, GlobalVar, Op, Constructor, Constant)
_LEAF_SET = frozenset(_LEAVES)
_CUTTABLE_SET = frozenset((Call, Tuple, TupleGetItem, RefCreate, RefRead, RefWrite, Grad))
_LOCAL_NAME = re.compile(r"[A-Za-z0-9_]\w*(?:\.[A-Za-z_]\w*)*\Z", re.ASCII)
_TYPE_NAME = re.compile(r"[A-Za-z_]\w*\Z", re.ASCII)
_KEYWORDS = frozenset({
    "def", "fn", "let", "if", "else", "match", "type", "free_var", "ref", "ref_read",
    "ref_write", "grad", "extern", "meta", "True", "False", "Tensor", "Ref", "_", "nullptr",
})
_PRELUDE_ADTS = frozenset({"List", "Option", "Tree"})
_KIND_SUFFIX = {Kind.Type: "", Kind.ShapeVar: ": Shape", Kind.BaseType: ": BaseType",
                Kind.Constraint: ": Constraint", Kind.AdtHandle: ": AdtHandle"}


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
    ctx = _Context()
    if isinstance(node, IRModule):
        return _print_module(node, ctx, show_prelude)
    if isinstance(node, Expr):
        ctx.name_free_vars([node])
        rope: list[Any] = []
        unit = _Unit(ctx, node)
        run_recursive(unit.top_expression(rope))
        return _finish(rope, ctx, strip_first_newline=True)
    if isinstance(node, TypeData):
        rope = []
        _Unit(ctx, None).type_definition(node, rope)
        return _join(rope)
    if isinstance(node, Type):
        return _Unit(ctx, None).type_text(node)
    if isinstance(node, Pattern):
        unit = _Unit(ctx, None)
        rope = []
        unit.pattern(node, rope)
        return _join(rope)
    if isinstance(node, Clause):
        expr_unit = _Unit(ctx, Match(Tuple(()), (node,)))
        rope = []
        run_recursive(expr_unit.clause_alone(node, rope))
        return _finish(rope, ctx, strip_first_newline=True)
    raise TypeError(f"pretty: not a Relay node: {type(node).__name__}")


# --- the output rope -------------------------------------------------------------------------

class _Def:
    """The ``%N`` of a graph binding's left-hand side; numbered when the rope is flattened."""

    __slots__ = ("counter", "number")

    def __init__(self, counter: list[int]):
        self.counter = counter
        self.number = -1


class _Ref:
    """A use ``%N`` of a graph binding (printed after its :class:`_Def`)."""

    __slots__ = ("target",)

    def __init__(self, target: _Def):
        self.target = target


def _join(rope: list[Any], taken: set[int] | None = None) -> str:
    """Flatten the rope once, numbering graph bindings in text order (skipping ``taken``)."""
    parts: list[str] = []
    stack = [iter(rope)]
    while stack:
        for item in stack[-1]:
            cls = type(item)
            if cls is str:
                parts.append(item)
            elif cls is list:
                stack.append(iter(item))
                break
            elif cls is _Def:
                n = item.counter[0]
                while taken and n in taken:
                    n += 1
                item.counter[0] = n + 1
                item.number = n
                parts.append(f"%{n}")
            elif cls is _Ref:
                parts.append(f"%{item.target.number}")
            else:
                raise InternalError(f"printer rope holds a {cls.__name__}")
        else:
            stack.pop()
    return "".join(parts)


def _finish(rope: list[Any], ctx: _Context, *, strip_first_newline: bool = False) -> str:
    text = _join(rope, ctx.numeric_names)
    if strip_first_newline and text.startswith("\n"):
        text = text[1:]
    return text + ctx.metadata_section()


# --- state shared by the units of one pretty() call -----------------------------------------

class _Context:
    """Metadata constants, free-variable names and reserved names of one ``pretty`` call."""

    def __init__(self) -> None:
        self.meta: list[np.ndarray] = []
        self.meta_index: dict[int, int] = {}
        self.meta_keep: list[Constant] = []
        self.free_names: dict[int, str] = {}
        self.free_taken: set[str] = set()
        self.free_keep: list[Var] = []
        self.free_by_root: dict[int, list[Var]] = {}
        self.declared: set[int] = set()
        self.numeric_names: set[int] = set()
        self.adt_names: set[str] = set(_PRELUDE_ADTS)

    def name_free_vars(self, roots: list[Expr]) -> None:
        """Name every free variable of ``roots`` (distinct objects get distinct names)."""
        from semantics.analysis import free_vars

        for root in roots:
            found = free_vars(root)
            self.free_by_root[id(root)] = found
            for v in found:
                if id(v) in self.free_names:
                    continue
                base = _local_base(v.name_hint)
                name = _first_free(base, lambda s: s in self.free_taken)
                self.free_taken.add(name)
                self.free_names[id(v)] = name
                self.free_keep.append(v)
                self.note_name(name)

    def note_name(self, name: str) -> None:
        if name.isdigit() and len(name) < 12:
            self.numeric_names.add(int(name))

    def constant_ref(self, c: Constant) -> str:
        index = self.meta_index.get(id(c))
        if index is None:
            index = len(self.meta)
            self.meta.append(c.data)
            self.meta_keep.append(c)
            self.meta_index[id(c)] = index
        return f"meta[relay.Constant][{index}]"

    def metadata_section(self) -> str:
        if not self.meta:
            return ""
        entries = []
        for arr in self.meta:
            data = np.ascontiguousarray(arr)
            if data.dtype != np.bool_:
                data = data.astype(data.dtype.newbyteorder("<"), copy=False)
            entries.append(json.dumps({
                "dtype": arr.dtype.name, "shape": [int(d) for d in arr.shape],
                "data": base64.b64encode(data.tobytes()).decode("ascii")}))
        return "\n#[metadata]\n{\"relay.Constant\": [\n  " + ",\n  ".join(entries) + "\n]}\n"


@functools.lru_cache(maxsize=65536)
def _local_base(hint: str) -> str:
    """A valid ``%name`` (without ``%``) close to ``hint``."""
    if _LOCAL_NAME.match(hint):
        return hint
    cleaned = re.sub(r"[^A-Za-z0-9_.]", "_", hint)
    if not _LOCAL_NAME.match(cleaned):
        cleaned = cleaned.replace(".", "_")
    return cleaned or "v"


def _type_base(hint: str) -> str:
    """A valid type-parameter name close to ``hint``."""
    if _TYPE_NAME.match(hint):
        return hint
    cleaned = re.sub(r"\W", "_", hint, flags=re.ASCII)
    if not cleaned or cleaned[0].isdigit():
        cleaned = "T" + cleaned
    return cleaned


def _first_free(base: str, taken: Any) -> str:
    """``base`` if not ``taken(base)``, else the first of ``base1, base2, ...`` (``base_1``...
    when ``base`` ends in a digit) that is not taken."""
    if not taken(base):
        return base
    sep = "_" if base[-1].isdigit() else ""
    k = 1
    while True:
        name = f"{base}{sep}{k}"
        if not taken(name):
            return name
        k += 1


# --- modules ---------------------------------------------------------------------------------

def _print_module(mod: IRModule, ctx: _Context, show_prelude: bool) -> str:
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
        _Unit(ctx, None).type_definition(td, rope)
        rope.append("\n")
    for name, fn in functions.items():
        if not first:
            rope.append("\n")
        first = False
        unit = _Unit(ctx, fn)
        body: list[Any] = []
        run_recursive(unit.definition(name, fn, body))
        rope.append(_join(body, ctx.numeric_names))
        rope.append("\n")
    return _join(rope) + ctx.metadata_section()


def _without_prelude(functions: dict[str, Function], types: dict[str, TypeData]
                     ) -> tuple[dict[str, Function], dict[str, TypeData]]:
    """Drop the prelude's own definitions that parsing the rest would merge back in."""
    from semantics.prelude import needed_definitions, prelude_module

    pre = prelude_module()
    cand_f = {k for k, v in functions.items() if pre.functions.get(k) is v}
    cand_t = {k for k, v in types.items() if pre.types.get(k) is v}
    if not cand_f and not cand_t:
        return functions, types
    kept_f = {k: v for k, v in functions.items() if k not in cand_f}
    kept_t = {k: v for k, v in types.items() if k not in cand_t}
    while True:
        global_refs, type_refs = _references(kept_f, kept_t)
        try:
            need_f, need_t = needed_definitions(
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


# --- dims ------------------------------------------------------------------------------------

def _dim_text(d: Any) -> str:
    if d is shapes.ANY:
        return "?"
    if isinstance(d, int):
        return str(d)
    return _sym_dim_text(d)


@functools.lru_cache(maxsize=4096)
def _sym_dim_text(d: sympy.Expr) -> str:
    value = shapes.normalize(d)
    if isinstance(value, int):
        return str(value)
    return _sym(value, 0)


_P_ADD, _P_MUL, _P_ATOM = 1, 2, 3


def _sym(e: sympy.Expr, prec: int) -> str:
    """Text of a SymPy dim using only ``+ - * / %``, ``floor``, ``ceil`` and parentheses."""
    if e.is_Integer:
        text = str(int(e))
        return f"({text})" if int(e) < 0 and prec > _P_ADD else text
    if e.is_Symbol:
        return e.name
    if e.is_Rational:
        text = f"{e.p}/{e.q}"
        return f"({text})" if prec > _P_ADD or e.p < 0 else text
    if isinstance(e, sympy.Add):
        terms = e.as_ordered_terms()
        text = _sym(terms[0], _P_ADD)
        for term in terms[1:]:
            coeff, _ = term.as_coeff_Mul()
            if coeff.is_negative:
                text += " - " + _sym(-term, _P_MUL if isinstance(-term, sympy.Add) else _P_ADD)
            else:
                text += " + " + _sym(term, _P_ADD)
        return f"({text})" if prec > _P_ADD else text
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        if coeff.is_negative:
            text = "-" + _sym(-e, _P_MUL)
            return f"({text})" if prec > _P_ADD else text
        num, den = sympy.fraction(e)
        factors = [_sym(f, _P_MUL) for f in sympy.Mul.make_args(num)
                   if not (f.is_Integer and int(f) == 1)] or ["1"]
        text = "*".join(factors)
        if den != 1:
            text += "/" + _sym(den, _P_ATOM)
        return f"({text})" if prec > _P_MUL else text
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) > 0:
        text = "*".join([_sym(e.base, _P_ATOM)] * int(e.exp))
        return f"({text})" if prec > _P_MUL else text
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) < 0:
        text = "1/" + _sym(e.base ** (-int(e.exp)), _P_ATOM)
        return f"({text})" if prec > _P_MUL else text
    if isinstance(e, sympy.floor):
        return f"floor({_sym(e.args[0], 0)})"
    if isinstance(e, sympy.ceiling):
        return f"ceil({_sym(e.args[0], 0)})"
    if isinstance(e, sympy.Mod):
        text = f"{_sym(e.args[0], _P_ATOM)} % {_sym(e.args[1], _P_ATOM)}"
        return f"({text})" if prec > _P_MUL else text
    return f"({sympy.sstr(e)})"


# --- attribute values and literals -----------------------------------------------------------

_F32_MAX = float(np.finfo(np.float32).max)


def _attr_value(v: Any) -> str:
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        if -(1 << 31) <= v < (1 << 31):
            return str(v)
        if -(1 << 63) <= v < (1 << 63):
            return f"{v}i64"
        return f"{v}u64"
    if isinstance(v, float):
        if math.isnan(v):
            return "nanf"
        if math.isinf(v):
            return "inff" if v > 0 else "-inff"
        return repr(v) + ("f" if abs(v) <= _F32_MAX else "f64")
    if isinstance(v, str):
        return _string_literal(v)
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_attr_value(x) for x in v) + "]"
    if isinstance(v, Attrs):
        return "[" + ", ".join(_attr_value(x) for x in v.values()) + "]"
    return _string_literal(str(v))


_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _string_literal(s: str) -> str:
    out = ['"']
    for ch in s:
        esc = _STRING_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_DTYPE_NAMES = {np.dtype(d): d for d in dtypes.SCALAR_DTYPES}
_LITERALS: dict[tuple[str, bytes], str | None] = {}


def _scalar_literal(data: np.ndarray) -> str | None:
    """The exact literal of a 0-d array (cached by dtype and bytes), or None."""
    dtype = _DTYPE_NAMES.get(data.dtype)
    if dtype is None:
        return None
    key = (dtype, data.tobytes())
    try:
        return _LITERALS[key]
    except KeyError:
        pass
    text = _exact_literal(data, dtype)
    if len(_LITERALS) > 65536:
        _LITERALS.clear()
    _LITERALS[key] = text
    return text


def _exact_literal(data: np.ndarray, dtype: str) -> str | None:
    """The literal of a 0-d array if it decodes to exactly the same bits, else None."""
    from semantics.lexer import decode_number

    text = dtypes.literal(data, dtype)
    if dtype == "bool":
        return text
    negative = text.startswith("-")
    try:
        value, got = decode_number(text[1:] if negative else text, negative)
    except ValueError:
        return None
    if got != dtype:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        back = np.array(value, dtype=dtype)
    return text if back.tobytes() == data.tobytes() else None


def _is_nullary_ctor_call(call: Call) -> bool:
    """``Nil`` — a call of a constructor without fields, printed (and parsed) as its name."""
    op = call.op
    return type(op) is Constructor and not op.inputs and not call.args and not call.attrs


# --- one printing unit (a definition or a top-level expression) ------------------------------

class _Unit:
    """Prints one definition or expression: analyses, scopes, holes, names.

    Invariants while printing: ``holes[b]`` is the hole before the statement
    of block ``b`` being printed (for every open block ``b``); ``var_names``
    maps each variable in scope to a stack of names (innermost last) and
    ``scope_names`` counts the binders in scope per name.
    """

    def __init__(self, ctx: _Context, root: Expr | None):
        self.ctx = ctx
        self.var_names: dict[int, list[str]] = {}
        self.scope_names: dict[str, int] = {}
        self.tv_names: dict[int, list[str]] = {}
        self.tv_scope: dict[str, int] = {}
        self.holes: dict[int, list[Any]] = {}
        self.block_indent: dict[int, int] = {}
        self.rec_var: dict[int, Var] = {}
        self.emitted: dict[int, _Def] = {}
        self.unbound: set[int] = set()
        self.mentions_memo: dict[int, dict[int, bool]] = {}
        self.counter = [0]
        self.bound: set[int] = set()
        self.block_of: dict[int, int] = {}
        self.own_block: dict[int, int] = {}
        self.opened: dict[int, tuple[int, ...]] = {}
        self.with_bindings: set[int] = set()
        self.referenced: set[int] = set()
        self._root = root
        if root is not None:
            self._analyze(root)

    # --- analysis ---------------------------------------------------------------------------
    def _analyze(self, root: Expr) -> None:
        # 1. Non-leaf nodes in post-order (iterative, memoized), parent-edge counts, used vars.
        leaves = _LEAF_SET
        referenced = self.referenced
        uses: dict[int, int] = {}
        order: list[Expr] = []
        if type(root) in leaves:
            if type(root) is Var:
                referenced.add(id(root))
            return
        seen: set[int] = set()
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            key = id(node)
            if key in seen:
                continue
            seen.add(key)
            stack.append((node, True))
            for kid in reversed(children(node)):
                cls = type(kid)
                if cls in leaves:
                    if cls is Var:
                        referenced.add(id(kid))
                    continue
                k = id(kid)
                uses[k] = uses.get(k, 0) + 1
                if k not in seen:
                    stack.append((kid, False))
        shared = {k for k, n in uses.items() if n > 1}
        # 2. The block tree, parents first: each node's block is the lowest common ancestor
        #    of the blocks of its use sites.
        parent = [-1]
        depth = [0]
        acc: dict[int, int] = {id(root): 0}
        position: dict[int, str] = {id(root): "stmt"}
        block_of, own_block, opened = self.block_of, self.own_block, self.opened

        def new_block(p: int) -> int:
            parent.append(p)
            depth.append(depth[p] + 1)
            return len(parent) - 1

        def edge(kid: Expr, block: int, kind: str) -> None:
            if type(kid) in leaves:
                return
            k = id(kid)
            a = acc.get(k)
            if a is None:
                acc[k] = block
                position[k] = kind
                return
            b = block
            while depth[a] > depth[b]:
                a = parent[a]
            while depth[b] > depth[a]:
                b = parent[b]
            while a != b:
                a, b = parent[a], parent[b]
            acc[k] = a

        for node in reversed(order):
            cls = type(node)
            key = id(node)
            b = acc[key]
            block_of[key] = b
            tb = b
            if cls is Let:
                if key in shared or position[key] != "stmt":
                    tb = new_block(b)
                    own_block[key] = tb
                edge(node.value, tb, "value")  # type: ignore[attr-defined]
                edge(node.body, tb, "stmt")  # type: ignore[attr-defined]
            elif cls is Call:
                edge(node.op, tb, "inline")  # type: ignore[attr-defined]
                for kid in node.args:  # type: ignore[attr-defined]
                    if type(kid) not in leaves:
                        edge(kid, tb, "inline")
            elif cls is Function:
                fb = new_block(tb)
                opened[key] = (fb,)
                edge(node.body, fb, "stmt")  # type: ignore[attr-defined]
            elif cls is If:
                edge(node.cond, tb, "inline")  # type: ignore[attr-defined]
                b1, b2 = new_block(tb), new_block(tb)
                opened[key] = (b1, b2)
                edge(node.true_branch, b1, "stmt")  # type: ignore[attr-defined]
                edge(node.false_branch, b2, "stmt")  # type: ignore[attr-defined]
            elif cls is Match:
                edge(node.data, tb, "inline")  # type: ignore[attr-defined]
                blocks = tuple(new_block(tb) for _ in node.clauses)  # type: ignore[attr-defined]
                opened[key] = blocks
                for clause, cb in zip(node.clauses, blocks):  # type: ignore[attr-defined]
                    edge(clause.rhs, cb, "stmt")
            else:
                for kid in children(node):
                    edge(kid, tb, "inline")
        # 3. Inline depth, children first: cut inline chains deeper than INLINE_DEPTH.
        height: dict[int, int] = {}
        cut: set[int] = set()
        cuttable = _CUTTABLE_SET
        for node in order:
            cls = type(node)
            key = id(node)
            if cls is Function or cls is Let:
                height[key] = 1
                continue
            if cls is If:
                kids: tuple[Expr, ...] = (node.cond,)  # type: ignore[attr-defined]
            elif cls is Match:
                kids = (node.data,)  # type: ignore[attr-defined]
            elif cls is Call:
                kids = node.args  # type: ignore[attr-defined]
                if type(node.op) not in leaves:  # type: ignore[attr-defined]
                    kids = (node.op, *kids)  # type: ignore[attr-defined]
            else:
                kids = children(node)
            h = 0
            for kid in kids:
                k = id(kid)
                if k in height and k not in shared and k not in cut and height[k] > h:
                    h = height[k]
            h += 1
            height[key] = h
            if h > INLINE_DEPTH and cls in cuttable and key not in shared and \
                    position.get(key) == "inline":
                cut.add(key)
        self.bound = shared | cut
        self.with_bindings = {block_of[k] for k in self.bound}

    def mentions(self, root: Expr, var: Var) -> bool:
        """Whether ``var`` occurs in ``root`` (memoized per variable, iterative)."""
        memo = self.mentions_memo.setdefault(id(var), {})
        if id(root) in memo:
            return memo[id(root)]
        for node in post_order(root, lambda n: id(n) not in memo):
            if id(node) in memo:
                continue
            if node is var:
                memo[id(node)] = True
            elif type(node) in _LEAVES:
                memo[id(node)] = False
            else:
                memo[id(node)] = any(memo[id(k)] for k in children(node))
        return memo[id(root)]

    # --- names ------------------------------------------------------------------------------
    def bind_var(self, v: Var) -> str:
        base = _local_base(v.name_hint)
        free = self.ctx.free_taken
        scope = self.scope_names
        if base in scope or base in free:
            name = _first_free(base, lambda s: s in scope or s in free)
        else:
            name = base
        scope[name] = scope.get(name, 0) + 1
        names = self.var_names.get(id(v))
        if names is None:
            self.var_names[id(v)] = [name]
        else:
            names.append(name)
        if name[0].isdigit():
            self.ctx.note_name(name)
        return name

    def unbind_var(self, v: Var) -> None:
        names = self.var_names[id(v)]
        name = names.pop()
        if not names:
            del self.var_names[id(v)]
        left = self.scope_names[name] - 1
        if left:
            self.scope_names[name] = left
        else:
            del self.scope_names[name]

    def var_text(self, v: Var) -> str:
        names = self.var_names.get(id(v))
        if names:
            return "%" + names[-1]
        name = self.ctx.free_names.get(id(v))
        if name is None:  # reachable only through an ill-scoped shared node
            self.ctx.name_free_vars([v])
            name = self.ctx.free_names[id(v)]
        return "%" + name

    def bind_type_var(self, tv: TypeVar) -> str:
        base = _type_base(tv.name)
        scope, adts = self.tv_scope, self.ctx.adt_names
        name = _first_free(base, lambda s: s in scope or s in adts or s in _KEYWORDS
                           or dtypes.is_dtype(s))
        scope[name] = scope.get(name, 0) + 1
        self.tv_names.setdefault(id(tv), []).append(name)
        return name

    def unbind_type_var(self, tv: TypeVar) -> None:
        names = self.tv_names[id(tv)]
        name = names.pop()
        if not names:
            del self.tv_names[id(tv)]
        left = self.tv_scope[name] - 1
        if left:
            self.tv_scope[name] = left
        else:
            del self.tv_scope[name]

    def type_params_text(self, tvs: tuple[TypeVar, ...]) -> str:
        """Bind ``tvs`` and return ``[A, B: Shape]`` ('' when empty)."""
        if not tvs:
            return ""
        return "[" + ", ".join(self.bind_type_var(tv) + _KIND_SUFFIX.get(tv.kind, "")
                               for tv in tvs) + "]"

    # --- types ------------------------------------------------------------------------------
    def type_text(self, t: Type) -> str:
        cls = type(t)
        if cls is TensorType:
            if not t.shape:  # type: ignore[attr-defined]
                return t.dtype  # type: ignore[attr-defined]
            dims = ", ".join(_dim_text(d) for d in t.shape)  # type: ignore[attr-defined]
            return f"Tensor[({dims}), {t.dtype}]"  # type: ignore[attr-defined]
        if cls is TupleType:
            fields = [self.type_text(f) for f in t.fields]  # type: ignore[attr-defined]
            if len(fields) == 1:
                return f"({fields[0]},)"
            return "(" + ", ".join(fields) + ")"
        if cls is TypeVar:
            names = self.tv_names.get(id(t))
            return names[-1] if names else _type_base(t.name)  # type: ignore[attr-defined]
        if cls is GlobalTypeVar:
            return t.name  # type: ignore[attr-defined]
        if cls is TypeCall:
            if not t.args:  # type: ignore[attr-defined]
                return t.func.name  # type: ignore[attr-defined]
            return t.func.name + "[" + ", ".join(  # type: ignore[attr-defined]
                self.type_text(a) for a in t.args) + "]"  # type: ignore[attr-defined]
        if cls is RefType:
            return f"Ref[{self.type_text(t.value)}]"  # type: ignore[attr-defined]
        if cls is FuncType:
            ft: FuncType = t  # type: ignore[assignment]
            params = self.type_params_text(ft.type_params)
            try:
                args = ", ".join(self.type_text(a) for a in ft.arg_types)
                text = f"fn {params}({args}) -> {self.type_text(ft.ret_type)}"
                if ft.type_constraints:
                    text += " /* where " + ", ".join(
                        self.type_text(c) for c in ft.type_constraints) + " */"
                return text
            finally:
                for tv in ft.type_params:
                    self.unbind_type_var(tv)
        if cls is IncompleteType:
            return "_"
        if cls is TypeRelation:
            name = getattr(t.relation, "name", str(t.relation))  # type: ignore[attr-defined]
            return f"{name}(" + ", ".join(self.type_text(a) for a in t.args) + ")"  # type: ignore
        if cls is TypeData:
            rope: list[Any] = []
            self.type_definition(t, rope)  # type: ignore[arg-type]
            return _join(rope)
        raise TypeError(f"pretty: not a type: {cls.__name__}")

    def type_definition(self, td: TypeData, out: list[Any]) -> None:
        params = self.type_params_text(td.type_vars)
        out.append(f"type {td.header.name}{params} {{")
        for ctor in td.constructors:
            out.append("\n  " + ctor.name)
            if ctor.inputs:
                out.append("(" + ", ".join(self.type_text(i) for i in ctor.inputs) + ")")
            out.append(",")
        out.append("\n}")
        for tv in td.type_vars:
            self.unbind_type_var(tv)

    # --- patterns ---------------------------------------------------------------------------
    def pattern(self, p: Pattern, out: list[Any]) -> list[Var]:
        """Print ``p`` (binding its variables, returned in order for unbinding)."""
        bound: list[Var] = []
        stack: list[Any] = [p]
        while stack:
            q = stack.pop()
            if type(q) is str:
                out.append(q)
                continue
            cls = type(q)
            if cls is PatternWildcard:
                out.append("_")
            elif cls is PatternVar:
                v = q.var
                out.append("%" + self.bind_var(v))
                bound.append(v)
                if v.type_annotation is not None:
                    out.append(": " + self.type_text(v.type_annotation))
            elif cls is PatternConstructor:
                out.append(q.constructor.name)
                if q.patterns:
                    stack.append(")")
                    for k, sub in enumerate(reversed(q.patterns)):
                        stack.append(sub)
                        if k < len(q.patterns) - 1:
                            stack.append(", ")
                    stack.append("(")
            elif cls is PatternTuple:
                stack.append(",)" if len(q.patterns) == 1 else ")")
                for k, sub in enumerate(reversed(q.patterns)):
                    stack.append(sub)
                    if k < len(q.patterns) - 1:
                        stack.append(", ")
                stack.append("(")
            else:
                raise TypeError(f"pretty: not a pattern: {cls.__name__}")
        return bound

    # --- expressions ------------------------------------------------------------------------
    def leaf_text(self, e: Expr) -> str:
        cls = type(e)
        if cls is Var:
            names = self.var_names.get(id(e))
            if names:
                return "%" + names[-1]
            return self.var_text(e)  # type: ignore[arg-type]
        if cls is Op or cls is Constructor:
            return e.name  # type: ignore[attr-defined]
        if cls is GlobalVar:
            return "@" + e.name_hint  # type: ignore[attr-defined]
        data = e.data  # type: ignore[attr-defined]
        if data.ndim == 0:
            text = _scalar_literal(data)
            if text is not None:
                return text
        return self.ctx.constant_ref(e)  # type: ignore[arg-type]

    def expr(self, e: Expr, out: list[Any], ind: int) -> Gen:
        """Print ``e`` in expression position (a graph reference if it is bound)."""
        key = id(e)
        if key in self.bound and key not in self.unbound:
            d = self.emitted.get(key)
            if d is None:
                d = yield self.emit(e)
            if d is not None:
                out.append(_Ref(d))
                return
        yield from self.node(e, out, ind)

    def emit(self, e: Expr) -> Gen:
        """Print the graph binding of ``e`` into the hole of its block; None if it cannot be."""
        block = self.block_of[id(e)]
        rec = self.rec_var.get(block)
        if rec is not None and self.mentions(e, rec):
            self.unbound.add(id(e))
            return None
        hole = self.holes.get(block)
        if hole is None:
            raise InternalError("printer: a shared node's block is not open at its first use")
        ind = self.block_indent[block]
        text: list[Any] = []
        yield from self.node(e, text, ind)
        d = _Def(self.counter)
        hole.extend(("\n" + "  " * ind, d, " = ", text, ";"))
        self.emitted[id(e)] = d
        return d

    def operand(self, e: Expr, out: list[Any], ind: int) -> Gen:
        """Print ``e`` where a postfix operator follows (callee, projection target)."""
        cls = type(e)
        if cls is Var or cls is GlobalVar or cls is Op or cls is Constructor:
            out.append(self.leaf_text(e))
            return
        key = id(e)
        if key in self.bound and key not in self.unbound:
            d = self.emitted.get(key)
            if d is None:
                d = yield self.emit(e)
            if d is not None:
                out.append(_Ref(d))
                return
        if cls is Constant or cls is Function or cls is If or cls is Match or \
                (cls is Call and _is_nullary_ctor_call(e)):  # type: ignore[arg-type]
            out.append("(")
            yield from self.node(e, out, ind)
            out.append(")")
        else:
            yield from self.node(e, out, ind)

    def node(self, e: Expr, out: list[Any], ind: int) -> Gen:
        """Print the syntax of ``e`` itself; non-leaf children go through :meth:`expr`."""
        cls = type(e)
        leaves = _LEAF_SET
        if cls is Call:
            op = e.op  # type: ignore[attr-defined]
            args = e.args  # type: ignore[attr-defined]
            attrs = e.attrs  # type: ignore[attr-defined]
            op_cls = type(op)
            if op_cls is Op:
                out.append(op.name)
            elif op_cls is Constructor and _is_nullary_ctor_call(e):  # type: ignore[arg-type]
                out.append(op.name)
                return
            elif op_cls is Var or op_cls is GlobalVar or op_cls is Constructor:
                out.append(self.leaf_text(op))
            else:
                yield self.operand(op, out, ind)
            out.append("(")
            first = True
            for a in args:
                if not first:
                    out.append(", ")
                first = False
                if type(a) in leaves:
                    out.append(self.leaf_text(a))
                else:
                    yield self.expr(a, out, ind)
            if attrs:
                if args:
                    out.append(", ")
                out.append(", ".join(f"{k}={_attr_value(v)}" for k, v in attrs.items()))
            out.append(")")
        elif cls in leaves:
            out.append(self.leaf_text(e))
        elif cls is Tuple:
            fields = e.fields  # type: ignore[attr-defined]
            out.append("(")
            first = True
            for a in fields:
                if not first:
                    out.append(", ")
                first = False
                if type(a) in leaves:
                    out.append(self.leaf_text(a))
                else:
                    yield self.expr(a, out, ind)
            out.append(",)" if len(fields) == 1 else ")")
        elif cls is TupleGetItem:
            yield self.operand(e.tuple_value, out, ind)  # type: ignore[attr-defined]
            out.append(f".{e.index}")  # type: ignore[attr-defined]
        elif cls is Let:
            out.append("(")
            yield self.block(e, self.own_block[id(e)], out, ind + 1, own=True)
            out.append("\n" + "  " * ind + ")")
        elif cls is Function:
            yield self.function("fn ", e, out, ind)  # type: ignore[arg-type]
        elif cls is If:
            b1, b2 = self.opened[id(e)]
            out.append("if (")
            yield self.expr(e.cond, out, ind)  # type: ignore[attr-defined]
            out.append(") {")
            yield self.block(e.true_branch, b1, out, ind + 1)  # type: ignore[attr-defined]
            out.append("\n" + "  " * ind + "} else {")
            yield self.block(e.false_branch, b2, out, ind + 1)  # type: ignore[attr-defined]
            out.append("\n" + "  " * ind + "}")
        elif cls is Match:
            yield self.match(e, out, ind)  # type: ignore[arg-type]
        elif cls is RefCreate or cls is RefRead or cls is Grad:
            out.append("ref(" if cls is RefCreate else "ref_read(" if cls is RefRead else "grad(")
            yield self.expr(children(e)[0], out, ind)
            out.append(")")
        elif cls is RefWrite:
            out.append("ref_write(")
            yield self.expr(e.ref, out, ind)  # type: ignore[attr-defined]
            out.append(", ")
            yield self.expr(e.value, out, ind)  # type: ignore[attr-defined]
            out.append(")")
        else:
            raise TypeError(f"pretty: not an expression: {cls.__name__}")

    def function(self, head: str, fn: Function, out: list[Any], ind: int) -> Gen:
        """``fn [A](%x: T, attr=v) -> R { body }`` (``head`` is ``"fn "`` or ``"def @f"``)."""
        tparams = self.type_params_text(fn.type_params)
        params: list[str] = []
        for p in fn.params:
            text = "%" + self.bind_var(p)
            if p.type_annotation is not None:
                text += ": " + self.type_text(p.type_annotation)
            params.append(text)
        params.extend(f"{k}={_attr_value(v)}" for k, v in fn.attrs.items())
        out.append(f"{head}{tparams}({', '.join(params)}) ")
        if fn.ret_type is not None:
            out.append(f"-> {self.type_text(fn.ret_type)} ")
        out.append("{")
        yield self.block(fn.body, self.opened[id(fn)][0], out, ind + 1)
        out.append("\n" + "  " * ind + "}")
        for p in reversed(fn.params):
            self.unbind_var(p)
        for tv in reversed(fn.type_params):
            self.unbind_type_var(tv)

    def match(self, m: Match, out: list[Any], ind: int) -> Gen:
        out.append("match (" if m.complete else "match? (")
        yield self.expr(m.data, out, ind)
        out.append(") {")
        for clause, cb in zip(m.clauses, self.opened[id(m)]):
            out.append("\n" + "  " * (ind + 1))
            yield self.clause(clause, cb, out, ind + 1)
            out.append(",")
        out.append("\n" + "  " * ind + "}")

    def clause(self, clause: Clause, cb: int, out: list[Any], ind: int) -> Gen:
        bound = self.pattern(clause.lhs, out)
        out.append(" => ")
        rhs = clause.rhs
        if cb in self.with_bindings or (type(rhs) is Let and id(rhs) not in self.bound):
            out.append("{")
            yield self.block(rhs, cb, out, ind + 1)
            out.append("\n" + "  " * ind + "}")
        else:
            hole: list[Any] = []
            self.holes[cb] = hole
            self.block_indent[cb] = ind
            yield self.expr(rhs, out, ind)
            del self.holes[cb]
            if hole:
                raise InternalError("printer: a binding landed in an inline clause")
        for v in reversed(bound):
            self.unbind_var(v)

    def clause_alone(self, clause: Clause, out: list[Any]) -> Gen:
        """A clause printed on its own (``pretty(clause)``); the unit's root is a match of it."""
        hole: list[Any] = []
        self.holes[0] = hole
        self.block_indent[0] = 0
        out.append(hole)
        out.append("\n")
        yield self.clause(clause, self.opened[id(self._root)][0], out, 0)
        del self.holes[0]

    # --- blocks -----------------------------------------------------------------------------
    def block(self, e: Expr, block: int, out: list[Any], ind: int, own: bool = False) -> Gen:
        """The statements of a block: its let spine, with a hole before each statement.

        ``own`` says that ``e`` is a ``let`` printed as its own block (in expression
        position or as a graph binding), so it starts the spine even if it is shared.
        """
        self.block_indent[block] = ind
        nl = "\n" + "  " * ind
        lets: list[Var] = []
        bound = self.bound
        while True:
            hole: list[Any] = []
            out.append(hole)
            self.holes[block] = hole
            if type(e) is not Let or (id(e) in bound and not own):
                out.append(nl)
                yield self.expr(e, out, ind)
                break
            var, value = e.var, e.value  # type: ignore[attr-defined]
            out.append(nl)
            if var.name_hint == "_" and var.type_annotation is None and \
                    id(var) not in self.referenced:
                yield self.expr(value, out, ind)
                out.append(";")
                e = e.body  # type: ignore[attr-defined]
                own = False
                continue
            name = self.bind_var(var)
            lets.append(var)
            out.append(f"let %{name}")
            if var.type_annotation is not None:
                out.append(": " + self.type_text(var.type_annotation))
            out.append(" = ")
            if type(value) is Function:
                self.rec_var[block] = var
                yield self.expr(value, out, ind)
                del self.rec_var[block]
            else:
                # The value does not see its own variable: hide the name while printing it.
                self.var_names[id(var)].pop()
                if not self.var_names[id(var)]:
                    del self.var_names[id(var)]
                yield self.expr(value, out, ind)
                self.var_names.setdefault(id(var), []).append(name)
            out.append(";")
            e = e.body  # type: ignore[attr-defined]
            own = False
        del self.holes[block]
        for v in reversed(lets):
            self.unbind_var(v)

    def free_var_declarations(self, root: Expr, out: list[Any], ind: int) -> None:
        """``free_var %x: T;`` for annotated free variables first used in this unit."""
        found = self.ctx.free_by_root.get(id(root))
        if found is None:
            self.ctx.name_free_vars([root])
            found = self.ctx.free_by_root[id(root)]
        nl = "\n" + "  " * ind
        for v in found:
            if v.type_annotation is None or id(v) in self.ctx.declared:
                continue
            self.ctx.declared.add(id(v))
            out.append(f"{nl}free_var {self.var_text(v)}: {self.type_text(v.type_annotation)};")

    def top_expression(self, out: list[Any]) -> Gen:
        root = self._root
        assert root is not None
        self.free_var_declarations(root, out, 0)
        yield self.block(root, 0, out, 0)

    def definition(self, name: str, fn: Function, out: list[Any]) -> Gen:
        decls: list[Any] = []
        self.free_var_declarations(fn, decls, 1)
        tparams = self.type_params_text(fn.type_params)
        params: list[str] = []
        for p in fn.params:
            text = "%" + self.bind_var(p)
            if p.type_annotation is not None:
                text += ": " + self.type_text(p.type_annotation)
            params.append(text)
        params.extend(f"{k}={_attr_value(v)}" for k, v in fn.attrs.items())
        out.append(f"def @{name}{tparams}({', '.join(params)}) ")
        if fn.ret_type is not None:
            out.append(f"-> {self.type_text(fn.ret_type)} ")
        out.append("{")
        out.append(decls)
        yield self.block(fn.body, self.opened[id(fn)][0], out, 1)
        out.append("\n}")
        for p in reversed(fn.params):
            self.unbind_var(p)
        for tv in reversed(fn.type_params):
            self.unbind_type_var(tv)
