"""Helpers shared by the interpreter tests (imported as `interp_util`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from golden import directives, files

from interpreter import evaluate

__all__ = ["GOLDEN_FILES", "GOLDEN_IDS", "PROGRAMS", "assert_tensor", "directives",
           "golden_call", "run", "scalar"]


def run(program: Any, *args: Any, **kwargs: Any) -> Any:
    """``evaluate`` with type checking on (unless the test passes ``check=False``)."""
    kwargs.setdefault("check", True)
    return evaluate(program, *args, **kwargs)


def scalar(value: Any, dtype: str = "int32") -> np.ndarray:
    return np.array(value, dtype=dtype)


def assert_tensor(value: Any, expected: Any, dtype: str) -> None:
    """``value`` is an ndarray of exactly ``dtype`` equal to ``expected``."""
    assert isinstance(value, np.ndarray), type(value)
    assert value.dtype == np.dtype(dtype), value.dtype
    np.testing.assert_array_equal(value, np.asarray(expected, dtype=dtype))


# --- golden programs (tests/interpreter/programs/*.relay) ----------------------------------

PROGRAMS = Path(__file__).with_name("programs")
GOLDEN_FILES, GOLDEN_IDS = files(PROGRAMS)


def golden_call(spec: dict[str, str]) -> tuple[list[Any], dict[str, Any]]:
    """The arguments and keyword arguments of ``evaluate`` a golden program asks for."""
    import json

    args = json.loads(spec.get("args", "[]"))
    kwargs: dict[str, Any] = {"entry": spec.get("entry", "main"),
                              "check": spec.get("check", "on") != "off"}
    if "fuel" in spec:
        kwargs["fuel"] = int(spec["fuel"])
    if "max_depth" in spec:
        kwargs["max_depth"] = int(spec["max_depth"])
    return args, kwargs
