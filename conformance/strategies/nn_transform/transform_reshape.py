"""Valid/invalid call strategies of the shape-changing ``transform`` operators.

``reshape`` (codes 0, -1, -2, -3, -4 derived from the input shape), ``reshape_like``,
``transpose``, ``expand_dims``, ``squeeze``, ``concatenate``, ``stack`` and ``split``.
Importing this module registers them into :mod:`conformance.strategies.ops`'s tables.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from conformance.strategies import ops as O
from conformance.strategies.nn_transform.common import (
    ALL,
    NOT_A_TENSOR,
    CallArgs,
    SearchStrategy,
    T,
    _generic_bad,
    _maybe,
    dtypes,
    shapes,
)
from semantics.types import TupleType

# --- transform: reshape, reshape_like ------------------------------------------------------------

def _factorizations(total: int, parts: int) -> list[list[int]]:
    """Ordered factorizations of ``total`` into ``parts`` positive factors (total > 0)."""
    if parts == 0:
        return [[]] if total == 1 else []
    out = []
    for f in range(1, total + 1):
        if total % f == 0:
            out += [[f] + rest for rest in _factorizations(total // f, parts - 1)]
    return out


@st.composite
def _target_shape(draw: st.DrawFn, total: int) -> list[int]:
    """A shape with ``total`` elements (rank <= 4)."""
    if total == 0:
        s = draw(shapes(min_rank=1, max_rank=3, max_dim=3))
        i = draw(st.integers(0, len(s) - 1))
        return [0 if j == i else d for j, d in enumerate(s)]
    parts = draw(st.integers(0 if total == 1 else 1, 4))
    choices = _factorizations(total, parts)
    return draw(st.sampled_from(choices))


@st.composite
def reshape_call(draw: st.DrawFn) -> CallArgs:
    s = list(draw(shapes(max_dim=4)))
    total = math.prod(s)
    if draw(st.booleans()):                    # literal target, maybe one -1
        target = draw(_target_shape(total))
        nonzero = [i for i, d in enumerate(target) if d]
        if total and nonzero and draw(st.booleans()):
            target[draw(st.sampled_from(nonzero))] = -1
        attrs: dict[str, Any] = {"newshape": target}
        if 0 in target and draw(st.booleans()):
            attrs["allowzero"] = True
        elif 0 in target:
            attrs["allowzero"] = 1
        return (T(s, draw(dtypes(ALL))),), attrs
    codes: list[int] = []                       # codes derived by walking the input dims
    src = 0
    inferred = False
    while src < len(s):
        action = draw(st.sampled_from(("copy", "merge", "split", "rest", "literal", "infer")))
        d = s[src]
        if action == "merge" and src + 1 < len(s):
            codes.append(-3)
            src += 2
        elif action == "split" and d > 0:
            a = draw(st.sampled_from([f for f in range(1, d + 1) if d % f == 0]))
            form = draw(st.sampled_from(("left", "right", "both")))
            codes += [-4] + ([a, -1] if form == "left" else [-1, a] if form == "right"
                             else [a, d // a])
            src += 1
        elif action == "rest":
            codes.append(-2)
            src = len(s)
        elif action == "infer" and not inferred:
            codes.append(-1)
            inferred = True
            src += 1
        elif action == "literal" and d > 0:
            codes.append(d)
            src += 1
        else:
            codes.append(0)
            src += 1
    codes += [1] * draw(st.integers(0, 2))
    return (T(s, draw(dtypes(ALL))),), {"newshape": codes}


@O.register_valid_call("reshape")
def _reshape_valid() -> SearchStrategy:
    return reshape_call()


@st.composite
def _reshape_bad(draw: st.DrawFn) -> CallArgs:
    kind = draw(st.sampled_from(("total", "two_infer", "merge", "code", "copy", "split",
                                 "not_ints")))
    x = T((2, 3, 4), "float32")
    newshape = {"total": [5, 5], "two_infer": [-1, -1], "merge": [2, 3, -3],
                "code": [-5, 24], "copy": [24, 1, 1, 0], "split": [-4, 5, -1, 4],
                "not_ints": "24"}[kind]
    return (x,), {"newshape": newshape}


@O.register_invalid_call("reshape")
def _reshape_invalid() -> SearchStrategy:
    return st.one_of(_reshape_bad(), *_generic_bad(reshape_call()))


@st.composite
def reshape_like_call(draw: st.DrawFn) -> CallArgs:
    s = list(draw(shapes(max_dim=4)))
    lb = draw(st.integers(0, len(s)))
    le = draw(st.integers(lb, len(s)))
    middle = draw(_target_shape(math.prod(s[lb:le])))
    prefix = list(draw(shapes(max_rank=1, max_dim=3)))
    suffix = list(draw(shapes(max_rank=1, max_dim=3)))
    like = prefix + middle + suffix
    attrs: dict[str, Any] = {}
    whole = lb == 0 and le == len(s) and not prefix and not suffix
    if not whole or draw(st.booleans()):
        if le < len(s) and draw(st.booleans()):
            lhs_end: int | None = le - len(s)            # negative form
        else:
            lhs_end = None if le == len(s) and draw(st.booleans()) else le
        attrs = {"lhs_begin": lb, "lhs_end": lhs_end,
                 "rhs_begin": len(prefix), "rhs_end": len(prefix) + len(middle)}
    d = draw(dtypes(ALL))
    return (T(s, d), T(like, draw(dtypes(ALL)))), attrs


@O.register_valid_call("reshape_like")
def _reshape_like_valid() -> SearchStrategy:
    return reshape_like_call()


@O.register_invalid_call("reshape_like")
def _reshape_like_invalid() -> SearchStrategy:
    return st.one_of(
        st.just(((T((2, 3), "float32"), T((7,), "float32")), {})),
        st.just(((T((2, 3), "float32"), T((6,), "float32")), {"lhs_begin": 3})),
        st.just(((T((2, 3), "float32"), T((6,), "float32")), {"rhs_end": 5})),
        *_generic_bad(reshape_like_call()))


# --- transform: transpose, expand_dims, squeeze --------------------------------------------------

@st.composite
def transpose_call(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes())
    if len(s) > 1 and draw(st.booleans()):
        # Square half of the time: a wrong permutation then still type-checks, and only
        # the values tell it apart.
        s = (s[0],) * len(s)
    x = T(s, draw(dtypes(ALL)))
    if draw(st.integers(0, 3)) == 0:
        # The default (all axes reversed) a quarter of the time: the elementwise producers
        # of the generator already call transpose without attributes.
        return (x,), ({"axes": None} if draw(st.booleans()) else {})
    perm = draw(st.permutations(list(range(len(s)))))
    return (x,), {"axes": [a - len(s) if draw(st.booleans()) else a for a in perm]}


@O.register_valid_call("transpose")
def _transpose_valid() -> SearchStrategy:
    return transpose_call()


@O.register_invalid_call("transpose")
def _transpose_invalid() -> SearchStrategy:
    x = T((2, 3, 4), "float32")
    return st.one_of(st.sampled_from((((x,), {"axes": [0, 1]}), ((x,), {"axes": [0, 1, 1]}),
                                      ((x,), {"axes": [0, 1, 3]}), ((x,), {"axes": "012"}))),
                     *_generic_bad(transpose_call()))


@st.composite
def expand_dims_call(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes(max_rank=3))
    attrs: dict[str, Any] = {"axis": draw(st.integers(-len(s) - 1, len(s)))}
    _maybe(draw, attrs, "num_newaxis", draw(st.integers(0, 2)), 1)
    return (T(s, draw(dtypes(ALL))),), attrs


@O.register_valid_call("expand_dims")
def _expand_dims_valid() -> SearchStrategy:
    return expand_dims_call()


@O.register_invalid_call("expand_dims")
def _expand_dims_invalid() -> SearchStrategy:
    x = T((2, 3), "float32")
    return st.one_of(st.sampled_from((((x,), {"axis": 3}), ((x,), {"axis": -4}), ((x,), {}),
                                      ((x,), {"axis": 0, "num_newaxis": -1}))),
                     *_generic_bad(expand_dims_call()))


@st.composite
def squeeze_call(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes(max_dim=3))
    ones = [i for i, d in enumerate(s) if d == 1]
    x = T(s, draw(dtypes(ALL)))
    if draw(st.booleans()):
        return (x,), ({"axis": None} if draw(st.booleans()) else {})
    chosen = draw(st.lists(st.sampled_from(ones), unique=True) if ones else st.just([]))
    return (x,), {"axis": [a - len(s) if draw(st.booleans()) else a for a in chosen]}


@O.register_valid_call("squeeze")
def _squeeze_valid() -> SearchStrategy:
    return squeeze_call()


@O.register_invalid_call("squeeze")
def _squeeze_invalid() -> SearchStrategy:
    x = T((2, 1, 3), "float32")
    return st.one_of(st.sampled_from((((x,), {"axis": [0]}), ((x,), {"axis": [3]}),
                                      ((x,), {"axis": [-4]}), ((x,), {"axis": ["1"]}))),
                     *_generic_bad(squeeze_call()))


# --- transform: concatenate, stack, split --------------------------------------------------------

@st.composite
def concatenate_call(draw: st.DrawFn) -> CallArgs:
    s = list(draw(shapes(min_rank=1, max_rank=3, max_dim=3)))
    d = draw(dtypes(ALL))
    attrs: dict[str, Any] = {}
    if draw(st.booleans()):
        axis = 0
    else:
        axis = attrs["axis"] = draw(st.integers(-len(s), len(s) - 1))
    fields = []
    for _ in range(draw(st.integers(1, 3))):
        part = list(s)
        part[axis] = draw(st.integers(0, 3))
        fields.append(T(part, d))
    return (TupleType(tuple(fields)),), attrs


@O.register_valid_call("concatenate")
def _concatenate_valid() -> SearchStrategy:
    return concatenate_call()


@O.register_invalid_call("concatenate")
def _concatenate_invalid() -> SearchStrategy:
    a, b = T((2, 3), "float32"), T((2, 4), "float32")
    return st.sampled_from((
        ((TupleType((a, b)),), {"axis": 0}),
        ((TupleType((a, T((2, 3), "int32"))),), {"axis": 0}),
        ((TupleType((a, T((2, 3, 1), "float32"))),), {"axis": 0}),
        ((TupleType((a, b)),), {"axis": 2}),
        ((TupleType(()),), {}),
        ((a,), {}),
        ((TupleType((a,)), TupleType((a,))), {}),
        ((TupleType((a, NOT_A_TENSOR)),), {}),
        ((TupleType((T((), "float32"),)),), {}),
    ))


@st.composite
def stack_call(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes(max_rank=3, max_dim=3))
    d = draw(dtypes(ALL))
    count = draw(st.integers(1, 3))
    attrs: dict[str, Any] = {}
    _maybe(draw, attrs, "axis", draw(st.integers(-len(s) - 1, len(s))), 0)
    return (TupleType(tuple(T(s, d) for _ in range(count))),), attrs


@O.register_valid_call("stack")
def _stack_valid() -> SearchStrategy:
    return stack_call()


@O.register_invalid_call("stack")
def _stack_invalid() -> SearchStrategy:
    a = T((2, 3), "float32")
    return st.sampled_from((
        ((TupleType((a, T((3, 2), "float32"))),), {}),
        ((TupleType((a, T((2, 3), "int8"))),), {}),
        ((TupleType((a, a)),), {"axis": 3}),
        ((TupleType((a, a)),), {"axis": -4}),
        ((TupleType(()),), {}),
        ((a,), {}),
    ))


@st.composite
def split_call(draw: st.DrawFn) -> CallArgs:
    s = list(draw(shapes(min_rank=1, max_rank=3)))
    attrs: dict[str, Any] = {}
    if draw(st.booleans()):
        axis = 0
    else:
        axis = attrs["axis"] = draw(st.integers(-len(s), len(s) - 1))
    d = s[axis]
    if draw(st.booleans()):
        spec: Any = draw(st.sampled_from([k for k in range(1, 6) if d % k == 0]))
    else:
        spec = sorted(draw(st.sets(st.integers(1, d - 1), max_size=3))) if d > 1 else []
    attrs["indices_or_sections"] = spec
    return (T(s, draw(dtypes(ALL))),), attrs


@O.register_valid_call("split")
def _split_valid() -> SearchStrategy:
    return split_call()


@O.register_invalid_call("split")
def _split_invalid() -> SearchStrategy:
    x = T((6, 4), "float32")
    return st.one_of(st.sampled_from((
        ((x,), {"indices_or_sections": 4}),
        ((x,), {"indices_or_sections": 0}),
        ((x,), {"indices_or_sections": [3, 2]}),
        ((x,), {"indices_or_sections": [0, 2]}),
        ((x,), {"indices_or_sections": [2, 6]}),
        ((x,), {"indices_or_sections": 2, "axis": 2}),
        ((T((), "float32"),), {"indices_or_sections": 1}),
        ((x,), {}),
    )), *_generic_bad(split_call()))
