"""``grad(e)`` reaches ``ad`` through a plugin entry point, never an import by the interpreter.

The interpreter sits below ``ad`` (docs/architecture.md, "Layers"). ``ad.register`` is the
entry point of the group ``relay.grad_expanders`` declared in pyproject.toml; the
interpreter loads the group's plugins on the first ``grad`` node it meets with no expander
registered. These tests read the declaration from pyproject.toml (so they check this tree's
packaging, whatever distribution is installed) and feed it to ``importlib.metadata``.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tomllib

import interpreter.grad_hook as hook
from interpreter import evaluate, grad_expander, register_grad_expander
from semantics import RelayRuntimeError, parse_expr

ROOT = Path(__file__).resolve().parents[2]
GROUP = hook.GRAD_PLUGINS
PROGRAM = parse_expr("fn (%x: float32) { grad(fn (%y: float32) { %y * %y })(%x) }")


def declared_plugins() -> list[importlib.metadata.EntryPoint]:
    """The ``relay.grad_expanders`` entry points pyproject.toml declares."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    table = project.get("entry-points", {}).get(GROUP, {})
    return [importlib.metadata.EntryPoint(name, value, GROUP) for name, value in table.items()]


@pytest.fixture
def no_expander(monkeypatch):
    """No expander registered; the declared plugins as the installed ones."""
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: declared_plugins() if group == GROUP else [])
    previous = register_grad_expander(None)
    yield
    register_grad_expander(previous)


def test_pyproject_declares_ad_as_the_grad_plugin():
    assert [(ep.name, ep.value) for ep in declared_plugins()] == [("ad", "ad:register")]


def test_the_first_grad_node_loads_the_plugin(no_expander):
    value, (gradient,) = evaluate(PROGRAM, np.float32(3.0))
    assert value == np.float32(9.0) and gradient == np.float32(6.0)
    assert grad_expander() is not None


def test_a_plugin_that_cannot_be_imported_is_passed_over(no_expander, monkeypatch):
    monkeypatch.setitem(sys.modules, "ad", None)  # declared but not importable
    assert grad_expander() is None
    with pytest.raises(RelayRuntimeError, match="needs an automatic-differentiation expander"):
        evaluate(PROGRAM, np.float32(3.0))


def test_the_public_getter_returns_the_registered_expander():
    def expander(node, mod, roots):
        return node.func

    previous = register_grad_expander(expander)
    try:
        assert grad_expander() is expander
    finally:
        register_grad_expander(previous)


def test_the_interpreter_does_not_import_ad():
    # A fresh process: evaluating a program without `grad` loads no module of `ad`, and the
    # interpreter's code names `ad` nowhere (tests/test_layers.py checks every import).
    code = ("import sys; from interpreter import evaluate; from semantics import parse_expr; "
            "evaluate(parse_expr('1 + 2')); "
            "print(sorted(m for m in sys.modules if m == 'ad' or m.startswith('ad.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"
