"""The tuning database: the outcome of ``relay tune`` per kernel, kept on disk per Target.

A database is a directory (default :func:`default_directory`: ``$RELAY_TUNING_DIR``, else
``~/.cache/relay-ref/tuning``) with one sub-directory per
:class:`~backends.tvm.target.Target` (:func:`target_directory`: the CPU, the lanes and a
digest of ``Target.key()``), holding ``records.json``::

    {"format": "relay-tuning/1", "target": <Target.key()>, "sha256": <digest of "records">,
     "records": [{"workload_hash": ..., "workload": <tvm.ir.save_json of the workload>,
                  "relay_key": ..., "ops": [...], "trace": <MetaSchedule trace as JSON>,
                  "ours_seconds": ..., "tuned_seconds": ..., "trials": ..., "won": ...,
                  "flops": ..., "tuned_at": ...}, ...]}

One record per workload (the kernel's ``PrimFunc``, MetaSchedule's unit of tuning): the best
trace the search found, the times of our kernel and of the tuned one measured in the same run,
and whether the tuned one won (:mod:`backends.tvm.tune.decide`). ``relay_key`` (the Relay
function's structural hash and argument types) lets a build find a kernel's record without
lowering every kernel; the workload itself is then compared structurally with the kernel's
``PrimFunc`` before the trace is used, so a record never schedules another computation (a
changed lowering makes the record stale: the kernel is compiled as usual).

Writing is atomic: the file is written to a temporary name in the same directory and renamed
over the old one (an interrupted ``relay tune`` leaves the previous database intact), under
an exclusive lock (``records.json.lock``) so that two tuning runs merge their records. Reading
checks everything — JSON, format, target, digest, field types — and a file that fails is a
:class:`TuningDatabaseError` naming it: a damaged database is never half-used.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from backends.tvm.target import Target
from semantics.errors import RelayArgumentTypeError, RelayRuntimeError

__all__ = ["FORMAT", "RECORDS", "TuningDatabase", "TuningDatabaseError", "TuningRecord",
           "default_directory", "open_tuning", "relay_key", "target_directory"]

FORMAT = "relay-tuning/1"
RECORDS = "records.json"


class TuningDatabaseError(RelayRuntimeError):
    """A tuning database that does not exist, cannot be read, or is damaged."""


@dataclass
class TuningRecord:
    """The outcome of tuning one workload (see the module docstring for the fields)."""

    workload_hash: str
    workload: str
    relay_key: str
    ops: list[str]
    trace: Any
    ours_seconds: float
    tuned_seconds: float
    trials: int
    won: bool
    flops: int = 0
    tuned_at: str = ""
    _module: Any = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        del out["_module"]
        return out

    @staticmethod
    def from_json(doc: Any, where: str) -> TuningRecord:
        """A record from its JSON object.

        Raises:
            TuningDatabaseError: a missing field or one of the wrong type.
        """
        kinds: dict[str, tuple[type, ...]] = {
            "workload_hash": (str,), "workload": (str,), "relay_key": (str,), "ops": (list,),
            "trace": (list,), "ours_seconds": (int, float), "tuned_seconds": (int, float),
            "trials": (int,), "won": (bool,), "flops": (int,), "tuned_at": (str,)}
        if not isinstance(doc, dict):
            raise TuningDatabaseError(f"{where}: a record is not a JSON object")
        for name, kind in kinds.items():
            value = doc.get(name)
            if not isinstance(value, kind) or (kind != (bool,) and isinstance(value, bool)):
                raise TuningDatabaseError(f"{where}: a record's {name!r} is missing or not "
                                          f"{' or '.join(k.__name__ for k in kind)}")
        return TuningRecord(**{name: doc[name] for name in kinds})

    def module(self) -> Any:
        """The workload as a TVM ``IRModule`` (parsed once)."""
        if self._module is None:
            import tvm

            self._module = tvm.ir.load_json(self.workload)
        return self._module

    @property
    def speedup(self) -> float:
        """Our time over the tuned one (> 1: the tuned kernel is faster)."""
        return self.ours_seconds / self.tuned_seconds if self.tuned_seconds > 0 else 0.0


def default_directory() -> Path:
    """``$RELAY_TUNING_DIR``, else ``~/.cache/relay-ref/tuning``."""
    env = os.environ.get("RELAY_TUNING_DIR", "").strip()
    return Path(env) if env else Path.home() / ".cache" / "relay-ref" / "tuning"


def target_directory(root: str | os.PathLike[str], target: Target) -> Path:
    """The sub-directory of a database for one target (``<mcpu>-<lanes>lanes-<digest>``)."""
    digest = hashlib.sha256(target.key().encode()).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in target.mcpu)
    return Path(root) / f"{safe}-{target.lanes}lanes-{digest}"


def relay_key(func: Any, arg_types: Sequence[Any]) -> str:
    """A Relay-level key of a kernel: its primitive function's structural hash and argument
    types (cheap: no lowering)."""
    from semantics.structural.hashing import structural_hash

    types = [repr(t) for t in arg_types]
    text = json.dumps([structural_hash(func), types])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _digest(records: list[Any]) -> str:
    return hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()


class TuningDatabase:
    """The records of one target in a tuning database directory (see the module docstring).

    Args:
        root: the database directory (the parent of the per-target sub-directories).
        target: the target whose records these are.
    Attributes:
        path: ``records.json`` of the target.
        records: workload hash -> :class:`TuningRecord`.
    """

    def __init__(self, root: str | os.PathLike[str], target: Target) -> None:
        self.root = Path(root)
        self.target = target
        self.path = target_directory(root, target) / RECORDS
        self.records: dict[str, TuningRecord] = {}
        self._by_relay: dict[str, TuningRecord] = {}

    # -- reading -------------------------------------------------------------------------------
    @staticmethod
    def open(root: str | os.PathLike[str], target: Target) -> TuningDatabase:
        """The database of ``target`` in ``root``, read and checked.

        Raises:
            TuningDatabaseError: ``root`` is not a directory, holds no records for the
                target (the message names the targets it holds), or the file is damaged.
        """
        db = TuningDatabase(root, target)
        if not db.root.is_dir():
            raise TuningDatabaseError(f"tuning database {db.root} does not exist (or is not a "
                                      f"directory); make one with `relay tune FILE --db "
                                      f"{db.root}`")
        if not db.path.exists():
            held = sorted(p.name for p in db.root.iterdir() if (p / RECORDS).is_file())
            raise TuningDatabaseError(
                f"tuning database {db.root} has no records for target {target} (expected "
                f"{db.path.parent.name}/{RECORDS}; it holds "
                f"{', '.join(held) if held else 'no target'})")
        db.load()
        return db

    def load(self) -> None:
        """Read ``records.json`` (a missing file: no records).

        Raises:
            TuningDatabaseError: the file is unreadable, not JSON, of another format or
                target, fails its digest, or has a malformed record.
        """
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            self._set([])
            return
        except (OSError, UnicodeDecodeError) as exc:
            raise TuningDatabaseError(f"cannot read tuning database {self.path}: {exc}") \
                from None
        self._set(self._parse(text))

    def _parse(self, text: str) -> list[TuningRecord]:
        where = str(self.path)
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise TuningDatabaseError(f"tuning database {where} is damaged: not JSON ({exc})") \
                from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise TuningDatabaseError(f"tuning database {where} is damaged or of another "
                                      f"format (expected \"format\": \"{FORMAT}\")")
        if doc.get("target") != self.target.key():
            raise TuningDatabaseError(f"tuning database {where} holds records of another "
                                      f"target than {self.target}")
        records = doc.get("records")
        if not isinstance(records, list) or doc.get("sha256") != _digest(records):
            raise TuningDatabaseError(f"tuning database {where} is damaged: its records do "
                                      f"not match their SHA-256 (edited or truncated)")
        return [TuningRecord.from_json(r, where) for r in records]

    def _set(self, records: Sequence[TuningRecord]) -> None:
        self.records = {r.workload_hash: r for r in records}
        self._by_relay = {r.relay_key: r for r in records}

    def by_relay_key(self, key: str) -> TuningRecord | None:
        """The record whose Relay-level key is ``key`` (None: none)."""
        return self._by_relay.get(key)

    def winners(self) -> list[TuningRecord]:
        """The records whose tuned kernel beat ours."""
        return [r for r in self.records.values() if r.won]

    # -- writing -------------------------------------------------------------------------------
    def update(self, records: Sequence[TuningRecord]) -> None:
        """Merge ``records`` into the file (one per workload: the new one replaces an old
        one) and write it atomically, under the database's lock.

        Raises:
            TuningDatabaseError: the directory cannot be written, or the file on disk is
                damaged (it is not overwritten: the user decides).
        """
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(self.path.with_name(RECORDS + ".lock")):
                self.load()
                merged = dict(self.records)
                for r in records:
                    merged[r.workload_hash] = r
                self._write(list(merged.values()))
                self._set(list(merged.values()))
        except OSError as exc:
            raise TuningDatabaseError(f"cannot write tuning database {self.path}: {exc}") \
                from None

    def _write(self, records: list[TuningRecord]) -> None:
        docs = [r.to_json() for r in sorted(records, key=lambda r: r.workload_hash)]
        doc = {"format": FORMAT, "target": self.target.key(), "sha256": _digest(docs),
               "records": docs}
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".records-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (created) for the block (none without
    ``fcntl``)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(path, "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def open_tuning(tuning: Any, target: Target) -> TuningDatabase | None:
    """What ``build(..., tuning=)`` accepts, read for ``target``: None (no tuning), a
    directory (``str`` or path) or a :class:`TuningDatabase` (re-read for ``target`` when it
    was opened for another one).

    Raises:
        RelayArgumentTypeError: ``tuning`` is of another type.
        TuningDatabaseError: see :meth:`TuningDatabase.open`.
    """
    if tuning is None:
        return None
    if isinstance(tuning, TuningDatabase):
        return tuning if tuning.target == target else TuningDatabase.open(tuning.root, target)
    if isinstance(tuning, (str, os.PathLike)) and not isinstance(tuning, bytes):
        return TuningDatabase.open(os.fspath(tuning), target)
    raise RelayArgumentTypeError(f"tuning must be the directory of a tuning database (made by "
                                 f"`relay tune`) or None, not {type(tuning).__name__}")

