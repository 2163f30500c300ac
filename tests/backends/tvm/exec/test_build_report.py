"""What a build tells its user (issue 34): each kernel's schedule and the recipes declined on
the way, time per phase, kernels compiled and cached, fallbacks; ``relay build`` printing it,
``relay run DIR`` running a saved build, ``relay profile`` timing each kernel."""

from __future__ import annotations

import io
import sys
import time

import numpy as np
import pytest

from backends.tvm import build
from backends.tvm.kernel.cache import KernelCache
from backends.tvm.sched import KernelInfo, Scheduler, ScheduleRule, refused
from relay.cli import main
from relay.commands.build import summary
from semantics.parser import parse

DENSE = """
def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32]) -> Tensor[(2, 4), float32] {
  nn.relu(nn.dense(%x, %w))
}
"""


def _prim_func():
    import tvm
    from tvm import te

    a = te.placeholder((8,), name="A")
    b = te.compute((8,), lambda i: a[i] * 2.0, name="B")
    return te.create_prim_func([a, b]).with_attr("global_symbol", "k"), tvm


def test_a_failing_recipe_is_recorded_and_the_default_schedules_the_kernel():
    prim, tvm = _prim_func()

    def broken(prim, info):       # what a TVM upgrade that renamed an API looks like
        raise AttributeError("module 'tvm.s_tir' has no attribute 'Schedule'")

    def declines(prim, info):
        refused("vectorize something", RuntimeError("ScheduleError: not a loop\nthe cause"))
        return None

    info = KernelInfo(("multiply",), parse(DENSE)["main"], (), {})
    scheduler = Scheduler([ScheduleRule("multiply", 20, broken, "test.broken"),
                           ScheduleRule("multiply", 10, declines, "test.declines")], info)
    mod = scheduler(prim)
    assert isinstance(mod, tvm.IRModule)
    report = scheduler.report
    assert report.chosen == "default"
    assert report.declined[0] == ("test.broken", "failed: AttributeError: module 'tvm.s_tir' "
                                                 "has no attribute 'Schedule'")
    assert report.declined[1][0] == "test.declines"
    assert report.declined[1][1].startswith("declined:")
    assert report.refused == [("vectorize something", "RuntimeError: the cause")]
    assert type(report).from_json(report.to_json()) == report


def test_build_records_schedules_phases_and_the_cache(tmp_path):
    w = np.arange(12, dtype="float32").reshape(4, 3)
    cache = KernelCache(tmp_path / "cache")
    exe = build(DENSE, params={"w": w}, cache=cache)
    cache.flush()   # the kernel and the memo are written in the background
    report = exe.report
    assert list(report.phases) == ["prepare", "kernels", "executor"]
    assert all(s >= 0 for s in report.phases.values())
    assert report.kernels_requested == 1 and report.kernels_compiled == 1
    [record] = exe.kernels.records
    assert record.ops == ("nn.dense", "nn.relu") and record.fallback is None
    assert record.schedule.chosen.endswith("dense.schedule_dense")
    # A new process's cache (same directory): nothing compiles, the schedule is still known.
    again = build(DENSE, params={"w": w}, cache=KernelCache(tmp_path / "cache"))
    assert again.report.kernels_compiled == 0 and again.report.kernels_requested == 1
    assert "prepare (remembered)" in again.report.phases
    assert again.kernels.records[0].schedule == record.schedule
    text = summary(again, "out", {"parse": 0.0, **again.report.phases})
    assert "0 compiled now, 1 from the kernel cache" in text


def test_build_progress_counts_every_kernel(tmp_path):
    seen: list[tuple[int, int]] = []
    build(DENSE, cache=KernelCache(tmp_path / "c"), progress=lambda d, t: seen.append((d, t)))
    assert seen == [(0, 1), (1, 1)]


def test_the_summary_lists_fallbacks_with_their_reason():
    exe = build(DENSE, compile_kernels=False)
    text = summary(exe, "out", exe.report.phases)
    assert "fell back to the numpy references" in text
    assert "kernel compilation is off" in text
    assert exe.kernels.records[0].fallback is not None


@pytest.fixture
def dense_files(tmp_path):
    path = tmp_path / "dense.relay"
    path.write_text(DENSE, encoding="utf-8")
    np.savez(tmp_path / "w.npz", w=np.arange(12, dtype="float32").reshape(4, 3))
    np.save(tmp_path / "x.npy", np.array([[1, 0, 0], [0, 0, -1]], dtype="float32"))
    return tmp_path


def test_relay_build_then_run_the_saved_directory(dense_files, capsys):
    d = dense_files
    out_dir = d / "build"
    assert main(["build", str(d / "dense.relay"), "--params", str(d / "w.npz"), "-o",
                 str(out_dir), "--show-kernels", "--executor", "graph"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"built {out_dir}: executor graph, -O3, 1 compiled kernel, "
                          "0 numpy fallbacks")
    assert "time: parse" in out and "save" in out and "(total" in out
    assert "nn.dense + nn.relu" in out and "schedule: dense.schedule_dense" in out
    assert main(["run", str(out_dir), str(d / "x.npy")]) == 0
    assert capsys.readouterr().out == \
        "array([[0., 3., 6., 9.], [0., 0., 0., 0.]], dtype=float32)\n"
    assert main(["run", str(out_dir), str(d / "x.npy"), "-o", str(d / "y.npy")]) == 0
    np.testing.assert_array_equal(np.load(d / "y.npy"),
                                  [[0., 3., 6., 9.], [0., 0., 0., 0.]])
    assert main(["run", str(out_dir), str(d / "x.npy"), "--trace"]) == 2
    assert "a saved build takes no" in capsys.readouterr().err
    vm_dir = d / "vm-build"
    assert main(["build", str(d / "dense.relay"), "--params", str(d / "w.npz"), "-o",
                 str(vm_dir)]) == 0
    capsys.readouterr()
    assert main(["profile", str(vm_dir), str(d / "x.npy")]) == 1
    assert "built for the vm executor" in capsys.readouterr().err
    assert main(["run", str(d), "[1]"]) == 1          # a directory that is not a build
    assert "not a saved build" in capsys.readouterr().err
    assert main(["profile", str(out_dir), str(d / "x.npy"), "--repeat", "2"]) == 0
    table = capsys.readouterr().out
    assert "nn.dense+nn.relu" in table and "GFLOP/s" in table and "total (1 kernel calls)" in table


def test_relay_profile_builds_with_the_graph_executor(dense_files, capsys):
    d = dense_files
    code = main(["profile", str(d / "dense.relay"), str(d / "x.npy"), "--params",
                 str(d / "w.npz"), "--repeat", "3"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["#", "kernel", "operators"]
    assert lines[1].split()[0] == "0" and "relay_kernel_" in lines[1]
    assert lines[-1].split()[0] == "total"


def test_a_link_failure_is_recorded_with_the_kernel(tmp_path, monkeypatch):
    """No linker (or a full disk): the kernel runs from TVM's JIT, and its report says so."""
    from backends.tvm.kernel import compile as kernels

    def no_linker(lib, so):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(kernels, "_link", no_linker)
    exe = build(DENSE, cache=KernelCache(tmp_path / "cache"))
    [record] = exe.kernels.records
    steps = [step for step, _ in record.schedule.refused]
    assert any(step.startswith("link the kernel") for step in steps)
    assert "No space left on device" in dict(record.schedule.refused)[steps[-1]]
    x, w = np.ones((2, 3), "float32"), np.ones((4, 3), "float32")
    np.testing.assert_array_equal(exe(x, w), np.full((2, 4), 3.0, "float32"))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_draws_on_a_terminal_only(monkeypatch):
    pytest.importorskip("tqdm", reason="the progress bar needs tqdm (extra `tvm`)")
    from relay.commands.build import ProgressBar

    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setattr(sys, "stderr", _Terminal())
    with ProgressBar("compiling kernels") as progress:
        assert progress is None                      # stdout is a pipe or a file
    err = _Terminal()
    monkeypatch.setattr(sys, "stdout", _Terminal())
    monkeypatch.setattr(sys, "stderr", err)
    with ProgressBar("compiling kernels") as progress:
        assert progress is not None
        for done in range(4):
            time.sleep(0.15)                         # past tqdm's minimum redraw interval
            progress(done, 3)
    text = err.getvalue()
    assert "compiling kernels" in text and "3/3" in text


def test_a_kernel_tvm_cannot_compile_is_counted_and_falls_back(tmp_path, monkeypatch):
    from backends.tvm.kernel import compile as kernels

    def broken(*args, **kwargs):
        raise kernels.NoLowering(kernels.COMPILE_FAILED,
                                 "TVM could not compile the kernel of nn.dense, nn.relu: boom")

    monkeypatch.setattr(kernels, "_compile", broken)
    exe = build(DENSE, cache=KernelCache(tmp_path / "cache"))
    assert (exe.report.kernels_requested, exe.report.kernels_compiled,
            exe.report.kernels_failed, exe.report.kernels_cached) == (1, 0, 1, 0)
    text = summary(exe, "out", exe.report.phases)
    assert "0 compiled now, 0 from the kernel cache, 1 TVM could not compile" in text
    assert "fell back to the numpy references" in text and "boom" in text
