"""Row-separable dynamic groups compile once and run in row blocks (``backends.tvm.row_blocks``;
issue 35, item 3: a new sequence length compiles nothing).

Specifications:

* :func:`row_plan` accepts exactly the groups whose every result row depends on the same row
  of the row-tensor arguments (dense by a static weight, bias_add off axis 0, row-keeping
  reshapes, elementwise/broadcast operators with static operands that cannot span rows) and
  refuses the rest (reductions, transposes, positional operators, an unknown dimension off
  axis 0, a static operand with a row dimension);
* the block sizes come from the Target (the GEMM register tile's rows, six of them), and the
  plan covers every row once with at most one padded block;
* differential against the oracle (``interpreter.evaluate``) for every row count from 0 past
  two large blocks, so full blocks, padded remainders and the small block all run;
* once both block sizes are compiled, no length compiles anything, the LSTM's included;
* the padding repeats a real row: an integer program gives the oracle's values and errors;
  row tensors of different lengths take the per-signature path and fail as the oracle does.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import interpreter
import models
from backends.tvm import build
from backends.tvm.kernel.cache import KernelCache
from backends.tvm.row_blocks import RowBlocks, block_plan, block_rows, row_plan
from backends.tvm.target import Target
from passes.fuse_ops import is_primitive
from semantics import RelayRuntimeError, parse
from semantics.expr import Call, Function
from semantics.visitor import post_order

BLOCKS = block_rows(Target.host())

MLP = """
def @main(%x: Tensor[(?, 6), float32], %w: Tensor[(5, 6), float32], %b: Tensor[(5), float32],
          %s: Tensor[(5), float32], %r: Tensor[(1, 5), float32]) -> Tensor[(?, 5), float32] {
  %0 = nn.dense(%x, %w, units=5);
  %1 = nn.bias_add(%0, %b, axis=1);
  sigmoid(%1) * %s + %r
}
"""


def _mlp_params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"w": rng.standard_normal((5, 6)).astype("float32"),
            "b": rng.standard_normal(5).astype("float32"),
            "s": rng.standard_normal(5).astype("float32"),
            "r": rng.standard_normal((1, 5)).astype("float32")}


def _primitives(text: str, params: dict[str, np.ndarray] | None = None) -> list[Function]:
    from backends.tvm.build import prepare
    from backends.tvm.target import Target

    fused = prepare(text, params or {}, 2, Target.host())
    return [n.op for n in post_order(fused["main"])
            if isinstance(n, Call) and isinstance(n.op, Function) and is_primitive(n.op)]


def _plans(text: str, params: dict[str, np.ndarray] | None = None) -> list[bool]:
    return [row_plan(f) is not None for f in _primitives(text, params)]


@pytest.mark.parametrize("op, body, separable", [
    ("nn.relu", "nn.relu(%x) + %v", True),
    ("reshape", "reshape(%x, newshape=[-1, 2, 3]) * 2f", True),
    ("clip", "clip(cast(%x, dtype=\"float16\"), a_min=-1, a_max=1)", True),
    ("sum", "sum(%x, axis=[1], keepdims=True) + %x", False),
    ("transpose", "transpose(%x)", False),
    ("tile", "tile(%x, reps=[2, 1])", False),
    ("reshape", "reshape(%x, newshape=[-1])", False),      # the row axis is merged away
])
def test_row_plan_accepts_only_row_separable_groups(op: str, body: str, separable: bool) -> None:
    text = f"def @main(%x: Tensor[(?, 6), float32], %v: Tensor[(6), float32]) {{ {body} }}"
    groups = [f for f in _primitives(text, {"v": np.ones(6, "float32")})
              if op in {n.op.name for n in post_order(f.body) if isinstance(n, Call)
                        and not isinstance(n.op, Function)}]
    assert groups and all((row_plan(f) is not None) == separable for f in groups)


def test_an_unknown_dimension_off_axis_0_is_not_row_separable() -> None:
    assert _plans("def @main(%x: Tensor[(4, ?), float32]) { nn.relu(%x) }") == [False]


def test_a_static_operand_spanning_rows_is_not_row_separable() -> None:
    text = """def @main(%x: Tensor[(?, 6), float32], %y: Tensor[(3, 6), float32]) {
      add(%x, %y)
    }"""
    assert not any(_plans(text))


@settings(max_examples=12, deadline=None)
@given(rows=st.lists(st.integers(0, 2 * BLOCKS[0] + BLOCKS[1] + 3), min_size=1, max_size=4),
       seed=st.integers(0, 2**16))
def test_row_blocks_match_the_oracle_at_every_length(rows: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    params = _mlp_params(rng)
    exe = build(MLP, params=params, executor="vm", cache=KernelCache(disk=False))
    assert any(isinstance(k, RowBlocks) for _, k in exe.kernels._seen.values())
    mod = parse(MLP)
    for n in rows:
        x = rng.standard_normal((n, 6)).astype("float32")
        want = interpreter.evaluate(mod, x, *params.values())
        got = exe(x)
        assert got.shape == (n, 5) and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_once_both_blocks_are_compiled_no_length_compiles() -> None:
    rng = np.random.default_rng(1)
    exe = build(MLP, params=_mlp_params(rng), executor="vm", cache=KernelCache(disk=False))
    exe(rng.standard_normal((BLOCKS[0] + 1, 6)).astype("float32"))   # a large and a small
    compiled = len(exe.kernels.compiled_specs)
    for n in (0, 1, BLOCKS[1], BLOCKS[0], 3 * BLOCKS[0] + BLOCKS[1] + 1, 77):
        exe(rng.standard_normal((n, 6)).astype("float32"))
    assert len(exe.kernels.compiled_specs) == compiled


def test_a_new_lstm_length_compiles_nothing() -> None:
    mod, params = models.get("lstm")
    exe = build(mod, params=params, executor="vm", cache=KernelCache(disk=False))
    rng = np.random.default_rng(4)
    exe(rng.standard_normal((BLOCKS[0] + 3, 1, 650)).astype("float32"))
    compiled = len(exe.kernels.compiled_specs)
    for steps in (3, 8, 50):
        exe(rng.standard_normal((steps, 1, 650)).astype("float32"))
    assert len(exe.kernels.compiled_specs) == compiled


INT = """
def @main(%x: Tensor[(?, 3), int32], %y: Tensor[(?, 3), int32]) -> Tensor[(?, 3), int32] {
  multiply(%x, %y) + divide(%x, %y)
}
"""


def test_integer_rows_pad_with_real_rows_and_mismatched_lengths_fail_as_the_oracle() -> None:
    exe = build(INT, executor="vm", cache=KernelCache(disk=False))
    rng = np.random.default_rng(2)
    for n in (1, 3, BLOCKS[0] + 5):
        x = rng.integers(-2**31, 2**31, (n, 3), dtype=np.int64).astype("int32")
        y = rng.choice([-3, -1, 1, 2, 7], (n, 3)).astype("int32")  # zero padding would trap
        np.testing.assert_array_equal(exe(x, y), interpreter.evaluate(parse(INT), x, y))
    x, y = np.ones((3, 3), "int32"), np.ones((2, 3), "int32")
    with pytest.raises(RelayRuntimeError, match="broadcast"):
        exe(x, y)


def test_the_blocks_follow_the_targets_register_tile() -> None:
    avx2 = Target.for_cpu("haswell")
    assert block_rows(avx2) == (36, 6)                   # 6 rows × 2 vectors: 12 accumulators
    assert block_rows(avx2.with_lanes(16).replace(registers=32)) == (48, 8)


@given(n=st.integers(0, 200), large_small=st.sampled_from([(36, 6), (48, 8), (32, 8)]))
def test_the_block_plan_covers_every_row_once(n: int, large_small: tuple[int, int]) -> None:
    large, small = large_small
    plan = block_plan(n, large, small)
    assert all(b in (large, small) for b in plan)
    assert sum(plan) >= n and sum(plan) - plan[-1] < n if plan else n == 0
    waste = sum(plan) - n
    assert waste < large                                  # at most one padded block
    # the remainder runs in small blocks only while they hold at most half a large block
    tail = [b for b in plan if b == small]
    assert sum(tail) <= large // 2
