"""The VTA instruction set: 128-bit instructions and 32-bit micro-ops, encode/decode, disassembly.

Facts from apache/tvm-vta ``include/vta/hw_spec.h`` and ``hw_spec_const.h``:

* Opcodes (3 bits): LOAD 0, STORE 1, GEMM 2, FINISH 3, ALU 4.  Memory types (3 bits):
  UOP 0, WGT 1, INP 2, ACC 3, OUT 4, ACC_8BIT 5.  ALU opcodes (3 bits): MIN 0, MAX 1, ADD 2,
  SHR 3 (a negative amount shifts left), MUL 4.
* Every instruction starts with ``opcode, pop_prev_dep, pop_next_dep, push_prev_dep,
  push_next_dep``.  ``VTAMemInsn`` continues with ``memory_type, sram_base (16), dram_base (32),
  y_size (16), x_size (16), x_stride (16), y_pad_0, y_pad_1, x_pad_0, x_pad_1 (4 each)``;
  ``VTAGemInsn`` with ``reset_reg, uop_bgn (LOG_UOP_BUFF_DEPTH), uop_end (+1), iter_out,
  iter_in (14 each), dst/src/wgt_factor_out/in`` (the ACC, INP and WGT index widths);
  ``VTAAluInsn`` like GEMM with ACC-wide src factors, then ``alu_opcode, use_imm, imm``
  (a *signed* 16-bit field).
* The layout is C's bit-field packing of those ``uint64_t`` fields (the System V ABI VTA's
  simulator builds use): from bit 0 upward in declaration order, a field that would cross a
  64-bit boundary starts at the next word.  The 16 bytes are the two words little-endian.
* ``VTAUop`` is ``dst_idx, src_idx`` (``LOG_ACC_BUFF_DEPTH`` bits each) and ``wgt_idx``
  (``LOG_WGT_BUFF_DEPTH``) packed into one ``uint32_t``.

Field widths are derived from the :class:`~backends.vta.config.Config`, never hard-coded.
:func:`encode` checks every field's range (``ValueError``); :func:`decode` rejects an unknown
opcode or memory/ALU type (``ValueError``).  :func:`disassemble` prints a stream one
instruction per line in the spirit of the runtime's ``DumpInsn``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from backends.vta.config import Config

__all__ = [
    "OP_LOAD", "OP_STORE", "OP_GEMM", "OP_FINISH", "OP_ALU",
    "MEM_UOP", "MEM_WGT", "MEM_INP", "MEM_ACC", "MEM_OUT", "MEM_ACC_8BIT",
    "ALU_MIN", "ALU_MAX", "ALU_ADD", "ALU_SHR", "ALU_MUL",
    "MemInsn", "GemmInsn", "AluInsn", "FinishInsn", "Uop", "Insn",
    "encode", "decode", "encode_uop", "decode_uop", "encode_stream", "decode_stream",
    "disassemble", "layout", "uop_layout",
]

OP_LOAD, OP_STORE, OP_GEMM, OP_FINISH, OP_ALU = 0, 1, 2, 3, 4
MEM_UOP, MEM_WGT, MEM_INP, MEM_ACC, MEM_OUT, MEM_ACC_8BIT = 0, 1, 2, 3, 4, 5
ALU_MIN, ALU_MAX, ALU_ADD, ALU_SHR, ALU_MUL = 0, 1, 2, 3, 4

OPCODE_NAMES = {OP_LOAD: "LOAD", OP_STORE: "STORE", OP_GEMM: "GEMM", OP_FINISH: "FINISH",
                OP_ALU: "ALU"}
MEM_NAMES = {MEM_UOP: "UOP", MEM_WGT: "WGT", MEM_INP: "INP", MEM_ACC: "ACC", MEM_OUT: "OUT",
             MEM_ACC_8BIT: "ACC_8BIT"}
ALU_NAMES = {ALU_MIN: "MIN", ALU_MAX: "MAX", ALU_ADD: "ADD", ALU_SHR: "SHR", ALU_MUL: "MUL"}

_LOOP_ITER_WIDTH = 14
_IMM_WIDTH = 16


@dataclass(slots=True)
class _Insn:
    """The fields every instruction starts with: the opcode and the four dependence-queue
    flags (``VTAGenericInsn``)."""

    opcode: int = OP_FINISH
    pop_prev_dep: int = 0
    pop_next_dep: int = 0
    push_prev_dep: int = 0
    push_next_dep: int = 0


@dataclass(slots=True)
class MemInsn(_Insn):
    """LOAD (opcode 0) or STORE (opcode 1): a 2-D strided, padded transfer (``VTAMemInsn``)."""

    opcode: int = OP_LOAD
    memory_type: int = MEM_INP
    sram_base: int = 0
    dram_base: int = 0
    y_size: int = 0
    x_size: int = 0
    x_stride: int = 0
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0


@dataclass(slots=True)
class _LoopInsn(_Insn):
    """The fields GEMM and ALU share: a two-level loop over a micro-op range, with the
    destination and source index factors of each level."""

    reset_reg: int = 0
    uop_bgn: int = 0
    uop_end: int = 0
    iter_out: int = 0
    iter_in: int = 0
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0


@dataclass(slots=True)
class GemmInsn(_LoopInsn):
    """GEMM (opcode 2) over ``iter_out x iter_in x [uop_bgn, uop_end)`` (``VTAGemInsn``)."""

    opcode: int = OP_GEMM
    wgt_factor_out: int = 0
    wgt_factor_in: int = 0


@dataclass(slots=True)
class AluInsn(_LoopInsn):
    """ALU (opcode 4): ``acc[dst] = op(acc[dst], imm | acc[src])`` (``VTAAluInsn``)."""

    opcode: int = OP_ALU
    alu_opcode: int = ALU_SHR
    use_imm: int = 0
    imm: int = 0


@dataclass(slots=True)
class FinishInsn(_Insn):
    """FINISH (opcode 3): the end of a stream (``VTAGenericInsn`` with only the flags)."""


@dataclass(slots=True)
class Uop:
    """A micro-op (``VTAUop``): ACC, INP (GEMM) or ACC (ALU), and WGT indices."""

    dst_idx: int = 0
    src_idx: int = 0
    wgt_idx: int = 0


Insn = MemInsn | GemmInsn | AluInsn | FinishInsn

# (name, width, signed) per field; positions come from _pack_positions.
Field = tuple[str, int, bool]


def _head() -> list[Field]:
    return [("opcode", 3, False), ("pop_prev_dep", 1, False), ("pop_next_dep", 1, False),
            ("push_prev_dep", 1, False), ("push_next_dep", 1, False)]


def _pack_positions(fields: list[Field], word_bits: int, words: int) -> tuple[tuple[str, int, int,
                                                                                  bool], ...]:
    """C bit-field packing: (name, bit offset, width, signed), a field never crossing a word."""
    out = []
    pos = 0
    for name, width, signed in fields:
        if pos // word_bits != (pos + width - 1) // word_bits:
            pos = (pos // word_bits + 1) * word_bits
        out.append((name, pos, width, signed))
        pos += width
    if pos > word_bits * words:
        raise ValueError(f"the fields need {pos} bits, more than {word_bits * words}")
    return tuple(out)


@lru_cache(maxsize=64)
def layout(opcode: int, config: Config) -> tuple[tuple[str, int, int, bool], ...]:
    """The field layout of an instruction kind: ``(name, bit offset, width, signed)``."""
    if opcode in (OP_LOAD, OP_STORE):
        fields = _head() + [("memory_type", 3, False), ("sram_base", 16, False),
                            ("dram_base", 32, False), ("y_size", 16, False),
                            ("x_size", 16, False), ("x_stride", 16, False),
                            ("y_pad_0", 4, False), ("y_pad_1", 4, False),
                            ("x_pad_0", 4, False), ("x_pad_1", 4, False)]
    elif opcode in (OP_GEMM, OP_ALU):
        acc, inp, wgt = config.LOG_ACC_BUFF_DEPTH, config.LOG_INP_BUFF_DEPTH, \
            config.LOG_WGT_BUFF_DEPTH
        uop = config.LOG_UOP_BUFF_DEPTH
        fields = _head() + [("reset_reg", 1, False), ("uop_bgn", uop, False),
                            ("uop_end", uop + 1, False), ("iter_out", _LOOP_ITER_WIDTH, False),
                            ("iter_in", _LOOP_ITER_WIDTH, False),
                            ("dst_factor_out", acc, False), ("dst_factor_in", acc, False)]
        if opcode == OP_GEMM:
            fields += [("src_factor_out", inp, False), ("src_factor_in", inp, False),
                       ("wgt_factor_out", wgt, False), ("wgt_factor_in", wgt, False)]
        else:
            fields += [("src_factor_out", acc, False), ("src_factor_in", acc, False),
                       ("alu_opcode", 3, False), ("use_imm", 1, False),
                       ("imm", _IMM_WIDTH, True)]
    elif opcode == OP_FINISH:
        fields = _head()
    else:
        raise ValueError(f"unknown VTA opcode {opcode}")
    return _pack_positions(fields, 64, 2)


@lru_cache(maxsize=64)
def uop_layout(config: Config) -> tuple[tuple[str, int, int, bool], ...]:
    """The micro-op layout: ``(name, bit offset, width, signed)`` within 32 bits."""
    acc, wgt = config.LOG_ACC_BUFF_DEPTH, config.LOG_WGT_BUFF_DEPTH
    return _pack_positions([("dst_idx", acc, False), ("src_idx", acc, False),
                            ("wgt_idx", wgt, False)], 32, 1)


_CLASSES: dict[int, type] = {OP_LOAD: MemInsn, OP_STORE: MemInsn, OP_GEMM: GemmInsn,
                             OP_FINISH: FinishInsn, OP_ALU: AluInsn}


def _pack(obj: object, fields: tuple[tuple[str, int, int, bool], ...], what: str) -> int:
    word = 0
    for name, pos, width, signed in fields:
        value = getattr(obj, name)
        if not isinstance(value, int) or isinstance(value, bool):
            value = int(value)
        lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0,
                                                                                (1 << width) - 1)
        if not lo <= value <= hi:
            raise ValueError(f"{what} field {name}={value} out of range [{lo}, {hi}] "
                             f"({width} bits)")
        word |= (value & ((1 << width) - 1)) << pos
    return word


def _unpack(word: int, fields: tuple[tuple[str, int, int, bool], ...]) -> dict[str, int]:
    out = {}
    for name, pos, width, signed in fields:
        value = (word >> pos) & ((1 << width) - 1)
        if signed and value >> (width - 1):
            value -= 1 << width
        out[name] = value
    return out


def encode(insn: Insn, config: Config | None = None) -> bytes:
    """One instruction as 16 little-endian bytes (word 0 first).

    Raises:
        ValueError: a field out of its range, or an unknown opcode.
    """
    cfg = config or Config()
    if isinstance(insn, MemInsn) and insn.opcode not in (OP_LOAD, OP_STORE):
        raise ValueError(f"a memory instruction has opcode LOAD or STORE, not {insn.opcode}")
    if not isinstance(insn, MemInsn) and _CLASSES.get(insn.opcode) is not type(insn):
        raise ValueError(f"{type(insn).__name__} with opcode {insn.opcode}")
    word = _pack(insn, layout(insn.opcode, cfg), OPCODE_NAMES.get(insn.opcode, "?"))
    return word.to_bytes(16, "little")


def decode(data: bytes, config: Config | None = None) -> Insn:
    """The instruction encoded in 16 bytes.

    Raises:
        ValueError: not 16 bytes, an unknown opcode, memory type or ALU opcode.
    """
    cfg = config or Config()
    if len(data) != 16:
        raise ValueError(f"a VTA instruction is 16 bytes, got {len(data)}")
    word = int.from_bytes(bytes(data), "little")
    opcode = word & 7
    if opcode not in _CLASSES:
        raise ValueError(f"unknown VTA opcode {opcode}")
    fields = _unpack(word, layout(opcode, cfg))
    insn = _CLASSES[opcode](**fields)
    if isinstance(insn, MemInsn) and insn.memory_type not in MEM_NAMES:
        raise ValueError(f"unknown VTA memory type {insn.memory_type}")
    if isinstance(insn, AluInsn) and insn.alu_opcode not in ALU_NAMES:
        raise ValueError(f"unknown VTA ALU opcode {insn.alu_opcode}")
    return insn


def encode_uop(uop: Uop, config: Config | None = None) -> bytes:
    """One micro-op as 4 little-endian bytes (``ValueError`` for an index out of range)."""
    cfg = config or Config()
    return _pack(uop, uop_layout(cfg), "micro-op").to_bytes(4, "little")


def decode_uop(data: bytes, config: Config | None = None) -> Uop:
    """The micro-op encoded in 4 bytes."""
    cfg = config or Config()
    if len(data) != 4:
        raise ValueError(f"a VTA micro-op is 4 bytes, got {len(data)}")
    return Uop(**_unpack(int.from_bytes(bytes(data), "little"), uop_layout(cfg)))


def encode_stream(insns: list[Insn], config: Config | None = None) -> bytes:
    """Instructions concatenated, 16 bytes each."""
    cfg = config or Config()
    return b"".join(encode(i, cfg) for i in insns)


def decode_stream(data: bytes, config: Config | None = None) -> list[Insn]:
    """The instructions of a stream (``ValueError`` if its length is not a multiple of 16)."""
    cfg = config or Config()
    if len(data) % 16:
        raise ValueError(f"an instruction stream is a multiple of 16 bytes, got {len(data)}")
    return [decode(data[i:i + 16], cfg) for i in range(0, len(data), 16)]


def _flags(insn: Insn) -> str:
    marks = [name for name, on in (("pop_prev", insn.pop_prev_dep),
                                   ("pop_next", insn.pop_next_dep),
                                   ("push_prev", insn.push_prev_dep),
                                   ("push_next", insn.push_next_dep)) if on]
    return (" [" + " ".join(marks) + "]") if marks else ""


def disassemble_one(insn: Insn) -> str:
    """One instruction as a line of text."""
    if isinstance(insn, MemInsn):
        kind = OPCODE_NAMES[insn.opcode]
        mem = MEM_NAMES.get(insn.memory_type, str(insn.memory_type))
        if insn.x_size == 0:
            return f"NOP-{kind} {mem}{_flags(insn)}"
        pads = ""
        if insn.y_pad_0 or insn.y_pad_1 or insn.x_pad_0 or insn.x_pad_1:
            pads = (f" pad=(y {insn.y_pad_0},{insn.y_pad_1} x {insn.x_pad_0},"
                    f"{insn.x_pad_1})")
        return (f"{kind} {mem} sram={insn.sram_base} dram={insn.dram_base} "
                f"y={insn.y_size} x={insn.x_size} stride={insn.x_stride}{pads}{_flags(insn)}")
    if isinstance(insn, GemmInsn):
        head = "GEMM reset" if insn.reset_reg else "GEMM"
        return (f"{head} uop=[{insn.uop_bgn},{insn.uop_end}) iter=({insn.iter_out},"
                f"{insn.iter_in}) dst=({insn.dst_factor_out},{insn.dst_factor_in}) "
                f"src=({insn.src_factor_out},{insn.src_factor_in}) "
                f"wgt=({insn.wgt_factor_out},{insn.wgt_factor_in}){_flags(insn)}")
    if isinstance(insn, AluInsn):
        operand = f"imm={insn.imm}" if insn.use_imm else "acc"
        return (f"ALU {ALU_NAMES.get(insn.alu_opcode, insn.alu_opcode)} {operand} "
                f"uop=[{insn.uop_bgn},{insn.uop_end}) iter=({insn.iter_out},{insn.iter_in}) "
                f"dst=({insn.dst_factor_out},{insn.dst_factor_in}) "
                f"src=({insn.src_factor_out},{insn.src_factor_in}){_flags(insn)}")
    return f"FINISH{_flags(insn)}"


def disassemble(stream: bytes | list[Insn], config: Config | None = None) -> str:
    """A stream (bytes or decoded instructions) as text, one numbered line per instruction."""
    insns = decode_stream(stream, config) if isinstance(stream, (bytes, bytearray)) else stream
    return "\n".join(f"{i:5d}: {disassemble_one(insn)}" for i, insn in enumerate(insns))
