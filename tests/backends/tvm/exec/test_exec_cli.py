"""``relay build`` and ``relay run --backend tvm`` (docs/architecture.md#cli)."""

from __future__ import annotations

import numpy as np
import pytest

from backends.tvm import load
from relay.cli import main

PROGRAM = """
def @fact(%n: int32) -> int32 { if (%n <= 1) { 1 } else { %n * @fact(%n - 1) } }
def @main(%x: Tensor[(2), float32], %p: (int32, bool), %xs: List[int32]) {
  (add(%x, %x), %p.1, @length(%xs), @fact(%p.0))
}
def @div(%a: int32, %b: int32) -> int32 { %a / %b }
"""

DENSE = """
def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32]) -> Tensor[(2, 4), float32] {
  nn.relu(nn.dense(%x, %w))
}
"""


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "prog.relay"
    path.write_text(PROGRAM, encoding="utf-8")
    return str(path)


@pytest.fixture
def dense(tmp_path):
    path = tmp_path / "dense.relay"
    path.write_text(DENSE, encoding="utf-8")
    np.savez(tmp_path / "w.npz", w=np.arange(12, dtype="float32").reshape(4, 3))
    return str(path), str(tmp_path / "w.npz")


def relay(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_with_the_tvm_backend_prints_what_the_interpreter_prints(program, capsys):
    argv = (program, "[1.5, 2]", "[4, true]", '{"Cons": [1, {"Cons": [2, {"Nil": []}]}]}')
    assert relay(capsys, "run", *argv, "--backend", "tvm") == relay(capsys, "run", *argv)
    code, out, _ = relay(capsys, "run", *argv, "--backend", "tvm")
    assert (code, out) == (0, "(array([3., 4.], dtype=float32), True, 2, 24)\n")


def test_run_tvm_runtime_error_exits_1(program, capsys):
    code, out, err = relay(capsys, "run", program, "1", "0", "--entry", "div",
                           "--backend", "tvm")
    assert code == 1 and out == ""
    assert "division by zero" in err and "Traceback" not in err


def test_run_tvm_with_params(dense, capsys):
    path, params = dense
    code, out, err = relay(capsys, "run", path, "[[1, 0, 0], [0, 0, -1]]", "--backend", "tvm",
                           "--params", params)
    assert (code, err) == (0, "")
    assert out == "array([[0., 3., 6., 9.], [0., 0., 0., 0.]], dtype=float32)\n"


def test_params_on_the_interpreter_bind_main_by_name(dense, capsys):
    path, params = dense
    code, out, err = relay(capsys, "run", path, "[[1, 0, 0], [0, 0, -1]]", "--params", params)
    assert (code, err) == (0, "")
    assert out == "array([[0., 3., 6., 9.], [0., 0., 0., 0.]], dtype=float32)\n"


def test_params_with_another_entry_is_a_usage_error(dense, capsys):
    path, params = dense
    code, _, err = relay(capsys, "run", path, "[[1, 0, 0]]", "--params", params, "--entry", "f")
    assert code == 2 and "--params binds main" in err


@pytest.mark.parametrize("executor", ["vm", "graph", "aot"])
def test_build_writes_a_loadable_build(dense, capsys, tmp_path, executor):
    path, params = dense
    out_dir = tmp_path / f"out-{executor}"
    code, out, err = relay(capsys, "build", path, "-o", str(out_dir), "-O2", "--executor",
                           executor, "--params", params)
    assert (code, err) == (0, "")
    assert out.startswith(f"built {out_dir}: executor {executor}, -O2")
    exe = load(out_dir)
    got = exe(np.array([[1, 0, 0], [0, 0, -1]], dtype="float32"))
    np.testing.assert_array_equal(got, [[0, 3, 6, 9], [0, 0, 0, 0]])


def test_build_rejects_what_the_graph_executor_cannot_run(program, capsys, tmp_path):
    code, out, err = relay(capsys, "build", program, "-o", str(tmp_path / "o"),
                           "--executor", "graph")
    assert code == 1 and out == ""
    assert "executor=\"vm\"" in err and "Traceback" not in err


def test_build_needs_an_output_directory(program, capsys):
    assert main(["build", program]) == 2      # a usage error (only --target vta needs no -o)
    assert "-o" in capsys.readouterr().err


def test_build_of_a_bad_params_file_is_a_user_error(dense, capsys, tmp_path):
    path, _ = dense
    bad = tmp_path / "bad.npz"
    bad.write_text("not an archive")
    code, _, err = relay(capsys, "build", path, "-o", str(tmp_path / "o"), "--params", str(bad))
    assert code == 1 and "--params: cannot read" in err
