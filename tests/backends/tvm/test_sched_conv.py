"""The convolution schedules (``backends/tvm/sched/conv2d.py``) and the layouts they rely on.

Every case builds a small program (a convolution with a fused epilogue), optimizes it at
``-O3`` (AlterOpLayout moves the convolution to ``NCHW{c}c``; the weights are bound and
pre-packed), compiles each fused kernel through the schedule table and compares it with the
oracle (:func:`interpreter.evaluate` of the same primitive function) — odd shapes included:
channel counts the block does not divide, 1×1 and 7×7 kernels, strides 2, groups,
depthwise, dilation, asymmetric padding, widths without a good tile. The schedule is also
checked to have really applied (a parallel loop and a vectorized loop of the block's lanes;
the Winograd rule is off: :func:`direct`),
and the -O3 pipeline to leave no per-call weight repacking and no layout transform between
consecutive convolutions.
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
from backends.tvm.sched.conv2d import (
    K_CHUNK,
    K_CHUNK_SMALL,
    k_blocked,
    k_chunk,
    register_tile,
    schedule_conv2d,
)
from backends.tvm.target import LANES, Target
from backends.tvm.te_build import build_te
from passes.fuse_ops import is_primitive
from semantics.expr import Call, Constant, Function, Op
from semantics.module import IRModule
from semantics.types import TensorType
from semantics.visitor import post_order

BLOCK = Target.host().lanes
"""The host's channel block (AlterOpLayout blocks by the build target's lanes)."""

WIDTHS = tuple(sorted({BLOCK, *LANES}))
"""The vector widths the schedule runs on (the host's, and 4, 8, 16 forced through the
Target record: conftest's ``width_target``)."""


@dataclass(frozen=True)
class Conv:
    """A convolution case: NCHW data ``(1, c, h, w)``, OIHW weight ``(o, c/groups, kh, kw)``."""

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

    def program(self, seed: int = 0) -> tuple[str, dict[str, np.ndarray]]:
        """The Relay text of ``@main(%x, [%r]) `` and its bound weights."""
        rng = np.random.default_rng(seed)
        weight = rng.standard_normal((self.o, self.c // self.groups, self.kh, self.kw))
        bias = rng.standard_normal(self.o)
        params = {"w": weight.astype("float32"), "b": bias.astype("float32")}
        s, p, d = self.strides, self.padding, self.dilation
        conv = (f"nn.conv2d(%x, %w, strides=[{s[0]}, {s[1]}], padding=[{p[0]}, {p[1]}, "
                f"{p[2]}, {p[3]}], dilation=[{d[0]}, {d[1]}], groups={self.groups})")
        out_t = self.out_type()
        extra = ""
        if self.epilogue == "none":
            body = conv
        elif self.epilogue == "bias_relu":
            body = f"nn.relu(nn.bias_add({conv}, %b))"
        elif self.epilogue == "residual":
            extra = f", %r: {out_t}"
            body = f"nn.relu(add(nn.bias_add({conv}, %b), %r))"
        elif self.epilogue == "scale_clip":
            params["m"] = rng.uniform(0.5, 2.0, (self.o, 1, 1)).astype("float32")
            body = f"clip(multiply({conv}, %m), a_min=0f, a_max=6f)"
        elif self.epilogue == "quantize":
            # the realized quantize of a float convolution (passes.quantize.realize)
            body = (f"cast(clip(round(divide(nn.relu(nn.bias_add({conv}, %b)), 0.0625f)), "
                    f"a_min=-127f, a_max=127f), dtype=\"int8\")")
        else:
            raise ValueError(self.epilogue)
        decls = "".join(f", %{k}: {_tensor_type(v.shape)}" for k, v in params.items())
        text = (f"def @main(%x: {_tensor_type((1, self.c, self.h, self.w))}{extra}{decls}) "
                f"{{\n  {body}\n}}\n")
        return text, params

    def out_shape(self) -> tuple[int, int, int, int]:
        def dim(n: int, k: int, lo: int, hi: int, s: int, d: int) -> int:
            return (n + lo + hi - d * (k - 1) - 1) // s + 1
        p = self.padding
        oh = dim(self.h, self.kh, p[0], p[2], self.strides[0], self.dilation[0])
        ow = dim(self.w, self.kw, p[1], p[3], self.strides[1], self.dilation[1])
        return (1, self.o, oh, ow)

    def out_type(self) -> str:
        return _tensor_type(self.out_shape())

    def inputs(self, seed: int = 1) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        xs = [rng.standard_normal((1, self.c, self.h, self.w)).astype("float32")]
        if self.epilogue == "residual":
            xs.append(rng.standard_normal(self.out_shape()).astype("float32"))
        return xs


def direct(target: Target | None = None) -> Target:
    """``target`` (None: the host) with the Winograd rule off: these tests are about the
    direct convolution's schedule (``test_sched_winograd.py`` tests the Winograd one)."""
    return (target or Target.host()).replace(winograd=False)


def _tensor_type(shape: tuple[int, ...]) -> str:
    return f"Tensor[({', '.join(str(int(d)) for d in shape)}), float32]"


def primitives(mod: IRModule) -> list[Function]:
    seen: dict[int, Function] = {}
    for node in post_order(mod.functions["main"]):
        if is_primitive(node):
            seen[id(node)] = node  # type: ignore[assignment]
    return list(seen.values())


def conv_of(prim: Function) -> Call | None:
    for node in post_order(prim.body):
        if isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == "nn.conv2d":
            return node
    return None


def scheduled_script(prim: Function, target: Target | None = None) -> str | None:
    """The TVMScript of ``prim``'s kernel scheduled by the conv rule for ``target`` (None:
    the host) (None: declined)."""
    from tvm import te

    target = target or Target.host()
    types = [p.type_annotation for p in prim.params]
    lowered = build_te(prim, types, target)  # type: ignore[arg-type]
    func = te.create_prim_func([*lowered.inputs, *lowered.constants, *lowered.outputs])
    mod = schedule_conv2d(func, KernelInfo(tuple(lowered.ops), prim, tuple(types),  # type: ignore[arg-type]
                                           target))
    return None if mod is None else str(mod.script())


def check(case: Conv, cache: KernelCache, run_kernels: object, *, seed: int = 0,
          expect_scheduled: bool | None = None, inputs: list[np.ndarray] | None = None,
          target: Target | None = None) -> int:
    """Run every fused kernel of ``case`` at -O3 for ``target`` (None: the host; its lanes
    are AlterOpLayout's block) against the oracle; the number of kernels the conv rule
    scheduled."""
    text, params = case.program(seed)
    fused = prepare(text, params, 3, direct(target))
    values = case.inputs() if inputs is None else inputs
    ran = run_kernels(fused, values, cache, {"float32": 1e-4}, target)  # type: ignore[operator]
    scheduled = sum(1 for prim in ran
                    if conv_of(prim) is not None and scheduled_script(prim, target) is not None)
    if expect_scheduled is not None:
        assert (scheduled > 0) == expect_scheduled
    return scheduled


# --- examples on odd shapes -----------------------------------------------------------------

# (case, scheduled by the conv rule when the block is 16)
CASES = {
    "3x3 blocked, bias+relu": (Conv(32, 32, 9, 11), True),
    "3x3 blocked, residual": (Conv(16, 16, 7, 7, epilogue="residual"), True),
    "1x1 stride 2, no epilogue": (Conv(32, 48, 10, 9, 1, 1, (2, 2), (0, 0, 0, 0),
                                       epilogue="none"), True),
    "7x7 stride 2, 3 input channels": (Conv(3, 16, 17, 19, 7, 7, (2, 2), (3, 3, 3, 3)), True),
    "depthwise stride 2": (Conv(32, 32, 13, 12, strides=(2, 2), groups=32), True),
    "depthwise, scale+clip": (Conv(16, 16, 6, 30, epilogue="scale_clip", groups=16), True),
    "groups 2": (Conv(32, 32, 6, 6, groups=2), True),
    "dilation 2, asymmetric padding": (Conv(16, 32, 9, 10, padding=(0, 1, 2, 1),
                                            dilation=(2, 2)), True),
    "1x1, 14 wide": (Conv(16, 32, 14, 14, 1, 1, padding=(0, 0, 0, 0)), True),
    "3x3, 9 wide, residual": (Conv(16, 16, 9, 9, epilogue="residual"), True),
    "2 wide: a tile of 4 rows": (Conv(16, 16, 8, 2, 3, 1, padding=(1, 0, 1, 0)), True),
    "prime width above the tile": (Conv(16, 16, 3, 31, 1, 3, padding=(0, 1, 0, 1)), True),
    "channels the block does not divide": (Conv(12, 20, 6, 7, epilogue="residual"), False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_conv_kernels_match_the_oracle(name: str, kernel_cache: KernelCache,
                                       run_kernels: object) -> None:
    case, scheduled = CASES[name]
    check(case, kernel_cache, run_kernels, expect_scheduled=scheduled if BLOCK == 16 else None)


WIDTH_CASES = ("prime width above the tile", "7x7 stride 2, 3 input channels",
               "channels the block does not divide")
"""The cases run on every width besides the host's (tails of the columns, few input
channels, a block that does not divide — 4 lanes divide it); the drawn cases below draw
the width too."""


@pytest.mark.parametrize("lanes", [w for w in WIDTHS if w != BLOCK])
@pytest.mark.parametrize("name", WIDTH_CASES)
def test_conv_kernels_match_the_oracle_on_every_width(name: str, lanes: int,
                                                      kernel_cache: KernelCache,
                                                      run_kernels: object,
                                                      target_of_width: Any) -> None:
    case, scheduled = CASES[name]
    check(case, kernel_cache, run_kernels, target=target_of_width(lanes),
          expect_scheduled=scheduled if lanes == 16 else None)


@pytest.mark.parametrize("epilogue", ["bias_relu", "residual", "none"])
def test_convolutions_reduced_in_passes_match_the_oracle(epilogue: str, kernel_cache: KernelCache,
                                                          run_kernels: object) -> None:
    # 16 input-channel blocks over 14x14 outputs: reduced in passes of K_CHUNK blocks
    case = Conv(16 * BLOCK, 2 * BLOCK, 14, 14, epilogue=epilogue)
    assert k_blocked(14 * 14, 16, strided=False)
    text, params = case.program()
    (prim,) = [p for p in primitives(prepare(text, params, 3, direct())) if conv_of(p) is not None]
    script = scheduled_script(prim)
    assert script is not None and "conv2d_local" not in script   # accumulates in the result
    assert check(case, kernel_cache, run_kernels, expect_scheduled=True) == 1


def test_k_blocking_rule() -> None:
    assert k_blocked(56 * 56, 32, strided=False)
    assert not k_blocked(56 * 56, 32, strided=True)
    assert not k_blocked(7 * 7, 64, strided=False)
    assert not k_blocked(56 * 56, 8, strided=False)
    # passes of 2 blocks on a 14x14 output, 8 on larger ones
    assert k_chunk(14 * 14) == K_CHUNK_SMALL == 2 and k_chunk(28 * 28) == K_CHUNK == 8


def test_a_tile_reduced_in_passes_counts_one_pass_of_weights() -> None:
    """VGG-16's 512->512 3x3 on 14x14: a block's weights (147 KB) four times over do not fit
    the L2's share, so a tile walking the whole reduction takes 7 columns x 1 block (load
    bound: 8 loads per 7 FMAs); reduced in passes of 2 of its 64 input blocks, a tile walks
    1/32 of them and takes 2 columns x 4 blocks (6 loads per 8 FMAs)."""
    kb = 1024
    assert register_tile(14, 64, 8, 144 * kb, AVX2) == (7, 1)
    assert register_tile(14, 64, 8, 144 * kb * K_CHUNK_SMALL // 64, AVX2) == (2, 4)
    case = Conv(64 * BLOCK, 4 * BLOCK, 14, 14) if BLOCK == 8 else None
    if case is None:
        pytest.skip("the tile sizes are those of an 8-lane (AVX2) block")
    text, params = case.program()
    (prim,) = [p for p in primitives(prepare(text, params, 3, direct())) if conv_of(p) is not None]
    script = scheduled_script(prim)
    assert script is not None and "T.unroll(4)" in script and "T.unroll(7)" not in script


def test_nan_and_infinity_propagate_through_the_vectorized_relu(kernel_cache: KernelCache,
                                                                run_kernels: object) -> None:
    case = Conv(16, 16, 5, 6)
    x = case.inputs()[0]
    x[0, 3, 2, 2] = np.nan
    x[0, 5, 0, 4] = np.inf
    x[0, 7, 4, 0] = -np.inf
    assert check(case, kernel_cache, run_kernels, inputs=[x]) == 1


def test_the_schedule_is_parallel_vectorized_and_register_tiled() -> None:
    text, params = Conv(32, 64, 14, 14).program()
    (prim,) = [p for p in primitives(prepare(text, params, 3, direct())) if conv_of(p) is not None]
    script = scheduled_script(prim)
    assert script is not None
    assert "T.parallel(" in script
    assert f"T.vectorized({BLOCK})" in script
    assert 'scope="local"' in script               # the accumulator
    assert "conv2d_init" in script                 # initialized once per tile
    # the padded input is its own (parallel) loop nest; the convolution loads without a test
    assert "conv2d_pad = T.sblock_alloc_buffer" in script
    update = script[script.index('T.sblock("conv2d_update")'):]
    assert "if_then_else" not in update.split("T.sblock(")[1]
    # the epilogue (bias + relu) is the tile's write-back, not a pass of its own
    assert script.count("T.parallel(") == 2
    rule_names = [r.name for r in candidates(["nn.conv2d", "add", "nn.relu"])]
    assert rule_names[0].endswith("conv2d._rule")


def test_a_convolution_that_does_not_pad_reads_its_data_in_place() -> None:
    """A 1×1 layer's staged input would only re-index the data: no copy, one parallel loop."""
    text, params = Conv(32, 64, 14, 14, 1, 1, padding=(0, 0, 0, 0)).program()
    (prim,) = [p for p in primitives(prepare(text, params, 3, direct())) if conv_of(p) is not None]
    script = scheduled_script(prim)
    assert script is not None
    assert "conv2d_pad = T.sblock_alloc_buffer" not in script
    assert script.count("T.parallel(") == 1
    assert 'scope="local"' in script


def test_a_quantize_epilogue_is_staged_in_the_tile(kernel_cache: KernelCache,
                                                   run_kernels: object) -> None:
    """A float convolution's quantize epilogue (divide, round half away from zero,
    NaN-propagating clip, cast) reads its argument several times at each step: inlined whole
    it was 350 KB of TIR and two minutes of LLVM. Over the read budget the chain stays a few
    stages, each computed in the register tile's write-back (no pass of its own), and the
    kernel still equals the oracle, NaN and infinities included."""
    case = Conv(3, 32, 12, 10, strides=(2, 2), epilogue="quantize")
    x = case.inputs()[0]
    x[0, 1, 2, 2] = np.nan
    x[0, 2, 5, 4] = np.inf
    assert check(case, kernel_cache, run_kernels, inputs=[x], expect_scheduled=True) == 1
    text, params = case.program()
    (prim,) = [p for p in primitives(prepare(text, params, 3, direct())) if conv_of(p) is not None]
    script = scheduled_script(prim)
    assert script is not None and len(script) < 30_000
    assert script.count("T.parallel(") == 2      # the staged input and the tiles
    tile = script[script.index('T.sblock("conv2d_update")'):]
    stages = [n for n in ("divide", "round", "clip", "cast") if f'T.sblock("{n}")' in tile]
    assert len(stages) >= 2 and stages[-1] == "cast"


def test_the_read_budget_counts_copies() -> None:
    import tvm
    from tvm import s_tir, te

    from backends.tvm.sched.default import inline_blocks, inlined_reads

    a = te.placeholder((16,), name="A")
    b = te.compute((16,), lambda i: a[i] + 1.0, name="B")
    c = te.compute((16,), lambda i: tvm.tirx.Select(b[i] > 0, b[i] * b[i], b[i]), name="C")
    d = te.compute((16,), lambda i: c[i] * 2.0 + c[i], name="D")
    sch = s_tir.Schedule(tvm.IRModule({"main": te.create_prim_func([a, d])}))
    assert [inlined_reads(sch, sch.get_sblock(n)) for n in "BCD"] == [4, 8, 0]
    inline_blocks(sch, lambda name: False, budget=4)
    names = {sch.get(blk).name_hint for blk in sch.get_child_blocks(sch.get_sblock("root"))}
    assert names == {"C", "D"}            # B went into C (4 reads); C into D would be 8


AVX2 = Target.host().replace(lanes=8, registers=16, l2_bytes=512 * 1024)
AVX512 = Target.host().replace(lanes=16, registers=32, l2_bytes=1024 * 1024)


def test_register_tiles_for_avx2() -> None:
    # ResNet-18's 3x3 layers (8-channel blocks): 8 accumulators, fewest loads per FMA
    kb = 1024
    assert register_tile(56, 8, 8, 18 * kb, AVX2) == (4, 2)
    assert register_tile(28, 16, 8, 36 * kb, AVX2) == (4, 2)
    assert register_tile(14, 32, 8, 72 * kb, AVX2) == (2, 4)
    # 512 channels: four blocks' weights (576 KB) do not fit the L2; 7 columns x 1 block
    assert register_tile(7, 64, 8, 144 * kb, AVX2) == (7, 1)
    # a prime width: one column, the channel blocks make the accumulators
    assert register_tile(31, 4, 8, 4 * kb, AVX2) == (1, 4)
    assert register_tile(1, 1, 8, kb, AVX2) == (1, 1)


def test_register_tiles_for_avx512_and_wide_blocks() -> None:
    kb = 1024
    # 32 registers: up to 16 accumulators
    tw, ocb = register_tile(56, 4, 16, 36 * kb, AVX512)
    assert tw * ocb == 16
    # a 16-channel block on AVX2 takes two registers per accumulator
    tw, ocb = register_tile(56, 4, 16, 36 * kb, AVX2)
    assert tw * ocb * 2 <= 8


@given(st.integers(1, 300), st.integers(1, 64), st.sampled_from([4, 8, 16]),
       st.integers(0, 1 << 22), st.sampled_from([AVX2, AVX512]))
def test_register_tiles_always_divide_and_fit(width: int, blocks: int, lanes: int,
                                              weight_bytes: int, cpu: Target) -> None:
    tw, ocb = register_tile(width, blocks, lanes, weight_bytes, cpu)
    assert width % tw == 0 and blocks % ocb == 0
    per = max(1, lanes // cpu.lanes)
    assert tw * ocb * per <= max(8, cpu.registers // 2) or (tw, ocb) == (1, 1)


# --- the property ----------------------------------------------------------------------------

@st.composite
def conv_cases(draw: st.DrawFn) -> Conv:
    kind = draw(st.sampled_from(["dense", "depthwise", "few_inputs"]))
    k = draw(st.sampled_from([1, 3, 5]))
    stride = draw(st.sampled_from([1, 2]))
    dil = draw(st.sampled_from([1, 1, 2]))
    reach = dil * (k - 1) + 1
    pads = tuple(draw(st.integers(0, k // 2 + 1)) for _ in range(4))
    h = draw(st.integers(max(1, reach - pads[0] - pads[2]), 9))
    w = draw(st.integers(max(1, reach - pads[1] - pads[3]), 12))
    if kind == "dense":
        c, o, groups = draw(st.sampled_from([16, 32])), draw(st.sampled_from([16, 32])), 1
    elif kind == "depthwise":
        c = o = groups = draw(st.sampled_from([16, 32]))
    else:
        c, o, groups = draw(st.sampled_from([1, 3, 4])), 16, 1
    epilogue = draw(st.sampled_from(["none", "bias_relu", "residual", "scale_clip"]))
    return Conv(c, o, h, w, k, k, (stride, stride), pads, (dil, dil),  # type: ignore[arg-type]
                groups, epilogue)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=conv_cases(), seed=st.integers(0, 2**16), lanes=st.sampled_from(WIDTHS))
def test_scheduled_convolutions_match_the_oracle(case: Conv, seed: int, lanes: int,
                                                 kernel_cache: KernelCache,
                                                 run_kernels: object,
                                                 target_of_width: Any) -> None:
    # every width: the block (4, 8 or 16 channels) divides the drawn 16 or 32 channels
    check(case, kernel_cache, run_kernels, seed=seed, expect_scheduled=True,
          target=target_of_width(lanes))


# --- weights packed at build time, no transforms between convolutions ------------------------

CHAIN = """
def @main(%x: Tensor[(1, 3, 16, 16), float32], %w0: Tensor[(32, 3, 3, 3), float32],
          %w1: Tensor[(32, 1, 3, 3), float32], %w2: Tensor[(32, 32, 1, 1), float32],
          %w3: Tensor[(32, 32, 3, 3), float32], %b: Tensor[(32), float32]) {
  %0 = nn.relu(nn.bias_add(nn.conv2d(%x, %w0, strides=[2, 2], padding=[1, 1]), %b));
  %1 = nn.relu(nn.conv2d(%0, %w1, padding=[1, 1], groups=32));
  %2 = nn.relu(nn.conv2d(%1, %w2));
  %3 = add(nn.conv2d(%2, %w3, padding=[1, 1]), %2);
  nn.relu(%3)
}
"""


def test_weights_are_packed_at_build_time_and_convs_chain_blocked() -> None:
    rng = np.random.default_rng(4)
    shapes = {"w0": (32, 3, 3, 3), "w1": (32, 1, 3, 3), "w2": (32, 32, 1, 1),
              "w3": (32, 32, 3, 3), "b": (32,)}
    params = {k: rng.standard_normal(s).astype("float32") for k, s in shapes.items()}
    fused = prepare(CHAIN, params, 3, direct())
    main = fused.functions["main"]
    assert [p.name_hint for p in main.params] == ["x"]
    convs = [c for p in primitives(fused) for c in post_order(p.body)
             if isinstance(c, Call) and isinstance(c.op, Op) and c.op.name == "nn.conv2d"]
    assert len(convs) == 4
    for conv in convs:
        weight = conv.args[1]
        assert isinstance(weight, Constant)            # packed once, at build time
        assert (conv.attrs.get("out_layout") or conv.attrs["data_layout"]) == f"NCHW{BLOCK}c"
    # one transform into NCHW at the end; none of a weight, none between the convolutions
    transforms = [n for p in primitives(fused) for n in post_order(p.body)
                  if isinstance(n, Call) and isinstance(n.op, Op)
                  and n.op.name == "layout_transform"]
    assert len(transforms) == 1
    assert transforms[0].attrs["dst_layout"] == "NCHW"
    out = transforms[0].checked_type
    assert isinstance(out, TensorType) and out.shape == (1, 32, 8, 8)
