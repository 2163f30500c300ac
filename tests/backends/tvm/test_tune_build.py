"""Tuned kernels in builds (issue 35 item 4): in the kernel cache under a key of their own
(a warm build with the same database compiles nothing; a build without it never meets a
tuned kernel), carried by ``exe.save``/``load``; and tuning databases kept apart per
target (``--target``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tunekit import DENSE, kernel_of, oracle, params_of, record_of

from backends.tvm import build, load
from backends.tvm.exec.executable import _saved_tuning
from backends.tvm.kernel.cache import KernelCache
from backends.tvm.kernel.compile import record_compile_times
from backends.tvm.target import Target
from backends.tvm.tune.apply import record_variant, tuned_key
from backends.tvm.tune.database import TuningDatabase, TuningDatabaseError


def _tuned(exe: object) -> list[str]:
    """The names of an executable's kernels compiled from a tuning record."""
    return [r.name for r in exe.kernels.records  # type: ignore[attr-defined]
            if r.schedule is not None and r.schedule.chosen.startswith("tuned")]


def _winning_db(root: Path, target: Target | None = None) -> TuningDatabase:
    func, types, target = kernel_of(params=params_of(), target=target)
    db = TuningDatabase(root, target)
    db.update([record_of(func, types, target, won=True)])
    return db


def test_tuned_kernels_live_in_the_kernel_cache_under_their_own_key(tmp_path: Path) -> None:
    params = params_of()
    db = _winning_db(tmp_path / "db")
    cache_dir = tmp_path / "cache"
    x = np.random.default_rng(5).standard_normal((4, 64)).astype("float32")
    want = oracle(x, params)

    cache = KernelCache(cache_dir)                  # ours first: the cache holds our kernel
    ours = build(DENSE, params, cache=cache)
    cache.flush()
    assert not _tuned(ours)

    cache = KernelCache(cache_dir)                  # with the database: the tuned kernel
    cold = build(DENSE, params, cache=cache, tuning=db.root)
    cache.flush()
    (name,) = _tuned(cold)
    assert cold.report.kernels_compiled == 1        # ours did not stand in for it
    assert name != ours.kernels.records[0].name
    np.testing.assert_allclose(cold(x), want, rtol=1e-5, atol=1e-5)

    cache = KernelCache(cache_dir)                  # warm, with the same database
    with record_compile_times() as compiled:
        warm = build(DENSE, params, cache=cache, tuning=db.root)
        warm(x)
    assert not compiled and warm.report.kernels_compiled == 0 and cache.misses == 0
    assert _tuned(warm) == [name]
    np.testing.assert_array_equal(warm(x), cold(x))

    cache = KernelCache(cache_dir)                  # warm, without it: ours, never the tuned
    with record_compile_times() as compiled:
        again = build(DENSE, params, cache=cache)
    assert not compiled and again.report.kernels_compiled == 0 and not _tuned(again)
    assert again.kernels.records[0].name == ours.kernels.records[0].name


def test_the_tuned_key_follows_the_record(tmp_path: Path) -> None:
    func, types, target = kernel_of()
    first = record_of(func, types, target, won=True)
    cache = KernelCache(tmp_path, disk=False)
    base = cache.key_of(func, types, target)
    key = tuned_key(first, func, types, target, cache)
    assert key != base and len(key) == len(base)
    # the measured figures do not change the code: same key; another trace does
    remeasured = record_of(func, types, target, won=True)
    remeasured.ours_seconds, remeasured.tuned_seconds = 1.0, 0.5
    assert tuned_key(remeasured, func, types, target, cache) == key
    other = record_of(func, types, target, won=True, split=8)
    assert record_variant(other) != record_variant(first)
    assert tuned_key(other, func, types, target, cache) != key


@pytest.mark.parametrize("executor", ["vm", "graph"])
def test_save_and_load_carry_tuned_kernels(tmp_path: Path, executor: str) -> None:
    params = params_of()
    db = _winning_db(tmp_path / "db")
    exe = build(DENSE, params, executor=executor, cache=KernelCache(tmp_path / "cache"),
                tuning=db.root)
    (name,) = _tuned(exe)
    exe.save(tmp_path / "saved")
    assert (tmp_path / "saved" / "tuning").is_dir()
    x = np.random.default_rng(6).standard_normal((4, 64)).astype("float32")
    with record_compile_times() as compiled:
        loaded = load(tmp_path / "saved")
        np.testing.assert_array_equal(loaded(x), exe(x))
    assert not compiled                              # from the saved kernels
    np.testing.assert_allclose(loaded(x), oracle(x, params), rtol=1e-5, atol=1e-5)
    assert _tuned(loaded) == [name]
    assert loaded.kernels.cache.misses == 0
    # the saved records are for the build's target: loaded for another, the kernels are ours
    other = Target.host().replace(lanes=16 if Target.host().lanes != 16 else 8)
    assert _saved_tuning(str(tmp_path / "saved" / "tuning"), other) is None


def test_a_build_without_tuned_kernels_saves_no_records(tmp_path: Path) -> None:
    exe = build(DENSE, params_of(), cache=KernelCache(tmp_path / "cache"))
    exe.save(tmp_path / "saved")
    assert not (tmp_path / "saved" / "tuning").exists()
    assert not _tuned(load(tmp_path / "saved"))


def test_a_damaged_saved_record_is_refused(tmp_path: Path) -> None:
    from semantics.errors import RelayRuntimeError

    db = _winning_db(tmp_path / "db")
    exe = build(DENSE, params_of(), cache=KernelCache(tmp_path / "cache"), tuning=db.root)
    exe.save(tmp_path / "saved")
    (records,) = (tmp_path / "saved" / "tuning").rglob("records.json")
    records.write_text(records.read_text().replace('"won": true', '"won": false'))
    with pytest.raises(RelayRuntimeError, match="records.json"):
        load(tmp_path / "saved")
    assert issubclass(TuningDatabaseError, RelayRuntimeError)
