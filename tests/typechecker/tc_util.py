"""Helpers shared by the type checker's tests: parsing shortcuts, error expectations, and
``value_has_type`` (the soundness check: does a runtime value inhabit a type?)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import sympy

from semantics import parse, parse_expr, parse_type, pretty, types_equal
from semantics.errors import RelayTypeError
from semantics.expr import Constructor, Var
from semantics.module import IRModule
from semantics.shapes import ANY
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeVar,
)
from typechecker import check, infer, type_of

__all__ = ["assert_type", "expect_type_error", "module_types", "ty", "value_has_type",
           "check", "infer", "type_of", "parse", "parse_expr", "pretty", "Var"]


def ty(text: str) -> Type:
    return parse_type(text)


def assert_type(expr: Any, expected: str, mod: IRModule | None = None) -> Type:
    """``type_of(expr)`` equals the type written ``expected`` (dims compared symbolically)."""
    t = type_of(expr, mod)
    want = parse_type(expected)
    assert types_equal(t, want), f"got {pretty(t)}, expected {expected}"
    return t


def expect_type_error(fn: Any, *args: Any, prefix: str, rule: str | None = None,
                      contains: tuple[str, ...] = ()) -> RelayTypeError:
    """Run ``fn(*args)``; it must raise a RelayTypeError whose message starts with ``prefix``."""
    with pytest.raises(RelayTypeError) as info:
        fn(*args)
    err = info.value
    assert err.message.startswith(prefix), err.message
    if rule is not None:
        assert rule in err.message, err.message
        assert err.code == rule, (err.code, err.message)
    for part in contains:
        assert part in err.message, (part, err.message)
    return err


def module_types(text: str) -> dict[str, str]:
    """Parse a module and return ``{global: printed type}`` for the globals it defines."""
    from typechecker.api import global_types

    mod = parse(text)
    types = global_types(mod)
    return {name: pretty(t) for name, t in types.items()}


# --- soundness: values inhabit types ----------------------------------------------------------

def value_has_type(value: Any, t: Type, mod: IRModule | None = None,
                   dims: dict[str, int] | None = None) -> bool:
    """Does the runtime ``value`` have type ``t``?

    Tensors must have exactly the dtype and rank; concrete dims must match, ``?``
    matches anything, a shape variable is bound at its first occurrence and must agree
    afterwards (``dims`` holds the bindings), and an arithmetic dim is evaluated under
    them. Tuples, ADT values (constructor of the ADT, fields of the instantiated field
    types), references (their current contents) are checked recursively; closures,
    operators and constructor functions inhabit function types.
    """
    from interpreter import Closure, ConstructorValue, RefValue
    from interpreter.values import ConstructorFunction, OpValue

    dims = {} if dims is None else dims
    stack: list[tuple[Any, Type, dict[Any, Type]]] = [(value, t, {})]
    while stack:
        v, u, tvars = stack.pop()
        if isinstance(u, TypeVar):
            if u in tvars:
                u = tvars[u]
            else:
                continue
        if isinstance(u, TensorType):
            if not isinstance(v, np.ndarray) or v.dtype.name != u.dtype or v.ndim != len(u.shape):
                return False
            for d, n in zip(u.shape, v.shape, strict=False):
                if not _dim_matches(d, int(n), dims):
                    return False
        elif isinstance(u, TupleType):
            if not isinstance(v, tuple) or len(v) != len(u.fields):
                return False
            stack.extend((x, f, tvars) for x, f in zip(v, u.fields, strict=False))
        elif isinstance(u, FuncType):
            if not isinstance(v, (Closure, OpValue, ConstructorFunction)):
                return False
        elif isinstance(u, RefType):
            if not isinstance(v, RefValue):
                return False
            stack.append((v.value, u.value, tvars))
        elif isinstance(u, (TypeCall, GlobalTypeVar)):
            func = u.func if isinstance(u, TypeCall) else u
            args = u.args if isinstance(u, TypeCall) else ()
            if not isinstance(v, ConstructorValue):
                return False
            td = _adt(func.name, mod, v)
            if td is None:
                return False
            ctor = next((c for c in td.constructors if c.name == v.name), None)
            if ctor is None or len(ctor.inputs) != len(v.fields):
                return False
            inner = dict(zip(td.type_vars, args, strict=False))
            stack.extend((x, _subst(f, inner), tvars)
                         for x, f in zip(v.fields, ctor.inputs, strict=True))
        elif isinstance(u, IncompleteType):
            return False
        else:
            return False
    return True


def _subst(t: Type, mapping: dict[Any, Type]) -> Type:
    from typechecker.unify import substitute

    return substitute(t, mapping, {})


def _adt(name: str, mod: IRModule | None, v: Any) -> TypeData | None:
    if mod is not None and name in mod.types:
        return mod.types[name]
    ctor = getattr(v, "constructor", None)
    if isinstance(ctor, Constructor) and ctor.belong_to.name == name:
        from semantics.prelude import prelude_module

        prelude = prelude_module()
        if name in prelude.types:
            return prelude.types[name]
    from semantics.prelude import prelude_module

    return prelude_module().types.get(name)


def _dim_matches(d: Any, n: int, dims: dict[str, int]) -> bool:
    if d is ANY:
        return True
    if isinstance(d, int):
        return d == n
    if isinstance(d, sympy.Symbol):
        if d.name in dims:
            return dims[d.name] == n
        dims[d.name] = n
        return True
    free = {s.name for s in d.free_symbols}
    if not free <= set(dims):
        return True
    value = d.subs({sympy.Symbol(k, integer=True, nonnegative=True): v for k, v in dims.items()})
    return value == n
