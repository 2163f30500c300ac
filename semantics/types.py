"""The type language (paper Fig. 1 / appendix Fig. 14; RULES.md, "Kinding").

Nodes are frozen, slotted, identity-compared dataclasses; compare them
structurally with :func:`semantics.alpha.types_equal`.

* :class:`TensorType` — ``Tensor[(d, ...), dtype]``; dims are
  :mod:`semantics.shapes` dims (int, ``ANY``, SymPy expression).
* :class:`TupleType`, :class:`FuncType`, :class:`RefType`.
* :class:`TypeVar` — a type parameter with a :class:`Kind`; identity-based,
  its ``name`` is for printing only.
* :class:`GlobalTypeVar` — the name of an ADT (kind ``AdtHandle``),
  compared by name; :class:`TypeCall` applies it to arguments.
* :class:`TypeData` — an ADT definition (its constructors are
  :class:`semantics.expr.Constructor` expressions).
* :class:`IncompleteType` — a hole for inference (the type checker's
  unification variables).
* :class:`TypeRelation` — a relation constraint ``R(T1, ..., Tn)`` as in the
  paper's ``where`` clauses (built internally for operator calls).
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from semantics.shapes import Dim
from semantics.span import Span

if TYPE_CHECKING:
    from semantics.expr import Constructor

_NODE = dict(frozen=True, slots=True, eq=False, repr=False)


class Kind(enum.Enum):
    """Kinds of the appendix's kinding rules."""

    Type = "Type"
    ShapeVar = "Shape"
    BaseType = "BaseType"
    Constraint = "Relation"
    AdtHandle = "ADT"


@dataclass(**_NODE)
class Type:
    """Base of all types. ``span`` is where the type was written, if anywhere."""

    span: Span | None = field(default=None, kw_only=True)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {type_sketch(self)}>"


@dataclass(**_NODE)
class TensorType(Type):
    """``Tensor[shape, dtype]``; ``float32`` abbreviates ``Tensor[(), float32]``."""

    shape: tuple[Dim, ...]
    dtype: str

    @property
    def ndim(self) -> int:
        return len(self.shape)


def scalar_type(dtype: str) -> TensorType:
    """``Tensor[(), dtype]``."""
    return TensorType((), dtype)


@dataclass(**_NODE)
class TupleType(Type):
    fields: tuple[Type, ...]


UNIT_TYPE_FIELDS: tuple[Type, ...] = ()


def unit_type() -> TupleType:
    """The unit type ``()``: the empty tuple type."""
    return TupleType(())


_fresh = itertools.count()


@dataclass(**_NODE)
class TypeVar(Type):
    """A type (or shape) parameter. Two TypeVars are the same only if they are the same object."""

    name: str
    kind: Kind = Kind.Type


@dataclass(**_NODE)
class GlobalTypeVar(Type):
    """The name of an ADT, e.g. ``List``. Compared by name."""

    name: str
    kind: Kind = Kind.AdtHandle


@dataclass(**_NODE)
class TypeCall(Type):
    """An ADT applied to type arguments: ``List[int32]``."""

    func: GlobalTypeVar
    args: tuple[Type, ...]


@dataclass(**_NODE)
class TypeRelation(Type):
    """A relation constraint ``name(args...)`` with the operator's attributes."""

    relation: Any
    args: tuple[Type, ...]
    num_inputs: int
    attrs: Any = None


@dataclass(**_NODE)
class FuncType(Type):
    """``fn[type_params](arg_types) -> ret_type where type_constraints``."""

    arg_types: tuple[Type, ...]
    ret_type: Type
    type_params: tuple[TypeVar, ...] = ()
    type_constraints: tuple[TypeRelation, ...] = ()


@dataclass(**_NODE)
class RefType(Type):
    """``Ref[T]``: the type of a mutable reference cell holding a ``T``."""

    value: Type


@dataclass(**_NODE)
class IncompleteType(Type):
    """A type to be found by inference. Each instance is a distinct unknown."""

    kind: Kind = Kind.Type
    id: int = field(default_factory=lambda: next(_fresh))


@dataclass(**_NODE)
class TypeData(Type):
    """An ADT definition: ``type header[type_vars] { constructors }``."""

    header: GlobalTypeVar
    type_vars: tuple[TypeVar, ...]
    constructors: tuple[Constructor, ...]


def type_children(t: Type) -> tuple[Type, ...]:
    """The immediate sub-types of ``t`` (used by iterative traversals)."""
    if isinstance(t, TupleType):
        return t.fields
    if isinstance(t, FuncType):
        return (*t.type_params, *t.arg_types, t.ret_type, *t.type_constraints)
    if isinstance(t, RefType):
        return (t.value,)
    if isinstance(t, TypeCall):
        return (t.func, *t.args)
    if isinstance(t, TypeRelation):
        return t.args
    return ()


# --- repr: a depth-capped sketch (the printer, semantics.printing.types, is a layer above) -----

SKETCH_DEPTH = 4    # nesting levels shown; deeper types are written "…"
SKETCH_FIELDS = 4   # fields/arguments shown per type; the rest are counted
SKETCH_WIDTH = 200  # characters at most


def type_sketch(t: Type, depth: int = SKETCH_DEPTH, width: int = SKETCH_WIDTH) -> str:
    """A one-line sketch of ``t`` for ``repr``, close to the text format, at most ``depth``
    levels, :data:`SKETCH_FIELDS` fields per level and ``width`` characters; its cost does
    not grow with the type. Messages use :func:`semantics.printing.types.type_summary`."""
    text = _sketch(t, depth)
    return text if len(text) <= width else text[:width - 1] + "…"


def _sketch_all(items: tuple[Type, ...], depth: int) -> str:
    shown = [_sketch(x, depth) for x in items[:SKETCH_FIELDS]]
    if len(items) > SKETCH_FIELDS:
        shown.append(f"…{len(items) - SKETCH_FIELDS} more")
    return ", ".join(shown)


def _sketch(t: Type, depth: int) -> str:
    leaf = _LEAF_SKETCH.get(type(t))
    if leaf is not None:
        return leaf(t)
    if depth <= 0:
        return "…"
    inner = _INNER_SKETCH.get(type(t))
    return type(t).__name__ if inner is None else inner(t, depth - 1)


def _tensor_sketch(t: TensorType) -> str:
    return t.dtype if not t.shape else f"Tensor[({', '.join(map(str, t.shape))}), {t.dtype}]"


def _func_sketch(t: FuncType, d: int) -> str:
    params = f"[{', '.join(p.name for p in t.type_params)}]" if t.type_params else ""
    return f"fn {params}({_sketch_all(t.arg_types, d)}) -> {_sketch(t.ret_type, d)}"


# Types shown whatever the depth, and types with parts (shown while depth remains).
_LEAF_SKETCH: dict[type, Callable[[Any], str]] = {
    TensorType: _tensor_sketch,
    TypeVar: lambda t: t.name,
    GlobalTypeVar: lambda t: t.name,
    IncompleteType: lambda t: "_",
}
_INNER_SKETCH: dict[type, Callable[[Any, int], str]] = {
    TupleType: lambda t, d: f"({_sketch_all(t.fields, d)}{',' if len(t.fields) == 1 else ''})",
    FuncType: _func_sketch,
    RefType: lambda t, d: f"Ref[{_sketch(t.value, d)}]",
    TypeCall: lambda t, d: f"{t.func.name}[{_sketch_all(t.args, d)}]",
    TypeRelation: lambda t, d: f"{getattr(t.relation, 'name', t.relation)}"
                               f"({_sketch_all(t.args, d)})",
    TypeData: lambda t, d: f"type {t.header.name}[{', '.join(v.name for v in t.type_vars)}]",
}
