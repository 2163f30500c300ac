"""Named transforms for ``relay conformance --pass NAME``.

A transform maps an ``IRModule`` to an equivalent ``IRModule`` (a pass or a
pipeline) or to a callable running ``main`` (a backend). Register one with
``@register_transform("name", doc=...)``; ``relay conformance --pass name``
then checks it against the oracle with generated programs
(:func:`conformance.assert_equivalent`). Later issues register their passes
(``to_anf``, ``fold_constant``, ``fuse_ops``, ...) and backends here.

Any callable ``IRModule -> IRModule`` loads by name too (:func:`load_transform`):
``relay conformance --pass MODULE:FUNCTION`` (an importable module, e.g.
``student42.simplify:simplify``) or ``--pass path/to/file.py:FUNCTION`` (a file, loaded
under a private module name; its directory is put first on ``sys.path`` while it loads,
so it may import its neighbours).

Built in:

* ``identity`` — returns the module unchanged (checks the harness itself);
* ``print_parse`` — ``parse(pretty(m))``: the text format round trip must
  preserve meaning, not only structure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from semantics.errors import RelayError
from semantics.module import IRModule

__all__ = ["Transform", "register_transform", "get_transform", "list_transforms",
           "load_transform", "TransformLoadError"]


@dataclass(frozen=True)
class Transform:
    """A registered transform: its name, the function and a one-line description."""

    name: str
    fn: Callable[[IRModule], Any]
    doc: str = ""

    def __call__(self, module: IRModule) -> Any:
        return self.fn(module)


_TRANSFORMS: dict[str, Transform] = {}


def register_transform(name: str, doc: str = "") -> Callable[[Callable[[IRModule], Any]],
                                                              Callable[[IRModule], Any]]:
    """Decorator registering ``fn`` under ``name`` (a duplicate name is a ``ValueError``)."""

    def deco(fn: Callable[[IRModule], Any]) -> Callable[[IRModule], Any]:
        if name in _TRANSFORMS:
            raise ValueError(f"transform {name} registered twice")
        _TRANSFORMS[name] = Transform(name, fn, doc or (fn.__doc__ or "").strip().split("\n")[0])
        return fn

    return deco


def get_transform(name: str) -> Transform:
    """The transform called ``name``; ``KeyError`` listing the known names otherwise."""
    try:
        return _TRANSFORMS[name]
    except KeyError:
        known = ", ".join(sorted(_TRANSFORMS)) or "none"
        raise KeyError(f"unknown transform {name!r} (known: {known})") from None


def list_transforms() -> list[Transform]:
    return [_TRANSFORMS[k] for k in sorted(_TRANSFORMS)]


@register_transform("identity", "the module itself (checks the harness)")
def identity(module: IRModule) -> IRModule:
    return module


@register_transform("print_parse", "parse(pretty(m)): the text round trip preserves meaning")
def print_parse(module: IRModule) -> IRModule:
    from semantics import parse, pretty

    return parse(pretty(module))


class TransformLoadError(RelayError):
    """``--pass MODULE:FUNCTION`` or ``--pass FILE.py:FUNCTION`` could not be loaded."""


def load_transform(spec: str) -> Transform:
    """The callable named by ``spec``: ``MODULE:FUNCTION`` or ``path/to/file.py:FUNCTION``.

    ``FUNCTION`` may be dotted (``Class.method``, ``namespace.fn``). Raises
    :class:`TransformLoadError` (with what went wrong, including an exception raised
    while the module was imported, and its traceback) when it cannot be loaded or is not
    callable.
    """
    import importlib
    import importlib.util
    import os
    import sys
    import traceback

    where, sep, attr = spec.rpartition(":")
    if not sep or not where or not attr:
        raise TransformLoadError(f"--pass {spec!r}: expected a registered name, "
                                 "MODULE:FUNCTION or path/to/file.py:FUNCTION")
    try:
        if where.endswith(".py") or os.sep in where or "/" in where:
            path = os.path.abspath(where)
            if not os.path.isfile(path):
                raise TransformLoadError(f"--pass {spec!r}: no such file {where}")
            name = "relay_user_pass_" + "".join(c if c.isalnum() else "_" for c in path)
            spec_ = importlib.util.spec_from_file_location(name, path)
            if spec_ is None or spec_.loader is None:
                raise TransformLoadError(f"--pass {spec!r}: cannot load {where} as Python")
            module = importlib.util.module_from_spec(spec_)
            sys.modules[name] = module
            folder = os.path.dirname(path)
            sys.path.insert(0, folder)
            try:
                spec_.loader.exec_module(module)
            finally:
                if sys.path and sys.path[0] == folder:
                    sys.path.pop(0)
        else:
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(where)
    except TransformLoadError:
        raise
    except ModuleNotFoundError as err:
        raise TransformLoadError(f"--pass {spec!r}: no module named {err.name!r} (run from "
                                 "the directory that holds it, or give a file path)") from None
    except BaseException as err:  # noqa: BLE001 - the user's module failed while importing
        if isinstance(err, KeyboardInterrupt):
            raise
        tb = "".join(traceback.format_exception(type(err), err, err.__traceback__)).rstrip()
        raise TransformLoadError(f"--pass {spec!r}: importing {where} raised "
                                 f"{type(err).__name__}: {err}\n{tb}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            public = sorted(n for n in dir(module) if not n.startswith("_")
                            and callable(getattr(module, n)))
            raise TransformLoadError(f"--pass {spec!r}: {where} has no attribute {attr!r} "
                                     f"(callables there: {', '.join(public) or 'none'})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise TransformLoadError(f"--pass {spec!r}: {attr} is a {type(obj).__name__}, not a "
                                 "callable IRModule -> IRModule")
    doc = (getattr(obj, "__doc__", None) or "").strip().split("\n")[0]
    return Transform(spec, obj, doc)
