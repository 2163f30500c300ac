"""The VTA functional simulator: per-instruction semantics against numpy, schedules,
dependency tokens, deadlocks and the profiler counters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.vta import Config, Simulator, isa
from semantics.errors import RelayRuntimeError

CFG = Config()
PAGE = 4096


def put(sim, addr, array):
    raw = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
    sim.dram[addr:addr + raw.size] = raw


def get(sim, addr, dtype, shape):
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return sim.dram[addr:addr + n].view(dtype).reshape(shape).copy()


def load(mem, sram, dram, y, x, stride, pads=(0, 0, 0, 0), **flags):
    return isa.MemInsn(opcode=isa.OP_LOAD, memory_type=mem, sram_base=sram, dram_base=dram,
                       y_size=y, x_size=x, x_stride=stride, y_pad_0=pads[0], y_pad_1=pads[1],
                       x_pad_0=pads[2], x_pad_1=pads[3], **flags)


def store(sram, dram, y, x, stride, **flags):
    return isa.MemInsn(opcode=isa.OP_STORE, memory_type=isa.MEM_OUT, sram_base=sram,
                       dram_base=dram, y_size=y, x_size=x, x_stride=stride, **flags)


def uop_words(uops):
    return np.array([int.from_bytes(isa.encode_uop(u), "little") for u in uops], np.uint32)


def load_uops(sim, addr, uops, base=0):
    put(sim, addr, uop_words(uops))
    return load(isa.MEM_UOP, base, addr // 4, 1, len(uops), len(uops))


def alu(op, n, imm=None, src_off=0, **kw):
    return isa.AluInsn(alu_opcode=op, use_imm=int(imm is not None), imm=imm or 0, uop_bgn=0,
                       uop_end=1, iter_out=1, iter_in=n, dst_factor_in=1,
                       src_factor_in=1, **kw)


def acc_roundtrip(values, ops):
    """Load int32 ACC rows, apply ALU instructions (micro-op 0: dst 0, src n-1), store."""
    sim = Simulator()
    n = values.shape[0]
    put(sim, PAGE, values.astype(np.int32))
    stream = [load(isa.MEM_ACC, 0, PAGE // 64, 1, n, n),
              load_uops(sim, 2 * PAGE, [isa.Uop(0, n - 1, 0)])]
    stream += ops
    stream += [store(0, (3 * PAGE) // 16, 1, n, n), isa.FinishInsn()]
    counters = sim.run(isa.encode_stream(stream))
    return sim, get(sim, 3 * PAGE, np.int8, (n, 16)), counters


def test_store_truncates_to_low_eight_bits():
    vals = np.array([127, 128, 200, 256, -129, -128, 1 << 20, -1] + [0] * 8, np.int32)
    _, out, _ = acc_roundtrip(vals[None, :], [alu(isa.ALU_SHR, 1, imm=0)])
    assert out[0].tolist() == [127, -128, -56, 0, 127, -128, 0, -1] + [0] * 8


int32s = st.integers(-(1 << 31), (1 << 31) - 1)


@given(st.lists(int32s, min_size=32, max_size=32), st.sampled_from(sorted(isa.ALU_NAMES)),
       st.one_of(st.none(), st.integers(-(1 << 15), (1 << 15) - 1)))
def test_alu_ops_match_numpy(values, op, imm):
    vals = np.array(values, np.int64).reshape(2, 16)
    if op == isa.ALU_SHR:
        if imm is not None:
            imm = max(-31, min(31, imm))
        vals[1] = np.clip(vals[1], -31, 31)
    # dst row 0, src row 1 (row 1 is left as loaded)
    sim, _, counters = acc_roundtrip(vals, [alu(op, 1, imm=imm, src_off=0)])
    a = vals[0]
    b = np.full(16, imm) if imm is not None else vals[1]
    expect = {isa.ALU_MIN: np.minimum(a, b), isa.ALU_MAX: np.maximum(a, b),
              isa.ALU_ADD: a + b, isa.ALU_MUL: a * b,
              isa.ALU_SHR: np.where(b >= 0, a >> np.maximum(b, 0),
                                    a << np.maximum(-b, 0))}[op]
    expect = ((expect + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
    assert np.array_equal(sim.acc[0, 0], expect)
    assert counters["alu_counter"] == 1


def test_shr_edge_cases():
    vals = np.array([[-7, 7, -1, 1 << 30, -(1 << 31)] + [0] * 11], np.int32)
    sim, _, _ = acc_roundtrip(vals, [alu(isa.ALU_SHR, 1, imm=1)])
    assert sim.acc[0, 0, :5].tolist() == [-4, 3, -1, 1 << 29, -(1 << 30)]
    sim, _, _ = acc_roundtrip(vals, [alu(isa.ALU_SHR, 1, imm=-3)])
    assert sim.acc[0, 0, :5].tolist() == [-56, 56, -8, 0, 0]
    with pytest.raises(RelayRuntimeError, match="shift"):
        acc_roundtrip(vals, [alu(isa.ALU_SHR, 1, imm=32)])


def test_alu_overlapping_runs_in_order():
    # dst i and src i+1 overlap: in-place sequential semantics (row i += row i+1, in order)
    vals = np.arange(4 * 16, dtype=np.int32).reshape(4, 16)
    sim = Simulator()
    put(sim, PAGE, vals)
    stream = [load(isa.MEM_ACC, 0, PAGE // 64, 1, 4, 4),
              load_uops(sim, 2 * PAGE, [isa.Uop(0, 1, 0)]),
              isa.AluInsn(alu_opcode=isa.ALU_ADD, uop_end=1, iter_out=1, iter_in=3,
                          dst_factor_in=1, src_factor_in=1), isa.FinishInsn()]
    sim.run(isa.encode_stream(stream))
    expect = vals.astype(np.int64).copy()
    for i in range(3):
        expect[i] += expect[i + 1]
    assert np.array_equal(sim.acc[:4, 0], expect)


@given(st.integers(1, 4), st.integers(1, 5), st.integers(1, 7),
       st.tuples(*[st.integers(0, 3)] * 4), st.integers(0, 2**31 - 1))
def test_padded_strided_load(y, x, extra, pads, seed):
    rng = np.random.default_rng(seed)
    stride = x + extra
    src = rng.integers(-128, 128, size=(y * stride, 16), dtype=np.int8)
    sim = Simulator()
    put(sim, PAGE, src)
    sim.run([load(isa.MEM_INP, 5, PAGE // 16, y, x, stride, pads), isa.FinishInsn()])
    grid = np.zeros((pads[0] + y + pads[1], pads[2] + x + pads[3], 16), np.int8)
    grid[pads[0]:pads[0] + y, pads[2]:pads[2] + x] = src.reshape(y, stride, 16)[:, :x]
    got = sim.inp[5:5 + grid.shape[0] * grid.shape[1], 0]
    assert np.array_equal(got, grid.reshape(-1, 16))


@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 6), st.integers(0, 2**31 - 1),
       st.booleans())
def test_gemm_matches_numpy(iter_out, iter_in, nuops, seed, extreme):
    rng = np.random.default_rng(seed)
    if extreme:
        inp = np.full((64, 16), -128, np.int8)
        wgt = np.full((64, 16, 16), -128, np.int8)
    else:
        inp = rng.integers(-128, 128, size=(64, 16), dtype=np.int8)
        wgt = rng.integers(-128, 128, size=(64, 16, 16), dtype=np.int8)
    acc0 = rng.integers(-(1 << 31), 1 << 31, size=(32, 16), dtype=np.int64).astype(np.int32)
    uops = [isa.Uop(int(rng.integers(0, 8)), int(rng.integers(0, 8)), int(rng.integers(0, 8)))
            for _ in range(nuops)]
    f = [int(v) for v in rng.integers(0, 4, size=6)]
    sim = Simulator()
    put(sim, PAGE, inp)
    put(sim, 2 * PAGE, wgt)
    put(sim, 8 * PAGE, acc0)
    stream = [load(isa.MEM_INP, 0, PAGE // 16, 1, 64, 64),
              load(isa.MEM_WGT, 0, 2 * PAGE // 256, 1, 64, 64, push_next_dep=1),
              load(isa.MEM_ACC, 0, 8 * PAGE // 64, 1, 32, 32),
              load_uops(sim, 32 * PAGE, uops),
              isa.GemmInsn(pop_prev_dep=1, uop_end=nuops, iter_out=iter_out, iter_in=iter_in,
                           dst_factor_out=f[0], dst_factor_in=f[1], src_factor_out=f[2],
                           src_factor_in=f[3], wgt_factor_out=f[4], wgt_factor_in=f[5]),
              isa.FinishInsn()]
    counters = sim.run(isa.encode_stream(stream))
    expect = acc0.astype(np.int64)
    for yy in range(iter_out):
        for xx in range(iter_in):
            for u in uops:
                d = u.dst_idx + yy * f[0] + xx * f[1]
                s = u.src_idx + yy * f[2] + xx * f[3]
                w = u.wgt_idx + yy * f[4] + xx * f[5]
                expect[d] += wgt[w].astype(np.int64) @ inp[s].astype(np.int64)
    expect = ((expect + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
    assert np.array_equal(sim.acc[:32, 0], expect)
    assert counters["gemm_counter"] == iter_out * iter_in * nuops


def test_gemm_reset_and_wrapping_accumulation():
    sim = Simulator()
    put(sim, PAGE, np.full((1, 16), -128, np.int8))
    put(sim, 2 * PAGE, np.full((1, 16, 16), -128, np.int8))
    stream = [load(isa.MEM_INP, 0, PAGE // 16, 1, 1, 1),
              load(isa.MEM_WGT, 0, 2 * PAGE // 256, 1, 1, 1, push_next_dep=1),
              load_uops(sim, 4 * PAGE, [isa.Uop(0, 0, 0)]),
              isa.GemmInsn(pop_prev_dep=1, reset_reg=1, uop_end=1, iter_out=1, iter_in=1),
              isa.GemmInsn(uop_end=1, iter_out=100, iter_in=100), isa.FinishInsn()]
    counters = sim.run(isa.encode_stream(stream))
    total = 10_000 * 262144
    assert sim.acc[0, 0, 0] == ((total + (1 << 31)) % (1 << 32)) - (1 << 31)
    assert counters["gemm_counter"] == 10_000            # the reset does not count


def test_deadlock_and_left_tokens():
    with pytest.raises(RelayRuntimeError, match="deadlock"):
        Simulator().run([isa.GemmInsn(pop_prev_dep=1), isa.FinishInsn()])
    with pytest.raises(RelayRuntimeError, match="deadlock: token"):
        Simulator().run([isa.MemInsn(opcode=isa.OP_LOAD, push_next_dep=1), isa.FinishInsn()])
    with pytest.raises(RelayRuntimeError, match="FINISH"):
        Simulator().run([isa.GemmInsn()])
    with pytest.raises(RelayRuntimeError, match="cannot pop"):
        Simulator().run([isa.MemInsn(opcode=isa.OP_LOAD, pop_prev_dep=1), isa.FinishInsn()])
    with pytest.raises(RelayRuntimeError, match="malformed"):
        Simulator().run(b"\x07" + bytes(15))


def _pipeline(sim, drop=False):
    """Two tiles sharing one INP slot: load(t) / compute(t) with the WAR token g2l."""
    put(sim, PAGE, np.arange(32, dtype=np.int8).reshape(2, 16))
    put(sim, 2 * PAGE, np.eye(16, dtype=np.int8)[None])
    stream = [load(isa.MEM_WGT, 0, 2 * PAGE // 256, 1, 1, 1),
              load(isa.MEM_INP, 0, PAGE // 16, 1, 1, 1, push_next_dep=1),
              load_uops(sim, 4 * PAGE, [isa.Uop(0, 0, 0), isa.Uop(1, 0, 0)]),
              isa.GemmInsn(pop_prev_dep=1, reset_reg=1, uop_end=2, iter_out=1, iter_in=1),
              isa.GemmInsn(uop_end=1, iter_out=1, iter_in=1, push_prev_dep=int(not drop)),
              load(isa.MEM_INP, 0, PAGE // 16 + 1, 1, 1, 1, pop_next_dep=int(not drop),
                   push_next_dep=1),
              isa.GemmInsn(pop_prev_dep=1, uop_bgn=1, uop_end=2, iter_out=1, iter_in=1,
                           push_next_dep=1),
              alu(isa.ALU_SHR, 2, imm=0),
              store(0, 8 * PAGE // 16, 1, 2, 2, pop_prev_dep=1, push_prev_dep=1),
              load(isa.MEM_UOP, 0, 0, 0, 0, 0, pop_next_dep=1),     # compute NOP
              isa.FinishInsn()]
    return isa.encode_stream(stream)


def test_serial_and_random_schedules_agree():
    outs = set()
    for schedule, seed in [("serial", 0)] + [("random", s) for s in range(10)]:
        sim = Simulator()
        sim.run(_pipeline(sim), schedule=schedule, seed=seed)
        outs.add(get(sim, 8 * PAGE, np.int8, (2, 16)).tobytes())
    assert len(outs) == 1
    assert np.array_equal(np.frombuffer(outs.pop(), np.int8).reshape(2, 16),
                          np.arange(32, dtype=np.int8).reshape(2, 16))


def test_dropped_dependency_shows_under_random_schedule():
    sim = Simulator()
    sim.run(_pipeline(sim, drop=True), schedule="serial")
    good = get(sim, 8 * PAGE, np.int8, (2, 16))
    wrong = 0
    for seed in range(20):
        sim = Simulator()
        sim.run(_pipeline(sim, drop=True), schedule="random", seed=seed)
        wrong += not np.array_equal(get(sim, 8 * PAGE, np.int8, (2, 16)), good)
    assert wrong > 0


def test_counters_are_sums_over_instructions():
    sim = Simulator()
    stream = _pipeline(sim)
    counters = sim.run(stream)
    insns = isa.decode_stream(stream)
    loads = [i for i in insns if isinstance(i, isa.MemInsn) and i.opcode == isa.OP_LOAD]
    elem = {isa.MEM_INP: 16, isa.MEM_WGT: 256, isa.MEM_ACC: 64, isa.MEM_UOP: 4}
    for mem, name in [(isa.MEM_INP, "inp"), (isa.MEM_WGT, "wgt"), (isa.MEM_UOP, "uop"),
                      (isa.MEM_ACC, "acc")]:
        assert counters[f"{name}_load_nbytes"] == sum(
            i.x_size * i.y_size * elem[mem] for i in loads if i.memory_type == mem)
    gemms = [i for i in insns if isinstance(i, isa.GemmInsn) and not i.reset_reg]
    assert counters["gemm_counter"] == sum(i.iter_out * i.iter_in * (i.uop_end - i.uop_bgn)
                                           for i in gemms)
    assert counters["out_store_nbytes"] == 2 * 16
    assert counters["cycles"] >= counters["compute_cycles"] > 0


@pytest.mark.parametrize("chunk", [1, 3, 7, 50])
def test_gemm_chunking_does_not_change_results(chunk, monkeypatch):
    """The GEMM works in chunks of micro-op executions; any chunk size gives fsim's sums."""
    import backends.vta.simulator as simulator

    rng = np.random.default_rng(chunk)
    inp = rng.integers(-128, 128, size=(16, 16), dtype=np.int8)
    wgt = rng.integers(-128, 128, size=(8, 16, 16), dtype=np.int8)
    uops = [isa.Uop(int(rng.integers(0, 4)), int(rng.integers(0, 15)), int(rng.integers(0, 8)))
            for _ in range(9)]
    results = []
    for size in (chunk, 1 << 15):
        monkeypatch.setattr(simulator, "_GEMM_CHUNK", size)
        sim = Simulator()
        put(sim, PAGE, inp)
        put(sim, 2 * PAGE, wgt)
        sim.run([load(isa.MEM_INP, 0, PAGE // 16, 1, 16, 16),
                 load(isa.MEM_WGT, 0, 2 * PAGE // 256, 1, 8, 8, push_next_dep=1),
                 load_uops(sim, 4 * PAGE, uops),
                 isa.GemmInsn(pop_prev_dep=1, reset_reg=1, uop_end=9, iter_out=1, iter_in=1),
                 isa.GemmInsn(uop_end=9, iter_out=2, iter_in=3, dst_factor_in=1,
                              src_factor_out=1, wgt_factor_in=0),
                 isa.FinishInsn()])
        results.append(sim.acc[:8].copy())
    assert np.array_equal(results[0], results[1])
    expect = np.zeros((8, 16), np.int64)
    for y in range(2):
        for x in range(3):
            for u in uops:
                expect[u.dst_idx + x] += wgt[u.wgt_idx].astype(np.int64) @ \
                    inp[u.src_idx + y].astype(np.int64)
    assert np.array_equal(results[0][:, 0], expect.astype(np.int32))


def _hazard_stream(sim, uops, iter_in=1, dst_factor_in=0):
    put(sim, PAGE, np.ones((8, 16), np.int8))
    put(sim, 2 * PAGE, np.ones((8, 16, 16), np.int8))
    return isa.encode_stream([
        load(isa.MEM_INP, 0, PAGE // 16, 1, 8, 8),
        load(isa.MEM_WGT, 0, 2 * PAGE // 256, 1, 8, 8, push_next_dep=1),
        load_uops(sim, 4 * PAGE, uops),
        isa.GemmInsn(pop_prev_dep=1, uop_end=len(uops), iter_out=1, iter_in=iter_in,
                     dst_factor_in=dst_factor_in),
        isa.FinishInsn()])


@pytest.mark.parametrize("dsts, iter_in, factor, hazard", [
    ([0, 1, 2], 1, 0, False),        # three distinct rows
    ([0, 1, 2], 4, 0, False),        # repeating with period 3: two others in between
    ([0, 1, 0], 1, 0, True),         # row 0 again after one other
    ([0, 0], 1, 0, True),            # twice in a row
    ([0, 1], 3, 0, True),            # period 2 across iterations
    ([0], 5, 1, False),              # one micro-op, the dst factor moves the row
    ([0], 2, 0, True),               # one micro-op, the same row every iteration
])
def test_strict_mode_raises_on_the_gemm_hazard(dsts, iter_in, factor, hazard):
    """fsim computes these streams the same either way; strict mode raises where the
    hardware's GEMM pipeline would read an ACC row one of the two previous micro-ops is
    still writing."""
    uops = [isa.Uop(d, i, i) for i, d in enumerate(dsts)]
    lax = Simulator()
    lax.run(_hazard_stream(lax, uops, iter_in, factor))
    strict = Simulator(strict=True)
    stream = _hazard_stream(strict, uops, iter_in, factor)
    if hazard:
        with pytest.raises(RelayRuntimeError, match="hazard"):
            strict.run(stream)
    else:
        strict.run(stream)
        assert np.array_equal(strict.acc, lax.acc)
