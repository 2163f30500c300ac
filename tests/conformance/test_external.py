"""``relay conformance``: --pass, --impl (the JSON-lines protocol) and the shipped examples."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from conformance.external import ExternalError, ExternalImpl, handle_request
from relay.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOOD = f'"{sys.executable}" "{os.path.join(ROOT, "examples", "external", "good_impl.py")}"'
BROKEN = f'"{sys.executable}" "{os.path.join(ROOT, "examples", "external", "broken_impl.py")}"'


def test_good_implementation_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--impl", GOOD, "--max-examples", "25"]) == 0
    assert "25 generated programs agree with the oracle" in capsys.readouterr().out


def test_broken_implementation_is_caught_with_a_counterexample(
        capsys: pytest.CaptureFixture[str], no_shrinking: None) -> None:
    assert main(["conformance", "--impl", BROKEN, "--max-examples", "50"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL implementation")
    assert "--- program (Relay text) ---" in out and "def @main" in out
    assert "add(" in out or "subtract(" in out


def test_passes_from_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--pass", "identity", "--pass", "print_parse",
                 "--max-examples", "20"]) == 0
    out = capsys.readouterr().out
    assert "ok   pass identity" in out and "ok   pass print_parse" in out
    assert main(["conformance", "--list"]) == 0
    assert "print_parse" in capsys.readouterr().out
    assert main(["conformance", "--pass", "nope"]) == 2
    assert "unknown transform or pass 'nope'" in capsys.readouterr().err


def test_protocol_round_trip_in_process() -> None:
    request = {"id": 3, "entry": "main", "program": "def @main(%x: Tensor[(2,), float32]) "
               "{ (%x, divide(%x, 0f)) }",
               "args": [{"tensor": {"dtype": "float32", "shape": [2], "data": [1.5, -0.0]}}]}
    resp = json.loads(handle_request(json.dumps(request)))
    assert resp["id"] == 3
    assert resp["value"]["tuple"][1] == {"tensor": {"dtype": "float32", "shape": [2],
                                                    "data": ["inf", "nan"]}}
    trap = {"id": 4, "program": "def @main() { divide(1, 0) }", "args": []}
    resp = json.loads(handle_request(json.dumps(trap)))
    assert resp["error"] == "RelayRuntimeError" and "division by zero" in resp["message"]


def test_protocol_violations_are_external_errors() -> None:
    silent = f'"{sys.executable}" -c "import sys; sys.stdin.readline(); print(\'not json\')"'
    with ExternalImpl(silent, timeout=10) as impl:
        with pytest.raises(ExternalError, match="malformed answer"):
            impl.request("def @main() { 0 }", [])
    dead = f'"{sys.executable}" -c "pass"'
    with ExternalImpl(dead, timeout=10) as impl:
        with pytest.raises(ExternalError, match="exited"):
            impl.request("def @main() { 0 }", [])
    with ExternalImpl(GOOD, timeout=30) as impl:
        value = impl.request("def @main(%x: int8) { add(%x, 1i8) }", [np.int8(127)])
        assert value.dtype == np.int8 and int(value) == -128
