"""The kernel cache: compiled kernels in memory and on disk (:class:`KernelCache`).

Cache key (:func:`kernel_key`): the structural hash of the function
(:func:`semantics.structural.hashing.structural_hash`, alpha-invariant), a SHA-256 digest of
its constants' bytes, the arguments' shapes and dtypes, the target, :data:`CACHE_VERSION` and a
digest of the backend's own source files (:func:`code_digest`: a changed lowering rule or
schedule never meets a stale kernel). A kernel compiled with another schedule than ours (a
tuned one, :mod:`backends.tvm.tune`) is kept under :func:`variant_key` of that key and a digest
of the schedule, so it never stands in for our kernel nor ours for it. The directory is
``$RELAY_TVM_CACHE`` or ``~/.cache/relay-ref/tvm``; each kernel is ``<key>.so`` with
``<key>.json`` (its layout and its constants: small ones inline, large ones as references to
content-addressed ``<digest>.bin`` blobs, see :mod:`backends.tvm.kernel.blobs`), written into
temporary names and renamed into place (the ``.json`` last), so a reader never sees a partial
entry; deleting the directory (or :meth:`KernelCache.clear`) is always safe. ``<key>.module``
files beside them are ``backends.tvm.build``'s memos of fused modules (pickles whose large
arrays are blobs too: a model's weights are on disk once, shared by its kernels and its memo).

Every file is verified before it is used (:mod:`backends.tvm.kernel.entries`): the ``.json``
carries the SHA-256 of its own contents and the size and SHA-256 of the library, checked before
the library is mapped; a blob's bytes must hash to its name; a memo carries the SHA-256 of its
pickle. A file that fails (a truncated, changed, deleted or unreadable one) is a cache miss:
the kernel is compiled again and its entry rewritten, never loaded (a truncated library would
crash the process with SIGBUS, a changed one run other code). A loaded kernel's constants are
views of the blobs' memory maps, handed to TVM through DLPack: loading a model copies none of
its weights.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from backends.tvm.kernel import blobs, entries
from backends.tvm.kernel.entries import cache_directory
from backends.tvm.kernel.runtime import Kernel, NoLowering
from backends.tvm.sched import ScheduleReport
from backends.tvm.target import (
    Target,
    target_key,
)
from backends.tvm.te_build import param_types
from semantics.expr import Constant, Function
from semantics.structural.hashing import structural_hash
from semantics.types import TensorType, TupleType, Type
from semantics.visitor import post_order

__all__ = ["CACHE_VERSION", "KernelCache", "code_digest", "default_cache", "kernel_key",
           "variant_key"]


def _flat_types(func: Function, arg_types: Sequence[Type]) -> list[TensorType]:
    from backends.tvm.te_build import flatten_types

    return flatten_types(param_types(func, arg_types))


CACHE_VERSION = "2"
"""Part of every cache key, with :func:`code_digest` (bump it for changes outside
``backends/tvm`` that change what a kernel computes, e.g. in TVM's handling)."""


_KERNEL_SOURCES = ("te_build.py", "target.py", "kernel/*.py", "lower/*.py", "sched/*.py")
"""The sources of a kernel, relative to ``backends/tvm``."""


STALE = "stale"
"""The cache directory's sub-directory of tuned-kernel verdicts (:meth:`KernelCache.stale`)."""


def _tvm_version() -> str:
    try:
        import tvm
    except ImportError:
        return ""
    return str(getattr(tvm, "__version__", ""))


@functools.cache
def code_digest() -> str:
    """A digest of the sources that decide what a kernel is (:data:`_KERNEL_SOURCES`: lowering
    rules, TE builder, schedules, target, this package): editing any of them invalidates every
    cached kernel automatically. The executors' modules are not part of it."""
    root = Path(__file__).parent.parent
    h = hashlib.sha256()
    for path in sorted(p for pattern in _KERNEL_SOURCES for p in root.glob(pattern)):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _constants_digest(func: Function) -> str:
    h = hashlib.sha256()
    for node in post_order(func.body, descend=lambda n: not isinstance(n, Function)):
        if isinstance(node, Constant):
            h.update(node.data.dtype.str.encode())
            h.update(repr(node.data.shape).encode())
            h.update(_byte_view(node.data))
    return h.hexdigest()


def _byte_view(a: np.ndarray) -> Any:
    """The bytes of ``a`` in C order as a flat ``uint8`` array (no copy when contiguous)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def kernel_key(func: Function, arg_types: Sequence[Type], target: Target) -> str:
    """The cache key of ``func`` compiled for ``arg_types`` and ``target`` (hex digest)."""
    types = [(t.dtype, [int(d) if type(d) is int else str(d) for d in t.shape])
             for t in _flat_types(func, arg_types)]
    text = json.dumps([CACHE_VERSION, code_digest(), structural_hash(func),
                       _constants_digest(func), types, target_key(target)])
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def variant_key(key: str, variant: str) -> str:
    """The cache key of the kernel of ``key`` compiled with the schedule named ``variant`` (a
    digest of a tuning record's workload and trace): 40 hex digits, as :func:`kernel_key`."""
    return hashlib.sha256(json.dumps(["variant", key, variant]).encode()).hexdigest()[:40]


def _discard(workdir: Path | None) -> None:
    if workdir is not None:
        shutil.rmtree(workdir, ignore_errors=True)


class KernelCache:
    """Compiled kernels by key (see :func:`kernel_key`), in memory and in a directory.

    Args:
        directory: where kernels are stored (default :func:`cache_directory`, read when the
            cache is created); ``disk=False`` keeps them in memory only.
    Attributes:
        hits_memory, hits_disk, misses: counters (for tests and benchmarks).

    A directory that cannot be written is not an error: the kernel stays in memory only.
    The cache also remembers, for this process, the functions that failed to compile
    (by key: they are not tried again) and the key of each function object it has seen.
    """

    def __init__(self, directory: str | Path | None = None, *, disk: bool = True) -> None:
        self.directory = Path(directory) if directory is not None else cache_directory()
        self.disk = disk
        self._memory: dict[str, Kernel] = {}
        self._lock = threading.Lock()
        self._pending: list[Future[None]] = []
        self._identity: dict[Any, tuple[Function, Kernel]] = {}
        self._keys: dict[Any, tuple[Function, str]] = {}
        self._failed: dict[str, tuple[str, str]] = {}
        self._stale: dict[str, str] = {}
        self.hits_memory = 0
        self.hits_disk = 0
        self.misses = 0

    def __repr__(self) -> str:
        where = str(self.directory) if self.disk else "memory only"
        return f"<KernelCache {where}: {len(self._memory)} kernels in memory>"

    def __len__(self) -> int:
        return len(self._memory)

    def by_identity(self, func: Function, arg_types: Sequence[Type], target: Target
                    ) -> _IdentityEntry:
        """The kernel compiled for this very function object and argument types, if any.

        A lookup by key hashes the whole function (about 0.2 ms); an executor that calls
        :func:`compile_function` again with the same function object gets its kernel from this
        table in microseconds.  The entry keeps ``func`` alive, so its ``id`` stays unique.
        """
        sig = (id(func), _types_signature(arg_types), target_key(target))
        with self._lock:
            hit = self._identity.get(sig)
        if hit is not None and hit[0] is func:
            self.hits_memory += 1
            return _IdentityEntry(self, sig, func, hit[1])
        return _IdentityEntry(self, sig, func, None)

    def key_of(self, func: Function, arg_types: Sequence[Type], target: Target) -> str:
        """:func:`kernel_key`, remembered per function object (hashing the constants of a
        large kernel costs milliseconds; a build asks twice: to compile, then to run)."""
        sig = (id(func), _types_signature(arg_types), target_key(target))
        with self._lock:
            hit = self._keys.get(sig)
        if hit is not None and hit[0] is func:
            return hit[1]
        key = kernel_key(func, arg_types, target)
        with self._lock:
            if len(self._keys) >= _IDENTITY_LIMIT:
                self._keys.clear()
            self._keys[sig] = (func, key)
        return key

    def seed_key(self, func: Function, arg_types: Sequence[Type], target: Target,
                 key: str) -> None:
        """Tell :meth:`key_of` the key of ``func`` (known from a memo of the same input)."""
        sig = (id(func), _types_signature(arg_types), target_key(target))
        with self._lock:
            if len(self._keys) >= _IDENTITY_LIMIT:
                self._keys.clear()
            self._keys[sig] = (func, key)

    def get(self, key: str) -> Kernel | None:
        """The kernel of ``key`` from memory, else from disk (then kept in memory), else None."""
        with self._lock:
            kernel = self._memory.get(key)
            if kernel is not None:
                self.hits_memory += 1
                return kernel
        if self.disk:
            kernel = _load_entry(self.directory, key)
            if kernel is not None:
                with self._lock:
                    self._memory[key] = kernel
                    self.hits_disk += 1
                return kernel
        with self._lock:
            self.misses += 1
        return None

    def holds(self, key: str) -> bool:
        """Whether ``get(key)`` would find a kernel (or the key is known to fail), without
        loading anything."""
        with self._lock:
            if key in self._memory or key in self._failed:
                return True
        if not self.disk:
            return False
        so, js = entries.entry_paths(self.directory, key)
        return js.is_file() and so.is_file()

    def failure(self, key: str) -> tuple[str, str] | None:
        """``(op, reason)`` of the :class:`NoLowering` this key failed with, if it did."""
        with self._lock:
            return self._failed.get(key)

    def remember_failure(self, key: str, err: NoLowering) -> None:
        """Record that ``key`` does not compile (for this process: a changed TVM or lowering
        rule may compile it later)."""
        with self._lock:
            self._failed[key] = (err.op, err.reason)

    def stale(self, key: str) -> str | None:
        """Why the tuned kernel of ``key`` (a :func:`variant_key`) does not apply — its record
        no longer matches the kernel, or TVM refuses its trace — when a build of this or an
        earlier process found so with the same TVM (a verdict on disk under ``stale/``); else
        None. The key holds our compiler's code digest: a changed lowering asks again."""
        with self._lock:
            reason = self._stale.get(key)
        if reason is not None or not self.disk:
            return reason
        try:
            saved = json.loads((self.directory / STALE / key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(saved, dict) or saved.get("tvm") != _tvm_version():
            return None
        reason = str(saved.get("reason", ""))
        with self._lock:
            self._stale[key] = reason
        return reason

    def remember_stale(self, key: str, reason: str) -> None:
        """Record that the tuned kernel of ``key`` does not apply (:meth:`stale`), in memory
        and, written atomically, on disk (an unwritable directory keeps it in memory)."""
        with self._lock:
            self._stale[key] = reason
        if not self.disk:
            return
        folder = self.directory / STALE
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{key}.{os.getpid()}.tmp"
            tmp.write_text(json.dumps({"tvm": _tvm_version(), "reason": reason}),
                           encoding="utf-8")
            os.replace(tmp, folder / key)
        except OSError:
            return

    def workdir(self) -> Path | None:
        """A fresh directory where a compilation may leave its library for :meth:`put`.

        Inside the cache directory (so the library is renamed into place) when the cache
        is on disk and writable, else a system temporary directory; None when neither can
        be made (the kernel then runs from TVM's JIT).
        """
        if self.disk:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                return Path(tempfile.mkdtemp(dir=self.directory))
            except OSError:
                pass
        try:
            return Path(tempfile.mkdtemp(prefix="relay-kernel-"))
        except OSError:
            return None

    def shared_directory(self) -> tuple[Path, Path | None]:
        """Where worker processes write kernels for this cache: ``(directory, scratch)``.

        The cache directory itself when it is on disk and writable (``scratch`` None);
        otherwise a temporary directory, ``scratch``, which the caller removes.
        """
        if self.disk:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                probe = Path(tempfile.mkdtemp(dir=self.directory))
                probe.rmdir()
                return self.directory, None
            except OSError:
                pass
        scratch = Path(tempfile.mkdtemp(prefix="relay-kernels-"))
        return scratch, scratch

    def adopt(self, key: str, directory: Path) -> Kernel | None:
        """Load the entry a worker wrote for ``key`` into ``directory`` and keep it in memory
        (the entry is the disk copy when ``directory`` is the cache's own)."""
        kernel = _load_entry(directory, key)
        if kernel is not None:
            with self._lock:
                self._memory[key] = kernel
        return kernel

    def put(self, key: str, kernel: Kernel, artifact: Any, meta: dict[str, Any],
            workdir: Path | None = None) -> None:
        """Keep ``kernel`` in memory and (best effort) its library on disk.

        ``artifact`` is the linked library (a path, inside ``workdir``) or TVM's module
        (exported, which links with the C compiler). The disk copy is written by a
        background thread; :meth:`flush` waits for it, and so does the interpreter's exit.
        ``workdir`` is removed afterwards.
        """
        with self._lock:
            self._memory[key] = kernel
            if self.disk:
                self._pending.append(_writer().submit(self._store, key, artifact, meta,
                                                      workdir))
                return
        _discard(workdir)

    def load_module(self, key: str) -> Any:
        """The object pickled by :meth:`save_module` under ``key``, or None (no entry, an
        unreadable one, or a memory-only cache)."""
        if not self.disk:
            return None
        try:
            payload = entries.module_payload((self.directory / f"{key}.module").read_bytes())
            if payload is None:
                return None
            return blobs.BlobUnpickler(io.BytesIO(payload), self.directory).load()
        except Exception:  # noqa: BLE001 - a damaged or stale memo (or blob) is a miss
            return None

    def save_module(self, key: str, module: Any) -> None:
        """Pickle ``module`` (an immutable IR module) as ``<key>.module`` in the background
        (best effort: too deep to pickle, or an unwritable directory, writes nothing).

        The file is :data:`~backends.tvm.entries.MODULE_MAGIC`, the SHA-256 of the pickle,
        and the pickle (whose large arrays are blobs): :meth:`load_module` returns None for
        any file whose pickle is not the one written, so a loaded memo is exactly what was
        saved."""
        if not self.disk:
            return
        with self._lock:
            self._pending.append(_writer().submit(entries.write_module, self.directory,
                                                  key, module))

    def flush(self) -> None:
        """Wait until every kernel compiled so far is written to disk."""
        with self._lock:
            pending, self._pending = self._pending, []
        me = os.getpid()
        for job in pending:
            if getattr(job, "relay_pid", me) == me or job.done():
                job.result()
            # else: submitted by the process this one was forked from, whose writer
            # thread does not exist here (that process writes the file)

    def clear(self) -> None:
        """Forget every kernel, in memory and on disk (only this cache's files are removed)."""
        self.flush()
        with self._lock:
            self._memory.clear()
            self._identity.clear()
            self._failed.clear()
        if self.directory.is_dir():
            for path in self.directory.iterdir():
                if path.name.startswith("tmp"):                     # an interrupted write
                    if path.is_dir():
                        shutil.rmtree(path, ignore_errors=True)
                    elif path.suffix == ".partial":
                        path.unlink(missing_ok=True)
                    continue
                if path.suffix in (".so", ".json", ".module", blobs.SUFFIX) and re.fullmatch(
                        r"[0-9a-f]{40}", path.stem):
                    path.unlink(missing_ok=True)

    def entry_files(self, key: str) -> list[Path]:
        """The files of ``key``'s entry on disk, the ``.json`` last (it marks an entry
        complete): the blobs of its constants, its library, its metadata. Empty when the
        entry is not complete on disk."""
        so, js = entries.entry_paths(self.directory, key)
        try:
            meta = entries.read_sealed(js)
            files = [blobs.blob_path(self.directory, d) for d in entries.entry_blobs(meta)]
        except (OSError, ValueError, TypeError, AttributeError, KeyError):
            return []
        files += [so, js]
        return files if all(f.is_file() for f in files) else []

    def _store(self, key: str, artifact: Any, meta: dict[str, Any],
               workdir: Path | None) -> None:
        try:
            entries.write_entry(self.directory, key, artifact, meta)
        finally:
            _discard(workdir)

    def _load(self, key: str) -> Kernel | None:
        return _load_entry(self.directory, key)


def _load_entry(directory: Path, key: str) -> Kernel | None:
    """The kernel of a complete cache entry in ``directory``, or None (no entry, or a
    damaged one: see :func:`backends.tvm.entries.read_entry`)."""
    try:
        entry = entries.read_entry(directory, key)
        if entry is None:
            return None
        meta, constants, lib = entry
        name = meta["name"]
        kernel = Kernel(name, lib[name], lib,
                        [entries.type_from_json(t) for t in meta["inputs"]],
                        [entries.type_from_json(t) for t in meta["outputs"]],
                        entries.layout_from_json(meta["layout"]), constants,
                        bool(meta["needs_alignment"]))
        kernel.ops = tuple(str(op) for op in meta.get("ops", ()))
        kernel.schedule = ScheduleReport.from_json(meta.get("schedule"))
        return kernel
    except (OSError, ValueError, KeyError, RuntimeError, TypeError, AttributeError):
        return None


class _IdentityEntry:
    """A slot of :meth:`KernelCache.by_identity`: the kernel found, or where to remember one."""

    __slots__ = ("cache", "sig", "func", "kernel")

    def __init__(self, cache: KernelCache, sig: Any, func: Function, kernel: Kernel | None
                 ) -> None:
        self.cache, self.sig, self.func, self.kernel = cache, sig, func, kernel

    def remember(self, kernel: Kernel) -> None:
        with self.cache._lock:
            if len(self.cache._identity) >= _IDENTITY_LIMIT:
                self.cache._identity.clear()
            self.cache._identity[self.sig] = (self.func, kernel)


_IDENTITY_LIMIT = 65536


def _types_signature(types: Sequence[Type]) -> Any:
    out: list[Any] = []
    for t in types:
        if isinstance(t, TupleType):
            out.append(("tuple", _types_signature(t.fields)))
        elif isinstance(t, TensorType):
            out.append((t.dtype, tuple(t.shape)))
        else:
            out.append(repr(t))
    return tuple(out)


_WRITER: tuple[int, ThreadPoolExecutor] | None = None


def _writer() -> ThreadPoolExecutor:
    """The one background thread that writes kernels to disk (joined at interpreter exit).

    One per process: a forked child does not inherit its parent's thread, and a job
    submitted to the parent's executor there would never run (its futures are marked
    with the submitting process's id, see :meth:`KernelCache.flush`)."""
    global _WRITER
    pid = os.getpid()
    if _WRITER is None or _WRITER[0] != pid:
        _WRITER = (pid, _PidExecutor(max_workers=1, thread_name_prefix="relay-kernel-cache"))
    return _WRITER[1]


class _PidExecutor(ThreadPoolExecutor):
    """A thread pool whose futures carry the id of the process that submitted them."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        future = super().submit(fn, *args, **kwargs)
        future.relay_pid = os.getpid()  # type: ignore[attr-defined]
        return future


_DEFAULT: KernelCache | None = None


def default_cache() -> KernelCache:
    """The process-wide cache used when ``compile_function`` gets no ``cache``."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = KernelCache()
    return _DEFAULT
