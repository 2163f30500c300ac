"""``Constant`` data: a caller's array is copied, an array of our own (``frozen_array``) kept."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from semantics.expr import Constant, frozen_array

arrays = hnp.arrays(np.float32, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
                    elements=st.floats(-10, 10, width=32))


@given(arrays)
def test_a_callers_array_is_copied_and_frozen(a: np.ndarray) -> None:
    before = a.copy()
    c = Constant(a)
    assert c.data is not a and not c.data.flags.writeable
    a[...] = 7                    # the caller's array stays writable and is not the constant
    np.testing.assert_array_equal(c.data, before)


@given(arrays)
def test_a_frozen_array_is_kept_and_read_only(a: np.ndarray) -> None:
    fresh = a.copy()
    assert frozen_array(fresh) is fresh and not fresh.flags.writeable
    c = Constant(fresh)
    assert c.data is fresh
    assert Constant(c.data).data is c.data     # a constant of a constant's data: no copy


def test_a_view_is_not_adopted() -> None:
    base = np.arange(6, dtype=np.float32)
    view = frozen_array(base.reshape(2, 3))
    assert view.flags.writeable               # left alone: the constant copies it
    c = Constant(view)
    assert c.data is not view
    base[0] = 100
    assert c.data[0, 0] == 0
