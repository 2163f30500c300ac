"""User-facing errors (with source spans) and the internal-error type.

``RelayError`` is the base of every error a user can provoke: malformed text
(:class:`ParseError`), ill-typed programs (:class:`RelayTypeError`) and
failures while running (:class:`RelayRuntimeError`). Each carries an optional
:class:`~semantics.span.Span` and a stable ``code``; ``str(err)`` reads::

    file:line:col: error: message
        the source line
        ^^^^

:class:`InternalError` is deliberately *not* a ``RelayError``: it means "this
cannot happen for valid input", so a soundness bug never passes for a user
error.

Message prefixes are stable (tests match on them); the helpers at the end of
this module are the one place they are spelled.
"""

from __future__ import annotations

from semantics.span import Span


class RelayError(Exception):
    """Base of every user-facing error. ``span`` may be None when unknown."""

    kind = "error"

    def __init__(self, message: str, span: Span | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.span = span
        self.code = code

    def with_span(self, span: Span | None) -> RelayError:
        """Attach ``span`` if this error has none yet; returns self."""
        if self.span is None and span is not None:
            self.span = span
        return self

    def __str__(self) -> str:
        span = self.span
        if span is None:
            return f"error: {self.message}"
        head = f"{span.source}:{span.line}:{span.column}: error: {self.message}"
        line = span.text.line_text(span.line) if span.text is not None else ""
        if not line:
            return head
        width = (span.end_column - span.column) if span.end_line == span.line else 1
        width = max(1, min(width, max(1, len(line) - span.column + 1)))
        caret = " " * (span.column - 1) + "^" * width
        return f"{head}\n    {line}\n    {caret}"

    def __reduce__(self):
        return (type(self), (self.message, self.span, self.code))


class ParseError(RelayError):
    """Malformed program text (lexing, parsing, name resolution)."""


class RelayTypeError(RelayError):
    """An ill-typed or ill-kinded program, a bad operator attribute, or a failed relation."""


class RelayRuntimeError(RelayError):
    """A failure while evaluating a program: a trap in the sense of the Wasm spec."""


class RelayArgumentTypeError(RelayTypeError, TypeError):
    """An argument of a Python API function of the wrong kind (``None`` for a program, a
    float for an opt level, a list for a parameter dict). Also a ``TypeError``: Python's
    category is kept, so ``except TypeError`` and ``except RelayError`` both catch it."""


class RelayArgumentValueError(RelayTypeError, ValueError):
    """An argument of a Python API function of the right kind but a bad value (an unknown
    mode, target, model or obligation name; a negative count). Also a ``ValueError``."""


class InternalError(Exception):
    """A broken invariant inside the implementation (never caused by valid user input)."""


# --- message registry: stable prefixes ------------------------------------------------------

def type_mismatch(expected: str, found: str, context: str = "") -> str:
    where = f" in {context}" if context else ""
    return f"type mismatch{where}: expected {expected}, found {found}"


def unbound_variable(name: str) -> str:
    return f"unbound variable {name}"


def undefined_global(name: str) -> str:
    return f"undefined global {name}"


def non_exhaustive_match(missing: str = "") -> str:
    return "non-exhaustive match" + (f": no clause for {missing}" if missing else "")


def relation_failed(relation: str, types: str, why: str) -> str:
    return f"relation {relation} failed for {types}: {why}"


def not_a_function(callee: str) -> str:
    return f"cannot call a value that is not a function: {callee}"


def wrong_arity(callee: str, expected: int, got: int) -> str:
    return f"wrong number of arguments: {callee} expects {expected}, got {got}"
