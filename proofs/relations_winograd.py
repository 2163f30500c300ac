"""Relation soundness of the Winograd convolution pair (``semantics/ops/winograd.py``): their
specifications, written from the algorithm's definition, and their :class:`RelationCase` s
(added to :data:`proofs.relations.CASES`)."""

from __future__ import annotations

from typing import Any

from proofs.relcheck import AND, Config, RelationCase, Shapes


def _pads(v: Any) -> tuple[int, int, int, int]:
    v = tuple(v)
    if len(v) == 1:
        return (v[0], v[0], v[0], v[0])
    if len(v) == 2:
        return (v[0], v[1], v[0], v[1])
    return (v[0], v[1], v[2], v[3])


def _window(size: Any, k: Any, lo: int, hi: int) -> tuple[Any, Any]:
    """A stride-1 window of ``k`` over a padded axis: (defined, predicate on the count)."""
    extent = size + lo + hi
    return AND(k >= 1, k <= extent), lambda o: o == extent - k + 1


def C(attrs: dict[str, Any], *ranks: int, symbolic: bool = True,
      ties: tuple[tuple[int, int, int, int], ...] = ()) -> Config:
    return Config(attrs, tuple(ranks), symbolic, None, ties)


def s_winograd_weight_transform(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    """OIHW kernel (O, I, r, r) to (a, a, O, I), a = tile_size + r - 1 (at most 8)."""
    o, i, kh, kw = s[0]
    alpha = at["tile_size"] + kh - 1
    return AND(kh == kw, kh >= 1, alpha <= 8), [[alpha, alpha, o, i]]


def s_winograd(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    """A stride-1 convolution of NCHW data by the kernel r = a - tile_size + 1 whose transform
    is the (a, a, O, I) weight: each spatial extent the window count."""
    n, c, h, w = s[0]
    a1, a2, o, i = s[1]
    r = a1 - at["tile_size"] + 1
    pt, pl, pb, pr = _pads(at["padding"])
    okh, oh = _window(h, r, pt, pb)
    okw, ow = _window(w, r, pl, pr)
    ok = AND(a1 == a2, c == i, r >= 1, a1 <= 8, okh, okw)
    return ok, [[n, o, oh, ow]]


WINOGRAD_CASES: tuple[RelationCase, ...] = (
    RelationCase("Conv2DWinogradWeightTransform", "nn.contrib_conv2d_winograd_weight_transform",
                 s_winograd_weight_transform,
                 (C({"tile_size": 2}, 4, symbolic=False), C({"tile_size": 1}, 4),
                  C({"tile_size": 4}, 4, symbolic=False))),
    RelationCase("Conv2DWinograd", "nn.contrib_conv2d_winograd_without_weight_transform",
                 s_winograd,
                 (C({"tile_size": 2, "padding": (1, 1)}, 4, 4, symbolic=False,
                    ties=((0, 1, 1, 3),)),
                  C({"tile_size": 1, "padding": (0, 1, 1, 0)}, 4, 4, ties=((0, 1, 1, 3),)),
                  C({"tile_size": 2}, 4, 4, symbolic=False)),
                 max_instances=200),
)
