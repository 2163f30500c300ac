"""Helpers shared by the interpreter tests (imported as `interp_util`)."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from interpreter import evaluate


def typechecker_ready() -> bool:
    """True when the type checker can be used (``check=True`` evaluations)."""
    if importlib.util.find_spec("typechecker") is None:
        return False
    import typechecker

    return hasattr(typechecker, "check")


CHECK = typechecker_ready()


def run(program: Any, *args: Any, **kwargs: Any) -> Any:
    """``evaluate`` with type checking on whenever the type checker is available."""
    kwargs.setdefault("check", CHECK)
    return evaluate(program, *args, **kwargs)


def scalar(value: Any, dtype: str = "int32") -> np.ndarray:
    return np.array(value, dtype=dtype)


def assert_tensor(value: Any, expected: Any, dtype: str) -> None:
    """``value`` is an ndarray of exactly ``dtype`` equal to ``expected``."""
    assert isinstance(value, np.ndarray), type(value)
    assert value.dtype == np.dtype(dtype), value.dtype
    np.testing.assert_array_equal(value, np.asarray(expected, dtype=dtype))
