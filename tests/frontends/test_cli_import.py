"""``relay import MODEL.onnx -o OUT.relay`` writes Relay text and an .npz of parameters;
``relay run OUT.relay ARG --params OUT.npz`` runs it."""

from __future__ import annotations

import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from relay.cli import main  # noqa: E402


def _write_model(path):
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 2])],
        [numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return w


def test_import_then_run_with_params(tmp_path, capsys):
    w = _write_model(tmp_path / "m.onnx")
    out = tmp_path / "out.relay"
    assert main(["import", str(tmp_path / "m.onnx"), "-o", str(out)]) == 0
    text = out.read_text()
    assert "def @main(%x: Tensor[(n, 3), float32], %w: Tensor[(3, 2), float32])" in text
    saved = np.load(tmp_path / "out.npz")
    assert saved.files == ["w"]
    np.testing.assert_array_equal(saved["w"], w)
    x = np.array([[1, -2, 3], [0, 1, 0]], np.float32)
    np.save(tmp_path / "x.npy", x)
    capsys.readouterr()
    assert main(["run", str(out), str(tmp_path / "x.npy"), "--params",
                 str(tmp_path / "out.npz")]) == 0
    printed = capsys.readouterr().out
    want = np.maximum(x @ w, 0)
    assert printed.strip().startswith("array(") and "dtype=float32" in printed
    numbers = [float(v) for v in re.findall(r"-?\d+\.\d*", printed)]
    assert numbers == want.reshape(-1).tolist()


def test_import_of_an_unsupported_model_is_a_user_error(tmp_path, capsys):
    g = helper.make_graph([helper.make_node("Det", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])])
    onnx.save(helper.make_model(g), str(tmp_path / "bad.onnx"))
    assert main(["import", str(tmp_path / "bad.onnx")]) == 1
    assert "operator Det is not supported" in capsys.readouterr().err
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    assert main(["import", str(tmp_path / "junk.onnx")]) == 1


def test_run_with_a_missing_params_file_is_a_user_error(tmp_path, capsys):
    _write_model(tmp_path / "m.onnx")
    assert main(["import", str(tmp_path / "m.onnx")]) == 0
    assert (tmp_path / "m.relay").exists() and (tmp_path / "m.npz").exists()
    assert main(["run", str(tmp_path / "m.relay"), "[[1, 2, 3]]", "--params",
                 str(tmp_path / "nope.npz")]) == 1
