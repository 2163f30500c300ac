"""The interpreter's golden programs (``tests/interpreter/programs``) after partial evaluation.

Each program runs as its header says (``// entry:``, ``// args:``); the partially evaluated
program must give the same value, or fail with a run-time error as well. Programs that
only terminate through ``fuel`` or ``max_depth`` are skipped (the partial evaluator may
change how many rules or nested calls a run takes, never what it computes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.harness import run_oracle
from interpreter.values import values_equal
from pe import partial_evaluate
from semantics import parse
from semantics.errors import RelayError

PROGRAMS = sorted((Path(__file__).parent.parent / "interpreter" / "programs").glob("*.relay"))


def _header(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line.startswith("// ") and ":" in line:
            key, _, value = line[3:].partition(":")
            out[key.strip()] = value.strip()
    return out


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_partial_evaluation_of_a_golden_program_computes_the_same(path: Path):
    text = path.read_text(encoding="utf-8")
    header = _header(text)
    if "fuel" in header or "max_depth" in header:
        pytest.skip("the outcome depends on the evaluation budget")
    try:
        mod = parse(text, source_name=path.name)
    except RelayError:
        pytest.skip("a parse-error program")
    entry = header.get("entry", "main")
    args: list[Any] = json.loads(header["args"]) if "args" in header else []
    before = run_oracle(mod, args, entry=entry)
    if before.error == "RelayTypeError":
        pytest.skip("an ill-typed program")
    out = partial_evaluate(mod)
    if entry not in out.functions:
        pytest.skip("the entry is not reachable from @main (dead-code elimination drops it)")
    after = run_oracle(out, args, entry=entry)
    if before.ok:
        assert after.ok, after.describe()
        assert values_equal(before.value, after.value)
    else:
        assert after.error == before.error == "RelayRuntimeError", after.describe()
