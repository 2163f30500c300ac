"""A conforming external implementation: our interpreter behind the conformance protocol.

Run the kit against it::

    relay conformance --impl "python examples/external/good_impl.py"

It reads one JSON request per line on standard input and answers each with one
JSON line on standard output (the protocol is described in docs/conformance.md
and conformance/external.py). A student's implementation replaces the body of
``answer`` with its own parser and evaluator, keeping the loop.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from conformance.external import handle_request  # noqa: E402


def answer(line: str) -> str:
    """One response line for one request line."""
    return handle_request(line)


def main() -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        sys.stdout.write(answer(line) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
