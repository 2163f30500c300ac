"""Misbehaving implementations of the conformance protocol, one per mode (test fixtures).

Usage: ``python misbehaving.py MODE [PIDFILE]``. Modes that start a helper child
process write its pid to ``PIDFILE``, so a test can check that the kit killed
the implementation's whole process group. Modes ``stderr_flood`` and ``slow``
answer correctly (with our interpreter) and must pass.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))


def _spawn_child(pidfile: str | None, *, ignore_term: bool = False) -> None:
    """A grandchild that sleeps long, inherits stdout, and (optionally) ignores SIGTERM."""
    code = "import signal, time\n"
    if ignore_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "time.sleep(600)\n"
    child = subprocess.Popen([sys.executable, "-c", code])
    if pidfile:
        with open(pidfile + ".tmp", "w") as fh:
            fh.write(str(child.pid))
        os.replace(pidfile + ".tmp", pidfile)


def _answer_correctly(line: str) -> str:
    sys.path.insert(0, ROOT)
    from conformance.external import handle_request

    return handle_request(line)


def _serve(answer: Callable[[str], str]) -> None:
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(answer(line) + "\n")
            sys.stdout.flush()


def hang(pidfile: str | None) -> None:
    """Reads requests, never answers; its child keeps running too."""
    _spawn_child(pidfile)
    sys.stdin.readline()
    time.sleep(600)


def stubborn(pidfile: str | None) -> None:
    """Like ``hang``, but it and its child ignore SIGTERM (only SIGKILL stops them)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _spawn_child(pidfile, ignore_term=True)
    sys.stdin.readline()
    time.sleep(600)


def exit_at_once(pidfile: str | None) -> None:
    """Exits with status 0 before reading anything."""


def crash(pidfile: str | None) -> None:
    """Reads a request, complains on stderr and exits with status 3."""
    sys.stdin.readline()
    sys.stderr.write("Traceback (most recent call last):\nZeroDivisionError: student bug\n")
    sys.exit(3)


def orphan(pidfile: str | None) -> None:
    """Forks a child that keeps stdout open, then exits without answering."""
    _spawn_child(pidfile)
    sys.stdin.readline()
    os._exit(0)


def garbage(pidfile: str | None) -> None:
    """Answers every request with text that is not JSON."""
    _serve(lambda line: "hello, grader")


def bad_utf8(pidfile: str | None) -> None:
    """Answers with bytes that are not UTF-8."""
    for _ in sys.stdin:
        sys.stdout.buffer.write(b'{"id": 1, "value": "\xff\xfe"}\n')
        sys.stdout.flush()


def endless(pidfile: str | None) -> None:
    """Writes one line that never ends."""
    sys.stdin.readline()
    chunk = b"x" * 65536
    while True:
        sys.stdout.buffer.write(chunk)


def wrong_id(pidfile: str | None) -> None:
    """Answers under the wrong request id (the request's id + 100)."""
    _serve(lambda line: json.dumps({"id": json.loads(line)["id"] + 100,
                                    "value": {"tuple": []}}))


def truncated(pidfile: str | None) -> None:
    """Writes half an answer (with a newline), then waits for the next request."""
    _serve(lambda line: '{"id": 1,')


def truncated_eof(pidfile: str | None) -> None:
    """Writes half an answer without a newline and exits."""
    sys.stdin.readline()
    sys.stdout.write('{"id": 1, "val')
    sys.stdout.flush()


def chatty(pidfile: str | None) -> None:
    """Prints blank lines without end (the kit must not queue them without bound)."""
    sys.stdin.readline()
    while True:
        sys.stdout.write("\n" * 4096)


def flaky(pidfile: str | None) -> None:
    """Correct, except that every request crashes it with probability 1/2."""
    import random

    def answer(line: str) -> str:
        if random.random() < 0.5:
            os._exit(7)
        return _answer_correctly(line)
    _serve(answer)


def crash_on_multiply(pidfile: str | None) -> None:
    """Correct, except that it dies (status 5) on any program that calls ``multiply``."""
    def answer(line: str) -> str:
        if "multiply(" in json.loads(line)["program"]:
            sys.stderr.write("panic: multiply not implemented\n")
            sys.stderr.flush()
            os._exit(5)
        return _answer_correctly(line)
    _serve(answer)


def stderr_flood(pidfile: str | None) -> None:
    """Writes 4 MiB to stderr before every answer (more than a pipe holds), then answers
    correctly: the kit must keep draining stderr."""
    def answer(line: str) -> str:
        for _ in range(64):
            sys.stderr.write("w" * 65535 + "\n")
        sys.stderr.flush()
        return _answer_correctly(line)
    _serve(answer)


def slow(pidfile: str | None) -> None:
    """Correct, but takes 0.3 s per request (the timeout is per request, not per session)."""
    def answer(line: str) -> str:
        time.sleep(0.3)
        return _answer_correctly(line)
    _serve(answer)


MODES = {f.__name__: f for f in (hang, stubborn, exit_at_once, crash, orphan, garbage,
                                  bad_utf8, endless, wrong_id, truncated, truncated_eof,
                                  chatty, flaky, crash_on_multiply, stderr_flood, slow)}

if __name__ == "__main__":
    MODES[sys.argv[1]](sys.argv[2] if len(sys.argv) > 2 else None)
