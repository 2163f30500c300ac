"""The mechanisms behind build speed (issue 14): no timings here, only what makes builds fast.

* the in-place buffer relaxation gives the function the TVMScript round trip gives;
* ``compile_many`` compiles each distinct kernel once, in worker processes and in this one,
  and a worker's kernel is the in-process kernel byte for byte (same library, same layout);
* failures are remembered, dead workers and memory-only caches are handled;
* ``build`` compiles every static kernel before the executor asks, and a second build on
  the same directory compiles nothing;
* a script without a ``__main__`` guard builds once (workers never re-import it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import backends.tvm.kernel as KP
import passes
from backends.tvm import build
from backends.tvm.kernel import cache as KCache
from backends.tvm.kernel import compile as KC
from backends.tvm.kernel import workers as K
from backends.tvm.kernel.cache import KernelCache, kernel_key
from backends.tvm.kernel.compile import compile_function
from backends.tvm.kernel.runtime import NoLowering
from backends.tvm.kernel.workers import compile_many
from backends.tvm.target import normalize_target
from conformance.strategies.ops import fast_arrays
from conformance.strategies.programs import FLOAT_DTYPES, ProgramConfig, well_typed_modules
from passes.fuse_ops import is_primitive
from semantics import parse
from semantics.expr import Function
from semantics.types import TensorType, TupleType, Type
from semantics.visitor import post_order
from typechecker import infer

ROOT = Path(__file__).resolve().parents[3]

TWO_BLOCKS = """
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(3, 3, 3, 3), float32],
          %b: Tensor[(3), float32]) -> Tensor[(1, 3, 8, 8), float32] {
  %a = exp(%x);
  %0 = nn.relu(nn.bias_add(nn.conv2d(%a, %w, padding=[1, 1]), %b));
  %1 = nn.relu(nn.bias_add(nn.conv2d(%0, %w, padding=[1, 1]), %b));
  %2 = nn.softmax(%1);
  tanh(add(exp(multiply(%2, 0.5f)), %x))
}
"""


def primitives(text: str) -> list[Function]:
    mod = passes.fuse_ops(infer(parse(text)), fuse_opt_level=2)
    seen: dict[int, Function] = {}
    for fn in mod.functions.values():
        for node in post_order(fn):
            if is_primitive(node):
                seen[id(node)] = node  # type: ignore[assignment]
    return list(seen.values())


def requests(funcs: list[Function]) -> list[tuple[Function, list[Type]]]:
    return [(f, [p.type_annotation or p.checked_type for p in f.params])  # type: ignore[misc]
            for f in funcs]


def entry_files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def draw_inputs(types: list[Type], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    flat: list[TensorType] = []
    for t in types:
        flat.extend(t.fields if isinstance(t, TupleType) else [t])  # type: ignore[arg-type]
    return [rng.standard_normal(tuple(int(d) for d in t.shape)).astype(t.dtype) for t in flat]


def as_list(value: object) -> list[np.ndarray]:
    return list(value) if isinstance(value, tuple) else [value]  # type: ignore[list-item]


# --- the alignment relaxation -------------------------------------------------------------

def test_the_relaxation_redeclares_every_parameter_element_aligned() -> None:
    from tvm import te

    from backends.tvm.te_build import build_te

    funcs = primitives(TWO_BLOCKS)
    assert len(funcs) >= 3
    for func, types in requests(funcs):
        lowered = build_te(func, types)
        prim = te.create_prim_func([*lowered.inputs, *lowered.constants,  # type: ignore
                                    *lowered.outputs])  # type: ignore[attr-defined]
        assert any(p.data_alignment != 1 for p in prim.params)   # TE's default: aligned
        notes: list[tuple[str, str]] = []
        relaxed, needs_alignment = KC._relax_alignment(prim, notes)
        assert needs_alignment is False and notes == []
        assert all(p.data_alignment == 1 and p.offset_factor == 1 for p in relaxed.params)


def test_a_failed_relaxation_keeps_the_aligned_buffers_and_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(prim: object) -> object:
        raise AttributeError("no field 'ty'")

    monkeypatch.setattr(KC, "_relax_alignment_in_place", broken)
    notes: list[tuple[str, str]] = []
    marker = object()
    assert KC._relax_alignment(marker, notes) == (marker, True)
    ((step, error),) = notes
    assert step.startswith("relax buffer alignment in place") and "no field 'ty'" in error


# --- compile_many -------------------------------------------------------------------------

def test_equal_kernels_compile_once_and_workers_build_the_in_process_bytes(
        tmp_path: Path) -> None:
    funcs = primitives(TWO_BLOCKS)
    reqs = requests(funcs)
    spec = normalize_target(None)
    keys = [kernel_key(f, t, spec) for f, t in reqs]
    distinct = len(set(keys))
    assert distinct < len(keys)          # the two conv blocks are the same kernel
    here = KernelCache(tmp_path / "here")
    there = KernelCache(tmp_path / "there")
    assert compile_many(reqs, cache=here, jobs=1) == distinct
    assert compile_many(reqs, cache=there, jobs=3) == distinct   # two workers and this process
    here.flush()
    there.flush()
    assert len(here) == len(there) == distinct
    # A worker's entry is byte for byte the in-process one: library, metadata, constants.
    assert entry_files(tmp_path / "here") == entry_files(tmp_path / "there")
    # Nothing compiles twice: every request is now a memory hit.
    assert compile_many(reqs, cache=there, jobs=3) == 0
    misses = there.misses
    for (func, types), key in zip(reqs, keys):
        kernel = compile_function(func, types, cache=there)
        assert kernel is there.get(key)
        args = draw_inputs(types, 1)
        for got, want in zip(as_list(kernel(*args)), as_list(here.get(key)(*args))):
            np.testing.assert_array_equal(got, want)
    assert there.misses == misses


def test_entries_written_by_a_worker_are_adopted_here(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    reqs = requests(primitives(TWO_BLOCKS))
    spec = normalize_target(None)
    unique = {kernel_key(f, t, spec): (f, t) for f, t in reqs}
    (worker,) = K._workers(1)
    for key, (func, types) in unique.items():
        payload = K._payload(func, types, spec, key, tmp_path)
        assert payload is not None and worker.run(payload) == ("ok",)
    cache = KernelCache(tmp_path)

    def refuse(*args: object, **kwargs: object) -> bool:
        raise AssertionError("compiled again in this process")

    monkeypatch.setattr(K, "_compile_here", refuse)
    assert all(cache.holds(key) for key in unique)
    assert compile_many(reqs, cache=cache, jobs=2) == 0      # all on disk: nothing to do
    for key in unique:
        assert cache.adopt(key, tmp_path) is not None


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(st.data())
def test_generated_programs_compile_alike_in_workers_and_here(tmp_path_factory: object,
                                                               data: st.DataObject) -> None:
    config = ProgramConfig(float_mode=True, dtypes=FLOAT_DTYPES, max_let_chain=5,
                           min_op_bindings=3,
                           features=frozenset({"let", "tuple", "op", "sharing"}))
    program = data.draw(well_typed_modules(config))
    fused = passes.fuse_ops(infer(program.module), fuse_opt_level=2)
    funcs: dict[int, Function] = {}
    for fn in fused.functions.values():
        for node in post_order(fn):
            if is_primitive(node) and all(
                    isinstance(p.checked_type, TensorType)
                    and all(type(d) is int and d > 0 for d in p.checked_type.shape)
                    for p in node.params):  # type: ignore[attr-defined]
                funcs[id(node)] = node  # type: ignore[assignment]
    reqs = requests(list(funcs.values()))
    base = Path(tmp_path_factory.mktemp("alike"))  # type: ignore[attr-defined]
    here, there = KernelCache(base / "here"), KernelCache(base / "there")
    n_here = compile_many(reqs, cache=here, jobs=1)
    n_there = compile_many(reqs, cache=there, jobs=2)
    assert n_here == n_there
    here.flush()
    there.flush()
    if (base / "here").exists() or (base / "there").exists():
        assert entry_files(base / "here") == entry_files(base / "there")
    for func, types in reqs:
        try:
            a = compile_function(func, types, cache=here)
        except NoLowering as err:
            with pytest.raises(NoLowering) as again:
                compile_function(func, types, cache=there)
            assert (again.value.op, again.value.reason) == (err.op, err.reason)
            continue
        b = compile_function(func, types, cache=there)
        args = [data.draw(fast_arrays(t.dtype, tuple(int(d) for d in t.shape)))
                for t in b.input_types]
        for x, y in zip(as_list(a(*args)), as_list(b(*args))):
            np.testing.assert_array_equal(x, y)


def test_a_memory_cache_compiles_in_parallel_through_a_scratch_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    reqs = requests(primitives(TWO_BLOCKS))
    cache = KernelCache(disk=False)
    n = compile_many(reqs, cache=cache, jobs=2)
    assert n == len(cache) > 0
    assert not any(tmp_path.iterdir())           # the scratch directory is gone
    for func, types in reqs:
        kernel = compile_function(func, types, cache=cache)
        assert kernel(*draw_inputs(types, 2)) is not None


def test_a_dead_worker_hands_its_requests_back(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(K._Worker, "run", lambda self, payload: None)
    reqs = requests(primitives(TWO_BLOCKS))
    cache = KernelCache(tmp_path)
    distinct = len({kernel_key(f, t, normalize_target(None)) for f, t in reqs})
    assert compile_many(reqs, cache=cache, jobs=2) == distinct
    assert len(cache) == distinct


def test_a_failure_is_remembered_with_its_reason(tmp_path: Path) -> None:
    (prim,) = primitives("""
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] { exp(%x) }
""")
    types = [TensorType((4,), "float32")]
    spec = normalize_target(None)
    cache = KernelCache(tmp_path)
    key = kernel_key(prim, types, spec)
    cache.remember_failure(key, NoLowering("exp", "a test's reason"))
    assert cache.holds(key)
    assert compile_many([(prim, types)], cache=cache, jobs=2) == 0
    with pytest.raises(NoLowering) as info:
        compile_function(prim, types, cache=cache)
    assert (info.value.op, info.value.reason) == ("exp", "a test's reason")


INT_DIVIDE = """
def @main(%a: Tensor[(3), int32], %b: Tensor[(3), int32]) -> Tensor[(3), int32] {
  %0 = add(%a, %b);
  divide(%0, %b)
}"""


def test_a_worker_reports_a_lowering_failure_and_the_cache_keeps_it(tmp_path: Path) -> None:
    (prim,) = primitives(INT_DIVIDE)
    types = [TensorType((3,), "int32")] * 2
    spec = normalize_target(None)
    with pytest.raises(NoLowering) as here:
        compile_function(prim, types, cache=KernelCache(disk=False))
    (worker,) = K._workers(1)
    payload = K._payload(prim, types, spec, "0" * 40, tmp_path)
    assert payload is not None
    assert worker.run(payload) == ("failed", here.value.op, here.value.reason)
    assert not list(tmp_path.iterdir())        # no entry, no temporary directory left
    # Through compile_many: the worker's verdict is kept, compile_function repeats it.
    twin = primitives(INT_DIVIDE)[0]
    cache = KernelCache(tmp_path / "c")
    assert compile_many([(prim, types), (twin, types), *requests(primitives(TWO_BLOCKS))],
                        cache=cache, jobs=2) > 0
    assert cache.failure(kernel_key(prim, types, spec)) == (here.value.op, here.value.reason)
    with pytest.raises(NoLowering) as again:
        compile_function(twin, types, cache=cache)
    assert again.value.reason == here.value.reason


# --- build --------------------------------------------------------------------------------

def test_build_compiles_everything_up_front_and_a_second_build_nothing(tmp_path: Path) -> None:
    cold = KernelCache(tmp_path)
    exe = build(TWO_BLOCKS, executor="graph", cache=cold, jobs=2)
    compiled = len(cold)
    assert compiled > 0 and not exe.fallbacks
    cold.flush()
    warm = KernelCache(tmp_path)
    exe2 = build(TWO_BLOCKS, executor="vm", cache=warm, jobs=2)
    assert warm.misses == 0 and warm.hits_disk == compiled
    x = draw_inputs([TensorType((1, 3, 8, 8), "float32"), TensorType((3, 3, 3, 3), "float32"),
                     TensorType((3,), "float32")], 3)
    np.testing.assert_array_equal(exe(*x), exe2(*x))


def test_a_script_without_a_main_guard_builds_once(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(f"""
import sys
import tempfile
print("RAN", flush=True)
from backends.tvm import build
from backends.tvm.kernel.cache import KernelCache
exe = build({TWO_BLOCKS!r}, executor="graph", cache=KernelCache({str(tmp_path / 'c')!r}),
            jobs=2)
print("BUILT", exe.kernels.compiled, flush=True)
""")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *sys.path]))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("RAN") == 1 and out.stdout.count("BUILT") == 1, out.stdout


# --- the warm path's cheaper steps --------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.data())
def test_cse_constant_keys_are_equal_exactly_when_the_bytes_are(data: st.DataObject) -> None:
    from passes.cse import _ConstantKey

    dtype = data.draw(st.sampled_from(["float32", "int8", "bool", "float16"]))
    shape = data.draw(st.sampled_from([(), (3,), (2, 3), (600,), (40, 20)]))
    a = data.draw(fast_arrays(dtype, shape))
    b = a.copy()
    if data.draw(st.booleans()) and a.size:
        flat = b.reshape(-1)
        i = data.draw(st.integers(0, flat.size - 1))
        flat[i] = data.draw(fast_arrays(dtype, ()))
    same = a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    ka, kb = _ConstantKey(a), _ConstantKey(b)
    assert (ka == kb) is same
    if same:
        assert hash(ka) == hash(kb)
    assert _ConstantKey(a) != _ConstantKey(a.reshape(-1)) or a.ndim <= 1


def test_a_first_build_prestarts_workers_and_a_warm_one_does_not(tmp_path: Path) -> None:
    K.shutdown_workers()
    assert K.prestart_workers(KernelCache(tmp_path / "new"), jobs=2) == 1
    assert K.prestart_workers(KernelCache(disk=False), jobs=2) == 0
    assert K.prestart_workers(KernelCache(tmp_path / "new"), jobs=1) == 0
    (tmp_path / "warm").mkdir()
    (tmp_path / "warm" / ("0" * 40 + ".json")).write_text("{}")
    assert K.prestart_workers(KernelCache(tmp_path / "warm"), jobs=2) == 0


# --- the memo of the pass pipeline ---------------------------------------------------------

def _two_block_params(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"w": rng.standard_normal((3, 3, 3, 3)).astype("float32"),
            "b": rng.standard_normal(3).astype("float32")}


def test_a_second_build_of_the_same_input_runs_no_pass(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    B = importlib.import_module("backends.tvm.build")   # the package exports build() itself
    params = _two_block_params(4)
    first_cache = KernelCache(tmp_path)
    first = build(TWO_BLOCKS, params=params, executor="graph", cache=first_cache, jobs=1)
    first_cache.flush()
    assert len(list(tmp_path.glob("*.module"))) == 1

    def no_passes(*args: object, **kwargs: object) -> object:
        raise AssertionError("the pass pipeline ran")

    hashed: list[object] = []
    real_key = KCache.kernel_key
    with monkeypatch.context() as m:
        m.setattr(B, "prepare", no_passes)
        m.setattr(KCache, "kernel_key", lambda *a: hashed.append(a) or real_key(*a))
        cache = KernelCache(tmp_path)
        second = build(TWO_BLOCKS, params=params, executor="vm", cache=cache, jobs=1)
    assert not hashed                       # the memo gave every kernel's key
    assert cache.misses == 0 and cache.hits_disk == len(first_cache)
    x = draw_inputs([TensorType((1, 3, 8, 8), "float32")], 5)
    np.testing.assert_array_equal(first(*x), second(*x))
    assert all(not n.data.flags.writeable for fn in second.module.functions.values()
               for n in post_order(fn) if type(n).__name__ == "Constant")
    # Other weights, another opt level: another memo (and the passes run).
    ran: list[int] = []
    real_prepare = B.prepare
    monkeypatch.setattr(B, "prepare", lambda *a: ran.append(1) or real_prepare(*a))
    caches = [KernelCache(tmp_path), KernelCache(tmp_path)]
    other = build(TWO_BLOCKS, params=_two_block_params(5), executor="graph", cache=caches[0],
                  jobs=1)
    build(TWO_BLOCKS, params=params, executor="graph", opt_level=2, cache=caches[1], jobs=1)
    assert len(ran) == 2
    assert not np.array_equal(other(*x), first(*x))
    for c in caches:
        c.flush()
    assert len(list(tmp_path.glob("*.module"))) == 3
    KernelCache(tmp_path).clear()
    assert not any(tmp_path.iterdir())


def test_a_damaged_memo_is_a_miss(tmp_path: Path) -> None:
    params = _two_block_params(6)
    cache = KernelCache(tmp_path)
    want = build(TWO_BLOCKS, params=params, executor="graph", cache=cache, jobs=1)
    cache.flush()
    (memo,) = tmp_path.glob("*.module")
    memo.write_bytes(b"not a pickle")
    got = build(TWO_BLOCKS, params=params, executor="graph", cache=KernelCache(tmp_path), jobs=1)
    x = draw_inputs([TensorType((1, 3, 8, 8), "float32")], 7)
    np.testing.assert_array_equal(want(*x), got(*x))


def test_programs_with_adts_are_not_memoized(tmp_path: Path) -> None:
    text = """
def @main(%x: Tensor[(4), float32]) -> List[Tensor[(4), float32]] {
  Cons(exp(%x), Nil)
}"""
    cache = KernelCache(tmp_path)
    build(text, executor="vm", cache=cache, jobs=1)
    cache.flush()
    assert not list(tmp_path.glob("*.module"))


def test_the_memo_key_sees_text_params_and_level() -> None:
    from backends.tvm.build import memo_key

    params = _two_block_params(1)
    base = memo_key(TWO_BLOCKS, params, 3)
    assert memo_key(TWO_BLOCKS, dict(params), 3) == base
    assert memo_key(TWO_BLOCKS, params, 2) != base
    assert memo_key(TWO_BLOCKS.replace("0.5f", "0.25f"), params, 3) != base
    flipped = {**params, "b": params["b"].copy()}
    flipped["b"][0] = np.nextafter(flipped["b"][0], np.float32(np.inf))
    assert memo_key(TWO_BLOCKS, flipped, 3) != base
    assert memo_key(parse(TWO_BLOCKS), params, 3) == memo_key(parse(TWO_BLOCKS), params, 3)


def test_a_worker_with_other_sources_refuses(tmp_path: Path) -> None:
    (prim,) = primitives("""
def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] { exp(%x) }
""")
    types = [TensorType((4,), "float32")]
    payload = K._payload(prim, types, normalize_target(None), "1" * 40, tmp_path)
    assert payload is not None
    import pickle

    request = list(pickle.loads(payload))
    request[-1] = "0" * 16                   # as if this process had read other sources
    import io

    buf = io.BytesIO()
    K._FunctionPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(tuple(request))
    (worker,) = K._workers(1)
    assert K._worker_compile(buf.getvalue())[0] == "error"     # the same check, here
    assert worker.run(buf.getvalue()) is None
    assert not any(tmp_path.iterdir())
    assert worker.alive() and worker.run(payload) == ("ok",)   # and it serves the next one


def test_the_memo_key_changes_with_the_kernel_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    from backends.tvm.build import memo_key

    params = _two_block_params(1)
    base = memo_key(TWO_BLOCKS, params, 3)
    monkeypatch.setattr(KP, "code_digest", lambda: "another")
    assert memo_key(TWO_BLOCKS, params, 3) != base     # its kernel keys would be stale


def test_the_memo_key_changes_with_the_target() -> None:
    # AlterOpLayout blocks convolutions by the target's lanes: a memo prepared for another
    # width would run the wrong layouts' kernels
    from backends.tvm.build import memo_key
    from backends.tvm.target import Target

    params = _two_block_params(1)
    host = memo_key(TWO_BLOCKS, params, 3)
    assert memo_key(TWO_BLOCKS, params, 3, "llvm") == host
    wide = memo_key(TWO_BLOCKS, params, 3, Target.host().with_lanes(16))
    narrow = memo_key(TWO_BLOCKS, params, 3, {"kind": "llvm", "lanes": 4})
    assert wide != narrow
    for lanes, key in ((16, wide), (4, narrow)):
        assert (key == host) == (Target.host().lanes == lanes)
