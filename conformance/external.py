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

The kit side
------------
:class:`ExternalImpl` drives the process and survives any behaviour of it: it
runs in its own process group, which is stopped as a whole (SIGTERM, then
SIGKILL); every request has a deadline (writing included); answers are read as
bytes with a cap on the line length; standard error is drained; and every
failure is an :class:`ExternalError` with a one-line verdict. Its
:meth:`~ExternalImpl.transform` raises :class:`ImplementationAborted` when a
run should stop instead of being shrunk (a timeout, an implementation that
never answers, too many failures). :func:`handle_request` is the other side:
our interpreter answering one request (the example implementations use it).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from conformance.external_values import (
    ExternalError,
    OpaqueFunction,
    decode_value,
    dumps,
    encode_value,
    loads,
)
from interpreter.values import show_value
from semantics.errors import RelayRuntimeError
from semantics.module import IRModule

__all__ = ["encode_value", "decode_value", "ExternalImpl", "ExternalError", "OpaqueFunction",
           "ImplementationAborted", "handle_request"]


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
        if not isinstance(req, dict) or not isinstance(req.get("program"), str):
            raise ExternalError("a request is a JSON object with a string 'program'")
        req_id = req.get("id")
        mod = parse(req["program"])
        if rewrite is not None:
            mod = rewrite(mod)
        args = [decode_value(a) for a in req.get("args", [])]
        value = evaluate_fn(mod, *args, entry=req.get("entry", "main"))
        return dumps({"id": req_id, "value": encode_value(value)})
    except RelayError as err:
        return json.dumps({"id": req_id, "error": type(err).__name__, "message": err.message})
    except (ExternalError, ValueError) as err:
        # A malformed request (ValueError covers JSON syntax errors): say so, keep serving.
        return json.dumps({"id": req_id, "error": "BadRequest", "message": str(err)})


# --- the kit side: driving an external process ------------------------------------------------
#
# A grader runs arbitrary student programs, so everything below assumes the worst: the
# process may hang, never read its input, print garbage or invalid UTF-8, print a line
# without end, flood standard error, exit at once, fork children that keep its pipes open,
# or ignore SIGTERM. The process runs in its own process group (session); every way of
# stopping it signals the whole group (SIGTERM, then SIGKILL after a grace period). No read
# or write blocks without a deadline, no buffer grows without bound, and every failure
# becomes an ExternalError with a one-line verdict.

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longest response line accepted (bytes, without the newline)."""

DEFAULT_MAX_FAILURES = 30
"""Protocol failures (crashes, malformed answers) tolerated while Hypothesis shrinks."""

DEFAULT_STARTUP_TIMEOUT = 5.0
"""Extra seconds the first request after a (re)start may take."""

DEAD_ON_ARRIVAL = 3
"""Protocol failures without a single answer after which shrinking is pointless."""

KILL_GRACE = 1.0          # seconds between SIGTERM and SIGKILL
EXIT_GRACE = 2.0          # seconds a process may take to exit after its stdin closed
EXITED_DRAIN = 0.5        # seconds to wait for a last answer after the process exited
STDERR_TAIL_BYTES = 2048  # how much of standard error a crash verdict quotes
MAX_QUEUED_LINES = 8      # answer lines read ahead of the requests
_POLL = 0.05              # seconds between liveness checks while waiting


class ImplementationAborted(BaseException):
    """Stops a conformance run at once, with the program that caused it.

    A ``BaseException`` on purpose: Hypothesis catches ``Exception`` to shrink a
    failure, and shrinking a *timeout* re-pays the timeout on every step. Raised by
    :meth:`ExternalImpl.transform` on the first timeout; after ``DEAD_ON_ARRIVAL``
    failures when no request was ever answered (the first program is reported); and
    when the protocol failures exceed ``max_failures`` (the latest, usually most
    shrunk, program is reported). ``relay conformance`` turns it into a FAIL report.

    Attributes:
        error: the :class:`ExternalError` with the verdict.
        module: the program (an ``IRModule``) being run.
        inputs: its inputs.
        reason: why the run stopped instead of shrinking.
    """

    def __init__(self, error: ExternalError, module: IRModule, inputs: tuple[Any, ...],
                 reason: str):
        super().__init__(str(error))
        self.error = error
        self.module = module
        self.inputs = inputs
        self.reason = reason

    def report(self) -> str:
        """The failure as text: verdict, reason, program and inputs (never raises)."""
        try:
            from semantics import pretty

            text = pretty(self.module).rstrip()
        except Exception as err:  # noqa: BLE001 - a report must never fail
            text = f"<cannot print: {type(err).__name__}: {err}>"
        params = self.module["main"].params if "main" in self.module else ()
        shown = [f"  %{p.name_hint} = {show_value(v)}"
                 for p, v in zip(params, self.inputs, strict=False)]
        return "\n".join([f"verdict: {self.error}", f"({self.reason})", "",
                          "--- program (Relay text) ---", text, "", "--- inputs ---",
                          *(shown or ["  (none)"])])


def _exit_description(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exit code {code}"


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc_dir = "/proc"
    if not os.path.isdir(proc_dir):
        return True
    for entry in os.listdir(proc_dir):
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc_dir}/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ..." — comm may contain spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def _child_env() -> dict[str, str]:
    """The implementation's environment: ours, with the directory of the Python running the kit
    first on the ``PATH`` — so ``python`` in ``--impl "python impl.py"`` is this (virtual)
    environment's interpreter, with the project importable, even when the environment was not
    activated (``.venv/bin/relay conformance --impl ...``)."""
    env = dict(os.environ)
    bindir = os.path.dirname(sys.executable)
    if bindir:
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return env


class _Process:
    """One run of the implementation: pipes, reader threads and a group kill."""

    def __init__(self, command: str, max_line_bytes: int):
        self.max_line_bytes = max_line_bytes
        self.proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     bufsize=0, start_new_session=True, env=_child_env())
        self.pgid = self.proc.pid           # leader of its own session and group
        # Bounded: an implementation printing lines faster than they are asked for blocks
        # on its own output instead of filling our memory.
        self.messages: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=MAX_QUEUED_LINES)
        self.stopped = threading.Event()
        self.stderr_tail = bytearray()
        self.exited_at: float | None = None
        assert self.proc.stdin is not None and self.proc.stdout is not None
        assert self.proc.stderr is not None
        self.stdin_fd = self.proc.stdin.fileno()
        os.set_blocking(self.stdin_fd, False)
        self.threads = [
            threading.Thread(target=self._pump_stdout, args=(self.proc.stdout.fileno(),),
                             daemon=True),
            threading.Thread(target=self._pump_stderr, args=(self.proc.stderr.fileno(),),
                             daemon=True)]
        for t in self.threads:
            t.start()

    # reader threads: never raise, never buffer more than a bounded amount
    def _put(self, message: tuple[str, Any]) -> bool:
        """Queue a message, waiting while the queue is full; False once the process is
        being stopped (then nobody reads the queue any more)."""
        while not self.stopped.is_set():
            try:
                self.messages.put(message, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    def _pump_stdout(self, fd: int) -> None:
        buf = bytearray()
        scanned = 0
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            while True:
                nl = buf.find(b"\n", scanned)
                if nl < 0:
                    scanned = len(buf)
                    break
                line = bytes(buf[:nl])
                del buf[:nl + 1]
                scanned = 0
                if len(line) > self.max_line_bytes:
                    self._put(("overlong", len(line)))
                    return
                if not self._put(("line", line)):
                    return
            if len(buf) > self.max_line_bytes:
                self._put(("overlong", len(buf)))
                return
        self._put(("eof", bytes(buf[:200]) if buf else b""))

    def _pump_stderr(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.stderr_tail += chunk
            if len(self.stderr_tail) > 2 * STDERR_TAIL_BYTES:
                del self.stderr_tail[:-STDERR_TAIL_BYTES]

    def stderr_text(self) -> str:
        tail = bytes(self.stderr_tail[-STDERR_TAIL_BYTES:]).decode("utf-8", "replace").strip()
        if not tail:
            return ""
        return "; stderr ends with: " + " | ".join(tail.splitlines()[-5:])[-400:]

    def exit_code(self) -> int | None:
        code = self.proc.poll()
        if code is not None and self.exited_at is None:
            self.exited_at = time.monotonic()
        return code

    def write(self, data: bytes, deadline: float) -> str | None:
        """Write everything before ``deadline``; returns None, "timeout" or "closed"."""
        view = memoryview(data)
        poller = select.poll()
        poller.register(self.stdin_fd, select.POLLOUT)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout"
            if not poller.poll(int(min(remaining, _POLL) * 1000) + 1):
                continue
            try:
                n = os.write(self.stdin_fd, view)
            except BlockingIOError:
                continue
            except OSError:
                return "closed"
            view = view[n:]
        return None

    def read(self, deadline: float) -> tuple[str, Any]:
        """The next message of the stdout reader, ``("timeout", None)`` or ``("exit", code)``."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", None
            try:
                return self.messages.get(timeout=min(remaining, _POLL))
            except queue.Empty:
                pass
            code = self.exit_code()
            # The process exited but its stdout is still open (a forked child holds it):
            # give a last answer a moment to arrive, then report the exit.
            if code is not None and self.exited_at is not None and \
                    time.monotonic() - self.exited_at > EXITED_DRAIN:
                return "exit", code

    def kill(self, *, polite: bool) -> None:
        """Stop the process and its whole group: close stdin, (``polite``: wait up to
        EXIT_GRACE for a clean exit,) SIGTERM the group, SIGKILL it after KILL_GRACE."""
        self.stopped.set()
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        if polite:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=EXIT_GRACE)
        for sig, wait in ((signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, KILL_GRACE)):
            self.proc.poll()
            if not _group_alive(self.pgid):
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, sig)
            end = time.monotonic() + wait
            while time.monotonic() < end:
                self.proc.poll()
                if not _group_alive(self.pgid):
                    break
                time.sleep(0.02)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=KILL_GRACE)
        for t in self.threads:
            t.join(timeout=0.5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None and not any(t.is_alive() for t in self.threads):
                with contextlib.suppress(OSError):
                    stream.close()


class ExternalImpl:
    """An external implementation behind the line protocol, as a conformance *transform*.

    ``ExternalImpl(cmd).transform`` maps a module to a callable that sends the
    module's text and the arguments to the process and returns the decoded value
    (or raises ``RelayRuntimeError`` for a trap, :class:`ExternalError` for anything
    else). The process starts on the first request and again after any failure (a
    failed process is killed with its whole process group). Use as a context manager,
    or call :meth:`close`.

    Args:
        command: the shell command starting the implementation.
        timeout: seconds allowed per request (writing it and reading the answer).
        startup_timeout: extra seconds for the first request after the process (re)starts
            (interpreter or JVM start-up, imports).
        max_line_bytes: longest response line accepted.
        max_failures: protocol failures tolerated by :meth:`transform` before it raises
            :class:`ImplementationAborted` (timeouts abort at once).
    """

    def __init__(self, command: str, *, timeout: float = 20.0,
                 startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
                 max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                 max_failures: int = DEFAULT_MAX_FAILURES):
        self.command = command
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self.max_line_bytes = max_line_bytes
        self.max_failures = max_failures
        self.failures = 0
        self.answers = 0
        self._first_failure: tuple[ExternalError, IRModule, tuple[Any, ...]] | None = None
        self._process: _Process | None = None
        self._next_id = 0

    # process management
    def _running(self) -> _Process:
        p = self._process
        if p is not None and p.exit_code() is None:
            return p
        if p is not None:
            p.kill(polite=False)
        self._process = None
        try:
            self._process = _Process(self.command, self.max_line_bytes)
        except OSError as err:     # e.g. out of file descriptors or processes
            raise ExternalError(f"cannot start the implementation: {err}", kind="crash") \
                from None
        return self._process

    def _fail(self, message: str, kind: str) -> ExternalError:
        """Kill the process (its state is unknown now) and build the error."""
        p, self._process = self._process, None
        if p is not None:
            p.kill(polite=False)
        return ExternalError(message, kind=kind)

    def close(self) -> None:
        """Close stdin, let the process exit (EXIT_GRACE), then stop its whole group."""
        p, self._process = self._process, None
        if p is not None:
            p.kill(polite=True)

    def __enter__(self) -> ExternalImpl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _crash(self, p: _Process, req_id: int, event: str) -> ExternalError:
        """The verdict for a process that stopped talking: its exit status and stderr.

        ``event``: ``"stdin"`` (it closed its input), ``"stdout"`` (it closed its output)
        or ``"exit"`` (it exited while a child kept its output open).
        """
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.proc.wait(timeout=EXITED_DRAIN)
        code = p.exit_code()
        if code is None:
            what = "its input" if event == "stdin" else "its output"
            message = f"the implementation closed {what} before answering request {req_id}"
        else:
            status = "exited with exit code 0" if code == 0 else \
                f"crashed with {_exit_description(code)}"
            message = f"the implementation {status} before answering request {req_id}"
        return self._fail(message + p.stderr_text(), "crash")

    def request(self, text: str, args: Sequence[Any], entry: str = "main") -> Any:
        """Send one program; return the decoded value.

        Raises:
            RelayRuntimeError: the implementation reported a trap.
            ExternalError: anything else (its ``kind`` is ``"timeout"``, ``"crash"`` or
                ``"protocol"``; the message is a one-line verdict).
        """
        fresh = self._process is None or self._process.exit_code() is not None
        p = self._running()
        self._next_id += 1
        req_id = self._next_id
        req = {"id": req_id, "program": text, "entry": entry,
               "args": [encode_value(a) for a in args]}
        allowed = self.timeout + (self.startup_timeout if fresh else 0.0)
        deadline = time.monotonic() + allowed
        status = p.write((dumps(req) + "\n").encode("utf-8"), deadline)
        if status == "closed":
            raise self._crash(p, req_id, "stdin")
        if status == "timeout":
            raise self._fail(f"timeout after {allowed:g} s on request {req_id}: the "
                             "implementation does not read its input", "timeout")
        while True:
            kind, payload = p.read(deadline)
            if kind != "line" or payload.strip():
                break                     # blank lines between answers are tolerated
        if kind == "timeout":
            raise self._fail(f"timeout after {allowed:g} s on request {req_id}: no "
                             f"answer{' (start-up included)' if fresh else ''}; an "
                             "implementation must answer each line, and flush, before reading "
                             "the next", "timeout")
        if kind == "exit":
            raise self._crash(p, req_id, "exit")
        if kind == "eof":
            if payload:
                raise self._fail(f"truncated answer to request {req_id}: the output ended in "
                                 f"the middle of a line: {payload[:80]!r}", "protocol")
            raise self._crash(p, req_id, "stdout")
        if kind == "overlong":
            raise self._fail(f"line longer than {self.max_line_bytes} bytes in the answer to "
                             f"request {req_id}", "protocol")
        line: bytes = payload
        try:
            decoded = line.decode("utf-8")
        except UnicodeDecodeError as err:
            bad = line[max(err.start - 16, 0):err.start + 16]
            raise self._fail(f"invalid UTF-8 at byte {err.start} of the answer to request "
                             f"{req_id}: {bad!r}", "protocol") from None
        shown = decoded.strip()[:200]
        try:
            resp = loads(decoded)
        except (ValueError, ExternalError) as err:
            raise self._fail(f"malformed answer to request {req_id} (not JSON: {err}): "
                             f"{shown}", "protocol") from None
        if not isinstance(resp, dict):
            raise self._fail(f"malformed answer to request {req_id} (not a JSON object): "
                             f"{shown}", "protocol")
        if resp.get("id") != req_id:
            raise self._fail(f"answer for the wrong request: expected id {req_id}, got "
                             f"{resp.get('id')!r}: {shown}", "protocol")
        self.answers += 1
        if "error" in resp:
            kind, message = str(resp["error"]), str(resp.get("message", ""))
            if kind == "RelayRuntimeError":
                raise RelayRuntimeError(message)
            raise ExternalError(f"{kind}: {message}", kind="error")
        if "value" not in resp:
            raise self._fail(f"answer to request {req_id} has neither value nor error: "
                             f"{shown}", "protocol")
        try:
            return decode_value(resp["value"])
        except Exception as err:  # noqa: BLE001 - any malformed value is a verdict
            raise ExternalError(f"bad value in the answer to request {req_id}: {err}"[:400],
                                kind="protocol") from None

    def transform(self, module: IRModule) -> Any:
        """The conformance transform: ``module -> callable(*inputs)``.

        The callable raises :class:`ImplementationAborted` on a timeout, after
        ``DEAD_ON_ARRIVAL`` failures when no request was ever answered, and once more than
        ``max_failures`` protocol failures happened (see there).
        """
        from semantics import pretty

        text = pretty(module)

        def run_main(*inputs: Any) -> Any:
            try:
                return self.request(text, inputs)
            except ExternalError as err:
                if err.kind == "error":
                    raise
                self.failures += 1
                if self._first_failure is None:
                    self._first_failure = (err, module, inputs)
                if err.kind == "timeout":
                    raise ImplementationAborted(
                        err, module, inputs, "not shrunk: every smaller attempt could wait the "
                        "full timeout again") from None
                if self.answers == 0 and self.failures >= DEAD_ON_ARRIVAL:
                    first_err, first_module, first_inputs = self._first_failure
                    raise ImplementationAborted(
                        first_err, first_module, first_inputs, "not shrunk: the "
                        f"implementation has not answered any of {self.failures} requests; "
                        "this is the first") from None
                if self.failures > self.max_failures:
                    raise ImplementationAborted(
                        err, module, inputs, f"stopped shrinking after {self.max_failures} "
                        "protocol failures; this is the latest failing program") from None
                raise

        return run_main
