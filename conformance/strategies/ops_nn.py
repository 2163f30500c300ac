"""Valid/invalid call strategies and inputs for the ``nn`` and ``transform`` operator families.

Registered into the tables of :mod:`conformance.strategies.ops` (``VALID_CALLS``,
``INVALID_CALLS``, ``INPUTS``) by the decorators of the family modules in
:mod:`conformance.strategies.nn_transform`; this module imports them (once: Python caches
modules) and is the one :data:`~conformance.strategies.ops.EXTENSION_MODULES` names, so
``load_extensions()`` imports it on first use. Each valid strategy draws
``(arg_types, attrs)``: concrete argument types (a ``TupleType`` of tensors for
``concatenate``/``stack``) and attributes *as written in a call* (lists, sometimes the
1-element forms, defaults sometimes spelled out), built so that the relation accepts them
*by construction* (no filtering): convolution and pooling inputs are at least as large as
the dilated window, ``reshape`` codes are derived from the input shape, slices are never
reversed, ``take`` indices are in range where the mode requires it.

Invalid strategies draw calls that ``normalize_attrs`` or the relation must reject
with ``RelayTypeError``: mismatched channels/dims/dtypes, windows larger than the
padded input, axes out of range, malformed layouts, bad attribute values.

Inputs (:func:`call_inputs`) are drawn fast (a seed and numpy's generator, not
element by element), so that convolutions with hundreds of elements stay cheap;
``exact=False`` mixes in NaN, ±inf, -0.0 and the integer extremes. Only ``take``
registers them in ``INPUTS`` (its indices must be in range for mode ``fast``): the
program generator turns registered inputs into constants, which the other operators
do not need.

Layout (:mod:`conformance.strategies.nn_transform`): ``common`` (shared helpers),
``inputs``, ``nn_layers``, ``nn_spatial`` (conv2d, pools, pad), ``transform_reshape``,
``transform_slice``. The public names of all of them are re-exported here.
"""

from __future__ import annotations

# Imported for their registration side effects (once: Python caches modules), in the order
# the strategies were written.
from conformance.strategies.nn_transform import (  # noqa: F401
    inputs,
    nn_layers,
    nn_spatial,
    transform_reshape,
    transform_slice,
    winograd,
)
from conformance.strategies.nn_transform.common import (
    ALL,
    FLOATS,
    INTEGER,
    MATMUL_DTYPES,
    NN_OPS,
    NOT_A_TENSOR,
    NUMERIC,
    TRANSFORM_OPS,
    CallArgs,
    SearchStrategy,
    T,
    dtypes,
    shapes,
)
from conformance.strategies.nn_transform.inputs import (
    call_inputs,
    fast_array,
    plain_inputs,
    take_inputs,
    value_for,
)
from conformance.strategies.nn_transform.nn_spatial import (
    conv2d_call,
    global_pool_call,
    pad_call,
    pool2d_call,
)
from conformance.strategies.nn_transform.transform_reshape import (
    concatenate_call,
    expand_dims_call,
    reshape_call,
    reshape_like_call,
    split_call,
    squeeze_call,
    stack_call,
    transpose_call,
)
from conformance.strategies.nn_transform.transform_slice import (
    LAYOUT_PAIRS,
    broadcast_to_call,
    broadcast_to_like_call,
    collapse_sum_like_call,
    layout_transform_call,
    repeat_call,
    reverse_call,
    shape_of_call,
    strided_slice_call,
    take_call,
    tile_call,
)

__all__ = [
    "ALL", "FLOATS", "INTEGER", "MATMUL_DTYPES", "NN_OPS", "NOT_A_TENSOR", "NUMERIC",
    "TRANSFORM_OPS", "CallArgs", "SearchStrategy", "T", "dtypes", "shapes",
    "call_inputs", "fast_array", "plain_inputs", "take_inputs", "value_for",
    "conv2d_call", "global_pool_call", "pad_call", "pool2d_call",
    "concatenate_call", "expand_dims_call", "reshape_call", "reshape_like_call", "split_call",
    "squeeze_call", "stack_call", "transpose_call",
    "LAYOUT_PAIRS", "broadcast_to_call", "broadcast_to_like_call", "collapse_sum_like_call",
    "layout_transform_call", "repeat_call", "reverse_call", "shape_of_call",
    "strided_slice_call", "take_call", "tile_call",
]
