"""Gradients *at* the kinks, where an op is not differentiable: PyTorch's conventions (A20).

The registry samples stay away from these points on purpose (finite differences
cannot judge them); here each convention is pinned to the value PyTorch gives.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import workbench as wb


def grad_of(fn, *values):
    """The gradients of ``fn(*tensors).sum()`` at float64 ``values``."""
    xs = [wb.tensor(np.asarray(v, dtype=np.float64), requires_grad=True) for v in values]
    fn(*xs).sum().backward()
    return [x.grad.numpy() for x in xs]


def test_relu_at_zero_is_zero():
    (g,) = grad_of(wb.relu, [-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0])


def test_abs_at_zero_is_zero():
    (g,) = grad_of(wb.abs, [-2.0, 0.0, 3.0])
    np.testing.assert_array_equal(g, [-1.0, 0.0, 1.0])


@pytest.mark.parametrize("op", [wb.maximum, wb.minimum])
def test_maximum_and_minimum_split_ties_in_half(op):
    gx, gy = grad_of(op, [1.0, 2.0], [1.0, 5.0])
    assert gx[0] == gy[0] == 0.5
    assert gx[1] + gy[1] == 1.0


@pytest.mark.parametrize(
    "reduce, values",
    [
        (lambda x: x.max(), [3.0, 1.0, 3.0]),
        (lambda x: x.amax(), [3.0, 1.0, 3.0]),
        (lambda x: x.min(), [1.0, 3.0, 1.0]),
        (lambda x: x.amin(), [1.0, 3.0, 1.0]),
    ],
)
def test_full_reduction_ties_share_the_gradient_evenly(reduce, values):
    (g,) = grad_of(reduce, values)
    np.testing.assert_array_equal(g, [0.5, 0.0, 0.5])


def test_max_over_a_dim_sends_ties_to_the_first_index():
    (g,) = grad_of(lambda x: x.max(dim=1).values, [[3.0, 1.0, 3.0], [2.0, 2.0, 2.0]])
    np.testing.assert_array_equal(g, [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    (g,) = grad_of(lambda x: x.min(dim=0).values, [[1.0], [1.0]])
    np.testing.assert_array_equal(g, [[1.0], [0.0]])


def test_max_pool_ties_send_the_gradient_to_the_first_in_row_major_order():
    window = [[[[1.0, 2.0], [2.0, 0.0]]]]  # the maximum, 2, at [0, 1] and at [1, 0]
    (g,) = grad_of(lambda x: wb.nn.functional.max_pool2d(x, 2), window)
    np.testing.assert_array_equal(g, [[[[0.0, 1.0], [0.0, 0.0]]]])
    (g,) = grad_of(lambda x: wb.nn.functional.max_pool2d(x, 2), np.ones((1, 1, 2, 2)))
    np.testing.assert_array_equal(g, [[[[1.0, 0.0], [0.0, 0.0]]]])


def test_clamp_boundaries_are_inclusive():
    (g,) = grad_of(lambda x: x.clamp(0, 1), [-0.5, 0.0, 0.5, 1.0, 1.5])
    np.testing.assert_array_equal(g, [0.0, 1.0, 1.0, 1.0, 0.0])


def test_sqrt_at_zero_is_infinite():
    (g,) = grad_of(wb.sqrt, [0.0])
    assert g[0] == math.inf


def test_powers_at_zero():
    (g,) = grad_of(lambda x: x**0, [0.0])
    assert g[0] == 0.0
    (g,) = grad_of(lambda x: x**2, [0.0])
    assert g[0] == 0.0
    base = wb.tensor([0.0, 0.0, 0.0], dtype=wb.float64)
    (g,) = grad_of(lambda b: base**b, [-1.0, 0.0, 1.0])
    np.testing.assert_array_equal(g, [-math.inf, 0.0, 0.0])
    (g,) = grad_of(lambda b: 0.0**b, [-1.0, 0.0, 1.0])
    np.testing.assert_array_equal(g, [-math.inf, 0.0, 0.0])


def test_sign_has_zero_gradient():
    (g,) = grad_of(wb.sign, [-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])


def test_duplicate_indices_accumulate():
    (g,) = grad_of(lambda x: x[[0, 0, 2]], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(g, [2.0, 0.0, 1.0])
    (g,) = grad_of(lambda x: x[wb.tensor([0, 0, 2])], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(g, [2.0, 0.0, 1.0])


torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "name, ours, theirs, values",
    [
        ("relu", wb.relu, torch.relu, [[-1.0, 0.0, 2.0]]),
        ("abs", wb.abs, torch.abs, [[-2.0, 0.0, 3.0]]),
        ("maximum", wb.maximum, torch.maximum, [[1.0, 2.0], [1.0, 5.0]]),
        ("minimum", wb.minimum, torch.minimum, [[1.0, 2.0], [1.0, 0.0]]),
        ("max", lambda x: x.max(), lambda x: x.max(), [[3.0, 1.0, 3.0]]),
        ("max_dim", lambda x: x.max(0).values, lambda x: x.max(0).values, [[2.0, 2.0]]),
        ("amax", lambda x: x.amax(), lambda x: x.amax(), [[3.0, 1.0, 3.0]]),
        (
            "max_pool2d",
            lambda x: wb.nn.functional.max_pool2d(x, 2),
            lambda x: torch.nn.functional.max_pool2d(x, 2),
            [[[[[1.0, 2.0], [2.0, 0.0]]]]],
        ),
        ("clamp", lambda x: x.clamp(0, 1), lambda x: x.clamp(0, 1), [[0.0, 1.0]]),
        ("sqrt", wb.sqrt, torch.sqrt, [[0.0]]),
        ("pow_exponent", lambda b: 0.0**b, lambda b: 0.0**b, [[-1.0, 0.0, 1.0]]),
    ],
)
def test_kinks_match_torch(name, ours, theirs, values):
    ts = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    theirs(*ts).sum().backward()
    expected = [t.grad.numpy() for t in ts]
    for got, want in zip(grad_of(ours, *values), expected):
        np.testing.assert_array_equal(got, want, err_msg=name)
