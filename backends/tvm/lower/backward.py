"""Operators without a compiled kernel yet: the backward operators of the gradient rules
(``grad_ops`` family).

They are declared here, each with its reason, so the lowering table stays complete; the
executors run them through their numpy references (``backends.tvm.fallback``), which is exact
and tested against the oracle like every other fallback. Compiled kernels for them belong to
the speed work (issue 16): gradient programs are not among the paper's inference workloads.
(The importers' ``nn.lrn`` is compiled: :mod:`backends.tvm.lower.nn`.)
"""

from __future__ import annotations

from backends.tvm.lower.base import no_lowering

_REASON = ("a backward operator of the gradient rules, not yet compiled: it runs through its "
           "numpy reference (exact)")

for _op in ("nn.conv2d_transpose", "nn.conv2d_backward_weight", "nn.max_pool2d_grad",
            "nn.max_pool2d_pick", "nn.avg_pool2d_grad"):
    no_lowering(_op, _REASON)
