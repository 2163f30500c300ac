"""ONNX importer: ``from_onnx(model_or_path) -> (IRModule, params)`` (see ``importer``)."""

from __future__ import annotations

from frontends.onnx.builder import ImporterError
from frontends.onnx.importer import from_onnx

__all__ = ["ImporterError", "from_onnx"]
