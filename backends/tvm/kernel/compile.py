"""The kernel compiler: a ``Primitive=1`` function compiled to a callable CPU kernel.

:func:`compile_function` ``(func, arg_types, *, target=None, cache=None) -> Kernel`` lowers the
function specialized to the concrete argument types (:mod:`backends.tvm.te_build`), schedules
it (:mod:`backends.tvm.sched`), compiles it with ``tvm.compile`` for the build's
:class:`~backends.tvm.target.Target` and wraps it (:mod:`backends.tvm.kernel.runtime`); the
cache (:mod:`backends.tvm.kernel.cache`) is asked first.

Facts about apache-tvm 0.27 this module relies on (measured):

* ``te.create_prim_func`` declares its buffers 64-byte aligned and LLVM then emits aligned
  vector loads: an unaligned array **crashes the process**. The kernel's buffers are therefore
  redeclared with element alignment (``align=1``, ``offset_factor=1``): each parameter ``Var``
  of the ``PrimFunc`` gets a new buffer type in place (the body refers to that very ``Var``);
  should that fail, the kernel keeps the 64-byte buffers, copies every unaligned argument into
  an aligned one, and its schedule report says why;
* the machine code is the expensive part of ``tvm.compile``'s output, and both TVM's JIT and
  ``export_library`` generate it: a kernel's object file is written once and linked with
  ``ld -shared`` (about ten times cheaper than the C compiler driver ``export_library``
  runs), and the kernel runs from that library, which the cache keeps.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from backends.tvm.kernel import claims, entries
from backends.tvm.kernel.cache import KernelCache, _discard, default_cache, variant_key
from backends.tvm.kernel.runtime import COMPILE_FAILED, Kernel, NoLowering
from backends.tvm.sched import KernelInfo, Scheduler, ScheduleReport, pick_schedule
from backends.tvm.sched.default import first_line
from backends.tvm.target import (
    Target,
    TargetSpec,
    as_target,
    normalize_target,
)
from backends.tvm.te_build import LoweringFailed, build_te
from semantics.expr import Function
from semantics.types import Type

__all__ = ["CompileTimes", "compile_function", "record_compile_times"]


class CompileTimes:
    """Seconds (CPU time of this process) of one kernel's compilation, by step.

    Attributes:
        ops: the kernel's operators. shapes: its arguments' shapes.
        steps: ``{"lower": ..., "schedule": ..., "tvm.compile": ..., "codegen+link": ...}``:
            the lowering (:func:`~backends.tvm.te_build.build_te`), the schedule, TVM's TIR
            passes and LLVM IR with its optimization (``tvm.compile``), and the machine code
            and its link (:func:`_link`).
    """

    __slots__ = ("ops", "shapes", "steps")

    def __init__(self, ops: Sequence[str], shapes: Sequence[tuple[int, ...]]) -> None:
        self.ops, self.shapes = tuple(ops), tuple(shapes)
        self.steps: dict[str, float] = {}

    @property
    def total(self) -> float:
        return sum(self.steps.values())


_RECORD: list[list[CompileTimes]] = []


class record_compile_times:  # noqa: N801 - used as a function in a ``with``
    """``with record_compile_times() as times:``: every kernel compiled in this process
    meanwhile appends its :class:`CompileTimes` to ``times`` (``bench/build_time.py``)."""

    def __enter__(self) -> list[CompileTimes]:
        _RECORD.append([])
        return _RECORD[-1]

    def __exit__(self, *exc: object) -> None:
        _RECORD.pop()


def _step(times: CompileTimes | None, name: str, start: float) -> float:
    now = time.process_time()
    if times is not None:
        times.steps[name] = times.steps.get(name, 0.0) + now - start
    return now


def _relax_alignment(prim: Any, notes: list[tuple[str, str]] | None = None
                     ) -> tuple[Any, bool]:
    """``prim`` with element-aligned parameter buffers, and whether it still needs 64 bytes.

    Each parameter buffer gets a new buffer type with ``align=1, offset_factor=1`` and a free
    ``elem_offset`` (:func:`_relax_alignment_in_place`). Should that fail (TVM's reflection
    API is private, a TVM upgrade may change it), the kernel keeps its 64-byte aligned buffers
    — its calls then take the careful lane, which copies unaligned arrays — and the failure
    is appended to ``notes`` as ``(step, error)``: the kernel's schedule report shows it.
    """
    try:
        return _relax_alignment_in_place(prim), False
    except Exception as err:  # noqa: BLE001 - any failure: keep the aligned buffers, say why
        if notes is not None:
            notes.append(("relax buffer alignment in place (the kernel keeps 64-byte aligned "
                          "buffers: its calls take the careful lane)", first_line(err)))
        return prim, True


def _relax_alignment_in_place(prim: Any) -> Any:
    """``prim`` (just created by ``te.create_prim_func``, not shared) with relaxed buffers.

    In TVM 0.27 a parameter buffer is a ``Var`` whose type (a ``BufferType``) carries the
    alignment, and the body refers to that very ``Var``: replacing the type of each parameter
    ``Var`` relaxes the buffer everywhere without rebuilding the body.  The ``Var`` fields are
    frozen for Python code, so the type goes in through the field's reflection setter; the new
    type comes from ``decl_buffer`` (the parameter's shape, dtype, strides and scope, a fresh
    ``elem_offset`` variable), exactly what the TVMScript parser makes of
    ``T.Buffer(shape, dtype, align=1, offset_factor=1)``.
    """
    from tvm import tirx

    setter = None
    for param in prim.params:
        ty = param.ty
        if not isinstance(ty, tirx.buffer.BufferType) or ty.layout is not None \
                or list(ty.allocated_addr):
            raise ValueError("not a plain buffer parameter")
        fresh = tirx.decl_buffer(ty.shape, ty.dtype, param.name,
                                 strides=list(ty.strides) or None,
                                 scope=ty.storage_scope, data_alignment=1, offset_factor=1,
                                 layout=None)
        if setter is None:
            fields = _type_fields(type(param))
            setter = fields["ty"].setter
        setter(param, fresh.ty)
    return prim


def _type_fields(cls: type) -> dict[str, Any]:
    """The reflected fields of a TVM object class, its ancestors' included, by name."""
    out: dict[str, Any] = {}
    info = getattr(cls, "__tvm_ffi_type_info__", None)
    while info is not None:
        for f in info.fields:
            out.setdefault(f.name, f)
        info = info.parent_type_info
    return out


def compile_function(func: Function, arg_types: Sequence[Type], *, target: TargetSpec = None,
                     cache: KernelCache | None = None,
                     schedule: Callable[[Any], Any] | None = None,
                     variant: str | None = None) -> Kernel:
    """Compile a ``Primitive=1`` function for concrete argument types.

    Args:
        func: the primitive function (any ``fuse_opt_level``), over tensor or
            tuple-of-tensor parameters.
        arg_types: the concrete types of the call's arguments — one per parameter (tuple
            types for tuple parameters) or one per flattened tensor; ``Any``/symbolic dims
            resolved by the caller.
        target: a :class:`~backends.tvm.target.Target`, or what ``Target.of`` takes (None
            and ``"llvm"``: the host; a string; a dict).
        cache: the kernel cache (None: :func:`default_cache`).
        schedule: the scheduling function ``PrimFunc -> IRModule`` (default
            :func:`backends.tvm.sched.pick_schedule`: the kernel's anchor operator's registered
            recipe, else the default one). A custom schedule's kernel is cached only
            with a ``variant``; a schedule with a ``report`` (a
            :class:`~backends.tvm.sched.ScheduleReport`) has it recorded with the kernel.
        variant: with ``schedule``, a name for it that decides the code it makes (a digest
            of a tuning record): the kernel is cached under
            :func:`~backends.tvm.kernel.cache.variant_key` of the function's key and it.
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
    cached = schedule is None or variant is not None
    try:
        key = store.key_of(func, arg_types, spec)
    except LoweringFailed as err:
        raise NoLowering(err.op, err.reason) from None
    if schedule is not None and variant is not None:
        key = variant_key(key, variant)
    if cached:
        kernel = store.get(key)
        if kernel is not None:
            if fast is not None:
                fast.remember(kernel)
            return kernel
        failed = store.failure(key)
        if failed is not None:
            raise NoLowering(*failed)
    workdir = store.workdir() if cached else None
    try:
        kernel, artifact, meta = _compile(func, arg_types, spec, key, schedule, workdir)
    except NoLowering as err:
        if cached:
            store.remember_failure(key, err)
        _discard(workdir)
        raise
    except BaseException:
        _discard(workdir)
        raise
    if cached:
        store.put(key, kernel, artifact, meta, workdir)
        if fast is not None:
            fast.remember(kernel)
    else:
        _discard(workdir)
    return kernel


def _build_library(func: Function, arg_types: Sequence[Type], spec: Target, key: str,
                   schedule: Callable[[Any], Any] | None, *, reuse: bool = False
                   ) -> tuple[Any, Any, str, bool, dict[str, Any] | None]:
    """Lower, schedule and ``tvm.compile`` a function (no machine code yet: see :func:`_link`).

    With ``reuse`` (the caller links the library: :func:`_link`), a kernel whose scheduled
    TIR equals one this process has linked already (:class:`_Twins`: the same layer with
    other weights) is not compiled again: the library is that kernel's, under its symbol.

    Returns:
        ``(library, lowered, name, needs_alignment, schedule)``: TVM's executable, the
        :class:`~backends.tvm.te_build` lowering, the kernel's symbol, whether its
        buffers kept the 64-byte alignment, and the
        :class:`~backends.tvm.sched.ScheduleReport` as JSON (None for a caller's own
        ``schedule`` function).
    Raises:
        NoLowering: see :func:`compile_function`.
    """
    import tvm
    from tvm import te

    times = CompileTimes((), [tuple(getattr(t, "shape", ())) for t in arg_types]) \
        if _RECORD else None
    start = time.process_time()
    try:
        lowered = build_te(func, arg_types, spec)
    except LoweringFailed as err:
        raise NoLowering(err.op, err.reason) from None
    start = _step(times, "lower", start)
    if times is not None:
        times.ops = tuple(lowered.ops)
    if schedule is None:
        schedule = pick_schedule(KernelInfo(tuple(lowered.ops), func, tuple(arg_types), spec))
    name = f"relay_kernel_{key[:16]}"
    try:
        prim = te.create_prim_func([*lowered.inputs, *lowered.constants, *lowered.outputs])
        notes: list[tuple[str, str]] = []
        prim, needs_alignment = _relax_alignment(prim, notes)
        prim = prim.with_attr("global_symbol", name)
        mod = schedule(prim)
        report = _report_of(schedule)
        if report is not None:
            report["refused"] = [list(n) for n in notes] + report["refused"]
        if name not in [g.name_hint for g in mod.get_global_vars()]:
            mod = tvm.IRModule({name: mod[mod.get_global_vars()[0]]})
        mod, name, probe = _named_by_code(mod, name, spec, needs_alignment)
        start = _step(times, "schedule", start)
        probe = probe if reuse else None
        twin = TWINS.find(probe)
        lib: Any = twin
        if twin is not None:
            name = twin.name
        else:
            with _skip_idle_passes():
                lib = tvm.compile(mod, target=as_target(spec), tir_pipeline=_pipeline(spec))
        _step(times, "tvm.compile", start)
    except Exception as err:  # noqa: BLE001 - TVM's errors have no common public base
        raise _compile_failed(lowered.ops, err) from err
    if times is not None or probe is not None:
        lib = _Timed(lib, times, probe if twin is None else None, name)
        if times is not None:
            _RECORD[-1].append(times)
    return lib, lowered, name, needs_alignment, report


def _named_by_code(mod: Any, name: str, spec: Target, needs_alignment: bool
                   ) -> tuple[Any, str, tuple[Any, ...] | None]:
    """The scheduled module with its function's symbol named after its code, that symbol,
    and its :class:`_Twins` probe.

    The symbol is ``relay_kernel_`` and 16 hex digits of TVM's structural hash of the
    function with its symbol blanked (stable across processes): twins — the same code for
    other constants — get the same symbol and library whichever compiles first, in this
    process or a worker, so a cache's entries do not depend on the order of compilation.
    A module of several functions, or with attributes, keeps ``name`` (and has no probe).
    """
    import tvm
    import tvm_ffi

    from backends.tvm.target import target_key

    funcs = list(mod.functions.values())
    if len(funcs) != 1 or (mod.attrs is not None and len(mod.attrs.keys())):
        return mod, name, None
    blank = funcs[0].with_attr("global_symbol", "relay_kernel")
    code = tvm_ffi.structural_hash(blank) & (2 ** 64 - 1)
    name = f"relay_kernel_{code:016x}"
    mod = tvm.IRModule({name: blank.with_attr("global_symbol", name)})
    return mod, name, ((code, target_key(spec), needs_alignment), blank)


class _Twin:
    """A linked kernel library remembered by :class:`_Twins`: its scheduled function (symbol
    blanked), its symbol, and the bytes of its shared library."""

    __slots__ = ("func", "name", "library")

    def __init__(self, func: Any, name: str, library: bytes) -> None:
        self.func, self.name, self.library = func, name, library


class _Twins:
    """The kernels this process has linked, by their scheduled TIR (issue 35).

    Two primitive functions that differ only in their constants' values (ResNet-18's two
    blocks of a stage: the same layer with other weights) have different cache keys — a
    kernel holds its constants —, but the constants are arguments of the compiled code, so
    both schedule to the same TIR and compile to the same machine code (their assembly is
    the same text, tested). The second one takes the first one's library (a copy of its
    file; the symbol is named after the code) instead of ``tvm.compile`` and LLVM.

    A probe (:func:`_named_by_code`) is the TIR function with its symbol blanked, looked up
    by TVM's structural hash and confirmed with ``structural_equal`` (which sees buffer
    alignment, dtypes, shapes and every statement), with the target and the alignment flag.
    At most :attr:`LIMIT` libraries are kept (a model's distinct kernels; older ones are
    forgotten).
    """

    LIMIT = 256

    def __init__(self) -> None:
        import threading

        self._by_hash: dict[tuple[int, str, bool], list[_Twin]] = {}
        self._count = 0
        self._lock = threading.Lock()

    def find(self, probe: tuple[Any, ...] | None) -> _Twin | None:
        """The remembered library of a function equal to ``probe``'s, if any."""
        if probe is None:
            return None
        import tvm_ffi

        with self._lock:
            candidates = list(self._by_hash.get(probe[0], ()))
        return next((t for t in candidates if tvm_ffi.structural_equal(t.func, probe[1])),
                    None)

    def remember(self, probe: tuple[Any, ...], name: str, library: bytes) -> None:
        with self._lock:
            if self._count >= self.LIMIT:
                self._by_hash.clear()
                self._count = 0
            self._by_hash.setdefault(probe[0], []).append(_Twin(probe[1], name, library))
            self._count += 1

    def clear(self) -> None:
        with self._lock:
            self._by_hash.clear()
            self._count = 0


TWINS = _Twins()
"""This process's :class:`_Twins`."""


def _report_of(schedule: Any) -> dict[str, Any] | None:
    """The :class:`ScheduleReport` of a scheduling function that ran, as JSON (None: it has
    none)."""
    report = schedule.report if isinstance(schedule, Scheduler) \
        else getattr(schedule, "report", None)
    return report.to_json() if isinstance(report, ScheduleReport) else None


IDLE_TIR_PASSES = ("tirx.RemoveNoOp", "s_tir.HoistIfThenElse", "tirx.NarrowDataType")
"""TVM TIR passes ``tvm.compile`` skips for our kernels: on every kernel of ResNet-18,
MobileNet, DQN, VGG-16, LSTM, GRU and CharRNN and of the schedule, kernel and lowering tests
(1,150 kernels) the assembly is the same text with or without them — what they remove or
hoist, LLVM removes and hoists the same — but for one zero-size test kernel whose empty loop
stays; they took ~20 % of ``tvm.compile`` (5.9 -> 4.7 s for ResNet-18's 24 kernels).
(``s_tir.StmtSimplify`` and ``s_tir.RenormalizeSplitPattern`` were idle on ResNet-18 too but
change 14 other kernels' code; docs/tvm.md, "Build time".)"""


def _pipeline(spec: Target) -> str:
    """TVM's lowering pipeline for a kernel of ``spec``: the default one, followed on x86-64
    by the claimed parallel loops (:mod:`backends.tvm.kernel.claims`) unless the target
    says ``claims=False``."""
    return claims.pipeline_for(spec.mtriple) if spec.claims else "default"


def _skip_idle_passes() -> Any:
    """A ``PassContext`` like the current one that also disables :data:`IDLE_TIR_PASSES`;
    none when the current one has instruments (a caller's ``PassTimingInstrument`` would be
    reset by a nested context: the kernel then compiles with every pass, to the same code)."""
    import contextlib

    import tvm

    cur = tvm.transform.PassContext.current()
    if list(cur.instruments):
        return contextlib.nullcontext()
    return tvm.transform.PassContext(
        opt_level=cur.opt_level, required_pass=list(cur.required_pass),
        disabled_pass=[*cur.disabled_pass, *IDLE_TIR_PASSES], config=dict(cur.config))


class _Timed:
    """TVM's executable (or a :class:`_Twin`) with the :class:`CompileTimes` its machine
    code is added to, and the :class:`_Twins` probe its linked library is remembered under
    (None: not to remember) with its symbol."""

    def __init__(self, lib: Any, times: CompileTimes | None, probe: tuple[Any, ...] | None,
                 name: str) -> None:
        self.lib, self.times, self.probe, self.name = lib, times, probe, name

    def __getattr__(self, name: str) -> Any:
        return getattr(self.lib, name)


def _compile_failed(ops: Sequence[str], err: BaseException) -> NoLowering:
    first = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
    return NoLowering(COMPILE_FAILED, f"TVM could not compile the kernel of "
                      f"{', '.join(sorted(set(ops)))}: {first}")


def _meta(lowered: Any, name: str, needs_alignment: bool,
          schedule: dict[str, Any] | None) -> dict[str, Any]:
    return {"name": name, "inputs": [entries.type_json(t) for t in lowered.input_types],
            "outputs": [entries.type_json(t) for t in lowered.output_types],
            "layout": lowered.layout, "needs_alignment": needs_alignment,
            "ops": lowered.ops, "constants": lowered.constant_arrays, "schedule": schedule}


def _compile(func: Function, arg_types: Sequence[Type], spec: Target, key: str,
             schedule: Callable[[Any], Any] | None, workdir: Path | None = None
             ) -> tuple[Kernel, Any, dict[str, Any]]:
    """Compile in this process: ``(kernel, artifact, meta)``.

    With a ``workdir`` the machine code is generated once, into ``workdir/kernel.so``
    (:func:`_link`), and the kernel runs from that library (the artifact: the cache moves it
    into place); without one, or should linking fail, TVM's JIT runs the kernel and the
    artifact is TVM's module (the cache exports it).
    """
    lib, lowered, name, needs_alignment, report = _build_library(
        func, arg_types, spec, key, schedule, reuse=workdir is not None)
    meta = _meta(lowered, name, needs_alignment, report)
    artifact: Any = lib
    module: Any = None
    if workdir is not None:
        so = workdir / "kernel.so"
        try:
            _link(lib, so)
            import tvm

            module = tvm.runtime.load_module(str(so))
            artifact = so
        except Exception as err:  # noqa: BLE001 - no linker, a full disk: TVM's JIT instead
            module = None
            if isinstance(getattr(lib, "lib", None), _Twin):
                # a twin's library could not be written: compile this kernel, for the JIT
                lib, lowered, name, needs_alignment, report = _build_library(
                    func, arg_types, spec, key, schedule)
                meta = _meta(lowered, name, needs_alignment, report)
                artifact = lib
            if report is not None:      # recorded with the kernel (``--show-kernels``)
                report["refused"].append(["link the kernel into a shared library (TVM's JIT "
                                          "runs it instead)", first_line(err)])
    try:
        if module is None:
            module = lib.jit()
        fn = module[name]
    except Exception as err:  # noqa: BLE001 - TVM's errors have no common public base
        raise _compile_failed(lowered.ops, err) from err
    kernel = Kernel(name, fn, module, lowered.input_types, lowered.output_types,
                    lowered.layout, lowered.constant_arrays, needs_alignment)
    kernel.ops = tuple(lowered.ops)
    kernel.schedule = ScheduleReport.from_json(report)
    return kernel, artifact, meta


def _link(lib: Any, so: Path) -> None:
    """Generate the machine code of ``lib`` and link it into the shared library ``so``.

    TVM's JIT and ``export_library`` would each generate the machine code (the most
    expensive step of a compilation after lowering); the object file is written once here
    and linked with ``ld -shared`` directly (the C compiler driver TVM calls costs about
    ten times as much). A host module that imports others (none do today), or a failing
    ``ld``, goes through ``export_library``.

    Raises:
        OSError, RuntimeError, subprocess.CalledProcessError: the library cannot be made.
    """
    timed = lib if isinstance(lib, _Timed) else None
    lib = lib.lib if timed is not None else lib
    start = time.process_time()
    try:
        if isinstance(lib, _Twin):
            so.write_bytes(lib.library)
        else:
            _link_library(lib, so)
            if timed is not None and timed.probe is not None:
                TWINS.remember(timed.probe, timed.name, so.read_bytes())
    finally:
        _step(timed.times if timed is not None else None, "codegen+link", start)


def _link_library(lib: Any, so: Path) -> None:
    mod = lib.mod if hasattr(lib, "mod") else lib
    ld = _linker()
    if ld is None or mod.kind != "llvm" or len(mod.imports):
        lib.export_library(str(so))
        return
    obj = so.with_suffix(".o")
    mod.write_to_file(str(obj))
    try:
        subprocess.run([ld, "-shared", "-o", str(so), str(obj), "-lm"], check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        lib.export_library(str(so))
    finally:
        obj.unlink(missing_ok=True)


@functools.cache
def _linker() -> str | None:
    """``ld`` on the PATH (None: link through TVM's ``export_library``)."""
    return shutil.which("ld")
