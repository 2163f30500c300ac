"""``backends.tvm.lower.vecmath``: the vectorizable float32 ``exp``/``expm1``/``sigmoid``/
``tanh`` agree with the float64 definitions rounded to float32, within 4 ulp, on every
float32 including NaN, ±inf, ±0 and subnormal results (sign bits and NaN positions exact).

Each function is compiled once (a 1-D elementwise kernel) and called on Hypothesis-drawn
arrays; the lowering rules of ``sigmoid``/``tanh`` that use them are checked end to end by
the kernel and differential tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from backends.tvm.lower import vecmath
from backends.tvm.target import host_target

SIZE = 64


def _compile(fn: Callable[[Any], Any]) -> Callable[[np.ndarray], np.ndarray]:
    import tvm
    from tvm import te

    a = te.placeholder((SIZE,), "float32", name="a")
    b = te.compute(a.shape, lambda i: fn(a[i]), name="b")
    lib = tvm.compile(te.create_prim_func([a, b]), target=host_target().tvm())

    def run(x: np.ndarray) -> np.ndarray:
        out = tvm.runtime.tensor(np.empty(SIZE, np.float32))
        lib(tvm.runtime.tensor(np.ascontiguousarray(x, np.float32)), out)
        return out.numpy()

    return run


def _sigmoid64(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


CASES: dict[str, tuple[Callable[[Any], Any], Callable[[np.ndarray], np.ndarray], bool]] = {
    # name: (vecmath function, float64 definition, domain is t <= 0 only)
    "exp": (vecmath.exp_nonpositive_f32, np.exp, True),
    "expm1": (vecmath.expm1_nonpositive_f32, np.expm1, True),
    "sigmoid": (vecmath.sigmoid_f32, _sigmoid64, False),
    "tanh": (vecmath.tanh_f32, np.tanh, False),
}

_compiled: dict[str, Callable[[np.ndarray], np.ndarray]] = {}


def _kernel(name: str) -> Callable[[np.ndarray], np.ndarray]:
    if name not in _compiled:
        _compiled[name] = _compile(CASES[name][0])
    return _compiled[name]


def _check(name: str, x: np.ndarray) -> None:
    _, definition, _ = CASES[name]
    got = _kernel(name)(x)
    with np.errstate(all="ignore"):
        want = definition(x.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{name}: NaN at {x}")
    ok = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[ok]), np.signbit(want[ok])), (name, x[ok], got[ok])
    inf = np.isinf(want)
    np.testing.assert_array_equal(got[inf], want[inf])
    fin = ok & ~inf
    ulps = (np.abs(got[fin].astype(np.float64) - want[fin])
            / np.spacing(np.abs(want[fin])).astype(np.float64))
    assert ulps.size == 0 or ulps.max() <= 4, (name, x[fin][ulps.argmax()], ulps.max())


SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 2.0 ** -12, -(2.0 ** -12),
                    2.0 ** -13, 1e-45, -1e-45, 0.34657, -0.34657, 0.35, -0.35, 8.9, -9.1, 17.4,
                    -17.4, 87.3, -87.3, -87.4, 88.0, -88.0, -100.0, -103.9, -104.0, -104.1,
                    -150.0, 1e30, -1e30], np.float32)


@pytest.mark.parametrize("name", sorted(CASES))
def test_special_values(name: str) -> None:
    x = np.resize(SPECIAL, SIZE)
    if CASES[name][2]:
        x = np.where(np.isnan(x), x, -np.abs(x)).astype(np.float32)
    _check(name, x)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=40, deadline=None)
@given(x=hnp.arrays(np.float32, SIZE, elements=st.floats(width=32, allow_nan=True,
                                                           allow_infinity=True)))
def test_within_four_ulp_of_the_definition(name: str, x: np.ndarray) -> None:
    if CASES[name][2]:
        x = np.where(np.isnan(x), x, -np.abs(x)).astype(np.float32)
    _check(name, x)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=40, deadline=None)
@given(scale=st.sampled_from([1e-6, 1e-3, 0.1, 1.0, 5.0, 30.0, 100.0]),
       seed=st.integers(0, 2 ** 16))
def test_dense_ranges(name: str, scale: float, seed: int) -> None:
    x = (np.random.default_rng(seed).standard_normal(SIZE) * scale).astype(np.float32)
    if CASES[name][2]:
        x = -np.abs(x)
    _check(name, x)


def test_the_lowering_uses_them_for_float32() -> None:
    """The ``sigmoid``/``tanh`` kernels of float32 compute through vecmath (their results are
    the vecmath functions' bit for bit, and within 4 ulp of the definition)."""
    from backends.tvm.kernel.cache import KernelCache
    from backends.tvm.kernel.compile import compile_function
    from semantics import parse_expr
    from semantics.types import TensorType

    x = np.linspace(-20, 20, 4 * SIZE, dtype=np.float32).reshape(4, SIZE)
    for op in ("sigmoid", "tanh"):
        fn = parse_expr(f"fn (%x: Tensor[(4, {SIZE}), float32], Primitive=1) {{ {op}(%x) }}")
        kernel = compile_function(fn, [TensorType((4, SIZE), "float32")],
                                  cache=KernelCache(disk=False))
        got = np.asarray(kernel(x))
        direct = np.stack([_kernel(op)(row) for row in x])
        np.testing.assert_array_equal(got, direct)


@pytest.mark.parametrize("body,cut", [
    ("tanh(tanh(%x))", True),
    ("sigmoid(add(tanh(%x), %x))", True),
    ("tanh(add(%x, %x))", False),
    ("multiply(sigmoid(%x), tanh(%x))", False),
])
def test_a_transcendental_of_a_transcendental_reads_a_kept_stage(body: str, cut: bool) -> None:
    """A vecmath function whose argument holds another one's ``Let`` chain (once the schedule
    inlines) reads it from a kept stage: nested ``Let`` values make TVM's code generation
    exponential (``tanh(tanh(x))`` compiled in 69 s). The kernel still computes the
    composition: each stage is the vecmath function bit for bit."""
    from backends.tvm.kernel.cache import KernelCache
    from backends.tvm.kernel.compile import compile_function
    from backends.tvm.te_build import build_te
    from semantics import parse_expr
    from semantics.types import TensorType

    types = [TensorType((2, SIZE), "float32")]
    fn = parse_expr(f"fn (%x: Tensor[(2, {SIZE}), float32], Primitive=1) {{ {body} }}")
    lowered = build_te(fn, types)
    stages: list[str] = []
    todo = [t.op for t in lowered.outputs]
    while todo:
        op = todo.pop()
        if op.name not in stages:
            stages.append(op.name)
            todo.extend(t.op for t in getattr(op, "input_tensors", []))
    assert any(s.startswith("keep_") and s.endswith("_arg") for s in stages) == cut
    kernel = compile_function(fn, types, cache=KernelCache(disk=False))
    x = np.linspace(-6, 6, 2 * SIZE, dtype=np.float32).reshape(2, SIZE)
    got = np.asarray(kernel(x))
    tanh, sigmoid = _kernel("tanh"), _kernel("sigmoid")
    row = {"tanh(tanh(%x))": lambda r: tanh(tanh(r)),
           "sigmoid(add(tanh(%x), %x))": lambda r: sigmoid(tanh(r) + r),
           "tanh(add(%x, %x))": lambda r: tanh(r + r),
           "multiply(sigmoid(%x), tanh(%x))": lambda r: sigmoid(r) * tanh(r)}[body]
    np.testing.assert_array_equal(got, np.stack([row(r) for r in x]))
