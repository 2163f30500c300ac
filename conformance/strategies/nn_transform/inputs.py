"""Fast argument values for ``nn``/``transform`` calls (:func:`call_inputs`).

Arrays come from a drawn seed and numpy's generator, not element by element, so that
convolutions with hundreds of elements stay cheap; ``exact=False`` mixes in NaN, ±inf,
-0.0 and the integer extremes. Importing this module registers ``take``'s inputs into
``INPUTS`` of :mod:`conformance.strategies.ops` (the only operator here whose argument
values are constrained).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from conformance.strategies import ops as O
from conformance.strategies.nn_transform.common import SearchStrategy
from conformance.strategies.typeutil import int_shape
from semantics.types import TensorType, TupleType, Type

# --- inputs ----------------------------------------------------------------------------------

_SPECIALS = (np.nan, np.inf, -np.inf, -0.0)


@st.composite
def fast_array(draw: st.DrawFn, dtype: str, shape: Sequence[int], exact: bool) -> np.ndarray:
    """An array of exactly ``dtype``/``shape`` from a drawn seed (edge values unless exact)."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    shape = tuple(int(d) for d in shape)
    size = int(np.prod(shape)) if shape else 1
    dt = np.dtype(dtype)
    if dt == np.bool_:
        out = rng.integers(0, 2, size=size).astype(bool)
    elif dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -8
        small = rng.integers(lo, 9, size=size)
        if exact:
            out = small.astype(dt)
        else:
            info = np.iinfo(dt)
            wide = rng.integers(int(info.min), int(info.max), size=size, endpoint=True, dtype=dt)
            out = np.where(rng.random(size) < 0.5, small.astype(dt), wide)
    elif exact:
        out = rng.integers(-8, 9, size=size).astype(dt)
    else:
        vals = rng.standard_normal(size) * 4
        special = rng.random(size) < 0.08
        vals[special] = rng.choice(_SPECIALS, size=int(special.sum()))
        out = vals.astype(dt)
    return np.asarray(out, dtype=dt).reshape(shape)


def value_for(t: Type, exact: bool) -> SearchStrategy:
    if isinstance(t, TupleType):
        return st.tuples(*(value_for(f, exact) for f in t.fields))
    assert isinstance(t, TensorType)
    return fast_array(t.dtype, int_shape(t), exact)


@st.composite
def plain_inputs(draw: st.DrawFn, arg_types: tuple[Type, ...], attrs: dict[str, Any],
                 exact: bool) -> tuple[Any, ...]:
    return tuple(draw(value_for(t, exact)) for t in arg_types)


@st.composite
def take_inputs(draw: st.DrawFn, arg_types: tuple[Type, ...], attrs: dict[str, Any],
                exact: bool) -> tuple[Any, ...]:
    """Data, and indices valid for the mode: in [0, n) for "fast", anything otherwise."""
    from semantics import ops

    data_t, idx_t = arg_types
    assert isinstance(data_t, TensorType) and isinstance(idx_t, TensorType)
    norm = ops.get("take").normalize_attrs(attrs)
    data = draw(fast_array(data_t.dtype, int_shape(data_t), exact))
    shape = int_shape(idx_t)
    n = data.size if norm["axis"] is None else data.shape[norm["axis"]]
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    size = int(np.prod(shape)) if shape else 1
    if norm["mode"] == "fast" or exact:
        raw = rng.integers(0, max(n, 1), size=size)
    else:
        raw = rng.integers(-3 * n - 3, 3 * n + 4, size=size)
    info = np.iinfo(np.dtype(idx_t.dtype))
    raw = np.clip(raw, int(info.min), int(info.max))
    return data, raw.astype(idx_t.dtype).reshape(shape)


# Only take constrains its argument values (indices in range for mode "fast"): it alone is
# registered in INPUTS, whose entries the program generator turns into constants.
O.register_inputs("take")(take_inputs)


def call_inputs(name: str, arg_types: tuple[Type, ...], attrs: dict[str, Any], exact: bool
                ) -> SearchStrategy:
    """Argument values for a valid call of ``name`` (tuples for tuple arguments), drawn fast."""
    if name == "take":
        return take_inputs(arg_types, attrs, exact)
    return plain_inputs(arg_types, attrs, exact)
