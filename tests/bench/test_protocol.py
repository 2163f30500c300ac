"""``bench/protocol.py``: the protocol's shape, never its timings — every system runs in every
block (a warm-up call and the timed calls), the order rotates from block to block, TVM's
spinning is off once the module is imported, onnxruntime's options turn spinning off, and the
header names the CPU and the vector width."""

from __future__ import annotations

import os
from typing import Any

import pytest

from bench.protocol import machine_line, ort_session_options, spinning_is_off, time_in_blocks


def test_systems_alternate_in_blocks_with_rotating_order() -> None:
    calls: list[str] = []
    systems = {name: (lambda name=name: calls.append(name)) for name in ("a", "b", "c")}
    result = time_in_blocks(systems, blocks=3, runs=2, gap=0.0)
    per_block = 3 * (1 + 2)
    blocks = [calls[i:i + per_block] for i in range(0, len(calls), per_block)]
    assert [[b[k] for k in (0, 3, 6)] for b in blocks] == [["a", "b", "c"], ["b", "c", "a"],
                                                           ["c", "a", "b"]]
    assert {n: t.runs for n, t in result.timings.items()} == {"a": 6, "b": 6, "c": 6}
    assert all(t.low <= t.median <= t.high for t in result.timings.values())
    assert "3 alternating blocks of 2 timed calls" in result.describe()


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        time_in_blocks({}, blocks=1, runs=1)
    with pytest.raises(ValueError):
        time_in_blocks({"a": lambda: None}, blocks=0, runs=1)


def test_spinning_is_off_and_the_machine_is_named() -> None:
    assert spinning_is_off() and os.environ["TVM_THREAD_POOL_SPIN_COUNT"] == "0"
    line = machine_line()
    assert "float32 lanes" in line and "spinning off" in line


def test_onnxruntime_sessions_do_not_spin() -> None:
    ort: Any = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    opts = ort_session_options(2)
    assert isinstance(opts, ort.SessionOptions) and opts.intra_op_num_threads == 2
    assert opts.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert opts.get_session_config_entry("session.inter_op.allow_spinning") == "0"
