"""Small, exact type utilities for the generator's *closed* type language.

The well-typed generator works with concrete types only (tensor shapes are
tuples of ints) plus the type parameters of the polymorphic functions it
builds (:class:`TypeVar`, identity-compared). Over that language type
equality is syntactic, so a canonical string (:func:`type_key`) decides it and
indexes the variables in scope by type. :func:`match_type` is one-way matching
(a pattern with type variables against a type), used to instantiate a
polymorphic global for a wanted result type; :func:`substitute` applies the
result. Types are shallow (the generator bounds their depth), so these
functions recurse on types; they never recurse on expressions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import numpy as np
import sympy

from semantics.types import (
    FuncType,
    GlobalTypeVar,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeVar,
)


def type_key(t: Type) -> str:
    """A canonical string: equal keys iff equal types (for the generator's type language)."""
    if isinstance(t, TensorType):
        return f"T[{','.join(str(d) for d in t.shape)}|{t.dtype}]"
    if isinstance(t, TupleType):
        return "(" + ",".join(type_key(f) for f in t.fields) + ")"
    if isinstance(t, FuncType):
        tps = "<" + ",".join(f"{p.name}#{id(p)}" for p in t.type_params) + ">" \
            if t.type_params else ""
        return "fn" + tps + "(" + ",".join(type_key(a) for a in t.arg_types) + ")->" + \
            type_key(t.ret_type)
    if isinstance(t, RefType):
        return "Ref[" + type_key(t.value) + "]"
    if isinstance(t, TypeCall):
        return t.func.name + "[" + ",".join(type_key(a) for a in t.args) + "]"
    if isinstance(t, GlobalTypeVar):
        return t.name
    if isinstance(t, TypeVar):
        return f"'{t.name}#{id(t)}"
    raise TypeError(f"type_key: unexpected type {type(t).__name__}")


def substitute(t: Type, mapping: Mapping[int, Type]) -> Type:
    """``t`` with every type variable ``v`` (by identity) in ``mapping`` replaced."""
    if not mapping:
        return t
    if isinstance(t, TypeVar):
        return mapping.get(id(t), t)
    if isinstance(t, TupleType):
        return TupleType(tuple(substitute(f, mapping) for f in t.fields))
    if isinstance(t, FuncType):
        return FuncType(tuple(substitute(a, mapping) for a in t.arg_types),
                        substitute(t.ret_type, mapping), t.type_params)
    if isinstance(t, RefType):
        return RefType(substitute(t.value, mapping))
    if isinstance(t, TypeCall):
        return TypeCall(t.func, tuple(substitute(a, mapping) for a in t.args))
    return t


def match_type(pattern: Type, target: Type, params: set[int], out: dict[int, Type]) -> bool:
    """One-way matching: bind the variables ``params`` (ids) in ``pattern`` so it equals ``target``.

    Returns False (``out`` may be partially filled) when no binding exists.
    """
    if isinstance(pattern, TypeVar) and id(pattern) in params:
        bound = out.get(id(pattern))
        if bound is None:
            out[id(pattern)] = target
            return True
        return type_key(bound) == type_key(target)
    if isinstance(pattern, TupleType) and isinstance(target, TupleType):
        return len(pattern.fields) == len(target.fields) and all(
            match_type(p, q, params, out)
            for p, q in zip(pattern.fields, target.fields, strict=True))
    if isinstance(pattern, FuncType) and isinstance(target, FuncType):
        return len(pattern.arg_types) == len(target.arg_types) and all(
            match_type(p, q, params, out)
            for p, q in zip(pattern.arg_types, target.arg_types, strict=True)) and \
            match_type(pattern.ret_type, target.ret_type, params, out)
    if isinstance(pattern, RefType) and isinstance(target, RefType):
        return match_type(pattern.value, target.value, params, out)
    if isinstance(pattern, TypeCall) and isinstance(target, TypeCall):
        return pattern.func.name == target.func.name and len(pattern.args) == len(
            target.args) and all(match_type(p, q, params, out)
                                 for p, q in zip(pattern.args, target.args, strict=True))
    if type(pattern) is not type(target):
        return False
    return type_key(pattern) == type_key(target)


def is_first_order(t: Type) -> bool:
    """No function type anywhere inside ``t`` (references may hold only such types)."""
    if isinstance(t, FuncType):
        return False
    if isinstance(t, TupleType):
        return all(is_first_order(f) for f in t.fields)
    if isinstance(t, RefType):
        return is_first_order(t.value)
    if isinstance(t, TypeCall):
        return all(is_first_order(a) for a in t.args)
    return True


def has_type_var(t: Type) -> bool:
    if isinstance(t, TypeVar):
        return True
    if isinstance(t, TupleType):
        return any(has_type_var(f) for f in t.fields)
    if isinstance(t, FuncType):
        return any(has_type_var(a) for a in t.arg_types) or has_type_var(t.ret_type)
    if isinstance(t, RefType):
        return has_type_var(t.value)
    if isinstance(t, TypeCall):
        return any(has_type_var(a) for a in t.args)
    return False


def has_ref(t: Type) -> bool:
    if isinstance(t, RefType):
        return True
    if isinstance(t, TupleType):
        return any(has_ref(f) for f in t.fields)
    if isinstance(t, TypeCall):
        return any(has_ref(a) for a in t.args)
    if isinstance(t, FuncType):
        return False
    return False


def adt_instance(td: TypeData, args: tuple[Type, ...]) -> Type:
    """The type of ``td`` applied to ``args`` (the bare header when it has no parameters)."""
    return TypeCall(td.header, args) if td.type_vars else td.header


def ctor_field_types(td: TypeData, ctor_index: int, args: tuple[Type, ...]) -> tuple[Type, ...]:
    """The field types of constructor ``ctor_index`` of ``td`` instantiated at ``args``."""
    mapping = {id(v): a for v, a in zip(td.type_vars, args, strict=False)}
    return tuple(substitute(t, mapping) for t in td.constructors[ctor_index].inputs)


def adt_args(t: Type) -> tuple[str, tuple[Type, ...]] | None:
    """``(adt name, type arguments)`` when ``t`` is an ADT type, else None."""
    if isinstance(t, TypeCall):
        return t.func.name, t.args
    if isinstance(t, GlobalTypeVar):
        return t.name, ()
    return None


def int_shape(t: TensorType) -> tuple[int, ...]:
    """The dims of a tensor type whose shape is concrete (every generated type's is).

    Raises:
        ValueError: a dim is ``?`` or symbolic.
    """
    dims: list[int] = []
    for d in t.shape:
        if isinstance(d, int):
            dims.append(d)
        elif isinstance(d, sympy.Integer):
            dims.append(int(d))
        else:
            raise ValueError(f"not a concrete shape: {type_key(t)}")
    return tuple(dims)


def float_width(dtype: np.dtype) -> Literal[16, 32, 64]:
    """The bit width of a float dtype, as Hypothesis's ``floats(width=...)`` wants it."""
    size = dtype.itemsize
    return 16 if size == 2 else 32 if size == 4 else 64
