"""Differentiable programs: Hypothesis strategies for checking automatic differentiation.

:func:`differentiable_programs` draws a closed Relay function over float32 tensors of one
shape together with arguments, whose value is a *smooth* function of the arguments (so central
finite differences approximate its derivatives well), and which exercises the constructs the
AD transformation must handle:

* smooth operators: ``add``, ``subtract``, ``multiply``, ``divide`` by a positive denominator
  (``1.5 + b * b``), ``negative``, ``exp`` (of a bounded argument), ``tanh``, ``sigmoid``,
  ``sin``, ``cos``, ``log`` of ``1 + b * b``, ``sum`` / ``mean`` broadcast back onto a tensor
  (a scalar times a tensor: the gradient is summed back), ``nn.dense`` and ``transpose`` (for
  square matrices);
* closures (a let-bound function capturing variables, called twice), tuples and projections,
  ADTs (``Cons``/``Nil`` lists and ``Some`` destructured by ``match``), ``if`` on
  data-independent conditions, bounded recursion (a let-bound loop counting an int32 down),
  references (``ref``, ``:=``, ``!``);
* sharing: a let-bound value used several times (differentiated once, adjoints summed).

The program is generated as Relay text (``Program.text``) and parsed (``Program.function``),
so a counterexample prints as the program that fails. Generation depth is bounded by
``max_depth``; the arguments are drawn from ``[-1, 1]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

__all__ = ["DifferentiableProgram", "differentiable_programs"]

SHAPES: tuple[tuple[int, ...], ...] = ((), (3,), (2, 2), (3, 3))
UNARY = ("tanh", "sigmoid", "sin", "cos", "negative", "exp_bounded", "log1p_sq")
BINARY = ("add", "subtract", "multiply", "divide_pos")
CONSTRUCTS = ("op", "binary", "reduce", "dense", "closure", "tuple", "adt", "option", "if",
              "loop", "ref", "shared")


class DifferentiableProgram:
    """A generated program: its text, the parsed function, the arguments, what it uses.

    (A plain class, so a failing example prints as Relay text with its arguments.)
    """

    __slots__ = ("args", "constructs", "function", "text")

    def __init__(self, text: str, function: Any, args: tuple[np.ndarray, ...],
                 constructs: frozenset[str] = frozenset()):
        self.text = text
        self.function = function
        self.args = args
        self.constructs = constructs

    def __repr__(self) -> str:
        shown = ", ".join(np.array2string(a, precision=4) for a in self.args)
        return f"DifferentiableProgram(\n{self.text}\nargs=({shown}))"


def _ttext(shape: tuple[int, ...]) -> str:
    if not shape:
        return "float32"
    return "Tensor[(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") \
        + "), float32]"


class _Gen:
    """Draws expressions of the program's tensor type ``T`` (as text) from an environment of
    variables of type ``T``; ``used`` records the constructs drawn."""

    def __init__(self, draw: Any, shape: tuple[int, ...], ty: str, dense: bool):
        self.draw = draw
        self.dense = dense
        self.shape = shape
        self.ty = ty
        self.used: set[str] = set()
        self.counter = 0

    def fresh(self, hint: str) -> str:
        self.counter += 1
        return f"%{hint}{self.counter}"

    def leaf(self, env: list[str]) -> str:
        if self.draw(st.integers(0, 5)) == 0:
            c = self.draw(st.sampled_from(("0.5f", "2f", "-1.25f", "0.75f")))
            return f"multiply({c}, {self.draw(st.sampled_from(env))})"
        return self.draw(st.sampled_from(env))

    def expr(self, env: list[str], depth: int) -> str:
        if depth <= 0:
            return self.leaf(env)
        choices = ["leaf", "op", "binary", "binary", "reduce", "closure", "tuple", "adt",
                   "option", "if", "loop", "ref", "shared"]
        if self.dense and len(self.shape) == 2 and self.shape[0] == self.shape[1]:
            choices.append("dense")
        kind = self.draw(st.sampled_from(choices))
        if kind == "leaf":
            return self.leaf(env)
        self.used.add(kind)
        d = depth - 1
        if kind == "op":
            op = self.draw(st.sampled_from(UNARY))
            a = self.expr(env, d)
            if op == "exp_bounded":
                return f"exp(tanh({a}))"
            if op == "log1p_sq":
                return f"log(add(1f, multiply({a}, {a})))"
            return f"{op}({a})"
        if kind == "binary":
            op = self.draw(st.sampled_from(BINARY))
            a, b = self.expr(env, d), self.expr(env, d)
            if op == "divide_pos":
                return f"divide({a}, add(1.5f, multiply({b}, {b})))"
            return f"{op}({a}, {b})"
        if kind == "reduce":
            red = self.draw(st.sampled_from(("sum", "mean")))
            a, b = self.expr(env, d), self.expr(env, d)
            return f"multiply({red}({a}), {b})"
        if kind == "dense":
            a, b = self.expr(env, d), self.expr(env, d)
            if self.draw(st.booleans()):
                return f"nn.dense({a}, {b})"
            return f"transpose(nn.dense({a}, {b}))"
        if kind == "closure":
            y = self.fresh("y")
            f = self.fresh("f")
            body = self.expr([*env, y], d)
            a, b = self.expr(env, d), self.expr(env, d)
            return (f"(let {f} = fn ({y}: {self.ty}) -> {self.ty} {{ {body} }}; "
                    f"add({f}({a}), {f}({b})))")
        if kind == "tuple":
            t = self.fresh("t")
            a, b = self.expr(env, d), self.expr(env, d)
            i = self.draw(st.integers(0, 1))
            return f"(let {t} = ({a}, {b}); multiply({t}.{i}, {t}.{1 - i}))"
        if kind == "adt":
            h, k = self.fresh("h"), self.fresh("k")
            a, b, c = self.expr(env, d), self.expr(env, d), self.expr(env, d)
            body = self.expr([*env, h, k], d)
            return (f"match (Cons({a}, Cons({b}, Nil))) {{ Cons({h}, Cons({k}, _)) => {body}, "
                    f"_ => {c} }}")
        if kind == "option":
            v = self.fresh("v")
            a, c = self.expr(env, d), self.expr(env, d)
            body = self.expr([*env, v], d)
            return f"match (Some({a})) {{ Some({v}) => {body}, None => {c} }}"
        if kind == "if":
            cond = self.draw(st.sampled_from(("True", "False", "(1 < 2)", "(3 == 4)")))
            a, b = self.expr(env, d), self.expr(env, d)
            return f"if ({cond}) {{ {a} }} else {{ {b} }}"
        if kind == "loop":
            loop, n, acc = self.fresh("loop"), self.fresh("n"), self.fresh("acc")
            step = self.expr([*env, acc], d)
            init = self.expr(env, d)
            count = self.draw(st.integers(0, 3))
            return (f"(let {loop} = fn ({n}: int32, {acc}: {self.ty}) -> {self.ty} {{ "
                    f"if ({n} == 0) {{ {acc} }} else {{ {loop}({n} - 1, tanh({step})) }} }}; "
                    f"{loop}({count}, {init}))")
        if kind == "ref":
            r = self.fresh("r")
            a, b = self.expr(env, d), self.expr(env, d)
            return f"(let {r} = ref({a}); {r} := multiply(!{r}, {b}); !{r})"
        if kind == "shared":
            s = self.fresh("s")
            a = self.expr(env, d)
            body = self.expr([*env, s], d)
            return f"(let {s} = {a}; add(multiply({s}, {s}), {body}))"
        raise AssertionError(kind)


@st.composite
def differentiable_programs(draw: Any, max_depth: int = 3, max_args: int = 2,
                            shapes: tuple[tuple[int, ...], ...] = SHAPES,
                            dense: bool = True) -> DifferentiableProgram:
    """A closed, smooth function over float32 tensors of one shape, with arguments.

    Args:
        draw: Hypothesis' draw (this is a ``@composite`` strategy).
        max_depth: the bound on the nesting of generated constructs.
        max_args: the largest number of parameters (at least one).
        shapes: the tensor shapes to choose from.
        dense: whether to draw ``nn.dense`` / ``transpose`` (for square matrix shapes).
    Returns:
        (as a strategy) a :class:`DifferentiableProgram`.
    """
    from semantics import parse_expr

    shape = draw(st.sampled_from(shapes))
    ty = _ttext(shape)
    n = draw(st.integers(1, max_args))
    params = [f"%x{i}" for i in range(n)]
    gen = _Gen(draw, shape, ty, dense)
    body = gen.expr(params, draw(st.integers(1, max_depth)))
    text = "fn (" + ", ".join(f"{p}: {ty}" for p in params) + f") -> {ty} {{ {body} }}"
    elements = st.floats(-1.0, 1.0, allow_nan=False, width=32)
    args = tuple(
        np.asarray(draw(st.lists(elements, min_size=int(np.prod(shape)),
                                 max_size=int(np.prod(shape)))), dtype=np.float32).reshape(shape)
        for _ in params)
    return DifferentiableProgram(text, parse_expr(text), args, frozenset(gen.used))
