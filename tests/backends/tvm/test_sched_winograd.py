"""The Winograd convolution at ``-O3`` (``passes/alter_winograd.py``,
``backends/tvm/lower/winograd.py``, ``backends/tvm/sched/winograd.py``).

Each case is a 3×3 stride-1 convolution with bound weights and a fused epilogue (bias and
ReLU, or a residual): ``-O3`` must turn it into a Winograd convolution (its weight transform
folded into a constant at build time), the Winograd schedule must schedule the kernel (a
parallel loop, vectorized lanes), and every fused kernel must agree with the oracle —
odd extents (tiles cut by the output's edge), asymmetric padding, both tile sizes, and every
vector width the host can run (forced through the Target record). A Winograd convolution
outside AlterOpLayout (unblocked layouts, a weight that is a parameter: the packing stage)
compiles and agrees too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from backends.tvm import build
from backends.tvm.build import prepare
from backends.tvm.kernel.cache import KernelCache
from backends.tvm.sched import KernelInfo
from backends.tvm.sched.winograd import schedule_winograd
from backends.tvm.target import LANES, Target
from backends.tvm.te_build import build_te
from interpreter import evaluate
from passes.fuse_ops import is_primitive
from semantics import ops
from semantics.expr import Call, Function, Op
from semantics.module import IRModule
from semantics.visitor import post_order

WINOGRAD = "nn.contrib_conv2d_winograd_without_weight_transform"
WEIGHT_TRANSFORM = "nn.contrib_conv2d_winograd_weight_transform"
BLOCK = Target.host().lanes
WIDTHS = tuple(sorted({BLOCK, *LANES}))


def program(c: int, o: int, h: int, w: int, padding: tuple[int, int, int, int] = (1, 1, 1, 1),
            epilogue: str = "bias_relu", seed: int = 0) -> tuple[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    params = {"w": (rng.standard_normal((o, c, 3, 3)) * 0.2).astype("float32"),
              "b": rng.standard_normal(o).astype("float32")}
    pt, pl, pb, pr = padding
    oh, ow = h + pt + pb - 2, w + pl + pr - 2
    conv = f"nn.conv2d(%x, %w, padding=[{pt}, {pl}, {pb}, {pr}])"
    extra = ""
    if epilogue == "bias_relu":
        body = f"nn.relu(nn.bias_add({conv}, %b))"
    else:
        extra = f", %r: Tensor[(1, {o}, {oh}, {ow}), float32]"
        body = f"nn.relu(add(nn.bias_add({conv}, %b), %r))"
    text = (f"def @main(%x: Tensor[(1, {c}, {h}, {w}), float32]{extra}, "
            f"%w: Tensor[({o}, {c}, 3, 3), float32], %b: Tensor[({o}), float32]) {{\n"
            f"  {body}\n}}\n")
    return text, params


def _winograd_calls(fused: IRModule) -> list[Call]:
    return [n for n in post_order(fused.functions["main"])
            if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == WINOGRAD]


def _primitives(fused: IRModule) -> list[Function]:
    seen: dict[int, Any] = {}
    for node in post_order(fused.functions["main"]):
        if is_primitive(node):
            seen[id(node)] = node
    return list(seen.values())


def _scheduled(prim: Function, target: Target) -> str | None:
    from tvm import te

    types = [p.type_annotation for p in prim.params]
    lowered = build_te(prim, types, target)  # type: ignore[arg-type]
    func = te.create_prim_func([*lowered.inputs, *lowered.constants, *lowered.outputs])
    mod = schedule_winograd(func, KernelInfo(tuple(lowered.ops), prim, tuple(types),  # type: ignore[arg-type]
                                             target))
    return None if mod is None else str(mod.script())


def check(c: int, o: int, h: int, w: int, tile: int, cache: KernelCache, run_kernels: Any,
          target: Target, **kw: Any) -> None:
    text, params = program(c, o, h, w, **kw)
    fused = prepare(text, params, 3, target)
    calls = _winograd_calls(fused)
    assert [call.attrs["tile_size"] for call in calls] == [tile]
    assert not any(isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == WEIGHT_TRANSFORM
                   for n in post_order(fused.functions["main"])), "the transform is folded"
    rng = np.random.default_rng(1)
    values = [rng.standard_normal((1, c, h, w)).astype("float32")]
    if kw.get("epilogue") == "residual":
        pt, pl, pb, pr = kw.get("padding", (1, 1, 1, 1))
        values.append(rng.standard_normal((1, o, h + pt + pb - 2, w + pl + pr - 2))
                      .astype("float32"))
    ran = run_kernels(fused, values, cache, {"float32": 1e-4}, target)
    wino = [p for p in ran if any(isinstance(n, Call) and isinstance(n.op, Op)
                                  and n.op.name == WINOGRAD for n in post_order(p.body))]
    assert len(wino) == 1
    script = _scheduled(wino[0], target)
    assert script is not None and "T.parallel" in script and "T.vectorized" in script


CASES: dict[str, tuple[int, int, int, int, int, dict[str, Any]]] = {
    "F4, 28x28, bias+relu": (32, 32, 28, 28, 4, {}),
    "F4, odd 30x29, residual": (32, 16, 30, 29, 4, {"epilogue": "residual"}),
    "F2, 14x14, bias+relu": (64, 64, 14, 14, 2, {}),
    "F2, 9x11, asymmetric padding, residual": (64, 32, 9, 11, 2,
                                               {"padding": (0, 1, 2, 1), "epilogue": "residual"}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_winograd_kernels_match_the_oracle(name: str, kernel_cache: KernelCache,
                                           run_kernels: Any) -> None:
    c, o, h, w, tile, kw = CASES[name]
    check(c, o, h, w, tile, kernel_cache, run_kernels, Target.host(), **kw)


@pytest.mark.parametrize("lanes", [w for w in WIDTHS if w != BLOCK])
def test_every_vector_width(lanes: int, kernel_cache: KernelCache, run_kernels: Any,
                            target_of_width: Any) -> None:
    check(32, 16, 30, 29, 4, kernel_cache, run_kernels, target_of_width(lanes),
          epilogue="residual")


def test_the_winograd_rule_can_be_switched_off() -> None:
    text, params = program(32, 32, 28, 28)
    assert _winograd_calls(prepare(text, params, 3, Target.host()))
    assert not _winograd_calls(prepare(text, params, 3, Target.host().replace(winograd=False)))
    assert not _winograd_calls(prepare(text, params, 2, Target.host()))


def test_an_unblocked_winograd_call_with_a_weight_parameter() -> None:
    """NCHW data, the transformed weight an argument (packed by a stage of the kernel)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 5, 9, 7)).astype("float32")
    k = rng.standard_normal((6, 5, 3, 3)).astype("float32")
    u = ops.get(WEIGHT_TRANSFORM).reference(k, tile_size=2)
    text = ("def @main(%x: Tensor[(1, 5, 9, 7), float32], %u: Tensor[(4, 4, 6, 5), float32]) {\n"
            f"  nn.relu({WINOGRAD}(%x, %u, tile_size=2, padding=[1, 1]))\n}}\n")
    exe = build(text, opt_level=0)
    got = exe(x, u)
    np.testing.assert_allclose(got, evaluate(text, x, u), rtol=1e-4, atol=1e-4)
    want = np.maximum(ops.get("nn.conv2d").reference(x, k, padding=[1, 1]), 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
