"""MetaSchedule glue: search schedules for our kernels' ``PrimFunc`` s and re-apply a found one.

:func:`search` runs MetaSchedule (``tvm.s_tir.meta_schedule`` in apache-tvm 0.27) over a few
workloads with a trial budget and returns, per workload, the traces of its best measured
candidates; :func:`apply_trace` replays a trace (as JSON, the form the tuning database keeps)
on a ``PrimFunc``.

Facts about apache-tvm 0.27 this module relies on (measured on this machine):

* ``apache-tvm-ffi`` 0.1.15.x crashes (SIGSEGV in ``ToJSONGraph``) in ``tvm.ir.save_json``,
  which MetaSchedule calls for every workload it records; ``pyproject.toml`` pins
  ``apache-tvm-ffi<0.1.15`` (0.1.14.post1 works);
* MetaSchedule imports ``tvm.s_tir.tensor_intrin`` — every target's tensor intrinsics (CUDA,
  ROCm, Arm, Hexagon, RISC-V, x86), each parsed from TVMScript — in every ``TuneContext`` and
  in each worker process of its default builder, which starts a new pool of workers for every
  batch of candidates: 30–50 s per worker on a loaded 2-core machine (so every build timed
  out), and 4 minutes for the ``TuneContext`` here at a load of 11. :func:`_x86_intrinsics_only`
  registers the x86 intrinsics alone (1.8 s at that load) in place of the package, and
  :class:`InProcessBuilder` compiles the candidates in this process (``tvm.compile``, no worker
  start) and links each into a shared library;
* the evolutionary search's default population (512 schedules, 50 unmeasured at least) took
  30 s to draw before the first candidate of a 4-trial search: the population scales with the
  trial budget (:func:`_strategy`);
* MetaSchedule needs the target's ``num-cores`` (:func:`tuning_target` adds it from the
  :class:`~backends.tvm.target.Target` record's threads);
* its default cost model needs ``xgboost``; without it the search uses the random model
  (:func:`_cost_model`) — the candidates are still measured, only their order is unguided;
* MetaSchedule's ``get_loggers_from_work_dir`` fails on its second call in a process (a
  handler without a name in its logging configuration): each task logs to a logger of this
  module instead (Python's ``logging``: silent unless the program configures it);
* the LLVM post-processors include ``RewriteLayout``, which moves a weight's layout change
  into a separate block that TVM's Relax build would apply once to the constant. Our kernels
  receive their constants as they are, so that block would run on every call:
  :func:`_postprocs` leaves ``RewriteLayout`` out, and every candidate is measured as it
  would run.

With ``rpc`` (a tracker's host, port and key) the candidates run on the tracker's devices
through TVM's own ``RPCRunner`` (exported as TVM's default ``.tar`` of object files, linked on
the device); otherwise :class:`InProcessRunner` times them in this process.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backends.tvm.target import Target

__all__ = ["InProcessBuilder", "InProcessRunner", "RPCSpec", "apply_trace", "plain_json", "search",
           "tuning_target", "workload_of"]


@dataclass(frozen=True)
class RPCSpec:
    """A TVM RPC tracker: where MetaSchedule's ``RPCRunner`` asks for devices of ``key``."""

    host: str
    port: int
    key: str


def tuning_target(target: Target) -> Any:
    """The ``tvm.target.Target`` MetaSchedule tunes for: the record's LLVM target with its
    ``num-cores`` (the threads the kernels run on)."""
    import tvm

    return tvm.target.Target({**target.llvm(), "num-cores": target.threads})


def workload_of(prim: Any) -> Any:
    """The ``IRModule`` MetaSchedule tunes for a kernel's ``PrimFunc``: the function alone as
    ``main``, without the kernel's symbol (so that a kernel's workload does not depend on the
    name the kernel cache gives it)."""
    import tvm

    if prim.attrs is not None and "global_symbol" in prim.attrs:
        prim = prim.without_attr("global_symbol")
    return tvm.IRModule({"main": prim.with_attr("global_symbol", "main")})


def apply_trace(prim: Any, trace_json: Any) -> Any:
    """``prim`` scheduled by a trace (MetaSchedule's JSON form of it): an ``IRModule``.

    Raises:
        Exception: TVM's error when the trace does not apply (a different workload).
    """
    from tvm.s_tir import Schedule
    from tvm.s_tir.schedule import Trace

    sch = Schedule(workload_of(prim))
    Trace.apply_json_to_schedule(trace_json, sch)
    return sch.mod


def _postprocs() -> list[Any]:
    """MetaSchedule's LLVM post-processors but ``RewriteLayout`` (see the module docstring)."""
    from tvm.s_tir.meta_schedule import postproc

    return [postproc.DisallowDynamicLoop(), postproc.RewriteParallelVectorizeUnroll(),
            postproc.RewriteReductionBlock()]


def _x86_intrinsics_only() -> None:
    """Make ``import tvm.s_tir.tensor_intrin`` register the x86 tensor intrinsics alone.

    The package's ``__init__`` imports the intrinsics of every target (minutes on a loaded
    machine, see the module docstring); the only ones an LLVM x86 schedule rule may use are
    in its ``x86`` module. The package is put in ``sys.modules`` without running its
    ``__init__`` and ``x86`` is imported into it. Nothing happens when the package is already
    imported (its intrinsics are registered).
    """
    import importlib
    import importlib.util
    import sys

    name = "tvm.s_tir.tensor_intrin"
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    sys.modules[name] = importlib.util.module_from_spec(spec)
    try:
        importlib.import_module(f"{name}.x86")
    except Exception:  # noqa: BLE001 - no x86 intrinsics: the full package on first use
        del sys.modules[name]


def _strategy(trials: int) -> Any:
    """MetaSchedule's evolutionary search with a population sized for ``trials`` candidates."""
    from tvm.s_tir.meta_schedule.search_strategy import EvolutionarySearch

    population = max(32, min(512, 16 * trials))
    return EvolutionarySearch(population_size=population,
                              init_min_unmeasured=max(8, min(50, 4 * trials)),
                              genetic_num_iters=2 if trials <= 16 else 4)


def _cost_model() -> str:
    """``"xgb"`` (MetaSchedule's default) when ``xgboost`` is installed, else ``"random"``."""
    return "xgb" if importlib.util.find_spec("xgboost") is not None else "random"


def _compile_candidate(build_input: Any) -> Any:
    """``tvm.compile`` of a MetaSchedule candidate, its parallel loops claimed as our kernels'
    are (``backends.tvm.kernel.claims``), so a tuned kernel is measured as it will run."""
    import tvm

    from backends.tvm.kernel import claims

    triple = str(build_input.target.attrs.get("mtriple", "") or "")
    return tvm.compile(build_input.mod, target=build_input.target,
                       tir_pipeline=claims.pipeline_for(triple))


def _make_builder_classes() -> tuple[type, type]:
    """The in-process builder and runner classes (made on first use: they derive from
    MetaSchedule's classes, which need TVM)."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder
    from tvm.s_tir.meta_schedule.runner import PyRunner
    from tvm.s_tir.meta_schedule.runner.local_runner import LocalRunnerFuture

    @derived_object
    class _Builder(PyBuilder):
        """Compiles each candidate in this process into a shared library (``tar``: a tar of
        object files, as TVM's default export, for a remote runner)."""

        def __init__(self, directory: str, tar: bool = False) -> None:
            super().__init__()
            self.directory = directory
            self.tar = tar

        def build(self, build_inputs: list[Any]) -> list[Any]:
            return [self._one(b) for b in build_inputs]

        def _one(self, build_input: Any) -> Any:
            try:
                lib = _compile_candidate(build_input)
                path = tempfile.mkdtemp(dir=self.directory)
                if self.tar:
                    from tvm.support.tar import tar

                    artifact = os.path.join(path, "kernel.tar")
                    lib.export_library(artifact, fcompile=tar)
                else:
                    from backends.tvm.kernel.compile import _link

                    artifact = os.path.join(path, "kernel.so")
                    _link(lib, Path(artifact))
            except Exception as err:  # noqa: BLE001 - a candidate that does not compile
                return BuilderResult(None, f"in-process build failed: {err}")
            return BuilderResult(artifact, None)

    @derived_object
    class _Runner(PyRunner):
        """Times each built candidate in this process (TVM's ``time_evaluator`` on random
        arguments: ``number`` calls a repeat, ``repeat`` repeats, at least
        ``min_repeat_ms``)."""

        def __init__(self, number: int = 3, repeat: int = 3, min_repeat_ms: int = 40) -> None:
            super().__init__()
            self.number = number
            self.repeat = repeat
            self.min_repeat_ms = min_repeat_ms

        def run(self, runner_inputs: list[Any]) -> list[Any]:
            return [self._one(r) for r in runner_inputs]

        def _one(self, runner_input: Any) -> Any:
            import tvm
            from tvm.s_tir.meta_schedule.runner.config import EvaluatorConfig
            from tvm.s_tir.meta_schedule.runner.utils import (
                alloc_argument_common,
                run_evaluator_common,
            )

            try:
                mod = tvm.runtime.load_module(str(runner_input.artifact_path))
                dev = tvm.runtime.device(str(runner_input.device_type), 0)
                fill = tvm.get_global_func("tvm.contrib.random.random_fill_for_measure")
                args = alloc_argument_common(
                    fill, dev, [a.as_json() for a in runner_input.args_info], 1)
                config = EvaluatorConfig(number=self.number, repeat=self.repeat,
                                         min_repeat_ms=self.min_repeat_ms,
                                         enable_cpu_cache_flush=False)
                costs = run_evaluator_common(mod, dev, config, args)
            except Exception as err:  # noqa: BLE001 - a candidate that crashes TVM's checks
                return LocalRunnerFuture(res=None, error_message=f"in-process run: {err}")
            return LocalRunnerFuture(res=costs, error_message=None)

    return _Builder, _Runner


_CLASSES: list[tuple[type, type]] = []


def InProcessBuilder(directory: str, tar: bool = False) -> Any:  # noqa: N802 - a class
    """MetaSchedule builder compiling in this process (see the module docstring)."""
    if not _CLASSES:
        _CLASSES.append(_make_builder_classes())
    return _CLASSES[0][0](directory, tar)


def InProcessRunner(number: int = 3, repeat: int = 3, min_repeat_ms: int = 40) -> Any:  # noqa: N802
    """MetaSchedule runner timing candidates in this process (see the module docstring)."""
    if not _CLASSES:
        _CLASSES.append(_make_builder_classes())
    return _CLASSES[0][1](number, repeat, min_repeat_ms)


def _runner(rpc: RPCSpec | None) -> Any:
    if rpc is None:
        return InProcessRunner()
    from tvm.s_tir.meta_schedule.runner import RPCConfig, RPCRunner

    return RPCRunner(RPCConfig(tracker_host=rpc.host, tracker_port=rpc.port,
                               tracker_key=rpc.key, session_timeout_sec=60))


def search(prims: Mapping[str, Any], target: Target, trials: int, work_dir: str | Path,
           *, rpc: RPCSpec | None = None, top: int = 3, seed: int = 0) -> dict[str, list[Any]]:
    """Tune each ``PrimFunc`` of ``prims`` with MetaSchedule; the traces of its best candidates.

    Args:
        prims: workloads by task name (names made of letters, digits and ``_``).
        target: the tuning target (:func:`tuning_target` of it).
        trials: measured candidates per workload (MetaSchedule's ``max_trials_per_task``;
            the global budget is ``trials × len(prims)``).
        work_dir: MetaSchedule's working directory (its logs and JSON database).
        rpc: run candidates on a tracker's devices (None: in this process).
        top: traces returned per workload, best measured first.
        seed: the search's random seed.
    Returns:
        Task name -> traces as plain JSON (:func:`plain_json`; possibly none: no candidate
        built and ran).
    """
    from tvm.s_tir import meta_schedule as ms

    if not prims:
        return {}
    _x86_intrinsics_only()
    ttarget = tuning_target(target)
    work = str(work_dir)
    names = sorted(prims)
    contexts = []
    for name, rand in zip(names, ms.utils.fork_seed(seed, n=len(names))):
        logger = logging.getLogger(f"{__name__}.{name}")
        space = ms.space_generator.PostOrderApply(sch_rules="from-target",
                                                  postprocs=_postprocs(),
                                                  mutator_probs="from-target")
        contexts.append(ms.TuneContext(
            mod=workload_of(prims[name]), target=ttarget, space_generator=space,
            search_strategy=_strategy(trials), task_name=name, rand_state=rand,
            num_threads=max(1, target.threads), logger=logger).clone())
    database = ms.database.JSONDatabase(work_dir=work, module_equality="structural")
    per_iter = max(1, min(64, trials))
    ms.tune.tune_tasks(
        tasks=contexts, task_weights=[1.0] * len(contexts), work_dir=work,
        max_trials_global=trials * len(contexts), max_trials_per_task=trials,
        num_trials_per_iter=per_iter,
        builder=InProcessBuilder(work, tar=rpc is not None), runner=_runner(rpc),
        database=database, cost_model=_cost_model(), measure_callbacks="default",
        task_scheduler="round-robin", module_equality="structural")
    out: dict[str, list[Any]] = {}
    for name in names:
        mod = workload_of(prims[name])
        if not database.has_workload(mod):
            out[name] = []
            continue
        records = database.get_top_k(database.commit_workload(mod), top)
        out[name] = [plain_json(r.trace.as_json(remove_postproc=False)) for r in records]
    return out


def plain_json(obj: Any) -> Any:
    """A trace's JSON (TVM arrays, maps, strings and integer/float immediates) as plain
    Python values that ``json.dumps`` writes and :func:`apply_trace` reads back.

    Raises:
        TypeError: a value of another kind (an index map, say: such a trace is not kept).
    """
    from tvm import tirx

    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, tirx.IntImm):
        return int(obj.value)
    if isinstance(obj, tirx.FloatImm):
        return float(obj.value)
    if hasattr(obj, "items"):
        return {str(k): plain_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) or type(obj).__name__ == "Array":
        return [plain_json(v) for v in obj]
    raise TypeError(f"a trace holds a {type(obj).__name__}, which the tuning database cannot "
                    f"keep as JSON")


def run_seconds(records: Sequence[Any]) -> list[float]:
    """The mean measured seconds of MetaSchedule tuning records (for logs)."""
    return [sum(float(s) for s in r.run_secs) / max(1, len(r.run_secs)) for r in records]
