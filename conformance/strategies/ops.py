"""Strategies for single operator calls: valid and invalid argument types/attributes, inputs.

Used by the operator tests (relation soundness: the reference's output has the type the
relation infers; invalid calls are rejected with ``RelayTypeError``) and by the program
generator, which needs operator calls with valid attributes.

The tables
----------
Three registries keyed by operator name; each family registers its own operators:

* ``VALID_CALLS[name]() -> SearchStrategy[(arg_types, attrs)]`` — argument types (concrete
  ``TensorType`` s) and attributes *as written in a call* (lists, ints, ...) that the
  operator's relation accepts;
* ``INVALID_CALLS[name]() -> SearchStrategy[(arg_types, attrs)]`` — calls that
  ``normalize_attrs`` or the relation must reject with ``RelayTypeError`` (mismatched dtypes,
  shapes that do not broadcast, axes out of range, bad attribute values, ...);
* ``INPUTS[name](arg_types, attrs, exact) -> SearchStrategy[tuple[np.ndarray, ...]]`` —
  optional: argument arrays for a valid call that do not trap at run time (nonzero integer
  divisors, sane ``arange`` bounds).  Without an entry, :func:`default_inputs` is used.

Register with the decorators::

    @register_valid_call("nn.relu")            # several names allowed
    def _relu(name: str) -> SearchStrategy:    # or a zero-argument function
        return unary_calls(NUMERIC_DTYPES)

    @register_invalid_call("nn.relu")
    def _relu_bad(name: str) -> SearchStrategy: ...

    @register_inputs("nn.batch_norm")
    def _bn_inputs(arg_types, attrs, exact) -> SearchStrategy: ...

The decorated factory may take the operator name as its single argument or no argument.
Operator families outside this file put their strategies in sibling modules listed in
:data:`EXTENSION_MODULES` (``conformance.strategies.ops_nn`` for ``nn``/``transform``);
:func:`load_extensions` imports them on first use, so ``VALID_CALLS`` is complete after any
of :func:`op_call_args`, :func:`op_call`, :func:`covered_ops`.

Entry points
------------
:func:`op_call_args` (valid ``(arg_types, attrs)``), :func:`op_invalid_call_args`,
:func:`op_inputs` (trap-free arrays for given types), :func:`op_call` (all three
together).  Building blocks shared with the extension modules: :func:`small_shapes`,
:func:`broadcast_shapes_from`, :func:`non_broadcastable_pair`, :func:`reduce_attrs`,
:func:`bad_axis_attrs`, :func:`fast_arrays`, :func:`element_values`, the dtype groups.

Shapes are small (rank ≤ 4, dims ≤ 5, zero-size dims included) so that every generated
call is cheap to evaluate.  ``exact=True`` inputs are small integers (also for float
dtypes); ``exact=False`` inputs include NaN, ±inf, -0.0 and the integer extremes.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.strategies.typeutil import float_width, int_shape
from semantics.dtypes import FLOAT_DTYPES, INT_DTYPES, SCALAR_DTYPES, UINT_DTYPES
from semantics.types import TensorType, TupleType, Type

ArgTypes = tuple[Type, ...]
CallArgs = tuple[ArgTypes, dict[str, Any]]
SearchStrategy = st.SearchStrategy

VALID_CALLS: dict[str, Callable[[], SearchStrategy]] = {}
INVALID_CALLS: dict[str, Callable[[], SearchStrategy]] = {}
INPUTS: dict[str, Callable[[ArgTypes, dict[str, Any], bool], SearchStrategy]] = {}

EXTENSION_MODULES = ("conformance.strategies.ops_nn", "conformance.strategies.ops_batch_matmul",
                     "conformance.strategies.ops_grad", "conformance.strategies.ops_quant",
                     "conformance.strategies.ops_memory")

INTEGER_DTYPES = INT_DTYPES + UINT_DTYPES
NUMERIC_DTYPES = ("int32", "float32") + tuple(
    d for d in INTEGER_DTYPES + FLOAT_DTYPES if d not in ("int32", "float32"))
FLOAT_FIRST = ("float32", "float16", "float64")
ALL_DTYPES = ("int32", "float32", "bool") + tuple(
    d for d in SCALAR_DTYPES if d not in ("int32", "float32", "bool"))

MAX_RANK = 4
MAX_DIM = 5


# --- registration -------------------------------------------------------------------------

def _bind(name: str, fn: Callable[..., Any]) -> Callable[[], Any]:
    takes_name = len(inspect.signature(fn).parameters) >= 1
    return (lambda: fn(name)) if takes_name else fn


def register_valid_call(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: ``fn`` (taking the op name, or nothing) supplies valid calls of ``names``."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in names:
            VALID_CALLS[name] = _bind(name, fn)
        return fn

    return deco


def register_invalid_call(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: ``fn`` supplies calls of ``names`` that must be rejected (RelayTypeError)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in names:
            INVALID_CALLS[name] = _bind(name, fn)
        return fn

    return deco


def register_inputs(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: ``fn(arg_types, attrs, exact)`` supplies trap-free argument arrays."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in names:
            INPUTS[name] = fn
        return fn

    return deco


_loaded = False


def load_extensions() -> None:
    """Import the sibling strategy modules of the other operator families (once)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in EXTENSION_MODULES:
        if importlib.util.find_spec(module) is not None:
            importlib.import_module(module)


def covered_ops() -> set[str]:
    """Every operator with a registered valid-call strategy."""
    load_extensions()
    return set(VALID_CALLS)


# --- entry points -------------------------------------------------------------------------

_STRATEGY_CACHE: dict[tuple[str, str], SearchStrategy] = {}


def _cached(table: str, name: str) -> SearchStrategy:
    key = (table, name)
    hit = _STRATEGY_CACHE.get(key)
    if hit is None:
        load_extensions()
        factory = (VALID_CALLS if table == "valid" else INVALID_CALLS)[name]
        hit = _STRATEGY_CACHE[key] = factory()
    return hit


def op_call_args(name: str) -> SearchStrategy:
    """Valid ``(arg_types, attrs)`` for operator ``name`` (``KeyError`` if none registered)."""
    return _cached("valid", name)


def op_invalid_call_args(name: str) -> SearchStrategy:
    """``(arg_types, attrs)`` that operator ``name`` must reject with ``RelayTypeError``."""
    return _cached("invalid", name)


def op_inputs(name: str, arg_types: ArgTypes, attrs: dict[str, Any], *,
              exact: bool = False) -> SearchStrategy:
    """Argument arrays of exactly ``arg_types`` on which ``name`` does not trap."""
    load_extensions()
    fn = INPUTS.get(name, default_inputs)
    return fn(arg_types, attrs, exact)


@st.composite
def op_call(draw: st.DrawFn, name: str, *, exact: bool = False) -> tuple[ArgTypes,
                                                                            dict[str, Any],
                                                                            tuple]:
    """A valid call of ``name``: ``(arg_types, attrs, arrays)``."""
    arg_types, attrs = draw(op_call_args(name))
    values = draw(op_inputs(name, arg_types, attrs, exact=exact))
    return arg_types, attrs, values


# --- building blocks ----------------------------------------------------------------------

def small_shapes(*, min_rank: int = 0, max_rank: int = MAX_RANK, min_dim: int = 0,
                 max_dim: int = MAX_DIM) -> SearchStrategy:
    """A concrete shape: rank in ``[min_rank, max_rank]``, dims in ``[min_dim, max_dim]``.

    One shape in four has all dims equal (``(3, 3)``): there, an operator that mixes up
    axes (a transpose's permutation, a reduction's axis) still type-checks, so only the
    values tell the mistake apart."""
    return _shapes(min_rank, max_rank, min_dim, max_dim)


@st.composite
def _shapes(draw: st.DrawFn, min_rank: int, max_rank: int, min_dim: int, max_dim: int
            ) -> tuple[int, ...]:
    dims = draw(st.lists(st.integers(min_dim, max_dim), min_size=min_rank, max_size=max_rank))
    if len(dims) > 1 and draw(st.integers(0, 3)) == 3:
        dims = [dims[0]] * len(dims)
    return tuple(dims)


@st.composite
def broadcast_shapes_from(draw: st.DrawFn, count: int, *, min_dim: int = 0,
                          max_rank: int = MAX_RANK) -> tuple[tuple[int, ...], ...]:
    """``count`` shapes that broadcast together: suffixes of one shape, some dims set to 1."""
    full = draw(small_shapes(max_rank=max_rank, min_dim=min_dim))
    out = []
    for _ in range(count):
        keep = draw(st.integers(0, len(full)))
        tail = full[len(full) - keep:]
        out.append(tuple(d if draw(st.booleans()) else 1 for d in tail))
    return tuple(out)


@st.composite
def non_broadcastable_pair(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes with one aligned pair of dims that differ and are both ≥ 2."""
    a, b = draw(broadcast_shapes_from(2))
    rank = max(len(a), len(b), 1)
    a = (1,) * (rank - len(a)) + a
    b = (1,) * (rank - len(b)) + b
    i = draw(st.integers(0, rank - 1))
    x = draw(st.integers(2, MAX_DIM))
    y = draw(st.integers(2, MAX_DIM).filter(lambda v: v != x))
    a = a[:i] + (x,) + a[i + 1:]
    b = b[:i] + (y,) + b[i + 1:]
    drop = draw(st.integers(0, i))            # optionally drop leading dims of one side
    if draw(st.booleans()):
        a = a[drop:]
    else:
        b = b[drop:]
    return a, b


def dtype_from(group: Sequence[str]) -> SearchStrategy:
    return st.sampled_from(tuple(group))


@st.composite
def distinct_dtypes(draw: st.DrawFn, group: Sequence[str] = ALL_DTYPES) -> tuple[str, str]:
    a = draw(dtype_from(group))
    b = draw(dtype_from(group).filter(lambda d: d != a))
    return a, b


def element_values(dtype: str, exact: bool = False, bound: int = 8) -> SearchStrategy:
    """Python scalars of ``dtype``: small integers when ``exact``; otherwise anything of the
    dtype, edge cases (NaN, ±inf, -0.0, the integer extremes) included."""
    np_dtype = np.dtype(dtype)
    if np_dtype == np.bool_:
        return st.booleans()
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        if exact:
            return st.integers(max(int(info.min), -bound), min(int(info.max), bound))
        edges = st.sampled_from((0, 1, int(info.min), int(info.max)))
        return st.one_of(st.integers(int(info.min), int(info.max)), edges)
    if exact:
        return st.integers(-bound, bound).map(float)
    specials = st.sampled_from((0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan))
    return st.one_of(st.floats(width=float_width(np_dtype)), specials)


def fast_arrays(dtype: str, shape: Sequence[int], *, exact: bool = False, bound: int = 8,
                elements: SearchStrategy | None = None, dense: bool = False) -> SearchStrategy:
    """An array of exactly ``dtype``/``shape`` with elements from ``elements`` (default
    :func:`element_values`).

    By default ``hypothesis.extra.numpy`` builds it (a fill value plus a sparse set of drawn
    elements, so large shapes stay cheap); ``dense=True`` draws every element.
    """
    elems = elements if elements is not None else element_values(dtype, exact, bound)
    shape = tuple(int(d) for d in shape)
    if not dense:
        return hnp.arrays(np.dtype(dtype), shape, elements=elems)
    count = math.prod(shape)
    np_dtype = np.dtype(dtype)

    def build(values: list[Any]) -> np.ndarray:
        return np.array(values, dtype=np_dtype).reshape(shape)

    return st.lists(elems, min_size=count, max_size=count).map(build)


@st.composite
def default_inputs(draw: st.DrawFn, arg_types: ArgTypes, attrs: dict[str, Any],
                   exact: bool) -> tuple[np.ndarray, ...]:
    """Independent arrays for each (concrete) tensor argument type."""
    out = []
    for t in arg_types:
        assert isinstance(t, TensorType)
        out.append(draw(fast_arrays(t.dtype, concrete_shape(t), exact=exact)))
    return tuple(out)


@st.composite
def reduce_attrs(draw: st.DrawFn, ndim: int) -> dict[str, Any]:
    """Valid reduction attributes (axis/keepdims/exclude, written as in a call) for a rank."""
    attrs: dict[str, Any] = {}
    form = draw(st.sampled_from(("absent", "none", "int", "list")))
    if ndim == 0 and form == "int":
        form = "none"
    if form == "none":
        attrs["axis"] = None
    elif form == "int":
        attrs["axis"] = draw(st.integers(-ndim, ndim - 1))
    elif form == "list":
        # Mostly at least one axis: an empty list reduces nothing (nor does ``exclude`` of
        # every axis), and then the axes and ``keepdims`` make no difference a wrong
        # implementation could show. One list in eight is empty all the same.
        least = 1 if ndim and draw(st.integers(0, 7)) else 0
        axes = draw(st.lists(st.integers(0, ndim - 1), unique=True, min_size=least,
                             max_size=ndim) if ndim else st.just([]))
        attrs["axis"] = [a - ndim if draw(st.booleans()) else a for a in axes]
    if draw(st.booleans()):
        attrs["keepdims"] = draw(st.booleans())
    if form in ("int", "list") and draw(st.booleans()):
        every = len(attrs["axis"]) == ndim if form == "list" else ndim == 1
        attrs["exclude"] = draw(st.booleans()) if not every or not draw(st.integers(0, 7)) \
            else False
    return attrs


@st.composite
def bad_axis_attrs(draw: st.DrawFn, ndim: int) -> dict[str, Any]:
    """Reduction attributes that must be rejected for a tensor of rank ``ndim``."""
    kind = draw(st.sampled_from(("range", "duplicate", "exclude_none", "keepdims", "kind")))
    if kind == "duplicate" and ndim == 0:
        kind = "range"
    if kind == "range":
        a = draw(st.one_of(st.integers(ndim, ndim + 3), st.integers(-ndim - 3, -ndim - 1)))
        return {"axis": draw(st.sampled_from((a, [a])))}
    if kind == "duplicate":
        a = draw(st.integers(0, ndim - 1))
        return {"axis": [a, draw(st.sampled_from((a, a - ndim)))]}
    if kind == "exclude_none":
        return {"exclude": True}
    if kind == "keepdims":
        return {"keepdims": draw(st.sampled_from(("yes", 2, 1.5, [True])))}
    return {"axis": draw(st.sampled_from(("0", 1.5, [0.5], [True])))}


def _tensor(shape: Sequence[int], dtype: str) -> TensorType:
    return TensorType(tuple(shape), dtype)


NOT_A_TENSOR = TupleType(())


@st.composite
def _replace_with_non_tensor(draw: st.DrawFn, call: SearchStrategy) -> CallArgs:
    arg_types, attrs = draw(call)
    i = draw(st.integers(0, len(arg_types) - 1))
    return arg_types[:i] + (NOT_A_TENSOR,) + arg_types[i + 1:], attrs


# --- tensor family: elementwise and broadcast ---------------------------------------------

UNARY_GROUPS = {
    "float": (("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos"),
              FLOAT_FIRST),
    "numeric": (("negative", "abs", "sign", "floor", "ceil", "round", "trunc"), NUMERIC_DTYPES),
    "bool": (("logical_not",), ("bool",)),
    "any": (("copy", "zeros_like", "ones_like"), ALL_DTYPES),
}
BINARY_GROUPS = {
    "numeric": (("add", "subtract", "multiply", "divide", "power", "mod", "floor_divide",
                 "floor_mod", "maximum", "minimum"), NUMERIC_DTYPES),
    "compare": (("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"),
                ALL_DTYPES),
    "bool": (("logical_and", "logical_or"), ("bool",)),
}


def _group_of(name: str, groups: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
              ) -> tuple[str, ...]:
    for names, dtypes in groups.values():
        if name in names:
            return dtypes
    raise KeyError(name)


def unary_calls(dtypes: Sequence[str]) -> SearchStrategy:
    """``((Tensor[s, t],), {})`` for ``t`` in ``dtypes``."""
    return st.builds(lambda s, d: ((_tensor(s, d),), {}), small_shapes(), dtype_from(dtypes))


@st.composite
def binary_calls(draw: st.DrawFn, dtypes: Sequence[str]) -> CallArgs:
    a, b = draw(broadcast_shapes_from(2))
    d = draw(dtype_from(dtypes))
    return (_tensor(a, d), _tensor(b, d)), {}


@register_valid_call(*UNARY_GROUPS["float"][0], *UNARY_GROUPS["numeric"][0],
                     *UNARY_GROUPS["bool"][0], *UNARY_GROUPS["any"][0])
def _unary_valid(name: str) -> SearchStrategy:
    return unary_calls(_group_of(name, UNARY_GROUPS))


@register_invalid_call(*UNARY_GROUPS["float"][0], *UNARY_GROUPS["numeric"][0],
                       *UNARY_GROUPS["bool"][0], *UNARY_GROUPS["any"][0])
def _unary_invalid(name: str) -> SearchStrategy:
    allowed = _group_of(name, UNARY_GROUPS)
    # the transcendentals are drawn on floats but accept integers too (TVM's relation: an
    # integer operand is computed in float64 and cast back); only bool is a wrong dtype
    accepted = NUMERIC_DTYPES if name in UNARY_GROUPS["float"][0] else allowed
    wrong = tuple(d for d in ALL_DTYPES if d not in accepted)
    options = [_replace_with_non_tensor(unary_calls(allowed)),
               st.builds(lambda s, d: ((_tensor(s, d), _tensor(s, d)), {}), small_shapes(),
                         dtype_from(allowed))]
    if wrong:
        options.append(unary_calls(wrong))
    return st.one_of(*options)


@register_valid_call(*BINARY_GROUPS["numeric"][0], *BINARY_GROUPS["compare"][0],
                     *BINARY_GROUPS["bool"][0])
def _binary_valid(name: str) -> SearchStrategy:
    return binary_calls(_group_of(name, BINARY_GROUPS))


@st.composite
def _binary_bad_dtypes(draw: st.DrawFn, allowed: Sequence[str]) -> CallArgs:
    a, b = draw(broadcast_shapes_from(2))
    d1, d2 = draw(distinct_dtypes())
    return (_tensor(a, d1), _tensor(b, d2)), {}


@st.composite
def _binary_bad_shapes(draw: st.DrawFn, allowed: Sequence[str]) -> CallArgs:
    a, b = draw(non_broadcastable_pair())
    d = draw(dtype_from(allowed))
    return (_tensor(a, d), _tensor(b, d)), {}


@register_invalid_call(*BINARY_GROUPS["numeric"][0], *BINARY_GROUPS["compare"][0],
                       *BINARY_GROUPS["bool"][0])
def _binary_invalid(name: str) -> SearchStrategy:
    allowed = _group_of(name, BINARY_GROUPS)
    wrong = tuple(d for d in ALL_DTYPES if d not in allowed)
    options = [_binary_bad_dtypes(allowed), _binary_bad_shapes(allowed),
               _replace_with_non_tensor(binary_calls(allowed))]
    if wrong:
        options.append(binary_calls(wrong))
    return st.one_of(*options)


_DIVISIONS = ("divide", "mod", "floor_divide", "floor_mod")


@register_inputs(*_DIVISIONS)
@st.composite
def _division_inputs(draw: st.DrawFn, arg_types: ArgTypes, attrs: dict[str, Any],
                     exact: bool) -> tuple[np.ndarray, ...]:
    a_t, b_t = arg_types
    assert isinstance(a_t, TensorType) and isinstance(b_t, TensorType)
    a = draw(fast_arrays(a_t.dtype, concrete_shape(a_t), exact=exact))
    if a_t.dtype in INTEGER_DTYPES:
        nonzero = element_values(b_t.dtype, exact).filter(lambda v: v != 0)
        b = draw(fast_arrays(b_t.dtype, concrete_shape(b_t), elements=nonzero))
    else:
        b = draw(fast_arrays(b_t.dtype, concrete_shape(b_t), exact=exact))
    return a, b


def concrete_shape(t: TensorType) -> list[int]:
    """The concrete shape of a generated tensor type (a list of ints)."""
    return list(int_shape(t))


@register_inputs("power")
@st.composite
def _power_inputs(draw: st.DrawFn, arg_types: ArgTypes, attrs: dict[str, Any],
                  exact: bool) -> tuple[np.ndarray, ...]:
    a_t, b_t = arg_types
    assert isinstance(a_t, TensorType) and isinstance(b_t, TensorType)
    if a_t.dtype not in INTEGER_DTYPES:
        return (draw(fast_arrays(a_t.dtype, concrete_shape(a_t), exact=exact)),
                draw(fast_arrays(b_t.dtype, concrete_shape(b_t), exact=exact)))
    base = element_values(a_t.dtype, exact).filter(lambda v: v != 0)
    lo = -3 if a_t.dtype in INT_DTYPES else 0
    expo = st.integers(lo, 9)
    return (draw(fast_arrays(a_t.dtype, concrete_shape(a_t), elements=base)),
            draw(fast_arrays(b_t.dtype, concrete_shape(b_t), elements=expo)))


@st.composite
def _where_valid_call(draw: st.DrawFn) -> CallArgs:
    c, x, y = draw(broadcast_shapes_from(3))
    cd = draw(st.one_of(st.just("bool"), dtype_from(ALL_DTYPES)))
    d = draw(dtype_from(ALL_DTYPES))
    return (_tensor(c, cd), _tensor(x, d), _tensor(y, d)), {}


@register_valid_call("where")
def _where_valid() -> SearchStrategy:
    return _where_valid_call()


@st.composite
def _where_bad(draw: st.DrawFn) -> CallArgs:
    kind = draw(st.sampled_from(("dtype", "shape", "arity")))
    if kind == "dtype":
        c, x, y = draw(broadcast_shapes_from(3))
        d1, d2 = draw(distinct_dtypes())
        return (_tensor(c, "bool"), _tensor(x, d1), _tensor(y, d2)), {}
    if kind == "shape":
        a, b = draw(non_broadcastable_pair())
        d = draw(dtype_from(ALL_DTYPES))
        order = draw(st.permutations([_tensor(a, "bool"), _tensor(b, d), _tensor(b, d)]))
        if order[1].dtype != order[2].dtype:      # keep x/y dtypes equal: a shape failure
            order = [order[0], _tensor(concrete_shape(order[1]), d),
                     _tensor(concrete_shape(order[2]), d)]
        return tuple(order), {}
    s = draw(small_shapes())
    return (_tensor(s, "bool"), _tensor(s, "float32")), {}


@register_invalid_call("where")
def _where_invalid() -> SearchStrategy:
    return st.one_of(_where_bad(), _replace_with_non_tensor(_where_valid_call()))


_BOUNDS = st.one_of(st.floats(-300, 300, allow_nan=False),
                    st.integers(-300, 300), st.sampled_from((float("inf"), float("-inf"))))


@register_valid_call("clip")
def _clip_valid() -> SearchStrategy:
    return st.builds(lambda s, d, lo, hi: ((_tensor(s, d),), {"a_min": lo, "a_max": hi}),
                     small_shapes(), dtype_from(NUMERIC_DTYPES), _BOUNDS, _BOUNDS)


@register_invalid_call("clip")
def _clip_invalid() -> SearchStrategy:
    x = st.builds(_tensor, small_shapes(), dtype_from(NUMERIC_DTYPES))
    bad_attrs = st.sampled_from(({"a_min": float("nan"), "a_max": 1.0},
                                 {"a_min": 0.0},
                                 {"a_max": 0.0},
                                 {"a_min": "0", "a_max": 1.0},
                                 {"a_min": 0.0, "a_max": 1.0, "a_mid": 0.5},
                                 {"a_min": True, "a_max": 1.0}))
    return st.one_of(
        st.builds(lambda t, a: ((t,), dict(a)), x, bad_attrs),
        st.builds(lambda s: ((_tensor(s, "bool"),), {"a_min": 0.0, "a_max": 1.0}),
                  small_shapes()))


@register_valid_call("cast")
def _cast_valid() -> SearchStrategy:
    return st.builds(lambda s, d, to: ((_tensor(s, d),), {"dtype": to}),
                     small_shapes(), dtype_from(ALL_DTYPES), dtype_from(ALL_DTYPES))


@register_invalid_call("cast")
def _cast_invalid() -> SearchStrategy:
    x = st.builds(_tensor, small_shapes(), dtype_from(ALL_DTYPES))
    bad = st.sampled_from(({}, {"dtype": "float31"}, {"dtype": 32}, {"dtype": "int"},
                           {"dtype": "float32", "axis": 0}))
    return st.builds(lambda t, a: ((t,), dict(a)), x, bad)


# --- creation family ----------------------------------------------------------------------

_SHAPE_ATTR = small_shapes().map(list)
_BAD_SHAPE_ATTR = st.sampled_from(([-1], [2, -3], "2", [1.5], None))


@register_valid_call("zeros", "ones")
def _init_valid() -> SearchStrategy:
    return st.builds(lambda s, d: ((), {"shape": s, "dtype": d}), _SHAPE_ATTR,
                     dtype_from(ALL_DTYPES))


@register_invalid_call("zeros", "ones")
def _init_invalid() -> SearchStrategy:
    return st.one_of(
        st.builds(lambda s: ((), {"shape": s}), _BAD_SHAPE_ATTR),
        st.builds(lambda d: ((), {"shape": [2], "dtype": d}),
                  st.sampled_from(("float31", "", 7))),
        st.just(((), {"dtype": "float32"})),
        st.builds(lambda s: ((_tensor(s, "float32"),), {"shape": [2]}), small_shapes()))


@register_valid_call("full")
def _full_valid() -> SearchStrategy:
    dtype_attr = st.one_of(st.none(), st.just(""), dtype_from(ALL_DTYPES))
    return st.builds(
        lambda fd, s, d: ((_tensor((), fd),), {"shape": s} if d is None else
                          {"shape": s, "dtype": d}),
        dtype_from(ALL_DTYPES), _SHAPE_ATTR, dtype_attr)


@register_invalid_call("full")
def _full_invalid() -> SearchStrategy:
    fill = st.builds(lambda d: _tensor((), d), dtype_from(ALL_DTYPES))
    return st.one_of(
        st.builds(lambda s, d: ((_tensor(s, d),), {"shape": [2]}),
                  small_shapes(min_rank=1), dtype_from(ALL_DTYPES)),
        st.builds(lambda f, s: ((f,), {"shape": s}), fill, _BAD_SHAPE_ATTR),
        st.builds(lambda f: ((f,), {"shape": [2], "dtype": "float31"}), fill),
        st.just(((NOT_A_TENSOR,), {"shape": [2]})))


@register_valid_call("full_like")
def _full_like_valid() -> SearchStrategy:
    return st.builds(lambda s, d, fd: ((_tensor(s, d), _tensor((), fd)), {}),
                     small_shapes(), dtype_from(ALL_DTYPES), dtype_from(ALL_DTYPES))


@register_invalid_call("full_like")
def _full_like_invalid() -> SearchStrategy:
    return st.one_of(
        st.builds(lambda s, fs, d: ((_tensor(s, d), _tensor(fs, d)), {}),
                  small_shapes(), small_shapes(min_rank=1), dtype_from(ALL_DTYPES)),
        _replace_with_non_tensor(_full_like_valid()),
        st.builds(lambda s: ((_tensor(s, "float32"),), {}), small_shapes()))


_ARANGE_DTYPES = ("float32", "int32", "int64", "float16", "float64", "int8", "int16",
                  "uint8", "uint16", "uint32", "uint64")


@register_valid_call("arange")
def _arange_valid() -> SearchStrategy:
    def build(d: str, written: bool) -> CallArgs:
        scalar = _tensor((), d)
        return (scalar, scalar, scalar), ({"dtype": d} if written or d != "float32" else {})

    return st.builds(build, dtype_from(_ARANGE_DTYPES), st.booleans())


@register_invalid_call("arange")
def _arange_invalid() -> SearchStrategy:
    @st.composite
    def mismatched(draw: st.DrawFn) -> CallArgs:
        d, other = draw(distinct_dtypes(_ARANGE_DTYPES))
        types = [_tensor((), d)] * 3
        i = draw(st.integers(0, 2))
        types[i] = _tensor((), other)
        return tuple(types), {"dtype": d}

    @st.composite
    def not_scalar(draw: st.DrawFn) -> CallArgs:
        d = draw(dtype_from(_ARANGE_DTYPES))
        types = [_tensor((), d)] * 3
        types[draw(st.integers(0, 2))] = _tensor(draw(small_shapes(min_rank=1)), d)
        return tuple(types), {"dtype": d}

    return st.one_of(mismatched(), not_scalar(),
                     st.just(((_tensor((), "bool"),) * 3, {"dtype": "bool"})),
                     st.just(((_tensor((), "float32"),) * 2, {})))


@register_inputs("arange")
@st.composite
def _arange_inputs(draw: st.DrawFn, arg_types: ArgTypes, attrs: dict[str, Any],
                   exact: bool) -> tuple[np.ndarray, ...]:
    t = arg_types[0]
    assert isinstance(t, TensorType)
    d = np.dtype(t.dtype)
    if d.kind == "u":
        start = draw(st.integers(0, 20))
        stop = draw(st.integers(0, 40))
        step = draw(st.integers(1, 4))
        values: tuple[float, ...] = (start, stop, step)
    elif d.kind == "i":
        values = (draw(st.integers(-20, 20)), draw(st.integers(-20, 20)),
                  draw(st.integers(-4, 4).filter(lambda v: v != 0)))
    else:
        quarter = st.integers(-80, 80).map(lambda v: v / 4)
        values = (draw(quarter), draw(quarter),
                  draw(st.sampled_from((0.25, 0.5, 1.0, 1.5, 3.0, -0.5, -1.0, -2.0))))
    return tuple(np.array(v, dtype=d) for v in values)


# --- reduce family ------------------------------------------------------------------------

REDUCE_GROUPS = {
    "numeric": (("sum", "prod", "max", "min"), NUMERIC_DTYPES),
    "bool": (("all", "any"), ("bool",)),
    "arg": (("argmax", "argmin"), NUMERIC_DTYPES),
    "mean": (("mean",), NUMERIC_DTYPES),
}


@st.composite
def reduce_calls(draw: st.DrawFn, dtypes: Sequence[str], *, min_rank: int = 0,
                 extra: dict[str, SearchStrategy] | None = None, min_dim: int = 0,
                 max_rank: int = MAX_RANK) -> CallArgs:
    """One tensor of a dtype in ``dtypes`` with valid reduction attributes (plus ``extra``)."""
    shape = draw(small_shapes(min_rank=min_rank, min_dim=min_dim, max_rank=max_rank))
    d = draw(dtype_from(dtypes))
    attrs = draw(reduce_attrs(len(shape)))
    for key, strategy in (extra or {}).items():
        if draw(st.booleans()):
            attrs[key] = draw(strategy)
    return (_tensor(shape, d),), attrs


@register_valid_call("sum", "prod", "max", "min", "all", "any", "argmax", "argmin", "mean")
def _reduce_valid(name: str) -> SearchStrategy:
    dtypes = _group_of(name, REDUCE_GROUPS)
    if name in ("argmax", "argmin"):
        return reduce_calls(dtypes, min_rank=1, extra={"select_last_index": st.booleans()})
    if name == "mean":
        # Integer means divide by the element count converted to the dtype: keep the count
        # in int8 range and nonzero, so that a valid call never traps.
        return st.one_of(reduce_calls(FLOAT_FIRST),
                         reduce_calls(INTEGER_DTYPES, min_dim=1, max_rank=3))
    return reduce_calls(dtypes)


@st.composite
def _reduce_bad(draw: st.DrawFn, name: str) -> CallArgs:
    allowed = _group_of(name, REDUCE_GROUPS)
    min_rank = 1 if name in ("argmax", "argmin") else 0
    kind = draw(st.sampled_from(("attrs", "dtype", "rank", "non_tensor")))
    if kind == "rank" and min_rank == 0:
        kind = "attrs"
    if kind == "dtype":
        wrong = tuple(d for d in ALL_DTYPES if d not in allowed)
        s = draw(small_shapes(min_rank=min_rank))
        return (_tensor(s, draw(dtype_from(wrong))),), {}
    if kind == "rank":
        return (_tensor((), draw(dtype_from(allowed))),), {}
    if kind == "non_tensor":
        return (NOT_A_TENSOR,), {}
    s = draw(small_shapes(min_rank=min_rank))
    return (_tensor(s, draw(dtype_from(allowed))),), draw(bad_axis_attrs(len(s)))


@register_invalid_call("sum", "prod", "max", "min", "all", "any", "argmax", "argmin", "mean")
def _reduce_invalid(name: str) -> SearchStrategy:
    return _reduce_bad(name)


@st.composite
def _variance_call(draw: st.DrawFn) -> CallArgs:
    (x,), attrs = draw(reduce_calls(FLOAT_FIRST, min_rank=1,
                                    extra={"unbiased": st.booleans()}))
    assert isinstance(x, TensorType)
    mean_shape = tuple(d if draw(st.booleans()) else 1 for d in concrete_shape(x))
    return (x, _tensor(mean_shape, x.dtype)), attrs


@register_valid_call("variance")
def _variance_valid() -> SearchStrategy:
    return _variance_call()


@st.composite
def _variance_bad(draw: st.DrawFn) -> CallArgs:
    kind = draw(st.sampled_from(("int", "rank", "dtype", "scalar", "attrs", "shape")))
    s = draw(small_shapes(min_rank=1))
    d = draw(dtype_from(FLOAT_FIRST))
    if kind == "int":
        i = draw(dtype_from(INTEGER_DTYPES))
        return (_tensor(s, i), _tensor(s, i)), {}
    if kind == "rank":
        return (_tensor(s, d), _tensor(s[1:] if draw(st.booleans()) else s + (1,), d)), {}
    if kind == "dtype":
        d2 = draw(dtype_from(FLOAT_FIRST).filter(lambda v: v != d))
        return (_tensor(s, d), _tensor(s, d2)), {}
    if kind == "scalar":
        return (_tensor((), d), _tensor((), d)), {}
    if kind == "shape":
        i = draw(st.integers(0, len(s) - 1))
        x = s[:i] + (draw(st.integers(2, MAX_DIM)),) + s[i + 1:]
        m = x[:i] + (x[i] + 1,) + x[i + 1:]
        return (_tensor(x, d), _tensor(m, d)), {}
    return (_tensor(s, d), _tensor(s, d)), draw(bad_axis_attrs(len(s)))


@register_invalid_call("variance")
def _variance_invalid() -> SearchStrategy:
    return _variance_bad()
