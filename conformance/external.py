"""Testing another Relay implementation over stdin/stdout (``relay conformance --impl CMD``).

The protocol (one JSON object per line, UTF-8, in both directions)
-------------------------------------------------------------------
The kit starts ``CMD`` once (through the shell) and writes one *request* per
line to its standard input; the implementation answers each with exactly one
*response* line on its standard output, in order, and flushes. Anything it
writes to standard error is ignored. When standard input closes it exits.

Request::

    {"id": 7, "program": "<Relay text of a module>", "entry": "main", "args": [V, ...]}

Response — a value, or an error::

    {"id": 7, "value": V}
    {"id": 7, "error": "RelayRuntimeError", "message": "division by zero in divide"}

``error`` is the class of a Relay error: ``RelayRuntimeError`` (a §5 trap:
integer division by zero, non-exhaustive ``match?``; it agrees with an oracle
trap whatever the message), ``RelayTypeError`` or ``ParseError`` (both
count as disagreements: every generated program is well typed). Anything
else, a malformed line, a missing answer within the time limit, or a crash
of the process is a disagreement too (the process is restarted for the
next program).

Values ``V``
------------
* tensor: ``{"tensor": {"dtype": "int32", "shape": [2, 2], "data": [[1, 2], [3, 4]]}}`` —
  ``data`` nested lists (a bare number for shape ``[]``); integers exact (int64/uint64
  included), booleans ``true``/``false``, floats as JSON numbers (``-0.0`` keeps its sign)
  except ``"nan"``, ``"inf"``, ``"-inf"`` as strings;
* tuple: ``{"tuple": [V, ...]}`` (``()`` is ``{"tuple": []}``);
* ADT value: ``{"adt": "Cons", "fields": [V, ...]}``;
* reference: ``{"ref": V}`` (its contents);
* function (closure, operator, constructor): ``{"function": "<any text>"}`` — opaque: it
  matches any function value.

Generated programs use ``main`` as the entry; their arguments are first-order
(tensors, tuples, ADT values).
"""

from __future__ import annotations

import json
import math
import queue
import subprocess
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from semantics.dtypes import is_dtype
from semantics.errors import RelayRuntimeError
from semantics.module import IRModule

__all__ = ["encode_value", "decode_value", "ExternalImpl", "ExternalError", "OpaqueFunction",
           "handle_request"]


class ExternalError(Exception):
    """The external implementation broke the protocol (not a Relay error: it is a failure)."""


class OpaqueFunction:
    """A function value received from an external implementation (compares equal to any)."""

    __slots__ = ("text",)

    def __init__(self, text: str = "<function>"):
        self.text = text

    @property
    def name(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


# --- value encoding ---------------------------------------------------------------------------

def _encode_scalar(x: Any, dtype: str) -> Any:
    if dtype == "bool":
        return bool(x)
    if dtype.startswith(("int", "uint")):
        return int(x)
    f = float(x)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return f


def _encode_tensor(arr: np.ndarray) -> dict[str, Any]:
    dtype = arr.dtype.name
    data = _map_nested(arr.tolist(), lambda x: _encode_scalar(x, dtype), arr.ndim)
    return {"tensor": {"dtype": dtype, "shape": list(arr.shape), "data": data}}


def _map_nested(data: Any, fn: Any, depth: int) -> Any:
    """Apply ``fn`` to the scalars of ``depth``-deep nested lists (depth = a tensor's rank)."""
    if depth == 0:
        return fn(data)
    return [_map_nested(x, fn, depth - 1) for x in data]


def encode_value(v: Any) -> Any:
    """A runtime value as protocol JSON (iterative: ADT values may be long lists)."""
    from interpreter.values import Closure, ConstructorFunction, ConstructorValue, OpValue, RefValue

    root: list[Any] = [None]
    stack: list[tuple[Any, list[Any], int]] = [(v, root, 0)]
    while stack:
        x, parent, slot = stack.pop()
        if isinstance(x, (np.ndarray, np.generic)):
            parent[slot] = _encode_tensor(np.asarray(x))
        elif isinstance(x, tuple):
            items: list[Any] = [None] * len(x)
            parent[slot] = {"tuple": items}
            stack.extend((f, items, i) for i, f in enumerate(x))
        elif isinstance(x, ConstructorValue):
            items = [None] * len(x.fields)
            parent[slot] = {"adt": x.name, "fields": items}
            stack.extend((f, items, i) for i, f in enumerate(x.fields))
        elif isinstance(x, RefValue):
            cell: list[Any] = [None]
            parent[slot] = {"ref": cell}
            stack.append((x.value, cell, 0))
        elif isinstance(x, (Closure, OpValue, ConstructorFunction, OpaqueFunction)):
            parent[slot] = {"function": getattr(x, "name", None) or "<closure>"}
        else:
            raise ExternalError(f"cannot encode {type(x).__name__}")
    return _unwrap_refs(root[0])


def _unwrap_refs(obj: Any) -> Any:
    # {"ref": [V]} -> {"ref": V}, iteratively.
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            if "ref" in o and isinstance(o["ref"], list):
                o["ref"] = o["ref"][0]
            stack.extend(o.values())
        elif isinstance(o, list):
            stack.extend(o)
    return obj


def _decode_scalar(x: Any, dtype: str) -> Any:
    if isinstance(x, str):
        table = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}
        if x not in table:
            raise ExternalError(f"bad scalar {x!r}")
        return table[x]
    return x


def _decode_tensor(spec: Any) -> np.ndarray:
    if not isinstance(spec, dict) or not isinstance(spec.get("dtype"), str) or \
            not is_dtype(spec["dtype"]) or not isinstance(spec.get("shape"), list):
        raise ExternalError(f"bad tensor {spec!r}")
    dtype, shape = spec["dtype"], tuple(int(d) for d in spec["shape"])
    data = spec.get("data")
    flat: list[Any] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        else:
            flat.append(_decode_scalar(item, dtype))
    size = int(np.prod(shape)) if shape else 1
    if len(flat) != size:
        raise ExternalError(f"tensor data has {len(flat)} elements, shape {list(shape)} needs "
                            f"{size}")
    out = np.empty(size, dtype=np.dtype(dtype))
    for i, x in enumerate(flat):
        out[i] = x
    return out.reshape(shape)


def decode_value(obj: Any) -> Any:
    """Protocol JSON back to a runtime value (ADT values as ``ConstructorValue``; functions
    as :class:`OpaqueFunction`; references as ``RefValue``). Iterative."""
    from interpreter.values import ConstructorValue, RefValue

    # Post-order: children first, then the node.
    results: dict[int, Any] = {}
    stack: list[tuple[Any, bool]] = [(obj, False)]
    while stack:
        o, done = stack.pop()
        if not isinstance(o, dict) or len(o) == 0:
            raise ExternalError(f"bad value {o!r}")
        kids = o.get("tuple") if "tuple" in o else o.get("fields") if "adt" in o else \
            [o["ref"]] if "ref" in o else []
        if not isinstance(kids, list):
            raise ExternalError(f"bad value {o!r}")
        if not done:
            stack.append((o, True))
            stack.extend((k, False) for k in kids)
            continue
        if "tensor" in o:
            results[id(o)] = _decode_tensor(o["tensor"])
        elif "tuple" in o:
            results[id(o)] = tuple(results[id(k)] for k in kids)
        elif "adt" in o:
            results[id(o)] = ConstructorValue(str(o["adt"]), tuple(results[id(k)] for k in kids))
        elif "ref" in o:
            results[id(o)] = RefValue(results[id(kids[0])])
        elif "function" in o:
            results[id(o)] = OpaqueFunction(str(o["function"]))
        else:
            raise ExternalError(f"bad value {o!r}")
    return results[id(obj)]


def dumps(obj: Any) -> str:
    """``json.dumps`` without recursion (values nest as deep as the data, e.g. long lists)."""
    out: list[str] = []
    stack: list[Any] = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, _Raw):
            out.append(o.text)
        elif isinstance(o, dict):
            parts: list[Any] = [_Raw("{")]
            for i, (k, v) in enumerate(o.items()):
                parts.append(_Raw((", " if i else "") + json.dumps(str(k)) + ": "))
                parts.append(v)
            parts.append(_Raw("}"))
            stack.extend(reversed(parts))
        elif isinstance(o, (list, tuple)):
            parts = [_Raw("[")]
            for i, v in enumerate(o):
                if i:
                    parts.append(_Raw(", "))
                parts.append(v)
            parts.append(_Raw("]"))
            stack.extend(reversed(parts))
        else:
            out.append(json.dumps(o))
    return "".join(out)


class _Raw:
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


def loads(text: str) -> Any:
    """``json.loads``; a value nested too deeply for Python's parser is an ExternalError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ExternalError("a value is nested too deeply to decode") from None


# --- the reference side: answering one request ------------------------------------------------

def handle_request(line: str, evaluate_fn: Any = None, rewrite: Any = None) -> str:
    """Answer one request line with our interpreter (what ``good_impl.py`` does).

    Args:
        line: the request JSON.
        evaluate_fn: the evaluator (default ``interpreter.evaluate``).
        rewrite: an optional ``IRModule -> IRModule`` applied before evaluating (used by the
            deliberately broken example).
    Returns:
        The response JSON line (without the newline).
    """
    from semantics import parse
    from semantics.errors import RelayError

    if evaluate_fn is None:
        from interpreter import evaluate as evaluate_fn
    req_id = None
    try:
        req = loads(line)
        req_id = req.get("id")
        mod = parse(req["program"])
        if rewrite is not None:
            mod = rewrite(mod)
        args = [decode_value(a) for a in req.get("args", [])]
        value = evaluate_fn(mod, *args, entry=req.get("entry", "main"))
        return dumps({"id": req_id, "value": encode_value(value)})
    except RelayError as err:
        return json.dumps({"id": req_id, "error": type(err).__name__, "message": err.message})


# --- the kit side: driving an external process ------------------------------------------------

class ExternalImpl:
    """An external implementation behind the line protocol, as a conformance *transform*.

    ``ExternalImpl(cmd).transform`` maps a module to a callable that sends the
    module's text and the arguments to the process and returns the decoded
    value (or raises ``RelayRuntimeError`` for a trap, :class:`ExternalError`
    for anything else). Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, command: str, *, timeout: float = 20.0):
        self.command = command
        self.timeout = timeout
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._next_id = 0

    # process management
    def _start(self) -> subprocess.Popen[str]:
        proc = subprocess.Popen(self.command, shell=True, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                encoding="utf-8", bufsize=1)
        self._lines = queue.Queue()
        lines = self._lines

        def pump() -> None:
            assert proc.stdout is not None
            for out_line in proc.stdout:
                lines.put(out_line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        self._proc = proc
        return proc

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()

    def __enter__(self) -> ExternalImpl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, text: str, args: Sequence[Any], entry: str = "main") -> Any:
        """Send one program; return the decoded value (errors as described above)."""
        proc = self._proc if self._proc is not None and self._proc.poll() is None \
            else self._start()
        self._next_id += 1
        req = {"id": self._next_id, "program": text, "entry": entry,
               "args": [encode_value(a) for a in args]}
        try:
            assert proc.stdin is not None
            proc.stdin.write(dumps(req) + "\n")
            proc.stdin.flush()
        except OSError as err:
            self.close()
            raise ExternalError(f"cannot write to the implementation: {err}") from None
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            self.close()
            raise ExternalError(f"no answer within {self.timeout} s") from None
        if line is None:
            self.close()
            raise ExternalError("the implementation exited")
        try:
            resp = loads(line)
        except json.JSONDecodeError:
            raise ExternalError(f"malformed response line: {line.strip()[:200]}") from None
        if not isinstance(resp, dict) or resp.get("id") != self._next_id:
            raise ExternalError(f"response for the wrong request: {line.strip()[:200]}")
        if "error" in resp:
            kind, message = str(resp["error"]), str(resp.get("message", ""))
            if kind == "RelayRuntimeError":
                raise RelayRuntimeError(message)
            raise ExternalError(f"{kind}: {message}")
        if "value" not in resp:
            raise ExternalError(f"response has neither value nor error: {line.strip()[:200]}")
        return decode_value(resp["value"])

    def transform(self, module: IRModule) -> Any:
        """The conformance transform: ``module -> callable(*inputs)``."""
        from semantics import pretty

        text = pretty(module)

        def run_main(*inputs: Any) -> Any:
            return self.request(text, inputs)

        return run_main
