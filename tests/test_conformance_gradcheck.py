"""Conformance with PyTorch, REFERENCE D15: gradcheck and gradgradcheck."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import workbench as wb
from workbench.autograd import Function, GradcheckError, gradcheck, gradgradcheck


def leaf(*values, dtype=wb.float64):
    return wb.tensor(list(values), dtype=dtype, requires_grad=True)


def custom(forward, backward):
    """A one-input custom Function from two plain functions."""

    class Custom(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return forward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return backward(x, g)

    return Custom.apply


def test_d15_115_defaults_and_a_passing_check():
    """test_gradcheck_single_input"""
    defaults = {
        name: p.default
        for name, p in inspect.signature(gradcheck).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    assert defaults["eps"] == 1e-6 and defaults["atol"] == 1e-5 and defaults["rtol"] == 1e-3
    assert defaults["fast_mode"] is False and defaults["raise_exception"] is True
    x = leaf(0.1, 0.7, -1.3)
    assert gradcheck(wb.sin, (x,)) is True
    assert gradgradcheck(wb.sin, (x,)) is True


def test_d15_116_a_wrong_backward_is_reported_with_both_jacobians():
    """test_gradcheck_custom_error"""
    wrong_square = custom(lambda x: x * x, lambda x, g: g * 3 * x)
    x = leaf(1.0, 2.0)
    with pytest.raises(
        GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"
    ) as info:
        gradcheck(wrong_square, (x,))
    assert isinstance(info.value, RuntimeError)
    assert "numerical" in str(info.value) and "analytical" in str(info.value)
    assert gradcheck(wrong_square, (x,), raise_exception=False) is False


def test_d15_117_the_numerical_jacobian_uses_central_differences():
    x = leaf(1.0)
    with pytest.raises(GradcheckError) as info:  # analytical 0: the message shows the numeric value
        gradcheck(custom(lambda x: x**3, lambda x, g: g * 0), (x,), eps=1e-3)
    numerical = ((1.001) ** 3 - (0.999) ** 3) / 0.002
    assert np.isclose(numerical, 3.000001)
    assert "3.000001" in str(info.value)


def test_d15_118_at_least_one_input_must_require_grad():
    """test_gradcheck_validates_inputs"""
    x = wb.tensor([1.0], dtype=wb.float64)
    for raise_exception in (True, False):
        with pytest.raises(
            ValueError, match="gradcheck expects at least one input tensor to require gradient"
        ):
            gradcheck(wb.sin, (x,), raise_exception=raise_exception)


def test_d15_119_single_precision_inputs_warn():
    x = leaf(0.5, dtype=wb.float32)
    with pytest.warns(
        UserWarning, match="Input #0 requires gradient and is not a double precision"
    ):
        gradcheck(wb.sin, (x,), eps=1e-2, atol=1e-2, rtol=1e-2)


def test_d15_120_a_nondeterministic_backward_is_caught():
    """test_gradcheck_nondeterministic"""
    rng = np.random.default_rng(0)

    def jittery_backward(x, g):
        return g * 2 * x + wb.tensor(rng.uniform(-1e-7, 1e-7, size=x.shape)) * g

    fn = custom(lambda x: x * x, jittery_backward)
    x = leaf(1.0, 2.0)
    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        gradcheck(fn, (x,))
    assert gradcheck(fn, (x,), nondet_tol=1e-5) is True


def test_d15_121_a_backward_not_multiplied_by_grad_output_is_caught():
    """test_gradcheck_backward_mul_by_grad_output, test_gradcheck_undefined_grad"""
    x = leaf(1.0, 2.0)
    assert gradcheck(custom(lambda x: x * 1, lambda x, g: g), (x,)) is True

    # Right Jacobian for grad_output = ones, but a zero grad_output still gives 1.
    adds_constant = custom(lambda x: x * 1, lambda x, g: g * 0 + 1)
    with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
        gradcheck(adds_constant, (x,), check_undefined_grad=True)


def test_d15_122_outputs_must_keep_their_shape_under_perturbation():
    def unstable(x):
        return x[x > 1.0]  # the perturbation moves an element across the threshold

    x = leaf(1.0, 2.0)
    with pytest.raises(
        AssertionError, match="return outputs with the same shape when inputs are perturbed"
    ):
        gradcheck(unstable, (x,))


def test_d15_123_fast_mode():
    x = leaf(0.3, -0.8, 1.1)
    assert gradcheck(wb.tanh, (x,), fast_mode=True) is True
    wrong = custom(lambda x: x * x, lambda x, g: g * 3 * x)
    with pytest.raises(GradcheckError, match="fast mode") as info:
        gradcheck(wrong, (x,), fast_mode=True)
    assert "numerical" in str(info.value) and "analytical" in str(info.value)


def test_d15_124_gradgradcheck_of_a_custom_function_with_random_grad_outputs():
    """test_custom_autograd_no_early_free"""

    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x**2

    x = leaf(0.5, -1.5)
    v = wb.tensor([0.7, -0.2], dtype=wb.float64, requires_grad=True)
    assert gradgradcheck(Cube.apply, (x,), (v,)) is True
    assert gradgradcheck(Cube.apply, (x,)) is True

    class CubeWrongSecond(Cube):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x.detach() ** 2  # right first derivative, no second

    assert gradcheck(CubeWrongSecond.apply, (x,)) is True
    assert gradgradcheck(CubeWrongSecond.apply, (x,), raise_exception=False) is False
