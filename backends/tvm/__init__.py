"""The TVM backend (docs/architecture.md#toolchain, issue 14): ``build`` and ``load``.

``build(mod, params=None, target="llvm", opt_level=3, executor="vm")`` optimizes and
fuses a Relay module, compiles each fused primitive function to a kernel
(``backends.tvm.kernel``; the numpy fallback for what does not lower) and returns an
:class:`Executable` for one of three executors: ``"vm"`` (the whole language),
``"graph"`` (first-order dataflow with memory planning) or ``"aot"`` (a generated
Python module). ``load(path)`` reads a build written by ``Executable.save``.
"""

from __future__ import annotations

import sys

from backends.tvm.target import use_every_core


def _import_tvm_without_torch() -> None:
    """Import TVM once, without letting it import PyTorch.

    ``tvm_ffi`` (imported by ``tvm``) runs ``import torch`` eagerly, for a symbol-conflict
    workaround on Windows and an optional DLPack fast path for torch tensors; we never hand it
    torch tensors. With torch installed that doubles the import (6.7 s instead of 3 s here)
    in this process and in every kernel-compiling worker. A ``None`` entry in
    ``sys.modules`` makes that ``import torch`` fail at once; it is removed afterwards, so the
    program can still import torch itself. Nothing happens when either is already imported.
    """
    if "tvm" in sys.modules or "torch" in sys.modules:
        return
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        import tvm  # noqa: F401
    except ImportError:          # the extra is not installed: its users report that
        pass
    finally:
        if "torch" in sys.modules and sys.modules["torch"] is None:
            del sys.modules["torch"]


use_every_core()
_import_tvm_without_torch()

from backends.tvm.build import build  # noqa: E402
from backends.tvm.exec.executable import Executable, load  # noqa: E402

__all__ = ["Executable", "build", "load"]
