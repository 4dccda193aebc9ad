"""autograd.functional: values, shapes, create_graph and strict, as PyTorch (REFERENCE D16)."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from tests.helpers import assert_close
from workbench.autograd import functional as AF

try:
    import torch
    import torch.autograd.functional as TAF
except ImportError:
    torch = TAF = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def t64(values, requires_grad=False):
    return wb.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def cube_sum(x):
    return (x**3).sum()


def test_jacobian_of_square():
    assert_close(AF.jacobian(lambda x: x**2, t64([1.0, 2.0])), [[2, 0], [0, 4]])


def test_jacobian_shape_is_output_then_input():
    jac = AF.jacobian(lambda x: x.sum(0), t64(np.ones((2, 3))))
    assert jac.shape == (3, 2, 3)


def test_jacobian_multiple_inputs_and_outputs_nest_tuples():
    a, b = t64([1.0, 2.0]), t64([3.0, 4.0, 5.0])
    jac = AF.jacobian(lambda a, b: (a * 2, b.sum() * a), (a, b))
    assert isinstance(jac, tuple) and isinstance(jac[0], tuple)
    assert jac[0][0].shape == (2, 2) and jac[0][1].shape == (2, 3)
    assert_close(jac[1][1], [[1, 1, 1], [2, 2, 2]])
    assert_close(jac[0][1], np.zeros((2, 3)))


def test_forward_mode_jacobian_matches_reverse_mode():
    x = t64([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]])

    def f(x):
        return (x.sin() * x).sum(1)

    reverse = AF.jacobian(f, x)
    forward = AF.jacobian(f, x, strategy="forward-mode")
    assert_close(forward, reverse.detach().numpy())


def test_jacobian_rejects_unknown_strategy():
    with pytest.raises(ValueError, match="forward-mode"):
        AF.jacobian(lambda x: x, t64([1.0]), strategy="sideways")


def test_hessian_of_cube_sum():
    assert_close(AF.hessian(cube_sum, t64([1.0, 2.0])), [[6, 0], [0, 12]])


def test_hessian_of_non_scalar_function_is_an_error():
    with pytest.raises(RuntimeError, match="should contain a single element"):
        AF.hessian(lambda x: x**3, t64([1.0, 2.0]))


def test_vjp_values_and_none_vector_error():
    out, grad = AF.vjp(lambda x: x**2, t64([1.0, 2.0]), t64([1.0, 10.0]))
    assert_close(out, [1, 4])
    assert_close(grad, [2, 40])
    with pytest.raises(RuntimeError, match="The vector v can only be None"):
        AF.vjp(lambda x: x**2, t64([1.0, 2.0]))


def test_vjp_validates_v_shape():
    with pytest.raises(RuntimeError, match="Entry 0 in v has invalid size"):
        AF.vjp(lambda x: x**2, t64([1.0, 2.0]), t64([1.0, 2.0, 3.0]))


def test_jvp_and_vjp_agree_with_the_jacobian():
    x = t64([0.3, -1.2, 2.0])
    v_in, v_out = t64([1.0, -2.0, 0.5]), t64([2.0, 1.0])

    def f(x):
        return wb.stack([(x * x).sum(), x.prod()])

    jac = AF.jacobian(f, x).numpy()
    _, jv = AF.jvp(f, x, v_in)
    _, vj = AF.vjp(f, x, v_out)
    assert_close(jv, jac @ v_in.numpy())
    assert_close(vj, v_out.numpy() @ jac)


def test_hvp_and_vhp_agree_with_the_hessian():
    x, v = t64([0.3, -1.2, 2.0]), t64([1.0, -2.0, 0.5])

    def f(x):
        return (x.exp() * x.roll(1)).sum()

    hess = AF.hessian(f, x).numpy()
    value, hv = AF.hvp(f, x, v)
    _, vh = AF.vhp(f, x, v)
    assert_close(value, f(x).numpy())
    assert_close(hv, hess @ v.numpy())
    assert_close(vh, v.numpy() @ hess)


def test_strict_mode_refuses_outputs_independent_of_the_input():
    def constant(x):
        return wb.ones(2, dtype=wb.float64)

    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not"):
        AF.jacobian(constant, t64([1.0, 2.0]), strict=True)
    assert_close(AF.jacobian(constant, t64([1.0, 2.0])), np.zeros((2, 2)))


def test_strict_mode_refuses_an_unused_input():
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.vjp(lambda a, b: a * 2, (t64([1.0]), t64([2.0])), t64([1.0]), strict=True)


def test_results_have_no_graph_unless_create_graph():
    x = t64([1.0, 2.0], requires_grad=True)
    assert AF.jacobian(lambda x: x**3, x).grad_fn is None
    with wb.no_grad():
        assert AF.vjp(lambda x: x**3, x, t64([1.0, 1.0]))[1].grad_fn is None
    jac = AF.jacobian(lambda x: x**3, x, create_graph=True)
    assert jac.requires_grad
    (grad,) = wb.autograd.grad(jac.sum(), x)
    assert_close(grad, [6, 12])  # d/dx Σ diag(3x²) = 6x


def test_hessian_with_create_graph_differentiates_to_third_order():
    x = t64([3.0], requires_grad=True)
    hess = AF.hessian(lambda x: (x**3).sum(), x, create_graph=True)
    assert_close(hess, [[18]])
    (third,) = wb.autograd.grad(hess.sum(), x)
    assert_close(third, [6])


@needs_torch
def test_matches_torch_for_a_two_input_function():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal(3)
    v = rng.standard_normal(2)

    def ours(x, y):
        return (x * y).tanh().sum(1)

    def theirs(x, y):
        return (x * y).tanh().sum(1)

    ours_in, theirs_in = (t64(a), t64(b)), (torch.tensor(a), torch.tensor(b))
    for mine, ref in zip(AF.jacobian(ours, ours_in), TAF.jacobian(theirs, theirs_in)):
        assert_close(mine, ref)
    assert_close(
        AF.vjp(ours, ours_in, t64(v))[1][1], TAF.vjp(theirs, theirs_in, torch.tensor(v))[1][1]
    )

    def scalar(x, y):
        return (x.sin() * y).sum()

    ours_h, theirs_h = AF.hessian(scalar, ours_in), TAF.hessian(scalar, theirs_in)
    for i in range(2):
        for j in range(2):
            assert_close(ours_h[i][j], theirs_h[i][j])
