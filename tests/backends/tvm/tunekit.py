"""Shared by the ``relay tune`` tests: two tiny programs, their weights, and tuning records
made without a search (a real schedule's trace written by hand)."""

from __future__ import annotations

from typing import Any

import numpy as np

from backends.tvm.build import KernelTable, prepare
from backends.tvm.target import Target
from backends.tvm.tune.apply import kernel_prim, workload_hash
from backends.tvm.tune.database import TuningRecord, relay_key
from backends.tvm.tune.search import plain_json, workload_of
from interpreter import evaluate
from semantics import parse

DENSE = """
def @main(%x: Tensor[(4, 64), float32], %w: Tensor[(48, 64), float32], %b: Tensor[(48), float32]) {
  nn.relu(nn.bias_add(nn.dense(%x, %w), %b))
}
"""

CONV = """
def @main(%x: Tensor[(1, 8, 10, 10), float32], %w: Tensor[(8, 8, 3, 3), float32]) {
  nn.relu(nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3]))
}
"""


def params_of(seed: int = 0) -> dict[str, np.ndarray]:
    """Weights of :data:`DENSE`."""
    rng = np.random.default_rng(seed)
    return {"w": rng.standard_normal((48, 64)).astype("float32"),
            "b": rng.standard_normal(48).astype("float32")}


def kernel_of(src: str = DENSE, params: dict[str, np.ndarray] | None = None,
              target: Target | None = None) -> tuple[Any, list[Any], Target]:
    """The program's kernel with the most FLOPs: its function, types and target."""
    target = target or Target.host()
    fused = prepare(src, params if params is not None else params_of(), 3, target)
    from backends.tvm.exec.graph import kernel_flops

    func, types = max(KernelTable(target).requests(fused), key=lambda r: kernel_flops(r[0]))
    return func, types, target


def manual_trace(prim: object, split: int = 4) -> list[object]:
    """A real schedule's trace (no search): the output block's outer loop parallel, its
    inner loop split by ``split``."""
    from tvm.s_tir import Schedule

    sch = Schedule(workload_of(prim))
    out = sch.get_output_blocks(sch.get_sblock("root"))[0]
    loops = sch.get_loops(out)
    sch.parallel(loops[0])
    sch.split(loops[-1], factors=[None, split])
    return plain_json(sch.trace.as_json(remove_postproc=False))


def record_of(func: object, types: list[object], target: Target, *, won: bool,
              trace: list[object] | None = None, split: int = 4) -> TuningRecord:
    """A tuning record of a kernel with :func:`manual_trace` (or ``trace``)."""
    import tvm

    prim, _ = kernel_prim(func, types, target)
    return TuningRecord(workload_hash(prim), tvm.ir.save_json(workload_of(prim)),
                        relay_key(func, types), ["nn.dense"],
                        trace if trace is not None else manual_trace(prim, split),
                        2e-5, 1e-5, 4, won, 1000, "2026-01-01T00:00:00+00:00")


def oracle(x: np.ndarray, params: dict[str, np.ndarray]) -> np.ndarray:
    """:data:`DENSE` on the interpreter."""
    return np.asarray(evaluate(parse(DENSE), x, params["w"], params["b"]))
