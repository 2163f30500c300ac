"""Integer ``nn.dense`` and depthwise ``nn.conv2d`` on dot-product instructions
(``backends.tvm.lower.int_dense``, ``backends.tvm.lower.int_dot.depthwise_dot``).

* differential against the oracle on Hypothesis-drawn shapes, with tails of every kind
  (``K`` not a multiple of the word, ``N`` not a multiple of the vector, widths not a
  multiple of the register tile), through the realized requantize epilogue: on this
  machine's path (``vpmaddwd`` on AVX2) and on the VNNI path's words (the +128 shift, the
  correction, four values a word) with its instruction emulated in plain arithmetic, since
  this machine cannot execute ``vpdpbusd``;
* the compiled kernels contain the instruction: ``vpmaddwd`` for AVX2 CPUs, ``vpdpbusd``
  for VNNI CPUs (compile only), and no ``vpmulld``;
* the requantize epilogue is inside the dense / depthwise kernel (one kernel a layer);
* the word packings and the VNNI correction against the instructions' definitions in numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.tvm import build
from backends.tvm.build import prepare
from backends.tvm.kernel.assembly import kernel_assembly
from backends.tvm.lower import int_dot
from backends.tvm.lower.int_dense import dense_path, pack_dense_words
from backends.tvm.lower.int_dot import DotPath, depthwise_path, pack_depthwise, weight_correction
from backends.tvm.target import Target
from interpreter import evaluate
from passes.fuse_ops import is_primitive
from semantics.expr import Call, Function, Op
from semantics.visitor import post_order

SETTINGS = settings(max_examples=6, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

VNNI_CPUS = ("cascadelake", "alderlake", "znver4")


def _dense_text(rows: int, k: int, n: int, dt: str, odt: str) -> str:
    suffix = "" if odt == "int32" else "i16"
    return (f"def @main(%x: Tensor[({rows}, {k}), {dt}], %w: Tensor[({n}, {k}), {dt}],\n"
            f"          %b: Tensor[({n}), {odt}]) {{\n"
            f"  %0 = add(nn.dense(%x, %w, units={n}, out_dtype=\"{odt}\"), %b);\n"
            f"  %1 = right_shift(add(%0, 32{suffix}), 6{suffix});\n"
            f"  nn.relu(cast(clip(%1, a_min=-127f, a_max=127f), dtype=\"int8\"))\n}}")


def _dw_text(c: int, hw: int, k: int, stride: int, dilation: int, dt: str) -> str:
    pad = k // 2 * dilation
    return (f"def @main(%x: Tensor[(1, {c}, {hw}, {hw}), {dt}], %w: Tensor[({c}, 1, {k}, {k}), "
            f"{dt}],\n          %b: Tensor[({c}, 1, 1), int32]) {{\n"
            f"  %0 = nn.conv2d(%x, %w, strides=[{stride}, {stride}], padding=[{pad}, {pad}],"
            f" dilation=[{dilation}, {dilation}], groups={c}, channels={c},"
            f" kernel_size=[{k}, {k}], out_dtype=\"int32\");\n"
            f"  %1 = right_shift(add(add(%0, %b), 64), 7);\n"
            f"  nn.relu(cast(clip(%1, a_min=-127f, a_max=127f), dtype=\"int8\"))\n}}")


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max) + 1, shape).astype(dtype)


def _emulated_vnni() -> Target:
    """This machine's target claiming VNNI: the VNNI path's words, shift and correction are
    compiled, and (with :func:`_no_vnni_instruction`) the instruction is plain arithmetic."""
    return Target.host().replace(vnni=True)


@pytest.fixture
def _no_vnni_instruction(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in int_dot._INTRINSICS if k[0] == "vpdpbusd"]:
        monkeypatch.delitem(int_dot._INTRINSICS, key)


TARGETS = ("host", "vnni-emulated")


def _target(name: str, request: pytest.FixtureRequest) -> Target:
    if name == "host":
        return Target.host()
    request.getfixturevalue("_no_vnni_instruction")
    return _emulated_vnni()


def test_the_dense_and_depthwise_paths_follow_the_target_record():
    avx2 = Target.for_cpu("haswell")
    assert dense_path(avx2, "int8", "int32") == DotPath("vpmaddwd", 8, 2, False)
    assert dense_path(avx2, "int8", "int16") == DotPath("vpmaddwd", 8, 2, False)
    assert dense_path(avx2, "int16", "int32") == DotPath("vpmaddwd", 8, 2, False)
    assert dense_path(avx2, "int16", "int16") is None
    assert dense_path(avx2, "float32", "float32") is None
    assert dense_path(avx2.replace(avx2=False), "int8", "int32") is None
    vnni = Target.for_cpu("cascadelake")
    assert dense_path(vnni, "int8", "int32") == DotPath("vpdpbusd", 16, 4, True)
    assert dense_path(vnni, "int16", "int32") == DotPath("vpmaddwd", 8, 2, False)
    assert dense_path(Target.for_cpu("alderlake"), "int8", "int16") == DotPath(
        "vpdpbusd", 8, 4, True)
    assert depthwise_path(avx2, "int8", "int32", 8) == DotPath("vpmaddwd", 8, 2, False)
    assert depthwise_path(avx2, "int8", "int32", 16) is None
    assert depthwise_path(avx2, "int8", "int16", 8) is None
    assert depthwise_path(vnni, "int8", "int32", 16) == DotPath("vpdpbusd", 16, 4, True)


@SETTINGS
@given(rows=st.sampled_from((1, 2, 4, 5, 9)), k=st.integers(1, 40), n=st.integers(1, 40),
       triple=st.sampled_from((("int8", "int32"), ("int8", "int16"), ("int16", "int32"))),
       seed=st.integers(0, 2 ** 16), extreme=st.booleans())
@pytest.mark.parametrize("where", TARGETS)
def test_integer_dense_on_the_dot_path_matches_the_oracle(request, where, rows, k, n, triple,
                                                          seed, extreme):
    dt, odt = triple
    target = _target(where, request)
    rng = np.random.default_rng(seed)
    x, w = _values(rng, (rows, k), dt), _values(rng, (n, k), dt)
    if extreme:
        x[:], w[:] = np.iinfo(dt).min, np.iinfo(dt).min
    b = rng.integers(-3000, 3000, (n,)).astype(odt)
    text = _dense_text(rows, k, n, dt, odt)
    got = build(text, params={"w": w, "b": b}, target=target)(x)
    assert np.array_equal(got, evaluate(text, x, w, b))


@SETTINGS
@given(blocks=st.integers(1, 3), hw=st.integers(2, 11), k=st.sampled_from((1, 3, 5)),
       stride=st.integers(1, 2), dilation=st.integers(1, 2),
       dt=st.sampled_from(("int8", "int16")), seed=st.integers(0, 2 ** 16),
       extreme=st.booleans())
@pytest.mark.parametrize("where", TARGETS)
def test_depthwise_conv_on_the_dot_path_matches_the_oracle(request, where, blocks, hw, k,
                                                           stride, dilation, dt, seed, extreme):
    target = _target(where, request)
    c = 8 * blocks
    rng = np.random.default_rng(seed)
    x, w = _values(rng, (1, c, hw, hw), dt), _values(rng, (c, 1, k, k), dt)
    if extreme:
        x[:], w[:] = np.iinfo(dt).min, np.iinfo(dt).min
    b = rng.integers(-3000, 3000, (c, 1, 1)).astype("int32")
    text = _dw_text(c, hw, k, stride, dilation, dt)
    got = build(text, params={"w": w, "b": b}, target=target)(x)
    assert np.array_equal(got, evaluate(text, x, w, b))


def _kernel_of(text: str, params: dict[str, np.ndarray], target: Target, anchor: str
               ) -> Function:
    fused = prepare(text, params, 3, target)
    (kernel,) = [f for f in post_order(fused["main"]) if isinstance(f, Function)
                 and is_primitive(f) and any(isinstance(c, Call) and isinstance(c.op, Op)
                                             and c.op.name == anchor
                                             for c in post_order(f.body))]
    return kernel


def _params(text_kind: str) -> tuple[str, dict[str, np.ndarray], str]:
    rng = np.random.default_rng(0)
    if text_kind == "dense":
        return (_dense_text(1, 64, 40, "int8", "int32"),
                {"w": _values(rng, (40, 64), "int8"),
                 "b": rng.integers(-99, 99, (40,)).astype("int32")}, "nn.dense")
    if text_kind == "gemm":
        return (_dense_text(8, 64, 32, "int8", "int32"),
                {"w": _values(rng, (32, 64), "int8"),
                 "b": rng.integers(-99, 99, (32,)).astype("int32")}, "nn.dense")
    return (_dw_text(32, 8, 3, 1, 1, "int8"),
            {"w": _values(rng, (32, 1, 3, 3), "int8"),
             "b": rng.integers(-99, 99, (32, 1, 1)).astype("int32")}, "nn.conv2d")


def _assembly(kind: str, target: Target) -> str:
    text, params, anchor = _params(kind)
    kernel = _kernel_of(text, params, target, anchor)
    types = [p.type_annotation for p in kernel.params if p.type_annotation is not None]
    return kernel_assembly(kernel, types, target=target)


@pytest.mark.parametrize("kind", ["dense", "gemm", "depthwise"])
def test_the_requantize_epilogue_is_inside_the_kernel(kind):
    text, params, anchor = _params(kind)
    kernel = _kernel_of(text, params, Target.host(), anchor)
    ops = {c.op.name for c in post_order(kernel.body) if isinstance(c, Call)
           and isinstance(c.op, Op)}
    assert {anchor, "add", "right_shift", "clip", "cast", "nn.relu"} <= ops


@pytest.mark.parametrize("kind", ["dense", "gemm", "depthwise"])
@pytest.mark.parametrize("mcpu", ["haswell", "znver3"])
def test_avx2_targets_compile_to_vpmaddwd(kind, mcpu):
    asm = _assembly(kind, Target.of({"kind": "llvm", "mcpu": mcpu}))
    assert "vpmaddwd" in asm and "vpdpbusd" not in asm and "vpmulld" not in asm


@pytest.mark.parametrize("kind", ["dense", "gemm", "depthwise"])
@pytest.mark.parametrize("mcpu", VNNI_CPUS)
def test_vnni_targets_compile_to_vpdpbusd(kind, mcpu):
    target = Target.of({"kind": "llvm", "mcpu": mcpu})
    assert target.vnni
    asm = _assembly(kind, target)
    assert "vpdpbusd" in asm and "vpmulld" not in asm
    if not target.avx512:             # AVX-VNNI: ymm only
        assert "zmm" not in asm


def _vpdpbusd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ua = a.view(np.uint8).reshape(*a.shape, 4).astype(np.int64)
    sb = b.view(np.int8).reshape(*b.shape, 4).astype(np.int64)
    return (ua * sb).sum(axis=-1)


def _vpmaddwd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ha = a.view(np.int16).reshape(*a.shape, 2).astype(np.int64)
    hb = b.view(np.int16).reshape(*b.shape, 2).astype(np.int64)
    return (ha * hb).sum(axis=-1)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 20), k=st.integers(1, 20), tile=st.sampled_from((8, 16)),
       vnni=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_the_dense_words_and_the_correction_give_the_exact_products(n, k, tile, vnni, seed):
    rng = np.random.default_rng(seed)
    w, x = _values(rng, (n, k), "int8"), _values(rng, (k,), "int8")
    path = DotPath("vpdpbusd", tile, 4, True) if vnni else DotPath("vpmaddwd", tile, 2, False)
    words = pack_dense_words(w, path, tile)          # [ceil(n / T), ceil(k / G), T]
    g = path.group
    padded = np.zeros(words.shape[1] * g, np.int64)
    padded[:k] = x
    if vnni:
        padded[k:] = 0                               # any value: its weights are zero
        data = (padded + 128).astype(np.uint8).reshape(-1, g).view(np.uint32)[:, 0]
        acc = _vpdpbusd(np.broadcast_to(data[None, :, None], words.shape).copy(), words)
    else:
        data = padded.astype(np.int16).reshape(-1, g).view(np.uint32)[:, 0]
        acc = _vpmaddwd(np.broadcast_to(data[None, :, None], words.shape).copy(), words)
    got = acc.sum(axis=1).reshape(-1)[:n]
    if vnni:
        got = got - weight_correction(w).astype(np.int64)
    assert np.array_equal(got, w.astype(np.int64) @ x.astype(np.int64))


@settings(max_examples=30, deadline=None)
@given(blocks=st.integers(1, 2), k=st.sampled_from((1, 2, 3, 5)), vnni=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_the_depthwise_words_hold_kernel_columns(blocks, k, vnni, seed):
    rng = np.random.default_rng(seed)
    lanes = 8
    c = lanes * blocks
    w = _values(rng, (c, 1, k, k), "int8")
    path = DotPath("vpdpbusd", lanes, 4, True) if vnni else DotPath("vpmaddwd", lanes, 2, False)
    words = pack_depthwise(w, path)                  # [C / L, KH, ceil(KW / G), L]
    assert words.shape == (blocks, k, -(-k // path.group), lanes)
    small = np.int8 if vnni else np.int16
    values = words.view(small).reshape(*words.shape, path.group)
    for q in range(words.shape[2]):
        for g in range(path.group):
            col = q * path.group + g
            want = w[:, 0, :, col].reshape(blocks, lanes, k).transpose(0, 2, 1) \
                if col < k else 0
            assert np.array_equal(values[:, :, q, :, g], np.broadcast_to(
                want, values[:, :, q, :, g].shape))


@pytest.mark.parametrize("src", ["float32", "float64"])
def test_float_to_integer_casts_wrap_like_the_oracle(src):
    """The float → integer cast (the quantize epilogue's last step) wraps modulo 2**bits
    without libm's ``fmod``: exact at every magnitude, NaN and infinities to 0."""
    big = np.finfo(src).max
    x = np.array([0.0, -0.0, 0.5, -0.5, 1.7, -1.7, 127.9, -128.9, 255.5, 256.0, -257.0,
                  2.0 ** 31, -(2.0 ** 31) - 1, 2.0 ** 40 + 3, -(2.0 ** 53) - 2, 1e30, -1e30,
                  big, -big, np.nan, np.inf, -np.inf], src)
    dsts = ("int8", "uint8", "int16", "uint16", "int32", "uint32")
    text = (f"def @main(%x: Tensor[({x.size}), {src}]) {{\n  ("
            + ", ".join(f"cast(%x, dtype=\"{d}\")" for d in dsts) + ")\n}")
    got = build(text)(x)
    want = evaluate(text, x)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and np.array_equal(g, w)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(src=st.sampled_from(["float32", "float64"]),
       dst=st.sampled_from(["int8", "uint8", "int16", "uint16"]),
       seed=st.integers(0, 2 ** 16), scale=st.sampled_from([1.0, 200.0, 7e4, 3e9, 1e30]))
def test_narrow_float_casts_match_the_oracle(src, dst, seed, scale):
    """The vectorized float → (u)int8/16 cast (in the source dtype, through int32) agrees
    with the oracle on random values of every magnitude, 37 of them (a vector body and a
    tail), with the specials mixed in."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(37) * scale).astype(src)
    x[rng.integers(0, 37, 4)] = np.array([np.nan, np.inf, -np.inf, -0.0], src)
    text = f"def @main(%x: Tensor[(37), {src}]) {{ cast(%x, dtype=\"{dst}\") }}"
    got = build(text)(x)
    want = evaluate(text, x)
    assert got.dtype == want.dtype and np.array_equal(got, want)
