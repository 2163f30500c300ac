"""``Executable.save`` / ``backends.tvm.load``: a build survives the round trip."""

from __future__ import annotations

import numpy as np
import pytest

from backends.tvm import build, load
from interpreter import ConstructorValue, evaluate
from semantics import RelayRuntimeError

PROGRAM = """
def @sum_list(%l: List[float32]) -> float32 {
  match (%l) { Cons(%h, %t) => %h + @sum_list(%t), Nil => 0f }
}
def @main(%x: Tensor[(3, 4), float32], %w: Tensor[(5, 4), float32])
    -> (Tensor[(3, 5), float32], float32) {
  let %y = nn.relu(nn.dense(%x, %w)) * 2f;
  (%y, @sum_list(Cons(sum(%y), Cons(1.5f, Nil))))
}
"""

DATAFLOW = """
def @main(%x: Tensor[(3, 4), float32], %w: Tensor[(5, 4), float32]) -> Tensor[(3, 5), float32] {
  sigmoid(nn.dense(tanh(%x), %w) + 1f)
}
"""


def _inputs():
    rng = np.random.default_rng(0)
    return rng.standard_normal((3, 4)).astype("float32"), \
        rng.standard_normal((5, 4)).astype("float32")


def _close(a, b):
    if isinstance(a, tuple):
        return all(_close(x, y) for x, y in zip(a, b, strict=True))
    return np.allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("executor", ["vm", "aot", "graph"])
def test_saved_build_loads_and_computes_the_same(tmp_path, executor):
    text = DATAFLOW if executor == "graph" else PROGRAM
    exe = build(text, executor=executor)
    exe.save(tmp_path / "build")
    assert (tmp_path / "build" / "program.relay").exists()
    assert (tmp_path / "build" / "aot.py").exists() == (executor == "aot")
    again = load(tmp_path / "build")
    assert again.executor == executor
    x, w = _inputs()
    assert _close(again(x, w), evaluate(text, x, w))
    assert _close(again(x, w), exe(x, w))


def test_loaded_aot_imports_the_saved_module(tmp_path):
    exe = build(PROGRAM, executor="aot")
    exe.save(tmp_path)
    source = (tmp_path / "aot.py").read_text()
    assert "def build_program" in source
    assert load(tmp_path).source == source


def test_saved_params_stay_bound(tmp_path):
    x, w = _inputs()
    exe = build(DATAFLOW, params={"w": w})
    exe.save(tmp_path)
    again = load(tmp_path)
    assert _close(again(x), evaluate(DATAFLOW, x, w))
    with pytest.raises(RelayRuntimeError, match="wrong number of arguments"):
        again(x, w)


def test_run_other_entries_after_loading(tmp_path):
    build(PROGRAM).save(tmp_path)
    lst = ConstructorValue("Cons", (np.float32(2.0), ConstructorValue("Nil", ())))
    assert load(tmp_path).run("sum_list", lst) == np.float32(2.0)


def test_loading_something_else_is_a_runtime_error(tmp_path):
    with pytest.raises(RelayRuntimeError, match="not a saved build"):
        load(tmp_path)
    (tmp_path / "build.json").write_text('{"format": 99}')
    (tmp_path / "program.relay").write_text("def @main() { 1 }")
    with pytest.raises(RelayRuntimeError, match="unknown format"):
        load(tmp_path)


def test_saved_kernels_load_from_the_build_directory(tmp_path):
    pytest.importorskip("tvm", reason="compiled kernels need apache-tvm (extra `tvm`)")
    from backends.tvm.kernel.cache import KernelCache

    exe = build(DATAFLOW, executor="graph", cache=KernelCache(tmp_path / "cache"))
    assert exe.kernels.compiled >= 1
    exe.save(tmp_path / "build")
    assert list((tmp_path / "build" / "kernels").glob("*.so"))
    again = load(tmp_path / "build")
    assert again.kernels.compiled == exe.kernels.compiled
    # The kernels come from the build directory (nothing is compiled again: see misses below).
    assert again.kernels.cache.hits_disk >= 1
    assert again.kernels.cache.misses <= len(exe.fallbacks)  # only groups that do not lower
    x, w = _inputs()
    assert _close(again(x, w), evaluate(DATAFLOW, x, w))
