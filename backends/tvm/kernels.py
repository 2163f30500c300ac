"""The kernel compiler: a ``Primitive=1`` function compiled to a callable CPU kernel.

This is the interface the executors call (paper §3.1.3/§4.4.2: fused primitive functions are
lowered to TVM and compiled; an executor runs the rest of the program):

* :func:`compile_function` ``(func, arg_types, *, target=None, cache=None) -> Kernel``
  lowers the function specialized to the concrete argument types
  (:mod:`backends.tvm.te_build`), schedules it (:mod:`backends.tvm.schedules`), compiles it
  with ``tvm.compile`` for the host CPU (:mod:`backends.tvm.target`) and wraps it;
* :class:`Kernel` ``(*arrays, out=None)`` runs it on numpy arrays (one per flattened tensor
  parameter, exact Relay dtypes and shapes); ``out`` are optional preallocated result
  buffers (one per flattened output tensor) written in place; the result is an array, or a
  (nested) tuple of arrays when the function returns a tuple;
* :class:`NoLowering` is raised when some operator of the function has no lowering for the
  target or its rule declines the call (see :mod:`backends.tvm.lower`): the caller then runs
  the function through the operators' numpy references;
* :class:`KernelCache` keeps compiled kernels in memory and on disk.

Facts about apache-tvm 0.27 this module relies on (measured):

* a compiled function takes ``tvm_ffi`` tensors, and numpy arrays directly (converted through
  DLPack without a copy); ``bool`` arrays work;
* ``te.create_prim_func`` declares its buffers 64-byte aligned and LLVM then emits aligned
  vector loads: an unaligned array (numpy's allocations are typically only 16-byte aligned)
  **crashes the process**.  The kernel's buffers are therefore redeclared with element
  alignment (``align=<itemsize>``, ``offset_factor=1``) by rewriting the function's
  TVMScript signature and parsing it back; should that fail for some function, the kernel
  keeps the 64-byte buffers and copies every unaligned argument into an aligned one;
* ``lib.export_library(path)`` links a shared object with the system C compiler and
  ``tvm.runtime.load_module(path)`` loads it back: that is the on-disk cache.

Cache key: the structural hash of the function (:func:`semantics.structural.hashing
.structural_hash`, alpha-invariant), a digest of its constants' bytes (the structural hash
does not look at constant values), the arguments' shapes and dtypes, the target,
:data:`CACHE_VERSION` and a digest of the backend's own source files (:func:`code_digest`: a
changed lowering rule or schedule never meets a stale kernel).  The directory is
``$RELAY_TVM_CACHE`` or ``~/.cache/relay-ref/tvm``; each kernel is ``<key>.so`` with
``<key>.json`` (its layout) and ``<key>.npz`` (its constants), written by a background
thread into a temporary directory and renamed into place (the ``.json`` last), so a reader
never sees a partial entry; deleting the directory (or :meth:`KernelCache.clear`) is always safe.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from backends.tvm.sched import KernelInfo, pick_schedule
from backends.tvm.target import TargetSpec, as_target, host_target, normalize_target, target_key
from backends.tvm.te_build import Layout, LoweringFailed, build_te, param_types
from semantics.expr import Constant, Function
from semantics.ops.reference import concrete_shape
from semantics.structural.hashing import structural_hash
from semantics.types import TensorType, TupleType, Type
from semantics.visitor import post_order

__all__ = ["CACHE_VERSION", "Kernel", "KernelCache", "NoLowering", "compile_function",
           "default_cache", "host_target"]

CACHE_VERSION = "2"
"""Part of every cache key, with :func:`code_digest` (bump it for changes outside
``backends/tvm`` that change what a kernel computes, e.g. in TVM's handling)."""


_KERNEL_SOURCES = ("kernels", "te_build", "schedules", "target")


@functools.cache
def code_digest() -> str:
    """A digest of the sources that decide what a kernel is (lowering rules, TE builder,
    schedules, target, this module): editing any of them invalidates every cached kernel
    automatically. The executors' modules are not part of it."""
    root = Path(__file__).parent
    h = hashlib.sha256()
    own = [root / f"{name}.py" for name in _KERNEL_SOURCES]
    for path in sorted([*own, *(root / "lower").glob("*.py"), *(root / "sched").glob("*.py")]):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]

ALIGNMENT = 64

COMPILE_FAILED = "<tvm>"
"""``NoLowering.op`` when every operator has a rule but TVM itself fails to build the kernel
(the executors fall back to the references; tests treat it as a bug to fix)."""


class NoLowering(Exception):
    """Some operator of the function cannot be compiled for the target.

    Attributes:
        op: the operator's name (or the kind of node that is not lowerable).
        reason: why (the declared reason of ``LOWERINGS.declare_none``, or the rule's).
    """

    def __init__(self, op: str, reason: str) -> None:
        super().__init__(f"no lowering for {op}: {reason}")
        self.op = op
        self.reason = reason


class Kernel:
    """A compiled primitive function (see the module docstring for the calling convention).

    Invariants: ``input_types``/``output_types`` are concrete tensor types (flattened);
    ``layout`` maps the flat outputs to the function's result structure.

    The call path (issue 16 §3: executor overhead) has two lanes:

    * the **fast lane** (kernels with element-aligned buffers, i.e. almost all): the result
      buffers are allocated with ``np.empty`` and the compiled function is called directly
      with the caller's arrays, the constants (converted to TVM tensors once, at
      construction) and the buffers. Nothing is checked in Python: TVM's generated entry
      checks the number of arguments, every array's dtype, rank, shape and strides, and
      numpy's DLPack export refuses read-only arrays; any failure raises before the kernel
      writes anything, and the call is then retried in
    * a read-only argument (numpy's DLPack export refuses those) is passed as a writable
      view of the same memory (kernels never write their inputs), still in the fast lane;
    * the **careful lane**: every argument checked (``ValueError`` with a clear message for
      a wrong count, dtype or shape), non-contiguous or read-only arrays copied, unaligned
      arrays copied into 64-byte aligned ones for kernels that need it, and ``out`` buffers
      validated.

    Measured here (``bench/backend.py`` table 4, a scalar ``int32`` add, best of ten blocks):
    the careful lane costs 7–10 µs per call, the fast lane 0.8 µs, of which 0.5 µs is the
    compiled function's own call with numpy arrays (DLPack conversions included; 0.14 µs
    with TVM tensors).
    """

    __slots__ = ("name", "input_types", "output_types", "layout", "_fn", "_module",
                 "_constants", "_needs_alignment", "_in_sig", "_out_sig", "_fast_consts",
                 "_single", "_out_shape", "_out_dtype", "careful_calls")

    def __init__(self, name: str, fn: Any, module: Any, input_types: list[TensorType],
                 output_types: list[TensorType], layout: Layout, constants: list[np.ndarray],
                 needs_alignment: bool) -> None:
        self.name = name
        self._fn = fn
        self._module = module          # keeps the loaded library alive
        self.input_types = input_types
        self.output_types = output_types
        self.layout = layout
        self._constants = [_aligned_copy(c) if needs_alignment else np.array(c, order="C")
                           for c in constants]
        self._needs_alignment = needs_alignment
        self._in_sig = [(np.dtype(t.dtype), concrete_shape(t)) for t in input_types]
        self._out_sig = [(np.dtype(t.dtype), concrete_shape(t)) for t in output_types]
        # The fast lane: constants as TVM tensors (no DLPack conversion per call); None when
        # the kernel needs 64-byte aligned arrays or has an empty buffer (careful lane only).
        self._fast_consts: tuple[Any, ...] | None = None
        if not needs_alignment and all(c.size for c in self._constants) and all(
                int(np.prod(s, dtype=np.int64)) for _, s in self._out_sig):
            self._fast_consts = tuple(_tvm_tensor(c) for c in self._constants)
        self._single = isinstance(layout, int) and len(self._out_sig) == 1
        self._out_dtype: np.dtype[Any] | None = self._out_sig[0][0] if self._out_sig else None
        self._out_shape: tuple[int, ...] = self._out_sig[0][1] if self._out_sig else ()
        self.careful_calls = 0   # calls that took the careful lane (tests, benchmarks)

    def __repr__(self) -> str:
        return f"<Kernel {self.name}: {len(self.input_types)} in, {len(self.output_types)} out>"

    def __call__(self, *args: np.ndarray, out: list[np.ndarray] | None = None
                 ) -> np.ndarray | tuple[Any, ...]:
        """Run the kernel.

        Args:
            args: one ndarray per flattened tensor parameter, of exactly its dtype and shape.
            out: optional result buffers (C-contiguous, exact dtype and shape), written in
                place and returned.
        Returns:
            The result array, or a (nested) tuple of arrays for a tuple result.
        Raises:
            ValueError: wrong number, dtype or shape of arguments or buffers.
        """
        consts = self._fast_consts
        if consts is not None:
            try:
                if out is None and self._single:     # the common case, inlined
                    o = np.empty(self._out_shape, self._out_dtype)
                    self._fn(*args, *consts, o)
                    return o
                return self._fast(args, consts, out)
            except BufferError:
                # A read-only argument (a program constant or a converted input): numpy's
                # DLPack export refuses it. A writable view of the same memory serves
                # (kernels never write their inputs) when the memory is writable at all.
                views = _writable_views(args)
                if views is not None:
                    try:
                        return self._fast(views, consts, out)
                    except Exception:  # noqa: BLE001 - the careful lane says what is wrong
                        pass
            except Exception:  # noqa: BLE001 - TVM rejected the call before running: retry
                pass
        return self._careful(args, out)

    def _fast(self, args: Sequence[Any], consts: tuple[Any, ...],
              out: list[np.ndarray] | None) -> np.ndarray | tuple[Any, ...]:
        """The fast lane (see the class docstring); raises whatever TVM raises."""
        if out is None:
            if self._single:
                o = np.empty(self._out_shape, self._out_dtype)
                self._fn(*args, *consts, o)
                return o
            outs = [np.empty(shape, dtype) for dtype, shape in self._out_sig]
            self._fn(*args, *consts, *outs)
            return _assemble(self.layout, outs)
        if len(out) != len(self._out_sig) or not all(type(o) is np.ndarray for o in out):
            raise ValueError("out= does not fit")
        self._fn(*args, *consts, *out)
        return _assemble(self.layout, list(out))

    def _careful(self, args: Sequence[Any], out: list[np.ndarray] | None
                 ) -> np.ndarray | tuple[Any, ...]:
        """The careful lane of :meth:`__call__` (see the class docstring)."""
        self.careful_calls += 1
        if len(args) != len(self._in_sig):
            raise ValueError(f"kernel {self.name} takes {len(self._in_sig)} arrays, "
                             f"got {len(args)}")
        arrays = []
        for i, (a, (dtype, shape)) in enumerate(zip(args, self._in_sig)):
            if type(a) is not np.ndarray or a.dtype != dtype or a.shape != shape:
                a = np.asarray(a)
                if a.dtype != dtype or a.shape != shape:
                    raise ValueError(f"kernel {self.name}: argument {i} must be {dtype}"
                                     f"{list(shape)}, got {a.dtype}{list(a.shape)}")
            if not a.flags.c_contiguous or not a.flags.writeable:
                a = np.array(a, order="C")     # DLPack cannot export a read-only array
            if self._needs_alignment and a.ctypes.data % ALIGNMENT:
                a = _aligned_copy(a)
            arrays.append(a)
        if out is None:
            outs = [_empty(shape, dtype, self._needs_alignment) for dtype, shape in self._out_sig]
            targets = outs
        else:
            if len(out) != len(self._out_sig):
                raise ValueError(f"kernel {self.name} writes {len(self._out_sig)} buffers, "
                                 f"got {len(out)}")
            outs = list(out)
            targets = []
            for i, (o, (dtype, shape)) in enumerate(zip(outs, self._out_sig)):
                if not isinstance(o, np.ndarray) or o.dtype != dtype or o.shape != shape \
                        or not o.flags.c_contiguous or not o.flags.writeable:
                    raise ValueError(f"kernel {self.name}: out[{i}] must be a writable "
                                     f"C-contiguous {dtype}{list(shape)} array")
                if self._needs_alignment and o.ctypes.data % ALIGNMENT:
                    o = _empty(shape, dtype, True)
                targets.append(o)
        self._fn(*[_empty_safe(a) for a in arrays], *[_empty_safe(c) for c in self._constants],
                 *[_empty_safe(t) for t in targets])
        for o, t in zip(outs, targets):
            if o is not t:
                np.copyto(o, t)
        return _assemble(self.layout, outs)


def _writable_views(args: Sequence[Any]) -> list[Any] | None:
    """``args`` with every read-only ndarray replaced by a writable view of its memory;
    None when some memory is not writable (an array over a read-only buffer)."""
    out = []
    for a in args:
        if type(a) is np.ndarray and not a.flags.writeable:
            a = a.view()
            try:
                a.flags.writeable = True
            except ValueError:
                return None
        out.append(a)
    return out


def _tvm_tensor(a: np.ndarray) -> Any:
    """A TVM tensor holding a copy of ``a`` (allocated by TVM, so aligned)."""
    import tvm

    t = tvm.runtime.empty(a.shape, a.dtype.name)   # tvm.runtime.tensor makes 0-d arrays 1-d
    t.copyfrom(np.array(a, order="C"))   # (np.ascontiguousarray makes 0-d arrays 1-d)
    return t


def _empty_safe(a: np.ndarray) -> Any:
    """``a``, or a TVM-allocated tensor of its shape when it is empty (numpy gives empty
    arrays strides that TVM's compactness check rejects; their contents are never read)."""
    if a.size:
        return a
    import tvm

    return tvm.runtime.empty(a.shape, a.dtype.name)


def _assemble(layout: Layout, outs: list[np.ndarray]) -> Any:
    if isinstance(layout, int):
        return outs[layout]
    return tuple(_assemble(part, outs) for part in layout)


def _empty(shape: tuple[int, ...], dtype: np.dtype, aligned: bool) -> np.ndarray:
    if not aligned:
        return np.empty(shape, dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(n + ALIGNMENT, np.uint8)
    start = (-raw.ctypes.data) % ALIGNMENT
    return raw[start:start + n].view(dtype).reshape(shape)


def _aligned_copy(a: np.ndarray) -> np.ndarray:
    out = _empty(a.shape, a.dtype, True)
    np.copyto(out, a)
    return out


# --- compilation --------------------------------------------------------------------------

_BUFFER_RE = re.compile(r'T\.Buffer\((\([^()]*\)), "(\w+)"\)')


def _relax_alignment(prim: Any) -> tuple[Any, bool]:
    """``prim`` with element-aligned parameter buffers, and whether it still needs 64 bytes.

    Rewrites the ``T.Buffer(shape, dtype)`` annotations of the signature in the function's
    TVMScript and parses it back (see the module docstring).
    """
    import tvm

    try:
        text = prim.script()
        head, sep, body = text.partition("):\n")
        if not sep:
            return prim, True
        new_head = _BUFFER_RE.sub(r'T.Buffer(\1, "\2", align=1, offset_factor=1)', head)
        parsed = tvm.script.from_source(new_head + sep + body)
        return parsed, False
    except Exception:  # noqa: BLE001 - any failure: keep the aligned buffers
        return prim, True


def _constants_digest(func: Function) -> str:
    h = hashlib.sha256()
    for node in post_order(func.body, descend=lambda n: not isinstance(n, Function)):
        if isinstance(node, Constant):
            h.update(node.data.dtype.str.encode())
            h.update(repr(node.data.shape).encode())
            h.update(np.ascontiguousarray(node.data).tobytes())
    return h.hexdigest()


def kernel_key(func: Function, arg_types: Sequence[Type], target: dict[str, Any]) -> str:
    """The cache key of ``func`` compiled for ``arg_types`` and ``target`` (hex digest)."""
    types = [(t.dtype, [int(d) if type(d) is int else str(d) for d in t.shape])
             for t in _flat_types(func, arg_types)]
    text = json.dumps([CACHE_VERSION, code_digest(), structural_hash(func),
                       _constants_digest(func), types, target_key(target)])
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _flat_types(func: Function, arg_types: Sequence[Type]) -> list[TensorType]:
    from backends.tvm.te_build import flatten_types

    return flatten_types(param_types(func, arg_types))


def compile_function(func: Function, arg_types: Sequence[Type], *, target: TargetSpec = None,
                     cache: KernelCache | None = None,
                     schedule: Callable[[Any], Any] | None = None) -> Kernel:
    """Compile a ``Primitive=1`` function for concrete argument types.

    Args:
        func: the primitive function (any ``fuse_opt_level``), over tensor or
            tuple-of-tensor parameters.
        arg_types: the concrete types of the call's arguments — one per parameter (tuple
            types for tuple parameters) or one per flattened tensor; ``Any``/symbolic dims
            resolved by the caller.
        target: a target dict, ``"llvm"`` or None (both: :func:`host_target`).
        cache: the kernel cache (None: :func:`default_cache`).
        schedule: the scheduling function ``PrimFunc -> IRModule`` (default
            :func:`backends.tvm.sched.pick_schedule`: the kernel's anchor operator's registered
            recipe, else the default one); kernels built with a custom
            schedule are not cached.
    Returns:
        The compiled :class:`Kernel`.
    Raises:
        NoLowering: an operator without a lowering for the target, a call its rule declines,
            or a function that is not a primitive dataflow function.
    """
    spec = normalize_target(target)
    store = default_cache() if cache is None else cache
    fast = None
    if schedule is None:
        fast = store.by_identity(func, arg_types, spec)
        if fast.kernel is not None:
            return fast.kernel
    try:
        key = kernel_key(func, arg_types, spec)
    except LoweringFailed as err:
        raise NoLowering(err.op, err.reason) from None
    if fast is not None:
        kernel = store.get(key)
        if kernel is not None:
            fast.remember(kernel)
            return kernel
    kernel, lib, meta = _compile(func, arg_types, spec, key, schedule)
    if fast is not None:
        store.put(key, kernel, lib, meta)
        fast.remember(kernel)
    return kernel


def _compile(func: Function, arg_types: Sequence[Type], spec: dict[str, Any], key: str,
             schedule: Callable[[Any], Any] | None) -> tuple[Kernel, Any, dict[str, Any]]:
    import tvm
    from tvm import te

    try:
        lowered = build_te(func, arg_types)
    except LoweringFailed as err:
        raise NoLowering(err.op, err.reason) from None
    if schedule is None:
        schedule = pick_schedule(KernelInfo(tuple(lowered.ops), func, tuple(arg_types), spec))
    name = f"relay_kernel_{key[:16]}"
    try:
        prim = te.create_prim_func([*lowered.inputs, *lowered.constants, *lowered.outputs])
        prim, needs_alignment = _relax_alignment(prim)
        prim = prim.with_attr("global_symbol", name)
        mod = schedule(prim)
        if name not in [g.name_hint for g in mod.get_global_vars()]:
            mod = tvm.IRModule({name: mod[mod.get_global_vars()[0]]})
        lib = tvm.compile(mod, target=as_target(spec))
    except Exception as err:  # noqa: BLE001 - TVM's errors have no common public base
        first = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
        raise NoLowering(COMPILE_FAILED, f"TVM could not compile the kernel of "
                         f"{', '.join(sorted(set(lowered.ops)))}: {first}") from err
    meta = {"name": name, "inputs": [_type_json(t) for t in lowered.input_types],
            "outputs": [_type_json(t) for t in lowered.output_types],
            "layout": lowered.layout, "needs_alignment": needs_alignment,
            "ops": lowered.ops}
    kernel = Kernel(name, lib[name], lib, lowered.input_types, lowered.output_types,
                    lowered.layout, lowered.constant_arrays, needs_alignment)
    return kernel, lib, {**meta, "constants": lowered.constant_arrays}


def _type_json(t: TensorType) -> list[Any]:
    return [t.dtype, list(concrete_shape(t))]


def _type_from_json(j: list[Any]) -> TensorType:
    return TensorType(tuple(int(d) for d in j[1]), str(j[0]))


def _layout_from_json(j: Any) -> Layout:
    return j if isinstance(j, int) else tuple(_layout_from_json(x) for x in j)


# --- the cache ----------------------------------------------------------------------------

def cache_directory() -> Path:
    """``$RELAY_TVM_CACHE``, or ``~/.cache/relay-ref/tvm``."""
    env = os.environ.get("RELAY_TVM_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "relay-ref" / "tvm"


class KernelCache:
    """Compiled kernels by key (see :func:`kernel_key`), in memory and in a directory.

    Args:
        directory: where kernels are stored (default :func:`cache_directory`, read when the
            cache is created); ``disk=False`` keeps them in memory only.
    Attributes:
        hits_memory, hits_disk, misses: counters (for tests and benchmarks).

    A directory that cannot be written is not an error: the kernel stays in memory only.
    """

    def __init__(self, directory: str | Path | None = None, *, disk: bool = True) -> None:
        self.directory = Path(directory) if directory is not None else cache_directory()
        self.disk = disk
        self._memory: dict[str, Kernel] = {}
        self._lock = threading.Lock()
        self._pending: list[Future[None]] = []
        self._identity: dict[Any, tuple[Function, Kernel]] = {}
        self.hits_memory = 0
        self.hits_disk = 0
        self.misses = 0

    def __repr__(self) -> str:
        where = str(self.directory) if self.disk else "memory only"
        return f"<KernelCache {where}: {len(self._memory)} kernels in memory>"

    def __len__(self) -> int:
        return len(self._memory)

    def by_identity(self, func: Function, arg_types: Sequence[Type], target: dict[str, Any]
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

    def get(self, key: str) -> Kernel | None:
        """The kernel of ``key`` from memory, else from disk (then kept in memory), else None."""
        with self._lock:
            kernel = self._memory.get(key)
            if kernel is not None:
                self.hits_memory += 1
                return kernel
        if self.disk:
            kernel = self._load(key)
            if kernel is not None:
                with self._lock:
                    self._memory[key] = kernel
                    self.hits_disk += 1
                return kernel
        with self._lock:
            self.misses += 1
        return None

    def put(self, key: str, kernel: Kernel, lib: Any, meta: dict[str, Any]) -> None:
        """Keep ``kernel`` in memory and (best effort) its library on disk.

        The disk copy is written by a background thread (linking the shared object with the
        C compiler costs about as much as compiling the kernel); :meth:`flush` waits for it,
        and so does the interpreter's exit.
        """
        with self._lock:
            self._memory[key] = kernel
            if self.disk:
                self._pending.append(_writer().submit(self._store, key, lib, meta))

    def flush(self) -> None:
        """Wait until every kernel compiled so far is written to disk."""
        with self._lock:
            pending, self._pending = self._pending, []
        for job in pending:
            job.result()

    def clear(self) -> None:
        """Forget every kernel, in memory and on disk (only this cache's files are removed)."""
        self.flush()
        with self._lock:
            self._memory.clear()
            self._identity.clear()
        if self.directory.is_dir():
            for path in self.directory.iterdir():
                if path.is_dir() and path.name.startswith("tmp"):   # an interrupted write
                    shutil.rmtree(path, ignore_errors=True)
                    continue
                if path.suffix in (".so", ".json", ".npz") and re.fullmatch(
                        r"[0-9a-f]{40}", path.stem):
                    path.unlink(missing_ok=True)

    def _paths(self, key: str) -> tuple[Path, Path, Path]:
        d = self.directory
        return d / f"{key}.so", d / f"{key}.json", d / f"{key}.npz"

    def _store(self, key: str, lib: Any, meta: dict[str, Any]) -> None:
        so, js, npz = self._paths(key)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=self.directory) as tmp:
                tmp_so = Path(tmp) / "kernel.so"
                lib.export_library(str(tmp_so))
                constants = meta["constants"]
                if constants:
                    tmp_npz = Path(tmp) / "constants.npz"
                    np.savez(tmp_npz, *constants)
                    os.replace(tmp_npz, npz)
                os.replace(tmp_so, so)
                doc = {k: v for k, v in meta.items() if k != "constants"}
                doc["constants"] = len(constants)
                tmp_js = Path(tmp) / "kernel.json"
                tmp_js.write_text(json.dumps(doc))
                os.replace(tmp_js, js)     # written last: its presence means complete
        except (OSError, RuntimeError, ValueError):
            return

    def _load(self, key: str) -> Kernel | None:
        import tvm

        so, js, npz = self._paths(key)
        if not js.is_file() or not so.is_file():
            return None
        try:
            meta = json.loads(js.read_text())
            constants: list[np.ndarray] = []
            if meta["constants"]:
                with np.load(npz) as data:
                    constants = [np.array(data[f"arr_{i}"], order="C")
                                 for i in range(meta["constants"])]
            lib = tvm.runtime.load_module(str(so))
            name = meta["name"]
            return Kernel(name, lib[name], lib, [_type_from_json(t) for t in meta["inputs"]],
                          [_type_from_json(t) for t in meta["outputs"]],
                          _layout_from_json(meta["layout"]), constants,
                          bool(meta["needs_alignment"]))
        except (OSError, ValueError, KeyError, RuntimeError, TypeError):
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


_WRITER: ThreadPoolExecutor | None = None


def _writer() -> ThreadPoolExecutor:
    """The one background thread that writes kernels to disk (joined at interpreter exit)."""
    global _WRITER
    if _WRITER is None:
        _WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="relay-kernel-cache")
    return _WRITER


_DEFAULT: KernelCache | None = None


def default_cache() -> KernelCache:
    """The process-wide cache used when ``compile_function`` gets no ``cache``."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = KernelCache()
    return _DEFAULT
