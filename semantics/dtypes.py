"""Data types (dtypes) of tensors and their literals.

A dtype is a string as TVM spells it: ``bool``, ``int8/16/32/64``,
``uint8/16/32/64``, ``float16/32/64``, optionally with lanes (``float32x4``).
Lanes are kinded (they are valid BaseTypes) but values with lanes > 1 are not
evaluated. So are TVM's sub-byte integers ``int1 int2 int4 uint1 uint2 uint4``
(``uint1x4`` appears in TVM's own programs): they parse, print and kind, pass
through functions that only move them, are no integer dtype for the operators'
relations, and a value of one is refused (``RelayRuntimeError``).

Literal suffixes (text format §3): ``i8 i16 i64 u8 u16 u32 u64`` for
integers (bare integers are int32, ``i32`` is accepted), ``f``/``f32``,
``f16``, ``f64`` for floats (bare decimals are float32).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

SCALAR_DTYPES = (
    "bool",
    "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
)

INT_DTYPES = ("int8", "int16", "int32", "int64")
UINT_DTYPES = ("uint8", "uint16", "uint32", "uint64")
FLOAT_DTYPES = ("float16", "float32", "float64")

_DTYPE_RE = re.compile(
    r"^(bool|u?int(1|2|4|8|16|32|64)|float(16|32|64))(x([1-9][0-9]*))?$")

INT_SUFFIX = {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
              "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}
FLOAT_SUFFIX = {"f": "float32", "f32": "float32", "f16": "float16", "f64": "float64"}
_SUFFIX_OF = {"int8": "i8", "int16": "i16", "int64": "i64", "uint8": "u8", "uint16": "u16",
              "uint32": "u32", "uint64": "u64", "float16": "f16", "float32": "f", "float64": "f64"}


def is_dtype(name: str) -> bool:
    """True when ``name`` spells a dtype (with or without lanes)."""
    return bool(_DTYPE_RE.match(name))


def split_lanes(dtype: str) -> tuple[str, int]:
    """``"float32x4"`` -> ``("float32", 4)``; ``"int8"`` -> ``("int8", 1)``."""
    base, _, lanes = dtype.partition("x")
    return base, int(lanes) if lanes else 1


def is_int(dtype: str) -> bool:
    return dtype in INT_DTYPES or dtype in UINT_DTYPES


def is_signed_int(dtype: str) -> bool:
    return dtype in INT_DTYPES


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def is_bool(dtype: str) -> bool:
    return dtype == "bool"


def to_numpy(dtype: str) -> np.dtype:
    """The numpy dtype of a scalar Relay dtype (``ValueError`` for lanes)."""
    if dtype not in SCALAR_DTYPES:
        raise ValueError(f"dtype {dtype} has no numpy equivalent")
    return np.dtype(dtype)


def from_numpy(dtype: np.dtype) -> str:
    """The Relay dtype of a numpy dtype (``ValueError`` if unsupported)."""
    name = np.dtype(dtype).name
    if name not in SCALAR_DTYPES:
        raise ValueError(f"numpy dtype {name} is not a Relay dtype")
    return name


def literal(value: np.generic | np.ndarray, dtype: str) -> str:
    """The text-format literal of a scalar that re-parses to exactly the same value."""
    v = np.asarray(value).astype(to_numpy(dtype)).item() if dtype != "bool" else bool(value)
    if dtype == "bool":
        return "True" if v else "False"
    if is_int(dtype):
        return f"{int(v)}{_SUFFIX_OF.get(dtype, '')}"
    suffix = _SUFFIX_OF[dtype]
    x: Any = np.asarray(value).astype(to_numpy(dtype))[()]   # a numpy float scalar
    if math.isnan(float(x)):
        return f"nan{suffix}"
    if math.isinf(float(x)):
        return ("-" if x < 0 else "") + f"inf{suffix}"
    text = np.format_float_positional(x, unique=True, trim="0") if abs(float(x)) < 1e16 \
        else np.format_float_scientific(x, unique=True, trim="0")
    if abs(float(x)) != 0.0 and abs(float(x)) < 1e-4:
        text = np.format_float_scientific(x, unique=True, trim="0")
    if "." not in text and "e" not in text:
        text += ".0"
    if text.endswith("."):
        text += "0"
    return text + suffix


def scalar(value: object, dtype: str) -> np.ndarray:
    """A 0-d numpy array of ``dtype`` holding ``value`` (integers wrap at the dtype's width)."""
    if is_int(dtype):
        bits = np.iinfo(to_numpy(dtype)).bits
        iv = int(value)  # type: ignore[call-overload]
        iv &= (1 << bits) - 1
        if is_signed_int(dtype) and iv >= 1 << (bits - 1):
            iv -= 1 << bits
        return np.array(iv, dtype=to_numpy(dtype))
    return np.array(value, dtype=to_numpy(dtype))
