"""The generator-free conversion of ConstructorValue trees (``interpreter/convert.py``,
``_Converter._plain_adt``): it gives what the general path gives, and leaves everything else
(shared or cyclic nodes, mismatched tensors, dicts) to the general path and its errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import models
from interpreter import ConstructorValue
from interpreter.convert import _Converter, convert_value
from interpreter.values import values_equal
from models.recurrent import random_tree
from semantics import RelayRuntimeError, parse

TREE = parse("""
def @main(%t: Tree[Tensor[(1, 3), float32]], %xs: List[(Tensor[(2), int32], List[int32])]) {
  %t
}
""")
TREE_TYPE = TREE["main"].params[0].type_annotation
NESTED_TYPE = TREE["main"].params[1].type_annotation


def _general(x: Any, ty: Any) -> Any:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_Converter, "_plain_adt", lambda self, x, ty: None)
        return convert_value(x, ty, TREE)


def _constructors_resolved(v: Any) -> bool:
    stack = [v]
    while stack:
        w = stack.pop()
        if type(w) is ConstructorValue:
            if w.constructor is None or w.constructor is not TREE.constructors[w.name]:
                return False
            stack.extend(w.fields)
        elif type(w) is tuple:
            stack.extend(w)
    return True


@settings(max_examples=25, deadline=None)
@given(nodes=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_a_tree_converts_as_the_general_path_converts_it(nodes: int, seed: int) -> None:
    tree = models.relay_tree(random_tree(np.random.default_rng(seed), nodes, (1, 3)))
    plain = _Converter(TREE)._plain_adt(tree, TREE_TYPE)
    assert plain is not None                          # the fast path took it
    general = _general(tree, TREE_TYPE)
    assert values_equal(plain, general)
    assert _constructors_resolved(plain) and _constructors_resolved(general)
    assert values_equal(convert_value(tree, TREE_TYPE, TREE), general)


def test_a_tuple_field_is_left_to_the_general_path() -> None:
    xs = ConstructorValue("Cons", ((np.zeros(2, "int32"), ConstructorValue("Nil")),
                                   ConstructorValue("Nil")))
    assert _Converter(TREE)._plain_adt(xs, NESTED_TYPE) is None
    got = convert_value(xs, NESTED_TYPE, TREE)
    assert got.name == "Cons" and got.constructor is TREE.constructors["Cons"]


def test_a_shared_node_is_left_to_the_general_path() -> None:
    leaf = ConstructorValue("Rose", (np.ones((1, 3), "float32"), ConstructorValue("Nil")))
    kids = ConstructorValue("Cons", (leaf, ConstructorValue("Cons", (
        leaf, ConstructorValue("Nil")))))
    tree = ConstructorValue("Rose", (np.zeros((1, 3), "float32"), kids))
    assert _Converter(TREE)._plain_adt(tree, TREE_TYPE) is None
    got = convert_value(tree, TREE_TYPE, TREE)        # a DAG is a value: converted
    assert values_equal(got, tree)


def test_a_cycle_is_still_an_error() -> None:
    tree = ConstructorValue("Rose", (np.zeros((1, 3), "float32"), ConstructorValue("Nil")))
    kids = ConstructorValue("Cons", (tree, ConstructorValue("Nil")))
    tree.fields = (tree.fields[0], kids)
    with pytest.raises(RelayRuntimeError, match="contains itself"):
        convert_value(tree, TREE_TYPE, TREE)


@pytest.mark.parametrize("bad", [np.zeros((1, 4), "float32"), np.zeros((1, 3), "float64"),
                                 [[0.0, 1.0, 2.0]]])
def test_a_mismatched_leaf_gets_the_general_path(bad: Any) -> None:
    deep = ConstructorValue("Rose", (bad, ConstructorValue("Nil")))
    tree = ConstructorValue("Rose", (np.zeros((1, 3), "float32"), ConstructorValue(
        "Cons", (deep, ConstructorValue("Nil")))))
    assert _Converter(TREE)._plain_adt(tree, TREE_TYPE) is None
    if isinstance(bad, list):          # a nested list converts to the declared dtype
        got = convert_value(tree, TREE_TYPE, TREE)
        leaf = got.fields[1].fields[0].fields[0]
        assert leaf.dtype == np.float32 and leaf.shape == (1, 3)
    else:
        with pytest.raises(RelayRuntimeError, match=r"argument value \(at .*Rose\.0"):
            convert_value(tree, TREE_TYPE, TREE)
