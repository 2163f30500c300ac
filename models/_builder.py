"""A small builder for the models' Relay text: weights become named parameters of ``@main``.

A :class:`Net` collects the body of ``@main`` in graph form (``%k = op(...);`` bindings, each a
named intermediate) and the weights it creates, drawn from one seeded generator in creation
order, so ``models.get(name, seed=s)`` is deterministic. Initializations: He-normal for
convolutions, uniform ``±1/sqrt(fan_in)`` for dense layers and recurrent gates (PyTorch's
default), batch-norm statistics near the identity. Every weight is ``float32``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def shape_text(shape: tuple[int, ...]) -> str:
    """``(a, b)`` — with the trailing comma Relay needs for a rank-1 shape: ``(a)`` is a dim."""
    if len(shape) == 1:
        return f"({shape[0]})"
    return "(" + ", ".join(str(d) for d in shape) + ")"


def tensor_type(shape: tuple[int, ...], dtype: str = "float32") -> str:
    """``Tensor[shape, dtype]``."""
    return f"Tensor[{shape_text(shape)}, {dtype}]"


def ints(values: tuple[int, ...] | list[int]) -> str:
    """An attribute list of integers: ``[1, 2]``."""
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


@dataclass
class Net:
    """The weights and the ``@main`` body of one model under construction."""

    seed: int
    params: dict[str, np.ndarray] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    count: int = 0

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    # --- weights ----------------------------------------------------------------------------

    def weight(self, name: str, array: np.ndarray) -> str:
        """Register ``array`` as the parameter ``%name``; returns ``%name``."""
        if name in self.params:
            raise ValueError(f"parameter {name} defined twice")
        self.params[name] = np.ascontiguousarray(array, dtype=np.float32)
        return f"%{name}"

    def normal(self, name: str, shape: tuple[int, ...], std: float) -> str:
        draw = self.rng.standard_normal(shape, dtype=np.float32)
        return self.weight(name, draw * np.float32(std))

    def uniform(self, name: str, shape: tuple[int, ...], bound: float) -> str:
        return self.weight(name, self.rng.uniform(-bound, bound, shape).astype(np.float32))

    # --- bindings ---------------------------------------------------------------------------

    def let(self, expr: str) -> str:
        """Bind ``expr`` to a fresh graph variable in ``@main``'s body; returns its name."""
        name = f"%{self.count}"
        self.count += 1
        self.lines.append(f"  {name} = {expr};")
        return name

    # --- layers (each returns the name holding its result) ----------------------------------

    def conv2d(self, name: str, x: str, cin: int, cout: int, k: int, stride: int = 1,
               pad: int = 0, groups: int = 1, bias: bool = False) -> str:
        fan_in = (cin // groups) * k * k
        w = self.normal(f"{name}_weight", (cout, cin // groups, k, k), (2.0 / fan_in) ** 0.5)
        y = self.let(f"nn.conv2d({x}, {w}, strides={ints([stride, stride])}, "
                     f"padding={ints([pad] * 4)}, groups={groups}, channels={cout}, "
                     f"kernel_size={ints([k, k])})")
        if bias:
            b = self.uniform(f"{name}_bias", (cout,), 1.0 / fan_in ** 0.5)
            y = self.let(f"nn.bias_add({y}, {b})")
        return y

    def batch_norm(self, name: str, x: str, c: int) -> str:
        gamma = self.weight(f"{name}_gamma",
                            1.0 + 0.1 * self.rng.standard_normal(c, dtype=np.float32))
        beta = self.normal(f"{name}_beta", (c,), 0.1)
        mean = self.normal(f"{name}_moving_mean", (c,), 0.1)
        var = self.weight(f"{name}_moving_var", self.rng.uniform(0.5, 1.5, c))
        t = self.let(f"nn.batch_norm({x}, {gamma}, {beta}, {mean}, {var}, epsilon=1e-05f)")
        return self.let(f"{t}.0")

    def dense(self, name: str, x: str, fan_in: int, units: int, bias: bool = True) -> str:
        bound = 1.0 / fan_in ** 0.5
        w = self.uniform(f"{name}_weight", (units, fan_in), bound)
        y = self.let(f"nn.dense({x}, {w}, units={units})")
        if bias:
            b = self.uniform(f"{name}_bias", (units,), bound)
            y = self.let(f"nn.bias_add({y}, {b})")
        return y

    def relu(self, x: str) -> str:
        return self.let(f"nn.relu({x})")

    def max_pool(self, x: str, size: int, stride: int, pad: int = 0) -> str:
        return self.let(f"nn.max_pool2d({x}, pool_size={ints([size, size])}, "
                        f"strides={ints([stride, stride])}, padding={ints([pad] * 4)})")

    def main(self, inputs: list[tuple[str, str]], out: str, out_type: str) -> str:
        """The text of ``@main`` (data inputs first, then every weight in creation order)."""
        ps = [f"%{n}: {t}" for n, t in inputs]
        ps += [f"%{n}: {tensor_type(a.shape)}" for n, a in self.params.items()]
        body = "\n".join(self.lines)
        sig = ",\n          ".join(ps)
        return f"def @main({sig}) -> {out_type} {{\n{body}\n  {out}\n}}\n"
