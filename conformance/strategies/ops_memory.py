"""Valid and invalid call strategies for the memory dialect (``semantics/ops/memory.py``;
registered into the tables of :mod:`conformance.strategies.ops`, listed in its
``EXTENSION_MODULES``).

* ``vm.shape_of``: any tensor, an optional numeric ``dtype``;
* ``vm.reshape_tensor``: a tensor and a ``newshape`` with the same element count (the
  tensor's dims in another order, or flattened); its inputs make the shape tensor hold
  ``newshape``;
* ``memory.kill``: any tensor;
* ``memory.alloc_storage``: ``int64`` size and alignment, an ``int64`` shape tensor; inputs
  draw sizes of 0..64 bytes and power-of-two alignments;
* ``memory.alloc_tensor``: a ``Storage``, an ``int64`` offset, a 1-d shape tensor and
  ``const_shape`` or ``assert_shape``; inputs allocate a storage large enough and a shape
  tensor holding the static shape.  The generator does not call the two allocations
  (``opcalls.NOT_GENERATED``); the operator tests do.

Invalid calls: a non-``int64`` size or alignment, a tensor where the storage belongs, no
static shape, a static shape of another rank than the shape tensor, a ``newshape`` with
another element count, a float shape tensor, bad attributes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from conformance.strategies import ops as O
from conformance.strategies.nn_transform.common import CallArgs, SearchStrategy, T, _generic_bad
from semantics.ops.memory import storage_type

I64 = T((), "int64")


@st.composite
def _shape_of_call(draw: st.DrawFn) -> CallArgs:
    attrs: dict[str, Any] = {}
    if draw(st.booleans()):
        attrs["dtype"] = draw(st.sampled_from(("int32", "int64", "uint8", "float32")))
    return (T(draw(O.small_shapes(max_rank=3)), draw(st.sampled_from(O.ALL_DTYPES))),), attrs


@st.composite
def _reshape_tensor_call(draw: st.DrawFn) -> CallArgs:
    shape = draw(O.small_shapes(max_rank=3))
    kind = draw(st.sampled_from(("reverse", "flat", "same", "one")))
    count = int(np.prod(shape, dtype=np.int64))
    new = {"reverse": tuple(reversed(shape)), "flat": (count,), "same": shape,
           "one": (1, *shape)}[kind]
    dtype = draw(st.sampled_from(O.ALL_DTYPES))
    return (T(shape, dtype), T((len(new),), "int64")), {"newshape": list(new)}


@st.composite
def _alloc_tensor_call(draw: st.DrawFn) -> CallArgs:
    static = draw(O.small_shapes(max_rank=3, max_dim=3))
    key = draw(st.sampled_from(("const_shape", "assert_shape")))
    dtype = draw(st.sampled_from(("float32", "int8", "int64", "float16", "uint16")))
    return (storage_type(), I64, T((len(static),), "int64")), {key: list(static),
                                                                "dtype": dtype}


@O.register_valid_call("vm.shape_of")
def _shape_of_valid() -> SearchStrategy:
    return _shape_of_call()


@O.register_invalid_call("vm.shape_of")
def _shape_of_invalid() -> SearchStrategy:
    return st.one_of(*_generic_bad(_shape_of_call(), st.sampled_from(
        ({"dtype": "bool"}, {"dtype": "float31"}, {"dtype": 64}))))


@O.register_valid_call("vm.reshape_tensor")
def _reshape_tensor_valid() -> SearchStrategy:
    return _reshape_tensor_call()


@O.register_inputs("vm.reshape_tensor")
@st.composite
def _reshape_tensor_inputs(draw: st.DrawFn, arg_types: tuple[Any, ...], attrs: dict[str, Any],
                           exact: bool) -> tuple[np.ndarray, ...]:
    data = draw(O.fast_arrays(arg_types[0].dtype, arg_types[0].shape, exact=exact))
    return data, np.array(attrs["newshape"], dtype=np.int64).reshape(-1)


@O.register_invalid_call("vm.reshape_tensor")
def _reshape_tensor_invalid() -> SearchStrategy:
    return st.one_of(st.sampled_from((
        ((T((2, 3), "float32"), T((1,), "int64")), {"newshape": [5]}),
        ((T((6,), "float32"), T((1,), "int64")), {"newshape": [2, 3]}),
        ((T((6,), "float32"), T((1,), "float32")), {"newshape": [6]}),
        ((T((6,), "float32"), T((1,), "int64")), {}),
        ((T((6,), "float32"), T((1,), "int64")), {"newshape": "6"}),
    )), *_generic_bad(_reshape_tensor_call()))


@O.register_valid_call("memory.kill")
def _kill_valid() -> SearchStrategy:
    return st.tuples(st.tuples(st.builds(T, O.small_shapes(max_rank=2),
                                         st.sampled_from(O.ALL_DTYPES))), st.just({}))


@O.register_invalid_call("memory.kill")
def _kill_invalid() -> SearchStrategy:
    return st.sampled_from((((I64, I64), {}), ((), {}), ((I64,), {"to_free": 1})))


@O.register_valid_call("memory.alloc_storage")
def _alloc_storage_valid() -> SearchStrategy:
    return st.tuples(st.builds(lambda n: (I64, T((n,), "int64"), I64), st.integers(0, 2)),
                     st.sampled_from(({}, {"dtype": "int8"}, {"virtual_device": None})))


@O.register_inputs("memory.alloc_storage")
@st.composite
def _alloc_storage_inputs(draw: st.DrawFn, arg_types: tuple[Any, ...], attrs: dict[str, Any],
                          exact: bool) -> tuple[np.ndarray, ...]:
    size = np.int64(draw(st.integers(0, 64)))
    align = np.int64(2 ** draw(st.integers(0, 7)))
    return np.asarray(size), np.zeros(arg_types[1].shape, np.int64), np.asarray(align)


@O.register_invalid_call("memory.alloc_storage")
def _alloc_storage_invalid() -> SearchStrategy:
    return st.sampled_from((
        ((T((), "int32"), T((1,), "int64"), I64), {}),
        ((I64, T((1,), "int64"), T((), "float32")), {}),
        ((T((1,), "int64"), T((1,), "int64"), I64), {}),
        ((I64, T((1,), "int64")), {}),
        ((I64, T((1,), "int64"), I64), {"dtype": "float31"}),
    ))


@O.register_valid_call("memory.alloc_tensor")
def _alloc_tensor_valid() -> SearchStrategy:
    return _alloc_tensor_call()


@O.register_inputs("memory.alloc_tensor")
@st.composite
def _alloc_tensor_inputs(draw: st.DrawFn, arg_types: tuple[Any, ...], attrs: dict[str, Any],
                         exact: bool) -> tuple[Any, ...]:
    from semantics import ops

    static = attrs.get("const_shape") or attrs.get("assert_shape") or []
    nbytes = int(np.prod(static, dtype=np.int64)) * np.dtype(attrs["dtype"]).itemsize
    offset = draw(st.integers(0, 8))
    storage = ops.get("memory.alloc_storage").impl(np.int64(nbytes + offset + draw(
        st.integers(0, 8))), np.zeros(1, np.int64), np.int64(8))
    return storage, np.asarray(np.int64(offset)), np.array(static, np.int64).reshape(-1)


@O.register_invalid_call("memory.alloc_tensor")
def _alloc_tensor_invalid() -> SearchStrategy:
    s = storage_type()
    return st.sampled_from((
        ((I64, I64, T((1,), "int64")), {"const_shape": [2]}),
        ((s, I64, T((1,), "int64")), {}),
        ((s, I64, T((2,), "int64")), {"const_shape": [2]}),
        ((s, T((), "float32"), T((1,), "int64")), {"assert_shape": [2]}),
        ((s, I64, T((1,), "float32")), {"assert_shape": [2]}),
        ((s, I64, T((1,), "int64")), {"const_shape": [2], "dtype": "float31"}),
    ))
