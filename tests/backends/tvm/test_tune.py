"""``relay tune`` (issue 35 item 4): the keep-only-if-faster decision, the ranking of kernels,
the tuning database (round-trip through ``build(..., tuning=DB)``, damage, atomic writes),
the command line, and MetaSchedule tuning a tiny dense and convolution end to end."""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tunekit import CONV, DENSE, kernel_of, oracle, params_of, record_of

from backends.tvm import build
from backends.tvm.target import Target
from backends.tvm.tune import database as dbmod
from backends.tvm.tune.database import (
    TuningDatabase,
    TuningDatabaseError,
    TuningRecord,
    relay_key,
)
from backends.tvm.tune.decide import MARGIN, KernelCost, decide, rank
from interpreter import evaluate
from semantics import parse
from semantics.errors import RelayArgumentTypeError

# -- the decision, with injected timings ------------------------------------------------------

times = st.lists(st.floats(1e-6, 1e-2), min_size=1, max_size=9)


@settings(max_examples=200, deadline=None)
@given(times, times)
def test_decide_keeps_only_what_beats_ours_on_median_and_best(ours: list[float],
                                                              tuned: list[float]) -> None:
    d = decide(ours, tuned)
    expect = (statistics.median(tuned) < statistics.median(ours) * (1 - MARGIN)
              and min(tuned) < min(ours) * (1 - MARGIN))
    assert d.keep == expect
    assert d.ours == statistics.median(ours) and d.tuned == statistics.median(tuned)


@settings(max_examples=100, deadline=None)
@given(times, st.floats(0.1, 0.9))
def test_decide_never_keeps_wrong_results(ours: list[float], factor: float) -> None:
    faster = [t * factor for t in ours]
    assert decide(ours, faster).keep
    refused = decide(ours, faster, same_results=False)
    assert not refused.keep and "differ" in refused.reason


def test_decide_examples() -> None:
    assert decide([10e-6, 11e-6, 10e-6], [5e-6, 5e-6, 6e-6]).keep
    assert decide([10e-6] * 3, [5e-6] * 3).speedup == pytest.approx(2.0)
    # equal within noise: ours stays
    assert not decide([10e-6] * 5, [9.9e-6] * 5).keep
    # a faster median but a slower best block (one lucky block of ours): ours stays
    assert not decide([10e-6, 10e-6, 4e-6], [8e-6, 8e-6, 8e-6]).keep
    # no timings at all (a candidate that did not run), NaNs and zeros dropped
    assert not decide([10e-6], []).keep
    assert not decide([10e-6], [float("nan"), 0.0]).keep


def test_rank_picks_the_most_time_lost_against_peak() -> None:
    peak = 100e9                                     # 100 GFLOP/s
    fast_conv = KernelCost("conv_fast", 2_000_000_000, 0.021)   # 95% of peak: 1 ms lost
    slow_dense = KernelCost("dense_slow", 10_000_000, 0.001)    # 10% of peak: 0.9 ms lost
    slow_small = KernelCost("tiny", 1000, 0.0001, calls=3)      # 0.3 ms lost
    elementwise = KernelCost("add", 0, 0.005)                   # no FLOPs: all 5 ms lost
    never = KernelCost("unmeasured", 10, 0.0)
    got = rank([fast_conv, slow_dense, slow_small, elementwise, never], peak, 3)
    assert [c.name for c in got] == ["add", "conv_fast", "dense_slow"]
    assert [c.name for c in rank([slow_small, slow_dense], peak, 1)] == ["dense_slow"]
    assert rank([fast_conv], peak, 0) == []
    assert slow_dense.efficiency(peak) == pytest.approx(0.1)


# -- the database -------------------------------------------------------------------------------

def test_database_round_trip_build_uses_the_winning_record(tmp_path: Path) -> None:
    params = params_of()
    func, types, target = kernel_of(params=params)
    db = TuningDatabase(tmp_path, target)
    db.update([record_of(func, types, target, won=True)])
    again = TuningDatabase.open(tmp_path, target)
    assert list(again.records) == list(db.records)
    assert again.records[next(iter(db.records))].to_json() == \
        next(iter(db.records.values())).to_json()
    exe = build(DENSE, params, tuning=tmp_path)
    (rec,) = exe.kernels.records
    assert rec.schedule is not None and rec.schedule.chosen.startswith("tuned (MetaSchedule")
    x = np.random.default_rng(3).standard_normal((4, 64)).astype("float32")
    np.testing.assert_allclose(exe(x), oracle(x, params), rtol=1e-5, atol=1e-5)


def test_a_losing_or_stale_record_leaves_our_kernel(tmp_path: Path) -> None:
    params = params_of()
    func, types, target = kernel_of(params=params)
    TuningDatabase(tmp_path / "lost", target).update([record_of(func, types, target, won=False)])
    exe = build(DENSE, params, tuning=tmp_path / "lost")
    (rec,) = exe.kernels.records
    assert rec.schedule is None or not rec.schedule.chosen.startswith("tuned")
    # a record whose workload is another kernel's (forged with this kernel's Relay key)
    other, other_types, _ = kernel_of(CONV, {"w": np.ones((8, 8, 3, 3), "float32")}, target)
    stale = record_of(other, other_types, target, won=True)
    stale.relay_key = relay_key(func, types)
    TuningDatabase(tmp_path / "stale", target).update([stale])
    exe = build(DENSE, params, tuning=tmp_path / "stale")
    (rec,) = exe.kernels.records
    assert rec.fallback is None
    assert rec.schedule is None or not rec.schedule.chosen.startswith("tuned")
    x = np.ones((4, 64), "float32")
    np.testing.assert_allclose(exe(x), oracle(x, params), rtol=1e-5, atol=1e-5)


def test_a_stale_record_is_tried_once_across_processes(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict on a stale record is kept in the kernel cache's directory: a new cache on
    it (another process) does not replay the record's trace again."""
    from backends.tvm.kernel.cache import KernelCache
    from backends.tvm.tune import apply

    params = params_of()
    func, types, target = kernel_of(params=params)
    other, other_types, _ = kernel_of(CONV, {"w": np.ones((8, 8, 3, 3), "float32")}, target)
    stale = record_of(other, other_types, target, won=True)
    stale.relay_key = relay_key(func, types)
    TuningDatabase(tmp_path / "db", target).update([stale])
    tried: list[object] = []
    real = apply.compile_with

    def counting(*args: Any, **kwargs: Any) -> Any:
        tried.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(apply, "compile_with", counting)
    first = KernelCache(tmp_path / "cache")
    build(DENSE, params, tuning=tmp_path / "db", cache=first)
    assert len(tried) == 1
    first.flush()
    later = KernelCache(tmp_path / "cache")       # a new process's cache on the same disk
    exe = build(DENSE, params, tuning=tmp_path / "db", cache=later)
    assert len(tried) == 1                          # not replayed again
    assert later.stale(apply.tuned_key(stale, func, types, target, later)) is not None
    x = np.ones((4, 64), "float32")
    np.testing.assert_allclose(exe(x), oracle(x, params), rtol=1e-5, atol=1e-5)
    # a verdict written by another TVM is not trusted
    (verdict,) = (tmp_path / "cache" / "stale").iterdir()
    verdict.write_text(json.dumps({"tvm": "0.0", "reason": "old"}), encoding="utf-8")
    assert KernelCache(tmp_path / "cache").stale(verdict.name) is None


def test_missing_or_damaged_database_is_a_clear_error(tmp_path: Path) -> None:
    func, types, target = kernel_of()
    with pytest.raises(TuningDatabaseError, match="does not exist"):
        build(DENSE, params_of(), tuning=tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TuningDatabaseError, match="no records for target"):
        build(DENSE, params_of(), tuning=tmp_path / "empty")
    with pytest.raises(RelayArgumentTypeError, match="tuning must be"):
        build(DENSE, params_of(), tuning=42)
    db = TuningDatabase(tmp_path / "db", target)
    db.update([record_of(func, types, target, won=True)])
    good = db.path.read_text()
    damages = {
        "truncated": good[: len(good) // 2],
        "not json": "\x00garbage",
        "edited": good.replace('"won": true', '"won": false'),
        "other format": json.dumps({**json.loads(good), "format": "relay-tuning/0"}),
        "bad record": _resealed(good, lambda r: {**r, "trials": "four"}),
    }
    for name, text in damages.items():
        db.path.write_text(text)
        with pytest.raises(TuningDatabaseError, match=str(tmp_path / "db")):
            build(DENSE, params_of(), tuning=tmp_path / "db")
        with pytest.raises(TuningDatabaseError):      # and tuning refuses to overwrite it
            db.update([])
        assert db.path.read_text() == text, name


def _resealed(text: str, change: object) -> str:
    doc = json.loads(text)
    doc["records"] = [change(r) for r in doc["records"]]  # type: ignore[operator]
    doc["sha256"] = dbmod._digest(doc["records"])
    return json.dumps(doc)


def test_an_interrupted_write_keeps_the_old_database(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    func, types, target = kernel_of()
    db = TuningDatabase(tmp_path, target)
    db.update([record_of(func, types, target, won=False)])
    before = db.path.read_text()

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(dbmod.json, "dump", interrupted)
    with pytest.raises(KeyboardInterrupt):
        db.update([record_of(func, types, target, won=True)])
    monkeypatch.undo()
    assert db.path.read_text() == before
    assert sorted(p.name for p in db.path.parent.iterdir()) == ["records.json",
                                                                "records.json.lock"]
    assert not TuningDatabase.open(tmp_path, target).winners()


record_fields = st.fixed_dictionaries({
    "workload_hash": st.text("0123456789abcdef", min_size=16, max_size=16),
    "workload": st.text(max_size=40), "relay_key": st.text(max_size=32),
    "ops": st.lists(st.sampled_from(["nn.dense", "add", "nn.relu"]), max_size=3),
    "trace": st.lists(st.lists(st.one_of(st.integers(-5, 5), st.text(max_size=5)),
                               max_size=4), max_size=4),
    "ours_seconds": st.floats(0, 1), "tuned_seconds": st.floats(0, 1),
    "trials": st.integers(0, 10_000), "won": st.booleans(), "flops": st.integers(0, 10**12),
    "tuned_at": st.text(max_size=25)})


@settings(max_examples=30, deadline=None)
@given(st.lists(record_fields, max_size=4))
def test_database_keeps_what_it_is_given(tmp_path_factory: pytest.TempPathFactory,
                                         docs: list[dict[str, Any]]) -> None:
    root = tmp_path_factory.mktemp("db")
    target = Target.host()
    records = [TuningRecord(**d) for d in docs]
    TuningDatabase(root, target).update(records)
    back = TuningDatabase.open(root, target)
    want = {r.workload_hash: r.to_json() for r in records}      # the last one per workload
    assert {k: r.to_json() for k, r in back.records.items()} == want
    assert {r.workload_hash for r in back.winners()} == \
        {k for k, r in want.items() if r["won"]}


def test_records_are_per_target(tmp_path: Path) -> None:
    func, types, target = kernel_of()
    TuningDatabase(tmp_path, target).update([record_of(func, types, target, won=True)])
    other = target.replace(lanes=16 if target.lanes != 16 else 8)
    with pytest.raises(TuningDatabaseError, match="no records for target"):
        TuningDatabase.open(tmp_path, other)
    assert TuningDatabase.open(tmp_path, target).winners()


# -- the command line ---------------------------------------------------------------------------

def test_cli_usage_and_user_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from relay.cli import main

    program = tmp_path / "p.relay"
    program.write_text(DENSE)
    for bad in (["--rpc", "nohost"], ["--rpc", "h:notaport:k"], ["--trials", "0"],
                ["--kernels", "-1"]):
        with pytest.raises(SystemExit) as exc:
            main(["tune", str(program), *bad])
        assert exc.value.code == 2
    func, types, target = kernel_of()
    db = TuningDatabase(tmp_path / "db", target)
    db.update([record_of(func, types, target, won=False)])
    db.path.write_text("{")
    capsys.readouterr()
    assert main(["tune", str(program), "--db", str(tmp_path / "db")]) == 1
    err = capsys.readouterr().err
    assert "damaged" in err and "Traceback" not in err
    assert main(["tune", str(tmp_path / "missing.relay")]) == 1


# -- MetaSchedule end to end --------------------------------------------------------------------

def _tune_and_check(src: str, params: dict[str, np.ndarray], tmp_path: Path,
                    inputs: list[np.ndarray]) -> None:
    from backends.tvm.tune.tuner import tune

    report = tune(src, params, trials=2, kernels=1, db=tmp_path, peak_gflops=50.0)
    assert len(report.tuned) == 1
    outcome = report.tuned[0]
    db = TuningDatabase.open(tmp_path, Target.host())
    (rec,) = db.records.values()
    assert rec.won == outcome.decision.keep
    assert rec.ours_seconds > 0 and rec.tuned_seconds > 0 and rec.trials == 2
    # the build reads it either way, and computes the oracle's numbers
    for r in db.records.values():
        r.won = True             # force the tuned schedule: it must compute the same numbers
    db.update(list(db.records.values()))
    exe = build(src, params, tuning=tmp_path)
    assert any(r.schedule is not None and r.schedule.chosen.startswith("tuned")
               for r in exe.kernels.records)
    want = evaluate(parse(src), *inputs, *params.values())
    np.testing.assert_allclose(exe(*inputs), np.asarray(want), rtol=1e-4, atol=1e-4)


def test_tune_a_tiny_dense(tmp_path: Path) -> None:
    x = np.random.default_rng(1).standard_normal((4, 64)).astype("float32")
    _tune_and_check(DENSE, params_of(), tmp_path, [x])


@pytest.mark.slow      # 10-26 s at a load of 11 on 2 cores (the dense: 6-16 s)
def test_tune_a_tiny_convolution(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    params = {"w": rng.standard_normal((8, 8, 3, 3)).astype("float32")}
    x = rng.standard_normal((1, 8, 10, 10)).astype("float32")
    _tune_and_check(CONV, params, tmp_path, [x])


def test_no_stray_files_in_the_database(tmp_path: Path) -> None:
    func, types, target = kernel_of()
    TuningDatabase(tmp_path, target).update([record_of(func, types, target, won=True)])
    names = [p.name for p in tmp_path.rglob("*") if p.is_file()]
    assert sorted(names) == ["records.json", "records.json.lock"]
    assert all(not n.startswith(".records-") for n in os.listdir(tmp_path))
