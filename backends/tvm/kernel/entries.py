"""The files of a kernel-cache entry (``backends.tvm.kernel.KernelCache``) and their
integrity.

An entry ``<key>`` is a linked library ``<key>.so`` and its metadata ``<key>.json`` (types,
layout, constants — large ones as shared content-addressed blobs, :mod:`backends.tvm.kernel.blobs`),
plus optionally a memoized ``<key>.module``.  Every file is written to a temporary name and
renamed into place, the ``.json`` last, so its presence means the entry is complete.  The
metadata is *sealed* (the SHA-256 of its canonical JSON is stored in it) and records the
library's size and SHA-256, which are checked before the dynamic loader maps the library: a
truncated or changed file is a cache miss, never a crash (SIGBUS) or someone else's code.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import shutil
import tempfile
from pathlib import Path
from typing import Any

from backends.tvm.kernel import blobs
from backends.tvm.te_build import Layout
from semantics.ops.reference import concrete_shape
from semantics.types import TensorType

__all__ = ["MODULE_MAGIC", "cache_directory", "entry_blobs", "entry_paths", "layout_from_json",
           "library_intact", "module_payload", "read_entry", "read_sealed", "sealed_json",
           "type_from_json", "type_json", "write_entry", "write_module"]


def cache_directory() -> Path:
    """``$RELAY_TVM_CACHE``, or ``~/.cache/relay-ref/tvm``."""
    env = os.environ.get("RELAY_TVM_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "relay-ref" / "tvm"


def type_json(t: TensorType) -> list[Any]:
    return [t.dtype, list(concrete_shape(t))]


def type_from_json(j: list[Any]) -> TensorType:
    return TensorType(tuple(int(d) for d in j[1]), str(j[0]))


def layout_from_json(j: Any) -> Layout:
    return j if isinstance(j, int) else tuple(layout_from_json(x) for x in j)


def entry_paths(directory: Path, key: str) -> tuple[Path, Path]:
    return directory / f"{key}.so", directory / f"{key}.json"


def write_entry(directory: Path, key: str, artifact: Any, meta: dict[str, Any]) -> None:
    """Write a cache entry: the constants (:func:`backends.tvm.kernel.blobs.constant_doc`: large
    ones as shared blobs, small ones inline), the library (``artifact``: a linked ``.so``
    path, copied, or TVM's module, exported), and the ``.json`` last (its presence means
    complete). Errors (an unwritable directory, no C compiler) leave no entry and are not
    raised."""
    so, js = entry_paths(directory, key)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        constants = [blobs.constant_doc(directory, c) for c in meta["constants"]]
        with tempfile.TemporaryDirectory(dir=directory) as tmp:
            tmp_so = Path(tmp) / "kernel.so"
            if isinstance(artifact, Path):
                shutil.copyfile(artifact, tmp_so)
            else:
                artifact.export_library(str(tmp_so))
            library = {"bytes": tmp_so.stat().st_size, "sha256": blobs.file_digest(tmp_so)}
            os.replace(tmp_so, so)
            doc = {k: v for k, v in meta.items() if k != "constants"}
            doc["constants"] = constants
            doc["library"] = library
            tmp_js = Path(tmp) / "kernel.json"
            tmp_js.write_text(sealed_json(doc))
            os.replace(tmp_js, js)     # written last: its presence means complete
    except (OSError, RuntimeError, ValueError):
        return


def sealed_json(doc: dict[str, Any]) -> str:
    """``doc`` as JSON with a ``"sealed"`` field: the SHA-256 of the rest (canonical JSON),
    which :func:`read_sealed` checks, so a metadata file changed in place is a miss."""
    body = json.dumps(doc, sort_keys=True)
    return json.dumps({**doc, "sealed": hashlib.sha256(body.encode()).hexdigest()})


def read_sealed(path: Path) -> dict[str, Any]:
    """The document :func:`sealed_json` wrote to ``path``.

    Raises:
        OSError: unreadable. ValueError: not JSON, or not the document that was sealed.
    """
    doc = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict):
        raise ValueError(f"{path.name}: not a kernel's metadata")
    seal = doc.pop("sealed", None)
    if seal != hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest():
        raise ValueError(f"{path.name}: its contents are not the ones written")
    return doc


def library_intact(so: Path, meta: dict[str, Any]) -> bool:
    """Whether the library ``so`` has the size and SHA-256 its metadata recorded (checked
    before the dynamic loader maps it: a truncated library crashes the process with SIGBUS
    when its missing pages are touched, a changed one runs other code)."""
    want = meta.get("library")
    if not isinstance(want, dict):
        return False
    try:
        return (so.stat().st_size == want.get("bytes")
                and blobs.file_digest(so) == want.get("sha256"))
    except OSError:
        return False


def entry_blobs(meta: Any) -> list[str]:
    """The digests of the blobs a kernel's metadata refers to."""
    return [c["blob"] for c in meta.get("constants", ()) if isinstance(c, dict) and "blob" in c]


MODULE_MAGIC = b"relay-memo 2\n"
"""The first bytes of a ``.module`` file (see :meth:`KernelCache.save_module`)."""


def module_payload(data: bytes) -> bytes | None:
    """The pickle inside the bytes of a ``.module`` file :func:`write_module` wrote, or None
    when they do not start with :data:`MODULE_MAGIC` and the SHA-256 of that pickle."""
    n = len(MODULE_MAGIC)
    head, digest, payload = data[:n], data[n:n + 32], data[n + 32:]
    if head != MODULE_MAGIC or hashlib.sha256(payload).digest() != digest:
        return None
    return payload


def write_module(directory: Path, key: str, module: Any) -> None:
    """Write ``<key>.module`` (see :meth:`KernelCache.save_module`): large arrays go to
    blobs first, so a complete ``.module`` never refers to a missing one."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        blobs.BlobPickler(buf, directory).dump(module)
        payload = buf.getvalue()
        fd, tmp = tempfile.mkstemp(dir=directory, prefix="tmp", suffix=".partial")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MODULE_MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, directory / f"{key}.module")
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except (OSError, RecursionError, pickle.PicklingError, TypeError, AttributeError,
            ValueError):
        return


def read_entry(directory: Path, key: str) -> tuple[dict[str, Any], list[Any], Any] | None:
    """The metadata, constants and loaded TVM module of a complete, intact cache entry in
    ``directory``, or None (no entry, or a damaged one: metadata unreadable or changed, a
    missing, truncated or changed blob, a library whose size or SHA-256 is not the one
    recorded — checked before it is loaded).

    Raises:
        OSError, ValueError, KeyError, RuntimeError, TypeError, AttributeError: a damaged
            entry the checks above did not catch (the caller treats it as a miss).
    """
    import tvm

    so, js = entry_paths(directory, key)
    if not js.is_file() or not so.is_file():
        return None
    meta = read_sealed(js)
    if not library_intact(so, meta):
        return None
    constants = [blobs.constant_from_doc(directory, c) for c in meta["constants"]]
    return meta, constants, tvm.runtime.load_module(str(so))
