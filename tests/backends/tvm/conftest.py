"""Shared fixtures of the TVM backend tests (skipped, with the reason, without apache-tvm).

Compiled kernels are cached on disk across test sessions, in ``$RELAY_TVM_CACHE`` when set,
else in a directory beside pytest's per-session temporary directories (pytest keeps their
parent, ``/tmp/pytest-of-<user>``): a rerun compiles only what changed.  Cache keys include
:data:`backends.tvm.kernel.CACHE_VERSION` and the target, so a stale entry is never used.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tvm", reason="apache-tvm is not installed (extra 'tvm')")

from backends.tvm.kernel.cache import KernelCache
from backends.tvm.kernel.compile import compile_function
from backends.tvm.target import LANES, Target  # noqa: E402
from interpreter import evaluate  # noqa: E402
from passes.fuse_ops import is_primitive  # noqa: E402
from semantics.expr import Call, Constant, Function  # noqa: E402
from semantics.module import IRModule  # noqa: E402
from semantics.types import TensorType, TupleType, Type  # noqa: E402
from semantics.visitor import post_order  # noqa: E402


def width_target(lanes: int) -> Target:
    """The host compiling schedules for a vector unit of ``lanes`` float32 lanes: the
    schedule facts of such a machine (16 lanes: AVX-512's 32 registers; else 16) forced
    through the :class:`~backends.tvm.target.Target` record. LLVM still emits the host's
    instructions (it legalizes a 16-lane vector on AVX2 into two registers), so every width
    runs here and must give the same numbers."""
    return Target.host().replace(lanes=lanes, registers=32 if lanes == 16 else 16)


LANE_WIDTHS = tuple(sorted({Target.host().lanes, *LANES}))
"""The widths every schedule is tested on: the host's own, and 4, 8 and 16 forced (test
modules, which do not import conftest, compute the same tuple from ``target.LANES``)."""


@pytest.fixture(params=LANE_WIDTHS, ids=lambda n: f"lanes{n}")
def lanes_target(request: pytest.FixtureRequest) -> Target:
    """:func:`width_target` of each of :data:`LANE_WIDTHS`."""
    return width_target(request.param)


@pytest.fixture(scope="session")
def target_of_width() -> object:
    """:func:`width_target` as a fixture."""
    return width_target


@pytest.fixture(scope="session")
def kernel_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory of the session's kernel cache (persistent across sessions)."""
    env = os.environ.get("RELAY_TVM_CACHE")
    if env:
        return Path(env)
    # Under pytest-xdist a worker's basetemp is <session>/popen-gwN: go up to pytest-of-<user>,
    # which outlives sessions, so later sessions reuse the kernels. One directory per xdist
    # worker: two processes never write the same entry at once.
    base = tmp_path_factory.getbasetemp()
    root = next((p for p in (base, *base.parents) if p.name.startswith("pytest-of-")),
                base.parent)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    path = root / f"relay-tvm-kernels-{worker}"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def kernel_cache(kernel_cache_dir: Path) -> KernelCache:
    """One kernel cache for the whole session (memory + the persistent directory)."""
    return KernelCache(kernel_cache_dir)


def assert_close(got: object, want: object, dtype_tolerance: dict[str, float] | None = None
                 ) -> None:
    """``got`` equals ``want`` exactly for integers and bools, within a tolerance by dtype for
    floats (NaN where NaN, the same infinities); tuples field by field."""
    tol = {"float16": 1e-2, "float32": 1e-4, "float64": 1e-9, **(dtype_tolerance or {})}
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            assert_close(g, w, dtype_tolerance)
        return
    assert isinstance(got, np.ndarray) and isinstance(want, np.ndarray), (type(got), type(want))
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind != "f":
        assert np.array_equal(got, want), f"\ngot  {got!r}\nwant {want!r}"
        return
    t = tol[want.dtype.name]
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w)), f"NaN mismatch\ngot  {got!r}\nwant {want!r}"
    inf = np.isinf(w)
    assert np.array_equal(g[inf], w[inf]), f"inf mismatch\ngot  {got!r}\nwant {want!r}"
    fin = np.isfinite(w)
    # Relative to the magnitude of the result (an element of a sum may cancel to near 0).
    scale = max(1.0, float(np.max(np.abs(w[fin]), initial=0.0)))
    err = np.abs(g[fin] - w[fin])
    assert np.all(err <= t * np.maximum(np.abs(w[fin]), scale)), \
        f"max error {err.max(initial=0)} (tol {t})\ngot  {got!r}\nwant {want!r}"


@pytest.fixture(scope="session")
def close() -> object:
    """:func:`assert_close` as a fixture (test modules do not import conftest)."""
    return assert_close


def concrete(t: Type) -> bool:
    """Whether every dim of a tensor (or tuple-of-tensors) type is an int."""
    if isinstance(t, TupleType):
        return all(concrete(f) for f in t.fields)
    return isinstance(t, TensorType) and all(type(d) is int for d in t.shape)


def run_kernels_in_order(fused: IRModule, values: list[np.ndarray], cache: KernelCache,
                         tolerance: dict[str, float] | None = None,
                         target: Target | None = None) -> list[Function]:
    """Compile every primitive function called by ``fused``'s ``main`` for ``target``
    (None: the host) and run it, in dataflow order, on the oracle's values of its arguments
    (``values`` are ``main``'s); each kernel's result must equal the oracle's
    (:func:`assert_close`). Returns the primitive functions in the order they ran."""
    main = fused.functions["main"]
    env: dict[int, object] = {id(p): v for p, v in zip(main.params, values)}
    ran: list[Function] = []
    for node in post_order(main.body):
        if isinstance(node, Call) and is_primitive(node.op):
            prim = node.op
            assert isinstance(prim, Function)
            args = [env[id(a)] for a in node.args]
            types = [p.type_annotation for p in prim.params]
            kernel = compile_function(prim, types, cache=cache,  # type: ignore[arg-type]
                                      target=target)
            want = evaluate(prim, *args)
            assert_close(kernel(*args), want, tolerance)  # type: ignore[arg-type]
            env[id(node)] = want
            ran.append(prim)
        elif isinstance(node, Constant):
            env[id(node)] = node.data
    return ran


@pytest.fixture(scope="session")
def run_kernels() -> object:
    """:func:`run_kernels_in_order` as a fixture."""
    return run_kernels_in_order
