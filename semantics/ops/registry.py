"""The operator registry: one :class:`OpDef` per primitive (paper §3.3.2).

Each operator is registered with

* its **attribute schema** (:class:`AttrSpec` per attribute: kind, default,
  validation) — ``OpDef.normalize_attrs`` fills defaults and rejects bad
  attributes with a ``RelayTypeError``;
* its **type relation** (:class:`Relation`, a named, reusable object mapping
  argument types + attributes to the result type);
* its numpy **reference implementation** — the semantics the oracle runs;
* its **pattern kind** for fusion (:class:`OpPattern`).

What consumers attach to an operator (gradients, lowerings, quantization annotations) is not
part of the definition: it lives in the rule tables of :mod:`semantics.ops.tables`.

Families register themselves from their own modules
(``semantics/ops/{tensor,nn,transform,reduce,...}.py``) with
:func:`register_op`; ``semantics.ops.get(name)`` and ``list_ops()`` read the
table.

Relation protocol
-----------------
``relation(arg_types, attrs, solver) -> Type | None``:

* ``arg_types`` are the argument types as inference currently knows them;
  any of them may still be an :class:`IncompleteType` or :class:`TypeVar`.
  When the relation needs an argument that is not yet known it returns
  ``None`` ("not yet": the solver re-queues it when an argument is refined).
* Otherwise it returns the result type, or raises ``RelayTypeError`` via
  :func:`relation_error`, naming the relation and the offending types.
* ``attrs`` are already normalized (defaults filled in).
* Dims are compared only through ``solver`` (a :class:`DimSolver`), which
  handles ``Any`` and symbolic dims; concrete ints take a fast path.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from semantics.errors import RelayTypeError, relation_failed
from semantics.expr import Attrs
from semantics.shapes import DEFAULT_SOLVER, DimSolver
from semantics.types import IncompleteType, TensorType, Type, TypeVar


class OpPattern(enum.IntEnum):
    """Fusion pattern kinds, ordered as TVM orders them."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


# Attribute kinds accepted by AttrSpec.kind.
ATTR_KINDS = ("int", "float", "bool", "str", "dtype", "ints", "floats", "int_or_ints",
              "optional_int", "optional_ints", "any")


@dataclass(frozen=True)
class AttrSpec:
    """Schema of one attribute: ``kind`` (one of ``ATTR_KINDS``), default, optional check.

    ``check(value) -> str | None`` returns an error description for a value
    that has the right kind but is out of range (e.g. a negative stride).
    ``required`` attributes have no default.
    """

    name: str
    kind: str
    default: Any = None
    required: bool = False
    check: Callable[[Any], str | None] | None = None
    doc: str = ""


@dataclass(frozen=True)
class Relation:
    """A named type relation (``Broadcast``, ``Identity``, ``Conv2D``, ...)."""

    name: str
    fn: Callable[[tuple[Type, ...], Attrs, DimSolver], Type | None]
    doc: str = ""

    def __call__(self, arg_types: tuple[Type, ...], attrs: Attrs,
                 solver: DimSolver = DEFAULT_SOLVER) -> Type | None:
        return self.fn(tuple(arg_types), attrs, solver)

    def __repr__(self) -> str:
        return f"<Relation {self.name}>"


class Traps(enum.Enum):
    """When an operator may raise on well-typed arguments (docs/architecture.md#decisions):
    what the effect analysis (``passes.purity``) reads to decide whether a call may be
    dropped, moved or evaluated early."""

    NEVER = "never"
    ON_INTEGERS = "on integers"  # integer operands: a 0 divisor, a negative power
    ALWAYS = "always"            # any operands: an index out of range, a bad range


@dataclass(frozen=True)
class OpDef:
    """A registered operator. ``num_inputs`` is -1 when variadic (e.g. a tuple input);
    ``traps`` says when evaluating it may raise on well-typed arguments."""

    name: str
    num_inputs: int
    attrs: Mapping[str, AttrSpec]
    relation: Relation
    pattern: OpPattern
    impl: Callable[..., Any]
    doc: str = ""
    family: str = ""
    traps: Traps = Traps.NEVER

    def normalize_attrs(self, attrs: Mapping[str, Any] | None = None) -> Attrs:
        """``attrs`` validated against the schema, defaults filled in, in schema order.

        Raises ``RelayTypeError`` for an unknown attribute, a missing required
        one, or a value of the wrong kind / out of range.
        """
        given = dict(attrs or {})
        out: dict[str, Any] = {}
        for name in given:
            if name not in self.attrs:
                known = ", ".join(self.attrs) or "none"
                raise RelayTypeError(
                    f"bad attribute: operator {self.name} has no attribute '{name}' "
                    f"(its attributes: {known})")
        for name, spec in self.attrs.items():
            if name in given:
                out[name] = coerce_attr(self.name, spec, given[name])
            elif spec.required:
                raise RelayTypeError(
                    f"bad attribute: operator {self.name} requires attribute '{name}'")
            else:
                out[name] = spec.default
        return Attrs(out)

    def reference(self, *arrays: Any, **attrs: Any) -> Any:
        """Run the numpy reference implementation; missing attributes take their defaults."""
        return self.impl(*arrays, **dict(self.normalize_attrs(attrs)))

    def __repr__(self) -> str:
        return f"<OpDef {self.name}>"


def coerce_attr(op: str, spec: AttrSpec, value: Any) -> Any:
    """Check ``value`` against ``spec`` and return its canonical form (lists become tuples)."""
    from semantics.dtypes import is_dtype

    def bad(expected: str) -> RelayTypeError:
        return RelayTypeError(
            f"bad attribute: {op} attribute '{spec.name}' expects {expected}, got {value!r}")

    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    def is_num(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    k = spec.kind
    v = value
    if isinstance(v, list):
        v = tuple(v)
    if k == "int":
        if not is_int(v):
            raise bad("an integer")
    elif k == "float":
        if not is_num(v):
            raise bad("a number")
        v = float(v)
    elif k == "bool":
        if is_int(v) and v in (0, 1):
            v = bool(v)
        if not isinstance(v, bool):
            raise bad("a boolean")
    elif k == "str":
        if not isinstance(v, str):
            raise bad("a string")
    elif k == "dtype":
        if not isinstance(v, str) or not is_dtype(v):
            raise bad("a dtype such as \"float32\"")
    elif k == "ints":
        if is_int(v):
            v = (v,)
        if not isinstance(v, tuple) or not all(is_int(x) for x in v):
            raise bad("a list of integers")
    elif k == "floats":
        if is_num(v):
            v = (v,)
        if not isinstance(v, tuple) or not all(is_num(x) for x in v):
            raise bad("a list of numbers")
        v = tuple(float(x) for x in v)
    elif k == "int_or_ints":
        if not (is_int(v) or (isinstance(v, tuple) and all(is_int(x) for x in v))):
            raise bad("an integer or a list of integers")
    elif k == "optional_int":
        if v is not None and not is_int(v):
            raise bad("an integer or None")
    elif k == "optional_ints":
        if is_int(v):
            v = (v,)
        if v is not None and not (isinstance(v, tuple) and all(is_int(x) for x in v)):
            raise bad("a list of integers or None")
    elif k != "any":
        raise ValueError(f"unknown attribute kind {k}")
    if spec.check is not None and v is not None:
        problem = spec.check(v)
        if problem:
            raise RelayTypeError(f"bad attribute: {op} attribute '{spec.name}' {problem}")
    return v


_REGISTRY: dict[str, OpDef] = {}


def register_op(name: str, *, num_inputs: int, relation: Relation, pattern: OpPattern,
                impl: Callable[..., Any], attrs: tuple[AttrSpec, ...] = (), doc: str = "",
                family: str = "", traps: Traps = Traps.NEVER) -> OpDef:
    """Add an operator to the registry (a duplicate name is an internal error)."""
    if name in _REGISTRY:
        raise ValueError(f"operator {name} registered twice")
    op = OpDef(name, num_inputs, {a.name: a for a in attrs}, relation, pattern, impl, doc, family,
               traps)
    _REGISTRY[name] = op
    return op


_ALIASES: dict[str, str] = {}


def register_alias(alias: str, name: str) -> None:
    """Let the text format accept ``alias`` for operator ``name`` (TVM's printed names, e.g.
    ``relay.op.annotation.simulated_quantize``); programs always hold ``name``."""
    if alias in _ALIASES or alias in _REGISTRY:
        raise ValueError(f"operator alias {alias} registered twice")
    _ALIASES[alias] = name


def canonical_name(name: str) -> str:
    """The registered name ``name`` stands for (itself unless it is an alias)."""
    return _ALIASES.get(name, name)


def get(name: str) -> OpDef:
    """The operator called ``name``; ``RelayTypeError`` "unknown operator" otherwise."""
    op = _REGISTRY.get(name)
    if op is None:
        raise RelayTypeError(f"unknown operator {name}")
    return op


def exists(name: str) -> bool:
    return name in _REGISTRY


def list_ops() -> list[str]:
    """Every registered operator name, sorted."""
    return sorted(_REGISTRY)


# --- helpers for writing relations --------------------------------------------------------

def relation_error(relation: str, arg_types: tuple[Type, ...], why: str) -> RelayTypeError:
    """The error a relation raises: names the relation and shows the argument types."""
    from semantics.printing.types import type_text

    shown = "(" + ", ".join(type_text(t) for t in arg_types) + ")"
    return RelayTypeError(relation_failed(relation, shown, why))


def is_known(t: Type) -> bool:
    """False for a type inference has not determined yet (so the relation must wait)."""
    return not isinstance(t, (IncompleteType, TypeVar))


def tensor_args(relation: str, arg_types: tuple[Type, ...],
                indices: tuple[int, ...] | None = None) -> tuple[TensorType, ...] | None:
    """The argument types as TensorTypes; None if one is not known yet; error if not a tensor."""
    chosen = arg_types if indices is None else tuple(arg_types[i] for i in indices)
    out = []
    for t in chosen:
        if not is_known(t):
            return None
        if not isinstance(t, TensorType):
            raise relation_error(relation, arg_types, "expected tensor arguments")
        out.append(t)
    return tuple(out)
