"""The ``relay`` command line (docs/architecture.md#cli).

Each sub-command lives in ``relay/commands/<name>.py`` and exposes
``register(subparsers)`` (adds its parser, with ``func`` set to a callable
``(args) -> int``). A sub-command appears only once its module exists, so a
command that does not work yet does not exist.

User errors (``RelayError``) print their message and exit 1; usage errors
exit 2 (argparse's convention); no traceback is shown for either. The
standard streams are guarded: a file that is not UTF-8 is named with the
offset of its first bad byte (:func:`read_source`); a closed standard input
or output, a full disk or any other failure to read or write them is a
one-line ``error: ...`` and exit 1; output into a pipe whose reader stopped
(``relay ops | head``) ends quietly with 0.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from typing import Any

COMMANDS = ("run", "check", "fmt", "opt", "grad", "pe", "ops", "build", "conformance", "prove",
            "profile", "quantize", "tune")


class StreamError(Exception):
    """Reading standard input or writing standard output (or error) failed: a user error
    (the stream is closed, the disk is full, ...), reported without a traceback."""

    def __init__(self, stream: str, action: str, reason: str):
        super().__init__(f"cannot {action} {stream}: {reason}")
        self.stream = stream


class _GuardedStream:
    """A standard stream whose failures become :class:`StreamError` (``BrokenPipeError``
    passes through: the reader went away). ``None`` (the descriptor was closed when the
    process started) fails on first use."""

    def __init__(self, stream: Any, name: str):
        self._stream = stream
        self._name = name

    def _fail(self, action: str, exc: OSError | None) -> StreamError:
        if exc is None:
            reason = "it is closed"
        elif exc.errno == errno.EBADF:
            reason = "it is closed"
        else:
            reason = exc.strerror or str(exc)
        return StreamError(self._name, action, reason)

    def _call(self, method: str, action: str, *args: Any) -> Any:
        if self._stream is None:
            raise self._fail(action, None)
        try:
            return getattr(self._stream, method)(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise self._fail(action, exc) from None
        except ValueError as exc:   # I/O on a stream that was closed meanwhile
            raise StreamError(self._name, action, str(exc)) from None

    def write(self, text: str) -> int:
        return int(self._call("write", "write to", text))

    def flush(self) -> None:
        if self._stream is not None:
            self._call("flush", "write to")

    def read(self, size: int = -1) -> Any:
        return self._call("read", "read", size)

    @property
    def buffer(self) -> Any:
        if self._stream is None:
            raise self._fail("read", None)
        return _GuardedStream(self._stream.buffer, self._name)

    def fileno(self) -> int:
        if self._stream is None:
            raise self._fail("use", None)
        return int(self._stream.fileno())

    def isatty(self) -> bool:
        return self._stream is not None and bool(self._stream.isatty())

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise self._fail("use", None)
        return getattr(self._stream, name)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relay", description="Relay IR reference implementation")
    parser.add_argument("--version", action="version", version=f"relay {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        module_name = f"relay.commands.{name}"
        if importlib.util.find_spec(module_name) is None:
            continue
        importlib.import_module(module_name).register(sub)
    _register_import(sub)
    return parser


def version() -> str:
    """The installed ``relay-ref`` distribution's version (``pyproject.toml``'s, read from
    the source tree when the package is not installed)."""
    from importlib import metadata

    try:
        return metadata.version("relay-ref")
    except metadata.PackageNotFoundError:
        pass
    import re

    pyproject = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "pyproject.toml")
    try:
        with open(pyproject, encoding="utf-8") as f:
            found = re.search(r'^version\s*=\s*"([^"]+)"', f.read(), re.MULTILINE)
    except OSError:
        found = None
    return found.group(1) if found else "unknown"


# --- `relay import` (the ONNX importer) ------------------------------------------------

def _register_import(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="import an ONNX model as Relay text + .npz parameters")
    p.add_argument("model", help="an .onnx file")
    p.add_argument("-o", "--output", default=None, metavar="OUT.relay",
                   help="the Relay text to write (default: the model's name with .relay); "
                        "the parameters go to the same name with .npz")
    p.add_argument("--freeze-params", action="store_true",
                   help="embed the weights as constants instead of parameters")
    p.set_defaults(func=_import_command)


def _import_command(args: argparse.Namespace) -> int:
    """``relay import MODEL.onnx [-o OUT.relay]``: writes OUT.relay and OUT.npz."""
    import numpy as np

    from frontends.onnx import from_onnx
    from semantics import pretty
    from semantics.errors import RelayError

    try:
        import onnx  # noqa: F401 - the importer needs it
    except ImportError:
        raise RelayError("relay import needs the onnx package (pip install onnx)") from None
    with open(args.model, "rb") as f:
        data = f.read()
    try:
        mod, params = from_onnx(data, freeze_params=args.freeze_params)
    except RelayError:
        raise
    except Exception as exc:  # noqa: BLE001 - a malformed file is a user error
        raise RelayError(f"cannot read {args.model}: {type(exc).__name__}: {exc}") from None
    out = args.output or os.path.splitext(args.model)[0] + ".relay"
    npz = os.path.splitext(out)[0] + ".npz"
    with open(out, "w", encoding="utf-8") as f:
        f.write(pretty(mod))
        f.write("\n")
    np.savez(npz, **params)  # type: ignore[arg-type]  # numpy's stub types **kwds badly
    print(f"wrote {out} ({len(mod['main'].params) - len(params)} input(s)) and {npz} "
          f"({len(params)} parameter(s))")
    return 0


def read_source(path: str) -> str:
    """The text of a program file (``-``: standard input), decoded as UTF-8.

    Raises:
        ParseError: the bytes are not UTF-8 (the message names the file and the offset,
            line and column of the first bad byte).
        StreamError: standard input is closed or cannot be read.
        OSError: the file cannot be opened or read (its ``filename`` is set).
    """
    if path == "-":
        stdin = sys.stdin
        if stdin is None:
            raise StreamError("standard input", "read", "it is closed")
        stream = stdin.buffer if hasattr(stdin, "buffer") else None
        if stream is None:  # a text-only stream (such as a test's StringIO)
            return str(stdin.read())
        try:
            data = stream.read()
        except OSError as exc:
            reason = "it is closed" if exc.errno == errno.EBADF else exc.strerror or str(exc)
            raise StreamError("standard input", "read", reason) from None
        name = "<stdin>"
    else:
        with open(path, "rb") as f:
            data = f.read()
        name = path
    return decode_source(data, name)


def decode_source(data: bytes, name: str) -> str:
    """``data`` decoded as UTF-8.

    Raises:
        ParseError: not UTF-8; the message names ``name``, the byte offset of the first
            bad byte, its line and column, and the byte itself.
    """
    from semantics.errors import ParseError

    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise ParseError(f"{name}: not UTF-8 text: byte 0x{data[start]:02x} at byte offset "
                         f"{start} (line {line}, column {column}) cannot be decoded "
                         f"({exc.reason})") from None


def _silence(fd: int) -> None:
    """Point descriptor ``fd`` at the null device, so the interpreter's last flush of
    pending output cannot fail again (and print its own traceback) at exit."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(null, fd)
    except OSError:
        pass
    finally:
        os.close(null)


def _report(message: str) -> None:
    """Write an error line to standard error, if there is one."""
    try:
        print(message, file=sys.__stderr__ if sys.stderr is None else sys.stderr)
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``relay`` command line.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
    Returns:
        The exit status: 0 success, 1 a user error (a ``RelayError``, a file that cannot
        be read, a standard stream that cannot be used), 2 a usage error (argparse exits
        with 2 through ``SystemExit``), 130 interrupted.
    """
    from semantics.errors import RelayError

    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = _GuardedStream(sys.stdin, "standard input")
    sys.stdout = _GuardedStream(sys.stdout, "standard output")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - nowhere to report; the status tells
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        status = int(args.func(args) or 0)
        sys.stdout.flush()
        return status
    except RelayError as err:
        _report(str(err))
        return 1
    except StreamError as err:
        _report(f"error: {err}")
        if err.stream == "standard output" and saved[1] is not None:
            _silence_stream(saved[1])
        return 1
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        if saved[1] is not None:
            _silence_stream(saved[1])
        return 0
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        _report(f"error: {where}{err.strerror or err}")
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


def _silence_stream(stream: Any) -> None:
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return
    _silence(fd)


if __name__ == "__main__":
    sys.exit(main())
