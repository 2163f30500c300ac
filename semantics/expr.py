"""Expressions and patterns of Relay (paper Fig. 1; appendix Fig. 14 grammar).

Every node is a frozen, slotted dataclass compared by identity (generated
``==``/``hash``/``repr`` would recurse and overflow on deep programs);
compare structurally with :func:`semantics.alpha.alpha_equal`. Sequences are
tuples. ``span`` and ``checked_type`` are keyword-only; ``checked_type`` is
filled by ``typechecker.infer``, which rebuilds nodes rather than mutating
them.

Variables are identity-based: each binding site creates its own :class:`Var`
(shadowing makes a new object), so a use refers to its binder by pointer.
Graph bindings (``%0 = e; ...``) are not nodes: they denote *sharing*, i.e.
the same node object reachable along several paths of the DAG.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semantics.span import Span
from semantics.types import GlobalTypeVar, Type, TypeVar

_NODE = dict(frozen=True, slots=True, eq=False, repr=False)


class Attrs(Mapping):
    """An immutable, ordered mapping of attribute names to values.

    Values are ``int``, ``float``, ``str``, ``bool``, ``None``, or tuples of
    those (lists in the text format become tuples here).
    """

    __slots__ = ("_items", "_dict")

    def __init__(self, items: Mapping[str, Any] | tuple[tuple[str, Any], ...] = ()):
        pairs = tuple(items.items()) if isinstance(items, Mapping) else tuple(items)
        object.__setattr__(self, "_items", tuple((k, _freeze(v)) for k, v in pairs))
        object.__setattr__(self, "_dict", dict(self._items))

    def __getitem__(self, key: str) -> Any:
        return self._dict[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self._dict)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Attrs is immutable")

    def __getattr__(self, name: str) -> Any:
        try:
            return self._dict[name]
        except KeyError:
            raise AttributeError(name) from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Attrs) and self._dict == other._dict

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._dict.items(), key=lambda kv: kv[0])))

    def __repr__(self) -> str:
        return "Attrs(" + ", ".join(f"{k}={v!r}" for k, v in self._items) + ")"

    def replace(self, **updates: Any) -> Attrs:
        merged = dict(self._items)
        merged.update(updates)
        return Attrs(merged)


def _freeze(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, np.generic):
        return v.item()
    return v


EMPTY_ATTRS = Attrs()


@dataclass(**_NODE)
class Expr:
    """Base of all expressions."""

    span: Span | None = field(default=None, kw_only=True)
    checked_type: Type | None = field(default=None, kw_only=True)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {summary(self)}>"


@dataclass(**_NODE)
class Var(Expr):
    """A local variable ``%name``; ``type_annotation`` is its declared type, if any."""

    name_hint: str
    type_annotation: Type | None = None


@dataclass(**_NODE)
class GlobalVar(Expr):
    """A global ``@name``, resolved against the module. Compared by name."""

    name_hint: str


_FROZEN: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()
"""Arrays :func:`frozen_array` made read-only, by ``id``: a ``Constant`` of one keeps it."""


def frozen_array(arr: np.ndarray) -> np.ndarray:
    """``arr`` made read-only in place and usable as a ``Constant``'s data without a copy.

    For an array its caller has just computed and shares with nobody (a pass's folded or
    transformed weight): a ``Constant`` copies any other array, so that no caller can
    change a constant's value afterwards. A view (``arr.base`` is not None) is left as it
    is (the ``Constant`` copies it). Copies of large weights were a third of ResNet-18's
    pass pipeline (docs/tvm.md, "Build time").
    """
    if type(arr) is np.ndarray and arr.base is None:
        arr.setflags(write=False)
        _FROZEN[id(arr)] = arr
    return arr


@dataclass(**_NODE)
class Constant(Expr):
    """A constant tensor; ``data`` is a read-only numpy array of a Relay dtype."""

    data: np.ndarray

    def __post_init__(self) -> None:
        data = self.data
        if type(data) is np.ndarray and _FROZEN.get(id(data)) is data:
            return  # already a frozen array of our own (:func:`frozen_array`): no copy
        arr = np.array(data, copy=True)
        object.__setattr__(self, "data", frozen_array(arr))

    @property
    def dtype(self) -> str:
        return self.data.dtype.name


@dataclass(**_NODE)
class Op(Expr):
    """A primitive operator such as ``add`` or ``nn.conv2d`` (see ``semantics.ops``)."""

    name: str


@dataclass(**_NODE)
class Constructor(Expr):
    """An ADT constructor: ``name(inputs...)`` builds a value of ``belong_to[...]``."""

    name: str
    inputs: tuple[Type, ...]
    belong_to: GlobalTypeVar
    tag: int = 0


@dataclass(**_NODE)
class Call(Expr):
    """``op(args...)`` with attributes and optional explicit type arguments."""

    op: Expr
    args: tuple[Expr, ...]
    attrs: Attrs = EMPTY_ATTRS
    type_args: tuple[Type, ...] = ()


@dataclass(**_NODE)
class Let(Expr):
    """``let var = value; body``. If ``value`` is a Function, ``var`` is in scope inside it."""

    var: Var
    value: Expr
    body: Expr


@dataclass(**_NODE)
class Function(Expr):
    """``fn[type_params](params) -> ret_type { body }`` with attributes (e.g. ``Primitive=1``)."""

    params: tuple[Var, ...]
    body: Expr
    ret_type: Type | None = None
    type_params: tuple[TypeVar, ...] = ()
    attrs: Attrs = EMPTY_ATTRS


@dataclass(**_NODE)
class Tuple(Expr):
    fields: tuple[Expr, ...]


@dataclass(**_NODE)
class TupleGetItem(Expr):
    """Projection ``tuple_value.index``."""

    tuple_value: Expr
    index: int


@dataclass(**_NODE)
class If(Expr):
    cond: Expr
    true_branch: Expr
    false_branch: Expr


@dataclass(**_NODE)
class Pattern:
    """Base of patterns (not expressions)."""

    span: Span | None = field(default=None, kw_only=True)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {summary(self)}>"


@dataclass(**_NODE)
class PatternWildcard(Pattern):
    """``_``: matches anything, binds nothing."""


@dataclass(**_NODE)
class PatternVar(Pattern):
    """``%x``: matches anything, binds it to ``var``."""

    var: Var


@dataclass(**_NODE)
class PatternConstructor(Pattern):
    """``Ctor(p1, ..., pn)``: matches a value built by ``constructor`` whose fields match."""

    constructor: Constructor
    patterns: tuple[Pattern, ...] = ()


@dataclass(**_NODE)
class PatternTuple(Pattern):
    """``(p1, ..., pn)``: matches a tuple whose fields match."""

    patterns: tuple[Pattern, ...]


@dataclass(**_NODE)
class Clause:
    """``lhs => rhs`` in a match."""

    lhs: Pattern
    rhs: Expr
    span: Span | None = field(default=None, kw_only=True)


@dataclass(**_NODE)
class Match(Expr):
    """``match (data) { clauses }``; ``complete=False`` is ``match?`` (may be partial)."""

    data: Expr
    clauses: tuple[Clause, ...]
    complete: bool = True


@dataclass(**_NODE)
class RefCreate(Expr):
    """``ref(value)``."""

    value: Expr


@dataclass(**_NODE)
class RefRead(Expr):
    """``ref_read(ref)`` / ``!ref``."""

    ref: Expr


@dataclass(**_NODE)
class RefWrite(Expr):
    """``ref_write(ref, value)`` / ``ref := value``; evaluates to ``()``."""

    ref: Expr
    value: Expr


@dataclass(**_NODE)
class Grad(Expr):
    """``grad(func)``: the paper's AD macro; expanded by the ``ad`` package."""

    func: Expr


def pattern_vars(p: Pattern) -> list[Var]:
    """The variables a pattern binds, left to right (iterative)."""
    out: list[Var] = []
    stack = [p]
    while stack:
        q = stack.pop()
        if isinstance(q, PatternVar):
            out.append(q.var)
        elif isinstance(q, (PatternConstructor, PatternTuple)):
            stack.extend(reversed(q.patterns))
    return out


def children(e: Expr) -> tuple[Expr, ...]:
    """Immediate sub-expressions of ``e`` in evaluation order (binders excluded).

    ``Function``'s only child is its body; ``Let``'s are ``(value, body)``;
    ``Match``'s are the scrutinee then each clause's right-hand side.
    """
    t = type(e)
    if t is Call:
        return (e.op, *e.args)  # type: ignore[attr-defined]
    if t is Let:
        return (e.value, e.body)  # type: ignore[attr-defined]
    if t is Tuple:
        return e.fields  # type: ignore[attr-defined]
    if t is TupleGetItem:
        return (e.tuple_value,)  # type: ignore[attr-defined]
    if t is Function:
        return (e.body,)  # type: ignore[attr-defined]
    if t is If:
        return (e.cond, e.true_branch, e.false_branch)  # type: ignore[attr-defined]
    if t is Match:
        return (e.data, *(c.rhs for c in e.clauses))  # type: ignore[attr-defined]
    if t is RefCreate:
        return (e.value,)  # type: ignore[attr-defined]
    if t is RefRead:
        return (e.ref,)  # type: ignore[attr-defined]
    if t is RefWrite:
        return (e.ref, e.value)  # type: ignore[attr-defined]
    if t is Grad:
        return (e.func,)  # type: ignore[attr-defined]
    return ()


def with_children(e: Expr, new: tuple[Expr, ...]) -> Expr:
    """``e`` rebuilt with children ``new`` (same order as :func:`children`).

    Returns ``e`` itself when every child is identical, so sharing survives
    and unchanged programs are not copied. ``checked_type`` is dropped on a
    rebuilt node (its children changed); ``span`` is kept.
    """
    old = children(e)
    if len(old) == len(new) and all(a is b for a, b in zip(old, new)):
        return e
    t = type(e)
    s = e.span
    if t is Call:
        return Call(new[0], tuple(new[1:]), e.attrs, e.type_args, span=s)  # type: ignore
    if t is Let:
        return Let(e.var, new[0], new[1], span=s)  # type: ignore
    if t is Tuple:
        return Tuple(tuple(new), span=s)
    if t is TupleGetItem:
        return TupleGetItem(new[0], e.index, span=s)  # type: ignore
    if t is Function:
        return Function(e.params, new[0], e.ret_type, e.type_params, e.attrs, span=s)  # type: ignore
    if t is If:
        return If(new[0], new[1], new[2], span=s)
    if t is Match:
        clauses = tuple(Clause(c.lhs, r, span=c.span) for c, r in zip(e.clauses, new[1:]))  # type: ignore
        return Match(new[0], clauses, e.complete, span=s)  # type: ignore
    if t is RefCreate:
        return RefCreate(new[0], span=s)
    if t is RefRead:
        return RefRead(new[0], span=s)
    if t is RefWrite:
        return RefWrite(new[0], new[1], span=s)
    if t is Grad:
        return Grad(new[0], span=s)
    raise ValueError(f"{t.__name__} has no children")


def const(value: Any, dtype: str | None = None, *, span: Span | None = None) -> Constant:
    """A :class:`Constant` from a Python/numpy value (default dtypes: int32, float32, bool)."""
    if dtype is None:
        arr = np.asarray(value)
        if arr.dtype == np.float64 and not isinstance(value, np.ndarray):
            arr = arr.astype(np.float32)
        elif arr.dtype == np.int64 and not isinstance(value, np.ndarray):
            arr = arr.astype(np.int32)
    else:
        arr = np.asarray(value, dtype=np.dtype(dtype))
    return Constant(arr, span=span)


# --- repr: a short summary, never the whole program ------------------------------------------

SUMMARY_DEPTH = 3     # nesting levels shown; deeper sub-expressions are written "…"
SUMMARY_FIELDS = 4    # arguments/fields/clauses shown per node; the rest are counted
SUMMARY_WIDTH = 200   # characters at most


def summary(node: Expr | Pattern, depth: int = SUMMARY_DEPTH, width: int = SUMMARY_WIDTH) -> str:
    """A one-line sketch of ``node`` for ``repr``: the first ``depth`` levels in the text
    format's notation, at most :data:`SUMMARY_FIELDS` children per node and ``width``
    characters. Costs O(fields ** depth), whatever the program's size (``repr`` of a
    20,000-node program must not print it); :func:`semantics.pretty` prints in full.
    """
    text = _sketch(node, depth)
    return text if len(text) <= width else text[:width - 1] + "…"


def _sketch_all(items: Sequence[Expr | Pattern], depth: int) -> str:
    shown = [_sketch(x, depth) for x in items[:SUMMARY_FIELDS]]
    if len(items) > SUMMARY_FIELDS:
        shown.append(f"…{len(items) - SUMMARY_FIELDS} more")
    return ", ".join(shown)


def _sketch(e: Expr | Pattern, depth: int) -> str:
    leaf = _LEAF_SKETCH.get(type(e))
    if leaf is not None:
        return leaf(e)
    if depth <= 0:
        return "…"
    inner = _INNER_SKETCH.get(type(e))
    return type(e).__name__ if inner is None else inner(e, depth - 1)


def _constant_sketch(e: Constant) -> str:
    dtype = e.data.dtype.name
    if e.data.ndim == 0:
        return f"{e.data.item()!r}" + ("" if dtype in _PLAIN else f":{dtype}")
    return f"meta[{'x'.join(map(str, e.data.shape))} {dtype}]"


def _if_sketch(e: If, d: int) -> str:
    return (f"if ({_sketch(e.cond, d)}) {{ {_sketch(e.true_branch, d)} }} "
            f"else {{ {_sketch(e.false_branch, d)} }}")


def _match_sketch(e: Match, d: int) -> str:
    n = len(e.clauses)
    return f"match{'' if e.complete else '?'} ({_sketch(e.data, d)}) {{ {n} clause(s) }}"


# Nodes shown whatever the depth, and nodes with parts (shown while depth remains).
_LEAF_SKETCH: dict[type, Callable[[Any], str]] = {
    Var: lambda e: f"%{e.name_hint}",
    GlobalVar: lambda e: f"@{e.name_hint}",
    Op: lambda e: e.name,
    Constructor: lambda e: e.name,
    Constant: _constant_sketch,
    PatternWildcard: lambda e: "_",
    PatternVar: lambda e: f"%{e.var.name_hint}",
}
_INNER_SKETCH: dict[type, Callable[[Any, int], str]] = {
    Call: lambda e, d: f"{_sketch(e.op, d)}({_sketch_all(e.args, d)})",
    Let: lambda e, d: f"let %{e.var.name_hint} = {_sketch(e.value, d)}; {_sketch(e.body, d)}",
    Function: lambda e, d: f"fn ({_sketch_all(e.params, d)}) {{ {_sketch(e.body, d)} }}",
    Tuple: lambda e, d: f"({_sketch_all(e.fields, d)}{',' if len(e.fields) == 1 else ''})",
    TupleGetItem: lambda e, d: f"{_sketch(e.tuple_value, d)}.{e.index}",
    If: _if_sketch,
    Match: _match_sketch,
    RefCreate: lambda e, d: f"ref({_sketch(e.value, d)})",
    RefRead: lambda e, d: f"!{_sketch(e.ref, d)}",
    RefWrite: lambda e, d: f"{_sketch(e.ref, d)} := {_sketch(e.value, d)}",
    Grad: lambda e, d: f"grad({_sketch(e.func, d)})",
    PatternConstructor: lambda e, d: e.constructor.name + (
        f"({_sketch_all(e.patterns, d)})" if e.patterns else ""),
    PatternTuple: lambda e, d: f"({_sketch_all(e.patterns, d)})",
}

_PLAIN = frozenset({"int32", "float32", "bool"})
