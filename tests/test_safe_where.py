"""NaN through ``where`` (lesson 8's exercise 08-conv-pool-safe-where) and the linear layer's
rule by shapes (lesson 2's 02-linear-rule), against PyTorch.

PyTorch is the specification: ``torch.where`` sends 0 to the branch it did not take,
and that branch's rule turns the 0 into NaN where its slope is infinite or NaN. The
checks' expected values must be PyTorch's, and the mistakes they name must be mistakes
in PyTorch too.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.exercises.linear_rule import LINEAR_SHAPES, unmatched_product
from workbench.exercises.safe_where import POINTS, expected_gradient, expected_value

torch = pytest.importorskip("torch")


def gradients(function, values) -> tuple[np.ndarray, np.ndarray]:
    """x.grad of function(x).sum() in the workbench and in PyTorch (float64)."""
    ours = wb.tensor(values, dtype=wb.float64, requires_grad=True)
    function(wb, ours).sum().backward()
    theirs = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    function(torch, theirs).sum().backward()
    return ours.grad.numpy(), theirs.grad.numpy()


def one_where_sqrt(lib, x):
    return lib.where(x > 0, x.sqrt(), 0.0)


def one_where_x_log_x(lib, x):
    return lib.where(x > 0, x * x.log(), 0.0)


def double_where_sqrt(lib, x):
    safe = lib.where(x > 0, x, 1.0)
    return lib.where(x > 0, safe.sqrt(), 0.0)


def double_where_x_log_x(lib, x):
    safe = lib.where(x > 0, x, 1.0)
    return lib.where(x > 0, safe * safe.log(), 0.0)


def clamped_sqrt(lib, x):
    return x.clamp(min=0).sqrt()


def relu_sqrt(lib, x):
    return x.relu().sqrt()


@pytest.mark.parametrize(
    "function",
    [
        one_where_sqrt,
        one_where_x_log_x,
        double_where_sqrt,
        double_where_x_log_x,
        clamped_sqrt,
        relu_sqrt,
    ],
)
def test_the_gradient_through_where_is_pytorchs_nan_and_inf_included(function):
    ours, theirs = gradients(function, POINTS)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_allclose(ours, theirs, equal_nan=True)


def test_one_where_is_nan_at_every_x_not_above_zero_in_pytorch():
    _, theirs = gradients(one_where_sqrt, POINTS)
    np.testing.assert_array_equal(np.isnan(theirs), POINTS <= 0)
    _, theirs = gradients(one_where_x_log_x, POINTS)
    np.testing.assert_array_equal(np.isnan(theirs), POINTS <= 0)


def test_the_checks_expected_value_and_gradient_are_the_double_wheres_in_pytorch():
    theirs = torch.tensor(POINTS, dtype=torch.float64, requires_grad=True)
    value = double_where_sqrt(torch, theirs)
    value.sum().backward()
    np.testing.assert_allclose(expected_value(POINTS), value.detach().numpy())
    np.testing.assert_allclose(expected_gradient(POINTS), theirs.grad.numpy())


def test_a_clamp_lets_sqrts_infinite_slope_through_at_zero_in_pytorch():
    _, theirs = gradients(clamped_sqrt, POINTS)
    assert np.isposinf(theirs[POINTS == 0]).all()
    _, theirs = gradients(relu_sqrt, POINTS)  # relu′(0) = 0 stops it: a right answer
    np.testing.assert_allclose(theirs, expected_gradient(POINTS))


@pytest.mark.parametrize("shapes", LINEAR_SHAPES)
def test_the_linear_rule_by_shapes_is_pytorchs(shapes):
    rng = np.random.default_rng(1)
    x, weight, bias = (rng.standard_normal(s) for s in shapes)
    y_bar = rng.standard_normal((shapes[0][0], shapes[1][0]))
    leaves = [torch.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    torch.nn.functional.linear(*leaves).backward(torch.tensor(y_bar))
    by_shapes = [y_bar @ weight, y_bar.T @ x, y_bar.sum(axis=0)]  # x̄ = ȳ W, W̄ = ȳᵀ x, b̄ = Σ ȳ
    for leaf, ours in zip(leaves, by_shapes):
        np.testing.assert_allclose(leaf.grad.numpy(), ours)


def test_an_unmatched_product_is_told_only_for_the_layers_own_tensors():
    shapes = LINEAR_SHAPES[0]  # x (2, 3), W (4, 3), ȳ (2, 4)
    said = unmatched_product(
        "matmul: shapes (2, 4) and (3, 4) cannot be multiplied (2x4 and 3x4)", shapes
    )
    assert said.startswith("It multiplies ȳ (2, 4) by Wᵀ (3, 4)")
    assert (
        unmatched_product("mat1 and mat2 shapes cannot be multiplied (5x7 and 3x4)", shapes) is None
    )
    assert unmatched_product("some other error", shapes) is None
