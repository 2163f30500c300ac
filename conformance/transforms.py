"""Named transforms for ``relay conformance --pass NAME``.

A transform maps an ``IRModule`` to an equivalent ``IRModule`` (a pass or a
pipeline) or to a callable running ``main`` (a backend). Register one with
``@register_transform("name", doc=...)``; ``relay conformance --pass name``
then checks it against the oracle with generated programs
(:func:`conformance.assert_equivalent`). Later issues register their passes
(``to_anf``, ``fold_constant``, ``fuse_ops``, ...) and backends here.

Built in:

* ``identity`` — returns the module unchanged (checks the harness itself);
* ``print_parse`` — ``parse(pretty(m))``: the text format round trip must
  preserve meaning, not only structure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from semantics.module import IRModule

__all__ = ["Transform", "register_transform", "get_transform", "list_transforms"]


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
