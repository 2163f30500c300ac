"""The assembly of a compiled kernel, for tests and inspection.

:func:`kernel_assembly` runs the compile step of :mod:`backends.tvm.kernel.compile` (lowering,
schedule, ``tvm.compile``) without the cache and without running anything, so a target the
host cannot execute (an AVX-512 VNNI CPU on an AVX2 machine) is fine.
"""

from __future__ import annotations

from collections.abc import Sequence

from backends.tvm.kernel.cache import kernel_key
from backends.tvm.kernel.compile import _build_library
from backends.tvm.target import TargetSpec, normalize_target
from semantics.expr import Function
from semantics.types import Type

__all__ = ["kernel_assembly"]


def kernel_assembly(func: Function, arg_types: Sequence[Type], *,
                    target: TargetSpec = None) -> str:
    """The assembly LLVM generates for a primitive function compiled for ``target``.

    Raises:
        NoLowering: as ``backends.tvm.kernel.compile_function``.
    """
    spec = normalize_target(target)
    lib, *_ = _build_library(func, arg_types, spec, kernel_key(func, arg_types, spec), None)
    mod = lib.mod if hasattr(lib, "mod") else lib
    return str(mod.inspect_source("asm"))
