"""Architecture metrics of a source tree: the numbers issue #28 asks to move.

Usage: ``python tools/arch_metrics.py DIR [--no-duplicates] [--json]``. ``DIR`` is the
root of a checkout (or of a ``git archive`` of one). Every number is computed from the
files as text and as Python syntax trees; nothing is imported or run, except the
external ``duplicates`` tool for the last metric.

Which files: every ``*.py`` file below ``DIR`` except those under hidden folders,
``.venv``, ``build`` and ``__pycache__``. The *structural* metrics (mutators, walkers,
dispatchers) look only at the library packages (``semantics typechecker interpreter
passes pe ad backends frontends conformance proofs models relay``); the size,
``type: ignore`` and import metrics look at every file (tests, tools and bench
included; import cycles are reported per top-level folder).

Node kinds are the classes defined in ``semantics/expr.py`` and ``semantics/types.py``
(read from the tree measured). *Compound* expression kinds are those with
sub-expressions: ``Call Let Function Tuple TupleGetItem If Match Clause RefCreate RefRead
RefWrite Grad``.

A *unit* is a module-level function or a module-level class (with everything nested
in it): the mutator and walker counts are of units, each counted once.

Metrics, precisely:

``hand_rolled_mutators``
    Units outside ``semantics/visitor.py`` and ``semantics/rewrite.py`` (and
    ``semantics/expr.py``, which defines ``with_children`` itself) that rebuild
    expressions by their own traversal instead of subclassing one of the mutator
    bases (``ExprMutator``, ``ScopedMutator``, ``MutatorHooks``, or a class derived
    from them in the same tree). A unit counts when (a) it calls ``with_children`` (the
    memo-table rebuild ``for node in post_order(e): memo[id(node)] = with_children(...)``),
    or (b) it tests the kind of a node against at least 3 node kinds *and* constructs at
    least 2 compound expression kinds that it also tested (rebuilding a node of the kind
    it took apart). Classes that derive from a mutator base are never counted.
``private_walkers``
    Functions (at any nesting level) whose name starts with ``_``, outside the two base
    modules and not inside a unit already counted as a mutator, that traverse
    expressions themselves: the function calls ``children(...)`` inside a loop, or it
    tests at least 2 node kinds and either calls itself by name (recursion) or runs a
    ``while`` loop that ``.pop()``s (an explicit stack).
``kind_dispatchers``
    Functions (innermost ``def``; nested functions counted apart) whose ``if``/``elif``
    tests and conditional expressions name at least 5 distinct node kinds, through
    ``isinstance(x, K)`` (tuples of kinds included), ``type(x) is K``, ``type(x) == K``
    or ``t is K`` where ``t`` is any name.
``type_ignores`` / ``type_ignores_attr_defined``
    Type-ignore comments (a ``#`` followed by ``type: ignore``) in every file; the second
    counts those whose bracketed codes include ``attr-defined``.
``modules_over_800`` / ``functions_over_80``
    Files of more than 800 lines; functions (``def`` at any nesting, counted apart from
    the functions nested in them only by their own span: ``end_lineno - lineno + 1``)
    of more than 80 lines.
``import_cycles``
    Per top-level folder, the module import graph with an edge for every import
    statement wherever it stands (module level, inside a function, under
    ``TYPE_CHECKING``) and every ``import_module("...")``/``__import__("...")`` with a
    constant string; relative imports resolved; ``from p import name`` is an edge to
    ``p.name`` when that is a module of the tree, else to ``p``; a package is its
    ``__init__``. Only edges inside one folder count. Reported: the strongly connected
    components of more than one module (count, total modules, largest), and the same
    computed from module-level imports alone (the cycles function-local imports hide).
    ``package_cycles`` is the same over the graph of top-level folders (an edge when any
    module of one imports a module of the other), tests, tools, bench and relay excluded
    as importers of everything.
``duplicates_rows``
    ``duplicates --repo DIR --most 200 --seconds 120``: the number of rows it prints
    (``D<n> ...``), and its header line.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

LIBRARY = ("semantics", "typechecker", "interpreter", "passes", "pe", "ad", "backends",
           "frontends", "conformance", "proofs", "models", "relay")
BASE_MODULES = ("semantics/visitor.py", "semantics/rewrite.py")
# Defines the nodes and ``with_children`` itself: the primitive rebuild, not a mutator.
NODE_MODULE = "semantics/expr.py"
MUTATOR_BASES = {"ExprMutator", "ScopedMutator", "MutatorHooks"}
COMPOUND = {"Call", "Let", "Function", "Tuple", "TupleGetItem", "If", "Match", "Clause",
            "RefCreate", "RefRead", "RefWrite", "Grad"}
SKIP_DIRS = {".venv", "build", "__pycache__", "node_modules"}
_IGNORE = re.compile(r"#\s*type:\s*ignore(\[([^\]]*)\])?")
_FuncDef = (ast.FunctionDef, ast.AsyncFunctionDef)


def python_files(root: Path) -> list[Path]:
    """Every measured ``.py`` file below ``root``, sorted."""
    out = []
    for p in root.rglob("*.py"):
        parts = p.relative_to(root).parts
        if any(part.startswith(".") or part in SKIP_DIRS for part in parts[:-1]):
            continue
        out.append(p)
    return sorted(out)


def node_kinds(root: Path) -> set[str]:
    """The class names defined at module level in semantics/expr.py and types.py."""
    kinds: set[str] = set()
    for name in ("semantics/expr.py", "semantics/types.py"):
        path = root / name
        if path.exists():
            tree = ast.parse(path.read_text())
            kinds |= {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    kinds.discard("Expr")
    kinds.discard("Type")
    return kinds


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``fn``'s body, not descending into nested functions or classes."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (*_FuncDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(n))


def _kinds_tested(test: ast.AST, kinds: set[str]) -> set[str]:
    """Node kinds named by isinstance / ``type(x) is K`` / ``t is K`` tests inside ``test``."""
    found: set[str] = set()
    for n in ast.walk(test):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and \
                n.func.id == "isinstance" and len(n.args) == 2:
            arg = n.args[1]
            names = arg.elts if isinstance(arg, ast.Tuple) else [arg]
            found |= {x.id for x in names if isinstance(x, ast.Name) and x.id in kinds}
        elif isinstance(n, ast.Compare) and all(isinstance(op, (ast.Is, ast.Eq, ast.IsNot,
                                                                ast.NotEq, ast.In))
                                                for op in n.ops):
            for c in n.comparators:
                elts = c.elts if isinstance(c, (ast.Tuple, ast.Set)) else [c]
                found |= {x.id for x in elts if isinstance(x, ast.Name) and x.id in kinds}
    return found


def _tests_in(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    for n in nodes:
        if isinstance(n, (ast.If, ast.IfExp, ast.While)):
            yield n.test
        elif isinstance(n, ast.Assert):
            yield n.test
        elif isinstance(n, ast.BoolOp):
            yield n


def _constructed(nodes: Iterable[ast.AST], kinds: set[str]) -> set[str]:
    return {n.func.id for n in nodes if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name) and n.func.id in kinds}


def _calls(nodes: Iterable[ast.AST], name: str) -> bool:
    for n in nodes:
        if isinstance(n, ast.Call):
            f = n.func
            if (isinstance(f, ast.Name) and f.id == name) or \
                    (isinstance(f, ast.Attribute) and f.attr == name):
                return True
    return False


def _mutator_classes(trees: dict[str, ast.Module]) -> set[str]:
    """Names of classes deriving (transitively, by name) from a mutator base."""
    bases: dict[str, set[str]] = {}
    for tree in trees.values():
        for n in ast.walk(tree):
            if isinstance(n, ast.ClassDef):
                names = set()
                for b in n.bases:
                    if isinstance(b, ast.Name):
                        names.add(b.id)
                    elif isinstance(b, ast.Attribute):
                        names.add(b.attr)
                bases.setdefault(n.name, set()).update(names)
    derived = set(MUTATOR_BASES)
    changed = True
    while changed:
        changed = False
        for cls, bs in bases.items():
            if cls not in derived and bs & derived:
                derived.add(cls)
                changed = True
    return derived


def structural(root: Path, files: list[Path], kinds: set[str]) -> dict[str, object]:
    trees = {}
    for p in files:
        rel = p.relative_to(root).as_posix()
        if rel.split("/")[0] in LIBRARY:
            trees[rel] = ast.parse(p.read_text(), filename=rel)
    mutator_classes = _mutator_classes(trees)
    mutators: list[str] = []
    walkers: list[str] = []
    dispatchers: list[str] = []
    for rel, tree in trees.items():
        base = rel in BASE_MODULES
        for unit in tree.body:
            if not isinstance(unit, (*_FuncDef, ast.ClassDef)):
                continue
            everything = list(ast.walk(unit))
            is_mutator = False
            derived = isinstance(unit, ast.ClassDef) and unit.name in mutator_classes
            if not base and rel != NODE_MODULE and not derived:
                tested: set[str] = set()
                for t in _tests_in(everything):
                    tested |= _kinds_tested(t, kinds)
                rebuilt = _constructed(everything, kinds) & COMPOUND & tested
                is_mutator = _calls(everything, "with_children") or \
                    (len(tested) >= 3 and len(rebuilt) >= 2)
                if is_mutator:
                    mutators.append(f"{rel}:{unit.lineno} {unit.name}")
            for fn in (n for n in everything if isinstance(n, _FuncDef)):
                own = list(_own_nodes(fn))
                tested = set()
                for t in _tests_in(own):
                    tested |= _kinds_tested(t, kinds)
                if len(tested) >= 5:
                    dispatchers.append(f"{rel}:{fn.lineno} {fn.name} ({len(tested)})")
                if base or is_mutator or not fn.name.startswith("_") or \
                        fn.name.startswith("__"):
                    continue
                loops = [n for n in own if isinstance(n, (ast.For, ast.While,
                                                          ast.comprehension))]
                children_in_loop = any(_calls(ast.walk(lp), "children") for lp in loops)
                recursive = _calls(own, fn.name)
                stack_loop = any(isinstance(lp, ast.While) and _calls(ast.walk(lp), "pop")
                                 for lp in loops)
                if children_in_loop or (len(tested) >= 2 and (recursive or stack_loop)):
                    walkers.append(f"{rel}:{fn.lineno} {fn.name}")
    return {"hand_rolled_mutators": mutators, "private_walkers": walkers,
            "kind_dispatchers": dispatchers}


def sizes(root: Path, files: list[Path]) -> dict[str, object]:
    big_modules, big_functions = [], []
    ignores = attr = 0
    for p in files:
        rel = p.relative_to(root).as_posix()
        text = p.read_text()
        n = len(text.splitlines())
        if n > 800:
            big_modules.append(f"{rel} {n}")
        for m in _IGNORE.finditer(text):
            ignores += 1
            if m.group(2) and "attr-defined" in m.group(2):
                attr += 1
        for fn in ast.walk(ast.parse(text, filename=rel)):
            if isinstance(fn, _FuncDef):
                length = (fn.end_lineno or fn.lineno) - fn.lineno + 1
                if length > 80:
                    big_functions.append(f"{rel}:{fn.lineno} {fn.name} {length}")
    return {"type_ignores": ignores, "type_ignores_attr_defined": attr,
            "modules_over_800": big_modules, "functions_over_80": big_functions}


# ---------------------------------------------------------------------------- imports

def module_name(rel: str) -> str:
    """``a/b/c.py`` -> ``a.b.c``; ``a/b/__init__.py`` -> ``a.b``."""
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(tree: ast.Module, mod: str, is_package: bool,
               modules: set[str]) -> list[tuple[str, bool]]:
    """The modules of the tree ``mod`` imports, each with whether the import is module-level.

    Module-level means a statement of the module body (or nested only in ``if``/``try``
    blocks there), not inside a function or class body.
    """
    top_level: set[int] = set()
    stack: list[ast.AST] = list(tree.body)
    while stack:
        n = stack.pop()
        top_level.add(id(n))
        if isinstance(n, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(n, field, []) or []:
                    stack.append(child)
                    if isinstance(child, ast.ExceptHandler):
                        stack.extend(child.body)
    out: list[tuple[str, bool]] = []

    def resolve(name: str) -> str | None:
        parts = name.split(".")
        while parts:
            cand = ".".join(parts)
            if cand in modules:
                return cand
            parts.pop()
        return None

    for n in ast.walk(tree):
        level = id(n) in top_level
        if isinstance(n, ast.Import):
            for a in n.names:
                r = resolve(a.name)
                if r:
                    out.append((r, level))
        elif isinstance(n, ast.ImportFrom):
            if n.level:
                pkg = mod.split(".") if is_package else mod.split(".")[:-1]
                pkg = pkg[:len(pkg) - (n.level - 1)] if n.level > 1 else pkg
                base = ".".join(pkg + ([n.module] if n.module else []))
            else:
                base = n.module or ""
            for a in n.names:
                full = f"{base}.{a.name}" if base else a.name
                r = full if full in modules else resolve(base)
                if r:
                    out.append((r, level))
        elif isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Constant) \
                and isinstance(n.args[0].value, str):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(
                f, ast.Attribute) else ""
            if name in ("import_module", "__import__"):
                r = resolve(n.args[0].value)
                if r:
                    out.append((r, False))
    return out


def import_graph(root: Path, files: list[Path]) -> dict[str, dict[str, bool]]:
    """module -> {imported module: True when some import of it is module-level}."""
    rels = {module_name(p.relative_to(root).as_posix()): p for p in files}
    modules = set(rels)
    graph: dict[str, dict[str, bool]] = {m: {} for m in modules}
    for mod, p in rels.items():
        tree = ast.parse(p.read_text())
        for target, level in imports_of(tree, mod, p.name == "__init__.py", modules):
            if target != mod:
                graph[mod][target] = graph[mod].get(target, False) or level
    return graph


def sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative), each sorted; all sizes."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    st: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        st.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    st.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = st.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def cycles(root: Path, files: list[Path]) -> dict[str, object]:
    graph = import_graph(root, files)
    per_package: dict[str, object] = {}
    for pkg in sorted({m.split(".")[0] for m in graph}):
        inside = {m for m in graph if m.split(".")[0] == pkg}
        result = {}
        for label, keep in (("all_imports", lambda lvl: True),
                            ("module_level_only", lambda lvl: lvl)):
            sub = {m: {t for t, lvl in graph[m].items() if t in inside and keep(lvl)}
                   for m in inside}
            comps = [c for c in sccs(sub) if len(c) > 1]
            result[label] = {"cycles": len(comps), "modules": sum(map(len, comps)),
                             "largest": max(map(len, comps), default=0)}
        if result["all_imports"]["cycles"]:
            per_package[pkg] = result
    pkg_graph: dict[str, set[str]] = defaultdict(set)
    for m, targets in graph.items():
        a = m.split(".")[0]
        if a not in LIBRARY or a == "relay":
            continue
        for t in targets:
            b = t.split(".")[0]
            if b != a and b in LIBRARY and b != "relay":
                pkg_graph[a].add(b)
    pkg_comps = [c for c in sccs({k: set(v) for k, v in pkg_graph.items()}) if len(c) > 1]
    return {"import_cycles": per_package, "package_cycles": pkg_comps}


def duplicates(root: Path) -> dict[str, object]:
    try:
        run = subprocess.run(["duplicates", "--repo", str(root), "--most", "200",
                              "--seconds", "120"], capture_output=True, text=True,
                             timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"duplicates_rows": None, "duplicates_header": f"not run: {exc}"}
    lines = run.stdout.splitlines()
    rows = [ln for ln in lines if re.match(r"^D\d+ ", ln)]
    tail = [ln for ln in lines if ln.startswith(("(+", "incomplete", "left out"))]
    return {"duplicates_rows": len(rows), "duplicates_header": lines[0] if lines else "",
            "duplicates_tail": tail}


def measure(root: Path, with_duplicates: bool = True) -> dict[str, object]:
    files = python_files(root)
    kinds = node_kinds(root)
    out: dict[str, object] = {}
    out.update(structural(root, files, kinds))
    out.update(sizes(root, files))
    out.update(cycles(root, files))
    if with_duplicates:
        out.update(duplicates(root))
    return out


def summary(m: dict[str, object]) -> list[tuple[str, object]]:
    def n(key: str) -> object:
        v = m.get(key)
        return len(v) if isinstance(v, list) else v
    rows: list[tuple[str, object]] = [
        ("hand-rolled mutators", n("hand_rolled_mutators")),
        ("private expression walkers", n("private_walkers")),
        ("functions dispatching on 5+ node kinds", n("kind_dispatchers")),
        ("type: ignore", n("type_ignores")),
        ("  of them attr-defined", n("type_ignores_attr_defined")),
        ("modules over 800 lines", n("modules_over_800")),
        ("functions over 80 lines", n("functions_over_80")),
    ]
    cyc = m.get("import_cycles", {})
    assert isinstance(cyc, dict)
    for pkg, r in cyc.items():
        a, b = r["all_imports"], r["module_level_only"]
        rows.append((f"import cycles in {pkg}/ (all imports)",
                     f"{a['cycles']} cycle(s), {a['modules']} modules, largest {a['largest']}"))
        rows.append((f"import cycles in {pkg}/ (module-level only)",
                     f"{b['cycles']} cycle(s), {b['modules']} modules, largest {b['largest']}"))
    rows.append(("import cycles between packages", n("package_cycles")))
    if "duplicates_rows" in m:
        rows.append(("duplicates rows (--most 200)", m["duplicates_rows"]))
        rows.append(("duplicates header", m["duplicates_header"]))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--no-duplicates", action="store_true")
    ap.add_argument("--json", action="store_true", help="every metric with its list")
    args = ap.parse_args(argv)
    m = measure(args.root, not args.no_duplicates)
    if args.json:
        print(json.dumps(m, indent=1))
        return 0
    for label, value in summary(m):
        print(f"{label:48} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
