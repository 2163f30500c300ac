"""DefuseOps, and automatic differentiation of fused programs (issue 33, item 4).

FuseOps leaves ``Primitive=1`` function literals that A-normal form keeps whole; AD then met a
call inside a kernel ("ad: Call is not an atom", an InternalError). AD now undoes fusion first
(:mod:`passes.defuse_ops`): ``grad`` inside a fused program evaluates (oracle and VM),
``ad.grad`` of a fused function works, and so does ``relay grad`` of ``relay opt -O1`` output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ad
import passes
from conformance import assert_equivalent
from interpreter import evaluate
from semantics import alpha_equal, parse, parse_expr

CUBE = "def @main(%x: float32) { grad(fn (%y: float32) { %y * %y * %y })(%x) }"
SUM_EXP = "def @main(%x: Tensor[(3), float32]) { sum(exp(%x) * %x + %x) }"


def _close(got: object, want: object) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6)  # type: ignore[arg-type]


def test_defuse_undoes_fusion() -> None:
    mod = parse(SUM_EXP)
    fused = passes.fuse_ops(mod)
    assert passes.count_primitive_functions(fused) == 1
    defused = passes.defuse_ops(fused)
    assert passes.count_primitive_functions(defused) == 0
    x = np.float32([0.5, -1, 2])
    _close(evaluate(defused, x), evaluate(mod, x))
    assert passes.defuse_ops(mod) is mod                # nothing fused: unchanged
    assert passes.get_pass("DefuseOps") is passes.get_pass("defuse_ops")


def test_defuse_of_a_group_used_twice_gets_distinct_binders() -> None:
    fused = passes.fuse_ops(parse(
        "def @main(%x: Tensor[(2), float32]) { let %f = fn (%p: Tensor[(2), float32], "
        "Primitive=1) { exp(%p) }; (%f(%x), %f(%f(%x))) }"))
    defused = passes.defuse_ops(fused)
    assert passes.count_primitive_functions(defused) == 0
    x = np.float32([0.5, -1])
    _close(evaluate(defused, x), evaluate(fused, x))


def test_defuse_preserves_meaning_of_fused_generated_programs() -> None:
    assert_equivalent(lambda m: passes.defuse_ops(passes.fuse_ops(m)), max_examples=15,
                      name="DefuseOps . FuseOps")


def test_grad_inside_a_fused_program_evaluates() -> None:
    fused = passes.fuse_ops(parse(CUBE))
    got = evaluate(fused, 2.0)
    _close(got, (np.float32(8.0), (np.float32(12.0),)))


@pytest.mark.parametrize("opt_level", [1, 3])
def test_grad_inside_an_optimized_program_on_the_vm(opt_level: int) -> None:
    pytest.importorskip("tvm", reason="the VM's kernels need apache-tvm (extra `tvm`)")
    from backends.tvm import build

    got = build(CUBE, opt_level=opt_level, executor="vm")(np.float32(2.0))
    _close(got, (np.float32(8.0), (np.float32(12.0),)))


def test_ad_grad_of_a_fused_function_equals_the_unfused_gradient() -> None:
    text = "fn (%y: Tensor[(3), float32]) { sum(exp(%y) * %y) }"
    fused = passes.fuse_ops(parse_expr(text))
    assert passes.count_primitive_functions(fused) == 1
    x = np.float32([1, 2, 3])
    for mode in ("reverse", "forward"):
        _close(evaluate(ad.grad(fused, mode=mode), x),
               evaluate(ad.grad(parse_expr(text), mode=mode), x))


def test_relay_grad_of_relay_opt_output(tmp_path: Path) -> None:
    src = tmp_path / "m.relay"
    src.write_text(SUM_EXP + "\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    opt = subprocess.run([sys.executable, "-m", "relay", "opt", "-O1", str(src)],
                         capture_output=True, text=True, env=env, check=True)
    fused = tmp_path / "fused.relay"
    fused.write_text(opt.stdout, encoding="utf-8")
    assert "Primitive=1" in opt.stdout
    out = subprocess.run([sys.executable, "-m", "relay", "grad", str(fused)],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    direct = subprocess.run([sys.executable, "-m", "relay", "grad", str(src)],
                            capture_output=True, text=True, env=env, check=True)
    x = np.float32([0.5, -1, 2])
    _close(evaluate(parse(out.stdout), x), evaluate(parse(direct.stdout), x))
    assert not alpha_equal(parse(out.stdout), parse(opt.stdout))
