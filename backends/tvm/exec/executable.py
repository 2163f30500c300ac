"""``Executable``: a build, its executor, saving and loading (docs/architecture.md#toolchain).

An :class:`Executable` runs ``main`` with ``exe(*inputs)`` and any global with
``exe.run(entry, *args)``. Arguments and results convert exactly as
``interpreter.evaluate``'s (:mod:`interpreter.convert`): numpy arrays of the declared
dtype and shape, Python scalars converted to the parameter's dtype, tuples,
``ConstructorValue`` s resolved by name, ``RefValue`` cells; a wrong number of
arguments is a ``RelayRuntimeError`` with the oracle's message; results are ndarrays,
tuples, ``ConstructorValue`` s, ``RefValue`` s and closures (opaque ``Closure`` s).

``exe.save(path)`` writes a directory:

* ``program.relay`` — the optimized, fused program as Relay text (constants in the
  metadata section);
* ``build.json`` — the executor, target, opt level and depth budget, and the size and
  SHA-256 of every other file of the build (written last);
* ``aot.py`` — for ``executor="aot"``, the generated Python module;
* ``kernels/`` — the compiled kernels' libraries (the kernel cache's disk directory, when
  the TVM kernel compiler is installed), tuned kernels (``build(..., tuning=DB)``) included;
* ``tuned_records/`` — when the build has tuned kernels, the tuning records they were
  compiled from (a tuning database holding those records alone, for the build's target).

``backends.tvm.load(path)`` first checks every file against ``build.json`` (a missing,
truncated or changed file — program, AoT module, a kernel's library, metadata or weights
— is refused with a ``RelayRuntimeError`` naming it: nothing damaged is parsed, imported
or mapped), then re-reads the program (no optimization runs again) and resolves the
kernels through the saved cache directory, so nothing recompiles. A build loaded for its
target runs its tuned kernels again (their records are read from ``tuned_records/``); loaded for
another target (a build saved for the host and loaded on another machine) its records do
not apply and every kernel is ours, compiled there; ``load`` then warns
(:class:`TunedKernelsNotApplied`, naming the targets the records were tuned for).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from backends.tvm.kernel_table import KernelTable
from interpreter.convert import convert_arguments
from interpreter.export import export_value
from semantics import errors
from semantics.errors import (
    InternalError,
    RelayArgumentTypeError,
    RelayError,
    RelayRuntimeError,
    RelayTypeError,
)
from semantics.module import IRModule

__all__ = ["Executable", "FORMAT_VERSION", "TunedKernelsNotApplied", "load"]

FORMAT_VERSION = 2
"""Version of the saved-build layout (2: ``build.json`` lists every file's size and SHA-256).
"""

EXECUTORS = ("vm", "graph", "aot")

TUNED_RECORDS = "tuned_records"
"""The directory of a saved build holding its tuned kernels' records."""


class Executable:
    """A built program (see the module docstring). Build with ``backends.tvm.build``.

    Attributes:
        module: the optimized, fused program it runs.
        executor: ``"vm"``, ``"graph"`` or ``"aot"``.
        kernels: the :class:`~backends.tvm.kernel_table.KernelTable` (``.compiled`` kernels,
            ``.fallbacks`` with reasons, ``.records``: every kernel with the schedule it
            got or why it fell back).
        report: the :class:`~backends.tvm.kernel_table.BuildReport` of the ``build`` that made it
            (time per phase, kernels compiled and cached); None for a loaded build.
        peak_memory: graph executor only — bytes of planned intermediate storage.
        intermediate_bytes: graph executor only — the sum of all intermediate sizes.
    """

    def __init__(self, module: IRModule, executor: str, target: Any, opt_level: int,
                 kernels: KernelTable, runner: Any, max_depth: int):
        self.module = module
        self.executor = executor
        self.target = target
        self.opt_level = opt_level
        self.kernels = kernels
        self.max_depth = max_depth
        self._runner = runner
        self._param_types: dict[str, list[Any]] = {}
        self.report: Any = None

    @staticmethod
    def from_fused(fused: IRModule, *, executor: str, target: Any, opt_level: int,
                   cache: Any = None, max_depth: int = 100_000,
                   compile_kernels: bool = True, aot_source: str | None = None,
                   tuning: Any = None) -> Executable:
        """The executable of an already fused and type-checked module (``build``, ``load``;
        ``aot_source``: a saved ``aot.py`` to import instead of generating the code;
        ``tuning``: the build's tuning database, see ``KernelTable``)."""
        table = KernelTable(target, cache, compile_kernels, tuning)
        target = table.target         # the Target record, read once
        runner: Any
        if executor == "vm":
            from backends.tvm.exec.vm import VM
            from backends.tvm.exec.vm_compile import Compiler

            closures = Compiler(fused, table.kernel_for).compile_all()
            runner = _VMRunner(VM(fused, max_depth), closures)
        elif executor == "graph":
            from backends.tvm.exec.graph import GraphRunner

            runner = GraphRunner(fused, table)
        elif executor == "aot":
            from backends.tvm.exec.aot import AotRunner

            runner = AotRunner(fused, table, max_depth, source_path=aot_source)
        else:
            raise RelayTypeError(f"unknown executor {executor!r}")
        return Executable(fused, executor, target, opt_level, table, runner, max_depth)

    # -- running ---------------------------------------------------------------------------
    def __call__(self, *inputs: Any) -> Any:
        """Run ``main`` on ``inputs`` (see :meth:`run`)."""
        return self.run("main", *inputs)

    def run(self, entry: str, *args: Any) -> Any:
        """Run the global ``entry`` on ``args``; the result as ``evaluate`` returns it.

        Raises:
            RelayRuntimeError: no such global, wrong arguments, or the program fails
                (non-exhaustive match, division by zero, stack exhausted, ...).
        """
        name, values = self._arguments(entry, args)
        try:
            with np.errstate(all="ignore"):
                result = self._runner.run(name, values)
        except (RelayError, InternalError):
            raise
        except RecursionError as exc:
            raise RelayRuntimeError(
                f"stack exhausted: the {self.executor} executor ran out of Python stack "
                f"({exc}); use executor=\"vm\" for deep recursion") from None
        except Exception as exc:
            raise InternalError(
                f"the {self.executor} executor failed: {type(exc).__name__}: {exc}") from exc
        return export_value(result)

    def profile(self, *inputs: Any, entry: str = "main", repeat: int = 10) -> list[Any]:
        """Graph executor: time each kernel call of one run of ``entry`` on ``inputs``.

        Every kernel is called once to warm up and ``repeat`` more times on its real inputs;
        the median is reported. Returns one
        :class:`~backends.tvm.exec.graph.StepProfile` per kernel call, in evaluation order
        (kernel name, operators, output shapes, seconds, FLOPs of its convolutions and
        dense products).

        Raises:
            RelayRuntimeError: not a graph executable, or wrong arguments (as :meth:`run`).
        """
        if self.executor != "graph":
            raise RelayRuntimeError(
                f"profile needs executor=\"graph\" (this executable uses {self.executor!r})")
        name, values = self._arguments(entry, inputs)
        with np.errstate(all="ignore"):
            return list(self._runner.profile(name, values, repeat))

    def _arguments(self, entry: str, args: tuple[Any, ...]) -> tuple[str, list[Any]]:
        """The global's name and the converted arguments (``run``'s checks)."""
        if not isinstance(entry, str):
            raise RelayRuntimeError(f"entry must be a global's name, got {entry!r}")
        name = entry.lstrip("@")
        fn = self.module.functions.get(name)
        if fn is None:
            raise RelayRuntimeError(f"the module has no global @{name}")
        where = "@" + name
        if len(args) != len(fn.params):
            raise RelayRuntimeError(
                errors.wrong_arity(where, len(fn.params), len(args)),
                fn.span)
        types = self._param_types.get(name)
        if types is None:
            types = self._param_types[name] = [
                p.type_annotation if p.type_annotation is not None else p.checked_type
                for p in fn.params]
        return name, convert_arguments(fn.params, args, self.module, where, types)

    @property
    def fallbacks(self) -> list[tuple[str, str]]:
        """The primitive functions run by the numpy fallback, with the reason."""
        return list(self.kernels.fallbacks)

    @property
    def peak_memory(self) -> int:
        """Graph executor: bytes of intermediate storage after memory planning."""
        return int(getattr(self._runner, "peak_memory", 0))

    @property
    def intermediate_bytes(self) -> int:
        """Graph executor: the sum of the sizes of all intermediate tensors."""
        return int(getattr(self._runner, "intermediate_bytes", 0))

    @property
    def source(self) -> str | None:
        """AoT: the generated Python module's source."""
        return getattr(self._runner, "source", None)

    # -- saving ----------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the build to the directory ``path`` (created if needed; see the module doc).

        Raises:
            RelayRuntimeError: the directory cannot be written.
        """
        from semantics.printer import pretty

        path = os.fspath(path)
        try:
            os.makedirs(path, exist_ok=True)
            with open(os.path.join(path, "program.relay"), "w", encoding="utf-8") as f:
                f.write(pretty(self.module))
            source = self.source
            if source is not None:
                with open(os.path.join(path, "aot.py"), "w", encoding="utf-8") as f:
                    f.write(source)
            _export_kernels(self.kernels, os.path.join(path, "kernels"))
            _export_tuning(self.kernels, os.path.join(path, TUNED_RECORDS))
            meta = {"format": FORMAT_VERSION, "executor": self.executor,
                    "target": _saved_target(self.target), "opt_level": self.opt_level,
                    "max_depth": self.max_depth, "files": _manifest(path)}
            with open(os.path.join(path, "build.json"), "w", encoding="utf-8") as f:
                json.dump(meta, f, indent=2, default=str)
        except OSError as exc:
            raise RelayRuntimeError(f"cannot save the build to {path}: {exc}") from None

    def __repr__(self) -> str:
        return (f"<Executable {self.executor} -O{self.opt_level}: {self.kernels.compiled} "
                f"compiled kernels, {len(self.kernels.fallbacks)} fallbacks>")


def _kernel_cache(directory: str) -> Any:
    """A kernel cache on ``directory``, or None without the TVM kernel compiler."""
    try:
        from backends.tvm import kernel as kernels
    except ImportError:
        return None
    return kernels.KernelCache(directory)


def _export_kernels(table: KernelTable, directory: str) -> int:
    """Copy the build's compiled kernels (library, metadata, constant blobs) from the kernel
    cache's directory into ``directory``; the number of kernels copied.

    A kernel whose files are not in the cache directory (a cache that could not write
    to disk) is skipped: loading the build compiles it again.
    """
    if not table.compiled_specs:
        return 0
    try:
        from backends.tvm import kernel as kernels
    except ImportError:
        return 0
    cache = table.cache if table.cache is not None else kernels.default_cache()
    cache.flush()   # the cache writes libraries in the background: wait for them
    spec = table.target
    os.makedirs(directory, exist_ok=True)
    copied = 0
    for (func, types), record in zip(table.compiled_specs, table.compiled_tuning):
        if record is None:
            key = cache.key_of(func, types, spec)
        else:
            from backends.tvm.tune.apply import tuned_key

            key = tuned_key(record, func, types, spec, cache)
        files = cache.entry_files(key)
        for source in files:        # blobs, library, metadata last (it marks an entry complete)
            target = os.path.join(directory, source.name)
            if not os.path.isfile(target) or os.path.getsize(target) != source.stat().st_size:
                shutil.copyfile(source, target)
        copied += bool(files)
    return copied


def _export_tuning(table: KernelTable, directory: str) -> None:
    """Write the tuning records of the build's tuned kernels as a tuning database in
    ``directory``: exactly those records for the build's target (an earlier save's records
    for that target are replaced, or removed when no kernel is tuned; nothing else there is
    touched)."""
    from backends.tvm.tune.database import RECORDS, TuningDatabase, target_directory

    records = {r.workload_hash: r for r in table.compiled_tuning if r is not None}
    path = target_directory(directory, table.target) / RECORDS
    if path.is_file():
        path.unlink()
    if records:
        TuningDatabase(directory, table.target).update(list(records.values()))


def _saved_tuning(directory: str, target: Any) -> Any:
    """The tuning records saved with a build, for the target it is loaded for (None: none,
    or none for that target: its kernels are then ours)."""
    if not os.path.isdir(directory):
        return None
    from backends.tvm.target import Target
    from backends.tvm.tune.database import RECORDS, TuningDatabase, target_directory

    record = Target.of(target)
    if not (target_directory(directory, record) / RECORDS).is_file():
        saved = sorted(d.name for d in Path(directory).iterdir() if (d / RECORDS).is_file())
        if saved:
            warnings.warn(
                f"the saved build's tuned kernels were tuned for {', '.join(saved)}; this "
                f"build is for {record.mcpu} ({record.lanes} lanes), so they do not apply "
                f"and every kernel is the compiler's own (tune again here: relay tune)",
                TunedKernelsNotApplied, stacklevel=3)
        return None
    return TuningDatabase.open(directory, record)


class TunedKernelsNotApplied(RuntimeWarning):
    """``load`` of a build whose tuned kernels were tuned for another target: they do not
    apply there, and the build runs the compiler's own kernels (compiled for this target)."""


def _saved_target(target: Any) -> Any:
    """The target as ``build.json`` records it: ``"llvm"`` for the host (loading on another
    machine then compiles for that one), else every field of the record (a forced target
    stays forced)."""
    from backends.tvm.target import Target

    return "llvm" if target.key() == Target.host().key() else target.to_dict()


def _manifest(path: str) -> dict[str, dict[str, Any]]:
    """Every file of the saved build in ``path`` but ``build.json``: its path relative to
    ``path`` (``/``-separated) -> its size and SHA-256."""
    files: dict[str, dict[str, Any]] = {}
    for root, _dirs, names in os.walk(path):
        for name in sorted(names):
            full = os.path.join(root, name)
            rel = os.path.relpath(full, path).replace(os.sep, "/")
            if rel == "build.json" or not os.path.isfile(full):
                continue
            files[rel] = {"bytes": os.path.getsize(full), "sha256": _file_digest(full)}
    return files


def _file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _check_files(path: str, files: Any) -> None:
    """Refuse a saved build one of whose listed files is missing, unreadable, or not the
    bytes that were saved (see the module docstring)."""
    if not isinstance(files, dict) or "program.relay" not in files:
        raise RelayRuntimeError(f"not a saved build: {path}: build.json lists no files")
    for rel, want in files.items():
        if (not isinstance(rel, str) or not isinstance(want, dict) or rel.startswith("/")
                or ".." in rel.split("/")):
            raise RelayRuntimeError(f"damaged saved build {path}: build.json lists {rel!r}")
        full = os.path.join(path, *rel.split("/"))
        try:
            size = os.path.getsize(full)
            intact = size == want.get("bytes") and _file_digest(full) == want.get("sha256")
        except OSError as exc:
            raise RelayRuntimeError(f"damaged saved build {path}: {rel}: {exc.strerror or exc}"
                                    ) from None
        if not intact:
            raise RelayRuntimeError(f"damaged saved build {path}: {rel} is not the file that "
                                    f"was saved ({size} bytes, {want.get('bytes')!r} saved, "
                                    f"or other contents)")


def _checked_meta(path: str, meta: Any) -> tuple[str, Any, int, int]:
    """``build.json``'s (executor, target, opt level, depth budget), each checked."""
    if not isinstance(meta, dict):
        raise RelayRuntimeError(f"not a saved build: {path}")
    if meta.get("format") != FORMAT_VERSION:
        raise RelayRuntimeError(f"not a saved build: {path}: unknown format "
                                f"{meta.get('format')!r} (this version reads {FORMAT_VERSION})")
    executor, target = meta.get("executor"), meta.get("target", "llvm")
    opt_level, max_depth = meta.get("opt_level"), meta.get("max_depth")
    if executor not in EXECUTORS:
        raise RelayRuntimeError(f"damaged saved build {path}: build.json: executor "
                                f"{executor!r} is not one of {', '.join(EXECUTORS)}")
    if not isinstance(target, (str, dict)):
        raise RelayRuntimeError(f"damaged saved build {path}: build.json: target {target!r}")
    if type(opt_level) is not int or not 0 <= opt_level <= 3:
        raise RelayRuntimeError(f"damaged saved build {path}: build.json: opt_level "
                                f"{opt_level!r} is not an integer from 0 to 3")
    if type(max_depth) is not int or max_depth < 1:
        raise RelayRuntimeError(f"damaged saved build {path}: build.json: max_depth "
                                f"{max_depth!r} is not a positive integer")
    return executor, target, opt_level, max_depth


def load(path: str | os.PathLike[str]) -> Executable:
    """Load a build saved by :meth:`Executable.save`.

    Raises:
        RelayRuntimeError: the directory is not a saved build (missing or unreadable
            files, an unknown format version, bad values in ``build.json``) or is damaged
            (a file missing or not the one saved: see the module docstring).
        ParseError, RelayTypeError: the saved program does not parse or type-check.
    """
    from semantics.parser import parse

    if not isinstance(path, (str, os.PathLike)):
        raise RelayArgumentTypeError(f"load expects the path of a saved build's directory, "
                                     f"not {type(path).__name__} {path!r}")
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    try:
        with open(os.path.join(path, "build.json"), encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError, RecursionError) as exc:
        raise RelayRuntimeError(f"not a saved build: {path}: {exc}") from None
    executor, target, opt_level, max_depth = _checked_meta(path, meta)
    _check_files(path, meta.get("files"))
    try:
        with open(os.path.join(path, "program.relay"), encoding="utf-8") as f:
            text = f.read()
    except (OSError, ValueError) as exc:
        raise RelayRuntimeError(f"not a saved build: {path}: {exc}") from None
    import typechecker

    mod = parse(text, source_name=os.path.join(path, "program.relay"))
    fused = typechecker.infer(mod)
    if not isinstance(fused, IRModule):
        raise InternalError("typechecker.infer of a module returned no module")
    kernel_dir = os.path.join(path, "kernels")
    cache = _kernel_cache(kernel_dir) if os.path.isdir(kernel_dir) else None
    aot_path = os.path.join(path, "aot.py")
    return Executable.from_fused(
        fused, executor=executor, target=target, opt_level=opt_level, cache=cache,
        max_depth=max_depth,
        aot_source=aot_path if executor == "aot" and os.path.exists(aot_path) else None,
        tuning=_saved_tuning(os.path.join(path, TUNED_RECORDS), target))


class _VMRunner:
    """The VM executor behind an :class:`Executable`."""

    def __init__(self, vm: Any, closures: dict[str, Any]):
        self.vm = vm
        self.closures = closures

    def run(self, name: str, values: list[Any]) -> Any:
        return self.vm.call(self.closures[name], values)
