"""Model importers: ONNX (``frontends.onnx.from_onnx``) and PyTorch ``torch.export``
programs (``frontends.torch.from_exported_program``), each returning ``(IRModule, params)``.

The subpackages import ``onnx`` / ``torch`` lazily, so importing ``frontends`` needs neither.
"""

from __future__ import annotations
