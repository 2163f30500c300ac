"""Hypothesis strategies for the VTA backend (issue 30): instructions and micro-ops whose every
field is in range for a configuration, and small VTA configurations."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from backends.vta import isa
from backends.vta.config import Config

__all__ = ["instructions", "uops", "configs"]


def _fields(opcode: int, config: Config) -> st.SearchStrategy[dict[str, int]]:
    parts: dict[str, Any] = {}
    for name, _pos, width, signed in isa.layout(opcode, config):
        if name == "opcode":
            continue
        if signed:
            parts[name] = st.integers(-(1 << (width - 1)), (1 << (width - 1)) - 1)
        elif name == "memory_type":
            parts[name] = st.sampled_from(sorted(isa.MEM_NAMES))
        elif name == "alu_opcode":
            parts[name] = st.sampled_from(sorted(isa.ALU_NAMES))
        else:
            parts[name] = st.integers(0, (1 << width) - 1)
    return st.fixed_dictionaries(parts)


def instructions(config: Config | None = None) -> st.SearchStrategy[isa.Insn]:
    """Any instruction (LOAD, STORE, GEMM, ALU, FINISH) with in-range fields."""
    cfg = config or Config()
    return st.one_of(
        _fields(isa.OP_LOAD, cfg).map(lambda f: isa.MemInsn(opcode=isa.OP_LOAD, **f)),
        _fields(isa.OP_STORE, cfg).map(lambda f: isa.MemInsn(opcode=isa.OP_STORE, **f)),
        _fields(isa.OP_GEMM, cfg).map(lambda f: isa.GemmInsn(**f)),
        _fields(isa.OP_ALU, cfg).map(lambda f: isa.AluInsn(**f)),
        _fields(isa.OP_FINISH, cfg).map(lambda f: isa.FinishInsn(**f)),
    )


def uops(config: Config | None = None) -> st.SearchStrategy[isa.Uop]:
    """Any micro-op with in-range indices."""
    cfg = config or Config()
    parts = {name: st.integers(0, (1 << width) - 1)
             for name, _pos, width, _signed in isa.uop_layout(cfg)}
    return st.fixed_dictionaries(parts).map(lambda f: isa.Uop(**f))


def configs() -> st.SearchStrategy[Config]:
    """Valid configurations: 16x16 and 8x8 cores, batch 1 or 2, a few buffer sizes."""
    def make(block: int, batch: int, inp: int, wgt: int, acc: int) -> Config | None:
        try:
            return Config(LOG_BLOCK=block, LOG_BATCH=batch, LOG_INP_BUFF_SIZE=inp,
                          LOG_WGT_BUFF_SIZE=wgt, LOG_ACC_BUFF_SIZE=acc)
        except ValueError:
            return None
    made = st.builds(make, st.sampled_from([3, 4]), st.sampled_from([0, 1]),
                     st.integers(12, 15), st.integers(14, 18), st.integers(13, 17))
    return made.filter(lambda c: c is not None).map(lambda c: c or Config())
