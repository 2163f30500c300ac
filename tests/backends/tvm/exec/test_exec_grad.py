"""``grad(e)`` nodes through the VM: the expander comes from the interpreter's public
registration API (``interpreter.grad_expander``), as for the oracle."""

from __future__ import annotations

import numpy as np
import pytest

import ad  # noqa: F401  (registers the reverse-mode expander)
from backends.tvm import build
from interpreter import evaluate, register_grad_expander
from semantics import RelayRuntimeError, parse

PROGRAM = """
def @main(%x: Tensor[(3), float32]) {
  grad(fn (%y: Tensor[(3), float32]) { %y * %y * %y })(%x)
}
"""


def test_grad_through_the_vm_agrees_with_the_oracle():
    x = np.array([1.0, -2.0, 0.5], dtype=np.float32)
    value, (gradient,) = build(parse(PROGRAM), executor="vm", opt_level=0)(x)
    want_value, (want_gradient,) = evaluate(parse(PROGRAM), x)
    np.testing.assert_allclose(value, want_value, rtol=1e-6)
    np.testing.assert_allclose(gradient, want_gradient, rtol=1e-6)
    np.testing.assert_allclose(gradient, 3 * x * x, rtol=1e-6)


def test_grad_without_an_expander_is_a_runtime_error_in_the_vm(monkeypatch):
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group=None: [])
    previous = register_grad_expander(None)
    try:
        exe = build(parse(PROGRAM), executor="vm", opt_level=0)
        with pytest.raises(RelayRuntimeError, match="automatic-differentiation expander"):
            exe(np.ones(3, dtype=np.float32))
    finally:
        register_grad_expander(previous)
