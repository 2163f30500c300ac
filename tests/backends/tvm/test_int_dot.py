"""Integer convolutions on dot-product instructions (``backends.tvm.lower.int_dot``).

* the path is chosen from the Target record: ``vpdpbusd`` with VNNI, ``vpmaddwd`` with AVX2;
* the compiled kernels contain the instruction: ``vpmaddwd`` for this machine (and a
  forced Haswell), ``vpdpbusd`` for forced VNNI CPUs (compile only: this machine may not
  run them);
* the VNNI arithmetic (+128 data shift, ``128 · Σ w`` correction, words of four bytes) gives
  the convolution exactly, checked in numpy with the instruction's definition, and the ops'
  plain-arithmetic lowering (any vector width) against numpy on TVM;
* bit-exact results of the AVX2 path against the oracle are in ``test_integer_kernels.py``
  (every bound convolution there with 8 or 16 channels takes it on an AVX2 host) and below
  at the int8 extremes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.tvm import build
from backends.tvm.build import prepare
from backends.tvm.kernel.assembly import kernel_assembly
from backends.tvm.lower.int_dot import (
    DOT_OPS,
    DotPath,
    dot_path,
    pack_weight,
    to_oihw,
    weight_correction,
)
from backends.tvm.target import Target
from interpreter import evaluate
from passes.fuse_ops import is_primitive
from semantics.expr import Call, Function, Op
from semantics.ops import transform_relations as R
from semantics.visitor import post_order

CONV = """def @main(%x: Tensor[(1, 16, 6, 6), int8], %w: Tensor[(16, 16, 3, 3), int8],
          %b: Tensor[(16, 1, 1), int32]) {
  %0 = add(nn.conv2d(%x, %w, padding=[1, 1], channels=16, kernel_size=[3, 3],
                     out_dtype="int32"), %b);
  nn.relu(cast(clip(right_shift(add(%0, 64), 7), a_min=-127f, a_max=127f), dtype="int8"))
}"""

VNNI_CPUS = ("cascadelake", "alderlake", "znver4")


def _conv_kernel_assembly(target: Target) -> str:
    rng = np.random.default_rng(0)
    params = {"w": rng.integers(-128, 128, (16, 16, 3, 3)).astype("int8"),
              "b": rng.integers(-99, 99, (16, 1, 1)).astype("int32")}
    fused = prepare(CONV, params, 3, target)
    (kernel,) = [n for n in post_order(fused["main"]) if isinstance(n, Function)
                 and is_primitive(n) and any(
        isinstance(c, Call) and isinstance(c.op, Op) and c.op.name == "nn.conv2d"
        for c in post_order(n.body))]
    types = [p.type_annotation for p in kernel.params if p.type_annotation is not None]
    return kernel_assembly(kernel, types, target=target)


def test_the_path_follows_the_target_record():
    avx2 = Target.for_cpu("haswell")
    assert avx2.avx2 and not avx2.vnni
    assert dot_path(avx2, "int8", "int32", 8, 16) == DotPath("vpmaddwd", 8, 2, False)
    assert dot_path(avx2, "int16", "int32", 8, 16) == DotPath("vpmaddwd", 8, 2, False)
    assert dot_path(avx2, "int8", "int16", 8, 16) is None        # the 8/16 scheme wraps at 16
    assert dot_path(avx2, "int8", "int32", 8, 3) is None         # odd input channels
    assert dot_path(avx2.with_lanes(16), "int8", "int32", 16, 16) is None
    assert dot_path(avx2.replace(avx2=False), "int8", "int32", 8, 16) is None
    vnni = Target.for_cpu("cascadelake")
    assert vnni.vnni and vnni.avx512
    assert dot_path(vnni, "int8", "int32", 16, 16) == DotPath("vpdpbusd", 16, 4, True)
    assert dot_path(vnni, "int8", "int32", 16, 6) is None        # not a multiple of 4
    assert dot_path(vnni, "int16", "int32", 16, 16) is None
    avx_vnni = dot_path(Target.for_cpu("alderlake"), "int8", "int32", 8, 8)
    assert avx_vnni is not None and avx_vnni.instruction == "vpdpbusd"
    # data known to be bytes in [0, 127]: byte pairs (vpmaddubsw) on AVX2, VNNI still first
    byte = DotPath("vpmaddubsw", 8, 4, False)
    assert dot_path(avx2, "int8", "int32", 8, 16, (0, 127)) == byte
    assert dot_path(avx2, "int8", "int32", 8, 16, (3, 100)) == byte
    assert dot_path(avx2, "int8", "int32", 8, 16, (-1, 127)).instruction == "vpmaddwd"
    assert dot_path(avx2, "int8", "int32", 8, 16, (0, 128)).instruction == "vpmaddwd"
    assert dot_path(avx2, "int8", "int32", 8, 6, (0, 127)).instruction == "vpmaddwd"
    assert dot_path(avx2, "int16", "int32", 8, 16, (0, 127)).instruction == "vpmaddwd"
    assert dot_path(vnni, "int8", "int32", 16, 16, (0, 127)).instruction == "vpdpbusd"


def test_this_machine_compiles_int8_convolutions_to_vpmaddwd():
    host = Target.host()
    if not host.avx2:
        pytest.skip(f"the host ({host}) has no AVX2")
    asm = _conv_kernel_assembly(host)
    assert "vpmaddwd" in asm
    assert "vpmulld" not in asm


@pytest.mark.parametrize("mcpu", ["haswell", "znver3"])
def test_an_avx2_target_compiles_to_vpmaddwd(mcpu):
    asm = _conv_kernel_assembly(Target.of({"kind": "llvm", "mcpu": mcpu}))
    assert "vpmaddwd" in asm and "vpdpbusd" not in asm


@pytest.mark.parametrize("mcpu", VNNI_CPUS)
def test_a_vnni_target_compiles_to_vpdpbusd(mcpu):
    target = Target.of({"kind": "llvm", "mcpu": mcpu})
    assert target.vnni
    asm = _conv_kernel_assembly(target)
    assert "vpdpbusd" in asm and "vpmulld" not in asm


def _vpdpbusd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The instruction's definition on uint32 words: the four u8 × s8 products, summed."""
    ua = a.view(np.uint8).reshape(*a.shape, 4).astype(np.int64)
    sb = b.view(np.int8).reshape(*b.shape, 4).astype(np.int64)
    return (ua * sb).sum(axis=-1)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(o=st.sampled_from((8, 16)), c=st.sampled_from((4, 8, 12)), k=st.sampled_from((1, 3)),
       seed=st.integers(0, 2 ** 16), extreme=st.booleans())
def test_the_shifted_words_and_the_correction_give_the_exact_products(o, c, k, seed, extreme):
    rng = np.random.default_rng(seed)
    w = rng.integers(-128, 128, (o, c, k, k)).astype(np.int8)
    x = rng.integers(-128, 128, (c, k, k)).astype(np.int8)
    if extreme:
        w[:] = -128
        x[:] = -128
    path = DotPath("vpdpbusd", 8, 4, True)
    words = pack_weight(w, path)                       # [O/8, C/4, k, k, 8]
    shifted = (x.astype(np.int16) + 128).astype(np.uint8)
    quads = np.ascontiguousarray(shifted.transpose(1, 2, 0)).reshape(k, k, c // 4, 4)
    xw = quads.view(np.uint32)[..., 0]                 # [k, k, C/4]
    acc = np.zeros(o, np.int64)
    for ob in range(o // 8):
        for p in range(c // 4):
            for y in range(k):
                for z in range(k):
                    acc[ob * 8:(ob + 1) * 8] += _vpdpbusd(
                        np.full(8, xw[y, z, p], np.uint32), words[ob, p, y, z])
    got = acc - weight_correction(w).astype(np.int64)
    want = np.einsum("ochw,chw->o", w.astype(np.int64), x.astype(np.int64))
    assert np.array_equal(got, want)


def test_weights_unpack_from_blocked_layouts():
    w = np.arange(16 * 8 * 3 * 3).reshape(16, 8, 3, 3)
    blocked = w.reshape(2, 8, 2, 4, 3, 3).transpose(0, 2, 4, 5, 3, 1)   # OIHW4i8o
    axes = R.parse_layout("layout", "OIHW4i8o")
    assert np.array_equal(to_oihw(blocked, axes, w.shape), w)


@pytest.mark.parametrize("instruction", sorted(DOT_OPS))
def test_the_ops_plain_arithmetic_lowering_matches_their_definition(instruction):
    """At 4 lanes (no instruction has that width) the ops lower to integer arithmetic."""
    import tvm
    from tvm import s_tir, te, tirx

    n = 64
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    a[:4], b[:4] = 0x80008000, 0x80008000       # (-32768)² · 2 wraps
    A = te.placeholder((n,), "uint32", name="A")
    B = te.placeholder((n,), "uint32", name="B")
    C = te.compute((n,), lambda i: tirx.call_intrin("int32", DOT_OPS[instruction], A[i], B[i]),
                   name="C")
    sch = s_tir.Schedule(tvm.IRModule({"main": te.create_prim_func([A, B, C])}))
    (loop,) = sch.get_loops(sch.get_sblock("C"))
    _, inner = sch.split(loop, [None, 4])
    sch.vectorize(inner)
    lib = tvm.compile(sch.mod, target=Target.host().tvm())
    out = tvm.runtime.tensor(np.zeros(n, np.int32))
    lib(tvm.runtime.tensor(a), tvm.runtime.tensor(b), out)
    if instruction in ("vpdpbusd", "vpmaddubsw"):      # the same value (no saturation)
        want = _vpdpbusd(a, b)
    else:
        ha, hb = a.view(np.int16).reshape(n, 2), b.view(np.int16).reshape(n, 2)
        want = (ha.astype(np.int64) * hb.astype(np.int64)).sum(axis=1)
    want = (want + 2 ** 31) % 2 ** 32 - 2 ** 31
    assert np.array_equal(out.numpy(), want)


@pytest.mark.parametrize("value", [-128, 127])
def test_the_avx2_path_is_exact_at_the_int8_extremes(value):
    x = np.full((1, 16, 6, 6), value, np.int8)
    w = np.full((16, 16, 3, 3), -128, np.int8)
    b = np.zeros((16, 1, 1), np.int32)
    got = build(CONV, params={"w": w, "b": b})(x)
    assert np.array_equal(got, evaluate(CONV, x, w, b))


BYTES = """def @main(%x: Tensor[(1, 16, 6, 6), int8], %w: Tensor[(16, 16, 1, 1), int8],
          %b: Tensor[(16, 1, 1), int32], %w2: Tensor[(16, 16, 3, 3), int8]) {
  %0 = nn.relu(add(nn.conv2d(%x, %w, channels=16, kernel_size=[1, 1], out_dtype="int32"), %b));
  %1 = cast(clip(right_shift(add(%0, 64), 7), a_min=-127f, a_max=127f), dtype="int8");
  nn.conv2d(%1, %w2, padding=[1, 1], channels=16, kernel_size=[3, 3], out_dtype="int32")
}"""
"""A convolution fed by a requantized ``relu`` (data in [0, 127]: ``passes.value_range``)."""


def _byte_params(seed: int, extreme: bool = False) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = {"w": rng.integers(-128, 128, (16, 16, 1, 1)).astype("int8"),
         "b": rng.integers(-3000, 3000, (16, 1, 1)).astype("int32"),
         "w2": rng.integers(-128, 128, (16, 16, 3, 3)).astype("int8")}
    if extreme:      # every data byte 127 and every weight -128: 127 · -128 · 2 per int16
        p["w"][...] = 0
        p["b"][...] = 1 << 20
        p["w2"][...] = -128
    return p


def _consumer_assembly(target: Target) -> str:
    fused = prepare(BYTES, _byte_params(0), 3, target)
    kernels = [n for n in post_order(fused["main"]) if isinstance(n, Function)
               and is_primitive(n) and any(isinstance(c, Call) and isinstance(c.op, Op)
                                           and c.op.name == "nn.conv2d"
                                           and c.attrs.get("kernel_size") == (3, 3)
                                           for c in post_order(n.body))]
    (kernel,) = kernels
    types = [p.type_annotation for p in kernel.params if p.type_annotation is not None]
    return kernel_assembly(kernel, types, target=target)


@pytest.mark.parametrize("mcpu", ["haswell", "znver3"])
def test_byte_data_compiles_to_vpmaddubsw_on_avx2(mcpu):
    asm = _consumer_assembly(Target.of({"kind": "llvm", "mcpu": mcpu}))
    assert "vpmaddubsw" in asm and "vpdpbusd" not in asm


def test_byte_data_keeps_vpdpbusd_with_vnni():
    asm = _consumer_assembly(Target.of({"kind": "llvm", "mcpu": "cascadelake"}))
    assert "vpdpbusd" in asm and "vpmaddubsw" not in asm


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 16), extreme=st.booleans())
def test_the_byte_path_matches_the_oracle(seed, extreme):
    """On this machine (AVX2 without VNNI the consumer runs vpmaddubsw), bit for bit,
    including the largest pair magnitude the byte path allows."""
    params = _byte_params(seed, extreme)
    x = np.random.default_rng(seed + 1).integers(-128, 128, (1, 16, 6, 6)).astype("int8")
    got = build(BYTES, params=params)(x)
    want = evaluate(BYTES, x, params["w"], params["b"], params["w2"])
    assert np.array_equal(got, want)
