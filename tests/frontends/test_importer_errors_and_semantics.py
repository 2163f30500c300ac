"""Importer robustness and semantics (issue 33, items 7 and 8).

ONNX: an initializer whose ``raw_data`` does not fit its dims, external data that is
missing, empty bytes, and import-time folding of huge results (``Range(0, 1e12, 1)``,
``Tile`` of a small constant by ``[1e9, 1e9]``: folded only when small *after* folding) end
in an ``ImporterError`` or import without folding; integer ``Div`` is exact beyond 2**53.
PyTorch: something other than an ``ExportedProgram``, a model returning ``None``; ``x / 3``
on int64 is true division (float32, as PyTorch); ``x.add_(1)`` does not make ``main`` return
the mutated input.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from interpreter import evaluate
from semantics import RelayError

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs onnx (extra 'onnx')")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from frontends.onnx import from_onnx  # noqa: E402


def _model(nodes: list, inits: list, inputs: list, outputs: list) -> object:
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)


def test_an_initializer_whose_raw_data_does_not_fit_its_dims() -> None:
    bad = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], raw_data=b"\0" * 8)
    with pytest.raises(RelayError, match="raw_data has 8 bytes"):
        from_onnx(_model([helper.make_node("Add", ["x", "w"], ["y"])], [bad], [X], [Y]))


def test_missing_external_data(tmp_path: Path) -> None:
    w = helper.make_tensor("w", TensorProto.FLOAT, [2], vals=b"\0" * 8, raw=True)
    m = _model([helper.make_node("Add", ["x", "w"], ["y"])], [w], [X], [Y])
    onnx.save_model(m, str(tmp_path / "m.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="w.bin", size_threshold=0)
    mod, params = from_onnx(str(tmp_path / "m.onnx"))          # present: imports
    np.testing.assert_array_equal(params["w"], np.zeros(2, np.float32))
    os.unlink(tmp_path / "w.bin")
    with pytest.raises(RelayError, match="external data"):
        from_onnx(str(tmp_path / "m.onnx"))


@pytest.mark.parametrize("data", [b"", None, 42])
def test_empty_bytes_or_not_a_model(data: object) -> None:
    with pytest.raises(RelayError):
        from_onnx(data)


def _ints(*names: str) -> list:
    return [helper.make_tensor_value_info(n, TensorProto.INT64, None) for n in names]


def test_huge_range_and_tile_are_not_folded_at_import_time() -> None:
    rng = _model([helper.make_node("Range", ["s", "l", "d"], ["y"])],
                 [numpy_helper.from_array(np.array(v, np.int64), n)
                  for n, v in (("s", 0), ("l", 10**12), ("d", 1))], [], _ints("y"))
    mod, _ = from_onnx(rng)
    assert "arange" in str(mod["main"].body.value.op.name)     # let %y = arange(...); %y
    small = _model([helper.make_node("Range", ["s", "l", "d"], ["y"])],
                   [numpy_helper.from_array(np.array(v, np.int64), n)
                    for n, v in (("s", 0), ("l", 5), ("d", 2))], [], _ints("y"))
    mod, _ = from_onnx(small)
    np.testing.assert_array_equal(evaluate(mod), [0, 2, 4])
    tile = _model([helper.make_node("Tile", ["c", "r"], ["y"])],
                  [numpy_helper.from_array(np.ones((2, 2), np.float32), "c"),
                   numpy_helper.from_array(np.array([10**9, 10**9], np.int64), "r")], [], [Y])
    mod, _ = from_onnx(tile, freeze_params=True)                # no 22 GiB array
    assert mod["main"].body.value.op.name == "tile"


def test_integer_div_is_exact_beyond_2_to_the_53() -> None:
    a, b = (helper.make_tensor_value_info(n, TensorProto.INT64, [3]) for n in "ab")
    mod, _ = from_onnx(_model([helper.make_node("Div", ["a", "b"], ["y"])], [], [a, b],
                              _ints("y")))
    got = evaluate(mod, np.array([2**62 + 1, -7, 7], np.int64), np.array([1, 2, -2], np.int64))
    np.testing.assert_array_equal(got, [2**62 + 1, -3, -3])


# --- PyTorch --------------------------------------------------------------------------------

def _torch() -> object:
    return pytest.importorskip("torch", reason="the PyTorch importer needs torch")


def test_torch_true_division_of_integers() -> None:
    torch = _torch()
    from frontends.torch import from_exported_program

    class Div(torch.nn.Module):  # type: ignore[name-defined,misc]
        def forward(self, x: object) -> object:
            return x / 3  # type: ignore[operator]

    x = torch.tensor([7, -7, 2**40], dtype=torch.int64)  # type: ignore[attr-defined]
    mod, _ = from_exported_program(torch.export.export(Div(), (x,)))  # type: ignore[attr-defined]
    got = evaluate(mod, x.numpy())
    want = Div()(x).numpy()
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_torch_in_place_update_is_not_a_result() -> None:
    torch = _torch()
    from frontends.torch import from_exported_program

    class AddInPlace(torch.nn.Module):  # type: ignore[name-defined,misc]
        def forward(self, x: object) -> object:
            x.add_(1)  # type: ignore[attr-defined]
            return x * 2  # type: ignore[operator]

    x = torch.tensor([1.0, 2.0])  # type: ignore[attr-defined]
    ep = torch.export.export(AddInPlace(), (x.clone(),))  # type: ignore[attr-defined]
    mod, _ = from_exported_program(ep)
    got = evaluate(mod, x.numpy())
    assert not isinstance(got, tuple)
    np.testing.assert_array_equal(got, AddInPlace()(x.clone()).numpy())


def test_torch_importer_refuses_what_is_not_an_exported_program() -> None:
    torch = _torch()
    from frontends.torch import from_exported_program

    class Nothing(torch.nn.Module):  # type: ignore[name-defined,misc]
        def forward(self, x: object) -> None:
            return None

    with pytest.raises(RelayError, match="torch.export.export"):
        from_exported_program(Nothing())
    with pytest.raises(RelayError, match="ExportedProgram"):
        from_exported_program(None)
    ep = torch.export.export(Nothing(), (torch.ones(2),))  # type: ignore[attr-defined]
    with pytest.raises(RelayError, match="not a tensor|no tensor"):
        from_exported_program(ep)
