"""``check_grads`` (it passes on right rules and fails on wrong ones), deep programs (no
Python recursion), and the ``relay grad`` command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ad
from ad.check import to_float64
from interpreter import evaluate
from semantics import parse, parse_expr, pretty
from semantics.expr import Call, Function, If, Let, Op, Var, const
from semantics.ops.tables import GRADIENTS, TANGENTS
from semantics.types import TensorType
from typechecker import type_of

ROOT = Path(__file__).resolve().parents[2]
F32 = TensorType((), "float32")


def test_check_grads_accepts_correct_derivatives():
    f = parse_expr("fn (%x: Tensor[(3), float32], %y: float32) { tanh(%x) * exp(%y) }")
    ad.check_grads(f, [np.array([0.1, -0.5, 0.9], np.float32), np.float32(0.3)])


def test_check_grads_rejects_a_wrong_rule():
    rule = GRADIENTS.lookup("sin")
    GRADIENTS.unregister("sin")
    try:
        GRADIENTS.add("sin", lambda call, out, g: [Call(Op("multiply"), (g, out))])
        with pytest.raises(AssertionError, match="rev-mode derivative of order 1"):
            ad.check_grads(parse_expr("fn (%x: float32) { sin(%x) }"), [np.float32(0.7)],
                           modes=("rev",))
    finally:
        GRADIENTS.unregister("sin")
        GRADIENTS.add("sin", rule)


def test_check_grads_rejects_a_wrong_tangent_rule():
    rule = TANGENTS.lookup("cos")
    TANGENTS.unregister("cos")
    try:
        TANGENTS.add("cos", lambda call, out, tangents: tangents[0])
        with pytest.raises(AssertionError, match="fwd-mode"):
            ad.check_grads(parse_expr("fn (%x: float32) { cos(%x) }"), [np.float32(0.7)],
                           modes=("fwd",))
    finally:
        TANGENTS.unregister("cos")
        TANGENTS.add("cos", rule)


def test_check_grads_second_order():
    f = parse_expr("fn (%x: Tensor[(2), float32]) { sum(%x * %x * %x) }")
    ad.check_grads(f, [np.array([0.5, -1.5], np.float32)], order=2)


def test_check_grads_on_a_global():
    mod = parse("def @main(%x: float32) -> float32 { @sq(%x) * %x }\n"
                "def @sq(%x: float32) -> float32 { %x * %x }")
    ad.check_grads("main", [np.float32(1.5)], mod=mod)


def test_to_float64():
    f = parse_expr('fn (%x: Tensor[(2), float32]) -> Tensor[(2), float32] {'
                   ' let %y: Tensor[(2), float32] = %x * 2f; cast(%y, dtype="float32") }')
    g = to_float64(f)
    assert "float32" not in pretty(g)
    assert pretty(type_of(g)) == "fn (Tensor[(2), float64]) -> Tensor[(2), float64]"


def _chain(n: int, op: str = "sin") -> Function:
    x = Var("x", F32)
    binds = []
    prev: Var = x
    for i in range(n):
        v = Var(f"v{i}")
        binds.append((v, Call(Op(op), (prev,))))
        prev = v
    body: object = prev
    for v, val in reversed(binds):
        body = Let(v, val, body)
    return Function((x,), body)  # type: ignore[arg-type]


def test_200_operation_chain():
    x = np.float32(0.3)
    _, (g,) = evaluate(ad.grad(_chain(200, "tanh")), x)
    expected, v = 1.0, 0.3
    for _ in range(200):
        t = np.tanh(v)
        expected *= 1 - t * t
        v = t
    np.testing.assert_allclose(g, expected, rtol=1e-3)
    _, (gf,) = evaluate(ad.grad(_chain(200, "tanh"), mode="forward"), x)
    np.testing.assert_allclose(gf, expected, rtol=1e-3)


def test_200_deep_nesting():
    # 200 nested ifs and closures: fn(x) { if (True) { (fn (y) { ... y * x ... })(x) } ... }
    x = Var("x", F32)
    body: object = x
    for _ in range(200):
        y = Var("y", F32)
        inner = Function((y,), Call(Op("multiply"), (y, const(1.01, "float32"))))
        body = If(const(True), Call(inner, (body,)), x)  # type: ignore[arg-type]
    f = Function((x,), body)  # type: ignore[arg-type]
    for mode in ("reverse", "forward"):
        _, (g,) = evaluate(ad.grad(f, mode=mode), np.float32(2.0))
        np.testing.assert_allclose(g, 1.01 ** 200, rtol=1e-4)


def test_20000_deep_let_chain():
    g = ad.grad(_chain(20_000))
    value, (dx,) = evaluate(g, np.float32(0.5))
    v, expected = 0.5, 1.0
    for _ in range(20_000):
        expected *= np.cos(v)
        v = np.sin(v)
    np.testing.assert_allclose(value, v, rtol=1e-3)
    np.testing.assert_allclose(dx, expected, rtol=1e-2)


def _relay(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    import os

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "relay", *args], input=stdin,
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)


def test_cli_grad(tmp_path):
    src = tmp_path / "cube.relay"
    src.write_text("def @cube(%x: float32) -> float32 { %x * %x * %x }\n"
                   "def @main(%x: float32) -> float32 { @cube(%x) + %x }\n")
    out = _relay("grad", str(src))
    assert out.returncode == 0, out.stderr
    mod = parse(out.stdout)
    value, (g,) = evaluate(mod, np.float32(2.0))
    assert value == 10.0 and g == 13.0
    fwd = _relay("grad", str(src), "--entry", "cube", "--mode", "forward")
    assert fwd.returncode == 0, fwd.stderr
    assert evaluate(parse(fwd.stdout), np.float32(2.0))[1][0] == 12.0
    missing = _relay("grad", str(src), "--entry", "nope")
    assert missing.returncode == 1 and "no global @nope" in missing.stderr
    assert "Traceback" not in missing.stderr
    argmax = tmp_path / "argmax.relay"
    argmax.write_text('def @main(%x: Tensor[(3), float32]) {\n'
                      '  cast(argmax(%x), dtype="float32") * %x\n}\n')
    bad = _relay("grad", str(argmax))
    assert bad.returncode == 1 and "argmax" in bad.stderr and ":2:" in bad.stderr
