"""Importing a saved ``aot.py`` (the Python module the AoT executor generated for a program,
written by :meth:`~backends.tvm.exec.executable.Executable.save`) instead of generating it again.

Any failure to read or import it — a missing or unreadable file, text that is not UTF-8, a
module that does not compile or fails while it runs — is a ``RelayRuntimeError`` naming the
file, never a traceback; whether the module fits the saved program is checked by the caller.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from semantics.errors import RelayRuntimeError

__all__ = ["import_saved_program"]


def import_saved_program(source_path: str) -> tuple[str, dict[str, Any]]:
    """The source text of the saved AoT module ``source_path`` and its namespace, imported
    as ``relay_aot_program``."""
    spec = importlib.util.spec_from_file_location("relay_aot_program", source_path)
    if spec is None or spec.loader is None:
        raise RelayRuntimeError(f"cannot import the AoT module {source_path}")
    module = importlib.util.module_from_spec(spec)
    try:
        with open(source_path, encoding="utf-8") as f:
            source = f.read()
        spec.loader.exec_module(module)
    except (OSError, ValueError, SyntaxError, RecursionError, MemoryError, ImportError,
            NameError, AttributeError, TypeError) as exc:
        # UnicodeDecodeError is a ValueError: a file that is not UTF-8 text
        raise RelayRuntimeError(f"cannot import the AoT module {source_path}: "
                                f"{type(exc).__name__}: {exc}") from None
    return source, vars(module)
