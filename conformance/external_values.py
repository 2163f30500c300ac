"""The values of the external-implementation protocol (``conformance.external``): runtime
values to and from protocol JSON, and a JSON writer/reader safe for deeply nested values.

The encoding is the one the protocol documents in :mod:`conformance.external` ("Values
``V``"): tensors with their dtype, shape and nested data (non-finite floats as strings),
tuples, ADT values, references and opaque functions.  Everything here is iterative — an ADT
list is as deep as it is long — and every malformed value is an :class:`ExternalError`.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from semantics.dtypes import is_dtype


class ExternalError(Exception):
    """The external implementation failed (not a Relay error: it is a disagreement).

    ``kind`` says how: ``"timeout"``, ``"crash"`` (exited, killed, closed a pipe),
    ``"protocol"`` (a malformed, overlong, non-UTF-8 or misaddressed answer) or
    ``"error"`` (it answered with an error other than ``RelayRuntimeError``).
    """

    def __init__(self, message: str, kind: str = "protocol"):
        super().__init__(message)
        self.kind = kind


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
