"""The interpreter's golden programs (``tests/interpreter/programs/*.relay``) through the VM
and AoT: each well-typed golden gives the value or the run-time error it declares.

Goldens that declare a type error or run unchecked are skipped (``build`` type-checks);
fuel is an interpreter notion (a program that runs out of fuel there is not run here).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden import directives, files

from backends.tvm import build
from interpreter.values import value_str
from semantics import RelayError, parse

PROGRAMS = Path(__file__).resolve().parents[3] / "interpreter" / "programs"
FILES, _ = files(PROGRAMS)


def runnable(path: Path) -> bool:
    spec = directives(path.read_text(encoding="utf-8"))
    return spec.get("check", "on") != "off" and "fuel" not in spec \
        and not spec.get("error", "").startswith(("RelayTypeError", "ParseError"))


RUNNABLE = [p for p in FILES if runnable(p)]


def outcome(path: Path, executor: str, opt_level: int) -> tuple[str, str]:
    text = path.read_text(encoding="utf-8")
    spec = directives(text)
    args = json.loads(spec.get("args", "[]"))
    max_depth = int(spec.get("max_depth", "100000"))
    try:
        exe = build(parse(text, source_name=path.name), executor=executor, opt_level=opt_level,
                    max_depth=max_depth)
        return "value", value_str(exe.run(spec.get("entry", "main"), *args))
    except RelayError as err:
        return "error", f"{type(err).__name__}: {err.message}"


def test_most_goldens_are_runnable():
    assert len(RUNNABLE) >= 25


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("path", RUNNABLE, ids=[p.stem for p in RUNNABLE])
def test_golden_program_through_the_vm(path: Path, opt_level: int):
    spec = directives(path.read_text(encoding="utf-8"))
    kind, got = outcome(path, "vm", opt_level)
    if "expect" in spec:
        assert (kind, got) == ("value", spec["expect"])
    else:
        assert kind == "error", f"expected an error, got the value {got}"
        assert got.startswith(spec["error"]), got


@pytest.mark.parametrize("path", RUNNABLE, ids=[p.stem for p in RUNNABLE])
def test_golden_program_through_aot(path: Path):
    spec = directives(path.read_text(encoding="utf-8"))
    kind, got = outcome(path, "aot", 3)
    if "expect" in spec:
        assert (kind, got) == ("value", spec["expect"])
    else:
        assert kind == "error", f"expected an error, got the value {got}"
        assert got.startswith(spec["error"].split(":")[0]), got
