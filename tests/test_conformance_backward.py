"""Conformance with PyTorch, REFERENCE D5–D8: backward()/grad() arguments, freed graphs,
autograd.grad, higher-order gradients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import workbench as wb
from workbench.autograd import grad


def T(data, requires_grad=False):
    return wb.tensor(data, dtype=wb.float64, requires_grad=requires_grad)


def values(t) -> list:
    return t.detach().numpy().tolist()


# ------------------------------------------------------ D5 backward() arguments
def test_d5_32_implicit_gradient_only_for_scalar_outputs():
    x = T([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match="grad can be implicitly created only for scalar outputs"
    ):
        (x * 2).backward()
    (x[:1] * 2).backward()  # shape (1,): one element is enough
    assert values(x.grad) == [2.0, 0.0]


def test_d5_33_an_explicit_gradient_weights_the_outputs():
    x = T([1.0, 2.0], requires_grad=True)
    (x * 2).backward(T([1.0, 10.0]))
    assert values(x.grad) == [2.0, 20.0]


def test_d5_34_gradient_shape_must_match_the_output():
    """test_grad"""
    x = T([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of"
    ) as info:
        (x * 2).backward(wb.ones(3, dtype=wb.float64))
    assert "(3,)" in str(info.value) and "(2,)" in str(info.value)


def test_d5_35_one_gradient_per_tensor():
    x = T([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        wb.autograd.backward([x * 2, x * 3], grad_tensors=[T([1.0])])


def test_d5_36_gradients_must_be_tensors():
    x = T([1.0], requires_grad=True)
    with pytest.raises(TypeError, match="gradients can be either Tensors or None, but got float"):
        wb.autograd.backward([x * 2], grad_tensors=[1.0])


def test_d5_37_backward_of_a_tensor_without_history_fails():
    """test_backward_badcalls"""
    with pytest.raises(
        RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"
    ):
        T([1.0, 2.0]).sum().backward()


def test_d5_38_inputs_limits_which_leaves_get_grad():
    """test_backward_with_inputs"""
    a = T([1.0, 2.0], requires_grad=True)
    b = T([3.0, 4.0], requires_grad=True)
    (a * b).sum().backward(inputs=[a])
    assert values(a.grad) == [3.0, 4.0]
    assert b.grad is None
    (a * b).sum().backward(inputs=b)  # a single tensor is accepted too
    assert values(b.grad) == [1.0, 2.0] and values(a.grad) == [3.0, 4.0]


def test_d5_39_inputs_may_not_be_empty():
    a = T([1.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be empty."
    ):
        (a * 2).sum().backward(inputs=[])


def test_d5_40_non_leaf_inputs_get_grad_and_leaves_are_untouched():
    """test_backward_with_nonleaf_inputs"""
    x = T([1.0, 2.0], requires_grad=True)
    z = T([5.0], requires_grad=True)
    m = x * 3
    out = (m * m).sum()
    out.backward(inputs=[m, z])
    assert m.retains_grad and values(m.grad) == [6.0, 12.0]
    assert x.grad is None
    assert z.grad is None


def test_d5_41_complex_outputs_need_an_explicit_gradient():
    """test_complex_scalar_backward"""
    x = wb.tensor([1 + 1j], requires_grad=True)
    with pytest.raises(
        RuntimeError, match="grad can be implicitly created only for real scalar outputs"
    ):
        (x * x).sum().backward()


# ---------------------------------------------------------- D6 freed graphs
def test_d6_42_a_second_backward_through_freed_buffers_fails():
    """test_backward_twice_with_saved_values"""
    x = T([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(
        RuntimeError, match="Trying to backward through the graph a second time"
    ) as e:
        y.backward()
    assert "Specify retain_graph=True" in str(e.value)


def test_d6_43_retain_graph_keeps_the_buffers():
    """test_backward_twice_retained_graph_with_saved_values"""
    x = T([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert values(x.grad) == [4.0, 8.0]


def test_d6_44_a_graph_without_saved_tensors_can_run_twice():
    """test_backward_twice_without_saved_values"""
    x = T([1.0, 2.0], requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert values(x.grad) == [2.0, 2.0]


def test_d6_45_saved_tensors_are_gone_after_backward():
    """test_grad_fn_attr_bindings, test_naughty_autograd_function_stashing_ctx"""
    x = T([1.0, 2.0], requires_grad=True)
    y = x.exp()
    assert values(y.grad_fn.saved_tensors["out"]) == values(y)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        y.grad_fn.saved_tensors  # noqa: B018

    stash = []

    class Id(wb.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 1

        @staticmethod
        def backward(ctx, g):
            stash.append(ctx)
            return g

    Id.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        stash[0].saved_tensors  # noqa: B018


def test_d6_46_retain_graph_defaults_to_create_graph():
    x = T([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    grad(y, x, create_graph=True)
    (g,) = grad(y, x)
    assert values(g) == [2.0, 4.0]


# ----------------------------------------------------------- D7 autograd.grad
def test_d7_47_grad_returns_a_tuple_and_leaves_dot_grad_alone():
    """test_grad_nonleaf"""
    x = T([1.0, 2.0], requires_grad=True)
    result = grad((x * x).sum(), x)
    assert isinstance(result, tuple) and values(result[0]) == [2.0, 4.0]
    assert x.grad is None


def test_d7_48_unused_inputs_are_an_error_by_default():
    """test_grad_unreachable"""
    x, z = T([1.0], requires_grad=True), T([1.0], requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match="The differentiated Tensor at index 1 appears to not have been used in the graph. "
        "Set allow_unused=True if this is the desired behavior.",
    ):
        grad((x * 2).sum(), [x, z])


def test_d7_49_allow_unused_and_materialize_grads():
    """test_grad_materialize_grads"""
    x, z = T([1.0], requires_grad=True), T([1.0, 1.0], requires_grad=True)
    gx, gz = grad((x * 2).sum(), [x, z], allow_unused=True)
    assert values(gx) == [2.0] and gz is None
    gx, gz = grad((x * 2).sum(), [x, z], materialize_grads=True)
    assert values(gz) == [0.0, 0.0]
    with pytest.raises(
        ValueError,
        match="Expected allow_unused to be True or not passed when materialize_grads=True",
    ):
        grad((x * 2).sum(), [x, z], allow_unused=False, materialize_grads=True)


def test_d7_50_inputs_must_require_grad():
    x = T([1.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match="One of the differentiated Tensors does not require grad"
    ):
        grad((x * 2).sum(), [x, T([1.0])])


def test_d7_51_outputs_must_require_grad():
    """test_grad_badcalls"""
    x = T([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        grad(T([1.0]).sum(), x)


def test_d7_52_inputs_may_not_be_empty():
    """test_grad_empty_inputs"""
    x = T([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="empty"):
        grad((x * 2).sum(), [])


def test_d7_53_several_outputs_are_summed():
    a = T([1.0, 2.0], requires_grad=True)
    (g,) = grad([(a * a).sum(), (a * 3).sum()], a)
    assert values(g) == [5.0, 7.0]


def test_d7_54_gradient_with_respect_to_an_intermediate():
    a = T([1.0, 2.0], requires_grad=True)
    m = a * 3
    (g,) = grad((m * m).sum(), m)
    assert values(g) == [6.0, 12.0]
    assert a.grad is None


def test_d7_55_the_gradient_of_a_tensor_with_respect_to_itself():
    a = T([1.0, 2.0], requires_grad=True)
    g = T([3.0, 4.0])
    (ga,) = grad(a, a, g)
    assert values(ga) == [3.0, 4.0]
    a.backward(g)
    assert values(a.grad) == [3.0, 4.0]


def test_d7_56_batched_gradients():
    """test_grad_batched_grad"""
    x = T([1.0, 2.0], requires_grad=True)
    (jac,) = grad(x * x, x, wb.eye(2, dtype=wb.float64), is_grads_batched=True)
    assert values(jac) == [[2.0, 0.0], [0.0, 4.0]]


# ----------------------------------------------------------- D8 higher order
def test_d8_57_second_derivative():
    """test_grad"""
    x = T(3.0, requires_grad=True)
    (g,) = grad(x**3, x, create_graph=True)
    assert g.item() == 27.0 and g.requires_grad
    (gg,) = grad(g, x)
    assert gg.item() == 18.0


def test_d8_58_third_derivative():
    x = T(2.0, requires_grad=True)
    (g1,) = grad(x**4, x, create_graph=True)
    (g2,) = grad(g1, x, create_graph=True)
    (g3,) = grad(g2, x)
    assert [g1.item(), g2.item(), g3.item()] == [32.0, 48.0, 48.0]


def test_d8_59_without_create_graph_the_gradient_has_no_history():
    x = T(3.0, requires_grad=True)
    (g,) = grad(x**3, x)
    assert g.requires_grad is False and g.grad_fn is None


def test_d8_60_hessian_vector_product_through_backward():
    """test_hessian_vector"""
    x = T([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = T([[5.0, 6.0], [7.0, 8.0]], requires_grad=True)
    z = x**2 + y * x + y**2
    with pytest.warns(UserWarning):
        z.backward(wb.ones(2, 2, dtype=wb.float64), create_graph=True)
    x_grad = 2 * x + y
    y_grad = x + 2 * y
    np.testing.assert_allclose(x.grad.detach().numpy(), x_grad.detach().numpy())
    np.testing.assert_allclose(y.grad.detach().numpy(), y_grad.detach().numpy())
    grad_sum = 2 * x.grad + y.grad
    grad_sum.backward(wb.ones(2, 2, dtype=wb.float64))
    np.testing.assert_allclose(x.grad.detach().numpy(), (x_grad + 5).detach().numpy())
    np.testing.assert_allclose(y.grad.detach().numpy(), (y_grad + 4).detach().numpy())


def test_d8_61_backward_with_create_graph_warns_and_grad_does_not():
    """test_backward_create_graph_warns"""
    x = T([1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="Using backward\\(\\) with create_graph=True"):
        (x * x).sum().backward(create_graph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grad((x * x).sum(), x, create_graph=True)
