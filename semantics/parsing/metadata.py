"""The metadata section: ``meta[relay.Constant][i]``, ``#[metadata]`` (docs/architecture.md#text).

:class:`MetadataReader` parses a ``meta[...]`` reference and decodes the
section on first use (or up front, so a malformed section is always
reported); each index resolves to one :class:`Constant`, so repeated
references share it. :func:`decode_metadata` reads the section's JSON: our
format (what :mod:`semantics.printer` writes: dtype, shape and the base64 of
the C-order little-endian bytes) or TVM's node graph (``root``, ``nodes``,
``b64ndarrays`` holding serialized DLTensor NDArrays). Arrays are read back
bit-exactly.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import struct
from typing import Any

import numpy as np

from semantics import dtypes
from semantics.errors import ParseError
from semantics.expr import Constant
from semantics.parsing.base import ParserBase

__all__ = ["MetadataError", "MetadataReader", "decode_metadata"]


class MetadataReader(ParserBase):
    """The parser layer for ``meta[...]`` references and the ``#[metadata]`` section."""

    def check_metadata(self) -> None:
        """Decode a ``#[metadata]`` section up front, so a malformed one is always reported."""
        if self.toks.metadata is not None:
            self.load_metadata(len(self.K) - 1)

    def meta_reference(self) -> Constant:
        K, V = self.K, self.V
        start = self.i
        self.i += 1
        self.expect("[", "after `meta`")
        if K[self.i] != "IDENT":
            raise self.error(f"expected a metadata kind such as `relay.Constant`, "
                             f"found {self.toks.describe(self.i)}")
        kind = V[self.i]
        if kind not in ("relay.Constant", "Constant"):
            raise self.error(f"unsupported metadata kind `{kind}` (only relay.Constant)")
        self.i += 1
        self.expect("]", "after the metadata kind")
        self.expect("[", "before the metadata index")
        if K[self.i] != "NUM" or not V[self.i].isdigit() or len(V[self.i]) > 9:
            raise self.error(f"expected a metadata index, found {self.toks.describe(self.i)}")
        index = int(V[self.i])
        self.i += 1
        self.expect("]", "after the metadata index")
        table = self.load_metadata(start)
        if index >= len(table):
            raise self.error(f"meta[{kind}][{index}] is out of range: the metadata section "
                             f"has {len(table)} constant(s)", start)
        const = self.meta_consts.get(index)
        if const is None:
            const = Constant(table[index], span=self.span(start, self.i - 1))
            self.meta_consts[index] = const
        return const

    def load_metadata(self, at: int) -> list[np.ndarray]:
        if self.metadata is not None:
            return self.metadata
        text = self.toks.metadata
        if text is None:
            raise self.error("`meta[...]` is used but the text has no `#[metadata]` section", at)
        try:
            self.metadata = decode_metadata(text)
        except MetadataError as exc:
            offset = self.toks.metadata_offset + min(max(exc.pos, 0), len(text))
            raise ParseError(exc.message, self.toks.span_offsets(offset, offset)) from None
        return self.metadata

# --- metadata decoding -----------------------------------------------------------------------

class MetadataError(Exception):
    """A malformed metadata section; ``pos`` is the character offset in the JSON text."""

    def __init__(self, message: str, pos: int = 0):
        super().__init__(message)
        self.message = message
        self.pos = pos


def decode_metadata(text: str) -> list[np.ndarray]:
    """The constant table of a ``#[metadata]`` section (our JSON format or TVM's).

    Raises:
        MetadataError: malformed JSON or an entry that does not describe a tensor (the
            parser turns it into a ParseError at that position).
    """
    start = len(text) - len(text.lstrip())
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MetadataError(f"malformed metadata section: {exc.msg}", exc.pos) from None
    except (ValueError, RecursionError) as exc:
        raise MetadataError(f"malformed metadata section: {exc}", start) from None
    try:
        if isinstance(obj, dict) and "b64ndarrays" in obj and "nodes" in obj:
            return _decode_tvm_metadata(obj)
        if not isinstance(obj, dict):
            raise ValueError("expected a JSON object")
        entries = obj.get("relay.Constant", obj.get("Constant", []))
        if not isinstance(entries, list):
            raise ValueError("\"relay.Constant\" must be a list")
        return [_decode_entry(k, e) for k, e in enumerate(entries)]
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, AttributeError,
            struct.error, binascii.Error) as exc:
        raise MetadataError(f"malformed metadata section: {exc}", start) from None


def _decode_entry(k: int, entry: Any) -> np.ndarray:
    if not isinstance(entry, dict):
        raise ValueError(f"constant {k} is not an object")
    dtype, shape, data = entry.get("dtype"), entry.get("shape"), entry.get("data")
    if not isinstance(dtype, str) or dtype not in dtypes.SCALAR_DTYPES:
        raise ValueError(f"constant {k} has no valid \"dtype\"")
    if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**40 for d in shape):
        raise ValueError(f"constant {k} has no valid \"shape\"")
    if not isinstance(data, str):
        raise ValueError(f"constant {k} has no \"data\" string")
    raw = base64.b64decode(data.encode("ascii"), validate=True)
    return _array_from_bytes(raw, dtype, shape, f"constant {k}")


def _array_from_bytes(raw: bytes, dtype: str, shape: list[int], what: str) -> np.ndarray:
    np_dtype = np.dtype(dtype)
    count = math.prod(shape)
    if len(raw) != count * np_dtype.itemsize:
        raise ValueError(f"{what}: {len(raw)} data bytes for {count} element(s) of {dtype}")
    if dtype == "bool":
        if any(b > 1 for b in raw):
            raise ValueError(f"{what}: boolean data must be bytes 0 or 1")
        arr = np.frombuffer(raw, dtype=np.uint8).astype(np.bool_)
    else:
        arr = np.frombuffer(raw, dtype=np_dtype.newbyteorder("<")).astype(np_dtype)
    return arr.reshape(shape)


_TVM_NDARRAY_MAGIC = 0xDD5E40F096B4A13F
_DL_CODES = {0: "int", 1: "uint", 2: "float"}


def _decode_tvm_metadata(obj: dict[str, Any]) -> list[np.ndarray]:
    """TVM's node-graph JSON: root Map -> "relay.Constant" Array -> Constant nodes whose
    ``attrs.data`` indexes ``b64ndarrays`` (each a serialized DLTensor)."""
    nodes = obj["nodes"]
    root = nodes[int(obj["root"])]
    keys, values = root.get("keys", []), root.get("data", [])
    arrays = obj["b64ndarrays"]
    for key, index in zip(keys, values, strict=False):
        if key != "relay.Constant":
            continue
        array_node = nodes[int(index)]
        out = []
        for node_index in array_node.get("data", []):
            node = nodes[int(node_index)]
            if node.get("type_key") != "relay.Constant":
                raise ValueError(f"node {node_index} is not a relay.Constant")
            blob = base64.b64decode(arrays[int(node["attrs"]["data"])], validate=True)
            out.append(_decode_tvm_ndarray(blob))
        return out
    return []


def _decode_tvm_ndarray(blob: bytes) -> np.ndarray:
    magic, _reserved, _dev_type, _dev_id, ndim, code, bits, lanes = \
        struct.unpack_from("<QQiiiBBH", blob, 0)
    if magic != _TVM_NDARRAY_MAGIC:
        raise ValueError("bad NDArray magic number")
    if not 0 <= ndim <= 64 or lanes != 1:
        raise ValueError("unsupported NDArray header")
    offset = 32
    shape = list(struct.unpack_from(f"<{ndim}q", blob, offset))
    offset += 8 * ndim
    (nbytes,) = struct.unpack_from("<q", blob, offset)
    offset += 8
    if (code == 1 and bits == 1) or (code == 6 and bits == 8):
        dtype = "bool"
    elif code in _DL_CODES:
        dtype = f"{_DL_CODES[code]}{bits}"
    else:
        raise ValueError(f"unsupported NDArray dtype code {code}")
    if dtype not in dtypes.SCALAR_DTYPES or any(d < 0 for d in shape):
        raise ValueError(f"unsupported NDArray dtype {dtype}")
    data = blob[offset:offset + nbytes]
    if len(data) != nbytes:
        raise ValueError("truncated NDArray data")
    return _array_from_bytes(data, dtype, shape, "NDArray")
