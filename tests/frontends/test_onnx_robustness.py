"""No ONNX model, however malformed, makes ``from_onnx`` raise anything but a ``RelayError``:
random single-operator graphs (any supported operator, random input ranks and dtypes, random
attributes) either import — and then type-check — or fail with an ``ImporterError``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from frontends.onnx import from_onnx  # noqa: E402
from frontends.onnx.importer import CONVERTERS  # noqa: E402
from semantics import RelayError  # noqa: E402
from typechecker import check  # noqa: E402

OPS = sorted(op for op in CONVERTERS if op not in ("If", "Loop"))
DTYPES = [TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL, TensorProto.INT32]
ATTR_VALUES = st.one_of(
    st.integers(-3, 5), st.floats(-2, 2, width=32),
    st.lists(st.integers(-2, 4), min_size=1, max_size=4),
    st.sampled_from([b"NOTSET", b"SAME_UPPER", b"VALID", b"constant", b"reflect", b"DCR"]))


@st.composite
def single_node_models(draw):
    op = draw(st.sampled_from(OPS))
    entry = CONVERTERS[op]
    n_in = draw(st.integers(0, 4))
    inputs, inits, names = [], [], []
    for k in range(n_in):
        name = f"in{k}"
        dtype = draw(st.sampled_from(DTYPES))
        shape = draw(st.lists(st.integers(0, 3), max_size=4))
        if draw(st.booleans()):
            np_dtype = helper.tensor_dtype_to_np_dtype(dtype)
            arr = np.asarray(draw(st.lists(st.integers(-3, 3), min_size=int(np.prod(shape)),
                                           max_size=int(np.prod(shape)))),
                             dtype=np_dtype).reshape(shape)
            inits.append(numpy_helper.from_array(arr, name))
        else:
            inputs.append(helper.make_tensor_value_info(name, dtype, shape))
        names.append(name if draw(st.integers(0, 5)) else "")
    attrs = {}
    for a in sorted(entry.attrs):
        if a in ("body", "then_branch", "else_branch", "value", "sparse_value") or \
                draw(st.integers(0, 2)):
            continue
        attrs[a] = draw(ATTR_VALUES)
    n_out = draw(st.integers(1, 3))
    outs = [f"out{k}" for k in range(n_out)]
    node = helper.make_node(op, names, outs, **attrs)
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info(outs[0], TensorProto.FLOAT, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(
        "", draw(st.sampled_from([9, 11, 13, 17, 18, 21])))])
    return model


@given(single_node_models())
@settings(max_examples=300)
def test_malformed_models_raise_only_relay_errors(model):
    try:
        mod, _ = from_onnx(model)
    except RelayError:
        return
    try:
        check(mod)
    except RelayError:
        pass


def test_bytes_that_are_not_a_model():
    with pytest.raises(RelayError, match="not an ONNX model"):
        from_onnx(b"\x00\x01garbage")
