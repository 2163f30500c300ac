"""The ONNX package's own node test cases keep passing: every case named in
``onnx_node_passing.txt`` (written by ``bench/onnx_node_tests.py --write-list``) imports and
matches its expected outputs on the oracle."""

from __future__ import annotations

import pathlib
import warnings

import pytest

pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")

from frontends.onnx.node_tests import collect, run_case  # noqa: E402

LIST = pathlib.Path(__file__).with_name("onnx_node_passing.txt")


def test_the_passing_node_cases_do_not_regress():
    names = {line.strip() for line in LIST.read_text().splitlines() if line.strip()}
    assert len(names) > 900
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = {c.name: c for c in collect()}
    missing = sorted(names - set(cases))
    assert not missing, f"cases no longer shipped by onnx: {missing[:10]}"
    failures = []
    for name in sorted(names):
        out = run_case(cases[name])
        if out.status != "pass":
            failures.append(f"{name}: [{out.status}] {out.reason}")
    assert not failures, f"{len(failures)} regressions:\n" + "\n".join(failures[:40])


def test_an_unsupported_case_is_reported_as_such():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (case,) = [c for c in collect() if c.name == "test_det_2d"]
    out = run_case(case)
    assert out.status == "unsupported" and "Det" in out.reason


def test_a_sequence_of_a_scalar_and_vectors_imports_with_a_rank_union():
    # test_loop16_seq_none starts its sequence with a scalar and a Loop appends the 1-D
    # slices x[:i+1]. A Relay tensor type fixes the rank, so the elements are an ADT with one
    # constructor per rank; the result reaches the user as a list of arrays of both ranks.
    from frontends.onnx import from_onnx
    from semantics.printer import pretty

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = {c.name: c for c in collect() if c.name.startswith("test_loop1")}
    case = cases["test_loop16_seq_none"]
    out = run_case(case)
    assert out.status == "pass", out.reason
    mod, _ = from_onnx(case.model, shapes={"opt_seq": ()})
    text = pretty(mod)
    assert "type OnnxTensorF32 {\n  OnnxF32R0(float32),\n  OnnxF32R1(Tensor[(?), float32]),\n}" \
        in text
    assert "Option[List[OnnxTensorF32]]" in text
    assert run_case(cases["test_loop13_seq"]).status == "pass"
