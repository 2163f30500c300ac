"""Per-operator rule tables (``semantics.ops.tables``): registration, lookup, completeness,
duplicates, deliberate absences; and the import direction (semantics never imports a
consumer package)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from semantics import ops
from semantics.errors import RelayTypeError
from semantics.ops.tables import (
    GRADIENTS,
    LOWERINGS,
    QUANT_ANNOTATIONS,
    RuleTable,
    missing,
    register_gradient,
    register_lowering,
)

ROOT = Path(__file__).resolve().parents[3]


def test_register_and_lookup():
    table = RuleTable("gradient")

    @table.register("log")
    def log_grad(x):
        return 1 / x

    assert table.lookup("log") is log_grad and table.has("log")
    assert table.keys() == ["log"]
    with pytest.raises(RelayTypeError, match="no gradient rule for operator exp$"):
        table.lookup("exp")
    with pytest.raises(RelayTypeError, match="unknown operator no_such_op"):
        table.lookup("no_such_op")


def test_duplicate_registration_is_an_error():
    table = RuleTable("gradient")
    table.add("log", object())
    with pytest.raises(ValueError, match="registered twice"):
        table.add("log", object())
    table.declare_none("argmax", "piecewise constant: the gradient is zero")
    with pytest.raises(ValueError, match="declared to have none"):
        table.add("argmax", object())
    with pytest.raises(ValueError, match="declared twice"):
        table.declare_none("argmax", "again")
    with pytest.raises(ValueError, match="declared twice"):
        table.declare_none("log", "it has a rule")


def test_declared_absence_needs_a_reason_and_shows_it():
    table = RuleTable("gradient")
    with pytest.raises(ValueError, match="reason"):
        table.declare_none("argmax", "  ")
    table.declare_none("argmax", "its output is an index: the gradient is zero")
    assert not table.has("argmax")
    assert table.reason("argmax") == "its output is an index: the gradient is zero"
    with pytest.raises(RelayTypeError, match="argmax: its output is an index"):
        table.lookup("argmax")


def test_missing_lists_operators_without_rule_or_reason():
    table = RuleTable("gradient")
    every = ops.list_ops()
    assert missing(table) == every
    table.add("add", object())
    table.declare_none("argmax", "zero gradient")
    gone = missing(table)
    assert "add" not in gone and "argmax" not in gone and len(gone) == len(every) - 2
    assert missing(table, among=["add", "argmax", "log", "log"]) == ["log"]
    for name in every:
        if table.reason(name) is None and not table.has(name):
            table.add(name, object())
    assert missing(table) == []


def test_qualified_tables_key_on_target():
    table = RuleTable("lowering", qualifier="target")
    table.add("add", "llvm-add", "llvm")
    assert table.lookup("add", "llvm") == "llvm-add"
    with pytest.raises(RelayTypeError, match="no lowering rule for operator add for target cuda"):
        table.lookup("add", "cuda")
    with pytest.raises(ValueError, match="need a target"):
        table.add("add", "x")
    with pytest.raises(ValueError, match="keyed by operator only"):
        RuleTable("gradient").add("add", "x", "llvm")
    assert "add" not in missing(table, qualifier="llvm")
    assert "add" in missing(table, qualifier="cuda")


def test_shared_tables_and_decorators():
    assert (GRADIENTS.name, LOWERINGS.qualifier, QUANT_ANNOTATIONS.qualifier) == (
        "gradient", "target", None)
    # ad.rules may have registered the real rule in this process: set it aside, restore it after.
    saved = GRADIENTS._rules.pop("sigmoid", None)

    @register_gradient("sigmoid")
    def rule(x):
        return x

    @register_lowering("sigmoid", target="test-target")
    def lower(x):
        return x

    try:
        assert GRADIENTS.lookup("sigmoid") is rule
        assert LOWERINGS.lookup("sigmoid", "test-target") is lower
        assert ops.register_gradient is register_gradient and ops.missing is missing
    finally:
        GRADIENTS.unregister("sigmoid")
        LOWERINGS.unregister("sigmoid", "test-target")
        assert not GRADIENTS.has("sigmoid")
        if saved is not None:
            GRADIENTS.add("sigmoid", saved)


def test_opdef_has_no_extra_field():
    assert not hasattr(ops.get("add"), "extra")


CONSUMER_PACKAGES = ("ad", "backends", "interpreter", "typechecker", "conformance", "relay")


def test_semantics_imports_no_consumer_package():
    """Imports point down: no module of semantics/ imports a consumer package."""
    offenders = []
    for path in (ROOT / "semantics").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in CONSUMER_PACKAGES:
                    offenders.append(f"{path.relative_to(ROOT)}: {name}")
    assert offenders == []
