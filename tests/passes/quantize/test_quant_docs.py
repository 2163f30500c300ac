"""docs/quantization.md: the Fig. 9 override example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import passes.quantize  # noqa: F401 - fills QUANT_ANNOTATIONS
from semantics.ops.tables import QUANT_ANNOTATIONS

DOC = Path(__file__).resolve().parents[3] / "docs" / "quantization.md"


def test_fig9_example_runs() -> None:
    text = DOC.read_text()
    section = text[text.index("## Overriding a rule"):text.index("## Command line")]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1
    before = QUANT_ANNOTATIONS.lookup("nn.conv2d")
    exec(compile(blocks[0], str(DOC), "exec"), {})
    assert QUANT_ANNOTATIONS.lookup("nn.conv2d") is before
