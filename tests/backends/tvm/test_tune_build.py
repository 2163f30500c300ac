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
from backends.tvm.exec.executable import TunedKernelsNotApplied, _saved_tuning
from backends.tvm.kernel.cache import KernelCache
from backends.tvm.kernel.compile import record_compile_times
from backends.tvm.target import Target, TargetError
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
    assert (tmp_path / "saved" / "tuned_records").is_dir()
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
    with pytest.warns(TunedKernelsNotApplied, match=f"this build is for .*{other.lanes} lanes"):
        assert _saved_tuning(str(tmp_path / "saved" / "tuned_records"), other) is None


def test_a_build_without_tuned_kernels_saves_no_records(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path / "cache")
    tuned = build(DENSE, params_of(), cache=cache, tuning=_winning_db(tmp_path / "db").root)
    tuned.save(tmp_path / "saved")
    ours = build(DENSE, params_of(), cache=cache)
    ours.save(tmp_path / "saved")                  # over the tuned build: its records go
    assert not list((tmp_path / "saved").rglob("records.json"))
    assert not _tuned(load(tmp_path / "saved"))
    ours.save(tmp_path / "fresh")
    assert not (tmp_path / "fresh" / "tuned_records").exists()


def test_saving_into_a_directory_leaves_a_tuning_database_there_alone(tmp_path: Path) -> None:
    db = _winning_db(tmp_path / "tuning")            # the user's database, where they save
    before = db.path.read_text()
    exe = build(DENSE, params_of(), cache=KernelCache(tmp_path / "cache"), tuning=db.root)
    exe.save(tmp_path)
    assert db.path.read_text() == before and _tuned(load(tmp_path))


def test_a_damaged_saved_record_is_refused(tmp_path: Path) -> None:
    from semantics.errors import RelayRuntimeError

    db = _winning_db(tmp_path / "db")
    exe = build(DENSE, params_of(), cache=KernelCache(tmp_path / "cache"), tuning=db.root)
    exe.save(tmp_path / "saved")
    (records,) = (tmp_path / "saved" / "tuned_records").rglob("records.json")
    records.write_text(records.read_text().replace('"won": true', '"won": false'))
    with pytest.raises(RelayRuntimeError, match="records.json"):
        load(tmp_path / "saved")
    assert issubclass(TuningDatabaseError, RelayRuntimeError)


# -- targets (``--target``) ----------------------------------------------------------------------

X86_CPUS = ("haswell", "x86-64-v3", "znver3", "skylake", "x86-64-v2", "skylake-avx512",
            "cascadelake", "icelake-server", "sapphirerapids", "znver4")
"""LLVM x86 CPU names the tests may pick another target from (never the host's)."""


def _other_cpu(runnable: bool | None) -> str:
    """An LLVM CPU other than the host whose kernels can (``runnable``) or cannot run here
    (None: either, one that cannot first)."""
    host = Target.host()
    for want in ((runnable,) if runnable is not None else (False, True)):
        for name in X86_CPUS:
            try:
                target = Target.of({"kind": "llvm", "mcpu": name})
            except TargetError:
                continue                              # not an x86 LLVM
            if target.key() != host.key() and (not target.missing_here()) == want:
                return name
    pytest.skip(f"no {'runnable' if runnable else 'unrunnable'} x86 CPU other than "
                f"{host.mcpu} here")


def test_an_unknown_target_cpu_is_a_clear_error(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from relay.cli import main

    with pytest.raises(TargetError, match="unknown target CPU 'znver':.*did you mean .*znver3"):
        Target.of({"kind": "llvm", "mcpu": "znver"})
    with pytest.raises(TargetError, match="unknown target CPU 'no-such-cpu'"):
        Target.of("llvm -mcpu=no-such-cpu")
    program = tmp_path / "p.relay"
    program.write_text(DENSE)
    for argv in (["build", str(program), "-o", str(tmp_path / "out"), "--target", "no-such-cpu"],
                 ["tune", str(program), "--db", str(tmp_path / "db"), "--target", "no-such-cpu"],
                 ["build", str(program), "-o", str(tmp_path / "out"), "--target", "llvm -O3"]):
        capsys.readouterr()
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        assert "target" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "db").exists()


def test_tuning_refuses_a_target_this_machine_cannot_run(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    from relay.cli import main

    cpu = _other_cpu(runnable=False)
    program = tmp_path / "p.relay"
    program.write_text(DENSE)
    assert main(["tune", str(program), "--db", str(tmp_path / "db"), "--target", cpu]) == 1
    assert "cannot tune for" in capsys.readouterr().err


def test_the_host_check_reads_every_extension_of_the_target(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``missing_here`` compares every x86 extension LLVM enables for the target with the
    machine's ``/proc/cpuinfo`` flags, not only the four the Target record holds."""
    from backends.tvm import target as tmod

    host = Target.host()
    assert host.missing_here() == []
    flags = tmod._cpuinfo_flags()
    if not flags or tmod._llvm_isa(host.mcpu, tuple(host.mattr), host.mtriple or "") is None:
        pytest.skip("no /proc/cpuinfo flags or no LLVM feature list here")
    wanted = tmod._llvm_isa(host.mcpu, tuple(host.mattr), host.mtriple or "")
    assert wanted
    if host.avx2:
        assert "avx2" in wanted
    # a machine whose flags lack one extension the host CPU's LLVM model has (``adx``,
    # ``bmi2``, ...: the four-field check never saw them)
    dropped = sorted(wanted)[0]
    monkeypatch.setattr(tmod, "_cpuinfo_flags",
                        lambda: frozenset(f for f in flags if tmod._isa_name(f) != dropped))
    assert host.missing_here() == [dropped]
    assert tmod._isa_name("sse4_1") == tmod._isa_name("sse4.1") == "sse41"
    assert tmod._isa_name("avx512_vnni") == "avx512vnni"


def test_relay_build_compiles_for_the_named_cpu(tmp_path: Path) -> None:
    import json

    from relay.cli import main

    cpu = _other_cpu(runnable=None)
    program = tmp_path / "p.relay"
    program.write_text(DENSE.replace("%w: Tensor[(48, 64), float32], %b: Tensor[(48), "
                                     "float32]", "%w: Tensor[(48, 64), float32]")
                       .replace("nn.bias_add(nn.dense(%x, %w), %b)", "nn.dense(%x, %w)"))
    assert main(["build", str(program), "-o", str(tmp_path / "out"), "--target", cpu]) == 0
    meta = json.loads((tmp_path / "out" / "build.json").read_text())
    assert meta["target"]["mcpu"] == cpu                # compiled (not run) for that CPU


def test_records_of_one_target_never_reach_a_build_for_another(tmp_path: Path) -> None:
    params = params_of()
    host = Target.host()
    other = Target.of({"kind": "llvm", "mcpu": _other_cpu(runnable=True)})
    mine = _winning_db(tmp_path / "db", host)
    func, types, _ = kernel_of(params=params, target=other)
    theirs = record_of(func, types, other, won=True, split=8)
    TuningDatabase(tmp_path / "db", other).update([theirs])
    x = np.random.default_rng(7).standard_normal((4, 64)).astype("float32")
    cache = KernelCache(tmp_path / "cache")
    for target, want in ((host, next(iter(mine.records.values()))), (other, theirs)):
        exe = build(DENSE, params, target=target, cache=cache, tuning=tmp_path / "db")
        (used,) = [r for r in exe.kernels.compiled_tuning if r is not None]
        assert used.trace == want.trace and _tuned(exe)
        np.testing.assert_allclose(exe(x), oracle(x, params), rtol=1e-5, atol=1e-5)
    third = host.replace(lanes=4 if 4 not in (host.lanes, other.lanes) else 16)
    with pytest.raises(TuningDatabaseError, match="no records for target"):
        build(DENSE, params, target=third, cache=cache, tuning=tmp_path / "db")


@pytest.mark.slow      # 17 s at a load of 4.5 on 2 cores (a real 2-trial search)
def test_relay_tune_for_a_named_cpu_writes_that_targets_records(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from backends.tvm.tune.database import RECORDS, target_directory
    from relay.cli import main

    cpu = _other_cpu(runnable=True)
    other = Target.of({"kind": "llvm", "mcpu": cpu})
    program, weights, db = tmp_path / "p.relay", tmp_path / "w.npz", tmp_path / "db"
    program.write_text(DENSE)
    np.savez(weights, **params_of())
    assert main(["tune", str(program), "--params", str(weights), "--target", cpu,
                 "--trials", "2", "--kernels", "1", "--db", str(db)]) == 0
    assert f"-mcpu={cpu}" in capsys.readouterr().out
    assert [p.parent for p in db.rglob(RECORDS)] == [target_directory(db, other)]
    build_argv = ["build", str(program), "--params", str(weights), "--tuning", str(db)]
    assert main([*build_argv, "-o", str(tmp_path / "host")]) == 1      # the host has none
    assert "no records for target" in capsys.readouterr().err
    assert main([*build_argv, "-o", str(tmp_path / "other"), "--target", cpu]) == 0
