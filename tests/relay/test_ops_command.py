"""``relay ops``: the operator table from the registry, and docs/ops.md kept current."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from relay.cli import main
from relay.commands.ops import format_value, markdown, rows
from semantics import ops

ROOT = Path(__file__).resolve().parents[2]


def test_text_table_lists_every_operator_with_its_relation_and_pattern(capsys):
    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "INPUTS", "RELATION", "PATTERN", "ATTRIBUTES"]
    by_name = {line.split()[0]: line for line in lines[1:]}
    assert set(by_name) == set(ops.list_ops())
    conv = by_name["nn.conv2d"].split()
    assert conv[1:4] == ["2", "Conv2D", "OUT_ELEMWISE_FUSABLE"]
    assert 'data_layout="NCHW"' in by_name["nn.conv2d"]
    assert "padding=[0, 0]" in by_name["nn.conv2d"]
    assert "newshape!" in by_name["reshape"] and "allowzero=False" in by_name["reshape"]
    assert by_name["concatenate"].split()[1:3] == ["var", "Concatenate"]


def test_family_filter(capsys):
    assert main(["ops", "--family", "transform"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]]
    assert names == sorted(n for n in ops.list_ops() if ops.get(n).family == "transform")
    assert main(["ops", "--family", "no_such_family"]) == 1


def test_markdown_is_docs_ops_md(capsys):
    assert main(["ops", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out == markdown()
    doc = (ROOT / "docs" / "ops.md").read_text(encoding="utf-8")
    assert doc == out, "docs/ops.md is out of date: run python tools/gen_ops_doc.py"


def test_generator_check_mode_agrees():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_ops_doc.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_markdown_rows_escape_pipes_and_cover_every_operator():
    text = markdown()
    for name in ops.list_ops():
        assert f"| `{name}` |" in text
    table_rows = [line for line in text.splitlines() if line.startswith("| `")]
    for line in table_rows:                       # 6 cells: escaped pipes do not split
        assert len(re.split(r"(?<!\\)\|", line)) == 8, line
    assert len(rows()) == len(ops.list_ops())


def test_format_value_uses_text_format_spelling():
    assert format_value(True) == "True" and format_value(None) == "None"
    assert format_value((1, 1)) == "[1, 1]" and format_value("NCHW") == '"NCHW"'
    assert format_value(1e-5) == "1e-05" and format_value(-1) == "-1"
