"""The Relay types of ONNX sequences and optionals, and the rank unions.

A sequence of tensors is the prelude's ``List[Tensor[dims, dtype]]``, an optional its
``Option[T]``. The element type is the *join* of the elements' types: dims that differ become
``?`` (``Any``). A Relay tensor type fixes the rank, so when a sequence holds tensors of the
same dtype but *different ranks* (a scalar, then vectors), the join is an importer-defined
ADT with one constructor per rank that occurs, e.g. for ``float32``::

    type OnnxTensorF32 {
      OnnxF32R0(float32),
      OnnxF32R1(Tensor[(?), float32]),
    }

Values entering such a sequence are wrapped in their rank's constructor (:func:`conform`),
a ``SequenceAt`` whose rank is known at import time unwraps with a ``match``
(:func:`unwrap`), and :func:`~frontends.onnx.ops_seq.from_relay_value` unwraps results for
the user. Uniform-rank sequences keep the plain ``List[Tensor[...]]``. The constructors of an
import are collected in a :class:`Unions` registry that ``from_onnx`` opens
(:func:`unions_session`) and turns into ``type`` definitions at the end.

An optional joined with a value that is not optional (a ``Loop`` whose carried optional
becomes a sequence after the first iteration) is an optional: the plain value is ``Some``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from frontends.onnx.builder import Unsupported, Value, project
from semantics.expr import (
    Call,
    Clause,
    Constructor,
    Function,
    Let,
    Match,
    PatternConstructor,
    PatternVar,
    Tuple,
    Var,
)
from semantics.printer import pretty
from semantics.shapes import ANY
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
)


def _prelude() -> Any:
    from semantics.prelude import prelude_module
    return prelude_module()


def ctor(name: str) -> Constructor:
    """The prelude's constructor ``name`` (``Cons``, ``Nil``, ``Some``, ``None``)."""
    return _prelude().constructors[name]


# --- List and Option -----------------------------------------------------------------------

def list_type(elem: Type) -> TypeCall:
    return TypeCall(_prelude().types["List"].header, (elem,))


def option_type(elem: Type) -> TypeCall:
    return TypeCall(_prelude().types["Option"].header, (elem,))


def _adt_name(t: Type) -> str | None:
    return t.func.name if isinstance(t, TypeCall) else None


def is_list(t: Type) -> bool:
    return _adt_name(t) == "List"


def is_option(t: Type) -> bool:
    return _adt_name(t) == "Option"


def elem_type(v: Value | Type) -> Type:
    t = v.type if isinstance(v, Value) else v
    if not isinstance(t, TypeCall) or not t.args:
        raise Unsupported(f"expected a sequence or an optional, got {pretty(t)}")
    return t.args[0]


def is_complete(t: Type) -> bool:
    if isinstance(t, IncompleteType):
        return False
    if isinstance(t, TypeCall):
        return all(is_complete(x) for x in t.args)
    if isinstance(t, TupleType):
        return all(is_complete(x) for x in t.fields)
    return True


# --- rank unions ---------------------------------------------------------------------------

_ABBREV = {"bool": "Bool", "float16": "F16", "float32": "F32", "float64": "F64",
           "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64", "uint8": "U8",
           "uint16": "U16", "uint32": "U32", "uint64": "U64"}
_CTOR_NAME = re.compile(r"Onnx(Bool|F16|F32|F64|I8|I16|I32|I64|U8|U16|U32|U64)R(\d+)")


def union_name(dtype: str) -> str:
    """The name of the ADT of ``dtype`` tensors of several ranks (``OnnxTensorF32``)."""
    return f"OnnxTensor{_ABBREV[dtype]}"


def is_union_ctor_name(name: str) -> bool:
    """Whether ``name`` is a constructor of a rank union (``OnnxF32R1``)."""
    return _CTOR_NAME.fullmatch(name) is not None


class Unions:
    """The rank unions of one import: dtype → its constructors, in the order the ranks
    occurred (a constructor's tag is its index)."""

    def __init__(self) -> None:
        self.ctors: dict[str, list[Constructor]] = {}
        #: ids of the graph inputs' variables whose element shapes are not declared
        self.undeclared: set[int] = set()

    def type_of(self, dtype: str) -> TypeCall:
        return TypeCall(GlobalTypeVar(union_name(dtype)), ())

    def ctor(self, dtype: str, rank: int) -> Constructor:
        """The constructor of rank ``rank`` (its field: ``Tensor[(?, ...), dtype]``)."""
        found = self.ctors.setdefault(dtype, [])
        for c in found:
            if len(c.inputs[0].shape) == rank:  # type: ignore[attr-defined]
                return c
        c = Constructor(f"Onnx{_ABBREV[dtype]}R{rank}", (TensorType((ANY,) * rank, dtype),),
                        GlobalTypeVar(union_name(dtype)), len(found))
        found.append(c)
        return c

    def definitions(self) -> dict[str, TypeData]:
        return {union_name(d): TypeData(GlobalTypeVar(union_name(d)), (), tuple(cs))
                for d, cs in self.ctors.items()}


_UNIONS: ContextVar[Unions | None] = ContextVar("onnx_rank_unions", default=None)


@contextlib.contextmanager
def unions_session() -> Iterator[Unions]:
    """The registry of the rank unions created while importing one model."""
    unions = Unions()
    token = _UNIONS.set(unions)
    try:
        yield unions
    finally:
        _UNIONS.reset(token)


def union_dtype(t: Type) -> str | None:
    """The dtype of a rank union type, None for another type."""
    if not isinstance(t, TypeCall) or t.args or not t.func.name.startswith("OnnxTensor"):
        return None
    name = t.func.name
    return next((d for d, a in _ABBREV.items() if name == f"OnnxTensor{a}"), None)


def union_ranks(t: Type) -> list[int]:
    """The ranks a rank union holds so far."""
    unions = _UNIONS.get()
    dtype = union_dtype(t)
    if unions is None or dtype is None:
        return []
    return sorted(len(c.inputs[0].shape)  # type: ignore[attr-defined]
                  for c in unions.ctors.get(dtype, []))


def _union(dtype: str, ranks: list[int], why: str) -> TypeCall:
    unions = _UNIONS.get()
    if unions is None:
        raise Unsupported(why)
    for r in ranks:
        unions.ctor(dtype, r)
    return unions.type_of(dtype)


def join(a: Type, b: Type) -> Type:
    """The least general type of values of types ``a`` and ``b``: dims that differ become
    ``?``; ranks that differ (same dtype) the dtype's rank union; an optional and a value
    that is not, an optional; an unknown (``IncompleteType``) type takes the other's."""
    if isinstance(a, IncompleteType):
        return b
    if isinstance(b, IncompleteType):
        return a
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        if a.dtype != b.dtype:
            raise Unsupported(f"values of types {pretty(a)} and {pretty(b)} cannot share a "
                              f"sequence or a loop variable (different dtypes)")
        if a.ndim != b.ndim:
            return _union(a.dtype, [a.ndim, b.ndim],
                          f"values of types {pretty(a)} (rank {a.ndim}) and {pretty(b)} "
                          f"(rank {b.ndim}) cannot share a sequence or a loop variable")
        return TensorType(tuple(x if (x is y or (x is not ANY and y is not ANY and x == y))
                                else ANY for x, y in zip(a.shape, b.shape)), a.dtype)
    for u, t in ((a, b), (b, a)):
        dtype = union_dtype(u)
        if dtype is not None and isinstance(t, TensorType) and t.dtype == dtype:
            return _union(dtype, [t.ndim], f"a value of type {pretty(t)} cannot join {u}")
    if is_option(a) != is_option(b):
        opt, plain = (a, b) if is_option(a) else (b, a)
        return option_type(join(elem_type(opt), plain))
    if isinstance(a, TypeCall) and isinstance(b, TypeCall) and a.func == b.func:
        return TypeCall(a.func, tuple(join(x, y) for x, y in zip(a.args, b.args)))
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.fields) == len(b.fields):
        return TupleType(tuple(join(x, y) for x, y in zip(a.fields, b.fields)))
    if str(a) == str(b):
        return a
    raise Unsupported(f"values of types {pretty(a)} and {pretty(b)} cannot share a sequence or "
                      f"a loop variable")


def _differs(src: Type, dst: Type) -> bool:
    """Whether values of type ``src`` need a conversion (not only a type with more ``?``) to
    have type ``dst``: a tensor that becomes a union member, a value that becomes ``Some``."""
    if isinstance(src, IncompleteType) or isinstance(dst, IncompleteType):
        return False
    if isinstance(src, TensorType):
        return not isinstance(dst, TensorType)
    if is_option(dst) and not is_option(src):
        return True
    if isinstance(src, TypeCall) and isinstance(dst, TypeCall):
        return any(_differs(x, y) for x, y in zip(src.args, dst.args))
    if isinstance(src, TupleType) and isinstance(dst, TupleType):
        return any(_differs(x, y) for x, y in zip(src.fields, dst.fields))
    return False


def _has_union(t: Type) -> bool:
    if union_dtype(t) is not None:
        return True
    if isinstance(t, TypeCall):
        return any(_has_union(x) for x in t.args)
    return isinstance(t, TupleType) and any(_has_union(x) for x in t.fields)


def _undeclared(v: Value) -> bool:
    """Whether ``v`` is a graph input whose elements' shape the model does not declare."""
    unions = _UNIONS.get()
    return unions is not None and isinstance(v.expr_, Var) and id(v.expr_) in unions.undeclared


def conform(v: Value, dst: Type) -> Value:
    """``v`` as a value of the joined type ``dst``: tensors wrapped in their rank's
    constructor, plain values in ``Some``, lists and optionals converted element-wise (a
    recursive function), tuples field by field. ``v`` itself when only dims differ."""
    src = v.type
    if not _differs(src, dst):
        if _undeclared(v) and _has_union(dst):
            raise Unsupported("a graph input sequence whose element shape is not declared "
                              "meets elements of another rank: declare the shape of its "
                              "elements, from_onnx(..., shapes={name: (d0, d1, ...)})")
        return v
    if is_option(dst) and not is_option(src):
        inner = conform(v, elem_type(dst))
        return Value(dst, Call(ctor("Some"), (inner.expr,), type_args=(elem_type(dst),)))
    if isinstance(src, TensorType):
        dtype = union_dtype(dst)
        if dtype is None or dtype != src.dtype:
            raise Unsupported(f"a value of type {pretty(src)} cannot have type {pretty(dst)}")
        unions = _UNIONS.get()
        assert unions is not None
        return Value(dst, Call(unions.ctor(dtype, src.ndim), (v.expr,)))
    if isinstance(src, TupleType) and isinstance(dst, TupleType):
        fields = [conform(project(v, i), t) for i, t in enumerate(dst.fields)]
        return Value(dst, Tuple(tuple(f.expr for f in fields)))
    if is_list(src) and is_list(dst):
        return _map_list(v, elem_type(dst))
    if is_option(src) and is_option(dst):
        x = Var("x", elem_type(src))
        some = Call(ctor("Some"), (conform(Value(elem_type(src), x), elem_type(dst)).expr,),
                    type_args=(elem_type(dst),))
        none = Call(ctor("None"), (), type_args=(elem_type(dst),))
        return Value(dst, Match(v.expr, (
            Clause(PatternConstructor(ctor("Some"), (PatternVar(x),)), some),
            Clause(PatternConstructor(ctor("None"), ()), none))))
    raise Unsupported(f"a value of type {pretty(src)} cannot have type {pretty(dst)}")


def _map_list(v: Value, dst_elem: Type) -> Value:
    """The list ``v`` with each element conformed to ``dst_elem``: a let-bound recursion."""
    src_t, dst_t = v.type, list_type(dst_elem)
    xs, h, t = Var("xs", src_t), Var("h", elem_type(src_t)), Var("t", src_t)
    f = Var("conform_seq", FuncType((src_t,), dst_t))
    head = conform(Value(elem_type(src_t), h), dst_elem)
    body = Match(xs, (
        Clause(PatternConstructor(ctor("Cons"), (PatternVar(h), PatternVar(t))),
               Call(ctor("Cons"), (head.expr, Call(f, (t,))), type_args=(dst_elem,))),
        Clause(PatternConstructor(ctor("Nil"), ()),
               Call(ctor("Nil"), (), type_args=(dst_elem,)))))
    return Value(dst_t, Let(f, Function((xs,), body, dst_t), Call(f, (v.expr,))))


def unwrap(v: Value, rank: int) -> Value:
    """The tensor inside ``v`` (of a rank union), which holds rank ``rank``: a ``match``."""
    dtype = union_dtype(v.type)
    unions = _UNIONS.get()
    assert dtype is not None and unions is not None
    c = unions.ctor(dtype, rank)
    x = Var("x", c.inputs[0])
    return Value(c.inputs[0], Match(v.expr, (Clause(PatternConstructor(c, (PatternVar(x),)),
                                                    x),), False))


# --- building lists ------------------------------------------------------------------------

def nil(elem: Type) -> Value:
    args = (elem,) if is_complete(elem) else ()
    return Value(list_type(elem), Call(ctor("Nil"), (), type_args=args))


def cons(head: Value, tail: Value) -> Value:
    elem = join(head.type, elem_type(tail))
    head, tail = conform(head, elem), conform(tail, list_type(elem))
    return Value(list_type(elem), Call(ctor("Cons"), (head.expr, tail.expr), type_args=(elem,)))


def some(v: Value) -> Value:
    return Value(option_type(v.type), Call(ctor("Some"), (v.expr,), type_args=(v.type,)))


def from_values(vals: list[Value], elem: Type | None = None) -> Value:
    """The list of ``vals`` (a static length), typed with the join of their types; its
    ``ranks`` are the elements' ranks."""
    t: Type = elem if elem is not None else IncompleteType()
    for v in vals:
        t = join(t, v.type)
    acc = nil(t)
    for v in reversed(vals):
        acc = Value(list_type(t), Call(ctor("Cons"), (conform(v, t).expr, acc.expr),
                                       type_args=(t,)))
    acc.ranks = tuple(v.ndim if isinstance(v.type, TensorType) else -1 for v in vals)
    return acc
