"""``relay run FILE|DIR [ARG ...] [--entry NAME] [--fuel N] [--trace] [-o OUT.npy|OUT.npz]
[--full]``: evaluate a program, or run a saved build.

``FILE`` is a ``.relay`` program, run by the reference interpreter (or, with ``--backend
tvm``, built in memory and run by the VM executor); ``DIR`` is a build saved by ``relay
build -o DIR``, loaded with ``backends.tvm.load`` (nothing is optimized or compiled again)
and run by the executor it was built for.

Each ``ARG`` is a ``.npy`` file or a JSON literal, converted to the entry's
parameter type as ``evaluate`` converts Python values (numbers and nested
lists become arrays of the declared dtype, lists become tuples where a tuple
is declared, ``{"Cons": [1, {"Nil": []}]}`` builds ADT values). The result is
printed in the interpreter's short form (``interpreter.values.value_str``):
scalars as Relay literals, other tensors as ``array([...], dtype=...)``,
``Cons(1, Cons(2, Nil))``, ``<closure>``, ``ref(...)``. A tensor whose one-line form
would be longer than :data:`ONE_LINE` characters is printed as numpy prints it: over
several lines, and summarised (the first and last three items of each axis, ``...``
between) when it has more than :data:`SUMMARY_THRESHOLD` elements — ``--full`` prints
every element.
``-o OUT.npy`` saves a tensor result instead of printing it; ``-o OUT.npz`` saves a tensor
or a (nested) tuple of tensors, the fields named by their path (``0``, ``1.0``, ...).

``--trace`` prints the derivation first: one line per judgment, indented by
its depth in the derivation tree, ``[Rule-Name] expression ⇓ value`` (the
expression and the value in a short, one-line form).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import numpy as np

_EXPR_WIDTH = 60
_VALUE_WIDTH = 60
ONE_LINE = 100
"""The widest tensor printed on one line; longer ones are printed as numpy prints them."""
SUMMARY_THRESHOLD = 100
"""Tensors of more elements are summarised (numpy's ``threshold``; its own default, 1,000,
would print a classifier's 1,000 logits over 300 lines)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="evaluate a Relay program with the reference interpreter, "
                                   "or run a build saved by `relay build`")
    p.add_argument("file", help="a .relay file ('-' for standard input), or a directory "
                                "written by `relay build -o DIR`")
    p.add_argument("args", nargs="*", metavar="ARG",
                   help="an argument: a .npy file or a JSON literal (e.g. 3, [1.5, 2], [[1, 2]])")
    p.add_argument("--entry", default="main", help="the global to run (default: main)")
    p.add_argument("--fuel", type=fuel_count, default=None, metavar="N",
                   help="stop with an error after N rule applications")
    p.add_argument("--trace", action="store_true",
                   help="print the derivation (rule names, sub-expressions, values)")
    p.add_argument("--no-check", action="store_true",
                   help="do not type-check before running")
    p.add_argument("--backend", choices=("interpreter", "tvm", "vta"), default="interpreter",
                   help="interpreter (default), tvm (compiled kernels, the VM executor) or "
                        "vta (the simulated accelerator; its statistics on stderr)")
    p.add_argument("--vta-config", nargs="+", metavar="K=V", default=None,
                   help="--backend vta: vta_config.json keys, e.g. TARGET=ultra96")
    p.add_argument("--params", metavar="P.npz", default=None,
                   help="main's weights by parameter name (as `relay import` writes them); "
                        "the ARGs are main's remaining (data) inputs")
    p.add_argument("-o", "--output", default=None, metavar="OUT.npy|OUT.npz",
                   help="save the result instead of printing it (.npy: a tensor; .npz: a "
                        "tensor or a tuple of tensors)")
    p.add_argument("--full", action="store_true",
                   help="print every element of large tensors (default: numpy's summary)")
    p.set_defaults(func=run)


def fuel_count(text: str) -> int:
    """The ``--fuel`` value: a non-negative integer (anything else is a usage error, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") \
            from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    from interpreter.entry import evaluate, evaluate_recorded
    from relay.cli import read_source
    from semantics.errors import RelayError
    from semantics.parser import parse

    if args.output is not None and not args.output.endswith((".npy", ".npz")):
        print("relay run: error: -o takes a file name ending in .npy or .npz", file=sys.stderr)
        return 2
    if args.file != "-" and os.path.isdir(args.file):
        return _run_saved(args)
    text = read_source(args.file)
    mod = parse(text, source_name=args.file)
    values = [_argument(i, a) for i, a in enumerate(args.args, start=1)]
    check = not args.no_check
    if args.params is not None and args.entry.lstrip("@") != "main":
        print("relay run: error: --params binds main's parameters; it cannot be used with "
              "--entry", file=sys.stderr)
        return 2
    if args.backend == "vta":
        from backends.vta.cli import run_vta
        from relay.commands.build import load_params

        if args.trace or args.fuel is not None or args.no_check:
            print("relay run: error: --backend vta takes no --trace, --fuel or --no-check",
                  file=sys.stderr)
            return 2
        return _show(run_vta(mod, values, args.entry, load_params(args.params),
                             args.vta_config), args)
    if args.backend == "tvm":
        from relay.commands.build import run_tvm

        if args.trace or args.fuel is not None or args.no_check:
            print("relay run: error: --backend tvm takes no --trace, --fuel or --no-check",
                  file=sys.stderr)
            return 2
        return _show(run_tvm(mod, values, args.entry, args.params), args)
    if args.params is not None:
        from passes import bind_params
        from relay.commands.build import load_params

        mod = bind_params(mod, load_params(args.params) or {})
    if not args.trace:
        result = evaluate(mod, *values, entry=args.entry, check=check, fuel=args.fuel)
        return _show(result, args)
    recorder = TreeRecorder(f"@{args.entry.lstrip('@')}({', '.join(args.args)})")
    try:
        result = evaluate_recorded(mod, *values, recorder=recorder, entry=args.entry,
                                   check=check, fuel=args.fuel)
    except RelayError:
        recorder.print(sys.stdout)
        raise
    recorder.finish(result)
    recorder.print(sys.stdout)
    return _show(result, args)


def _run_saved(args: argparse.Namespace) -> int:
    """``relay run DIR ...``: load the build saved in ``DIR`` and run it."""
    if args.trace or args.fuel is not None or args.no_check or args.params is not None \
            or args.backend != "interpreter":
        print("relay run: error: a saved build takes no --trace, --fuel, --no-check, --params "
              "(its parameters are bound) or --backend", file=sys.stderr)
        return 2
    from backends.tvm import load

    exe = load(args.file)
    values = [_argument(i, a) for i, a in enumerate(args.args, start=1)]
    return _show(exe.run(args.entry, *values), args)


def _show(result: Any, args: argparse.Namespace) -> int:
    """Print the result, or save it with ``-o``."""
    if args.output is not None:
        print(save_result(result, args.output))
    else:
        print(result_str(result, full=args.full))
    return 0


def result_str(value: Any, full: bool = False) -> str:
    """The printed form of a result (see the module docstring): the interpreter's short
    form, except that tensors too wide for one line (as the result, or a field of a tuple
    result) are printed numpy's way; ``full`` turns off the summary of large tensors."""
    from interpreter.values import value_str

    if type(value) is tuple and value and all(isinstance(f, np.ndarray) for f in value):
        fields = [result_str(f, full) for f in value]
        with np.printoptions(threshold=sys.maxsize if full else SUMMARY_THRESHOLD, edgeitems=3):
            short = value_str(value)
        if len(short) <= ONE_LINE and not any("\n" in f for f in fields):
            return short
        inner = ",\n".join("  " + f.replace("\n", "\n  ") for f in fields)
        return "(\n" + inner + (",\n)" if len(fields) == 1 else "\n)")
    if not isinstance(value, np.ndarray) or value.ndim == 0:
        return value_str(value)
    with np.printoptions(threshold=sys.maxsize if full else SUMMARY_THRESHOLD, edgeitems=3):
        short = value_str(value)
        return short if len(short) <= ONE_LINE else repr(value)


def save_result(value: Any, path: str) -> str:
    """Save a result to ``path`` (``.npy``: a tensor; ``.npz``: a tensor or a nested tuple of
    tensors, by field path); the line that says what was written.

    Raises:
        RelayRuntimeError: the result cannot be saved in that format, or the file cannot be
            written.
    """
    from semantics.errors import RelayRuntimeError

    arrays: dict[str, np.ndarray] = {}
    if isinstance(value, (np.ndarray, np.generic)):
        arrays["0"] = np.asarray(value)
    else:
        stack: list[tuple[str, Any]] = [("", value)]
        while stack:
            where, v = stack.pop()
            if type(v) is tuple:
                stack.extend((f"{where}.{i}" if where else str(i), f)
                             for i, f in reversed(list(enumerate(v))))
            elif isinstance(v, (np.ndarray, np.generic)):
                arrays[where] = np.asarray(v)
            else:
                raise RelayRuntimeError(
                    f"-o {path}: the result{f' field {where}' if where else ''} is a "
                    f"{type(v).__name__}, not a tensor: only tensors and tuples of tensors "
                    f"can be saved")
    try:
        if path.endswith(".npy"):
            if type(value) is tuple:
                raise RelayRuntimeError(
                    f"-o {path}: the result is a tuple of {len(arrays)} tensors: save it as "
                    f".npz")
            np.save(path, arrays["0"], allow_pickle=False)
        else:
            np.savez(path, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds badly
    except OSError as exc:
        raise RelayRuntimeError(f"-o {path}: cannot write: {exc.strerror or exc}") from None
    parts = ", ".join(f"{name}: {a.dtype.name}{list(a.shape)}" for name, a in arrays.items())
    return f"wrote {path} ({parts})"


def _argument(position: int, text: str) -> Any:
    """One command-line argument as a Python value (an array for ``.npy``, else JSON)."""
    from semantics.errors import RelayRuntimeError

    if text.endswith(".npy"):
        try:
            return np.load(text, allow_pickle=False)
        except (ValueError, EOFError) as exc:      # OSError: the CLI's file-error message
            reason = str(exc) or type(exc).__name__
            raise RelayRuntimeError(f"argument {position}: cannot read {text}: {reason}"
                                    ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RelayRuntimeError(
            f"argument {position}: {text!r} is neither a .npy file nor a JSON literal "
            f"({exc.msg})") from None
    except RecursionError:
        raise RelayRuntimeError(f"argument {position}: the JSON literal is nested too deeply") \
            from None


# --- the derivation tree ----------------------------------------------------------------------

class _Judgment:
    """One node of the derivation; a ``leaf`` (a rule reported inside another judgment,
    such as a pattern match) has no value of its own."""

    __slots__ = ("node", "rule", "value", "closed", "leaf", "children")

    def __init__(self, node: Any, rule: Any = None, leaf: bool = False):
        self.node = node
        self.rule = rule
        self.value: Any = None
        self.closed = leaf
        self.leaf = leaf
        self.children: list[_Judgment] = []


class TreeRecorder:
    """Builds the derivation tree from the interpreter's open / rule / close reports.

    Values are rendered when their judgment closes (a reference printed later could
    show contents written afterwards).

    A rule reported for the node of the innermost open judgment concludes that
    judgment; any other rule (a pattern-matching judgment, or the lookup of the
    entry) is recorded as a leaf inside it.
    """

    def __init__(self, title: str):
        self.root = _Judgment(title)
        self.stack = [self.root]

    def open(self, node: Any) -> None:
        j = _Judgment(node)
        self.stack[-1].children.append(j)
        self.stack.append(j)

    def rule(self, rule: Any, node: Any) -> None:
        top = self.stack[-1]
        if top.rule is None and (top.node is node or top is self.root and
                                 rule.value == "Semantics-Call"):
            top.rule = rule
        else:
            top.children.append(_Judgment(node, rule, leaf=True))

    def close(self, value: Any) -> None:
        # The value is printed now: a reference's contents may change later.
        from interpreter.values import value_str

        j = self.stack.pop()
        j.value = value_str(value, limit=_VALUE_WIDTH)
        j.closed = True

    def finish(self, value: Any) -> None:
        from interpreter.values import value_str

        self.root.value = value_str(value, limit=_VALUE_WIDTH)
        self.root.closed = True

    def print(self, out: Any) -> None:
        work: list[tuple[_Judgment, int]] = [(self.root, 0)]
        while work:
            j, depth = work.pop()
            rule = f"[{j.rule.value}]" if j.rule is not None else "[...]"
            what = j.node if isinstance(j.node, str) else short_expr(j.node)
            line = f"{'  ' * depth}{rule} {what}"
            if not j.closed:
                line += " ⇓ (error)"
            elif not j.leaf:
                line += " ⇓ " + j.value
            out.write(line + "\n")
            work.extend((kid, depth + 1) for kid in reversed(j.children))


def short_expr(node: Any, width: int = _EXPR_WIDTH) -> str:
    """A one-line summary of an expression or pattern: nesting below depth 2 becomes ``…``."""
    text = _short(node, 2)
    return text if len(text) <= width else text[: width - 1] + "…"


def _items(nodes: Any, depth: int) -> str:
    shown = [_short(n, depth) for n in nodes[:6]]
    return ", ".join(shown + (["…"] if len(nodes) > 6 else []))


def _short(node: Any, depth: int) -> str:
    from semantics import expr as E
    from semantics.dtypes import literal

    if depth < 0:
        return "…"
    d = depth - 1
    t = type(node)
    if t is E.Var:
        return "%" + node.name_hint
    if t is E.GlobalVar:
        return "@" + node.name_hint
    if t is E.Constant:
        if node.data.ndim == 0:
            return literal(node.data, node.data.dtype.name)
        return f"const{tuple(node.data.shape)}:{node.data.dtype.name}"
    if t is E.Op or t is E.Constructor:
        return node.name
    if t is E.Call:
        if type(node.op) is E.Constructor and not node.args:
            return node.op.name
        if depth == 0:
            return _short(node.op, 0) + "(…)"
        return _short(node.op, depth) + "(" + _items(node.args, d) + ")"
    if t is E.Let:
        if node.var.name_hint == "_":
            return f"{_short(node.value, d)}; {_short(node.body, d)}"
        return f"let %{node.var.name_hint} = {_short(node.value, d)}; {_short(node.body, d)}"
    if t is E.Function:
        params = ", ".join("%" + p.name_hint for p in node.params)
        return f"fn ({params}) {{ {_short(node.body, d)} }}"
    if t is E.Tuple:
        inner = _items(node.fields, d)
        return f"({inner},)" if len(node.fields) == 1 else f"({inner})"
    if t is E.TupleGetItem:
        return f"{_short(node.tuple_value, d)}.{node.index}"
    if t is E.If:
        return (f"if ({_short(node.cond, d)}) {{ {_short(node.true_branch, d)} }} "
                f"else {{ {_short(node.false_branch, d)} }}")
    if t is E.Match:
        head = "match" if node.complete else "match?"
        clauses = ", ".join(f"{_short(c.lhs, d)} => {_short(c.rhs, d)}"
                            for c in node.clauses[:4]) + (", …" if len(node.clauses) > 4 else "")
        return f"{head} ({_short(node.data, d)}) {{ {clauses} }}"
    if t is E.RefCreate:
        return f"ref({_short(node.value, d)})"
    if t is E.RefRead:
        return f"!{_short(node.ref, d)}"
    if t is E.RefWrite:
        return f"{_short(node.ref, d)} := {_short(node.value, d)}"
    if t is E.Grad:
        return f"grad({_short(node.func, d)})"
    if t is E.PatternWildcard:
        return "_"
    if t is E.PatternVar:
        return "%" + node.var.name_hint
    if t is E.PatternConstructor:
        if not node.patterns:
            return node.constructor.name
        return node.constructor.name + "(" + _items(node.patterns, d) + ")"
    if t is E.PatternTuple:
        return "(" + _items(node.patterns, d) + ")"
    return type(node).__name__
