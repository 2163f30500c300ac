"""Runtime values: printing, structural equality, environments."""

from __future__ import annotations

import numpy as np
import pytest

from interpreter import Closure, ConstructorValue, RefValue
from interpreter.env import Env
from interpreter.values import OpValue, is_value, value_str, values_equal
from semantics import ops
from semantics.expr import Function, Var, const


@pytest.mark.parametrize("value, text", [
    (np.array(1, np.int32), "1"),
    (np.array(-3, np.int64), "-3i64"),
    (np.array(7, np.uint8), "7u8"),
    (np.array(1.5, np.float32), "1.5f"),
    (np.array(0.1, np.float64), "0.1f64"),
    (np.array(np.inf, np.float32), "inff"),
    (np.array(np.nan, np.float16), "nanf16"),
    (np.array(True), "True"),
    (np.array([1, 2], np.int32), "array([1, 2], dtype=int32)"),
    (np.zeros((2, 0), np.float32), "array([], shape=(2, 0), dtype=float32)"),
    ((), "()"),
    ((np.array(1, np.int32),), "(1,)"),
    ((np.array(1, np.int32), ()), "(1, ())"),
    (ConstructorValue("Nil"), "Nil"),
    (ConstructorValue("Some", ((np.array(1, np.int32), np.array(False)),)), "Some((1, False))"),
    (RefValue(()), "ref(())"),
])
def test_value_str(value, text):
    assert value_str(value) == text


def test_value_str_of_functions():
    f = Function((), const(1))
    assert value_str(Closure(f, Env())) == "<closure>"
    assert value_str(OpValue("add", ops.get("add"))) == "add"


def test_value_str_limit_and_deep_values():
    v = ConstructorValue("Nil")
    for i in range(50_000):
        v = ConstructorValue("Cons", (np.array(i, np.int32), v))
    short = value_str(v, limit=30)
    assert short == "Cons(49999, Cons(49998, Con..." and len(short) == 30
    assert value_str(v).count("Cons(") == 50_000


def test_value_str_cycle_through_a_reference():
    r = RefValue(None)
    r.value = ConstructorValue("Some", (r,))
    assert value_str(r) == "ref(Some(ref(...)))"


def test_values_equal():
    a = (np.array([1.0, np.nan], np.float32), ConstructorValue("Some", (np.int32(1),)))
    b = (np.array([1.0, np.nan], np.float32), ConstructorValue("Some", (np.int32(1),)))
    assert values_equal(a, b)
    assert not values_equal(a, b, nan_equal=False)
    assert not values_equal(np.array(1, np.int32), np.array(1, np.int64))  # dtype matters
    assert not values_equal(np.zeros(2), np.zeros(3))
    assert not values_equal((1,), (1, 2))
    assert not values_equal(ConstructorValue("Some", (1,)), ConstructorValue("None"))
    assert values_equal(np.array(2, np.int32), 2)
    r = RefValue(1)
    assert values_equal(r, r) and not values_equal(r, RefValue(1))


def test_constructor_value_equality_and_hashing():
    assert ConstructorValue("Cons", [1, ConstructorValue("Nil")]).fields[1] == ConstructorValue(
        "Nil")
    assert ConstructorValue("Nil") != 3
    with pytest.raises(TypeError):
        hash(ConstructorValue("Nil"))


def test_deep_values_equal_without_recursion():
    def build():
        v = ConstructorValue("Nil")
        for i in range(30_000):
            v = ConstructorValue("Cons", (np.array(i, np.int32), v))
        return v

    assert build() == build()


def test_is_value():
    assert is_value(np.zeros(2, np.float32)) and is_value(()) and is_value(RefValue(1))
    assert not is_value(np.array(["a"])) and not is_value(3) and not is_value([1])


def lookup(env: Env, var: Var):
    """Γ(x) as Semantics-Id reads it: the innermost frame binding ``var``; KeyError if none."""
    frame = env
    while frame is not None:
        if var in frame.vars:
            return frame.vars[var]
        frame = frame.parent
    raise KeyError(var.name_hint)


def test_env_extension_and_shadowing_of_the_same_var():
    x, y = Var("x"), Var("y")
    root = Env()
    env = root.extend(x, 1)
    assert env is root                        # a new variable: added in place, O(1)
    child = env.extend(x, 2)                  # the same variable again: a child frame
    assert child is not env and lookup(child, x) == 2 and lookup(env, x) == 1
    assert lookup(child.extend(y, 3), y) == 3
    with pytest.raises(KeyError):
        lookup(Env(), y)


def test_env_captured_frame_keeps_its_binding():
    x = Var("x")
    outer = Env().extend(x, "outer")
    inner = outer.activation({}, frozenset())
    shadow = inner.extend(x, "inner")         # visible in the parent: a child frame
    assert lookup(shadow, x) == "inner" and lookup(inner, x) == "outer"
