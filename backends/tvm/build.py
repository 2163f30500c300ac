"""``build``: from a Relay module to an
:class:`~backends.tvm.exec.executable.Executable` (issue 14 §2).

The pipeline (docs/architecture.md#toolchain):

1. **Link and bind.** Module text is parsed; prelude definitions the program uses are
   linked in (as ``evaluate`` does); ``params`` are bound as constants
   (``passes.bind_params``: ``main``'s weights disappear from its signature).
2. **Optimize** with ``passes.optimize(mod, opt_level)``: ``-O0`` runs nothing, ``-O1``
   Inline, DeadCodeElimination and FuseOps, ``-O2`` adds FoldConstant, ``-O3`` the DL
   passes (SimplifyInference, CanonicalizeOps, EliminateCommonSubexpr, FoldScaleAxis,
   CombineParallelConv2D, AlterOpLayout — blocking by the target's lanes: ``target=`` is
   read once into a :class:`~backends.tvm.target.Target` that every later step uses, see
   :func:`pipeline`). Globals that dead-code elimination drops
   (unreachable from ``main``) are put back unoptimized: ``exe.run`` runs any global.
3. **Fuse**: ``passes.fuse_ops`` — at ``-O0`` with ``fuse_opt_level=0``, so every operator
   call still becomes its own ``Primitive=1`` function (a kernel); above, FuseOps has
   already run and running it again changes nothing (it is idempotent).
   Steps 1–3 are remembered (:class:`PrepareMemo`): the fused module, pickled in the kernel
   cache's directory under a digest of the input module, the params' bytes, the opt level
   and the pipeline's sources, with its kernels' keys; a build of the same input loads it
   and runs no pass (the warm build's fast path).
4. **Resolve a kernel per primitive function** (:class:`KernelTable`): a function whose
   parameters are tensors of concrete shapes is compiled now by
   ``backends.tvm.kernel.compile_function`` (through its :class:`KernelCache`: memory and
   disk, so a model compiles once); one with ``Any`` or symbolic dimensions gets a
   :class:`KernelSlot` that compiles a kernel per actual argument signature at run time.
   When the kernel compiler declines (``NoLowering``: an operator without a lowering, a
   tuple parameter, ...), fails, or is not installed (no ``tvm``), and for zero-size
   tensors (which TVM's calling convention rejects), the group runs as a
   :class:`~backends.tvm.fallback.FallbackKernel` over the numpy references; the table
   keeps the reasons (``exe.fallbacks``).
   Before the executor asks, :meth:`KernelTable.precompile` compiles every such kernel at
   once (``backends.tvm.kernel.compile_many``: equal kernels once, ``jobs`` at a time in
   worker processes and this one).
5. **Compile the program** for the chosen executor: ``"vm"`` (:mod:`backends.tvm.exec.vm`),
   ``"graph"`` (:mod:`backends.tvm.exec.graph`, first-order dataflow only) or ``"aot"``
   (:mod:`backends.tvm.exec.aot`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from backends.tvm.kernel_table import (
    BuildReport,
    KernelRecord,
    KernelSlot,
    KernelTable,
)
from semantics.errors import (
    InternalError,
    RelayArgumentTypeError,
    RelayArgumentValueError,
    RelayTypeError,
)
from semantics.expr import Constant, Function
from semantics.module import IRModule
from semantics.visitor import post_order

__all__ = ["EXECUTORS", "BuildReport", "KernelRecord", "KernelSlot", "KernelTable",
           "PrepareMemo", "build", "memo_key", "prepare"]

EXECUTORS = ("vm", "graph", "aot")


def prepare(mod: Any, params: Mapping[str, Any] | None = None, opt_level: int = 3,
            target: Any = None) -> IRModule:
    """Steps 1–3 of the pipeline: the fused, type-annotated module.

    Args:
        mod: an ``IRModule`` or module text.
        params: weights of ``main`` by parameter name (bound as constants).
        opt_level: 0–3.
        target: the build's target (``Target.of`` of it; None: the host): AlterOpLayout
            blocks convolutions by its lanes.
    Returns:
        The module after optimization and fusion, with ``checked_type`` on every node.
    Raises:
        ParseError: malformed text. RelayTypeError: an ill-typed program, a bad
        ``opt_level``, or ``params`` that do not fit ``main``.
    """
    import passes
    import typechecker
    from interpreter.linking import with_prelude
    from semantics.parser import parse

    if isinstance(mod, str):
        mod = parse(mod)
    if not isinstance(mod, IRModule):
        raise RelayTypeError(f"build expects an IRModule or module text, got {type(mod).__name__}")
    if isinstance(opt_level, bool) or not isinstance(opt_level, int) or not 0 <= opt_level <= 3:
        raise RelayTypeError(f"bad opt_level {opt_level!r}: expected 0, 1, 2 or 3")
    mod = with_prelude(mod)
    mod = lower_memory_dialect(mod)
    if params:
        bound = passes.bind_params(mod, params)
        assert isinstance(bound, IRModule)
        mod = bound
    typechecker.check(mod)
    optimized = passes.optimize(mod, opt_level, only=pipeline(opt_level, target))
    # Dead-code elimination drops globals main does not reach; every global stays runnable
    # (``exe.run(entry)``), so those come back as they were.
    missing = {name: fn for name, fn in mod.functions.items()
               if name not in optimized.functions}
    mod = optimized.with_functions({**optimized.functions, **missing}) if missing else optimized
    mod = passes.fuse_ops(mod, fuse_opt_level=0 if opt_level == 0 else 2)
    inferred = typechecker.infer(mod)
    if not isinstance(inferred, IRModule):
        raise InternalError("typechecker.infer of a module returned no module")
    if opt_level > 0:
        # A recurrent step's hidden projection and its cell kernels: one kernel (a tuple
        # result), compiled once for every sequence length (passes/fuse_cells.py).
        from passes.fuse_cells import fuse_cells

        cells = fuse_cells(inferred)
        if cells is not inferred:
            inferred = typechecker.infer(cells)
            if not isinstance(inferred, IRModule):
                raise InternalError("typechecker.infer of a module returned no module")
        from backends.tvm.target import Target

        record = Target.of(target)
        if record.avx2 and not record.vnni:
            # int8 convolution data known to be in [0, 127] read through a clip: the
            # kernels then run vpmaddubsw (passes/value_range.py)
            from passes.value_range import clamp_known_ranges

            clamped = clamp_known_ranges(inferred)
            if clamped is not inferred:
                inferred = typechecker.infer(clamped)
                if not isinstance(inferred, IRModule):
                    raise InternalError("typechecker.infer of a module returned no module")
    return inferred


def lower_memory_dialect(mod: IRModule) -> IRModule:
    """``mod`` with every ``memory.kill(e)`` replaced by ``let %_ = e; ()`` (its meaning: the
    backend frees memory itself).

    Raises:
        RelayTypeError: naming the first call of ``memory.alloc_storage`` or
            ``memory.alloc_tensor`` (with its span): only the reference interpreter runs
            explicit allocation.
    """
    from backends.tvm.lower.memory import MEMORY_DIALECT
    from semantics.expr import Let, Op, Tuple, Var
    from semantics.visitor import ExprMutator

    class _Kill(ExprMutator):
        def visit_call(self, new: Any, old: Any) -> Any:
            if not isinstance(new.op, Op) or new.op.name not in MEMORY_DIALECT:
                return new
            if new.op.name != "memory.kill":
                raise RelayTypeError(
                    f"the TVM backend does not run operator {new.op.name}: it plans and "
                    "frees memory itself; evaluate programs that allocate explicitly with "
                    "interpreter.evaluate", new.span)
            return Let(Var("_"), new.args[0] if new.args else Tuple(()), Tuple(()),
                       span=new.span)

    uses = any(isinstance(n, Op) and n.name in MEMORY_DIALECT
               for fn in mod.functions.values() for n in post_order(fn))
    if not uses:
        return mod
    out: dict[str, Function] = {}
    for name, fn in mod.functions.items():
        new = _Kill().mutate(fn)
        assert isinstance(new, Function)
        out[name] = new
    return mod.with_functions(out)


def pipeline(opt_level: int, target: Any = None) -> list[Any]:
    """The passes of ``optimize`` at ``opt_level`` for ``target``: AlterOpLayout with the
    target's lanes as its channel block and its lanes and L2 size for the Winograd rule (the
    only pass that depends on the target)."""
    from backends.tvm.target import Target
    from passes.alter_op_layout import alter_op_layout_pass
    from passes.alter_winograd import WinogradPolicy
    from passes.manager import passes_at

    chosen = passes_at(opt_level)
    if any(p.name == "AlterOpLayout" for p in chosen):
        record = Target.of(target)
        policy = WinogradPolicy(enabled=record.winograd, lanes=record.lanes,
                                l2_bytes=record.l2_bytes)
        altered = alter_op_layout_pass(record.lanes, policy)
        chosen = [altered if p.name == "AlterOpLayout" else p for p in chosen]
    return chosen


MEMO_VERSION = "1"
"""Part of every memo key (see :class:`PrepareMemo`)."""

_MEMO_SOURCES = ("semantics", "passes", "typechecker", "interpreter")


@functools.cache
def _pipeline_digest() -> str:
    """A digest of every source the pass pipeline may run (the packages of
    :data:`_MEMO_SOURCES` and this module): editing any invalidates every memo."""
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256(Path(__file__).read_bytes())
    for package in _MEMO_SOURCES:
        for path in sorted((root / package).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _kernel_digest() -> str:
    """The kernel compiler's version and code digest (a memo holds kernel keys: they change
    with it), or ``""`` without the kernel compiler."""
    try:
        from backends.tvm import kernel as kernels
    except ImportError:
        return ""
    return f"{kernels.CACHE_VERSION}:{kernels.code_digest()}"


def memo_key(mod: Any, params: Mapping[str, Any] | None, opt_level: int,
             target: Any = None) -> str:
    """The key of ``prepare(mod, params, opt_level, target)``'s result (hex digest).

    Made of the module's text (``pretty``: every name, type and attribute), the parameters'
    names, dtypes, shapes and bytes (:func:`params_digest`), the opt level,
    :data:`MEMO_VERSION`, :func:`_pipeline_digest`, the kernel compiler's digest (the memo
    records kernel keys, which change with it) and the target (``Target.key``: the passes'
    choices and the kernels' keys depend on it).
    """
    from backends.tvm.target import Target
    from semantics.printer import pretty

    h = hashlib.sha256()
    h.update(json.dumps([MEMO_VERSION, _pipeline_digest(), _kernel_digest(),
                         opt_level, Target.of(target).key()]).encode())
    h.update(mod.encode() if isinstance(mod, str) else pretty(mod).encode())
    h.update(params_digest(params or {}).encode())
    return h.hexdigest()[:40]


HASH_CHUNK = 1 << 23
"""Bytes per SHA-256 chunk of :func:`params_digest` (8 MiB)."""


def params_digest(params: Mapping[str, Any]) -> str:
    """A SHA-256 digest of the parameters' names, dtypes, shapes and bytes.

    The bytes are hashed in chunks of :data:`HASH_CHUNK` whose digests are hashed in order
    (a hash list: as collision-resistant as SHA-256 itself), so that large weights hash on
    every CPU at once — ``hashlib`` releases the interpreter lock while it hashes.  Measured
    here (AMD EPYC, SHA extensions): SHA-256 1.24 GB/s on one core, as fast as SHA-1 and
    faster than BLAKE2b (0.74), MD5 (0.54) or SHA-512 (0.55): VGG-16's 553 MB of weights
    take 0.45 s on one core, about half on two.
    """
    h = hashlib.sha256()
    chunks: list[Any] = []
    for name in sorted(params):
        array: Any = np.ascontiguousarray(params[name])
        h.update(json.dumps([name, array.dtype.str, list(array.shape)]).encode())
        data = array.reshape(-1).view(np.uint8)
        for start in range(0, data.size, HASH_CHUNK):
            chunks.append(data[start:start + HASH_CHUNK])
        h.update(b"%d;" % len(range(0, data.size, HASH_CHUNK)))
    big = sum(c.size for c in chunks) > 4 * HASH_CHUNK
    digests = _hash_pool().map(_chunk_digest, chunks) if big else map(_chunk_digest, chunks)
    for d in digests:
        h.update(d)
    return h.hexdigest()


def _chunk_digest(chunk: Any) -> bytes:
    return hashlib.sha256(chunk).digest()


_HASH_POOL: tuple[int, Any] | None = None


def _hash_pool() -> Any:
    """The threads that hash large parameters (one per CPU, at most 8; one pool per
    process: a forked child has none of its parent's threads)."""
    global _HASH_POOL
    from concurrent.futures import ThreadPoolExecutor

    if _HASH_POOL is None or _HASH_POOL[0] != os.getpid():
        _HASH_POOL = (os.getpid(), ThreadPoolExecutor(
            max_workers=max(1, min(8, os.cpu_count() or 1)),
            thread_name_prefix="relay-params-hash"))
    return _HASH_POOL[1]


class PrepareMemo:
    """The result of :func:`prepare` remembered on disk beside the kernels (the warm build's
    fast path).

    The fused module of a ``(module, params, opt level)`` is pickled into the kernel
    cache's directory as ``<memo_key>.module`` (written in the background, renamed into
    place) together with the cache keys of its kernels; a later build of the same input
    loads it instead of running the pass pipeline, and finds its kernels without hashing
    them, so a build whose kernels are cached runs neither the passes nor the compiler.
    Nothing is remembered without a disk cache, for a program with ADTs (a pickled copy of
    a constructor would not be the prelude's own object, and values built with it are
    matched by identity), or for a module too deep to pickle; an unreadable memo is a miss.

    Args:
        mod, params, opt_level, target: as for :func:`prepare`.
        cache: a ``backends.tvm.kernel.KernelCache`` or None (the default cache).
    """

    def __init__(self, mod: Any, params: Mapping[str, Any] | None, opt_level: int,
                 cache: Any, target: Any = None) -> None:
        self.store: Any = None
        self.key: str | None = None
        self.kernel_keys: list[str | None] | None = None
        try:
            from backends.tvm import kernel as kernels
        except ImportError:
            return
        store = kernels.default_cache() if cache is None else cache
        if not store.disk or isinstance(opt_level, bool) or not isinstance(opt_level, int) \
                or not isinstance(mod, (str, IRModule)):
            return
        try:
            self.key = memo_key(mod, params, opt_level, target)
        except (TypeError, ValueError, RecursionError):
            return
        self.store = store

    def load(self) -> IRModule | None:
        """The remembered fused module (with its types, constants frozen), or None."""
        if self.store is None or self.key is None:
            return None
        found = self.store.load_module(self.key)
        if not (isinstance(found, tuple) and len(found) == 2
                and isinstance(found[0], IRModule) and not found[0].types):
            return None
        try:
            module = _refrozen(found[0])
        except Exception:  # noqa: BLE001 - a damaged memo: prepare again
            return None
        if module is not None and isinstance(found[1], list):
            self.kernel_keys = found[1]
        return module

    def save(self, fused: IRModule, kernel_keys: list[str | None]) -> None:
        """Remember ``fused`` and the keys of its kernels (in :meth:`KernelTable.requests`
        order)."""
        if self.store is not None and self.key is not None and not fused.types:
            self.store.save_module(self.key, (fused, list(kernel_keys)))


def _refrozen(mod: IRModule) -> IRModule | None:
    """A loaded memo made whole: read-only constants (None: not a typed module).

    No type inference runs: the memo is the pickle of :func:`prepare`'s result, whose every
    node carries its ``checked_type`` (the cache checks the file's SHA-256, so what loads is
    what was saved, by a process whose pass pipeline and kernel compiler had the digests in
    the key). Inferring again would cost more than the rest of a warm build of a small model
    (and import the type checker).
    """
    for fn in mod.functions.values():
        if getattr(fn, "checked_type", None) is None:
            return None
        for node in post_order(fn):
            if type(node) is Constant:
                node.data.setflags(write=False)
    return mod


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _check_options(params: Any, target: Any, opt_level: Any, jobs: Any, max_depth: Any
                   ) -> None:
    """Refuse bad ``build`` options with a :class:`RelayArgumentTypeError` (wrong kind) or
    :class:`RelayArgumentValueError` (bad value) before anything runs."""
    if params is not None and not isinstance(params, Mapping):
        raise RelayArgumentTypeError(f"params must be a dict of parameter name -> array, not "
                                     f"{type(params).__name__}")
    if params is not None and not all(isinstance(k, str) for k in params):
        raise RelayArgumentTypeError("params must be keyed by parameter names (strings)")
    if not _is_int(opt_level):
        raise RelayArgumentTypeError(f"bad opt_level {opt_level!r}: expected 0, 1, 2 or 3")
    if not 0 <= opt_level <= 3:
        raise RelayArgumentValueError(f"bad opt_level {opt_level}: expected 0, 1, 2 or 3")
    if jobs is not None and not _is_int(jobs):
        raise RelayArgumentTypeError(f"jobs must be a positive integer or None, not {jobs!r}")
    if jobs is not None and jobs < 1:
        raise RelayArgumentValueError(f"jobs must be a positive integer, not {jobs}")
    if not _is_int(max_depth):
        raise RelayArgumentTypeError(f"max_depth must be a positive integer, not {max_depth!r}")
    if max_depth < 1:
        raise RelayArgumentValueError(f"max_depth must be a positive integer, not {max_depth}")
    if target is not None and target != "llvm":
        from backends.tvm.target import normalize_target

        normalize_target(target)


def _open_tuning(tuning: Any, target: Any) -> Any:
    """``build``'s ``tuning`` read for the target (``backends.tvm.tune.database``)."""
    if tuning is None:
        return None
    from backends.tvm.target import Target
    from backends.tvm.tune.database import open_tuning

    return open_tuning(tuning, Target.of(target))


def build(mod: Any, params: Mapping[str, Any] | None = None, target: Any = "llvm",
          opt_level: int = 3, executor: str = "vm", *, cache: Any = None,
          max_depth: int = 100_000, compile_kernels: bool = True,
          jobs: int | None = None,
          progress: Callable[[int, int], None] | None = None, tuning: Any = None) -> Any:
    """Compile a Relay module for the CPU (docs/architecture.md#toolchain).

    Args:
        mod: an ``IRModule`` or module text.
        params: ``main``'s weights by parameter name (bound as constants).
        target: the machine to compile for, read once into a
            :class:`~backends.tvm.target.Target` that the passes, lowerings, schedules and
            caches all use: ``"llvm"`` or None (the host CPU with its features), a string
            ``"llvm -mcpu=<cpu>"``, a dict ``{"kind": "llvm", "mcpu": ..., "lanes": 8}``
            (any field of the record forces it), or a ``Target``
            (``Target.host().with_lanes(16)``).
        opt_level: 0–3 (the ``passes.optimize`` levels; fusion always happens).
        executor: ``"vm"`` (the whole language), ``"graph"`` (first-order dataflow, with
            memory planning) or ``"aot"`` (a generated Python module).
        cache: a ``backends.tvm.kernel.KernelCache`` for the kernels (default: the
            compiler's own memory + disk cache).
        max_depth: the bound on nested non-tail calls at run time ("stack exhausted").
        compile_kernels: False runs every fused group with the numpy fallback (no TVM).
        jobs: kernels compiled at a time: this process and ``jobs - 1`` workers (default:
            ``$RELAY_TVM_JOBS``, else by kernels, CPUs and load: ``kernel.workers``).
        progress: called as ``progress(done, total)`` as kernels compile (``relay build``'s
            progress bar); not called when every kernel is cached.
        tuning: a tuning database's directory (``relay tune``): kernels whose record won
            compile from the record's MetaSchedule schedule (``backends.tvm.tune``).
    Returns:
        An :class:`~backends.tvm.exec.executable.Executable`; its ``report`` is a
        :class:`BuildReport` (time per phase, kernels compiled and cached) and its
        ``kernels.records`` list every kernel with its schedule or fallback reason.
    Raises:
        ParseError, RelayTypeError: a malformed or ill-typed program, bad options, or a
            program the graph executor cannot run (it says to use ``executor="vm"``);
            ``TuningDatabaseError``: no ``tuning`` database for the target, or a damaged one.
    """
    from backends.tvm.exec.executable import Executable
    from backends.tvm.target import Target

    if executor not in EXECUTORS:
        raise RelayArgumentValueError(
            f"unknown executor {executor!r}: expected one of {', '.join(EXECUTORS)}")
    _check_options(params, target, opt_level, jobs, max_depth)
    tuning = _open_tuning(tuning, target)
    if compile_kernels and jobs != 1:
        try:
            from backends.tvm import kernel as kernels
        except ImportError:
            pass
        else:
            kernels.prestart_workers(cache, jobs)
    report = BuildReport()
    start = time.perf_counter()
    record = Target.of(target)
    memo = PrepareMemo(mod, params, opt_level, cache, record) if compile_kernels else None
    fused = memo.load() if memo is not None else None
    remembered = fused is not None
    if fused is None:
        fused = prepare(mod, params, opt_level, record)
    now = time.perf_counter()
    report.phases["prepare (remembered)" if remembered else "prepare"] = now - start
    start = now
    table = KernelTable(record, cache, compile_kernels, tuning)
    keys = table.precompile(fused, jobs, memo.kernel_keys if memo is not None else None,
                            progress)
    if memo is not None and not remembered and keys is not None:
        memo.save(fused, keys)
    report.kernels_requested, report.kernels_compiled = table.requested, table.compiled_now
    report.kernels_failed = table.failed
    now = time.perf_counter()
    report.phases["kernels"] = now - start
    start = now
    exe = Executable.from_fused(fused, executor=executor, target=record, opt_level=opt_level,
                                cache=cache, max_depth=max_depth,
                                compile_kernels=compile_kernels, tuning=tuning)
    report.phases["executor"] = time.perf_counter() - start
    exe.report = report
    return exe
