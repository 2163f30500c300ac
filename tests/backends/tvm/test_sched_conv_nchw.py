"""The NCHW convolution schedule (``backends/tvm/sched/conv2d_nchw.py``).

As ``test_sched_conv.py`` does for the blocked layouts: every case builds a small program (a
convolution with or without a fused epilogue), optimizes it at ``-O0`` or ``-O1`` (no
AlterOpLayout: the convolution stays ``NCHW``/``OIHW``), compiles each fused kernel through
the schedule table and compares it with the oracle (:func:`interpreter.evaluate` of the same
primitive function) — odd shapes included: channel counts that are not multiples of 8,
1×1/3×3/7×7 kernels, strides 2 to 4, groups, depthwise, dilation, asymmetric padding,
widths without a good tile, a batch of 2. The schedule is checked to have really applied
(the rewritten blocks, a parallel loop, a vectorized register tile, a local accumulator,
the epilogue in the tile's write-back), and blocked layouts to be left to the blocked rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.tvm.build import prepare
from backends.tvm.kernel.cache import KernelCache
from backends.tvm.sched import KernelInfo, candidates
from backends.tvm.sched.conv2d_nchw import (
    ConvShape,
    Tile,
    choose_tile,
    conv_shape,
    schedule_conv2d_nchw,
)
from backends.tvm.target import LANES, Target
from backends.tvm.te_build import build_te
from passes.fuse_ops import is_primitive
from semantics.expr import Call, Function, Op
from semantics.module import IRModule
from semantics.visitor import post_order


@dataclass(frozen=True)
class Conv:
    """A case: NCHW data ``(batch, c, h, w)``, OIHW weight ``(o, c/groups, kh, kw)``."""

    c: int
    o: int
    h: int
    w: int
    kh: int = 3
    kw: int = 3
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (1, 1, 1, 1)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    epilogue: str = "bias_relu"
    level: int = 1
    batch: int = 1

    def program(self, seed: int = 0) -> tuple[str, dict[str, np.ndarray]]:
        rng = np.random.default_rng(seed)
        weight = rng.standard_normal((self.o, self.c // self.groups, self.kh, self.kw))
        params = {"w": weight.astype("float32"),
                  "b": rng.standard_normal(self.o).astype("float32")}
        s, p, d = self.strides, self.padding, self.dilation
        conv = (f"nn.conv2d(%x, %w, strides=[{s[0]}, {s[1]}], padding=[{p[0]}, {p[1]}, "
                f"{p[2]}, {p[3]}], dilation=[{d[0]}, {d[1]}], groups={self.groups})")
        extra = ""
        if self.epilogue == "none":
            body = conv
            del params["b"]
        elif self.epilogue == "bias_relu":
            body = f"nn.relu(nn.bias_add({conv}, %b))"
        elif self.epilogue == "residual":
            extra = f", %r: {_tensor_type(self.out_shape())}"
            body = f"nn.relu(add(nn.bias_add({conv}, %b), %r))"
        elif self.epilogue == "scale_clip":
            params["m"] = rng.uniform(0.5, 2.0, (self.o, 1, 1)).astype("float32")
            del params["b"]
            body = f"clip(multiply({conv}, %m), a_min=0f, a_max=6f)"
        else:
            raise ValueError(self.epilogue)
        decls = "".join(f", %{k}: {_tensor_type(v.shape)}" for k, v in params.items())
        data = _tensor_type((self.batch, self.c, self.h, self.w))
        return f"def @main(%x: {data}{extra}{decls}) {{\n  {body}\n}}\n", params

    def out_shape(self) -> tuple[int, int, int, int]:
        def dim(n: int, k: int, lo: int, hi: int, s: int, d: int) -> int:
            return (n + lo + hi - d * (k - 1) - 1) // s + 1
        p = self.padding
        return (self.batch, self.o,
                dim(self.h, self.kh, p[0], p[2], self.strides[0], self.dilation[0]),
                dim(self.w, self.kw, p[1], p[3], self.strides[1], self.dilation[1]))

    def inputs(self, seed: int = 1) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        xs = [rng.standard_normal((self.batch, self.c, self.h, self.w)).astype("float32")]
        if self.epilogue == "residual":
            xs.append(rng.standard_normal(self.out_shape()).astype("float32"))
        return xs


def _tensor_type(shape: tuple[int, ...]) -> str:
    return f"Tensor[({', '.join(str(int(d)) for d in shape)}), float32]"


def conv_of(prim: Function) -> Call | None:
    for node in post_order(prim.body):
        if isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == "nn.conv2d":
            return node
    return None


WIDTHS = tuple(sorted({Target.host().lanes, *LANES}))
"""The vector widths the rule runs on (the host's, and 4, 8, 16 forced through the Target
record: conftest's ``width_target``)."""


ZEN3 = Target.host().replace(lanes=8, registers=16, loads_per_cycle=3, fma_per_cycle=2,
                             fma_latency=4)
"""The machine the cost model's expected choices were measured on (AMD Zen 3, AVX2)."""


def scheduled_script(prim: Function, tile: Tile | None = None,
                     target: Target | None = None) -> str | None:
    """The TVMScript of ``prim``'s kernel scheduled by the NCHW rule for ``target`` (None:
    the host) (None: declined)."""
    from tvm import te

    target = target or Target.host()
    types = [p.type_annotation for p in prim.params]
    lowered = build_te(prim, types, target)  # type: ignore[arg-type]
    func = te.create_prim_func([*lowered.inputs, *lowered.constants, *lowered.outputs])
    info = KernelInfo(tuple(lowered.ops), prim, tuple(types), target)  # type: ignore[arg-type]
    mod = schedule_conv2d_nchw(func, info, tile)
    return None if mod is None else str(mod.script())


def check(case: Conv, cache: KernelCache, run_kernels: object, *, seed: int = 0,
          inputs: list[np.ndarray] | None = None, target: Target | None = None) -> int:
    """Run every fused kernel of ``case`` for ``target`` (None: the host) against the
    oracle; the number of convolution kernels the NCHW rule scheduled (each is also checked
    to be scheduled as it should)."""
    text, params = case.program(seed)
    fused: IRModule = prepare(text, params, case.level, target)
    values = case.inputs() if inputs is None else inputs
    ran = run_kernels(fused, values, cache, {"float32": 1e-4}, target)  # type: ignore[operator]
    scheduled = 0
    for prim in ran:
        if conv_of(prim) is not None:
            script = scheduled_script(prim, target=target)
            assert script is not None, "the NCHW rule declined"
            assert_scheduled(script)
            scheduled += 1
    return scheduled


def assert_scheduled(script: str) -> None:
    assert 'T.sblock("conv2d_nchw_update")' in script and "conv2d_nchw_init" in script
    assert 'T.sblock("conv2d_pad_w")' in script                      # the padded copy
    conv = script[script.index('T.sblock("conv2d_nchw_init")'):]
    assert "if_then_else" not in conv                   # no padding condition in the tile
    assert 'scope="local"' in script                        # the accumulator
    assert script.count("T.vectorized(") >= 2               # the tile and its init
    assert "T.unroll(" in script


# --- examples on odd shapes ------------------------------------------------------------------

CASES = {
    "3x3, channels not multiples of 8": Conv(12, 20, 9, 11, epilogue="residual"),
    "3x3 -O0 (the convolution alone)": Conv(16, 24, 10, 13, level=0),
    "1x1 stride 2, no epilogue": Conv(32, 48, 10, 9, 1, 1, (2, 2), (0, 0, 0, 0),
                                      epilogue="none"),
    "1x1, odd everything": Conv(5, 7, 3, 5, 1, 1, padding=(0, 0, 0, 0)),
    "7x7 stride 2, 3 input channels": Conv(3, 16, 17, 19, 7, 7, (2, 2), (3, 3, 3, 3)),
    "8x8 stride 4 (DQN's first layer)": Conv(4, 8, 20, 23, 8, 8, (4, 4), (0, 0, 0, 0)),
    "stride 3 by 2": Conv(6, 8, 11, 14, 3, 3, (3, 2), (1, 2, 0, 1)),
    "depthwise stride 2": Conv(24, 24, 13, 12, strides=(2, 2), groups=24),
    "depthwise, scale+clip": Conv(16, 16, 6, 30, epilogue="scale_clip", groups=16),
    "groups 2, odd channels": Conv(6, 10, 6, 6, groups=2),
    "groups 3, residual": Conv(9, 12, 5, 7, groups=3, epilogue="residual"),
    "dilation 2, asymmetric padding": Conv(8, 12, 9, 10, padding=(0, 1, 2, 1),
                                           dilation=(2, 2)),
    "prime width": Conv(8, 8, 3, 31, 1, 3, padding=(0, 1, 0, 1)),
    "width 1": Conv(8, 16, 7, 1, 3, 1, padding=(1, 0, 1, 0)),
    "width 2, height 1": Conv(4, 8, 1, 2, 1, 2, padding=(0, 0, 0, 1)),
    "padding wider than the image": Conv(3, 4, 2, 2, 3, 3, padding=(3, 3, 3, 3)),
    "a batch of 2": Conv(8, 16, 6, 9, batch=2, epilogue="residual"),
    "one output channel": Conv(16, 1, 5, 17),
    "ResNet's 3x3 at 7x7": Conv(64, 64, 7, 7, epilogue="residual"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_nchw_conv_kernels_match_the_oracle(name: str, kernel_cache: KernelCache,
                                            run_kernels: object) -> None:
    assert check(CASES[name], kernel_cache, run_kernels) == 1


def width_cases() -> list[Any]:
    """Per width ``L`` other than the host's: output widths around the column tiles' tails
    (``L - 1``, ``L + 1``, ``2L + 1``), dense, grouped and depthwise, -O0 and -O1."""
    out = []
    for lanes in WIDTHS:
        if lanes == Target.host().lanes:
            continue
        a, b, c = lanes - 1, lanes + 1, 2 * lanes + 1
        for case in (Conv(8, 12, 5, b, epilogue="residual"),
                     Conv(6, 8, 4, c, groups=2, level=0),
                     Conv(16, 16, 6, a, epilogue="scale_clip", groups=16)):
            out.append(pytest.param(lanes, case, id=f"lanes{lanes}-{case.c}x{case.o}-w{case.w}"))
    return out


@pytest.mark.parametrize("lanes,case", width_cases())
def test_nchw_conv_kernels_match_the_oracle_on_every_width(lanes: int, case: Conv,
                                                           kernel_cache: KernelCache,
                                                           run_kernels: object,
                                                           target_of_width: Any) -> None:
    target = target_of_width(lanes)
    assert check(case, kernel_cache, run_kernels, target=target) == 1
    shape = ConvShape(case.batch, case.c, case.h, case.w, case.o, case.c // case.groups,
                      case.kh, case.kw, *case.out_shape()[2:], case.strides, case.dilation,
                      case.padding[0], case.padding[1], case.groups)
    assert choose_tile(shape, target).tw % lanes == 0


def test_nan_and_infinity_propagate(kernel_cache: KernelCache, run_kernels: object) -> None:
    case = Conv(8, 8, 5, 6)
    x = case.inputs()[0]
    x[0, 3, 2, 2] = np.nan
    x[0, 5, 0, 4] = np.inf
    x[0, 7, 4, 0] = -np.inf
    assert check(case, kernel_cache, run_kernels, inputs=[x]) == 1


def _prims(case: Conv) -> list[Function]:
    text, params = case.program()
    fused = prepare(text, params, case.level)
    return [n for n in post_order(fused.functions["main"])  # type: ignore[misc]
            if is_primitive(n) and conv_of(n) is not None]  # type: ignore[arg-type]


def test_the_schedule_is_a_parallel_register_tile_with_the_epilogue_in_its_write_back(
        ) -> None:
    (prim,) = _prims(Conv(32, 64, 14, 14, epilogue="residual"))
    script = scheduled_script(prim)
    assert script is not None
    tile = choose_tile(ConvShape(1, 32, 14, 14, 64, 32, 3, 3, 14, 14, (1, 1), (1, 1), 1, 1,
                                 1))
    assert f"T.unroll({tile.oct})" in script
    assert f"T.vectorized({tile.tw})" in script
    assert "T.parallel(" in script
    # bias, residual and relu happen in the tile: no block of their own at the root
    assert 'T.sblock("bias_add")' not in script and 'T.sblock("add")' not in script
    assert 'T.sblock("relu")' in script
    tail = script[script.index("conv2d_nchw_update"):]
    assert 'T.sblock("relu")' in tail
    rule_names = [r.name for r in candidates(["nn.conv2d", "add", "nn.relu"])]
    assert any(n.endswith("conv2d_nchw._rule") for n in rule_names)


def test_at_width_stride_1_the_padding_is_a_fill_and_a_copy_without_condition() -> None:
    (prim,) = _prims(Conv(16, 16, 6, 20, level=0, epilogue="none"))
    script = scheduled_script(prim)
    assert script is not None
    assert 'T.sblock("conv2d_pad_w_pad_const")' in script      # the zeros, then the copy
    assert "if_then_else" not in script


def test_an_explicit_tile_is_used() -> None:
    (prim,) = _prims(Conv(16, 16, 6, 20, level=0, epilogue="none"))
    script = scheduled_script(prim, Tile(4, 24))
    assert script is not None
    assert "T.unroll(4)" in script and "T.vectorized(24)" in script


def test_blocked_layouts_and_other_dtypes_are_declined() -> None:
    text, params = Conv(32, 32, 8, 8).program()
    blocked = [n for n in post_order(prepare(text, params, 3).functions["main"])
               if is_primitive(n) and conv_of(n) is not None]  # type: ignore[arg-type]
    assert blocked and all(scheduled_script(p) is None for p in blocked)  # type: ignore[arg-type]
    f16 = prepare("""
def @main(%x: Tensor[(1, 8, 6, 6), float16], %w: Tensor[(8, 8, 3, 3), float16]) {
  nn.conv2d(%x, %w, padding=[1, 1])
}""", None, 0)
    (prim,) = [n for n in post_order(f16.functions["main"]) if is_primitive(n)]
    types = [p.type_annotation for p in prim.params]  # type: ignore[attr-defined]
    info = KernelInfo(("nn.conv2d",), prim, tuple(types), Target.host())  # type: ignore[arg-type]
    assert conv_shape(info) is None


def test_the_tile_fits_the_registers_and_divides_the_channels() -> None:
    for oc in (1, 3, 7, 12, 16, 20, 64, 96, 512, 1000):
        for ow in (1, 2, 7, 9, 14, 20, 28, 31, 56, 112, 224):
            shape = ConvShape(1, 8, ow, ow, oc, 8, 3, 3, ow, ow, (1, 1), (1, 1), 1, 1, 1)
            tile = choose_tile(shape, ZEN3)
            assert oc % tile.oct == 0 and tile.tw % 8 == 0
            assert tile.oct * tile.tw // 8 <= 12
    # The cost model's choices on common layers.
    def pick(oc: int, ow: int) -> tuple[int, int]:
        t = choose_tile(ConvShape(1, 64, ow, ow, oc, 64, 3, 3, ow, ow, (1, 1), (1, 1), 1, 1,
                                  1), ZEN3)
        return (t.oct, t.tw)
    assert pick(64, 56) == (8, 8)           # 56 = 7 × 8: no wasted lane
    assert pick(512, 7) == (8, 8)
    assert pick(96, 56) == (12, 8)


def test_the_tile_follows_the_target() -> None:
    """AVX-512's 16 lanes and 32 registers: column tiles of 16, up to 28 accumulators."""
    wide = ZEN3.replace(lanes=16, registers=32)
    for oc in (16, 64, 96, 512):
        for ow in (7, 14, 17, 56):
            shape = ConvShape(1, 8, ow, ow, oc, 8, 3, 3, ow, ow, (1, 1), (1, 1), 1, 1, 1)
            tile = choose_tile(shape, wide)
            assert oc % tile.oct == 0 and tile.tw % 16 == 0
            assert tile.oct * tile.tw // 16 <= 28


# --- the property ----------------------------------------------------------------------------

@st.composite
def conv_cases(draw: st.DrawFn) -> Conv:
    kind = draw(st.sampled_from(["dense", "depthwise", "grouped"]))
    kh, kw = draw(st.sampled_from([1, 2, 3, 5])), draw(st.sampled_from([1, 3, 4]))
    sh, sw = draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 2, 3]))
    dil = draw(st.sampled_from([1, 1, 2]))
    pads = tuple(draw(st.integers(0, 2)) for _ in range(4))
    h = draw(st.integers(max(1, dil * (kh - 1) + 1 - pads[0] - pads[2]), 8))
    least = max(1, dil * (kw - 1) + 1 - pads[1] - pads[3])
    w = draw(st.integers(least, 19) | st.sampled_from([7, 9, 15, 17, 33]).filter(
        lambda v: v >= least))                    # around 8 and 16 lanes' column tails
    if kind == "dense":
        c, o, groups = draw(st.integers(1, 9)), draw(st.integers(1, 13)), 1
    elif kind == "depthwise":
        c = o = groups = draw(st.integers(2, 10))
    else:
        groups = draw(st.sampled_from([2, 3]))
        c, o = groups * draw(st.integers(1, 3)), groups * draw(st.integers(1, 4))
    epilogue = draw(st.sampled_from(["none", "bias_relu", "residual", "scale_clip"]))
    return Conv(c, o, h, w, kh, kw, (sh, sw), pads, (dil, dil),  # type: ignore[arg-type]
                groups, epilogue, level=draw(st.sampled_from([0, 1])),
                batch=draw(st.sampled_from([1, 1, 2])))


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=conv_cases(), seed=st.integers(0, 2**16), lanes=st.sampled_from(WIDTHS))
def test_scheduled_nchw_convolutions_match_the_oracle(case: Conv, seed: int, lanes: int,
                                                      kernel_cache: KernelCache,
                                                      run_kernels: object,
                                                      target_of_width: Any) -> None:
    assert check(case, kernel_cache, run_kernels, seed=seed,
                 target=target_of_width(lanes)) == 1
