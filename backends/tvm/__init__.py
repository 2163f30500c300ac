"""The TVM backend (ARCHITECTURE.md §8, issue 14): ``build`` and ``load``.

``build(mod, params=None, target="llvm", opt_level=3, executor="vm")`` optimizes and
fuses a Relay module, compiles each fused primitive function to a kernel
(``backends.tvm.kernels``; the numpy fallback for what does not lower) and returns an
:class:`Executable` for one of three executors: ``"vm"`` (the whole language),
``"graph"`` (first-order dataflow with memory planning) or ``"aot"`` (a generated
Python module). ``load(path)`` reads a build written by ``Executable.save``.
"""

from __future__ import annotations

from backends.tvm.build import build
from backends.tvm.executable import Executable, load

__all__ = ["Executable", "build", "load"]
