"""PyTorch importer: ``from_exported_program(ep) -> (IRModule, params)`` (see ``importer``)."""

from __future__ import annotations

from frontends.torch.importer import from_exported_program

__all__ = ["from_exported_program"]
