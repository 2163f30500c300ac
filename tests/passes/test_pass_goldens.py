"""Pass goldens: ``golden/<pass>/<name>.in.relay`` rewritten by the pass is ``<name>.out.relay``.

The directory name is the pass's function name. The comparison is
``alpha_equal`` (bound names are free to differ, graph sharing must agree);
``pytest --update-golden`` rewrites a disagreeing ``.out.relay`` with the pass's output
(``tests/golden.py``, shared by every golden suite). Both files must also mean the same
under the oracle when ``@main`` takes no arguments.
Every registered pass has goldens (a completeness check below).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from golden import check_text, files

import passes
from interpreter import evaluate
from interpreter.values import value_str
from semantics import alpha_equal, parse, pretty

GOLDEN = Path(__file__).parent / "golden"
CASES, IDS = files(GOLDEN, "*/*.in.relay")


@pytest.mark.parametrize("path", CASES, ids=[i.removesuffix(".in") for i in IDS])
def test_golden(path: Path):
    pass_ = passes.get_pass(path.parent.name)
    source = parse(path.read_text(encoding="utf-8"), source_name=path.name)
    expected_path = path.with_name(path.name.replace(".in.relay", ".out.relay"))
    expected = parse(expected_path.read_text(encoding="utf-8"), source_name=expected_path.name)
    before = pretty(source)
    got = pass_(source)
    assert pretty(source) == before, "the pass mutated its input"
    shown = pretty(got)
    check_text(expected_path, shown, alpha_equal(got, expected), shown)
    if not source["main"].params:
        assert value_str(evaluate(got)) == value_str(evaluate(source))


def test_every_registered_pass_has_goldens():
    have = {p.parent.name for p in CASES}
    missing = [p.func_name for p in passes.list_passes() if p.func_name not in have]
    assert not missing, f"passes without goldens in tests/passes/golden/: {missing}"
