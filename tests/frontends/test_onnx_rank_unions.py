"""ONNX sequences whose tensors have different ranks: the elements are an importer-defined
ADT with one constructor per rank (``OnnxTensorF32 = OnnxF32R0(float32) | OnnxF32R1(...)``);
the user passes and receives plain arrays. Uniform-rank sequences stay ``List[Tensor]``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")

from onnx import TensorProto, helper  # noqa: E402

from frontends.onnx import ImporterError, from_onnx, from_relay_value, to_relay_value  # noqa: E402
from interpreter import evaluate  # noqa: E402
from semantics.parser import parse  # noqa: E402
from semantics.printer import pretty  # noqa: E402
from typechecker import check  # noqa: E402
from typechecker.api import global_types  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def model(nodes, inputs, outputs, opset=17):
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def tensor(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def seq_out(name):
    return helper.make_value_info(name, helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(F, None)))


def run(m, feeds, **kw):
    mod, params = from_onnx(m, **kw)
    args = [to_relay_value(feeds[vi.name], p.type_annotation)
            for vi, p in zip(m.graph.input, mod["main"].params)]
    return mod, from_relay_value(evaluate(mod, *args, *params.values()))


def arrays(rank):
    return st.lists(st.floats(-4, 4, width=32), min_size=rank and 2 ** rank,
                    max_size=rank and 2 ** rank).map(
        lambda xs: np.asarray(xs or [1.5], np.float32).reshape((2,) * rank))


def insert_model(ranks):
    names = ["a", "b", "c"]
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
             helper.make_node("SequenceInsert", ["s", "c", "p"], ["r"]),
             helper.make_node("SequenceAt", ["r", "q"], ["e"])]
    inputs = [tensor(n, F, [2] * k) for n, k in zip(names, ranks)]
    inputs += [tensor("p", I64, []), tensor("q", I64, [])]
    return model(nodes, inputs, [seq_out("r"), tensor("e", F, None)])


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=3, max_size=3).filter(lambda r: len(set(r)) > 1),
       st.integers(-2, 2), st.integers(-3, 2), st.data())
def test_a_sequence_of_several_ranks_holds_each_element_as_it_is(ranks, p, q, data):
    a, b, c = (data.draw(arrays(k)) for k in ranks)
    feeds = {"a": a, "b": b, "c": c, "p": np.int64(p), "q": np.int64(q)}
    mod, (got, elem) = run(insert_model(ranks), feeds)
    want = [a, b]
    want.insert(p, c)
    assert [x.shape for x in got] == [x.shape for x in want]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)
    np.testing.assert_array_equal(np.asarray(elem), want[q])
    text = pretty(mod)
    assert "type OnnxTensorF32 {" in text
    for k in sorted(set(ranks)):
        assert f"OnnxF32R{k}(" in text
    assert pretty(global_types(mod)["main"]).endswith(
        "-> (List[OnnxTensorF32], OnnxTensorF32)")


def test_the_module_type_checks_and_reads_back_from_its_text():
    m = insert_model([0, 1, 1])
    mod, _ = from_onnx(m)
    check(mod)
    again = parse(pretty(mod))
    check(again)
    feeds = [np.float32(2.0), np.arange(2, dtype=np.float32), np.ones(2, np.float32),
             np.int64(0), np.int64(0)]
    for module in (mod, again):
        got, elem = from_relay_value(evaluate(module, *feeds))
        assert [np.asarray(x).shape for x in got] == [(2,), (), (2,)]
        np.testing.assert_array_equal(elem, np.ones(2, np.float32))


def test_an_element_at_a_known_position_is_unwrapped_to_its_rank():
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
             helper.make_node("Constant", [], ["one"], value=helper.make_tensor(
                 "one", I64, [], [1])),
             helper.make_node("SequenceAt", ["s", "one"], ["v"]),
             helper.make_node("Add", ["v", "b"], ["y"])]
    m = model(nodes, [tensor("a", F, []), tensor("b", F, [3])], [tensor("y", F, [3])])
    b = np.array([1, 2, 3], np.float32)
    mod, y = run(m, {"a": np.float32(5), "b": b})
    np.testing.assert_array_equal(y, 2 * b)
    assert "match? (" in pretty(mod) and "OnnxF32R1(%x" in pretty(mod)


def test_a_use_that_needs_one_rank_is_an_error_naming_the_node():
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
             helper.make_node("SequenceAt", ["s", "p"], ["v"]),
             helper.make_node("Relu", ["v"], ["y"], name="relu_of_element")]
    m = model(nodes, [tensor("a", F, []), tensor("b", F, [3]), tensor("p", I64, [])],
              [tensor("y", F, None)])
    with pytest.raises(ImporterError) as err:
        from_onnx(m)
    assert "Relu node 2 'relu_of_element' (outputs ['y'])" in err.value.message
    assert "several ranks (OnnxTensorF32" in err.value.message and "run time" in err.value.message
    concat = model([helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
                    helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)],
                   [tensor("a", F, []), tensor("b", F, [3])], [tensor("y", F, None)])
    with pytest.raises(ImporterError, match=r"ConcatFromSequence node 1 .*tensors of one rank"):
        from_onnx(concat)


def test_a_uniform_rank_sequence_stays_a_list_of_tensors():
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"])]
    m = model(nodes, [tensor("a", F, [2]), tensor("b", F, [3])], [seq_out("s")])
    mod, got = run(m, {"a": np.zeros(2, np.float32), "b": np.ones(3, np.float32)})
    assert "OnnxTensor" not in pretty(mod)
    assert pretty(global_types(mod)["main"]).endswith("-> List[Tensor[(?), float32]]")
    assert [x.shape for x in got] == [(2,), (3,)]


def test_if_branches_of_different_ranks_give_the_user_each_array():
    then = helper.make_graph([helper.make_node("Identity", ["a"], ["t"])], "then", [],
                             [tensor("t", F, None)])
    other = helper.make_graph([helper.make_node("Identity", ["b"], ["e"])], "else", [],
                              [tensor("e", F, None)])
    m = model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
              [tensor("c", TensorProto.BOOL, []), tensor("a", F, []), tensor("b", F, [2])],
              [tensor("y", F, None)])
    for c, want in ((True, np.float32(3)), (False, np.array([1, 2], np.float32))):
        _, y = run(m, {"c": np.bool_(c), "a": np.float32(3), "b": np.array([1, 2], np.float32)})
        assert np.asarray(y).shape == np.shape(want)
        np.testing.assert_array_equal(y, want)
