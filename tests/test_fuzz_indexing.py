"""Random indexing against PyTorch: values, the gradient, and the error where PyTorch refuses.

Keys mix ints, slices (negative steps excepted: PyTorch has none), None, Ellipsis,
lists and arrays of ints, and boolean masks. ``make fuzz`` runs 4,000 of them; CI a few.
A key may hold several Ellipses, as PyTorch 2.13 takes them (``x[..., 0, ...]``: the first
spans the dims the rest leaves). Where the result is empty PyTorch reads no index array
(``x[[5], 0:0]`` is an empty tensor for any 5), and so does the workbench.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import workbench as wb

torch = pytest.importorskip("torch")

SHAPES = st.lists(st.integers(1, 4), max_size=4).map(tuple)


def key_parts(size: int):
    """One part of a key, for a dim of ``size`` (which a part may or may not fit)."""
    near = st.integers(-size - 1, size)  # one past each end: IndexError in both
    return st.one_of(
        near,
        st.builds(slice, st.none() | near, st.none() | near, st.none() | st.integers(1, 3)),
        st.none(),
        st.just(Ellipsis),
        st.lists(near, min_size=1, max_size=3),
        st.lists(near, min_size=1, max_size=3).map(lambda v: np.array(v).reshape(-1, 1)),
        st.lists(st.booleans(), min_size=size, max_size=size),
    )


@st.composite
def cases(draw):
    shape = draw(SHAPES)
    key = tuple(
        draw(key_parts(shape[i] if i < len(shape) else 2)) for i in range(draw(st.integers(0, 4)))
    )
    return shape, key


def as_key(lib, key):
    """Lists stay lists; arrays become the library's int64 tensors (masks: bool tensors)."""
    made = []
    for part in key:
        if isinstance(part, np.ndarray):
            made.append(lib.tensor(part))
        elif isinstance(part, list) and part and isinstance(part[0], bool):
            made.append(lib.tensor(part))
        else:
            made.append(part)
    return tuple(made)


def reads_past_torchs_sizes(key: tuple) -> bool:
    """A key with several ``...`` and a slice with a stop after the second: there PyTorch
    compares the stop with a size it reads past the end of its list of sizes, so whether
    it raises depends on memory (the workbench takes only ``:`` there)."""
    ellipses = [i for i, part in enumerate(key) if part is Ellipsis]
    after = key[ellipses[1] :] if len(ellipses) > 1 else ()
    return any(isinstance(part, slice) and part.stop is not None for part in after)


@given(case=cases(), seed=st.integers(0, 2**16))
def test_random_indexing_matches_torch(case, seed):
    shape, key = case
    assume(not reads_past_torchs_sizes(key))
    data = np.random.default_rng(seed).standard_normal(shape)
    t = torch.tensor(data, requires_grad=True)
    try:
        want = t[as_key(torch, key)]
    except (IndexError, RuntimeError, TypeError, ValueError) as err:
        with pytest.raises(type(err)):
            wb.tensor(data, requires_grad=True)[as_key(wb, key)]
        return
    x = wb.tensor(data, requires_grad=True)
    got = x[as_key(wb, key)]
    assert got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    weights = np.random.default_rng(seed + 1).standard_normal(got.shape)
    (got * wb.tensor(weights)).sum().backward()
    (want * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)
