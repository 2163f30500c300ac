"""Every import of the repository against the layer tables of ``docs/architecture.md#layers``.

The tables are read from the document, so the document and this test cannot drift apart.
Imports are found by ``tools/arch_metrics.py`` (one scanner for the measurements and this
test): every ``import``/``from ... import`` wherever it stands — module level, inside a
function, under ``TYPE_CHECKING`` — and every ``import_module("...")``/``__import__("...")``
with a constant name.

Checked:

* each package imports only the packages its row allows, and no two packages import each
  other, directly or through others;
* inside a package, modules form no import cycle, except the cycles listed in
  ``KNOWN_CYCLES`` — which may only shrink (a cycle that is not inside a listed one fails);
* inside ``semantics``, each module belongs to one layer of the second table and imports only
  what its layer allows, except the edges listed in ``KNOWN_LAYER_EXCEPTIONS`` (which may
  only shrink).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"

# Import cycles inside a package when this test was written, as sets of modules: a cycle
# today must lie inside one of them. Remove or shrink an entry when a cycle is broken.
KNOWN_CYCLES: dict[str, list[frozenset[str]]] = {
    "semantics": [
        # a constructor's type names its ADT, an ADT's definition lists its constructors
        frozenset({"semantics.expr", "semantics.types"}),
    ],
}

# Imports inside semantics/ that cross its layers the wrong way today (all function-local).
KNOWN_LAYER_EXCEPTIONS: frozenset[tuple[str, str]] = frozenset({
    ("semantics.ops.registry", "semantics.printing.types"),  # relation_error shows the types
})


def _load_scanner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("arch_metrics", ROOT / "tools" /
                                                  "arch_metrics.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("arch_metrics", module)
    spec.loader.exec_module(module)
    return module


scanner = _load_scanner()


def _table(header: str) -> list[list[str]]:
    """The rows (cells) of the Markdown table of DOC whose header row starts with ``header``."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(header))
    rows = []
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", ln.strip())[1:-1]])
    return rows


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


@cache
def package_table() -> dict[str, set[str] | None]:
    """package -> the packages it may import (None: everything)."""
    out: dict[str, set[str] | None] = {}
    for cells in _table("| package |"):
        allowed = None if cells[2] == "everything" else set(_names(cells[2]))
        for pkg in _names(cells[0]):
            out[pkg] = allowed
    return out


@cache
def graph(root: Path = ROOT) -> dict[str, dict[str, bool]]:
    return scanner.import_graph(root, scanner.python_files(root))


def package_of(module: str) -> str:
    return module.split(".")[0]


def test_every_folder_with_python_is_in_the_table():
    folders = {package_of(m) for m in graph()} - {""}
    missing = sorted(f for f in folders if f not in package_table() and "." not in f
                     and (ROOT / f).is_dir())
    assert not missing, f"folders missing from the layer table of {DOC.name}: {missing}"


def test_every_import_follows_the_package_table():
    table = package_table()
    ours = set(table)
    bad = []
    for module, targets in sorted(graph().items()):
        src = package_of(module)
        allowed = table.get(src)
        if allowed is None:
            continue
        for target in sorted(targets):
            dst = package_of(target)
            if dst != src and dst in ours and dst not in allowed:
                bad.append(f"{module} imports {target} ({src} may import: "
                           f"{', '.join(sorted(allowed)) or 'no package'})")
    assert not bad, "imports against docs/architecture.md#layers:\n" + "\n".join(bad)


def test_no_import_cycle_between_packages():
    table = package_table()
    edges: dict[str, set[str]] = {p: set() for p in table}
    for module, targets in graph().items():
        src = package_of(module)
        if table.get(src, ()) is None:
            continue  # the top of the stack (relay, tests, ...) may import everything
        edges.setdefault(src, set()).update(
            package_of(t) for t in targets if package_of(t) != src and package_of(t) in table)
    cycles = [c for c in scanner.sccs(edges) if len(c) > 1]
    assert not cycles, f"packages importing each other: {cycles}"


def _cycles_inside(package: str) -> list[list[str]]:
    inside = {m for m in graph() if package_of(m) == package}
    sub = {m: {t for t in graph()[m] if t in inside} for m in inside}
    return [c for c in scanner.sccs(sub) if len(c) > 1]


@pytest.mark.parametrize("package", sorted(p for p, allowed in package_table().items()
                                           if allowed is not None))
def test_import_cycles_inside_a_package_only_shrink(package: str):
    known = KNOWN_CYCLES.get(package, [])
    new = [c for c in _cycles_inside(package) if not any(set(c) <= k for k in known)]
    assert not new, (f"import cycles inside {package}/ beyond the known ones (break them; "
                     f"tests/test_layers.py KNOWN_CYCLES): {new}")


@cache
def semantics_layers() -> tuple[dict[str, str], dict[str, set[str]]]:
    """(module -> layer, layer -> the layers it may import) from the second table."""
    members: dict[str, str] = {}
    allowed: dict[str, set[str]] = {}
    patterns: list[tuple[str, str]] = []
    for cells in _table("| layer |"):
        layer = cells[0]
        allowed[layer] = ({name.strip() for name in cells[2].split(",")}
                          if cells[2] != "all of the above" else {"*"})
        for name in _names(cells[1]):
            patterns.append((name, layer))
    for module in graph():
        if package_of(module) != "semantics":
            continue
        rel = module.split(".")[1:]
        for name, layer in patterns:
            parts = name.removesuffix(".py").removesuffix("/").split("/")
            if parts == ["semantics", "__init__"]:
                parts = []
            if rel[:len(parts)] == parts and (parts or not rel):
                members.setdefault(module, layer)
    return members, allowed


def test_every_semantics_module_has_a_layer():
    members, _ = semantics_layers()
    modules = {m for m in graph() if package_of(m) == "semantics"}
    assert sorted(modules - set(members)) == []


def test_semantics_imports_follow_its_layers():
    members, allowed = semantics_layers()
    bad = []
    for module, layer in sorted(members.items()):
        for target in sorted(graph()[module]):
            other = members.get(target)
            if other is None or other == layer or "*" in allowed[layer]:
                continue
            if other not in allowed[layer] and (module, target) not in KNOWN_LAYER_EXCEPTIONS:
                bad.append(f"{module} ({layer}) imports {target} ({other})")
    assert not bad, "semantics imports against its layers:\n" + "\n".join(bad)


def test_the_scanner_sees_local_and_string_imports(tmp_path: Path):
    # A cycle made only of a function-local import and an import_module string is found.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from pkg import b\n    return b\n")
    (pkg / "b.py").write_text("import importlib\nA = importlib.import_module('pkg.a')\n")
    g = scanner.import_graph(tmp_path, scanner.python_files(tmp_path))
    assert g["pkg.a"] == {"pkg.b": False} and g["pkg.b"] == {"pkg.a": False}
    assert [c for c in scanner.sccs({m: set(t) for m, t in g.items()}) if len(c) > 1] == \
        [["pkg.a", "pkg.b"]]
