"""ONNX importer: ``from_onnx(model_or_path) -> (IRModule, params)`` (see ``importer``).

Importing the package registers every converter family (``CONVERTERS``); ``onnx`` itself is
imported only when a model is converted.
"""

from __future__ import annotations

from frontends.onnx import (  # noqa: F401 - the families register their converters
    control,
    ops_dynamic,
    ops_extra,
    ops_gather,
    ops_math,
    ops_nn,
    ops_pool,
    ops_rnn,
    ops_seq,
    ops_tensor,
)
from frontends.onnx.builder import ImporterError
from frontends.onnx.importer import CONVERTERS, from_onnx
from frontends.onnx.ops_seq import from_relay_value, to_relay_value

__all__ = ["CONVERTERS", "ImporterError", "from_onnx", "from_relay_value", "to_relay_value"]
