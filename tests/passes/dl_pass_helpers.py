"""Helpers shared by the deep-learning pass tests (``test_dl_passes.py``,
``test_simplify_inference.py``): operator names of ``main``, tolerant comparison of values,
the same-type-same-meaning check and the harness configuration focused on one operator."""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance.strategies.programgen.config import FLOAT_DTYPES
from conformance.strategies.programs import ProgramConfig
from interpreter import evaluate
from semantics import pretty, types_equal
from semantics.expr import Call, Op
from semantics.visitor import post_order
from typechecker import infer


def op_names(mod: Any) -> list[str]:
    """The operator names called in ``main`` (with repetitions, post-order)."""
    return [n.op.name for n in post_order(mod["main"])
            if type(n) is Call and type(n.op) is Op]


def close(got: Any, want: Any, dtype: str) -> bool:
    """Values agree within a tolerance scaled by the magnitude of the expected value."""
    if isinstance(want, tuple):
        return isinstance(got, tuple) and len(got) == len(want) and all(
            close(g, w, dtype) for g, w in zip(got, want, strict=True))
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    rtol = 2e-4 if dtype == "float32" else 1e-9
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    return bool(np.allclose(got, want, rtol=rtol, atol=rtol * scale))


def assert_same_meaning(before: Any, after: Any, inputs: tuple[Any, ...], dtype: str) -> None:
    """``after`` is well typed with ``before``'s type and computes the same values."""
    t_before = infer(before)["main"].checked_type
    t_after = infer(after)["main"].checked_type
    assert types_equal(t_before, t_after), f"{pretty(t_before)} != {pretty(t_after)}"
    want = evaluate(before, *inputs)
    got = evaluate(after, *inputs)
    assert close(got, want, dtype), f"\n{pretty(after)}\ngot {got}\nwant {want}"


def float_config(op: str) -> ProgramConfig:
    """The harness in float mode with ``op`` as the focus of the generated programs."""
    return ProgramConfig(float_mode=True, dtypes=FLOAT_DTYPES, focus_op=op)
