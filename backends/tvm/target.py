"""The compilation target of the TVM backend: LLVM for the host CPU, with its features.

Facts measured with apache-tvm 0.27 (recorded here because they decide the defaults):

* the target must be given in dict form with the CPU name, ``{"kind": "llvm", "mcpu":
  <host cpu>}``.  A bare ``"llvm"`` target compiles for a generic x86-64 (no AVX, no FMA)
  and the same kernels ran about 4.7x slower;
* the host CPU name comes from LLVM itself (``tvm.target.codegen.llvm_get_system_cpu()``,
  e.g. ``"rocketlake"``), so the kernels use every instruction set extension of the machine
  that compiles them.  A kernel cached on disk is therefore keyed by the target (a cache
  directory copied to another machine simply misses);
* parallel loops run on TVM's own thread pool.  Left alone, TVM sizes it to half the
  hardware threads on x86 (it assumes hyper-threading), so on this 2-core machine without SMT
  every kernel ran on one core (ResNet-18: 63 against 41 ms).  Importing the backend therefore
  sets ``TVM_NUM_THREADS`` to the physical cores this process may run on
  (:func:`default_threads`) unless the user set it.

Targets are plain dicts here (JSON-serialisable, so they enter cache keys); :func:`as_target`
turns one into a ``tvm.target.Target``.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from semantics.errors import RelayArgumentTypeError, RelayArgumentValueError

TargetSpec = dict[str, Any] | str | None


@functools.cache
def host_cpu() -> str:
    """The LLVM name of the host CPU (``"generic"`` when LLVM cannot tell)."""
    import tvm

    try:
        name = str(tvm.target.codegen.llvm_get_system_cpu())
    except (AttributeError, RuntimeError):  # pragma: no cover - TVM built without LLVM query
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


def host_target() -> dict[str, Any]:
    """The default target: LLVM for the host CPU, ``{"kind": "llvm", "mcpu": host_cpu()}``."""
    return {"kind": "llvm", "mcpu": host_cpu()}


def normalize_target(target: TargetSpec) -> dict[str, Any]:
    """A target spec as a dict: None and ``"llvm"`` mean :func:`host_target`.

    A string other than ``"llvm"`` is read as TVM's target string and turned into its dict
    (``tvm.target.Target(s).export()``); a dict is returned as a copy.

    Raises:
        RelayArgumentValueError: a target TVM does not know, or whose kind is not ``llvm``
            (the only lowering target). RelayArgumentTypeError: neither a string nor a dict.
    """
    if target is None or target == "llvm":
        spec = host_target()
    elif isinstance(target, str):
        import tvm

        try:
            exported = dict(tvm.target.Target(target).export())
        except Exception as exc:  # noqa: BLE001 - TVM's errors have no common public base
            raise RelayArgumentValueError(
                f"unknown target {target!r}: {str(exc).splitlines()[0] if str(exc) else exc}"
            ) from None
        spec = {k: v for k, v in exported.items() if k in ("kind", "mcpu", "mattr", "mtriple")}
    elif isinstance(target, Mapping):
        spec = dict(target)
    else:
        raise RelayArgumentTypeError(f"a target is a string such as \"llvm\" or a dict, not "
                                     f"{type(target).__name__} {target!r}")
    if spec.get("kind") != "llvm":
        raise RelayArgumentValueError(
            f"the TVM backend compiles for llvm only, got target {spec!r}")
    return spec


def target_key(target: dict[str, Any]) -> str:
    """A canonical string of a target dict (for cache keys)."""
    return json.dumps(target, sort_keys=True, default=str)


@functools.cache
def _as_target(key: str) -> Any:
    import tvm

    return tvm.target.Target(json.loads(key))


def as_target(target: dict[str, Any]) -> Any:
    """The ``tvm.target.Target`` of a target dict (memoized)."""
    return _as_target(target_key(target))


@functools.cache
def _vector_bytes(key: str) -> int:
    from tvm.target import codegen

    target = _as_target(key)
    try:
        if codegen.llvm_cpu_has_features("avx512f", target):
            return 64
        if codegen.llvm_cpu_has_features("avx", target):
            return 32
    except (AttributeError, RuntimeError, ValueError):
        return 64
    return 16


def vector_bytes(target: dict[str, Any] | None) -> int:
    """The width of the target's vector registers in bytes: 64 with AVX-512 (``rocketlake``),
    32 with AVX/AVX2 (``znver3``), 16 otherwise (SSE, or a CPU LLVM does not know).

    ``target`` None (or a dict without ``kind``) means the host. TVM 0.27's
    ``llvm_get_vector_width`` answers 512 for every x86 CPU, so the CPU's features are asked.
    """
    if not target or target.get("kind") != "llvm":
        target = host_target()
    return _vector_bytes(target_key(target))
