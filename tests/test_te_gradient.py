"""wb.gradient, TVM's te.gradient on eager tensors (REFERENCE D20.158, test_te_autodiff.py)."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from tests.helpers import assert_close
from workbench.nn import functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

rng = np.random.default_rng(5)


def leaf(shape, low=-1.0, high=1.0):
    return wb.tensor(rng.uniform(low, high, size=shape), requires_grad=True)


def numerical_jacobian(fn, x: np.ndarray, eps=1e-6) -> np.ndarray:
    """∂fn/∂x by central differences, shaped out.shape + x.shape."""
    out_shape = np.shape(fn(x))
    jac = np.zeros(out_shape + x.shape)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += eps
        minus[idx] -= eps
        jac[(...,) + idx] = (fn(plus) - fn(minus)) / (2 * eps)
    return jac


def check_against_finite_differences(build, x: wb.Tensor):
    (jac,) = wb.gradient(build(x), x)
    expected = numerical_jacobian(lambda a: build(wb.tensor(a)).numpy(), x.detach().numpy())
    assert jac.shape == expected.shape
    assert_close(jac, expected, atol=1e-6)


def test_no_head_gives_the_full_jacobian_for_a_plus_a_transposed():
    a = leaf((3, 3))
    check_against_finite_differences(lambda x: x + x.T, a)


def test_sum_of_products_with_the_transpose():
    a = leaf((3, 3))
    check_against_finite_differences(lambda x: (x * x.T).sum(1), a)


def test_max_reduction():
    a = leaf((3, 4))
    check_against_finite_differences(lambda x: x.amax(1), a)


def test_product_reducer():
    a = leaf((3, 4), 0.5, 1.5)
    check_against_finite_differences(lambda x: x.prod(1), a)


@pytest.mark.parametrize("op", [wb.floor, wb.ceil, wb.trunc, wb.round])
def test_rounding_ops_have_zero_jacobians(op):
    a = wb.tensor([[0.3, 1.7], [-2.2, 3.6]], requires_grad=True)
    (jac,) = wb.gradient(op(a), a)
    assert jac.shape == (2, 2, 2, 2)
    assert not np.any(jac.numpy())


def test_head_of_ones_equals_the_gradient_of_the_sum():
    a, b = leaf((2, 3)), leaf((3,))
    out = (a * b).tanh()
    ga, gb = wb.gradient(out, [a, b], wb.ones_like(out))
    expected = wb.autograd.grad(out.sum(), [a, b])
    assert_close(ga, expected[0].numpy())
    assert_close(gb, expected[1].numpy())


def test_head_with_a_prefix_gives_prefix_plus_input_shape():
    a = leaf((2, 3))
    out = a.sin()
    head = wb.tensor(rng.standard_normal((4, 5, 2, 3)))
    (grads,) = wb.gradient(out, a, head)
    assert grads.shape == (4, 5, 2, 3)
    assert_close(grads[1, 2], (head[1, 2] * a.detach().cos()).numpy())


def test_a_single_input_comes_back_in_a_list():
    a = leaf((2,))
    result = wb.gradient(a * 3, a)
    assert isinstance(result, list) and len(result) == 1
    assert_close(result[0], 3 * np.eye(2))


def test_head_of_the_wrong_shape_is_an_error():
    a = leaf((2, 3))
    with pytest.raises(ValueError, match="prefix \\+ output.shape"):
        wb.gradient(a * 2, a, wb.ones(3, 2))


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("stride, dilation, kernel", [(1, 1, 1), (2, 1, 3), (1, 2, 2), (3, 3, 2)])
def test_conv2d_jacobians_match_torch(stride, dilation, kernel):
    x, w = leaf((1, 2, 7, 7)), leaf((2, 2, kernel, kernel))
    out = F.conv2d(x, w, stride=stride, dilation=dilation)
    jx, jw = wb.gradient(out, [x, w])

    def conv(a, b):
        return TF.conv2d(a, b, stride=stride, dilation=dilation)

    tx, tw = torch.autograd.functional.jacobian(
        conv, (torch.tensor(x.detach().numpy()), torch.tensor(w.detach().numpy()))
    )
    assert_close(jx, tx)
    assert_close(jw, tw)


def test_max_pool_with_dilation():
    x = leaf((1, 1, 5, 5))
    check_against_finite_differences(lambda a: F.max_pool2d(a, 2, 1, dilation=2), x)
