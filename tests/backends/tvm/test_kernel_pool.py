"""The output pool of :class:`backends.tvm.kernel.Kernel` (small results reused by reference
count, arguments passed as their TVM twins): a buffer anybody still refers to is never
written again, whatever holds it, and the results are the ones fresh buffers would get.
"""

from __future__ import annotations

import gc
import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("tvm", reason="apache-tvm is not installed (extra 'tvm')")

import typechecker  # noqa: E402
from backends.tvm.kernel import runtime as kernels  # noqa: E402
from backends.tvm.kernel.cache import KernelCache
from backends.tvm.kernel.compile import compile_function
from backends.tvm.kernel.runtime import POOL_SIZE
from semantics import parse  # noqa: E402
from semantics.types import TensorType  # noqa: E402

T = TensorType((1, 37), "float32")


def _kernel(text: str, types: list[TensorType], cache: KernelCache) -> Any:
    mod = typechecker.infer(parse(text))
    return compile_function(mod["main"], types, cache=cache)


@pytest.fixture(scope="module")
def add(kernel_cache: KernelCache) -> Any:
    k = _kernel("def @main(%x: Tensor[(1, 37), float32], %y: Tensor[(1, 37), float32]) "
                "{ add(%x, %y) }", [T, T], kernel_cache)
    assert k._pools is not None
    return k


@pytest.fixture(scope="module")
def split(kernel_cache: KernelCache) -> Any:
    return _kernel("def @main(%x: Tensor[(1, 12), float32]) { split(%x, indices_or_sections=3, "
                   "axis=1) }", [TensorType((1, 12), "float32")], kernel_cache)


def test_held_results_are_never_reused(add: Any) -> None:
    one = np.ones((1, 37), np.float32)
    held = [add(one, one)]
    for _ in range(3 * POOL_SIZE):
        held.append(add(held[-1], one))
    assert len({id(h) for h in held}) == len(held)
    for i, h in enumerate(held):
        np.testing.assert_array_equal(h, np.full((1, 37), i + 2, np.float32))


def test_every_kind_of_holder_keeps_a_buffer(add: Any) -> None:
    """A view, a tuple, a closure cell, a dict value: each keeps its array from reuse."""
    one = np.ones((1, 37), np.float32)
    view = add(one, one)[0, 3:9]
    in_tuple = (add(one, one),)
    cell = add(one, one)

    def closure() -> Any:
        return cell

    in_dict = {"x": add(one, one)}
    for _ in range(4 * POOL_SIZE):
        add(one, one) + 0          # results dropped at once: the pool's buffers cycle
        add(np.full((1, 37), 7, np.float32), one)
    np.testing.assert_array_equal(view, np.full(6, 2, np.float32))
    np.testing.assert_array_equal(in_tuple[0], np.full((1, 37), 2, np.float32))
    np.testing.assert_array_equal(closure(), np.full((1, 37), 2, np.float32))
    np.testing.assert_array_equal(in_dict["x"], np.full((1, 37), 2, np.float32))


def test_dropped_results_are_reused_and_the_pool_stays_small(add: Any) -> None:
    one = np.ones((1, 37), np.float32)
    x = add(one, one)
    for _ in range(50):
        x = add(x, one)
    np.testing.assert_array_equal(x, np.full((1, 37), 52, np.float32))
    assert len(add._pools[0]) <= POOL_SIZE


def test_a_pooled_array_as_an_argument_is_read_through_its_twin(add: Any) -> None:
    one = np.ones((1, 37), np.float32)
    x = add(one, one)
    assert id(x) in kernels._TWINS
    y = add(x, x)                    # both arguments through the twin of x
    np.testing.assert_array_equal(y, np.full((1, 37), 4, np.float32))
    np.testing.assert_array_equal(x, np.full((1, 37), 2, np.float32))


def test_tuple_results_come_from_the_pool_too(split: Any) -> None:
    x = np.arange(12, dtype=np.float32).reshape(1, 12)
    first = split(x)
    second = split(x + 12)
    for i in range(3):
        np.testing.assert_array_equal(first[i], x[:, 4 * i:4 * i + 4])
        np.testing.assert_array_equal(second[i], x[:, 4 * i:4 * i + 4] + 12)
    assert not any(np.shares_memory(a, b) for a in first for b in second)


def test_threads_never_share_a_buffer(add: Any) -> None:
    failures: list[str] = []

    def work(seed: int) -> None:
        base = np.full((1, 37), seed, np.float32)
        one = np.ones((1, 37), np.float32)
        for i in range(400):
            y = add(base, one)
            if not np.array_equal(y, base + 1):
                failures.append(f"thread {seed} step {i}")
                return

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_the_twins_go_with_the_kernel(kernel_cache: KernelCache) -> None:
    k = _kernel("def @main(%x: Tensor[(1, 37), float32]) { negative(%x) }", [T],
                KernelCache(disk=False))
    x = k(np.ones((1, 37), np.float32))
    ids = list(k._pool_ids)
    assert ids and all(i in kernels._TWINS for i in ids)
    del k
    gc.collect()
    assert not any(i in kernels._TWINS for i in ids)
    np.testing.assert_array_equal(x, -np.ones((1, 37), np.float32))   # still valid


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.booleans()),
                    min_size=1, max_size=40))
def test_random_chains_agree_with_numpy(add: Any, ops: list[tuple[int, int, bool]]) -> None:
    """Random programs over 8 live slots: results kept or dropped at random, always right."""
    rng = np.random.default_rng(len(ops))
    slots = [rng.standard_normal((1, 37)).astype(np.float32) for _ in range(8)]
    want = [s.copy() for s in slots]
    for a, b, keep in ops:
        r = add(slots[a], slots[b])
        w = want[a] + want[b]
        if keep:
            slots[a], want[a] = r, w
        for s, v in zip(slots, want):
            np.testing.assert_array_equal(s, v)
