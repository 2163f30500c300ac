"""One kernel per recurrent step (issue 35, item 3): ``passes.fuse_cells`` after FuseOps, the
packed-GEMV lowering of the merged step, and host data movement for dynamic shapes.

Specifications:

* the LSTM's and the GRU's step each run **one** compiled kernel (the hidden projection, the
  gates and the state update), counted at run time: the compiled-kernel calls of a run grow
  by exactly one per extra step; the merged GRU step keeps the lowering's cut of nested
  ``Let`` s (``keep_tanh_arg``: without it LLVM took 195 s to compile the step);
* a new sequence length compiles no step kernel (the input projection of the whole
  sequence, a GEMM over ``(steps, 650)``, runs in row blocks: ``test_row_blocks.py``
  checks that it compiles nothing either once its two block sizes exist);
* differential against the oracle (``interpreter.evaluate``): RNN/GRU/LSTM loops with hidden
  sizes around the host's vector width (lanes ± 1, 2·lanes + 1: the packed GEMV's tails),
  any number of steps; the TreeLSTM (its merged projection and split) and CharRNN;
* the merge is refused where it would move an output's use or an effect: a cell result
  read before the last cell, a closure call between the projection and the cells.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import interpreter
import models
from backends.tvm import build
from backends.tvm.build import KernelTable, prepare
from backends.tvm.kernel.cache import KernelCache
from backends.tvm.kernel.runtime import Kernel
from backends.tvm.target import Target
from models.recurrent import _CELLS
from passes.fuse_cells import fuse_cells
from passes.fuse_ops import is_primitive
from semantics import parse, parse_expr
from semantics.expr import Call, Function, Let, Op
from semantics.types import TensorType
from semantics.visitor import post_order


def _step_kernels(fused: Any) -> list[Function]:
    """The primitive functions called inside the ``%step`` closure of ``main``."""
    main = fused["main"]
    step = next(n.value for n in post_order(main) if isinstance(n, Let)
                and n.var.name_hint == "step")
    assert isinstance(step, Function)
    out = []
    for node in post_order(step.body, descend=lambda n: not is_primitive(n)):
        if isinstance(node, Call) and isinstance(node.op, Function) and is_primitive(node.op):
            out.append(node.op)
    return out


def _ops(fn: Function) -> set[str]:
    return {n.op.name for n in post_order(fn.body) if type(n) is Call and type(n.op) is Op}


def _float_kernels(kernels: list[Function]) -> list[Function]:
    """The step's kernels that compute on float tensors (not the loop counter's
    ``less``/``add`` or the row ``take``, which run on the host)."""
    return [k for k in kernels if _ops(k) - {"less", "add", "take"}]


def test_the_lstm_step_is_one_kernel() -> None:
    mod, params = models.get("lstm")
    kernels = _step_kernels(prepare(mod, params, 3))
    assert len(kernels) <= 4                       # less, take, the cell, t + 1
    (cell,) = _float_kernels(kernels)
    assert {"nn.dense", "split", "sigmoid", "tanh", "multiply"} <= _ops(cell)


def test_the_gru_step_is_one_kernel() -> None:
    mod, params = models.get("gru")
    kernels = _step_kernels(prepare(mod, params, 3))
    (cell,) = _float_kernels(kernels)
    assert {"nn.dense", "split", "sigmoid", "tanh", "subtract"} <= _ops(cell)
    # the row of the input projection left the cell: its parameters are static
    assert all(isinstance(p.type_annotation, TensorType)
               and all(type(d) is int for d in p.type_annotation.shape)
               for p in cell.params)


def test_the_merged_gru_step_keeps_the_let_cut() -> None:
    """The dense schedule leaves the ``tanh``'s argument (which holds the ``sigmoid``) in a
    block of its own, as the lowering asked (scheduled only: no LLVM)."""
    from tvm import te

    from backends.tvm.kernel.compile import _relax_alignment
    from backends.tvm.sched import KernelInfo, pick_schedule
    from backends.tvm.te_build import build_te

    mod, params = models.get("gru")
    (cell,) = _float_kernels(_step_kernels(prepare(mod, params, 3)))
    types = [p.type_annotation for p in cell.params]
    target = Target.host()
    lowered = build_te(cell, types, target)
    prim, _ = _relax_alignment(te.create_prim_func(
        [*lowered.inputs, *lowered.constants, *lowered.outputs]))
    schedule = pick_schedule(KernelInfo(tuple(lowered.ops), cell, tuple(types), target))
    scheduled = schedule(prim).script()
    assert "keep_dense_gemv" in scheduled           # the packed GEMV schedule was chosen
    assert "keep_tanh_arg[" in scheduled             # a buffer read: not inlined


class _Counting:
    """Counts the calls of the compiled kernels of a build."""

    def __init__(self) -> None:
        self.calls = 0

    def wrap(self, k: Any) -> Any:
        if not isinstance(k, Kernel):
            return k

        def run(*args: Any, **kw: Any) -> Any:
            self.calls += 1
            return k(*args, **kw)
        return run


@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_one_compiled_kernel_call_per_step(name: str, kernel_cache: KernelCache,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    counter = _Counting()
    original = KernelTable.kernel_for
    monkeypatch.setattr(KernelTable, "kernel_for",
                        lambda self, func: counter.wrap(original(self, func)))
    mod, params = models.get(name)
    exe = build(mod, params=params, executor="vm", cache=kernel_cache)
    rng = np.random.default_rng(3)
    calls = []
    for steps in (4, 9):
        exe(rng.standard_normal((steps, 1, 650)).astype("float32"))
        counter.calls = 0
        exe(rng.standard_normal((steps, 1, 650)).astype("float32"))
        calls.append(counter.calls)
    assert (calls[1] - calls[0]) == 9 - 4          # one compiled kernel per extra step


def test_a_new_length_compiles_no_step_kernel() -> None:
    mod, params = models.get("lstm")
    exe = build(mod, params=params, executor="vm", cache=KernelCache(disk=False))
    rng = np.random.default_rng(4)
    exe(rng.standard_normal((5, 1, 650)).astype("float32"))
    specs = len(exe.kernels.compiled_specs)
    for steps in (3, 8):
        exe(rng.standard_normal((steps, 1, 650)).astype("float32"))
        new = exe.kernels.compiled_specs[specs:]
        specs = len(exe.kernels.compiled_specs)
        assert len(new) <= 1                        # the whole sequence's input projection
        assert all(_ops(fn) <= {"nn.dense", "add", "reshape"} for fn, _ in new)


def _loop(kind: str, size: int) -> tuple[str, list[str]]:
    """The recurrent loop of ``models.recurrent`` with input and hidden ``size``."""
    gates, cell = _CELLS[kind]
    g = gates * size
    t = f"Tensor[(1, {size}), float32]"
    lstm = kind == "lstm"
    text = f"""def @main(%xs: Tensor[(?, 1, {size}), float32],
          %w_ih: Tensor[({g}, {size}), float32], %w_hh: Tensor[({g}, {size}), float32],
          %b_ih: Tensor[({g}), float32],
          %b_hh: Tensor[({g}), float32]) -> {t} {{
  let %steps = take(shape_of(%xs), 0);
  let %gi_all = reshape(nn.bias_add(nn.dense(reshape(%xs, newshape=[-1, {size}]), %w_ih,
                                             units={g}), %b_ih), newshape=[-1, 1, {g}]);
  let %step = fn (%t: int32, %h: {t}{f", %c: {t}" if lstm else ""})
      -> {f"({t}, {t})" if lstm else t} {{
    if (less(%t, %steps)) {{
      let %gi = take(%gi_all, %t, axis=0);
      let %gh = nn.bias_add(nn.dense(%h, %w_hh, units={g}), %b_hh);{cell}
    }} else {{
      {"(%h, %c)" if lstm else "%h"}
    }}
  }};
  let %zero = zeros(shape=[1, {size}], dtype="float32");
  {"%step(0, %zero, %zero).0" if lstm else "%step(0, %zero)"}
}}
"""
    return text, ["w_ih", "w_hh", "b_ih", "b_hh"]


def _lane_sizes() -> list[int]:
    lanes = Target.host().lanes
    return sorted({lanes - 1, lanes + 1, 2 * lanes + 1, 3})


@settings(max_examples=6, deadline=None)
@given(kind=st.sampled_from(["lstm", "gru", "rnn"]), size=st.sampled_from(_lane_sizes()),
       steps=st.integers(0, 4), seed=st.integers(0, 2**16))
def test_fused_steps_match_the_oracle(kind: str, size: int, steps: int, seed: int,
                                      kernel_cache: KernelCache) -> None:
    text, names = _loop(kind, size)
    mod = parse(text)
    rng = np.random.default_rng(seed)
    g = _CELLS[kind][0] * size
    shapes = {"w_ih": (g, size), "w_hh": (g, size), "b_ih": (g,), "b_hh": (g,)}
    params = {n: rng.uniform(-0.5, 0.5, shapes[n]).astype("float32") for n in names}
    xs = rng.standard_normal((steps, 1, size)).astype("float32")
    exe = build(mod, params=params, executor="vm", cache=kernel_cache)
    if kind in ("lstm", "gru"):
        (cell,) = _float_kernels(_step_kernels(exe.module))
        assert "nn.dense" in _ops(cell)
    want = np.asarray(interpreter.evaluate(mod, xs, *[params[n] for n in names]))
    np.testing.assert_allclose(np.asarray(exe(xs)), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["tree_lstm", "char_rnn"])
def test_tree_lstm_and_char_rnn_match_the_oracle(name: str, kernel_cache: KernelCache) -> None:
    mod, params = models.get(name)
    inputs = models.example_inputs(name)
    exe = build(mod, params=params, executor="vm", cache=kernel_cache)
    names = [p.name_hint for p in mod["main"].params[len(inputs):]]
    want = interpreter.evaluate(mod, *inputs, *[params[n] for n in names])
    got = exe(*inputs)
    if name == "tree_lstm":   # the input projection and the gates' split: one kernel
        assert any({"nn.dense", "split"} <= _ops(n) for n in _primitives(exe.module))
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)
    else:
        assert _items(got) == _items(want)


def _items(v: Any) -> list[int]:
    """The elements of a prelude ``List`` value."""
    out = []
    while v.name == "Cons":
        out.append(int(v.fields[0]))
        v = v.fields[1]
    return out


_CELL = """
def @main(%h: Tensor[(1, 8), float32], %w: Tensor[(16, 8), float32],
          %f: fn (Tensor[(1, 8), float32]) -> Tensor[(1, 8), float32])
    -> (Tensor[(1, 8), float32], Tensor[(1, 8), float32]) {
  let %s = split(nn.dense(%h, %w, units=16), indices_or_sections=2, axis=1);
  let %a = sigmoid(%s.0);
  let %b = BETWEEN;
  let %c = multiply(tanh(%s.1), %b);
  (%a, %c)
}
"""
_REFUSED = _CELL.replace("BETWEEN", "%f(%a)")
_PURE = _CELL.replace("BETWEEN", "negative(%a)")


def _fused(text: str) -> Any:
    import passes
    import typechecker

    return typechecker.infer(passes.fuse_ops(typechecker.infer(parse(text))))


def _primitives(mod: Any) -> list[Function]:
    return [n for n in post_order(mod["main"]) if is_primitive(n)]  # type: ignore[misc]


def test_no_merge_across_a_closure_call_or_an_early_use() -> None:
    """``%a`` (a cell result) is read by a closure call before the last cell ``%c``:
    merging would move ``%a`` after its use and the projection across a call that may
    fail; the program stays as FuseOps made it. With a pure operator instead of the call,
    the projection and the cells merge (and compute the same)."""
    refused = fuse_cells(_fused(_REFUSED))
    assert not any({"nn.dense", "sigmoid"} <= _ops(n) for n in _primitives(refused))
    pure = _fused(_PURE)
    merged = fuse_cells(pure)
    assert any({"nn.dense", "sigmoid", "tanh"} <= _ops(n) for n in _primitives(merged))
    rng = np.random.default_rng(5)
    h, w = (rng.standard_normal(s).astype("float32") for s in ((1, 8), (16, 8)))
    ident = interpreter.evaluate(parse_expr("fn (%x: Tensor[(1, 8), float32]) { %x }"))
    got = interpreter.evaluate(merged, h, w, ident)
    want = interpreter.evaluate(parse(_PURE), h, w, ident)
    for g_, w_ in zip(got, want):
        np.testing.assert_allclose(np.asarray(g_), np.asarray(w_), rtol=1e-6)
