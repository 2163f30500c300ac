"""Readable counterexamples: inputs as literals or ``.npy`` files, the first differing element.

A counterexample report must be readable by a student: small tensors (at most
:data:`INLINE_ELEMENTS` elements) are printed as Relay literals and as ``numpy``
expressions that rebuild them exactly; larger ones are written to ``.npy`` files in a
directory (the report names the files). The non-scalar constants that Relay's text
format keeps in its base64 ``#[metadata]`` section are listed the same way. The first
element where two values differ is named with its path, index, both values and, for
floats, both bit patterns (which tells ``-0.0`` from ``0.0`` and one NaN from another).
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from typing import Any

import numpy as np

from interpreter.values import ConstructorValue, RefValue, show_value

__all__ = ["INLINE_ELEMENTS", "numpy_literal", "show_inputs", "readable_metadata",
           "first_difference", "bits"]

INLINE_ELEMENTS = 64

_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def bits(x: np.generic | np.ndarray) -> str:
    """The IEEE bit pattern of one float element, as hexadecimal (``0x80000000`` for -0.0)."""
    arr = np.asarray(x)
    width = arr.dtype.itemsize
    return f"0x{int(arr.reshape(()).view(_UINT[width])):0{2 * width}x}"


def _float_repr(v: float) -> str:
    if np.isnan(v):
        return "np.nan"
    if np.isinf(v):
        return "np.inf" if v > 0 else "-np.inf"
    if v == 0:
        return "-0.0" if np.signbit(v) else "0.0"
    return repr(float(v))


def numpy_literal(arr: np.ndarray | np.generic) -> str:
    """A Python expression rebuilding ``arr`` exactly (``np.array([...], dtype='float32')``)."""
    a = np.asarray(arr)
    if a.dtype.kind == "f":
        flat = [_float_repr(float(v)) for v in a.reshape(-1)]
    elif a.dtype.kind == "b":
        flat = ["True" if v else "False" for v in a.reshape(-1)]
    else:
        flat = [str(int(v)) for v in a.reshape(-1)]
    if a.ndim == 0:
        return f"np.{a.dtype.name}({flat[0]})"
    return f"np.array([{', '.join(flat)}], dtype='{a.dtype.name}').reshape({tuple(a.shape)})"


def _tensors(value: Any) -> int:
    """The number of tensor elements in a value (tuples and ADTs opened)."""
    total, stack = 0, [value]
    while stack:
        v = stack.pop()
        if isinstance(v, np.ndarray | np.generic):
            total += int(np.asarray(v).size)
        elif isinstance(v, tuple):
            stack.extend(v)
        elif isinstance(v, ConstructorValue):
            stack.extend(v.fields)
        elif isinstance(v, RefValue):
            stack.append(v.value)
    return total


class Artifacts:
    """Where large inputs are written: a directory created on first use."""

    def __init__(self, directory: str | None = None) -> None:
        self.directory = directory
        self.files: list[str] = []

    def save(self, name: str, arr: np.ndarray) -> str:
        if self.directory is None:
            self.directory = tempfile.mkdtemp(prefix="relay-counterexample-")
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, f"{name}.npy")
        np.save(path, arr)
        self.files.append(path)
        return path


def show_inputs(names: list[str], inputs: Any, artifacts: Artifacts) -> list[str]:
    """One line per input: ``%x = <Relay literal>`` and, below, a numpy expression — or
    the ``.npy`` file it was written to when it has more than :data:`INLINE_ELEMENTS`
    elements."""
    lines = []
    for name, v in zip(names, inputs, strict=False):
        if isinstance(v, np.ndarray | np.generic):
            arr = np.asarray(v)
            if arr.size > INLINE_ELEMENTS:
                path = artifacts.save(name, arr)
                lines.append(f"  %{name}: Tensor[{tuple(arr.shape)}, {arr.dtype.name}] "
                             f"= np.load({path!r})")
                continue
            lines.append(f"  %{name} = {show_value(arr)}")
            lines.append(f"      numpy: {numpy_literal(arr)}")
        elif _tensors(v) > INLINE_ELEMENTS:
            lines.append(f"  %{name} = {show_value(v, limit=400)}")
        else:
            lines.append(f"  %{name} = {show_value(v)}")
    return lines


def split_metadata(text: str) -> tuple[str, list[np.ndarray]]:
    """The text before its ``#[metadata]`` section and the constants that section holds."""
    head, sep, meta = text.partition("\n#[metadata]\n")
    if not sep:
        return text, []
    try:
        entries = json.loads(meta)["relay.Constant"]
        arrays = [np.frombuffer(base64.b64decode(e["data"]),
                                dtype=np.dtype(e["dtype"]).newbyteorder("<")
                                if e["dtype"] != "bool" else np.bool_)
                  .astype(e["dtype"]).reshape(e["shape"]) for e in entries]
    except (ValueError, KeyError, TypeError):
        return text, []
    return head, arrays


def readable_metadata(arrays: list[np.ndarray], artifacts: Artifacts) -> list[str]:
    """``meta[relay.Constant][i] = <literal>`` lines (``.npy`` files for large ones)."""
    lines = []
    for i, arr in enumerate(arrays):
        flat = arr.reshape(-1)
        if arr.size > 1 and flat.tobytes() == np.full_like(flat, flat[0]).tobytes():
            lines.append(f"  meta[relay.Constant][{i}] = every element "
                         f"{show_value(flat[0])}: np.full({tuple(arr.shape)}, "
                         f"{numpy_literal(flat[0])})")
        elif arr.size > INLINE_ELEMENTS:
            path = artifacts.save(f"constant{i}", arr)
            lines.append(f"  meta[relay.Constant][{i}]: Tensor[{tuple(arr.shape)}, "
                         f"{arr.dtype.name}] = np.load({path!r})")
        else:
            lines.append(f"  meta[relay.Constant][{i}] = {show_value(arr)}")
    return lines


def first_difference(expected: Any, got: Any) -> str | None:
    """``path[index]: expected E (bits), got G (bits)`` for the first differing tensor
    element of two values of the same structure, or None when no element differs (the
    values then differ in structure, dtype or shape)."""
    stack: list[tuple[Any, Any, str]] = [(expected, got, "result")]
    seen: set[tuple[int, int]] = set()
    while stack:
        a, b, path = stack.pop()
        if isinstance(a, np.ndarray | np.generic) and isinstance(b, np.ndarray | np.generic):
            x, y = np.asarray(a), np.asarray(b)
            if x.dtype != y.dtype or x.shape != y.shape:
                continue
            if x.dtype.kind == "f":
                with np.errstate(all="ignore"):
                    same = ((x == y) & (np.signbit(x) == np.signbit(y))) | \
                        (np.isnan(x) & np.isnan(y))
            else:
                same = x == y
            bad = ~np.asarray(same)
            if not bad.any():
                continue
            # (np.argwhere of a 0-d array has no columns: a scalar's index is ())
            idx = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
            ex, gy = x[idx], y[idx]
            where = f"{path}[{', '.join(map(str, idx))}]" if idx else path
            if x.dtype.kind == "f":
                return (f"{where}: expected {show_value(ex)} (bits {bits(ex)}), "
                        f"got {show_value(gy)} (bits {bits(gy)})")
            return f"{where}: expected {show_value(ex)}, got {show_value(gy)}"
        if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
            stack.extend((p, q, f"{path}.{i}") for i, (p, q) in
                         reversed(list(enumerate(zip(a, b, strict=True)))))
        elif isinstance(a, ConstructorValue) and isinstance(b, ConstructorValue) and \
                a.name == b.name and len(a.fields) == len(b.fields):
            stack.extend((p, q, f"{path}.{a.name}[{i}]") for i, (p, q) in
                         reversed(list(enumerate(zip(a.fields, b.fields, strict=True)))))
        elif isinstance(a, RefValue) and isinstance(b, RefValue) and (id(a), id(b)) not in seen:
            seen.add((id(a), id(b)))
            stack.append((a.value, b.value, f"!{path}"))
    return None


def result_component(path: str) -> int | None:
    """The index of ``main``'s result component a difference path starts in (``result.2``
    gives 2), or None."""
    parts = path.split(":", 1)[0].split(".")
    if len(parts) >= 2 and parts[0].endswith("result") and parts[1].split("[")[0].isdigit():
        return int(parts[1].split("[")[0])
    return None
