"""Integer convolutions on the CPU's dot-product instructions (issue 29, item 6).

A convolution ``int8 × int8 → int32`` (or ``int16 × int16 → int32``) with bound weights and a
blocked ``NCHW{L}c`` output is lowered here when the target has one of these instructions
(:func:`dot_path` decides from the :class:`~backends.tvm.target.Target` record alone):

* **AVX-512 VNNI / AVX-VNNI** (``target.vnni``, int8 data): ``vpdpbusd`` adds, per int32
  lane, the four products of unsigned bytes by signed bytes. The data is shifted by +128
  into ``uint8`` (``x + 128``), and the kernel subtracts ``128 · Σ w`` per output channel,
  a correction computed at build time from the bound weights:
  ``Σ (x + 128) · w − 128 · Σ w = Σ x · w``. The padding is the shifted zero (128), so the
  correction covers every tap. ``vpdpbusd`` does not saturate: the result is exact modulo
  ``2**32``, as the oracle's int32 accumulator.
* **AVX2** (``target.avx2``): ``vpmaddwd`` multiplies pairs of int16 and adds each pair into
  one int32 lane. int8 values are sign-extended to int16 (the data when it is staged, the
  weights at build time). The only sum that does not fit, ``(-32768)² · 2``, wraps to
  ``-2**31``, which is the int32 wrap of the exact value: the result is exact.
  ``vpmaddubsw`` (u8 × s8 pairs into int16) saturates (``255 · -128 · 2 < -32768``), so it
  is not exact on arbitrary int8 data;
* **AVX2, data known to lie in [0, 127]** (``OpCall.range_of``: the kernel reads it through
  ``clip(p, 0, 127)``, put there by ``passes.value_range.clamp_known_ranges``):
  ``vpmaddubsw`` is then exact for every int8 weight (a pair is at most
  ``127 · 128 · 2 = 32512``), and ``vpmaddwd`` against ones adds its int16 pairs into one
  int32 lane: 32 products for two instructions, words of four bytes, no data shift.

The lowering packs the input channels into 32-bit words, ``G`` channels a word (``G = 4``
bytes for ``vpdpbusd`` and ``vpmaddubsw``, ``G = 2`` int16 for ``vpmaddwd``):

* the staged input (``conv2d_pad``: padded, channels last) holds words
  ``[N, H + p, W + p, C / G]`` (``uint32``);
* the weights become a constant ``[O / L, C / G, KH, KW, L]`` of words, ``L`` the output
  block (the vector's int32 lanes).

The reduction is then the ordinary one of ``backends.tvm.sched.conv2d`` over ``C / G`` words,
whose term is the call :data:`DOT_OPS` ``(data word, weight word)``. The schedule vectorizes
the block's lanes: the data word is broadcast, the weights are one vector load. TVM's
``LowerIntrin`` then turns the vector call into the instruction (``call_llvm_pure_intrin``
with its operands reinterpreted to the instruction's vector types). A call of a multiple of
an instruction's width (16 lanes on an AVX2 machine: the GEMM's column block) is one
instruction per slice, concatenated; a call of any other width (a scalar loop, 4 lanes)
lowers to plain integer arithmetic of the same value: the kernel is correct under any
schedule.

Facts measured with TVM 0.27 (LLVM 20) that shaped this module:

* ``Schedule.tensorize`` crashes (segmentation fault in ``ToJSONGraph``: the intrinsic is
  deep-copied through TVM's JSON serializer, which fails on every ``s_tir`` function), so
  there is no tensorized micro-kernel;
* TVM's vectorizer widens a call of an op marked ``TVectorizable``; a custom op with an
  ``llvm`` lowering is therefore the way to reach an instruction through ``T.vectorized``;
* LLVM 20 declares ``llvm.x86.avx512.vpdpbusd.*`` over byte vectors (``<64 x i8>``), not the
  ``<16 x i32>`` of older LLVMs (and of ``tvm.s_tir.tensor_intrin.x86``);
* LLVM does not fold ``acc + vpdpbusd(0, a, b)`` into ``vpdpbusd(acc, a, b)``: the VNNI
  kernel has one ``vpaddd`` per ``vpdpbusd``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from backends.tvm.lower.base import aligned_empty
from backends.tvm.target import Target

__all__ = ["DOT_OPS", "NARROW_OPS", "DotPath", "conv2d_dot", "depthwise_dot", "depthwise_path",
           "dot_call", "dot_path", "pack_data", "pack_depthwise", "pack_weight",
           "register_dot_ops", "to_oihw", "weight_correction"]

DOT_OPS = {"vpmaddwd": "tirx.relay_dot_i16x2", "vpdpbusd": "tirx.relay_dot_u8s8x4",
           "vpmaddubsw": "tirx.relay_dot_u7s8x4"}
"""The TIR ops of one 32-bit word's dot product, by instruction: ``relay_dot_i16x2(a, b)``
is ``lo16(a)·lo16(b) + hi16(a)·hi16(b)`` (signed halves); ``relay_dot_u8s8x4(a, b)`` and
``relay_dot_u7s8x4(a, b)`` are ``Σ_i u8_i(a) · s8_i(b)`` over the four bytes (the second
only ever sees data bytes in ``[0, 127]``: its instruction saturates past them). All take
and return 32-bit words."""

NARROW_OPS = {"vpdpbusd": "tirx.relay_dot_u8s8x4_ymm"}
"""The same ops for a target whose vectors hold 8 int32 lanes (AVX-VNNI without AVX-512):
their lowering never uses a ``zmm`` form (a 16-lane call is two ``ymm`` instructions)."""

_INTRINSICS = {
    ("vpmaddwd", 8): ("llvm.x86.avx2.pmadd.wd", "int16x16"),
    ("vpdpbusd", 8): ("llvm.x86.avx512.vpdpbusd.256", "int8x32"),
    ("vpdpbusd", 16): ("llvm.x86.avx512.vpdpbusd.512", "int8x64"),
    ("vpmaddubsw", 8): ("llvm.x86.avx2.pmadd.ub.sw", "int8x32"),
}
"""The LLVM intrinsic and operand type of each instruction at a width (int32 lanes)."""


@dataclass(frozen=True)
class DotPath:
    """How an integer convolution uses a dot-product instruction.

    Attributes:
        instruction: ``"vpmaddwd"``, ``"vpdpbusd"`` or ``"vpmaddubsw"``.
        lanes: int32 lanes of one vector (the output-channel block).
        group: input channels in one 32-bit word (2 int16 or 4 bytes).
        shift: the data is shifted by +128 into unsigned bytes (``vpdpbusd``).
    """

    instruction: str
    lanes: int
    group: int
    shift: bool

    @property
    def op(self) -> str:
        if self.lanes <= 8 and self.instruction in NARROW_OPS:
            return NARROW_OPS[self.instruction]
        return DOT_OPS[self.instruction]


def dot_path(target: Target, in_dtype: str, out_dtype: str, block: int, in_channels: int,
             data_range: tuple[float, float] | None = None) -> DotPath | None:
    """The dot-product path of a convolution, or None (the plain lowering then runs).

    Args:
        target: the build's target (its ``vnni``, ``avx512`` and ``avx2`` fields).
        in_dtype: the data's and weights' dtype; out_dtype: the accumulator's.
        block: the output layout's channel block (``NCHW{block}c``).
        in_channels: input channels of a group (convolutions with groups are not taken).
        data_range: bounds every data value is known to lie in (``OpCall.range_of``), if any.
    """
    if out_dtype != "int32":
        return None
    if target.vnni and in_dtype == "int8" and in_channels % 4 == 0 and (
            block == 16 and target.avx512 or block == 8):
        return DotPath("vpdpbusd", block, 4, True)
    if (target.avx2 and in_dtype == "int8" and in_channels % 4 == 0 and block == 8
            and data_range is not None and 0 <= data_range[0] and data_range[1] <= 127):
        return DotPath("vpmaddubsw", 8, 4, False)
    if target.avx2 and in_dtype in ("int8", "int16") and in_channels % 2 == 0 and block == 8:
        return DotPath("vpmaddwd", 8, 2, False)
    return None


def to_oihw(weight: np.ndarray, axes: Sequence[tuple[str, int]], shape: Sequence[int]
            ) -> np.ndarray:
    """A weight in a (possibly blocked) kernel layout as ``OIHW`` of primal ``shape``.

    Args:
        weight: the array in its layout; axes: the layout's ``(axis, factor)`` pairs
            (``semantics.ops.transform_relations.parse_layout``); shape: ``(O, I, H, W)``.
    """
    factor = {a.upper(): f for a, f in axes if a.islower()}
    grid = dict(zip("OIHW", np.indices(tuple(shape)), strict=True))
    index = []
    for a, f in axes:
        if a.isupper():
            index.append(grid[a] // factor[a] if a in factor else grid[a])
        else:
            index.append(grid[a.upper()] % f)
    return weight[tuple(index)]


def pack_weight(w: np.ndarray, path: DotPath) -> np.ndarray:
    """The ``OIHW`` weight as 32-bit words ``[O / L, I / G, H, W, L]`` (``uint32``): word
    ``[b, p, y, x, l]`` holds ``w[b·L + l, p·G + g, y, x]`` for ``g < G``, lowest first
    (int16 for ``vpmaddwd``, bytes for ``vpdpbusd``)."""
    o, i, kh, kw = w.shape
    lanes, group = path.lanes, path.group
    small = "int8" if group == 4 else "int16"
    blocks = w.reshape(o // lanes, lanes, i // group, group, kh, kw)
    words = np.ascontiguousarray(blocks.transpose(0, 2, 4, 5, 1, 3).astype(small))
    out = aligned_empty((o // lanes, i // group, kh, kw, lanes), np.dtype("uint32"))
    out[...] = words.view(np.uint32).reshape(out.shape)
    return out


def weight_correction(w: np.ndarray) -> np.ndarray:
    """``128 · Σ w`` per output channel (``int32``, wrapped): what the +128 data shift adds."""
    sums = w.reshape(w.shape[0], -1).astype(np.int64).sum(axis=1) * 128
    return ((sums + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)


def pack_data(inside: Any, path: DotPath, read: Any) -> Any:
    """The 32-bit word of ``G`` data values (``read(g)``: value ``g`` of the word, any
    integer dtype) as ``uint32``. ``inside``: the condition that the values are not padding
    (a function of ``g`` when it differs among them), or None; padding reads as zero (the
    shifted zero, 128, with ``vpdpbusd``)."""
    from tvm import tirx

    word = None
    bits = 8 if path.group == 4 else 16
    for g in range(path.group):
        cond = inside(g) if callable(inside) else inside
        if path.shift:
            v = tirx.Cast("int32", read(g)) + tirx.IntImm("int32", 128)
            if cond is not None:
                v = tirx.if_then_else(cond, v, tirx.IntImm("int32", 128))
            part = tirx.Cast("uint32", v) & tirx.IntImm("uint32", 255)
        else:
            small = "int8" if bits == 8 else "int16"
            v = tirx.Cast(small, read(g))
            if cond is not None:
                v = tirx.if_then_else(cond, v, tirx.IntImm(small, 0))
            part = tirx.Cast("uint32", tirx.Cast(f"uint{bits}", v))
        if g:
            part = part << tirx.IntImm("uint32", bits * g)
        word = part if word is None else word | part
    return word


def _vec(dtype: str, lanes: int) -> str:
    return dtype if lanes == 1 else f"{dtype}x{lanes}"


def _imm(value: int, dtype: str, lanes: int) -> Any:
    from tvm import tirx

    imm = tirx.IntImm(dtype, value)
    return imm if lanes == 1 else tirx.Broadcast(imm, lanes)


def _signed(word: Any, lo: int, bits: int, lanes: int) -> Any:
    """Bits ``lo .. lo + bits`` of a ``uint32`` word as a signed int32 (sign-extended)."""
    from tvm import tirx

    shifted = word >> _imm(lo, "uint32", lanes) if lo else word
    narrow = tirx.Cast(_vec("int8" if bits == 8 else "int16", lanes), shifted)
    return tirx.Cast(_vec("int32", lanes), narrow)


def _unsigned_byte(word: Any, lo: int, lanes: int) -> Any:
    """Byte ``lo / 8`` of a ``uint32`` word as an int32 in ``[0, 255]``."""
    from tvm import tirx

    shifted = word >> _imm(lo, "uint32", lanes) if lo else word
    return tirx.Cast(_vec("int32", lanes), shifted & _imm(255, "uint32", lanes))


def _as_uint32(value: Any, lanes: int) -> Any:
    from tvm import tirx

    want = _vec("uint32", lanes)
    return value if str(value.ty.dtype) == want else tirx.reinterpret(want, value)


def _arithmetic(instruction: str, a: Any, b: Any, lanes: int) -> Any:
    """The op's value in plain integer arithmetic (any width)."""
    a, b = _as_uint32(a, lanes), _as_uint32(b, lanes)
    if instruction == "vpmaddwd":
        return (_signed(a, 0, 16, lanes) * _signed(b, 0, 16, lanes)
                + _signed(a, 16, 16, lanes) * _signed(b, 16, 16, lanes))
    total = None
    for i in range(4):
        term = _unsigned_byte(a, 8 * i, lanes) * _signed(b, 8 * i, 8, lanes)
        total = term if total is None else total + term
    return total


def _lower(instruction: str, widest: int) -> Any:
    """The ``LowerIntrin`` rule of an op: instructions of at most ``widest`` int32 lanes."""
    def lower(call: Any) -> Any:
        from tvm import tirx

        lanes = int(call.ty.dtype.lanes)
        a, b = call.args
        if (instruction, lanes) in _INTRINSICS and lanes <= widest:
            return _instruction(instruction, a, b, lanes)
        part = max((w for (i, w) in _INTRINSICS if i == instruction and w < lanes
                    and lanes % w == 0 and w <= widest), default=None)
        if part is None:
            return _arithmetic(instruction, a, b, lanes)
        # a multiple of the instruction's width: one instruction per slice, concatenated
        pieces = [_instruction(instruction, _slice(a, s, part), _slice(b, s, part), part)
                  for s in range(0, lanes, part)]
        return tirx.Shuffle(pieces, [tirx.IntImm("int32", i) for i in range(lanes)])

    return lower


def _slice(vector: Any, start: int, lanes: int) -> Any:
    from tvm import tirx

    return tirx.Shuffle([vector], [tirx.IntImm("int32", start + i) for i in range(lanes)])


def _instruction(instruction: str, a: Any, b: Any, lanes: int) -> Any:
    """The instruction's intrinsic on ``lanes`` int32 lanes (a width of :data:`_INTRINSICS`)."""
    from tvm import tirx

    name, operand = _INTRINSICS[(instruction, lanes)]
    a, b = tirx.reinterpret(operand, a), tirx.reinterpret(operand, b)
    if instruction == "vpmaddwd":
        return tirx.call_llvm_pure_intrin(f"int32x{lanes}", name, a, b)
    if instruction == "vpmaddubsw":     # byte pairs into int16, then int16 pairs into int32
        pairs = tirx.call_llvm_pure_intrin(f"int16x{2 * lanes}", name, a, b)
        return tirx.call_llvm_pure_intrin(f"int32x{lanes}", "llvm.x86.avx2.pmadd.wd", pairs,
                                          _imm(1, "int16", 2 * lanes))
    return tirx.call_llvm_pure_intrin(f"int32x{lanes}", name, _imm(0, "int32", lanes), a, b)


_REGISTERED: list[bool] = []


def register_dot_ops() -> None:
    """Declare the ops of :data:`DOT_OPS` and :data:`NARROW_OPS` to TVM (pure, vectorizable,
    lowered for ``llvm``; once per process)."""
    import tvm
    from tvm import tirx

    if _REGISTERED:
        return
    _REGISTERED.append(True)
    ops = [(i, name, 16) for i, name in DOT_OPS.items()]
    ops += [(i, name, 8) for i, name in NARROW_OPS.items()]
    for instruction, name, widest in ops:
        tvm.ir.register_op_attr(name, "TVectorizable", True)
        op = tvm.ir.Op.get(name)
        if op.get_attr("TCallEffectKind") is None:
            op.set_attr("TCallEffectKind", 1)          # pure
        tirx.register_intrin_lowering(name, "llvm", f=_lower(instruction, widest), level=99)


def dot_call(path: DotPath, data_word: Any, weight_word: Any) -> Any:
    """The int32 term ``DOT(data word, weight word)`` of the reduction."""
    from tvm import tirx

    return tirx.call_intrin("int32", path.op, data_word, weight_word)


try:
    register_dot_ops()
except ImportError:          # no TVM: nothing is compiled either
    pass


def conv2d_dot(call: Any, dmap: Any, kmap: Any, omap: Any, pad_name: str) -> Any:
    """The convolution of ``call`` (an ``nn.conv2d``
    :class:`~backends.tvm.lower.base.OpCall`; ``dmap``, ``kmap``, ``omap``: the
    ``LayoutMap`` of its data, kernel and output) on the words of its :func:`dot_path`
    (module docstring), or None when it has none: a weight computed at run time, groups, an
    output not blocked by channels alone, blocked ``H``/``W`` data.

    ``conv2d`` reduces the dot-product calls over ``C / G, KH, KW`` of the staged words
    (the stage ``pad_name``); with the +128 shift the result is ``conv2d`` minus the
    correction."""
    from tvm import te, tirx

    from semantics.ops import nn_relations as N

    attrs = call.attrs
    if (call.constant(1) is None or call.hide is None
            or call.in_dtype(0) != call.in_dtype(1) or set(omap.factor) != {"C"}
            or "H" in dmap.factor or "W" in dmap.factor):
        return None
    dshape, kshape = call.in_shape(0), call.in_shape(1)
    primal = tuple(kmap.extent(kshape, a) for a in "OIHW")
    if attrs["groups"] != 1:
        if attrs["groups"] == primal[0] == dmap.extent(dshape, "C") and primal[1] == 1:
            return depthwise_dot(call, dmap, kmap, omap, pad_name)
        return None
    path = dot_path(call.target or Target.host(), call.in_dtype(0), call.out_dtype,
                    omap.factor["C"], primal[1], call.range_of(0))
    if path is None:
        return None
    data = call.inputs[0]
    height, width = dmap.extent(dshape, "H"), dmap.extent(dshape, "W")
    w = to_oihw(call.constant(1), kmap.axes, primal)
    packed = call.add_constant(pack_weight(w, path), "conv2d_words")
    sh, sw = N.pair(attrs["strides"])
    dh, dw = N.pair(attrs["dilation"])
    pt, pl, pb, pr = N.pad4(attrs["padding"])
    padded = any((pt, pl, pb, pr))

    def word(b: Any, hh: Any, ww: Any, p: Any) -> Any:
        h, x = hh - pt, ww - pl
        inside = tirx.all(h >= 0, h < height, x >= 0, x < width) if padded else None
        hc = tirx.max(tirx.min(h, height - 1), 0) if padded else h
        xc = tirx.max(tirx.min(x, width - 1), 0) if padded else x
        return pack_data(inside, path, lambda g: data[tuple(dmap.index(
            {"N": b, "C": p * path.group + g, "H": hc, "W": xc}))])

    staged = te.compute((dmap.extent(dshape, "N"), height + pt + pb, width + pl + pr,
                         primal[1] // path.group), word, name=pad_name)
    rp = te.reduce_axis((0, primal[1] // path.group), name="rc")
    ry = te.reduce_axis((0, primal[2]), name="ry")
    rx = te.reduce_axis((0, primal[3]), name="rx")
    lanes = path.lanes

    def body(*idx: Any) -> Any:
        o = omap.coords(idx)
        x = staged[o["N"], o["H"] * sh + ry * dh, o["W"] * sw + rx * dw, rp]
        k = packed[tirx.floordiv(o["C"], lanes), rp, ry, rx, tirx.floormod(o["C"], lanes)]
        return te.sum(dot_call(path, x, k), axis=[rp, ry, rx])

    return _unshift(call, te.compute(call.out_shape, body, name="conv2d"), w, omap, path)


def _unshift(call: Any, out: Any, w: np.ndarray, omap: Any, path: DotPath) -> Any:
    """The convolution ``out`` of the words of ``path``, less the correction
    ``128 · Σ w`` per output channel when the data was shifted by +128 (``vpdpbusd``)."""
    from tvm import te

    if not path.shift:
        return out
    corr = call.add_constant(weight_correction(w), "conv2d_correction")
    return te.compute(call.out_shape, lambda *i: out[i] - corr[omap.coords(i)["C"]],
                      name="conv2d_unshift")


def depthwise_path(target: Target, in_dtype: str, out_dtype: str, block: int) -> DotPath | None:
    """The dot-product path of a depthwise convolution (:func:`depthwise_dot`), or None: the
    words hold ``G`` kernel columns of one channel, the lanes are the channel block."""
    if out_dtype != "int32":
        return None
    if target.vnni and in_dtype == "int8" and (block == 16 and target.avx512 or block == 8):
        return DotPath("vpdpbusd", block, 4, True)
    if target.avx2 and in_dtype in ("int8", "int16") and block == 8:
        return DotPath("vpmaddwd", 8, 2, False)
    return None


def pack_depthwise(w: np.ndarray, path: DotPath) -> np.ndarray:
    """The depthwise ``OIHW`` weight ``(C, 1, KH, KW)`` as words ``[C / L, KH, ceil(KW / G),
    L]`` (``uint32``): word ``[b, y, q, l]`` holds ``w[b·L + l, 0, y, q·G + g]`` for
    ``g < G`` (zero past ``KW``)."""
    c, _, kh, kw = w.shape
    lanes, group = path.lanes, path.group
    small = np.dtype("int8" if group == 4 else "int16")
    q = -(-kw // group)
    full = np.zeros((c, kh, q * group), small)
    full[:, :, :kw] = w[:, 0]
    grid = full.reshape(c // lanes, lanes, kh, q, group).transpose(0, 2, 3, 1, 4)
    out = aligned_empty((c // lanes, kh, q, lanes), np.dtype("uint32"))
    out[...] = np.ascontiguousarray(grid).view(np.uint32)[..., 0]
    return out


def depthwise_dot(call: Any, dmap: Any, kmap: Any, omap: Any, pad_name: str) -> Any:
    """A depthwise convolution (``groups`` = channels, one input channel a group) on the
    words of :func:`depthwise_path`, or None.

    The staged input (the stage ``pad_name``, padded, channels last) holds, at
    ``[n, h, w, c]``, the word of the ``G`` columns ``w, w + dw, ..`` of channel ``c``
    (int16 pairs, or bytes shifted by +128); the weights are the words of ``G`` kernel
    columns (:func:`pack_depthwise`). The convolution reduces the dot products over the
    kernel rows and the ``ceil(KW / G)`` words of a row (a reduction axis ``rc`` of extent
    1 keeps the shape of the other convolutions for ``backends.tvm.sched.conv2d``): a 3×3
    kernel is 6 ``vpmaddwd`` or 3 ``vpdpbusd`` per vector of outputs instead of 9
    multiplies and adds."""
    from tvm import te, tirx

    from semantics.ops import nn_relations as N

    attrs = call.attrs
    dshape, kshape = call.in_shape(0), call.in_shape(1)
    primal = tuple(kmap.extent(kshape, a) for a in "OIHW")
    path = depthwise_path(call.target or Target.host(), call.in_dtype(0), call.out_dtype,
                          omap.factor["C"])
    if path is None or primal[0] % path.lanes:
        return None
    data = call.inputs[0]
    height, width = dmap.extent(dshape, "H"), dmap.extent(dshape, "W")
    w = to_oihw(call.constant(1), kmap.axes, primal)
    packed = call.add_constant(pack_depthwise(w, path), "conv2d_words")
    sh, sw = N.pair(attrs["strides"])
    dh, dw = N.pair(attrs["dilation"])
    pt, pl, pb, pr = N.pad4(attrs["padding"])

    q = int(packed.shape[2])
    step = path.group * dw
    # with a stride dividing the word's span, only every ``sw``-th column starts a word
    every = sw if step % sw == 0 else 1
    out_w = omap.extent(call.out_shape, "W")

    def word(b: Any, hh: Any, j: Any, c: Any) -> Any:
        h = hh - pt
        row_in = tirx.all(h >= 0, h < height)
        hc = tirx.max(tirx.min(h, height - 1), 0)

        def column(g: int) -> Any:
            return j * every - pl + g * dw

        def inside(g: int) -> Any:
            return tirx.all(row_in, column(g) >= 0, column(g) < width)

        def read(g: int) -> Any:
            x = tirx.max(tirx.min(column(g), width - 1), 0)
            return data[tuple(dmap.index({"N": b, "C": c, "H": hc, "W": x}))]

        return pack_data(inside, path, read)

    columns = (width + pl + pr if every == 1 else out_w + (q - 1) * step // sw)
    staged = te.compute((dmap.extent(dshape, "N"), height + pt + pb, columns, primal[0]),
                        word, name=pad_name)
    rc = te.reduce_axis((0, 1), name="rc")
    ry = te.reduce_axis((0, primal[2]), name="ry")
    rq = te.reduce_axis((0, q), name="rx")
    lanes = path.lanes

    def body(*idx: Any) -> Any:
        o = omap.coords(idx)
        j = o["W"] * sw + rq * step if every == 1 else o["W"] + rq * (step // sw)
        x = staged[o["N"], o["H"] * sh + ry * dh, j, o["C"] + rc]
        k = packed[tirx.floordiv(o["C"], lanes), ry, rq, tirx.floormod(o["C"], lanes)]
        return te.sum(dot_call(path, x, k), axis=[rc, ry, rq])

    return _unshift(call, te.compute(call.out_shape, body, name="conv2d"), w, omap, path)
