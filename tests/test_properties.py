"""Property-based checks on random shapes: broadcasting ops and reductions agree with PyTorch
(values and gradients), and a few algebraic identities hold."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import workbench as wb

torch = pytest.importorskip("torch")

# The profile's number of examples (tests/conftest.py): 15 in CI, 4,000 in `make fuzz`.
SETTINGS = settings(deadline=None)
small_shapes = array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)
seeds = st.integers(0, 2**31 - 1)


def _values(seed: int, shape, low=-2.0, high=2.0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def _compare(ours_fn, theirs_fn, arrays, seed):
    """Values and gradients (for a random cotangent) of ours and torch's agree."""
    ours_in = [wb.tensor(a, requires_grad=True) for a in arrays]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours, theirs = ours_fn(*ours_in), theirs_fn(*theirs_in)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-7, atol=1e-9)
    cotangent = _values(seed + 1, theirs.shape)
    ours_g = wb.autograd.grad(ours, ours_in, wb.tensor(cotangent), allow_unused=True)
    theirs_g = torch.autograd.grad(theirs, theirs_in, torch.tensor(cotangent), allow_unused=True)
    for x, a, b in zip(ours_in, ours_g, theirs_g):
        assert a is None or a.shape == x.shape  # collapse_sum_like undid the broadcasting
        a = np.zeros(x.shape) if a is None else a.numpy()
        b = np.zeros(x.shape) if b is None else b.numpy()
        # pow's rule (x̄ = ȳ·p·x^(p−1)) and torch's round differently in the last bits
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub": (lambda a, b: a - b, lambda a, b: a - b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "div": (lambda a, b: a / (b * b + 0.5), lambda a, b: a / (b * b + 0.5)),
    "maximum": (wb.maximum, torch.maximum),
    "pow": (lambda a, b: (a * a + 0.5) ** b, lambda a, b: (a * a + 0.5) ** b),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@SETTINGS
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3), seed=seeds)
def test_broadcasting_binary_ops_match_torch(name, shapes, seed):
    ours, theirs = BINARY[name]
    a, b = (_values(seed + i, s) for i, s in enumerate(shapes.input_shapes))
    _compare(ours, theirs, [a, b], seed)


@SETTINGS
@given(shapes=mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3), seed=seeds)
def test_where_broadcasts_all_three_operands(shapes, seed):
    cond = _values(seed, shapes.input_shapes[0]) > 0
    a, b = _values(seed + 1, shapes.input_shapes[1]), _values(seed + 2, shapes.input_shapes[2])

    def ours(x, y):
        return wb.where(wb.tensor(cond), x, y)

    def theirs(x, y):
        return torch.where(torch.tensor(cond), x, y)

    _compare(ours, theirs, [a, b], seed)


@st.composite
def shape_and_dims(draw):
    """A shape and a reduction over some of its dims (None: all), with keepdim."""
    shape = draw(small_shapes)
    dims = draw(st.none() | st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True))
    return shape, None if dims is None else tuple(dims), draw(st.booleans())


def _dims_kw(dims, keepdim):
    return {} if dims is None else {"dim": dims, "keepdim": keepdim}


REDUCTIONS = {
    "sum": (lambda x, kw: x.sum(**kw), lambda x, kw: x.sum(**kw)),
    "mean": (lambda x, kw: x.mean(**kw), lambda x, kw: x.mean(**kw)),
    "var": (lambda x, kw: x.var(**kw, correction=0), lambda x, kw: x.var(**kw, correction=0)),
    "logsumexp": (
        lambda x, kw: wb.logsumexp(x, kw.get("dim"), kw.get("keepdim", False)),
        lambda x, kw: torch.logsumexp(
            x, kw.get("dim", tuple(range(x.ndim))), kw.get("keepdim", False)
        ),
    ),
    "norm": (
        lambda x, kw: wb.norm(x, 2, kw.get("dim"), kw.get("keepdim", False)),
        lambda x, kw: torch.norm(x, 2, kw.get("dim"), kw.get("keepdim", False)),
    ),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@SETTINGS
@given(case=shape_and_dims(), seed=seeds)
def test_reductions_match_torch(name, case, seed):
    shape, dims, keepdim = case
    ours, theirs = REDUCTIONS[name]
    kw = _dims_kw(dims, keepdim)
    _compare(lambda x: ours(x, kw), lambda x: theirs(x, kw), [_values(seed, shape)], seed)


SINGLE_DIM = {
    "prod": (lambda x, d: x.prod(d), lambda x, d: x.prod(d)),
    "cumsum": (lambda x, d: x.cumsum(d), lambda x, d: x.cumsum(d)),
    "cumprod": (lambda x, d: x.cumprod(d), lambda x, d: x.cumprod(d)),
    "softmax": (lambda x, d: x.softmax(d), lambda x, d: x.softmax(d)),
    "log_softmax": (lambda x, d: x.log_softmax(d), lambda x, d: x.log_softmax(d)),
    "unbiased_std": (lambda x, d: (x * 3).std(d), lambda x, d: (x * 3).std(d)),
}


@pytest.mark.parametrize("name", sorted(SINGLE_DIM))
@SETTINGS
@given(shape=small_shapes, data=st.data(), seed=seeds)
def test_single_dim_reductions_and_scans_match_torch(name, shape, data, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    if name == "unbiased_std" and shape[dim] == 1:
        shape = tuple(2 if i == dim % len(shape) else s for i, s in enumerate(shape))
    ours, theirs = SINGLE_DIM[name]
    _compare(lambda x: ours(x, dim), lambda x: theirs(x, dim), [_values(seed, shape)], seed)


@SETTINGS
@given(shape=small_shapes, data=st.data(), seed=seeds)
def test_cat_of_split_is_the_identity_and_its_gradient_is_one(shape, data, seed):
    dim = data.draw(st.integers(0, len(shape) - 1))
    size = data.draw(st.integers(1, shape[dim]))
    x = wb.tensor(_values(seed, shape), requires_grad=True)
    pieces = wb.split(x, size, dim)
    assert sum(p.shape[dim] for p in pieces) == shape[dim]
    again = wb.cat(pieces, dim)
    np.testing.assert_array_equal(again.detach().numpy(), x.detach().numpy())
    again.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(shape))


@SETTINGS
@given(shape=small_shapes, data=st.data(), seed=seeds)
def test_flip_and_roll_are_undone_by_their_inverses(shape, data, seed):
    dim = data.draw(st.integers(0, len(shape) - 1))
    shift = data.draw(st.integers(-5, 5))
    x = wb.tensor(_values(seed, shape))
    np.testing.assert_array_equal(x.flip(dim).flip(dim).numpy(), x.numpy())
    np.testing.assert_array_equal(x.roll(shift, dim).roll(-shift, dim).numpy(), x.numpy())
