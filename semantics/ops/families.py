"""Imports every operator family so that each registers its operators."""

from __future__ import annotations

import importlib

FAMILIES = ("tensor", "creation", "reduce", "nn", "transform", "grad_ops", "extra", "bitwise",
            "annotation", "winograd", "memory")

for _name in FAMILIES:
    importlib.import_module(f"semantics.ops.{_name}")
