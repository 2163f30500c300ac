"""``build(qmod, params=None, config=None)``: a quantized Relay program for VTA (issue 30).

Pipeline: bind ``params`` (``passes.bind_params``), ``to_gnf``, type inference, then
:func:`backends.vta.partition.partition` finds the offloadable int8 conv2d/dense groups of
``main`` and :func:`backends.vta.lower.compile_layer` compiles each one to an instruction
stream (once, at build time).  The :class:`VTAExecutable` runs ``main`` by walking its
dataflow graph in order: a group runs on a :class:`~backends.vta.simulator.Simulator` (its
operands packed into the simulated DRAM, its int8 output unpacked); every other operator runs
on the CPU with the oracle's reference implementation of that operator
(``semantics.ops.get(name).reference``, the same numpy code ``interpreter.evaluate`` runs) —
the piecewise route, simpler than rebuilding the CPU remainder for the TVM backend and exact by
construction.  A ``main`` that is not a dataflow graph, and any other global (``exe.run``),
runs wholly on the CPU through ``interpreter.evaluate``.

``exe.stats`` holds the counters of the last run summed over its accelerator invocations
(fsim's names, ``cycles``, ``invocations``), ``exe.instructions`` the instruction stream of
each invocation (bytes, 16 per instruction, each ending with FINISH), ``exe.layers`` one
record per invocation (kind, shape, MACs, counters) and ``exe.cpu_ops`` what ran on the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from backends.vta import isa
from backends.vta.config import Config
from backends.vta.lower import compile_layer, run_layer
from backends.vta.partition import Group, Partition, partition
from backends.vta.simulator import COUNTERS, Simulator
from semantics.errors import InternalError, RelayError, RelayRuntimeError, RelayTypeError
from semantics.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var
from semantics.module import IRModule

__all__ = ["build", "VTAExecutable"]


def build(qmod: Any, params: dict[str, Any] | None = None,
          config: Config | None = None) -> VTAExecutable:
    """Compile a quantized Relay module for VTA.

    Args:
        qmod: an ``IRModule`` (or module text) — typically ``passes.quantize``'s result.
        params: ``main``'s weights by parameter name, bound as constants.
        config: the VTA :class:`Config` (default: ``Config()``).
    Returns:
        A :class:`VTAExecutable`.
    Raises:
        RelayTypeError: the program does not type-check, or ``params`` name no parameter.
    """
    import passes
    from semantics.parser import parse
    from typechecker import infer

    cfg = config or Config()
    if not isinstance(cfg, Config):
        raise RelayTypeError(f"config must be a backends.vta.Config, got {type(cfg).__name__}")
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
    compiled: dict[int, tuple[bytes, np.ndarray]] = {}
    for key, group in part.groups.items():
        stream, words = compile_layer(group.plan)
        compiled[key] = (isa.encode_stream(stream, cfg), words)
    return VTAExecutable(mod, cfg, part, compiled)


class VTAExecutable:
    """A program built for VTA (ARCHITECTURE.md §8's Executable interface).

    Attributes:
        module: the bound, type-checked program.
        config: the VTA configuration.
        stats: counters of the last run (fsim's names, ``cycles``, ``invocations``, the
            modules' busy cycles, ``macs``).
        instructions: the instruction streams of the last run, one ``bytes`` per invocation.
        layers: per invocation of the last run: ``kind``, ``shape``, ``macs``, counters.
        schedule, seed: the simulator's schedule (``"serial"`` or ``"random"``) and seed.
    """

    def __init__(self, module: IRModule, config: Config, part: Partition,
                 compiled: dict[int, tuple[bytes, np.ndarray]]):
        self.module = module
        self.config = config
        self.partition = part
        self._compiled = compiled
        self.stats: dict[str, int] = {}
        self.instructions: list[bytes] = []
        self.layers: list[dict[str, Any]] = []
        self.schedule = "serial"
        self.seed = 0
        size = max([g.plan.dram_bytes for g in part.groups.values()] + [1 << 20])
        self.simulator = Simulator(config, dram_bytes=size)

    # -- what runs where -------------------------------------------------------------------
    @property
    def offloaded(self) -> list[str]:
        """The offloaded groups, one line each (kind, shapes, epilogue)."""
        out = []
        for g in self.partition.groups.values():
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
        if name != "main" or self.partition.reason:
            return evaluate(self.module, *args, entry=name)
        fn = self.module.functions["main"]
        assert isinstance(fn, Function)
        types = [p.type_annotation if p.type_annotation is not None else p.checked_type
                 for p in fn.params]
        values = convert_arguments(fn.params, args, self.module, "@main", types)
        env = {id(p): v for p, v in zip(fn.params, values)}
        self.stats = dict.fromkeys(COUNTERS, 0)
        self.stats.update(cycles=0, load_cycles=0, compute_cycles=0, store_cycles=0,
                          invocations=0, macs=0)
        self.instructions = []
        self.layers = []
        try:
            with np.errstate(all="ignore"):
                result = self._walk(env)
        except (RelayError, InternalError):
            raise
        except (ValueError, TypeError, IndexError, ArithmeticError) as exc:
            raise RelayRuntimeError(f"vta run failed: {type(exc).__name__}: {exc}") from None
        return export_value(result)

    def _walk(self, env: dict[int, Any]) -> Any:
        from semantics.ops import get as get_op

        part = self.partition
        values: dict[int, Any] = {}
        def value(e: Expr) -> Any:
            e = part.resolve(e)
            if isinstance(e, Var):
                if id(e) not in env:
                    raise InternalError(f"free variable {e.name_hint} in main")
                return env[id(e)]
            return values[id(e)]

        for e in part.order:
            key = id(e)
            if key in part.internal:
                continue
            if key in part.groups:
                values[key] = self._offload(part.groups[key], value)
            elif isinstance(e, Var):
                continue
            elif isinstance(e, Constant):
                values[key] = e.data
            elif isinstance(e, Call):
                assert isinstance(e.op, Op)
                args = [value(a) for a in e.args]
                values[key] = get_op(e.op.name).reference(*args, **dict(e.attrs))
            elif isinstance(e, Tuple):
                values[key] = tuple(value(f) for f in e.fields)
            elif isinstance(e, TupleGetItem):
                values[key] = value(e.tuple_value)[e.index]
        assert part.body is not None
        return value(part.body)

    def _offload(self, g: Group, value: Any) -> np.ndarray:
        data = np.asarray(value(g.inputs[0]))
        weight = np.asarray(value(g.inputs[1]))
        operands = [np.broadcast_to(np.asarray(value(x)), g.out_shape) for x in g.inputs[2:]]
        lay = g.layer
        if g.kind == "dense":
            data = data.T[None, :, :, None]
            weight = weight[:, :, None, None]
            operands = [o.T[None, :, :, None] for o in operands]
        prepared = []
        tensor_steps = [s for s in lay.steps if s.kind in ("channel", "tensor")]
        for step, o in zip(tensor_steps, operands):
            prepared.append(o[0, :, 0, 0] if step.kind == "channel" else o)
        stream, words = self._compiled[id(g.output)]
        out, counters = run_layer(g.plan, stream, words, data, weight, prepared,
                                  self.simulator, self.schedule, self.seed)
        for k, v in counters.items():
            self.stats[k] = self.stats.get(k, 0) + v
        self.stats["invocations"] += 1
        self.stats["macs"] += lay.macs
        self.instructions.append(stream)
        self.layers.append({"kind": g.kind, "shape": (lay.n, lay.c, lay.h, lay.w, lay.o,
                                                      lay.kh, lay.kw, lay.stride),
                            "macs": lay.macs, **counters})
        if g.kind == "dense":
            return np.ascontiguousarray(out[0, :, :, 0].T)
        return out
