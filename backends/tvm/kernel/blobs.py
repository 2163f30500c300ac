"""Content-addressed constants on disk: every weight stored once, read back without a copy.

The kernel cache's directory holds two kinds of things that carry a model's weights: the
kernels' constants (a convolution kernel owns its packed weights) and the build memo
(``backends.tvm.build.PrepareMemo``: the fused module, whose ``Constant`` nodes hold the very
same arrays). Both refer to the weights through this store instead of embedding them:

* a large array (at least :data:`BLOB_MIN_BYTES`) is a **blob**, ``<digest>.bin``: its raw
  bytes in C order, nothing else, named by the SHA-256 of those bytes (40 hex digits). Its
  dtype and shape live in the document that refers to it (:func:`constant_doc`), so the same
  bytes are stored once however many kernels and memos use them;
* a small array is written inline, base64 in the referring JSON document (no file, no map);
* a blob is read as a view of a private (copy-on-write) memory map of its file
  (:func:`read_blob`): no bytes are read or copied when a build loads, the pages come in
  from the page cache when a kernel first touches them, and the view is writable as far as
  numpy and DLPack know (kernels never write their constants; a write would stay private
  to this process). A file starts at a page boundary, so the data is 64-byte aligned for
  the kernels that need it. One map per blob per process is shared by every reader
  (:data:`_MAPS`, weak: a map goes when its last view goes);
* a blob whose size is not its array's, or whose bytes do not hash to its name, is damaged
  (a truncated write, a file changed in place): :class:`BlobError`, which the readers turn
  into a cache miss (a saved build refuses to load). The check runs once per map and
  process, before any view of the map is handed out: it reads the file once (SHA-256 runs
  at about 1 GB/s, so ResNet-18's weights cost some 50 ms) — the price of never running a
  model on silently changed weights. Files are written into a temporary name and renamed
  into place, so a reader never sees a partial blob; a blob already present with the right
  size and bytes is not written again.

The memo's pickles go through :class:`BlobPickler` / :class:`BlobUnpickler`, which replace
every large array by a persistent reference to its blob.
"""

from __future__ import annotations

import base64
import copyreg
import hashlib
import mmap
import os
import pickle
import re
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from semantics.expr import Attrs

__all__ = ["BLOB_MIN_BYTES", "BlobError", "BlobPickler", "BlobUnpickler", "array_digest",
           "blob_path", "constant_doc", "constant_from_doc", "file_digest", "read_blob",
           "write_blob"]

BLOB_MIN_BYTES = 4096
"""Arrays at least this large are blobs; smaller ones are written inline."""

SUFFIX = ".bin"

_DIGEST = re.compile(r"[0-9a-f]{40}")


class BlobError(ValueError):
    """A missing, damaged or malformed blob or constant document."""


def array_digest(a: np.ndarray) -> str:
    """The SHA-256 of ``a``'s bytes in C order (40 hex digits): its blob's name."""
    data = np.asarray(a, order="C")
    return hashlib.sha256(data.reshape(-1).view(np.uint8).data).hexdigest()[:40]


def blob_path(directory: Path, digest: str) -> Path:
    """Where the blob ``digest`` lives in ``directory``."""
    return directory / f"{digest}{SUFFIX}"


def write_blob(directory: Path, a: np.ndarray) -> str:
    """Store ``a``'s bytes as a blob in ``directory`` (if not there already); its digest.

    Raises:
        OSError: the directory cannot be written.
    """
    data = np.asarray(a, order="C")
    digest = array_digest(data)
    path = blob_path(directory, digest)
    if _intact(path, digest, data.nbytes):
        return digest
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="tmp", suffix=".partial")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.reshape(-1).view(np.uint8).data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return digest


def _intact(path: Path, digest: str, nbytes: int) -> bool:
    """Whether ``path`` holds ``nbytes`` bytes that hash to ``digest``."""
    try:
        if path.stat().st_size != nbytes:
            return False
        return file_digest(path)[:40] == digest
    except OSError:
        return False


def file_digest(path: Path) -> str:
    """The SHA-256 (hex) of the file ``path``'s bytes.

    Raises:
        OSError: the file cannot be read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_MAPS: weakref.WeakValueDictionary[str, np.ndarray] = weakref.WeakValueDictionary()
"""The mapped blobs of this process by digest: one ``uint8`` array over each file's map."""

_MAPS_LOCK = threading.Lock()


def read_blob(directory: Path, digest: str, dtype: np.dtype[Any], shape: tuple[int, ...]
              ) -> np.ndarray:
    """The blob ``digest`` as a writable ``dtype`` array of ``shape`` (see the module
    docstring: a view of a private memory map, no copy).

    Raises:
        BlobError: no such blob, or its size is not the array's.
    """
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise BlobError(f"not a blob name: {digest!r}")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    with _MAPS_LOCK:
        base = _MAPS.get(digest)
    if base is None or base.nbytes != nbytes:
        try:
            with open(blob_path(directory, digest), "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size != nbytes or size == 0:
                    raise BlobError(f"blob {digest} has {size} bytes, expected {nbytes}")
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
            if len(mm) != nbytes or hashlib.sha256(mm).hexdigest()[:40] != digest:
                mm.close()
                raise BlobError(f"blob {digest}: its bytes are not the ones written "
                                f"(changed or truncated)")
        except OSError as exc:
            raise BlobError(f"blob {digest}: {exc}") from None
        base = np.frombuffer(mm, np.uint8)
        with _MAPS_LOCK:
            _MAPS[digest] = base
    return base.view(dtype).reshape(shape)


def constant_doc(directory: Path, a: np.ndarray) -> dict[str, Any]:
    """The JSON-able description of a constant: dtype, shape, and its blob's digest (written
    into ``directory``) or, for a small array, its bytes in base64.

    Raises:
        OSError: the blob cannot be written. ValueError: an object array.
    """
    data = np.asarray(a, order="C")
    if data.dtype.hasobject:
        raise ValueError("an object array is not a constant")
    doc: dict[str, Any] = {"dtype": data.dtype.str, "shape": list(data.shape)}
    if data.nbytes >= BLOB_MIN_BYTES:
        doc["blob"] = write_blob(directory, data)
    else:
        doc["data"] = base64.b64encode(data.tobytes()).decode("ascii")
    return doc


def constant_from_doc(directory: Path, doc: Any) -> np.ndarray:
    """The array a :func:`constant_doc` describes (writable, C order).

    Raises:
        BlobError: a malformed document, a missing or damaged blob.
    """
    try:
        dtype = np.dtype(doc["dtype"])
        shape = tuple(int(d) for d in doc["shape"])
        if dtype.hasobject or any(d < 0 for d in shape):
            raise BlobError(f"not a constant: {doc!r}")
        if "blob" in doc:
            return read_blob(directory, doc["blob"], dtype, shape)
        raw = base64.b64decode(doc["data"], validate=True)
        return np.frombuffer(raw, dtype).reshape(shape).copy()
    except BlobError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise BlobError(f"not a constant: {exc}") from None


_PERSISTENT_TAG = "relay-blob"


class BlobPickler(pickle.Pickler):
    """A pickler of IR (``Attrs`` by its items: its ``__getattr__`` defeats pickle) that
    stores every large ndarray as a blob in ``directory`` and pickles a reference to it."""

    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[Attrs] = lambda a: (Attrs, (a._items,))

    def __init__(self, file: Any, directory: Path) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.directory = directory

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is np.ndarray and obj.nbytes >= BLOB_MIN_BYTES and not obj.dtype.hasobject:
            return (_PERSISTENT_TAG, write_blob(self.directory, obj), obj.dtype.str,
                    tuple(int(d) for d in obj.shape))
        return None


class BlobUnpickler(pickle.Unpickler):
    """Reads what :class:`BlobPickler` wrote: references become read-only views of their
    blobs (:func:`read_blob`); a missing or damaged blob raises :class:`BlobError`."""

    def __init__(self, file: Any, directory: Path) -> None:
        super().__init__(file)
        self.directory = directory

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 4 and pid[0] == _PERSISTENT_TAG):
            raise BlobError(f"unknown persistent reference {pid!r}")
        _, digest, dtype, shape = pid
        view = read_blob(self.directory, digest, np.dtype(dtype), tuple(shape)).view()
        view.flags.writeable = False
        return view
