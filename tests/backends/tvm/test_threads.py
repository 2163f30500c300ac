"""TVM's thread pool gets one worker per physical core (``backends.tvm.target``).

TVM alone halves the hardware threads on x86 (it assumes hyper-threading): on a machine
without SMT every kernel then ran on half the cores.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from backends.tvm.target import default_threads, use_every_core

ROOT = Path(__file__).resolve().parents[3]


def physical_cores() -> int:
    """The cores of this process's affinity mask, hyper-thread siblings counted once,
    read here from sysfs's ``core_id``/``physical_package_id`` (another file than the
    implementation's)."""
    cores = set()
    for cpu in os.sched_getaffinity(0):
        topo = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add(((topo / "physical_package_id").read_text().strip(),
                       (topo / "core_id").read_text().strip()))
        except OSError:
            cores.add((str(cpu), ""))
    return len(cores)


def test_default_threads_counts_physical_cores() -> None:
    assert default_threads() == physical_cores() >= 1


def test_a_thread_count_the_user_set_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TVM_NUM_THREADS", "3")
    use_every_core()
    assert os.environ["TVM_NUM_THREADS"] == "3"
    monkeypatch.delenv("TVM_NUM_THREADS")
    use_every_core()
    assert os.environ["TVM_NUM_THREADS"] == str(default_threads())


def test_importing_the_backend_sizes_tvms_pool_to_the_cores() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TVM_NUM_THREADS"}
    env["PYTHONPATH"] = str(ROOT)
    code = ("import backends.tvm, tvm; "
            "print(tvm.get_global_func('runtime.NumThreads')())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[-1]) == default_threads()
