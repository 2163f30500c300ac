"""The CPU part of a VTA build: ``main`` cut into CPU stages between the offloaded groups.

Design note.  The partitioner (:mod:`backends.vta.partition`) leaves a dataflow graph in which
some nodes are offloaded groups (an int8 conv2d/dense and its epilogue, run by the
simulator) and every other operator call, tuple and projection runs on the CPU.  The
accelerator cannot call back into a TVM program, so instead of one TVM program with external
calls we cut the CPU nodes into **stages** by *level*:

* ``main``'s parameters and constants have level 0;
* a group runs in **batch** ``b = 1 + max(level of its inputs)`` and its output has level
  ``b``;
* a CPU node has the largest level of its arguments.

Stage ``L`` is the set of CPU nodes of level ``L``; the run is stage 0, batch 1, stage 1,
batch 2, ..., so every value exists before it is read.  Each stage becomes a Relay function
``fn(live-ins) -> (live-outs)``: its parameters are the values it reads from ``main``'s
parameters, from groups and from earlier stages, and its constants (so that the compiled
kernels depend on shapes only and survive re-quantization in the kernel cache); its results
are the values that groups, later stages or ``main``'s result read.  Each stage is built
with ``backends.tvm.build`` (graph executor, ``opt_level=2``: fusion and constant folding,
but none of ``-O3``'s algebraic rewrites of float arithmetic such as FoldScaleAxis, so the
float quantize/dequantize arithmetic and the float first convolution round exactly as the
oracle's) — ``cpu="tvm"``; or run by ``interpreter.evaluate`` — ``cpu="oracle"``.  A stage
that the TVM backend cannot build falls back to the oracle and the reason is kept
(:attr:`Stage.reason`); kernels that TVM itself runs with its numpy fallback are listed too.

Values travel between stages and groups in numbered *slots*: :class:`Program` is the whole
run as a list of steps over slots, which is also what ``exe.save`` writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from backends.vta.partition import Partition, operands
from semantics.errors import InternalError, RelayError
from semantics.expr import Call, Constant, Expr, Function, Tuple, Var
from semantics.module import IRModule
from semantics.rewrite import copy_subgraph

__all__ = ["Stage", "GroupStep", "Program", "split", "CPU_MODES", "CPU_OPT_LEVEL"]

CPU_MODES = ("tvm", "oracle")
CPU_OPT_LEVEL = 2


@dataclass
class Stage:
    """A CPU stage: ``function`` reads ``inputs`` slots and writes ``outputs`` slots.

    ``backend`` is ``"tvm"`` or ``"oracle"``; ``reason`` says why a stage asked to run on TVM
    runs on the oracle; ``tvm_fallbacks`` lists TVM kernels run by TVM's numpy fallback.
    """

    index: int
    function: Function
    inputs: list[int]
    outputs: list[int]
    ops: dict[str, int] = field(default_factory=dict)
    backend: str = "oracle"
    reason: str = ""
    tvm_fallbacks: list[str] = field(default_factory=list)
    runner: Any = None

    @property
    def module(self) -> IRModule:
        return IRModule({"main": self.function})

    def compile(self, cpu: str) -> None:
        """Build the stage for ``cpu`` (``"tvm"``: ``backends.tvm.build``; on failure, or
        for ``"oracle"``, ``interpreter.evaluate``)."""
        self.backend, self.runner, self.reason = "oracle", None, ""
        if cpu != "tvm":
            return
        try:
            from backends.tvm import build as tvm_build

            exe = tvm_build(self.module, opt_level=CPU_OPT_LEVEL, executor="graph")
        except (RelayError, InternalError, ImportError, RuntimeError, ValueError,
                TypeError) as exc:
            self.reason = f"the TVM backend cannot build it: {type(exc).__name__}: {exc}"
            return
        self.attach(exe)

    def attach(self, exe: Any) -> None:
        """Run the stage with the TVM executable ``exe``."""
        self.backend, self.runner, self.reason = "tvm", exe, ""
        self.tvm_fallbacks = [f"{name}: {why}" for name, why in exe.fallbacks]

    def run(self, values: list[Any]) -> tuple[Any, ...]:
        if self.runner is not None:
            out = self.runner(*values)
        else:
            from interpreter import evaluate

            out = evaluate(self.module, *values)
        if not isinstance(out, tuple) or len(out) != len(self.outputs):
            raise InternalError(f"CPU stage {self.index} returned {type(out).__name__}, "
                                f"expected a tuple of {len(self.outputs)}")
        return out


@dataclass
class GroupStep:
    """Run offloaded group ``group`` on the ``inputs`` slots (data, weight, then the
    epilogue's operands; ``-1`` for a weight packed at build time) into ``output``."""

    group: int
    inputs: list[int]
    output: int


@dataclass
class Program:
    """The run of ``main`` over slots: parameters, constants, then the steps in order."""

    n_slots: int
    params: list[int]
    constants: dict[int, np.ndarray]
    steps: list[Stage | GroupStep]
    result: int

    @property
    def stages(self) -> list[Stage]:
        return [s for s in self.steps if isinstance(s, Stage)]


def split(part: Partition, main: Function, group_keys: list[int],
          packed_weights: set[int]) -> Program:
    """The :class:`Program` of a partitioned ``main`` (see the module docstring).

    ``group_keys`` lists the groups (``id`` of their output) in the numbering the executable
    uses; ``packed_weights`` holds the keys of groups whose weight is packed at build time.
    """
    resolve = part.resolve
    slots: dict[int, int] = {}
    constants: dict[int, np.ndarray] = {}

    def slot_of(e: Expr) -> int:
        if id(e) not in slots:
            slots[id(e)] = len(slots)
        return slots[id(e)]

    params = [slot_of(p) for p in main.params]
    level: dict[int, int] = {}

    def level_of(e: Expr) -> int:
        e = resolve(e)
        if isinstance(e, (Var, Constant)):
            return 0
        return level[id(e)]

    number = {k: i for i, k in enumerate(group_keys)}
    batches: dict[int, list[int]] = {}
    stage_nodes: dict[int, list[Expr]] = {}
    for e in part.order:
        k = id(e)
        if k in part.internal or isinstance(e, (Var, Constant)):
            continue
        if k in part.groups:
            b = 1 + max(level_of(x) for x in part.groups[k].inputs)
            level[k] = b
            batches.setdefault(b, []).append(k)
        else:
            level[k] = max((level_of(a) for a in _args(e)), default=0)
            stage_nodes.setdefault(level[k], []).append(e)
    # values read outside the stage that computes them
    read_outside: set[int] = set()
    for g in part.groups.values():
        read_outside.update(id(resolve(x)) for x in g.inputs)
    for nodes in stage_nodes.values():
        for e in nodes:
            read_outside.update(id(resolve(a)) for a in _args(e)
                                if level.get(id(resolve(a)), -1) != level[id(e)]
                                or id(resolve(a)) in part.groups)
    assert part.body is not None
    top = resolve(part.body)
    read_outside.add(id(top))
    steps: list[Stage | GroupStep] = []
    last = max(list(stage_nodes) + list(batches) + [0])
    for lv in range(last + 1):
        if lv in stage_nodes:
            stage = _stage(len([s for s in steps if isinstance(s, Stage)]),
                           stage_nodes[lv], part, read_outside, slot_of, constants)
            if stage is not None:
                steps.append(stage)
        for k in batches.get(lv + 1, []):
            g = part.groups[k]
            ins = []
            for i, x in enumerate(g.inputs):
                x = resolve(x)
                if i == 1 and k in packed_weights:
                    ins.append(-1)
                    continue
                if isinstance(x, Constant):
                    constants[slot_of(x)] = np.asarray(x.data)
                ins.append(slot_of(x))
            steps.append(GroupStep(number[k], ins, slot_of(g.output)))
    if isinstance(top, Constant):
        constants[slot_of(top)] = np.asarray(top.data)
    result = slot_of(top)
    return Program(len(slots), params, constants, steps, result)


def _args(e: Expr) -> tuple[Expr, ...]:
    kids = operands(e)
    if kids is None:
        raise InternalError(f"unexpected {type(e).__name__} in the CPU part of a VTA build")
    return kids


def _stage(index: int, nodes: list[Expr], part: Partition, read_outside: set[int],
           slot_of: Any, constants: dict[int, np.ndarray]) -> Stage | None:
    """The Relay function of one stage: its nodes rebuilt over fresh parameters.

    Constants become parameters too (their values are the program's constant slots): the
    TVM kernels then depend on shapes only, so a model quantized again (new scales, new
    weights) reuses the compiled kernels of the kernel cache.
    """
    resolve = part.resolve
    mine = {id(e) for e in nodes}
    params: list[Var] = []
    inputs: list[int] = []
    outside: dict[int, Var] = {}

    def operand(a: Expr) -> Expr:
        a = resolve(a)
        if id(a) in mine:
            return a  # a variable bound to a node of this stage: that node's copy
        if isinstance(a, Constant):
            constants[slot_of(a)] = np.asarray(a.data)
        v = outside.get(id(a))
        if v is None:
            v = Var(f"in{len(params)}", type_annotation=a.checked_type)
            params.append(v)
            inputs.append(slot_of(a))
            outside[id(a)] = v
        return v

    copies = dict(zip((id(e) for e in nodes), copy_subgraph(nodes, operand), strict=True))
    ops: dict[str, int] = {}
    for e in nodes:
        if isinstance(e, Call):
            name = getattr(e.op, "name", "?")
            ops[name] = ops.get(name, 0) + 1
    outs = [e for e in nodes if id(e) in read_outside]
    if not outs:
        return None
    fn = Function(tuple(params), Tuple(tuple(copies[id(e)] for e in outs)))
    return Stage(index, fn, inputs, [slot_of(e) for e in outs], ops)
