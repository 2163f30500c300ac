"""Saving and loading VTA builds: ``exe.save(path)`` and ``backends.vta.load(path)``.

Design note.  A saved build is a directory that holds everything a run needs, so loading
compiles nothing (no partitioning, no lowering, no kernel compilation):

* ``build.json`` — the format version, the VTA configuration, ``cpu``, the run's
  :class:`~backends.vta.cpu.Program` (slots and steps), each offloaded group's layer and
  tiling (:class:`~backends.vta.lower.Plan`, DRAM addresses included), what stayed on the
  CPU and why, and a SHA-256 digest of every other file;
* ``arrays.npz`` — per group its instruction stream (16 bytes per instruction), its
  micro-op words and its packed weight (OIHW16o16i), and the program's constants;
* ``program.relay`` — the bound, type-checked module (other globals, and ``main`` when it
  was not partitioned, run on the oracle);
* ``stages/stage_K.relay`` — each CPU stage as a Relay function, and for a stage built with
  TVM ``stages/stage_K/`` — ``backends.tvm``'s own saved build (its kernels included).

``load`` checks the digests, the format version and every stream (it must decode under the
configuration and end with FINISH) before anything runs: a damaged or truncated build is a
``RelayRuntimeError``.  A TVM stage whose saved build cannot be loaded (e.g. TVM is not
installed here) runs on the oracle, and ``exe.cpu_report`` says so.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from typing import Any

import numpy as np

from backends.vta import isa
from backends.vta.config import Config
from backends.vta.cpu import GroupStep, Program, Stage
from backends.vta.lower import ConvLayer, Plan, Step
from backends.vta.partition import Partition
from semantics.errors import InternalError, RelayError, RelayRuntimeError
from semantics.expr import Function
from semantics.module import IRModule

__all__ = ["save", "read", "FORMAT_VERSION"]

FORMAT_VERSION = 1
_FORMAT_NAME = "relay-vta-build"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def save(exe: Any, path: str | os.PathLike[str]) -> None:
    """Write ``exe`` (a :class:`~backends.vta.build.VTAExecutable`) to the directory ``path``.

    Raises:
        RelayRuntimeError: the directory cannot be written.
    """
    from semantics.printer import pretty

    path = os.fspath(path)
    files: dict[str, bytes] = {"program.relay": pretty(exe.module).encode("utf-8")}
    arrays: dict[str, np.ndarray] = {}
    groups = []
    for i, g in enumerate(exe.offloads):
        arrays[f"stream{i}"] = np.frombuffer(g.stream, dtype=np.uint8)
        arrays[f"words{i}"] = np.asarray(g.words, dtype=np.uint32)
        if g.packed_weight is not None:
            arrays[f"weight{i}"] = np.ascontiguousarray(g.packed_weight)
        groups.append({"kind": g.kind, "layer": _layer_json(g.layer), "plan": _plan_json(g.plan),
                       "out_shape": list(g.out_shape),
                       "packed_weight": g.packed_weight is not None})
    program = None
    stage_dirs: list[tuple[str, Any]] = []
    if exe.program is not None:
        prog = exe.program
        steps: list[dict[str, Any]] = []
        for step in prog.steps:
            if isinstance(step, Stage):
                name = f"stages/stage_{step.index}"
                files[name + ".relay"] = pretty(step.module).encode("utf-8")
                steps.append({"stage": step.index, "inputs": step.inputs,
                              "outputs": step.outputs, "ops": step.ops,
                              "backend": step.backend, "reason": step.reason})
                if step.backend == "tvm":
                    stage_dirs.append((name, step.runner))
            else:
                steps.append({"group": step.group, "inputs": step.inputs,
                              "output": step.output})
        for slot, value in prog.constants.items():
            arrays[f"const{slot}"] = np.asarray(value)
        program = {"n_slots": prog.n_slots, "params": prog.params, "result": prog.result,
                   "constants": sorted(prog.constants), "steps": steps}
    buf = io.BytesIO()
    np.savez(buf, **arrays)   # type: ignore[arg-type]
    files["arrays.npz"] = buf.getvalue()
    meta = {"format": _FORMAT_NAME, "version": FORMAT_VERSION,
            "config": exe.config.as_dict(), "cpu": exe.cpu, "groups": groups,
            "program": program,
            "partition": {"reason": exe.partition.reason, "rejected": exe.partition.rejected,
                          "cpu_ops": exe.partition.cpu_ops},
            "digests": {name: _digest(data) for name, data in files.items()}}
    try:
        os.makedirs(os.path.join(path, "stages"), exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(path, name), "wb") as f:
                f.write(data)
        for name, runner in stage_dirs:
            runner.save(os.path.join(path, name))
        with open(os.path.join(path, "build.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1)
    except OSError as exc:
        raise RelayRuntimeError(f"cannot save the VTA build to {path}: {exc}") from None


def read(path: str | os.PathLike[str], offload_cls: Any, exe_cls: Any) -> Any:
    """Read a build written by ``VTAExecutable.save`` (``backends.vta.build.load`` passes
    its ``Offload`` and ``VTAExecutable`` classes, so this module does not import the
    compiler).

    Raises:
        RelayRuntimeError: not a saved VTA build, or a damaged one (a missing file, a
            digest that does not match, an unknown format version, a malformed stream).
    """
    path = os.fspath(path)

    def refuse(why: str) -> RelayRuntimeError:
        return RelayRuntimeError(f"not a valid saved VTA build: {path}: {why}")

    try:
        with open(os.path.join(path, "build.json"), encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError) as exc:
        raise refuse(f"build.json: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT_NAME:
        raise refuse("build.json is not a VTA build description")
    if meta.get("version") != FORMAT_VERSION:
        raise refuse(f"unknown format version {meta.get('version')!r}")
    files: dict[str, bytes] = {}
    digests = meta.get("digests")
    if not isinstance(digests, dict) or "arrays.npz" not in digests:
        raise refuse("build.json has no file digests")
    for name, digest in digests.items():
        if not isinstance(name, str) or os.path.isabs(name) or ".." in name.split("/"):
            raise refuse(f"build.json names a file outside the build: {name!r}")
        try:
            with open(os.path.join(path, name), "rb") as fb:
                files[name] = fb.read()
        except OSError as exc:
            raise refuse(f"{name}: {exc}") from None
        if _digest(files[name]) != digest:
            raise refuse(f"{name} is damaged (its SHA-256 digest does not match)")
    try:
        return _rebuild(meta, files, path, offload_cls, exe_cls)
    except RelayError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, InternalError) as exc:
        raise refuse(f"{type(exc).__name__}: {exc}") from None


def _rebuild(meta: dict[str, Any], files: dict[str, bytes], path: str, offload_cls: Any,
             exe_cls: Any) -> Any:
    import typechecker
    from semantics.parser import parse

    cfg = Config(**meta["config"])
    with np.load(io.BytesIO(files["arrays.npz"]), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    offloads = []
    for i, g in enumerate(meta["groups"]):
        stream = arrays[f"stream{i}"].tobytes()
        insns = isa.decode_stream(stream, cfg)
        if not insns or not isinstance(insns[-1], isa.FinishInsn):
            raise ValueError(f"the stream of group {i} does not end with FINISH")
        layer = _layer_from(g["layer"])
        plan = _plan_from(g["plan"], layer, cfg)
        weight = arrays[f"weight{i}"] if g["packed_weight"] else None
        offloads.append(offload_cls(g["kind"], layer, plan, stream, arrays[f"words{i}"],
                                    weight, tuple(g["out_shape"])))
    module = typechecker.infer(parse(files["program.relay"].decode("utf-8"),
                                     source_name=os.path.join(path, "program.relay")))
    if not isinstance(module, IRModule):
        raise InternalError("typechecker.infer of a module returned no module")
    p = meta["partition"]
    part = Partition(reason=p["reason"], rejected=list(p["rejected"]),
                     cpu_ops=dict(p["cpu_ops"]))
    program = None
    if meta["program"] is not None:
        pm = meta["program"]
        steps: list[Stage | GroupStep] = []
        for s in pm["steps"]:
            if "group" in s:
                steps.append(GroupStep(int(s["group"]), list(s["inputs"]), int(s["output"])))
                continue
            name = f"stages/stage_{s['stage']}"
            smod = typechecker.infer(parse(files[name + ".relay"].decode("utf-8"),
                                           source_name=os.path.join(path, name + ".relay")))
            assert isinstance(smod, IRModule)
            fn = smod.functions["main"]
            assert isinstance(fn, Function)
            stage = Stage(int(s["stage"]), fn, list(s["inputs"]), list(s["outputs"]),
                          dict(s["ops"]), reason=str(s["reason"]))
            if s["backend"] == "tvm":
                _attach_saved(stage, os.path.join(path, name))
            steps.append(stage)
        constants = {int(k): arrays[f"const{k}"] for k in pm["constants"]}
        program = Program(int(pm["n_slots"]), list(pm["params"]), constants, steps,
                          int(pm["result"]))
    return exe_cls(module, cfg, offloads, program, part, str(meta["cpu"]))


def _attach_saved(stage: Stage, directory: str) -> None:
    """Run ``stage`` with the TVM build saved in ``directory``; the oracle if it cannot be
    loaded here (the reason is kept)."""
    try:
        from backends.tvm import load as tvm_load

        stage.attach(tvm_load(directory))
    except (RelayError, ImportError, OSError) as exc:
        stage.reason = f"the saved TVM build cannot be loaded: {type(exc).__name__}: {exc}"


def _layer_json(layer: ConvLayer) -> dict[str, Any]:
    return {"n": layer.n, "c": layer.c, "h": layer.h, "w": layer.w, "o": layer.o,
            "kh": layer.kh, "kw": layer.kw, "stride": list(layer.stride),
            "padding": list(layer.padding),
            "steps": [[s.kind, s.alu_opcode, s.imm, s.operand, s.shift] for s in layer.steps]}


def _layer_from(d: dict[str, Any]) -> ConvLayer:
    steps = tuple(Step(str(k), int(a), int(i), int(o), int(s)) for k, a, i, o, s in d["steps"])
    return ConvLayer(int(d["n"]), int(d["c"]), int(d["h"]), int(d["w"]), int(d["o"]),
                     int(d["kh"]), int(d["kw"]), (int(d["stride"][0]), int(d["stride"][1])),
                     tuple(int(x) for x in d["padding"]), steps)  # type: ignore[arg-type]


_PLAN_INTS = ("nb", "icb", "ocb", "h", "w", "tco", "th", "n_channel", "n_tensor", "dram_bytes")


def _plan_json(plan: Plan) -> dict[str, Any]:
    d: dict[str, Any] = {k: getattr(plan, k) for k in _PLAN_INTS}
    d.update(pads=list(plan.pads), host_pads=list(plan.host_pads),
             addresses=dict(plan.addresses))
    return d


def _plan_from(d: dict[str, Any], layer: ConvLayer, cfg: Config) -> Plan:
    ints = {k: int(d[k]) for k in _PLAN_INTS if k != "dram_bytes"}
    plan = Plan(layer, cfg, pads=tuple(int(x) for x in d["pads"]),  # type: ignore[arg-type]
                host_pads=tuple(int(x) for x in d["host_pads"]),  # type: ignore[arg-type]
                addresses={str(k): int(v) for k, v in d["addresses"].items()},
                dram_bytes=int(d["dram_bytes"]), **ints)
    return plan
