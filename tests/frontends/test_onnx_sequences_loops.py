"""ONNX sequences (→ the prelude's ``List``), optionals (→ ``Option``), ``Loop`` with
data-dependent trip counts, scan outputs and shape-changing carried values, nested loops and
``Scan``: against onnxruntime, with one
recursive function per loop (no unrolling), and on the TVM VM where it runs them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")

from onnx import TensorProto, helper  # noqa: E402

from frontends.onnx import ImporterError, from_onnx, from_relay_value, to_relay_value  # noqa: E402
from interpreter import evaluate  # noqa: E402
from semantics.expr import Function, Let  # noqa: E402
from semantics.visitor import post_order  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def model(nodes, inputs, outputs, opset=17):
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def tensor(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def seq(name, elem, shape):
    return helper.make_value_info(name, helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(elem, shape)))


def reference(m, feeds):
    """onnxruntime's outputs. Not ``onnx.reference``: its SequenceInsert puts position
    len(seq) at the front, its Loop with a trip count and no condition runs once, its Scan
    supports only forward directions on axis 0, and a zero-iteration scan output fails."""
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {k: np.asarray(v) if isinstance(v, np.generic) else v
                           for k, v in feeds.items()})


def run_relay(m, feeds, **kw):
    mod, params = from_onnx(m, **kw)
    main = mod["main"]
    args = [to_relay_value(feeds[vi.name], p.type_annotation)
            for vi, p in zip(m.graph.input, main.params)]
    out = evaluate(mod, *args, *params.values())
    return mod, from_relay_value(out)


def assert_same(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    else:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
        assert np.asarray(got).shape == np.asarray(want).shape


def local_functions(mod):
    return [n for n in post_order(mod["main"]) if isinstance(n, Let)
            and isinstance(n.value, Function)]


lengths = st.lists(st.integers(1, 4), min_size=1, max_size=5)


@settings(max_examples=15, deadline=None)
@given(lengths, st.data())
def test_sequence_positions_match_the_reference(sizes, data):
    n = len(sizes)
    at = data.draw(st.integers(-n, n - 1), label="at")
    ins_pos = data.draw(st.integers(-n, n), label="insert")
    er = data.draw(st.integers(-n, n - 1), label="erase")
    items = [np.arange(k, dtype=np.float32) + i for i, k in enumerate(sizes)]
    m = model([
        helper.make_node("SequenceAt", ["s", "p_at"], ["x"]),
        helper.make_node("SequenceInsert", ["s", "v", "p_ins"], ["s2"]),
        helper.make_node("SequenceErase", ["s2", "p_er"], ["s3"]),
        helper.make_node("SequenceLength", ["s3"], ["n"]),
        helper.make_node("ConcatFromSequence", ["s3"], ["c"], axis=0),
    ], [seq("s", F, ["N"]), tensor("v", F, [2]), tensor("p_at", I64, []),
        tensor("p_ins", I64, []), tensor("p_er", I64, [])],
        [tensor("x", F, None), seq("s3", F, None), tensor("n", I64, []), tensor("c", F, None)])
    feeds = {"s": items, "v": np.array([7, 8], np.float32), "p_at": np.int64(at),
             "p_ins": np.int64(ins_pos), "p_er": np.int64(er)}
    want = reference(m, feeds)
    mod, got = run_relay(m, feeds)
    for g, w in zip(got, want):
        assert_same(g, w)
    # no unrolling: the positions are run-time values, handled by recursive helpers
    assert {"onnx_seq_at", "onnx_seq_insert", "onnx_seq_erase"} <= set(mod.functions)


def test_a_position_out_of_range_is_a_runtime_error():
    from semantics.errors import RelayRuntimeError
    m = model([helper.make_node("SequenceAt", ["s", "p"], ["x"])],
              [seq("s", F, [2]), tensor("p", I64, [])], [tensor("x", F, [2])])
    for p in (1, 3, -2):
        with pytest.raises(RelayRuntimeError, match="position_out_of_range"):
            run_relay(m, {"s": [np.zeros(2, np.float32)], "p": np.int64(p)})


@pytest.mark.parametrize("axis,new_axis,keepdims,split", [
    (0, 0, 1, None), (1, 1, 0, None), (1, 0, 1, np.int64(2)), (0, 0, 1, [1, 2])])
def test_split_to_sequence_then_concat_matches_the_reference(axis, new_axis, keepdims, split):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    ins = ["x"] + (["split"] if split is not None else [])
    inputs = [tensor("x", F, [3, 4])]
    feeds = {"x": x}
    if split is not None:
        arr = np.asarray(split, np.int64)
        inputs.append(tensor("split", I64, list(arr.shape)))
        feeds["split"] = arr
    nodes = [helper.make_node("SplitToSequence", ins, ["s"], axis=axis, keepdims=keepdims),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=axis,
                              new_axis=new_axis)]
    m = model(nodes, inputs, [tensor("y", F, None)])
    want = reference(m, feeds)
    const = {"split": feeds["split"]} if split is not None else None
    mod, params = from_onnx(m, const_inputs=const)
    assert_same(evaluate(mod, x, *params.values()), want[0])


def test_sequence_map_applies_its_body_to_each_element():
    body = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "body",
                             [tensor("a", F, ["N"]), tensor("b", F, [])],
                             [tensor("c", F, ["N"])])
    m = model([helper.make_node("SequenceMap", ["s", "t"], ["r"], body=body)],
              [seq("s", F, ["N"]), tensor("t", F, [])], [seq("r", F, ["N"])])
    feeds = {"s": [np.arange(k, dtype=np.float32) for k in (1, 3, 2)], "t": np.float32(10)}
    want = reference(m, feeds)
    _, got = run_relay(m, feeds)
    assert_same(got, want[0])


def test_optionals_are_options():
    m = model([helper.make_node("OptionalHasElement", ["o"], ["h"]),
               helper.make_node("OptionalGetElement", ["o"], ["x"])],
              [helper.make_value_info("o", helper.make_optional_type_proto(
                  helper.make_tensor_type_proto(F, [2])))],
              [tensor("h", B, []), tensor("x", F, [2])], opset=18)
    v = np.array([1, 2], np.float32)
    _, (h, x) = run_relay(m, {"o": v})
    assert bool(h) and np.array_equal(x, v)
    m2 = model([helper.make_node("OptionalHasElement", ["o"], ["h"])], list(m.graph.input),
               [tensor("h", B, [])], opset=18)
    _, h = run_relay(m2, {"o": None})
    assert not bool(h)


def test_an_undeclared_element_shape_asks_for_shapes():
    m = model([helper.make_node("Identity", ["s"], ["r"])],
              [helper.make_value_info("s", helper.make_sequence_type_proto(
                  helper.make_tensor_type_proto(F, None)))],
              [helper.make_value_info("r", helper.make_sequence_type_proto(
                  helper.make_tensor_type_proto(F, None)))])
    with pytest.raises(ImporterError, match="shapes="):
        from_onnx(m)
    _, got = run_relay(m, {"s": [np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)]},
                       shapes={"s": (None, 3)})
    assert [g.shape for g in got] == [(2, 3), (4, 3)]


def doubling_loop():
    """``while sum(x) < limit: x = 2 * x`` with x scanned out each iteration."""
    body = helper.make_graph([
        helper.make_node("Mul", ["x_in", "two"], ["x_out"]),
        helper.make_node("ReduceSum", ["x_out"], ["s"], keepdims=0),
        helper.make_node("Less", ["s", "limit"], ["c_out"]),
        helper.make_node("Identity", ["x_out"], ["scan_out"]),
    ], "body", [tensor("i", I64, []), tensor("c", B, []), tensor("x_in", F, [3])],
        [tensor("c_out", B, []), tensor("x_out", F, [3]), tensor("scan_out", F, [3])],
        [helper.make_tensor("two", F, [], [2.0])])
    return model([helper.make_node("Loop", ["", "cond", "x"], ["y", "ys"], body=body)],
                 [tensor("cond", B, []), tensor("x", F, [3]), tensor("limit", F, [])],
                 [tensor("y", F, [3]), tensor("ys", F, None)])


@settings(max_examples=10, deadline=None)
@given(st.floats(1, 1e4))
def test_a_data_dependent_loop_scans_out_every_iteration(limit):
    m = doubling_loop()
    feeds = {"cond": np.bool_(True), "x": np.array([1, 2, 3], np.float32),
             "limit": np.float32(limit)}
    want = reference(m, feeds)
    mod, got = run_relay(m, feeds)
    assert_same(list(got), want)
    assert len(local_functions(mod)) == 2   # the loop and the stacking of its scan output


def growing_loop():
    """A carried value whose length changes every iteration: ``x = concat(x, [i])``."""
    body = helper.make_graph([
        helper.make_node("Cast", ["i"], ["f"], to=F),
        helper.make_node("Unsqueeze", ["f", "zero"], ["fv"]),
        helper.make_node("Concat", ["x_in", "fv"], ["x_out"], axis=0),
        helper.make_node("Identity", ["c"], ["c_out"]),
    ], "body", [tensor("i", I64, []), tensor("c", B, []), tensor("x_in", F, None)],
        [tensor("c_out", B, []), tensor("x_out", F, None)],
        [helper.make_tensor("zero", I64, [1], [0])])
    return model([helper.make_node("Loop", ["n", "", "x"], ["y"], body=body)],
                 [tensor("n", I64, []), tensor("x", F, [1])], [tensor("y", F, None)])


@pytest.mark.parametrize("n", [0, 1, 4])
def test_a_carried_value_may_change_shape(n):
    m = growing_loop()
    feeds = {"n": np.int64(n), "x": np.array([9], np.float32)}
    want = reference(m, feeds)
    mod, got = run_relay(m, feeds)
    assert_same(got, want[0])
    (loop,) = local_functions(mod)
    assert "?" in str(loop.var.type_annotation)


def test_nested_loops_are_one_recursion_each():
    inner = helper.make_graph([
        helper.make_node("Cast", ["j"], ["j_f"], to=F),
        helper.make_node("Add", ["a_in", "j_f"], ["a_out"]),
        helper.make_node("Identity", ["c"], ["c_out"]),
    ], "inner", [tensor("j", I64, []), tensor("c", B, []), tensor("a_in", F, [])],
        [tensor("c_out", B, []), tensor("a_out", F, [])])
    outer = helper.make_graph([
        helper.make_node("Loop", ["i", "", "s_in"], ["s_out"], body=inner),
        helper.make_node("Identity", ["c"], ["c_out"]),
        helper.make_node("Identity", ["s_out"], ["scan"]),
    ], "outer", [tensor("i", I64, []), tensor("c", B, []), tensor("s_in", F, [])],
        [tensor("c_out", B, []), tensor("s_out", F, []), tensor("scan", F, [])])
    m = model([helper.make_node("Loop", ["n", "", "s"], ["r", "rs"], body=outer)],
              [tensor("n", I64, []), tensor("s", F, [])], [tensor("r", F, []),
                                                          tensor("rs", F, None)])
    for n in (0, 3, 6):
        feeds = {"n": np.int64(n), "s": np.float32(1)}
        want = reference(m, feeds)
        mod, got = run_relay(m, feeds)
        assert_same(list(got), want)
    assert len(local_functions(mod)) == 3   # outer, inner, the stacking of rs


@pytest.mark.parametrize("in_dir,out_dir,in_axis,out_axis", [
    (0, 0, 0, 0), (1, 0, 0, 0), (0, 1, 1, 0), (1, 1, 1, 1), (0, 0, -1, -1)])
def test_scan_matches_the_reference(in_dir, out_dir, in_axis, out_axis):
    body = helper.make_graph([
        helper.make_node("Add", ["s_in", "x"], ["s_out"]),
        helper.make_node("Mul", ["s_out", "x"], ["y"]),
    ], "body", [tensor("s_in", F, [2]), tensor("x", F, [2])],
        [tensor("s_out", F, [2]), tensor("y", F, [2])])
    shape = [5, 2] if in_axis == 0 else [2, 5]
    m = model([helper.make_node("Scan", ["s", "xs"], ["sf", "ys"], body=body,
                                num_scan_inputs=1, scan_input_directions=[in_dir],
                                scan_output_directions=[out_dir], scan_input_axes=[in_axis],
                                scan_output_axes=[out_axis])],
              [tensor("s", F, [2]), tensor("xs", F, shape)],
              [tensor("sf", F, [2]), tensor("ys", F, None)], opset=16)
    rng = np.random.default_rng(in_dir + 2 * out_dir)
    feeds = {"s": rng.standard_normal(2).astype(np.float32),
             "xs": rng.standard_normal(shape).astype(np.float32)}
    want = reference(m, feeds)
    mod, got = run_relay(m, feeds)
    assert_same(list(got), want)


def _vm_cases():
    seq_model = model([
        helper.make_node("SequenceAt", ["s", "p"], ["x"]),
        helper.make_node("SequenceInsert", ["s", "x"], ["s2"]),
        helper.make_node("ConcatFromSequence", ["s2"], ["c"], axis=0),
    ], [seq("s", F, ["N"]), tensor("p", I64, [])], [tensor("c", F, None)])
    body = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "body",
                             [tensor("a", F, ["N"]), tensor("b", F, [])],
                             [tensor("c", F, ["N"])])
    map_model = model([helper.make_node("SequenceMap", ["s", "t"], ["r"], body=body)],
                      [seq("s", F, ["N"]), tensor("t", F, [])], [seq("r", F, ["N"])])
    scan_body = helper.make_graph([helper.make_node("Add", ["s_in", "x"], ["s_out"]),
                                   helper.make_node("Mul", ["s_out", "x"], ["y"])], "body",
                                  [tensor("s_in", F, [2]), tensor("x", F, [2])],
                                  [tensor("s_out", F, [2]), tensor("y", F, [2])])
    scan_model = model([helper.make_node("Scan", ["s", "xs"], ["sf", "ys"], body=scan_body,
                                         num_scan_inputs=1, scan_input_directions=[1])],
                       [tensor("s", F, [2]), tensor("xs", F, [5, 2])],
                       [tensor("sf", F, [2]), tensor("ys", F, None)], opset=16)
    items = [np.arange(3, dtype=np.float32), np.ones(2, np.float32)]
    return {
        "while-loop": (doubling_loop(), [{"cond": np.bool_(True), "x": np.array(
            [1, 2, 3], np.float32), "limit": np.float32(lim)} for lim in (5.0, 3000.0)]),
        "growing-loop": (growing_loop(), [{"n": np.int64(n), "x": np.array([9], np.float32)}
                                          for n in (0, 4)]),
        "sequences": (seq_model, [{"s": items, "p": np.int64(p)} for p in (-1, 0)]),
        "sequence-map": (map_model, [{"s": items, "t": np.float32(10)}]),
        "scan": (scan_model, [{"s": np.ones(2, np.float32),
                               "xs": np.arange(10, dtype=np.float32).reshape(5, 2)}]),
    }


@pytest.mark.parametrize("name", [
    # growing-loop compiles a kernel per length the loop reaches (~35 s cold): slow
    pytest.param(n, marks=pytest.mark.slow) if n == "growing-loop" else n
    for n in sorted(_vm_cases())])
def test_the_tvm_vm_runs_loops_sequences_and_scan_as_the_oracle(name):
    pytest.importorskip("tvm", reason="apache-tvm is not installed (extra `tvm`)")
    from backends.tvm import build
    m, feed_sets = _vm_cases()[name]
    mod, params = from_onnx(m)
    exe = build(mod, params=params, executor="vm")
    for feeds in feed_sets:
        args = [to_relay_value(feeds[vi.name], p.type_annotation)
                for vi, p in zip(m.graph.input, mod["main"].params)]
        want = from_relay_value(evaluate(mod, *args, *params.values()))
        got = from_relay_value(exe(*args))
        assert_same(list(got) if isinstance(got, tuple) else got,
                    list(want) if isinstance(want, tuple) else want)


@pytest.mark.parametrize("keepdims", [0, 1])
def test_split_to_sequence_of_a_run_time_length_is_a_recursion(keepdims):
    """The batch dim is symbolic: one import runs for every length, no unrolling."""
    m = model([helper.make_node("SplitToSequence", ["x"], ["s"], axis=0, keepdims=keepdims),
               helper.make_node("SequenceLength", ["s"], ["n"]),
               helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0,
                                new_axis=1 - keepdims)],
              [tensor("x", F, ["batch", 2])], [tensor("n", I64, []), tensor("y", F, None)])
    mod, params = from_onnx(m)
    assert len(local_functions(mod)) == 2   # the split and the concatenation
    for batch in (1, 3, 5):
        x = np.arange(2 * batch, dtype=np.float32).reshape(batch, 2)
        want = reference(m, {"x": x})
        _, got = run_relay(m, {"x": x})
        assert_same(list(got), want)


@pytest.mark.parametrize("direction", [0, 1])
def test_scan8_runs_the_scan_on_each_batch_row(direction):
    body = helper.make_graph([helper.make_node("Add", ["s_in", "x"], ["s_out"]),
                              helper.make_node("Identity", ["s_out"], ["y"])], "body",
                             [tensor("s_in", F, [2]), tensor("x", F, [2])],
                             [tensor("s_out", F, [2]), tensor("y", F, [2])])
    m = model([helper.make_node("Scan", ["", "s", "xs"], ["sf", "ys"], body=body,
                                num_scan_inputs=1, directions=[direction])],
              [tensor("s", F, [3, 2]), tensor("xs", F, [3, 4, 2])],
              [tensor("sf", F, [3, 2]), tensor("ys", F, [3, 4, 2])], opset=8)
    rng = np.random.default_rng(direction)
    feeds = {"s": rng.standard_normal((3, 2)).astype(np.float32),
             "xs": rng.standard_normal((3, 4, 2)).astype(np.float32)}
    want = reference(m, feeds)
    _, got = run_relay(m, feeds)
    assert_same(list(got), want)
