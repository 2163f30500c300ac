"""The compilation target of the TVM backend: one :class:`Target` record for the whole build.

A build (``backends.tvm.build(..., target=)``) turns the user's target into one
:class:`Target` — the CPU LLVM compiles for and the machine facts the lowerings, schedules
and passes decide by (vector lanes, registers, cache sizes, FMA/VNNI/AVX-512, threads) —
and hands it down: to AlterOpLayout (its channel block), to every lowering
(``OpCall.target``) and schedule (``KernelInfo.target``), and into the keys of the kernel
cache and of the build memo. This module is the only place that reads the host (LLVM's CPU
query, sysfs); nothing downstream reads the environment.

Building one (see :meth:`Target.of`):

* ``None`` or ``"llvm"``: :meth:`Target.host`, the machine this process runs on;
* a string ``"llvm -mcpu=skylake-avx512 -mattr=+avx512f"`` (TVM's old command-line form):
  that CPU, its features asked of LLVM;
* a dict ``{"kind": "llvm", "mcpu": ..., "lanes": 8, ...}``: ``kind`` and ``mcpu`` (default
  the host's), ``mattr``/``mtriple`` for LLVM, and any field of the record to force it;
* a :class:`Target`, as it is: ``Target.host().with_lanes(16)`` forces 16-lane schedules.

A CPU name LLVM does not know (asked of LLVM for the target's triple, the host's by default)
is a :class:`TargetError` that suggests the known names closest to it; LLVM alone would warn
and compile for a generic CPU.

Forcing ``lanes`` changes what the schedules and AlterOpLayout decide, not the instructions
LLVM may use (those follow ``mcpu``/``mattr``): LLVM legalizes a 16-lane vector on AVX2
into two registers, so a 16-lane schedule runs — and must compute the same numbers — on an
AVX2 machine (the tests run every schedule at 4, 8 and 16 lanes this way).

Facts measured with apache-tvm 0.27 (recorded here because they decide the defaults):

* the target must be given to TVM in dict form with the CPU name, ``{"kind": "llvm",
  "mcpu": <host cpu>}``.  A bare ``"llvm"`` target compiles for a generic x86-64 (no AVX,
  no FMA) and the same kernels ran about 4.7x slower; TVM 0.27 no longer parses the
  ``"llvm -mcpu=..."`` string form (this module does);
* the host CPU name comes from LLVM itself (``tvm.target.codegen.llvm_get_system_cpu()``,
  e.g. ``"znver3"``), so the kernels use every instruction set extension of the machine that
  compiles them.  A kernel cached on disk is therefore keyed by the target (a cache
  directory copied to another machine simply misses);
* TVM 0.27's ``llvm_get_vector_width`` answers 512 for every x86 CPU, so the vector width
  comes from the CPU's features (``llvm_cpu_has_features``);
* parallel loops run on TVM's own thread pool.  Left alone, TVM sizes it to half the
  hardware threads on x86 (it assumes hyper-threading), so on this 2-core machine without SMT
  every kernel ran on one core (ResNet-18: 63 against 41 ms).  Importing the backend therefore
  sets ``TVM_NUM_THREADS`` to the physical cores this process may run on
  (:func:`default_threads`) unless the user set it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from semantics.errors import RelayArgumentTypeError, RelayArgumentValueError

__all__ = ["LANES", "Target", "TargetError", "TargetTypeError", "TargetSpec", "as_target",
           "default_threads", "host_cpu", "host_target", "normalize_target", "target_key",
           "use_every_core", "vector_bytes"]


class TargetError(RelayArgumentValueError):
    """A target the TVM backend cannot compile for (an unknown kind, field or value); a
    ``RelayTypeError`` and a ``ValueError``."""


class TargetTypeError(RelayArgumentTypeError):
    """A target given as something other than a string, a dict or a :class:`Target`."""

LANES = (4, 8, 16)
"""The float32 vector widths a :class:`Target` may have (SSE/NEON, AVX2, AVX-512)."""

TargetSpec = Any
"""What ``build(..., target=)`` accepts: None, a string, a dict or a :class:`Target`."""

_DEFAULT_CACHES = (32 * 1024, 512 * 1024, 2 * 1024 * 1024)
"""L1 data, L2 and L3 bytes per core assumed when sysfs does not tell (a typical x86 core)."""

_LOAD_PORTS = {"znver3": 3, "znver4": 3, "znver5": 3}
"""Vector loads a cycle by CPU (Zen 3 and later: three); other CPUs are assumed to have two
(Intel's cores since Haswell, Zen 1/2)."""


@functools.cache
def host_cpu() -> str:
    """The LLVM name of the host CPU (``"generic"`` when LLVM cannot tell or TVM is not
    installed)."""
    try:
        import tvm

        name = str(tvm.target.codegen.llvm_get_system_cpu())
    except (ImportError, AttributeError, RuntimeError):  # pragma: no cover - no LLVM query
        name = ""
    return name or "generic"


def default_threads() -> int:
    """The physical cores this process may run on: the CPUs of its affinity mask, counting
    hyper-threads of one core once (their ``thread_siblings_list`` in sysfs)."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    cpus = sorted(getaffinity(0)) if getaffinity else list(range(os.cpu_count() or 1))
    cores = set()
    for cpu in cpus:
        siblings = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
        try:
            cores.add(siblings.read_text().strip())
        except OSError:
            cores.add(str(cpu))
    return max(1, len(cores))


def use_every_core() -> None:
    """Set ``TVM_NUM_THREADS`` to :func:`default_threads` unless it is set (TVM reads it when
    its thread pool starts, at the first parallel kernel)."""
    os.environ.setdefault("TVM_NUM_THREADS", str(default_threads()))


@functools.cache
def _cpuinfo_flags() -> frozenset[str]:
    """The host's CPU flags (the first ``flags`` line of ``/proc/cpuinfo``; none: empty)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def _cpu_list_size(text: str) -> int:
    """The number of CPUs of a sysfs list such as ``"0-3,8"``."""
    count = 0
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        count += int(hi) - int(lo) + 1 if hi else 1
    return max(1, count)


@functools.cache
def host_caches() -> tuple[int, int, int]:
    """The host's L1 data, L2 and L3 bytes per core, from sysfs (``cpu0/cache/index*``: a
    cache shared by several CPUs counts its share); :data:`_DEFAULT_CACHES` where unknown."""
    found: dict[int, int] = {}
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    try:
        entries = sorted(root.glob("index*"))
    except OSError:
        entries = []
    for entry in entries:
        try:
            level = int((entry / "level").read_text())
            kind = (entry / "type").read_text().strip()
            text = (entry / "size").read_text().strip()
            shared = _cpu_list_size((entry / "shared_cpu_list").read_text())
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or not 1 <= level <= 3:
            continue
        scale = {"K": 1024, "M": 1024 * 1024, "G": 1024 ** 3}.get(text[-1:], 1)
        try:
            size = int(text.rstrip("KMG")) * scale
        except ValueError:
            continue
        found[level] = size // shared
    return (found.get(1, _DEFAULT_CACHES[0]), found.get(2, _DEFAULT_CACHES[1]),
            found.get(3, _DEFAULT_CACHES[2]))


ISA_EXTENSIONS = frozenset({
    "sse3", "ssse3", "sse41", "sse42", "avx", "avx2", "fma", "f16c", "bmi", "bmi2", "lzcnt",
    "popcnt", "movbe", "adx", "aes", "pclmul", "sha", "gfni", "vaes", "vpclmulqdq", "avxvnni",
    "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx512vnni", "avx512bf16",
    "avx512fp16", "avx512ifma", "avx512vbmi", "avx512vbmi2", "avx512bitalg",
    "avx512vpopcntdq", "amxtile", "amxint8", "amxbf16"})
"""x86 instruction set extensions, in a spelling both LLVM's feature names and the kernel's
``/proc/cpuinfo`` flags reduce to (:func:`_isa_name`: ``sse4.1``/``sse4_1`` → ``sse41``,
``avx512_vnni`` → ``avx512vnni``, cpuinfo's ``pni``, ``bmi1``, ``sha_ni`` → ``sse3``, ``bmi``,
``sha``); LLVM's tuning features
(``prefer-256-bit``, ``slow-3ops-lea``, ...) are not among them."""


def _isa_name(feature: str) -> str:
    name = feature.lower().replace("_", "").replace(".", "").replace("-", "")
    return {"pclmulqdq": "pclmul", "abm": "lzcnt", "bmi1": "bmi", "pni": "sse3",
            "shani": "sha"}.get(name, name)


def _llvm_spec(mcpu: str, mattr: tuple[str, ...], mtriple: str) -> dict[str, Any]:
    """The dict ``tvm.target.Target`` takes for an LLVM CPU with extra attributes."""
    spec: dict[str, Any] = {"kind": "llvm", "mcpu": mcpu}
    if mattr:
        spec["mattr"] = list(mattr)
    if mtriple:
        spec["mtriple"] = mtriple
    return spec


@functools.cache
def _llvm_isa(mcpu: str, mattr: tuple[str, ...], mtriple: str) -> frozenset[str] | None:
    """The :data:`ISA_EXTENSIONS` LLVM enables for a CPU with extra attributes (None: TVM
    is not installed or LLVM cannot answer)."""
    try:
        import tvm
        from tvm.target import codegen
    except ImportError:
        return None
    try:
        features = codegen.llvm_get_cpu_features(tvm.target.Target(_llvm_spec(mcpu, mattr,
                                                                               mtriple)))
    except Exception:  # noqa: BLE001 - TVM's errors have no common public base
        return None
    return frozenset(n for n in (_isa_name(str(f)) for f in features) if n in ISA_EXTENSIONS)


@functools.cache
def _features(mcpu: str, mattr: tuple[str, ...], mtriple: str) -> tuple[bool, ...]:
    """``(avx512f, avx, fma, vnni, avx2)`` of an LLVM CPU with extra attributes, asked of LLVM (a
    CPU LLVM cannot answer for: none of them; without TVM, the host's ``/proc/cpuinfo``
    flags for the host, so the numpy fallback's passes still block for this machine)."""
    try:
        import tvm
        from tvm.target import codegen
    except ImportError:
        flags = _cpuinfo_flags() if mcpu == host_cpu() else frozenset()
        return ("avx512f" in flags, "avx" in flags, "fma" in flags,
                "avx512_vnni" in flags or "avx_vnni" in flags, "avx2" in flags)

    try:
        target = tvm.target.Target(_llvm_spec(mcpu, mattr, mtriple))

        def has(feature: str) -> bool:
            return bool(codegen.llvm_cpu_has_features(feature, target))

        return (has("avx512f"), has("avx"), has("fma"),
                has("avx512vnni") or has("avxvnni"), has("avx2"))
    except (AttributeError, RuntimeError, ValueError):
        return (False, False, False, False, False)


@functools.cache
def _cpu_known(mcpu: str, mtriple: str) -> bool:
    """Whether LLVM knows the CPU ``mcpu`` for ``mtriple`` (``""``: the host's triple); True
    when LLVM cannot be asked (no TVM, or a TVM without the query)."""
    try:
        from tvm.target import codegen

        triple = mtriple or str(codegen.llvm_get_system_triple())
        return bool(codegen.llvm_is_valid_cpu(mcpu, triple))
    except (ImportError, AttributeError, RuntimeError, TypeError, ValueError):
        return True


def _cpu_names(mtriple: str) -> list[str]:
    """The CPU names LLVM knows for ``mtriple`` (``""``: the host's; none when it cannot
    tell)."""
    try:
        import tvm
        from tvm.target import codegen

        spec = {"kind": "llvm", **({"mtriple": mtriple} if mtriple else {})}
        return sorted(str(c) for c in codegen.llvm_get_cpu_archlist(tvm.target.Target(spec)))
    except (ImportError, AttributeError, RuntimeError, TypeError, ValueError):
        return []


def _unknown_cpu(mcpu: str, mtriple: str) -> TargetError:
    """The error for a CPU name LLVM does not know, with the known names closest to it."""
    import difflib

    names = _cpu_names(mtriple)
    close = difflib.get_close_matches(mcpu, names, n=4, cutoff=0.6)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    known = f"it knows {len(names)} CPU names for this triple" if names else "see llc -mcpu=help"
    return TargetError(f"unknown target CPU {mcpu!r}: LLVM does not know it ({hint}{known}; "
                       f"this machine is {host_cpu()!r})")


_INT_FIELDS = ("lanes", "registers", "l1_bytes", "l2_bytes", "l3_bytes", "threads",
               "loads_per_cycle", "fma_per_cycle", "fma_latency")
_BOOL_FIELDS = ("fma", "vnni", "avx512", "avx2", "winograd", "claims")


@dataclass(frozen=True)
class Target:
    """The machine a build compiles for: what LLVM is told and what the schedules decide by.

    Attributes:
        mcpu: LLVM's CPU name (``"znver3"``, ``"skylake-avx512"``); ``mattr``, ``mtriple``:
            LLVM's extra attributes (``("+avx512f",)``) and triple (``""``: the host's).
        lanes: float32 lanes of one vector register the schedules fill (4, 8 or 16): 16 with
            AVX-512, 8 with AVX/AVX2, else 4. AlterOpLayout's channel block (``NCHW{c}c``).
        registers: vector registers (32 with AVX-512, else 16).
        l1_bytes, l2_bytes, l3_bytes: data cache bytes per core (a shared L3 divided among
            the CPUs sharing it).
        fma, vnni, avx512: fused multiply-add, the int8 dot-product instructions (AVX-512
            VNNI or AVX-VNNI), AVX-512F.
        avx2: 256-bit integer vector instructions (``vpmaddwd`` on ``ymm`` registers). The
            integer convolutions choose their dot-product instruction from ``vnni`` and
            ``avx2`` (:mod:`backends.tvm.lower.int_dot`).
        threads: the threads kernels run on (TVM's pool: ``$TVM_NUM_THREADS``, else the
            physical cores). Not part of :meth:`key`: no schedule reads it, and TVM's pool
            size is a run-time setting, so kernels built with another count are the same.
        loads_per_cycle, fma_per_cycle, fma_latency: the core's vector pipeline, for the
            register-tile cost models (Zen 3: 3 loads, 2 FMAs, latency 4).
        winograd: AlterOpLayout may turn eligible 3×3 convolutions into Winograd ones
            (``passes/alter_winograd.py``; the choice also reads ``lanes`` and ``l2_bytes``);
            False keeps every convolution direct (``{"winograd": False}``: a baseline).
        claims: a kernel's parallel loops hand out their work by atomic claims, so threads that
            are awake never wait for one the pool wakes late (x86-64 only;
            :mod:`backends.tvm.kernel.claims`); False keeps TVM's static split (a baseline).
        kind: ``"llvm"`` (the only lowering target).

    Immutable and hashable; :meth:`with_lanes` and :meth:`replace` give changed copies.
    Raises ``RelayTypeError`` on construction with an impossible field (lanes not in
    :data:`LANES`, a non-positive size, another kind).
    """

    mcpu: str
    lanes: int
    registers: int
    l1_bytes: int
    l2_bytes: int
    l3_bytes: int
    fma: bool
    vnni: bool
    avx512: bool
    threads: int
    loads_per_cycle: int = 2
    fma_per_cycle: int = 2
    fma_latency: int = 4
    winograd: bool = True
    claims: bool = True
    mattr: tuple[str, ...] = ()
    mtriple: str = ""
    kind: str = "llvm"
    avx2: bool = False

    def __post_init__(self) -> None:
        if self.kind != "llvm":
            raise TargetError(f"the TVM backend compiles for llvm only, got target kind "
                                 f"{self.kind!r}")
        if not isinstance(self.mcpu, str) or not self.mcpu:
            raise TargetError(f"bad target mcpu {self.mcpu!r}: expected an LLVM CPU name")
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TargetError(f"bad target {name} {value!r}: expected a positive int")
        for name in _BOOL_FIELDS:
            if not isinstance(getattr(self, name), bool):
                raise TargetError(f"bad target {name} {getattr(self, name)!r}: expected "
                                     f"True or False")
        if self.lanes not in LANES:
            raise TargetError(f"bad target lanes {self.lanes!r}: expected one of "
                                 f"{', '.join(map(str, LANES))} (float32 lanes of a vector "
                                 f"register)")
        if not isinstance(self.mattr, tuple) or not all(isinstance(a, str) for a in self.mattr):
            raise TargetError(f"bad target mattr {self.mattr!r}: expected strings")

    # -- building ----------------------------------------------------------------------------
    @staticmethod
    def host() -> Target:
        """The machine this process runs on (read once: LLVM's CPU name and features, the
        caches from sysfs, the threads)."""
        return _host()

    @staticmethod
    def for_cpu(mcpu: str, mattr: tuple[str, ...] = (), mtriple: str = "") -> Target:
        """An LLVM CPU with its features asked of LLVM; caches and threads are the host's
        (a build is run where it is compiled; :meth:`replace` to say otherwise).

        Raises:
            TargetError: LLVM does not know the CPU ``mcpu`` (for ``mtriple``).
        """
        if not isinstance(mcpu, str) or not _cpu_known(mcpu, mtriple):
            raise _unknown_cpu(str(mcpu), mtriple)
        avx512, avx, fma, vnni, avx2 = _features(mcpu, tuple(mattr), mtriple)
        l1, l2, l3 = host_caches()
        threads = os.environ.get("TVM_NUM_THREADS", "").strip()
        return Target(
            mcpu=mcpu, mattr=tuple(mattr), mtriple=mtriple,
            lanes=16 if avx512 else 8 if avx else 4, registers=32 if avx512 else 16,
            l1_bytes=l1, l2_bytes=l2, l3_bytes=l3, fma=fma, vnni=vnni, avx512=avx512,
            avx2=avx2,
            threads=int(threads) if threads.isdigit() and int(threads) > 0
            else default_threads(),
            loads_per_cycle=_LOAD_PORTS.get(mcpu, 2), fma_per_cycle=2 if fma else 1)

    @staticmethod
    def of(spec: TargetSpec = None) -> Target:
        """The record of a user's target (see the module docstring for the forms).

        Raises:
            TargetError: an unknown kind or field, a malformed string, a bad value.
        """
        if isinstance(spec, Target):
            return spec
        if spec is None:
            return Target.host()
        if isinstance(spec, str):
            return Target.of(_parse_string(spec))
        if not isinstance(spec, dict):
            raise TargetTypeError(f"bad target {spec!r}: expected \"llvm\", a dict such as "
                                  f"{{\"kind\": \"llvm\", \"mcpu\": \"znver3\"}} or a Target")
        fields = {f.name for f in dataclasses.fields(Target)}
        unknown = sorted(set(spec) - fields)
        if unknown:
            raise TargetError(f"unknown target field(s) {', '.join(map(repr, unknown))} "
                                 f"(known: {', '.join(sorted(fields))})")
        if spec.get("kind", "llvm") != "llvm":
            raise TargetError(f"the TVM backend compiles for llvm only, got target {spec!r}")
        mattr = spec.get("mattr", ())
        if isinstance(mattr, str):
            mattr = tuple(a for a in mattr.split(",") if a)
        if not isinstance(mattr, (list, tuple)):
            raise TargetError(f"bad target mattr {mattr!r}: expected a list of strings")
        mcpu = spec.get("mcpu", host_cpu())
        mtriple = spec.get("mtriple", "")
        if not isinstance(mcpu, str) or not isinstance(mtriple, str):
            raise TargetError(f"bad target {spec!r}: mcpu and mtriple are strings")
        base = Target.host() if (mcpu, tuple(mattr), mtriple) == (host_cpu(), (), "") \
            else Target.for_cpu(mcpu, tuple(mattr), mtriple)
        forced = {k: v for k, v in spec.items() if k not in ("kind", "mcpu", "mattr", "mtriple")}
        return base.replace(**forced) if forced else base

    def with_lanes(self, lanes: int) -> Target:
        """This target with schedules of ``lanes`` float32 lanes (4, 8 or 16)."""
        return self.replace(lanes=lanes)

    def replace(self, **changes: Any) -> Target:
        """This target with some fields changed (validated like a new one)."""
        if "mattr" in changes and isinstance(changes["mattr"], list):
            changes["mattr"] = tuple(changes["mattr"])
        try:
            return dataclasses.replace(self, **changes)
        except TypeError as err:
            raise TargetError(f"bad target fields {sorted(changes)}: {err}") from None

    # -- reading -----------------------------------------------------------------------------
    def lacks(self, machine: Target) -> list[str]:
        """The instruction set extensions this target's kernels may use that ``machine``
        lacks (AVX-512, AVX2, FMA, VNNI, as the two records tell): kernels built for this
        target can run on ``machine`` only when there are none."""
        names = {"avx512": "AVX-512", "avx2": "AVX2", "fma": "FMA", "vnni": "VNNI"}
        return [label for name, label in names.items()
                if getattr(self, name) and not getattr(machine, name)]

    def missing_here(self) -> list[str]:
        """The instruction set extensions this target's kernels may use that this machine
        lacks: every x86 extension of :data:`ISA_EXTENSIONS` LLVM enables for the target's
        CPU and attributes, checked against ``/proc/cpuinfo``'s flags (a masked flag in a
        virtual machine counts as missing); where either is unknown, :meth:`lacks` of the
        host's record."""
        flags = {_isa_name(f) for f in _cpuinfo_flags()}
        wanted = _llvm_isa(self.mcpu, tuple(self.mattr), self.mtriple or "")
        if not flags or wanted is None:
            return self.lacks(Target.host())
        return sorted(f for f in wanted if f not in flags)

    @property
    def vector_bytes(self) -> int:
        """Bytes of one vector register of the schedules (``lanes`` × 4)."""
        return self.lanes * 4

    def llvm(self) -> dict[str, Any]:
        """The dict TVM's ``tvm.target.Target`` takes (kind, mcpu, mattr, mtriple)."""
        out: dict[str, Any] = {"kind": self.kind, "mcpu": self.mcpu}
        if self.mattr:
            out["mattr"] = list(self.mattr)
        if self.mtriple:
            out["mtriple"] = self.mtriple
        return out

    def tvm(self) -> Any:
        """The ``tvm.target.Target`` LLVM compiles for (memoized)."""
        return _tvm_target(json.dumps(self.llvm(), sort_keys=True))

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON values (``Target.of`` of it gives this target back)."""
        out = dataclasses.asdict(self)
        out["mattr"] = list(self.mattr)
        return out

    def key(self) -> str:
        """A canonical string of everything kernels depend on (every field but ``threads``):
        part of the kernel cache's and the build memo's keys."""
        out = self.to_dict()
        del out["threads"]
        return json.dumps(out, sort_keys=True)

    def __str__(self) -> str:
        flags = [f for f in ("fma", "avx2", "vnni", "avx512") if getattr(self, f)]
        return (f"llvm -mcpu={self.mcpu} ({self.lanes} lanes, {self.registers} registers, "
                f"L2 {self.l2_bytes // 1024} KiB{', ' if flags else ''}{', '.join(flags)})")


@functools.cache
def _host() -> Target:
    return Target.for_cpu(host_cpu())


@functools.cache
def _tvm_target(key: str) -> Any:
    import tvm

    return tvm.target.Target(json.loads(key))


def _parse_string(text: str) -> dict[str, Any]:
    """TVM's command-line target form ``"llvm -mcpu=X -mattr=+a,+b -mtriple=T"`` as a dict
    (``"llvm"`` alone: the host)."""
    words = text.split()
    if not words or words[0] != "llvm":
        raise TargetError(f"bad target {text!r}: the TVM backend compiles for llvm only "
                             f"(\"llvm\" or \"llvm -mcpu=<cpu>\")")
    spec: dict[str, Any] = {"kind": "llvm"}
    for word in words[1:]:
        name, eq, value = word.lstrip("-").partition("=")
        if not eq or name not in ("mcpu", "mattr", "mtriple") or not value:
            raise TargetError(f"bad target {text!r}: cannot read {word!r} (expected "
                                 f"-mcpu=, -mattr= or -mtriple=)")
        spec[name] = value
    return spec


def host_target() -> Target:
    """The default target: :meth:`Target.host`."""
    return Target.host()


def normalize_target(target: TargetSpec) -> Target:
    """The :class:`Target` of a target spec (:meth:`Target.of`)."""
    return Target.of(target)


def target_key(target: Target) -> str:
    """:meth:`Target.key` (for cache keys)."""
    return target.key()


def as_target(target: Target) -> Any:
    """The ``tvm.target.Target`` of a target (memoized)."""
    return target.tvm()


def vector_bytes(target: Target | None) -> int:
    """The width of the target's vector registers in bytes as the schedules use them:
    64 with AVX-512, 32 with AVX/AVX2, 16 otherwise; None: the host."""
    return (target or Target.host()).vector_bytes
