"""Valid and invalid call strategies for the quantization operators (registered into the
tables of :mod:`conformance.strategies.ops`; listed in its ``EXTENSION_MODULES``).

* ``right_shift``/``left_shift``: two broadcastable tensors of one integer dtype; the
  default inputs draw every value of the dtype, so negative amounts and amounts of at least
  the bit width (defined by the references) are exercised;
* ``bitwise_and/or/xor``: one integer dtype or bool;
* ``annotation.simulated_quantize``: a float tensor and three ``float32`` scalars, with
  every ``kind``/``sign``/``rounding`` and a seed; its inputs draw positive scales (powers
  of two and others) and integer clip bounds around the quantization ranges of 4 to 16 bits
  (``exact=False`` data include NaN and ±inf).

Invalid calls: mixed dtypes, shapes that do not broadcast, float shift operands, a float
``bitwise_and``; for simQ integer data, a non-scalar or non-float32 scale, and bad
attributes (``kind=4``, ``rounding="nearest"``, a negative seed).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from conformance.strategies import ops as O
from conformance.strategies.nn_transform.common import CallArgs, SearchStrategy, T, _generic_bad
from semantics.types import TensorType

SHIFTS = ("right_shift", "left_shift")
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")
SHIFT_DTYPES = O.INTEGER_DTYPES
BITWISE_DTYPES = O.INTEGER_DTYPES + ("bool",)
SIMQ = "annotation.simulated_quantize"
ROUNDINGS = ("round", "floor", "ceil", "stochastic")


@O.register_valid_call(*SHIFTS)
def _shift_valid() -> SearchStrategy:
    return O.binary_calls(SHIFT_DTYPES)


@O.register_valid_call(*BITWISE)
def _bitwise_valid() -> SearchStrategy:
    return O.binary_calls(BITWISE_DTYPES)


@st.composite
def _binary_bad(draw: st.DrawFn, allowed: tuple[str, ...]) -> CallArgs:
    kind = draw(st.sampled_from(("dtypes", "shapes", "class")))
    if kind == "dtypes":
        a, b = draw(O.broadcast_shapes_from(2))
        d1, d2 = draw(O.distinct_dtypes(allowed))
        return (T(a, d1), T(b, d2)), {}
    if kind == "shapes":
        a, b = draw(O.non_broadcastable_pair())
        d = draw(st.sampled_from(allowed))
        return (T(a, d), T(b, d)), {}
    a, b = draw(O.broadcast_shapes_from(2))
    d = draw(st.sampled_from(tuple(x for x in O.ALL_DTYPES if x not in allowed)))
    return (T(a, d), T(b, d)), {}


@O.register_invalid_call(*SHIFTS)
def _shift_invalid() -> SearchStrategy:
    return st.one_of(_binary_bad(SHIFT_DTYPES), *_generic_bad(O.binary_calls(SHIFT_DTYPES)))


@O.register_invalid_call(*BITWISE)
def _bitwise_invalid() -> SearchStrategy:
    return st.one_of(_binary_bad(BITWISE_DTYPES),
                     *_generic_bad(O.binary_calls(BITWISE_DTYPES)))


# --- simulated_quantize ----------------------------------------------------------------------

SCALAR = T((), "float32")


@st.composite
def simq_call(draw: st.DrawFn) -> CallArgs:
    """A valid ``annotation.simulated_quantize`` call: (argument types, attributes)."""
    shape = draw(O.small_shapes())
    dtype = draw(st.sampled_from(O.FLOAT_FIRST))
    attrs: dict[str, Any] = {}
    if draw(st.booleans()):
        attrs["kind"] = draw(st.integers(0, 3))
    if draw(st.booleans()):
        attrs["sign"] = draw(st.booleans())
    if draw(st.integers(0, 3)):
        attrs["rounding"] = draw(st.sampled_from(ROUNDINGS))
    if draw(st.booleans()):
        attrs["seed"] = draw(st.integers(0, 2 ** 32 - 1))
    return (T(shape, dtype), SCALAR, SCALAR, SCALAR), attrs


@O.register_valid_call(SIMQ)
def _simq_valid() -> SearchStrategy:
    return simq_call()


@st.composite
def _simq_bad(draw: st.DrawFn) -> CallArgs:
    kind = draw(st.sampled_from(("int_data", "scale_rank", "scale_dtype", "kind", "rounding",
                                 "seed")))
    data = T((2, 3), "float32")
    if kind == "int_data":
        return (T((2, 3), "int8"), SCALAR, SCALAR, SCALAR), {}
    if kind == "scale_rank":
        return (data, T((1,), "float32"), SCALAR, SCALAR), {}
    if kind == "scale_dtype":
        which = draw(st.integers(1, 3))
        args = [data, SCALAR, SCALAR, SCALAR]
        args[which] = T((), draw(st.sampled_from(("float64", "int32", "float16"))))
        return tuple(args), {}
    if kind == "kind":
        return (data, SCALAR, SCALAR, SCALAR), {"kind": draw(st.sampled_from((4, -1, 7)))}
    if kind == "rounding":
        return (data, SCALAR, SCALAR, SCALAR), {"rounding": draw(st.sampled_from(
            ("nearest", "Round", "truncate", "")))}
    return (data, SCALAR, SCALAR, SCALAR), {"seed": draw(st.sampled_from((-1, 2 ** 32)))}


@O.register_invalid_call(SIMQ)
def _simq_invalid() -> SearchStrategy:
    return st.one_of(_simq_bad(), *_generic_bad(simq_call()))


@O.register_inputs(SIMQ)
@st.composite
def _simq_inputs(draw: st.DrawFn, arg_types: tuple[Any, ...], attrs: dict[str, Any],
                 exact: bool) -> tuple[np.ndarray, ...]:
    data_t = arg_types[0]
    assert isinstance(data_t, TensorType)
    data = draw(O.fast_arrays(data_t.dtype, O.concrete_shape(data_t), exact=exact))
    if not exact:
        data = data * np.asarray(draw(st.sampled_from((1.0, 0.1, 3.7))), data.dtype)
    scale = draw(st.one_of(st.integers(-6, 3).map(lambda e: 2.0 ** e),
                           st.floats(0.01, 4.0)))
    bits = draw(st.integers(4, 16))
    signed = attrs.get("sign", True)
    hi = 2.0 ** (bits - 1 if signed else bits) - 1
    lo = -hi if signed else 0.0
    return (data, np.array(scale, np.float32), np.array(lo, np.float32),
            np.array(hi, np.float32))
