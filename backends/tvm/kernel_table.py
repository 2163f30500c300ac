"""The kernels of one build: :class:`KernelTable` maps each primitive function of the fused
program to the callable that runs it — a compiled kernel (from the kernel cache or compiled
now), a :class:`KernelSlot` compiling per argument signature for dynamic shapes, a host-side
data movement, or the numpy fallback with its reason — and records what it did
(:class:`KernelRecord`, :class:`BuildReport`) for ``relay build --show-kernels``.

The executors (``backends.tvm.exec``) ask the table for kernels; ``backends.tvm.build``
makes it. Kept apart from ``build`` so that the executors do not import the module that
imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from backends.tvm.fallback import FallbackKernel
from backends.tvm.host_movement import host_movement
from backends.tvm.row_blocks import RowBlocks, row_plan
from semantics.expr import Constant, Function
from semantics.module import IRModule
from semantics.shapes import is_concrete
from semantics.types import TensorType, TupleType, Type
from semantics.visitor import post_order

__all__ = ["BuildReport", "FlatArgs", "KernelRecord", "KernelSlot", "KernelTable",
           "flatten_tuples", "is_static_tensor"]


def _param_type(p: Any) -> Type | None:
    return p.type_annotation if p.type_annotation is not None else p.checked_type


def is_static_tensor(t: Any) -> bool:
    """A tensor type whose every dimension is a known integer."""
    return isinstance(t, TensorType) and all(is_concrete(d) for d in t.shape)


def _static_tensors(t: Any) -> bool:
    """A static tensor type, or a (nested) tuple type of them."""
    stack = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TupleType):
            stack.extend(x.fields)
        elif not is_static_tensor(x):
            return False
    return True


class FlatArgs:
    """A kernel of a function with tuple parameters, called with the tuple values: each
    call flattens its arguments (tuples, depth first, left to right — the order of
    ``te_build.flatten_types``) into the kernel's tensor arguments.

    ``flat_call`` is the same call without the generic walk, for the executors' kernel
    instructions: when every parameter is a tensor or a tuple of tensors (``types``), a
    function made for those parameters (``lambda a0, a1: kernel(*a0, a1)``); else
    :meth:`__call__` itself. The flattening cost about 2 µs a call, a TreeLSTM node
    making three such calls (``bench/vm_overhead.py``)."""

    __slots__ = ("kernel", "name", "flat_call")

    def __init__(self, kernel: Any, types: Sequence[Any] | None = None):
        self.kernel = kernel
        self.name = kernel.name
        self.flat_call: Callable[..., Any] = self.__call__
        if types is not None and all(
                isinstance(t, TensorType) or (isinstance(t, TupleType) and all(
                    isinstance(f, TensorType) for f in t.fields)) for t in types):
            self.flat_call = _flat_caller(
                kernel, tuple(isinstance(t, TupleType) for t in types))

    def __call__(self, *args: Any, out: list[np.ndarray] | None = None) -> Any:
        flat = flatten_tuples(args)
        return self.kernel(*flat, out=out) if out is not None else self.kernel(*flat)

    def __repr__(self) -> str:
        return f"<FlatArgs {self.kernel!r}>"


def flatten_tuples(args: Sequence[Any]) -> list[Any]:
    """The leaves of ``args`` in order, nested tuples flattened (a kernel's tensor arguments
    for tuple-typed parameters)."""
    flat: list[Any] = []
    stack = list(reversed(args))
    while stack:
        a = stack.pop()
        if type(a) is tuple:
            stack.extend(reversed(a))
        else:
            flat.append(a)
    return flat


_FLAT_CALLERS: dict[tuple[bool, ...], Callable[[Any], Callable[..., Any]]] = {}


def _flat_caller(kernel: Any, tuples: tuple[bool, ...]) -> Callable[..., Any]:
    """``lambda a0, a1, ...: kernel(*a0, a1, ...)``, a parameter unpacked where ``tuples``
    says it is a tuple of tensors (the source is made from the pattern alone, once per
    pattern)."""
    make = _FLAT_CALLERS.get(tuples)
    if make is None:
        params = ", ".join(f"a{i}" for i in range(len(tuples)))
        passed = ", ".join(("*" if t else "") + f"a{i}" for i, t in enumerate(tuples))
        space: dict[str, Any] = {}
        exec(f"def make(kernel):\n    return lambda {params}: kernel({passed})\n", space)
        make = _FLAT_CALLERS[tuples] = space["make"]
    return make(kernel)


def _tensor_result(t: Any) -> bool:
    if isinstance(t, TensorType):
        return True
    return isinstance(t, TupleType) and all(isinstance(f, TensorType) for f in t.fields)


def _is_primitive(e: Any) -> bool:
    """A function literal marked ``Primitive=1`` (as ``backends.tvm.exec.vm`` decides)."""
    return type(e) is Function and bool(e.attrs) and e.attrs.get("Primitive") in (1, True, "1")


def _has_zero_dim(t: Any) -> bool:
    """A tensor (or tuple of tensors) type with a dimension known to be 0."""
    stack = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TupleType):
            stack.extend(x.fields)
        elif isinstance(x, TensorType) and any(type(d) is int and d == 0 for d in x.shape):
            return True
    return False


@dataclass(frozen=True)
class KernelRecord:
    """One kernel of a build, as ``relay build --show-kernels`` lists it.

    Attributes:
        name: the kernel's symbol (``relay_kernel_<digest of its code>``) or the fallback's name.
        ops: the fused operators, in post-order.
        schedule: how a compiled kernel was scheduled (a
            ``backends.tvm.sched.ScheduleReport``; None for a fallback, or a kernel whose
            cache entry predates the reports).
        fallback: why the group runs on the numpy references instead (None: compiled).
    """

    name: str
    ops: tuple[str, ...]
    schedule: Any = None
    fallback: str | None = None


@dataclass
class BuildReport:
    """What one ``build`` did, for ``relay build``'s summary.

    Attributes:
        phases: seconds per phase, in order (``prepare`` — or ``prepare (remembered)`` when
            the :class:`PrepareMemo` held the fused module —, ``kernels``, ``executor``).
        kernels_requested: distinct statically-shaped kernels the program needs.
        kernels_compiled: those compiled by this build.
        kernels_failed: those TVM could not compile (they run on the numpy references: see
            ``Executable.fallbacks``); the rest came from the kernel cache.
    """

    phases: dict[str, float] = field(default_factory=dict)
    kernels_requested: int = 0
    kernels_compiled: int = 0
    kernels_failed: int = 0

    @property
    def kernels_cached(self) -> int:
        """Kernels the kernel cache held (neither compiled now nor failed)."""
        return max(0, self.kernels_requested - self.kernels_compiled - self.kernels_failed)


def _ops_of(func: Function) -> tuple[str, ...]:
    from semantics.expr import Call, Op

    return tuple(n.op.name for n in post_order(func.body)
                 if type(n) is Call and type(n.op) is Op)


class KernelTable:
    """The kernels of one build: one per primitive function (see the module docstring).

    Args:
        target: the build's :class:`~backends.tvm.target.Target`, or what ``Target.of``
            takes (``"llvm"``: the host CPU with its features).
        cache: a ``backends.tvm.kernel.KernelCache`` (None: the compiler's default).
        compile_kernels: False runs every group with the numpy fallback (tests, baselines).
        tuning: a ``backends.tvm.tune.database.TuningDatabase`` (None: none): a kernel with
            a winning record compiles from the record's schedule (``backends.tvm.tune``),
            through the kernel cache under its own key.
    Attributes:
        compiled_specs: ``(function, argument types)`` of each compiled kernel, and
        compiled_tuning: the tuning record each was compiled from (None: our schedules),
            what ``Executable.save`` copies.
    """

    def __init__(self, target: Any = "llvm", cache: Any = None, compile_kernels: bool = True,
                 tuning: Any = None):
        from backends.tvm.target import Target

        self.target = Target.of(target)
        self.cache = cache
        self.compile_kernels = compile_kernels
        self.tuning = tuning
        self.compiled = 0
        self.compiled_specs: list[tuple[Function, list[TensorType]]] = []
        self.compiled_tuning: list[Any] = []
        self.fallbacks: list[tuple[str, str]] = []
        self.records: list[KernelRecord] = []
        self.requested = 0
        self.compiled_now = 0
        self.failed = 0
        self._seen: dict[int, Any] = {}

    def kernel_for(self, func: Function) -> Any:
        """The callable running ``func`` (a compiled kernel, a fallback or a slot)."""
        k = self._seen.get(id(func))
        if k is not None:
            return k[1]
        types = [_param_type(p) for p in func.params]
        if all(is_static_tensor(t) for t in types):
            kernel = self.resolve(func, types)  # type: ignore[arg-type]
        elif all(_static_tensors(t) for t in types):
            # Tuple parameters: the kernel takes their flattened tensors (te_build flattens
            # them); the adapter flattens the tuple values of each call.
            kernel = self.resolve(func, types)  # type: ignore[arg-type]
            if not isinstance(kernel, FallbackKernel):
                kernel = FlatArgs(kernel, types)
        elif all(isinstance(t, TensorType) for t in types):
            kernel = host_movement(func) or _dynamic(func, self)
        else:
            kernel = self.fallback(func, "a parameter of the group is not a tensor")
        self._seen[id(func)] = (func, kernel)
        return kernel

    def resolve(self, func: Function, arg_types: Sequence[TensorType]) -> Any:
        """A kernel for ``func`` at ``arg_types``: compiled, or the numpy fallback."""
        reason = self._declined(func, arg_types)
        if reason is not None:
            return self.fallback(func, reason)
        try:
            from backends.tvm import kernel as kernels
        except ImportError as exc:
            return self.fallback(func, f"no kernel compiler: {exc}")
        try:
            kernel = record = None
            if self.tuning is not None:
                from backends.tvm.tune.apply import compile_tuned

                tuned = compile_tuned(self.tuning, func, arg_types, self.target, self.cache)
                if tuned is not None:
                    kernel, record = tuned
            if kernel is None:
                kernel = kernels.compile_function(func, list(arg_types), target=self.target,
                                                  cache=self.cache)
        except kernels.NoLowering as exc:
            return self.fallback(func, f"{exc.op}: {exc.reason}")
        except Exception as exc:  # noqa: BLE001 - a lowering bug must not stop the build
            return self.fallback(func, f"the kernel compiler failed: {type(exc).__name__}: "
                                       f"{exc}")
        self.compiled += 1
        self.compiled_specs.append((func, list(arg_types)))
        self.compiled_tuning.append(record)
        self.records.append(KernelRecord(
            str(kernel.name), tuple(getattr(kernel, "ops", ())) or _ops_of(func),
            getattr(kernel, "schedule", None)))
        return kernel

    def _declined(self, func: Function, arg_types: Sequence[TensorType]) -> str | None:
        """Why ``func`` at ``arg_types`` runs as a fallback without asking the compiler."""
        result = func.ret_type if func.ret_type is not None \
            else getattr(func.body, "checked_type", None)
        if not _tensor_result(result):
            return "the group's result is not a tensor or a tuple of tensors"
        if not self.compile_kernels:
            return "kernel compilation is off (compile_kernels=False)"
        if any(_has_zero_dim(t) for t in (*arg_types, result)) or any(
                type(n) is Constant and n.data.size == 0 for n in post_order(func.body)):
            return "a zero-size tensor (TVM kernels reject empty arrays)"
        return None

    def requests(self, module: IRModule) -> list[tuple[Function, list[TensorType]]]:
        """The primitive functions of ``module`` that :meth:`kernel_for` will compile at a
        static signature, with their argument types, in a deterministic order."""
        requests: list[tuple[Function, list[TensorType]]] = []
        seen: set[int] = set()
        for fn in module.functions.values():
            for node in post_order(fn, descend=lambda n: not _is_primitive(n)):
                if not isinstance(node, Function) or not _is_primitive(node) \
                        or id(node) in seen:
                    continue
                seen.add(id(node))
                types = [_param_type(p) for p in node.params]
                if all(is_static_tensor(t) for t in types) \
                        and self._declined(node, types) is None:  # type: ignore[arg-type]
                    requests.append((node, types))  # type: ignore[arg-type]
        return requests

    def precompile(self, module: IRModule, jobs: int | None = None,
                   known_keys: Sequence[str | None] | None = None,
                   progress: Callable[[int, int], None] | None = None
                   ) -> list[str | None] | None:
        """Compile, in parallel, every kernel of :meth:`requests` (see
        ``backends.tvm.kernel.compile_many``): the executors' ``kernel_for`` then finds them
        in the cache.

        Args:
            module: the fused module.
            jobs: kernels compiled at a time (None: the default).
            known_keys: the requests' cache keys, when known (a :class:`PrepareMemo`):
                given to the cache, they spare hashing the kernels' functions.
            progress: called as ``progress(done, total)`` while kernels compile (``total``:
                the kernels the cache does not hold); see ``kernels.compile_many``.
        Returns:
            The requests' cache keys (None for a function with no key: no lowering), or
            None without the kernel compiler or with ``compile_kernels=False``.
        """
        if not self.compile_kernels:
            return None
        try:
            from backends.tvm import kernel as kernels
            from backends.tvm.te_build import LoweringFailed
        except ImportError:
            return None
        store = kernels.default_cache() if self.cache is None else self.cache
        spec = self.target
        requests = self.requests(module)
        if known_keys is not None and len(known_keys) == len(requests):
            for (func, types), key in zip(requests, known_keys):
                if key is not None:
                    store.seed_key(func, types, spec, key)
        ours, tuned_now = self._precompile_tuned(requests, store)
        if ours:
            self.compiled_now = kernels.compile_many(ours, target=spec, cache=store,
                                                     jobs=jobs, progress=progress)
        self.compiled_now += tuned_now
        keys: list[str | None] = []
        for func, types in requests:
            try:
                keys.append(store.key_of(func, types, spec))
            except LoweringFailed:   # no key (a lowering that declines): none
                keys.append(None)
        distinct = {k for k in keys if k is not None}
        self.requested = len(distinct)
        self.failed = sum(store.failure(k) is not None for k in distinct)
        return keys

    def _precompile_tuned(self, requests: list[tuple[Function, list[TensorType]]], store: Any
                          ) -> tuple[list[tuple[Function, list[TensorType]]], int]:
        """Compile, in this process, the requests whose tuning record won (into the cache,
        under their tuned key): the requests left for our schedules (no winning record, or
        one that no longer applies) and the number of tuned kernels compiled now."""
        if self.tuning is None:
            return requests, 0
        from backends.tvm.te_build import LoweringFailed
        from backends.tvm.tune.apply import compile_tuned, tuned_key
        from backends.tvm.tune.database import relay_key

        left: list[tuple[Function, list[TensorType]]] = []
        compiled = 0
        for func, types in requests:
            record = self.tuning.by_relay_key(relay_key(func, types))
            try:
                held = record is not None and record.won and store.holds(
                    tuned_key(record, func, types, self.target, store))
            except LoweringFailed:
                record = None
            if record is None or not record.won or \
                    compile_tuned(self.tuning, func, types, self.target, store) is None:
                left.append((func, types))
                continue
            compiled += not held
        return left, compiled

    def fallback(self, func: Function, reason: str) -> FallbackKernel:
        k = FallbackKernel(func, reason=reason)
        self.fallbacks.append((k.name, reason))
        self.records.append(KernelRecord(k.name, tuple(k.ops), None, reason))
        return k


def _dynamic(func: Function, table: KernelTable) -> RowBlocks | KernelSlot:
    """A group with dynamic dimensions: compiled once for row blocks when it is
    row-separable (``backends.tvm.row_blocks``), else a kernel per argument signature."""
    slot = KernelSlot(func, table)
    plan = row_plan(func)
    return RowBlocks(func, plan, table, slot) if plan is not None else slot


class KernelSlot:
    """A primitive function with ``Any``/symbolic dimensions: a kernel per argument signature.

    Called like a kernel; the first call with a new (dtypes, shapes) signature compiles
    (or falls back) for exactly those tensor types.
    """

    __slots__ = ("func", "table", "by_signature", "name")

    def __init__(self, func: Function, table: KernelTable):
        self.func = func
        self.table = table
        self.by_signature: dict[tuple[Any, ...], Any] = {}
        self.name = "dynamic_kernel"

    def __call__(self, *args: Any, out: list[np.ndarray] | None = None) -> Any:
        try:
            sig = tuple((a.dtype, a.shape) for a in args)
        except AttributeError:
            sig = ()
        k = self.by_signature.get(sig) if sig else None
        if k is None:
            if not sig:
                k = self.table.fallback(self.func, "a parameter of the group is not a tensor")
            else:
                types = [TensorType(tuple(int(d) for d in a.shape), a.dtype.name) for a in args]
                k = self.table.resolve(self.func, types)
                self.by_signature[sig] = k
        return k(*args, out=out) if out is not None else k(*args)
