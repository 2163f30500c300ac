"""``build(qmod, params=None, config=None, cpu="tvm")``: a quantized Relay program for VTA
(issue 30).

Pipeline: bind ``params`` (``passes.bind_params``), ``to_gnf``, type inference, then
:func:`backends.vta.partition.partition` finds the offloadable int8 conv2d/dense groups of
``main`` and :func:`backends.vta.lower.compile_layer` compiles each one to an instruction
stream (once, at build time; a constant weight is also packed once, here).  The rest of
``main`` is cut into CPU stages between the groups (:mod:`backends.vta.cpu`), each built with
``backends.tvm.build`` (``cpu="tvm"``, the default) or run by the oracle
(``cpu="oracle"``: ``interpreter.evaluate``, exact by construction, no kernel compilation).
A stage the TVM backend cannot build runs on the oracle, and ``exe.cpu_report`` says which
and why.  The :class:`VTAExecutable` runs the steps in order: a stage on the CPU, a group on
a :class:`~backends.vta.simulator.Simulator` (its operands packed into the simulated DRAM,
its int8 output unpacked).  A ``main`` that is not a dataflow graph, and any other global
(``exe.run``), runs wholly on the CPU through ``interpreter.evaluate``.

``exe.stats`` holds the counters of the last run summed over its accelerator invocations
(fsim's names, ``cycles``, ``invocations``), ``exe.instructions`` the instruction stream of
each invocation (bytes, 16 per instruction, each ending with FINISH), ``exe.layers`` one
record per invocation (kind, shape, MACs, counters) and ``exe.cpu_ops`` what ran on the CPU.
``exe.save(path)`` / :func:`load` write and read a build (:mod:`backends.vta.saved`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from backends.vta import isa
from backends.vta.config import Config
from backends.vta.cpu import CPU_MODES, GroupStep, Program, Stage, split
from backends.vta.lower import ConvLayer, Plan, compile_layer, pack_weight, run_layer
from backends.vta.partition import Partition, partition
from backends.vta.simulator import COUNTERS, Simulator
from semantics import errors
from semantics.errors import InternalError, RelayError, RelayRuntimeError, RelayTypeError
from semantics.expr import Constant, Function
from semantics.module import IRModule

__all__ = ["build", "load", "VTAExecutable", "Offload"]


@dataclass
class Offload:
    """A compiled group: its layer and tiling, instruction stream, micro-op words and, for a
    constant weight, the weight packed to OIHW16o16i."""

    kind: str                      # "conv2d" | "dense"
    layer: ConvLayer
    plan: Plan
    stream: bytes
    words: np.ndarray
    packed_weight: np.ndarray | None
    out_shape: tuple[int, ...]


def build(qmod: Any, params: dict[str, Any] | None = None,
          config: Config | None = None, cpu: str = "tvm") -> VTAExecutable:
    """Compile a quantized Relay module for VTA.

    Args:
        qmod: an ``IRModule`` (or module text) — typically ``passes.quantize``'s result.
        params: ``main``'s weights by parameter name, bound as constants.
        config: the VTA :class:`Config` (default: ``Config()``).
        cpu: ``"tvm"`` (the CPU stages built by ``backends.tvm.build``) or ``"oracle"``
            (run by ``interpreter.evaluate``).
    Returns:
        A :class:`VTAExecutable`.
    Raises:
        RelayTypeError: the program does not type-check, ``params`` name no parameter, or a
            bad ``config``/``cpu``.
    """
    import passes
    from semantics.parser import parse
    from typechecker import infer

    cfg = config or Config()
    if not isinstance(cfg, Config):
        raise RelayTypeError(f"config must be a backends.vta.Config, got {type(cfg).__name__}")
    if cpu not in CPU_MODES:
        raise RelayTypeError(f"cpu must be one of {', '.join(CPU_MODES)}, got {cpu!r}")
    mod = parse(qmod) if isinstance(qmod, str) else qmod
    if not isinstance(mod, IRModule):
        raise RelayTypeError(f"vta build expects an IRModule, got {type(mod).__name__}")
    if params:
        mod = passes.bind_params(mod, params)
    checked = infer(mod)
    assert isinstance(checked, IRModule)
    mod = infer(passes.to_gnf(checked))
    assert isinstance(mod, IRModule)
    main = mod.functions.get("main")
    if not isinstance(main, Function):
        raise RelayTypeError("vta build: the module has no @main")
    part = partition(main.body, cfg)
    keys = list(part.groups)
    offloads: list[Offload] = []
    packed: set[int] = set()
    for key in keys:
        group = part.groups[key]
        stream, words = compile_layer(group.plan)
        weight = part.resolve(group.inputs[1])
        prepacked = None
        if isinstance(weight, Constant):
            w = np.asarray(weight.data)
            if group.kind == "dense":
                w = w[:, :, None, None]
            prepacked = np.ascontiguousarray(pack_weight(w, group.plan))
            packed.add(key)
        offloads.append(Offload(group.kind, group.layer, group.plan,
                                isa.encode_stream(stream, cfg), words, prepacked,
                                group.out_shape))
    program = None if part.reason else split(part, main, keys, packed)
    if program is not None:
        for stage in program.stages:
            stage.compile(cpu)
    return VTAExecutable(mod, cfg, offloads, program, part, cpu)


def load(path: str | os.PathLike[str]) -> VTAExecutable:
    """Load a build written by :meth:`VTAExecutable.save` (:mod:`backends.vta.saved`).

    Raises:
        RelayRuntimeError: not a saved VTA build, or a damaged one (a missing file, a
            digest that does not match, an unknown format version, a malformed stream).
    """
    from backends.vta.saved import read

    exe: VTAExecutable = read(path, Offload, VTAExecutable)
    return exe


class VTAExecutable:
    """A program built for VTA (docs/architecture.md#toolchain's Executable interface).

    Attributes:
        module: the bound, type-checked program.
        config: the VTA configuration.
        cpu: ``"tvm"`` or ``"oracle"``: how the CPU stages were asked to run.
        program: the run of ``main`` (CPU stages and offloaded groups over slots), or None
            when ``main`` is not partitioned.
        partition: what ran where (``reason``, ``rejected``, ``cpu_ops``).
        stats: counters of the last run (fsim's names, ``cycles``, ``invocations``, the
            modules' busy cycles, ``macs``).
        instructions: the instruction streams of the last run, one ``bytes`` per invocation.
        layers: per invocation of the last run: ``kind``, ``shape``, ``macs``, counters.
        schedule, seed: the simulator's schedule (``"serial"`` or ``"random"``) and seed.
    """

    def __init__(self, module: IRModule, config: Config, offloads: list[Offload],
                 program: Program | None, part: Partition, cpu: str = "tvm"):
        self.module = module
        self.config = config
        self.offloads = offloads
        self.program = program
        self.partition = part
        self.cpu = cpu
        self.stats: dict[str, int] = {}
        self.instructions: list[bytes] = []
        self.layers: list[dict[str, Any]] = []
        self.schedule = "serial"
        self.seed = 0
        size = max([o.plan.dram_bytes for o in offloads] + [1 << 20])
        self.simulator = Simulator(config, dram_bytes=size, strict=True)

    # -- what runs where -------------------------------------------------------------------
    @property
    def offloaded(self) -> list[str]:
        """The offloaded groups, one line each (kind, shapes, epilogue)."""
        out = []
        for g in self.offloads:
            lay = g.layer
            ops = " ".join(f"{isa.ALU_NAMES[s.alu_opcode]}({s.imm})" if s.kind == "imm" else
                           f"round({s.imm},{s.shift})" if s.kind == "sign_round" else s.kind
                           for s in lay.steps)
            out.append(f"{g.kind} {lay.n}x{lay.c}x{lay.h}x{lay.w} -> {lay.o} k{lay.kh}x{lay.kw}"
                       f" s{lay.stride[0]} [{ops}]")
        return out

    @property
    def cpu_ops(self) -> dict[str, int]:
        """Operators that run on the CPU, with their counts."""
        return dict(self.partition.cpu_ops)

    @property
    def cpu_report(self) -> list[str]:
        """One line per CPU stage: its operators and whether TVM or the oracle runs it (and
        why the oracle, when TVM was asked for); TVM kernels run by TVM's numpy fallback."""
        if self.program is None:
            why = self.partition.reason or "no @main"
            return [f"all of main on the oracle (interpreter.evaluate): {why}"]
        lines = []
        for st in self.program.stages:
            ops = ", ".join(f"{k} x{v}" for k, v in sorted(st.ops.items())) or "tuples only"
            where = "TVM" if st.backend == "tvm" else "the oracle"
            line = f"stage {st.index} ({ops}) on {where}"
            if st.reason:
                line += f": {st.reason}"
            lines.append(line)
            lines.extend(f"  TVM numpy fallback: {f}" for f in st.tvm_fallbacks)
        return lines

    @property
    def cpu_fallbacks(self) -> list[tuple[int, str]]:
        """The CPU stages that ``cpu="tvm"`` could not build, with the reason."""
        if self.program is None:
            return []
        return [(st.index, st.reason) for st in self.program.stages if st.reason]

    # -- saving ----------------------------------------------------------------------------
    def save(self, path: Any) -> None:
        """Write the build to the directory ``path``; ``backends.vta.load(path)`` reads it
        back (see :mod:`backends.vta.saved`).

        Raises:
            RelayRuntimeError: the directory cannot be written.
        """
        from backends.vta.saved import save

        save(self, path)

    # -- running ---------------------------------------------------------------------------
    def __call__(self, *inputs: Any) -> Any:
        """Run ``main`` on ``inputs``."""
        return self.run("main", *inputs)

    def run(self, entry: str, *args: Any) -> Any:
        """Run the global ``entry``; arguments and results convert as ``evaluate``'s.

        Raises:
            RelayRuntimeError: wrong arguments, a failing operator, or a simulator error.
        """
        from interpreter import evaluate
        from interpreter.convert import convert_arguments
        from interpreter.export import export_value

        name = entry.lstrip("@") if isinstance(entry, str) else entry
        if name != "main" or self.program is None:
            return evaluate(self.module, *args, entry=name)
        fn = self.module.functions["main"]
        assert isinstance(fn, Function)
        if len(args) != len(fn.params):
            raise RelayRuntimeError(
                errors.wrong_arity("@main", len(fn.params), len(args)), fn.span)
        types = [p.type_annotation if p.type_annotation is not None else p.checked_type
                 for p in fn.params]
        values = convert_arguments(fn.params, args, self.module, "@main", types)
        self.stats = dict.fromkeys(COUNTERS, 0)
        self.stats.update(cycles=0, load_cycles=0, compute_cycles=0, store_cycles=0,
                          invocations=0, macs=0)
        self.instructions = []
        self.layers = []
        try:
            with np.errstate(all="ignore"):
                result = self._execute(self.program, values)
        except (RelayError, InternalError):
            raise
        except (ValueError, TypeError, IndexError, ArithmeticError) as exc:
            raise RelayRuntimeError(f"vta run failed: {type(exc).__name__}: {exc}") from None
        return export_value(result)

    def _execute(self, program: Program, params: list[Any]) -> Any:
        slots: list[Any] = [None] * program.n_slots
        for s, v in zip(program.params, params):
            slots[s] = v
        for s, c in program.constants.items():
            slots[s] = c
        for step in program.steps:
            if isinstance(step, Stage):
                outs = step.run([slots[i] for i in step.inputs])
                for s, v in zip(step.outputs, outs):
                    slots[s] = v
            else:
                slots[step.output] = self._offload(step, slots)
        return slots[program.result]

    def _offload(self, step: GroupStep, slots: list[Any]) -> np.ndarray:
        g = self.offloads[step.group]
        data = np.asarray(slots[step.inputs[0]])
        weight = None if step.inputs[1] < 0 else np.asarray(slots[step.inputs[1]])
        operands = [np.broadcast_to(np.asarray(slots[i]), g.out_shape)
                    for i in step.inputs[2:]]
        lay = g.layer
        if g.kind == "dense":
            data = data.T[None, :, :, None]
            if weight is not None:
                weight = weight[:, :, None, None]
            operands = [o.T[None, :, :, None] for o in operands]
        prepared = []
        tensor_steps = [s for s in lay.steps if s.kind in ("channel", "tensor")]
        for st, o in zip(tensor_steps, operands):
            prepared.append(o[0, :, 0, 0] if st.kind == "channel" else o)
        out, counters = run_layer(g.plan, g.stream, g.words, data, weight, prepared,
                                  self.simulator, self.schedule, self.seed,
                                  packed_weight=g.packed_weight)
        for k, v in counters.items():
            self.stats[k] = self.stats.get(k, 0) + v
        self.stats["invocations"] += 1
        self.stats["macs"] += lay.macs
        self.instructions.append(g.stream)
        self.layers.append({"kind": g.kind, "shape": (lay.n, lay.c, lay.h, lay.w, lay.o,
                                                      lay.kh, lay.kw, lay.stride),
                            "macs": lay.macs, **counters})
        if g.kind == "dense":
            return np.ascontiguousarray(out[0, :, :, 0].T)
        return out
