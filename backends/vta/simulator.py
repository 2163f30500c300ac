"""A functional VTA simulator, bit-exact with apache/tvm-vta's fsim, and its cycle model.

Semantics (``src/sim/sim_driver.cc``, ``sim_tlpp.cc``; docs/vta.md has the user's view):

* **Modules.** LOAD of INP or WGT runs on the *load* module, STORE on the *store* module,
  everything else (GEMM, ALU, FINISH, LOAD of UOP/ACC/ACC_8BIT) on *compute*.  Each module runs
  its instructions in stream order.  Four token queues connect them: ``l2g`` (load -> compute),
  ``g2l`` (compute -> load), ``g2s`` (compute -> store), ``s2g`` (store -> compute).  An
  instruction pops its tokens before it runs (it waits until they are there) and pushes after.
* **Schedules.** ``serial`` runs, among the modules that can progress, the instruction earliest
  in the stream; ``random`` picks one of them with a seeded generator, one instruction at a
  time, so a race a missing dependency flag leaves shows up as a different result.  When no
  module can progress with instructions pending, or a token is left at the end, ``run``
  raises ``RelayRuntimeError("deadlock ...")`` (fsim would spin forever).  FINISH must be the
  last instruction to run.
* **LOAD** writes ``y_pad_0`` zero rows, then per row ``x_pad_0`` zeros, ``x_size`` elements
  from DRAM element ``dram_base + y * x_stride`` (``dram_base`` counts elements of the memory
  type), ``x_pad_1`` zeros, then ``y_pad_1`` zero rows, densely from ``sram_base``.
  ``x_size == 0`` is a no-op (its flags still count).  ACC_8BIT sign-extends int8 to int32.
* **GEMM** ``acc[dst] += inp[src] . wgt[w]^T`` over ``iter_out x iter_in x uops`` with the
  affine factors, wrapping at 32 bits; ``reset_reg`` zeroes ``acc[dst]`` instead.
* **ALU** ``acc[dst] = f(acc[dst], imm | acc[src])`` in place, one micro-op after another:
  MIN, MAX, ADD (wrapping), SHR (arithmetic; a negative amount shifts left, wrapping), MUL.
  A shift of 32 or more either way is undefined in C; here it is a ``RelayRuntimeError``.
* **STORE** writes the low 8 bits of ACC element ``sram_base + y*x_size + x`` to OUT element
  ``dram_base + y*x_stride + x`` (two's-complement truncation, not saturation).
* **Hazards** (``strict=True`` only; fsim does not check them): the hardware's GEMM pipeline
  reads and writes an ACC row in flight, so a GEMM micro-op must not write the row either of
  the two micro-ops executed just before it wrote (TVM's runtime asserts this for each
  micro-op kernel, ``UopKernel::VerifyDep``; the HLS core declares no inter-iteration
  dependence on ``acc_mem``).  Strict mode checks the whole executed sequence of each GEMM
  instruction (micro-op list x ``iter_out`` x ``iter_in``, resets included) and raises
  ``RelayRuntimeError("... hazard ...")``.
* **Counters** as fsim's profiler: ``*_load_nbytes`` add ``x_size*y_size*elem_bytes`` (padding
  is not counted), ``out_store_nbytes``, ``gemm_counter`` (resets excluded), ``alu_counter``.

Vectorized: GEMM gathers the micro-op indices of a whole instruction with numpy, multiplies in
float32 (every int8 dot product of a block is exact there) and sums per ACC row in int64; an
ALU instruction whose destinations are distinct and do not overlap its sources runs as one
numpy expression, others micro-op by micro-op.

**Cycle model** (:func:`cycle_model`, the ``cycles`` counter).  Each module executes its
instructions in order; an instruction starts when its module is free and the tokens it pops
were pushed (the k-th pop of a queue matches its k-th push); a DMA on the shared data port
(LOAD INP/WGT/ACC, STORE) also waits for the port.  Durations, in cycles:

* GEMM: ``INSN_OVERHEAD + uops`` (one micro-op per cycle; a reset likewise);
* ALU: ``INSN_OVERHEAD + 2 * uops`` (one register-file read per cycle, II = 2);
* LOAD/STORE: ``INSN_OVERHEAD + rows * DMA_ROW_OVERHEAD + ceil(bytes / (BUS_WIDTH/8))`` on the
  data port, plus one cycle per padding element written; a UOP load uses its own port;
* a NOP (``x_size == 0``) and FINISH: ``INSN_OVERHEAD``.

``INSN_OVERHEAD = 4`` and ``DMA_ROW_OVERHEAD = 2`` are assumptions (nothing here calibrates
them against tsim or a board).  The list scheduling starts, among the three modules' next
instructions, the one that can start earliest, so the estimate does not depend on the
functional schedule.
"""

from __future__ import annotations

import math
import random as _random
from collections import deque
from typing import Any

import numpy as np

from backends.vta import isa
from backends.vta.config import Config
from semantics.errors import RelayRuntimeError

__all__ = ["Simulator", "cycle_model", "module_of", "COUNTERS", "INSN_OVERHEAD",
           "DMA_ROW_OVERHEAD"]

COUNTERS = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes",
            "out_store_nbytes", "gemm_counter", "alu_counter")

INSN_OVERHEAD = 4
DMA_ROW_OVERHEAD = 2
GEMM_CYCLES_PER_UOP = 1
ALU_CYCLES_PER_UOP = 2

LOAD, COMPUTE, STORE = "load", "compute", "store"
_MODULES = (LOAD, COMPUTE, STORE)

# (pop_prev, pop_next, push_prev, push_next) -> queue name, per module; None = must be 0.
_QUEUES: dict[str, tuple[str | None, str | None, str | None, str | None]] = {
    LOAD: (None, "g2l", None, "l2g"),
    COMPUTE: ("l2g", "s2g", "g2l", "g2s"),
    STORE: ("g2s", None, "s2g", None),
}

_GEMM_CHUNK = 1 << 15


def module_of(insn: isa.Insn) -> str:
    """The module that runs an instruction (fsim's ``GetCoreType``)."""
    if isinstance(insn, isa.MemInsn):
        if insn.opcode == isa.OP_STORE:
            return STORE
        if insn.memory_type in (isa.MEM_INP, isa.MEM_WGT):
            return LOAD
    return COMPUTE


def _pops(module: str, insn: isa.Insn) -> list[str]:
    qs = _QUEUES[module]
    out = []
    for flag, q in ((insn.pop_prev_dep, qs[0]), (insn.pop_next_dep, qs[1])):
        if flag:
            if q is None:
                raise RelayRuntimeError(f"malformed VTA stream: a {module} instruction cannot "
                                        f"pop from that side ({isa.disassemble_one(insn)})")
            out.append(q)
    return out


def _pushes(module: str, insn: isa.Insn) -> list[str]:
    qs = _QUEUES[module]
    out = []
    for flag, q in ((insn.push_prev_dep, qs[2]), (insn.push_next_dep, qs[3])):
        if flag:
            if q is None:
                raise RelayRuntimeError(f"malformed VTA stream: a {module} instruction cannot "
                                        f"push to that side ({isa.disassemble_one(insn)})")
            out.append(q)
    return out


def _decode_all(insns: Any, cfg: Config) -> list[isa.Insn]:
    if isinstance(insns, (bytes, bytearray, memoryview)):
        try:
            return isa.decode_stream(bytes(insns), cfg)
        except ValueError as exc:
            raise RelayRuntimeError(f"malformed VTA stream: {exc}") from None
    return list(insns)


class Simulator:
    """The simulated accelerator: DRAM, the four SRAMs, the token queues, the profiler.

    Attributes:
        config: the :class:`Config`.
        dram: the simulated DRAM, a writable ``uint8`` numpy array (address = index).
        inp, wgt, acc, uop: the on-chip buffers (``int8[depth, BATCH, BLOCK_IN]``,
            ``int8[depth, BLOCK_OUT, BLOCK_IN]``, ``int32[depth, BATCH, BLOCK_OUT]``,
            ``uint32[depth]``).
    """

    def __init__(self, config: Config | None = None, dram_bytes: int = 64 << 20,
                 strict: bool = False):
        cfg = config or Config()
        self.config = cfg
        self.strict = strict
        self.dram = np.zeros(max(int(dram_bytes), 1 << 20), dtype=np.uint8)
        self.inp = np.zeros((cfg.INP_BUFF_DEPTH, cfg.BATCH, cfg.BLOCK_IN), np.int8)
        self.wgt = np.zeros((cfg.WGT_BUFF_DEPTH, cfg.BLOCK_OUT, cfg.BLOCK_IN), np.int8)
        self.acc = np.zeros((cfg.ACC_BUFF_DEPTH, cfg.BATCH, cfg.BLOCK_OUT), np.int32)
        self.uop = np.zeros(cfg.UOP_BUFF_DEPTH, np.uint32)
        (_, _, dst_w, _), (_, src_pos, src_w, _), (_, wgt_pos, wgt_w, _) = isa.uop_layout(cfg)
        self._uop_fields = (dst_w, src_pos, src_w, wgt_pos, wgt_w)

    # -- running a stream ------------------------------------------------------------------
    def run(self, insns: Any, schedule: str = "serial", seed: int = 0) -> dict[str, int]:
        """Run an instruction stream (bytes, 16 per instruction, or decoded instructions).

        Returns:
            The counters of this run (``COUNTERS`` plus ``cycles`` and the modules' busy
            cycles ``load_cycles``, ``compute_cycles``, ``store_cycles``).

        Raises:
            RelayRuntimeError: a deadlock, a token left at the end, a stream not ending with
                FINISH, an index out of range, or a malformed instruction.
        """
        if schedule not in ("serial", "random"):
            raise RelayRuntimeError(f"unknown VTA schedule {schedule!r} (serial or random)")
        cfg = self.config
        stream = _decode_all(insns, cfg)
        if not stream or not isinstance(stream[-1], isa.FinishInsn):
            raise RelayRuntimeError("malformed VTA stream: it must end with FINISH")
        queues: dict[str, deque[tuple[int, isa.Insn]]] = {m: deque() for m in _MODULES}
        for i, insn in enumerate(stream):
            queues[module_of(insn)].append((i, insn))
        tokens = {"l2g": 0, "g2l": 0, "g2s": 0, "s2g": 0}
        counters = dict.fromkeys(COUNTERS, 0)
        rng = _random.Random(seed)
        finished = False
        while any(queues.values()):
            if finished:
                left = sum(len(q) for q in queues.values())
                raise RelayRuntimeError(f"deadlock: FINISH ran while {left} instruction(s) "
                                        f"were still pending (a missing dependency)")
            ready = []
            for m in _MODULES:
                if queues[m]:
                    idx, insn = queues[m][0]
                    need = _pops(m, insn)
                    if all(tokens[q] >= need.count(q) for q in need):
                        ready.append((idx, m))
            if not ready:
                waits = []
                for m in _MODULES:
                    if queues[m]:
                        idx, insn = queues[m][0]
                        waits.append(f"{m} waits at #{idx} ({isa.disassemble_one(insn)}) "
                                     f"for {', '.join(_pops(m, insn))}")
                raise RelayRuntimeError("deadlock: no module can progress: " + "; ".join(waits))
            if schedule == "serial":
                _, module = min(ready)
            else:
                _, module = ready[rng.randrange(len(ready))]
            idx, insn = queues[module].popleft()
            for q in _pops(module, insn):
                tokens[q] -= 1
            self._execute(insn, idx, counters)
            for q in _pushes(module, insn):
                tokens[q] += 1
            if isinstance(insn, isa.FinishInsn):
                finished = True
        leftover = {q: n for q, n in tokens.items() if n}
        if leftover:
            raise RelayRuntimeError("deadlock: token(s) left in the dependency queues at the "
                                    "end: " + ", ".join(f"{q}={n}"
                                                        for q, n in leftover.items()))
        counters.update(cycle_model(stream, cfg))
        return counters

    # -- instructions ----------------------------------------------------------------------
    def _execute(self, insn: isa.Insn, idx: int, counters: dict[str, int]) -> None:
        if isinstance(insn, isa.MemInsn):
            if insn.opcode == isa.OP_LOAD:
                self._load(insn, idx, counters)
            else:
                self._store(insn, idx, counters)
        elif isinstance(insn, isa.GemmInsn):
            self._gemm(insn, idx, counters)
        elif isinstance(insn, isa.AluInsn):
            self._alu(insn, idx, counters)

    def _fail(self, idx: int, insn: isa.Insn, why: str) -> RelayRuntimeError:
        return RelayRuntimeError(f"VTA instruction #{idx} ({isa.disassemble_one(insn)}): {why}")

    def _dram_elements(self, insn: isa.MemInsn, idx: int, elem_bytes: int) -> np.ndarray:
        """The DRAM elements a transfer touches, as an index array ``[y_size, x_size]``."""
        rows = np.arange(insn.y_size, dtype=np.int64)[:, None] * insn.x_stride
        index = insn.dram_base + rows + np.arange(insn.x_size, dtype=np.int64)[None, :]
        if insn.dram_base == 0:
            raise self._fail(idx, insn, "DRAM address 0 is invalid")
        if index.size and (int(index.max()) + 1) * elem_bytes > self.dram.size:
            raise self._fail(idx, insn, f"DRAM access beyond {self.dram.size} bytes")
        return index

    def _load(self, insn: isa.MemInsn, idx: int, counters: dict[str, int]) -> None:
        if insn.x_size == 0:
            return
        cfg = self.config
        mem = insn.memory_type
        targets: dict[int, tuple[np.ndarray, str, np.dtype, int]] = {
            isa.MEM_INP: (self.inp, "inp_load_nbytes", np.dtype(np.int8), cfg.INP_ELEM_BYTES),
            isa.MEM_WGT: (self.wgt, "wgt_load_nbytes", np.dtype(np.int8), cfg.WGT_ELEM_BYTES),
            isa.MEM_ACC: (self.acc, "acc_load_nbytes", np.dtype("<i4"), cfg.ACC_ELEM_BYTES),
            isa.MEM_UOP: (self.uop, "uop_load_nbytes", np.dtype("<u4"), 4),
            isa.MEM_ACC_8BIT: (self.acc, "acc_load_nbytes", np.dtype(np.int8),
                               cfg.BATCH * cfg.BLOCK_OUT),
        }
        if mem not in targets:
            raise self._fail(idx, insn, "LOAD supports UOP, WGT, INP, ACC and ACC_8BIT")
        sram, counter, dtype, elem_bytes = targets[mem]
        xtotal = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        ytotal = insn.y_pad_0 + insn.y_size + insn.y_pad_1
        if insn.sram_base + xtotal * ytotal > sram.shape[0]:
            raise self._fail(idx, insn, f"SRAM overflow: {insn.sram_base} + {xtotal}x{ytotal} "
                                        f"elements > depth {sram.shape[0]}")
        index = self._dram_elements(insn, idx, elem_bytes)
        counters[counter] += insn.x_size * insn.y_size * elem_bytes
        per_elem = elem_bytes // dtype.itemsize
        usable = (self.dram.size // elem_bytes) * elem_bytes
        view = self.dram[:usable].view(dtype).reshape(-1, per_elem)
        data = view[index]                                  # [y, x, per_elem]
        block = np.zeros((ytotal, xtotal, per_elem), dtype=sram.dtype)
        block[insn.y_pad_0:insn.y_pad_0 + insn.y_size,
              insn.x_pad_0:insn.x_pad_0 + insn.x_size] = data.astype(sram.dtype)
        flat = sram.reshape(sram.shape[0], -1)
        flat[insn.sram_base:insn.sram_base + xtotal * ytotal] = block.reshape(xtotal * ytotal, -1)

    def _store(self, insn: isa.MemInsn, idx: int, counters: dict[str, int]) -> None:
        if insn.x_size == 0:
            return
        cfg = self.config
        if insn.memory_type != isa.MEM_OUT:
            raise self._fail(idx, insn, "STORE supports only memory type OUT")
        if insn.y_pad_0 or insn.y_pad_1 or insn.x_pad_0 or insn.x_pad_1:
            raise self._fail(idx, insn, "STORE takes no padding")
        n = insn.x_size * insn.y_size
        if insn.sram_base + n > self.acc.shape[0]:
            raise self._fail(idx, insn, "ACC index out of range")
        index = self._dram_elements(insn, idx, cfg.OUT_ELEM_BYTES)
        counters["out_store_nbytes"] += n * cfg.OUT_ELEM_BYTES
        values = self.acc[insn.sram_base:insn.sram_base + n].reshape(n, -1)
        usable = (self.dram.size // cfg.OUT_ELEM_BYTES) * cfg.OUT_ELEM_BYTES
        view = self.dram[:usable].view(np.int8).reshape(-1, cfg.OUT_ELEM_BYTES)
        view[index.reshape(-1)] = values.astype(np.int8)   # C's truncation to the low 8 bits

    def _indices(self, insn: isa.GemmInsn | isa.AluInsn, idx: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """dst, src and wgt indices of every micro-op execution, in execution order."""
        if insn.uop_end > self.uop.shape[0] or insn.uop_bgn > insn.uop_end:
            raise self._fail(idx, insn, "micro-op range out of the UOP buffer")
        dst_w, src_pos, src_w, wgt_pos, wgt_w = self._uop_fields
        uops = self.uop[insn.uop_bgn:insn.uop_end].astype(np.int64)
        d0 = uops & ((1 << dst_w) - 1)
        s0 = (uops >> src_pos) & ((1 << src_w) - 1)
        w0 = (uops >> wgt_pos) & ((1 << wgt_w) - 1)
        y = np.arange(insn.iter_out, dtype=np.int64)[:, None, None]
        x = np.arange(insn.iter_in, dtype=np.int64)[None, :, None]
        dst = (d0[None, None, :] + y * insn.dst_factor_out + x * insn.dst_factor_in).ravel()
        src = (s0[None, None, :] + y * insn.src_factor_out + x * insn.src_factor_in).ravel()
        if isinstance(insn, isa.GemmInsn):
            wgt = (w0[None, None, :] + y * insn.wgt_factor_out + x * insn.wgt_factor_in).ravel()
        else:
            wgt = np.zeros(0, np.int64)
        return dst, src, wgt

    def _check(self, values: np.ndarray, depth: int, what: str, idx: int,
               insn: isa.Insn) -> None:
        if values.size and int(values.max()) >= depth:
            raise self._fail(idx, insn, f"{what} index {int(values.max())} out of range "
                                        f"(depth {depth})")

    def _gemm(self, insn: isa.GemmInsn, idx: int, counters: dict[str, int]) -> None:
        dst, src, wgt = self._indices(insn, idx)
        self._check(dst, self.acc.shape[0], "ACC", idx, insn)
        if self.strict:
            self._hazard(dst, idx, insn)
        if insn.reset_reg:
            self.acc[dst] = 0
            return
        counters["gemm_counter"] += dst.size
        if dst.size == 0:
            return
        self._check(src, self.inp.shape[0], "INP", idx, insn)
        self._check(wgt, self.wgt.shape[0], "WGT", idx, insn)
        # sort by destination so that each ACC row's products are one contiguous run
        order = np.argsort(dst, kind="stable")
        dst, src, wgt = dst[order], src[order], wgt[order]
        rows, starts = np.unique(dst, return_index=True)
        sums = np.zeros((rows.size,) + self.acc.shape[1:], dtype=np.int64)
        bounds = np.append(starts, dst.size)
        for start in range(0, dst.size, _GEMM_CHUNK):
            stop = min(start + _GEMM_CHUNK, dst.size)
            a = self.inp[src[start:stop]].astype(np.float32)        # [n, B, BI]
            w = self.wgt[wgt[start:stop]].astype(np.float32)        # [n, BO, BI]
            prod = np.matmul(a, w.transpose(0, 2, 1)).astype(np.int64)  # [n, B, BO], exact
            first = int(np.searchsorted(bounds, start, side="right")) - 1
            last = int(np.searchsorted(bounds, stop, side="left"))
            cuts = np.clip(bounds[first:last], start, stop) - start
            cuts = np.unique(cuts[cuts < stop - start])
            partial = np.add.reduceat(prod, cuts, axis=0)
            sums[first + np.searchsorted(bounds[first:last], cuts + start, side="right") - 1] \
                += partial
        self.acc[rows] = (self.acc[rows].astype(np.int64) + sums).astype(np.int32)

    def _hazard(self, dst: np.ndarray, idx: int, insn: isa.GemmInsn) -> None:
        """The hardware's rule (strict mode): a GEMM micro-op must not write the ACC row
        one of the two micro-ops executed before it (in the same instruction) wrote."""
        for gap in (1, 2):
            if dst.size <= gap:
                continue
            same = np.flatnonzero(dst[gap:] == dst[:-gap])
            if same.size:
                k = int(same[0]) + gap
                raise self._fail(idx, insn, f"hazard: micro-op execution {k} writes ACC row "
                                            f"{int(dst[k])}, as execution {k - gap} just "
                                            f"before it did (the GEMM pipeline needs two "
                                            f"other rows in between)")

    def _alu(self, insn: isa.AluInsn, idx: int, counters: dict[str, int]) -> None:
        dst, src, _ = self._indices(insn, idx)
        counters["alu_counter"] += dst.size
        if dst.size == 0:
            return
        depth = self.acc.shape[0]
        self._check(dst, depth, "ACC", idx, insn)
        if not insn.use_imm:
            self._check(src, depth, "ACC", idx, insn)
        op = insn.alu_opcode
        if op not in isa.ALU_NAMES:
            raise self._fail(idx, insn, f"unknown ALU opcode {op}")
        distinct = np.unique(dst).size == dst.size
        if distinct and (insn.use_imm or np.array_equal(src, dst)
                         or not np.intersect1d(src, dst).size):
            a = self.acc[dst].astype(np.int64)
            b = (np.full_like(a, insn.imm) if insn.use_imm
                 else self.acc[src].astype(np.int64))
            self.acc[dst] = self._alu_apply(op, a, b, idx, insn)
            return
        for d, s in zip(dst.tolist(), src.tolist()):           # overlapping: in order
            a = self.acc[d].astype(np.int64)
            b = np.full_like(a, insn.imm) if insn.use_imm else self.acc[s].astype(np.int64)
            self.acc[d] = self._alu_apply(op, a, b, idx, insn)

    def _alu_apply(self, op: int, a: np.ndarray, b: np.ndarray, idx: int,
                   insn: isa.Insn) -> np.ndarray:
        if op == isa.ALU_MIN:
            r = np.minimum(a, b)
        elif op == isa.ALU_MAX:
            r = np.maximum(a, b)
        elif op == isa.ALU_ADD:
            r = a + b
        elif op == isa.ALU_MUL:
            r = a * b
        else:
            if b.size and (int(b.max()) >= 32 or int(b.min()) <= -32):
                raise self._fail(idx, insn, "shift amount out of [-31, 31] (undefined in C)")
            right = np.right_shift(a, np.maximum(b, 0))
            left = np.left_shift(a, np.maximum(-b, 0))
            r = np.where(b >= 0, right, left)
        return r.astype(np.int32)                                # wrap to 32 bits


def _duration(insn: isa.Insn, cfg: Config) -> tuple[int, int, bool]:
    """(port cycles, module-only cycles, uses the shared data port) of one instruction."""
    bus_bytes = cfg.BUS_WIDTH // 8
    if isinstance(insn, isa.MemInsn):
        if insn.x_size == 0:
            return 0, INSN_OVERHEAD, False
        if insn.opcode == isa.OP_STORE:
            nbytes = insn.x_size * insn.y_size * cfg.OUT_ELEM_BYTES
            return (insn.y_size * DMA_ROW_OVERHEAD + math.ceil(nbytes / bus_bytes),
                    INSN_OVERHEAD, True)
        elem = {isa.MEM_INP: cfg.INP_ELEM_BYTES, isa.MEM_WGT: cfg.WGT_ELEM_BYTES,
                isa.MEM_ACC: cfg.ACC_ELEM_BYTES, isa.MEM_UOP: 4,
                isa.MEM_ACC_8BIT: cfg.BATCH * cfg.BLOCK_OUT}.get(insn.memory_type, 0)
        nbytes = insn.x_size * insn.y_size * elem
        xtotal = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        ytotal = insn.y_pad_0 + insn.y_size + insn.y_pad_1
        pads = xtotal * ytotal - insn.x_size * insn.y_size
        transfer = insn.y_size * DMA_ROW_OVERHEAD + math.ceil(nbytes / bus_bytes)
        if insn.memory_type == isa.MEM_UOP:
            return 0, INSN_OVERHEAD + transfer, False
        return transfer, INSN_OVERHEAD + pads, True
    if isinstance(insn, (isa.GemmInsn, isa.AluInsn)):
        n = insn.iter_out * insn.iter_in * max(insn.uop_end - insn.uop_bgn, 0)
        per = ALU_CYCLES_PER_UOP if isinstance(insn, isa.AluInsn) else GEMM_CYCLES_PER_UOP
        return 0, INSN_OVERHEAD + per * n, False
    return 0, INSN_OVERHEAD, False


def cycle_model(stream: list[isa.Insn], config: Config | None = None) -> dict[str, int]:
    """The cycle estimate of a stream (see the module docstring): ``cycles`` and each
    module's busy cycles. Assumes a well-formed stream (``Simulator.run`` checks that)."""
    cfg = config or Config()
    queues: dict[str, deque[isa.Insn]] = {m: deque() for m in _MODULES}
    for insn in stream:
        queues[module_of(insn)].append(insn)
    free = dict.fromkeys(_MODULES, 0)
    busy = dict.fromkeys(_MODULES, 0)
    pushed: dict[str, list[int]] = {"l2g": [], "g2l": [], "g2s": [], "s2g": []}
    popped = dict.fromkeys(pushed, 0)
    port_free = 0
    end = 0
    while any(queues.values()):
        best: tuple[int, int, str] | None = None
        for order, m in enumerate(_MODULES):
            if not queues[m]:
                continue
            insn = queues[m][0]
            need = _pops(m, insn)
            times = []
            ok = True
            for q in set(need):
                k = popped[q] + need.count(q) - 1
                if k >= len(pushed[q]):
                    ok = False
                    break
                times.append(pushed[q][k])
            if not ok:
                continue
            start = max([free[m]] + times)
            if best is None or (start, order) < best[:2]:
                best = (start, order, m)
        if best is None:
            break
        start, _, m = best
        insn = queues[m].popleft()
        for q in _pops(m, insn):
            popped[q] += 1
        port, local, on_port = _duration(insn, cfg)
        if on_port:
            begin = max(start, port_free)
            port_free = begin + port
            finish = begin + port + local
        else:
            finish = start + local
        busy[m] += finish - start
        free[m] = finish
        end = max(end, finish)
        for q in _pushes(m, insn):
            pushed[q].append(finish)
    return {"cycles": end, "load_cycles": busy[LOAD], "compute_cycles": busy[COMPUTE],
            "store_cycles": busy[STORE]}
