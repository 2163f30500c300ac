"""Strategies for dtypes, shapes and well-kinded types (RULES.md §Kinding).

* :func:`dtypes` — every scalar dtype of §3 (optionally with lanes);
* :func:`dims` / :func:`shapes` — concrete (``int``), unknown (``ANY``) and
  symbolic dims (``n``, ``2*n``, ``n + 1`` over :func:`semantics.shapes.shape_var`);
* :func:`concrete_shapes` — small shapes for runtime values;
* :func:`well_kinded_types` — types of every form (tensor, tuple, function
  with type parameters, ``Ref``, ``TypeCall`` of a given ADT) that are well
  kinded in a context of type variables and ADT definitions: a type variable
  only appears where it is bound, a type call applies an ADT to exactly as
  many arguments as it has parameters.

Generation is bounded by ``max_depth`` (types are shallow; the bounded Python
recursion here never depends on user input). Choices are ordered so that
Hypothesis shrinks towards ``int32`` scalars.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from hypothesis import strategies as st

from conformance.strategies.names import SHAPE_VAR_POOL, pick, type_var_names, unique_name
from semantics.dtypes import FLOAT_DTYPES, INT_DTYPES, SCALAR_DTYPES, UINT_DTYPES
from semantics.shapes import ANY, shape_var
from semantics.types import (
    FuncType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeVar,
)

# int32 first: shrinking goes there.
ORDERED_DTYPES = ("int32", "bool", "float32", *(d for d in SCALAR_DTYPES
                                                 if d not in ("int32", "bool", "float32")))
INTEGER_DTYPES = INT_DTYPES + UINT_DTYPES


def dtypes(*, lanes: bool = False, only: Sequence[str] | None = None) -> st.SearchStrategy[str]:
    """A dtype name. ``lanes=True`` sometimes adds lanes (``float32x4``); ``only`` restricts."""
    base = st.sampled_from(tuple(only) if only else ORDERED_DTYPES)
    if not lanes:
        return base
    return st.one_of(base, st.builds(lambda d, n: f"{d}x{n}", st.sampled_from(
        ("float32", "int8", "int32")), st.sampled_from((2, 4, 8))))


def float_dtypes() -> st.SearchStrategy[str]:
    return st.sampled_from(("float32",) + tuple(d for d in FLOAT_DTYPES if d != "float32"))


def symbolic_dims(names: Sequence[str] = SHAPE_VAR_POOL) -> st.SearchStrategy[sympy.Expr]:
    """``n``, ``2*n``, ``n + 1``, ``n*m`` over shape variables named from ``names``."""
    var = st.sampled_from(tuple(names)).map(shape_var)
    return st.one_of(
        var,
        st.builds(lambda v, c: c * v, var, st.integers(2, 4)),
        st.builds(lambda v, c: v + c, var, st.integers(1, 3)),
        st.builds(lambda a, b: a * b, var, var),
    )


def dims(*, symbolic: bool = True, any_dim: bool = True, max_size: int = 4
         ) -> st.SearchStrategy[object]:
    """A dimension: an int in ``[0, max_size]`` mostly, sometimes ``?`` or a symbolic expression."""
    options: list[st.SearchStrategy[object]] = [st.integers(0, max_size)]
    if any_dim:
        options.append(st.just(ANY))
    if symbolic:
        options.append(symbolic_dims())
    return st.one_of(*options)


def shapes(*, max_rank: int = 3, symbolic: bool = True, any_dim: bool = True,
           max_size: int = 4) -> st.SearchStrategy[tuple]:
    """A shape (tuple of dims) of rank at most ``max_rank``."""
    return st.lists(dims(symbolic=symbolic, any_dim=any_dim, max_size=max_size),
                    max_size=max_rank).map(tuple)


def concrete_shapes(*, max_rank: int = 2, max_size: int = 3, min_size: int = 0
                    ) -> st.SearchStrategy[tuple[int, ...]]:
    """A concrete shape for runtime values (small: every element is cheap to evaluate)."""
    return st.lists(st.integers(min_size, max_size), max_size=max_rank).map(tuple)


def tensor_types(*, dtype: st.SearchStrategy[str] | None = None, symbolic: bool = True,
                 any_dim: bool = True, max_rank: int = 3) -> st.SearchStrategy[TensorType]:
    return st.builds(TensorType, shapes(max_rank=max_rank, symbolic=symbolic, any_dim=any_dim),
                     dtype if dtype is not None else dtypes(lanes=True))


_TENSOR_TYPES: dict[tuple[bool, bool], st.SearchStrategy[TensorType]] = {}


def _tensor_types_cached(symbolic: bool, any_dim: bool) -> st.SearchStrategy[TensorType]:
    key = (symbolic, any_dim)
    if key not in _TENSOR_TYPES:
        _TENSOR_TYPES[key] = tensor_types(symbolic=symbolic, any_dim=any_dim)
    return _TENSOR_TYPES[key]


@st.composite
def well_kinded_types(draw: st.DrawFn, *, type_vars: Sequence[TypeVar] = (),
                      adts: Sequence[TypeData] = (), max_depth: int = 3, symbolic: bool = True,
                      any_dim: bool = True, functions: bool = True, refs: bool = True) -> Type:
    """A well-kinded type over ``type_vars`` (in scope) and the ADTs ``adts``.

    Function types may bind their own type parameters (fresh :class:`TypeVar`
    objects named from a pool disjoint from ADT and constructor names).
    """
    return _type(draw, list(type_vars), list(adts), max_depth, symbolic, any_dim, functions, refs)


def _type(draw: st.DrawFn, tvars: list[TypeVar], adts: list[TypeData], depth: int,
          symbolic: bool, any_dim: bool, functions: bool, refs: bool) -> Type:
    kinds = ["tensor"]
    if tvars:
        kinds.append("var")
    if depth > 0:
        kinds.append("tuple")
        if functions:
            kinds.append("func")
        if refs:
            kinds.append("ref")
        if adts:
            kinds.append("call")
    elif adts and any(not td.type_vars for td in adts):
        kinds.append("call")
    kind = pick(draw, kinds)
    sub = depth - 1
    if kind == "tensor":
        return draw(_tensor_types_cached(symbolic, any_dim))
    if kind == "var":
        return pick(draw, tvars)
    if kind == "tuple":
        n = draw(st.integers(0, 3))
        return TupleType(tuple(_type(draw, tvars, adts, sub, symbolic, any_dim, functions, refs)
                               for _ in range(n)))
    if kind == "ref":
        return RefType(_type(draw, tvars, adts, sub, symbolic, any_dim, functions, refs))
    if kind == "call":
        choices = adts if depth > 0 else [td for td in adts if not td.type_vars]
        td = pick(draw, choices)
        args = tuple(_type(draw, tvars, adts, max(sub, 0), symbolic, any_dim, functions, refs)
                     for _ in td.type_vars)
        return TypeCall(td.header, args) if td.type_vars else td.header
    # function type, possibly polymorphic
    taken = {tv.name for tv in tvars} | {td.header.name for td in adts}
    params = [TypeVar(unique_name(draw(type_var_names()), taken), Kind.Type)
              for _ in range(draw(st.integers(0, 2)))]
    inner = tvars + params
    n = draw(st.integers(0, 2))
    args = tuple(_type(draw, inner, adts, sub, symbolic, any_dim, functions, refs)
                 for _ in range(n))
    ret = _type(draw, inner, adts, sub, symbolic, any_dim, functions, refs)
    return FuncType(args, ret, tuple(params))
