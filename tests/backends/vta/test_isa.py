"""VTA ISA: configuration, field layouts (hw_spec.h), encode/decode round trips, micro-ops."""

from __future__ import annotations

import pytest
from hypothesis import given
from vta_strategies import configs, instructions, uops

from backends.vta import Config, isa


def test_default_config_derived_values():
    c = Config()
    assert (c.BATCH, c.BLOCK_IN, c.BLOCK_OUT) == (1, 16, 16)
    assert (c.INP_WIDTH, c.WGT_WIDTH, c.ACC_WIDTH, c.OUT_WIDTH) == (8, 8, 32, 8)
    assert (c.INP_ELEM_BYTES, c.WGT_ELEM_BYTES, c.ACC_ELEM_BYTES, c.OUT_ELEM_BYTES) == \
        (16, 256, 64, 16)
    assert (c.INP_BUFF_DEPTH, c.WGT_BUFF_DEPTH, c.ACC_BUFF_DEPTH, c.UOP_BUFF_DEPTH) == \
        (2048, 1024, 2048, 8192)
    assert (c.INP_BUFF_SIZE, c.WGT_BUFF_SIZE, c.ACC_BUFF_SIZE) == (1 << 15, 1 << 18, 1 << 17)
    assert c.TARGET_NAME == "1x16_i8w8a32_15_15_18_17"
    assert (c.CLOCK_MHZ, c.BUS_WIDTH) == (100, 64)


@pytest.mark.parametrize("target,clock,bus", [("pynq", 100, 64), ("sim", 100, 64),
                                              ("ultra96", 333, 128), ("zcu104", 333, 128),
                                              ("de10nano", 100, 64)])
def test_boards(target, clock, bus):
    c = Config(TARGET=target)
    assert (c.CLOCK_MHZ, c.BUS_WIDTH) == (clock, bus)


@pytest.mark.parametrize("overrides", [
    {"LOG_BLOCK": 3},                       # micro-op of 12 + 12 + 12 bits
    {"TARGET": "vcu118"}, {"NOPE": 1}, {"LOG_BATCH": "0"}, {"LOG_ACC_WIDTH": 4},
    {"LOG_INP_BUFF_SIZE": 2},
])
def test_invalid_configs_raise_value_error(overrides):
    with pytest.raises(ValueError):
        Config(**overrides)


def test_eight_by_eight_core():
    c = Config(LOG_BLOCK=3, LOG_INP_BUFF_SIZE=14, LOG_WGT_BUFF_SIZE=16, LOG_ACC_BUFF_SIZE=16)
    assert (c.BLOCK_IN, c.BLOCK_OUT, c.LOG_ACC_BUFF_DEPTH, c.LOG_WGT_BUFF_DEPTH) == (8, 8, 11, 10)


def _mask(opcode, name, cfg=None):
    for n, pos, width, _ in isa.layout(opcode, cfg or Config()):
        if n == name:
            return ((1 << width) - 1) << pos
    raise KeyError(name)


def test_field_masks_match_hw_spec():
    # hw_spec.h's bit fields packed into two uint64 words (a field never crosses bit 64)
    assert _mask(isa.OP_LOAD, "memory_type") == 0x7 << 7
    assert _mask(isa.OP_LOAD, "sram_base") == 0xFFFF << 10
    assert _mask(isa.OP_LOAD, "dram_base") == 0xFFFFFFFF << 26
    assert _mask(isa.OP_LOAD, "y_size") == 0xFFFF << 64
    assert _mask(isa.OP_LOAD, "x_pad_1") == 0xF << 124
    assert _mask(isa.OP_GEMM, "uop_bgn") == 0x1FFF << 8
    assert _mask(isa.OP_GEMM, "uop_end") == 0x3FFF << 21
    assert _mask(isa.OP_GEMM, "iter_in") == 0x3FFF << 49
    assert _mask(isa.OP_GEMM, "dst_factor_out") == 0x7FF << 64
    assert _mask(isa.OP_GEMM, "wgt_factor_in") == 0x3FF << 118
    assert _mask(isa.OP_ALU, "alu_opcode") == 0x7 << 108
    assert _mask(isa.OP_ALU, "use_imm") == 1 << 111
    assert _mask(isa.OP_ALU, "imm") == 0xFFFF << 112
    fields = {n: (p, w) for n, p, w, _ in isa.uop_layout(Config())}
    assert fields == {"dst_idx": (0, 11), "src_idx": (11, 11), "wgt_idx": (22, 10)}


def test_field_widths_follow_the_config():
    small = Config(LOG_ACC_BUFF_SIZE=15, LOG_UOP_BUFF_SIZE=12)
    assert _mask(isa.OP_GEMM, "uop_bgn", small) == 0x3FF << 8      # 10 bits
    assert _mask(isa.OP_GEMM, "dst_factor_out", small) == 0x1FF << 64


def test_known_encoding():
    insn = isa.MemInsn(opcode=isa.OP_LOAD, memory_type=isa.MEM_INP, sram_base=3, dram_base=5,
                       y_size=2, x_size=7, x_stride=9, x_pad_0=1, push_next_dep=1)
    word = int.from_bytes(isa.encode(insn), "little")
    assert word == (0 | 1 << 6 | 2 << 7 | 3 << 10 | 5 << 26 | 2 << 64 | 7 << 80 | 9 << 96
                    | 1 << 120)
    alu = isa.AluInsn(alu_opcode=isa.ALU_SHR, use_imm=1, imm=-3)
    raw = isa.encode(alu)
    assert raw[14:16] == (-3 & 0xFFFF).to_bytes(2, "little")
    assert isa.decode(raw).imm == -3


@given(instructions())
def test_instruction_round_trip(insn):
    raw = isa.encode(insn)
    assert len(raw) == 16
    assert isa.decode(raw) == insn
    assert isa.encode(isa.decode(raw)) == raw


@given(configs().flatmap(lambda c: instructions(c).map(lambda i: (c, i))))
def test_instruction_round_trip_other_configs(pair):
    cfg, insn = pair
    assert isa.decode(isa.encode(insn, cfg), cfg) == insn


@given(uops())
def test_uop_round_trip(uop):
    raw = isa.encode_uop(uop)
    assert len(raw) == 4 and isa.decode_uop(raw) == uop


def test_out_of_range_fields_raise():
    with pytest.raises(ValueError, match="imm"):
        isa.encode(isa.AluInsn(imm=40000))
    with pytest.raises(ValueError, match="dst_idx"):
        isa.encode_uop(isa.Uop(dst_idx=2048))
    with pytest.raises(ValueError):
        isa.decode(bytes([7]) + bytes(15))       # opcode 7
    with pytest.raises(ValueError):
        isa.decode(bytes(15))


def test_disassembler():
    stream = isa.encode_stream([
        isa.MemInsn(opcode=isa.OP_LOAD, memory_type=isa.MEM_WGT, sram_base=0, dram_base=16,
                    y_size=1, x_size=4, x_stride=4, push_next_dep=1),
        isa.GemmInsn(pop_prev_dep=1, uop_end=4, iter_out=2, iter_in=3),
        isa.AluInsn(alu_opcode=isa.ALU_MAX, use_imm=1, imm=0, uop_end=1, iter_out=1,
                    iter_in=1),
        isa.MemInsn(opcode=isa.OP_STORE, memory_type=isa.MEM_OUT),
        isa.FinishInsn(),
    ])
    text = isa.disassemble(stream)
    lines = text.splitlines()
    assert len(lines) == 5
    assert "LOAD WGT" in lines[0] and "push_next" in lines[0]
    assert "GEMM" in lines[1] and "pop_prev" in lines[1]
    assert "ALU MAX imm=0" in lines[2]
    assert "NOP-STORE" in lines[3] and lines[4].endswith("FINISH")
