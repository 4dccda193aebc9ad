"""Conformance with PyTorch, REFERENCE D14: custom autograd Functions."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.autograd import Function, once_differentiable


def T(data, requires_grad=False):
    return wb.tensor(data, dtype=wb.float64, requires_grad=requires_grad)


def values(t) -> list:
    return t.detach().numpy().tolist()


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return grad * result


def test_d14_100_a_function_that_saves_its_output():
    """test_function"""
    x = T([0.0, 1.0], requires_grad=True)
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.0, 1.0]))


def test_d14_101_forward_runs_without_grad_and_backward_in_create_graph_mode():
    modes = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            modes["forward"] = wb.is_grad_enabled()
            return x * 2

        @staticmethod
        def backward(ctx, g):
            modes.setdefault("backward", []).append(wb.is_grad_enabled())
            return g * 2

    x = T([1.0], requires_grad=True)
    Probe.apply(x).sum().backward()
    wb.autograd.grad(Probe.apply(x).sum(), x, create_graph=True)
    assert modes == {"forward": False, "backward": [False, True]}


def _returning(*grads):
    class Returns(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            return grads

    return Returns


def test_d14_102_the_number_of_gradients_is_checked():
    """test_too_many_grads"""
    a, b = T([1.0], requires_grad=True), T([2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match=r"returned an incorrect number of gradients \(expected 3, got 1\)"
    ):
        _returning(T([1.0])).apply(a, b, 3.0).sum().backward()
    _returning(T([1.0]), T([1.0]), None, None, None).apply(a, b, 3.0).sum().backward()
    assert values(a.grad) == [1.0]
    with pytest.raises(
        RuntimeError,
        match="returned a gradient different than None at position 3, but the corresponding "
        "forward input was not a Variable",
    ):
        _returning(T([1.0]), T([1.0]), T([1.0])).apply(a, b, 3.0).sum().backward()


def test_d14_103_a_wrong_gradient_shape_is_an_error():
    """test_invalid_gradients"""
    x = wb.ones(5, 5, dtype=wb.float64, requires_grad=True)

    class Wrong(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return wb.ones(10, dtype=wb.float64)

    with pytest.raises(
        RuntimeError,
        match=r"returned an invalid gradient at index 0 - got \[10\] but expected shape "
        r"compatible with \[5, 5\]",
    ):
        Wrong.apply(x).sum().backward()


def test_d14_104_a_none_gradient_leaves_grad_unset():
    """test_function_returns_undefined_tensor"""

    class Nothing(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return None

    x = T([1.0], requires_grad=True)
    Nothing.apply(x).sum().backward()
    assert x.grad is None
    assert wb.autograd.grad(Nothing.apply(x).sum(), x, allow_unused=True) == (None,)


def test_d14_105_needs_input_grad():
    """test_hook_none"""
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            seen["forward"] = ctx.needs_input_grad
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            seen["backward"] = ctx.needs_input_grad
            return g, None, None

    Probe.apply(T([1.0], requires_grad=True), T([2.0]), 3.0).sum().backward()
    assert seen == {"forward": (True, False, False), "backward": (True, False, False)}


def test_d14_106_save_for_backward_takes_tensors_and_none():
    """test_save_none_for_backward"""

    class SaveNone(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(None, a, None)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            first, a, last = ctx.saved_tensors
            assert first is None and last is None
            return g * a

    x = T([3.0], requires_grad=True)
    SaveNone.apply(x).sum().backward()
    assert values(x.grad) == [3.0]

    class SaveNumber(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(3)
            return a

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(
        TypeError, match="save_for_backward can only save variables, but argument 0 is of type int"
    ):
        SaveNumber.apply(x)


def test_d14_107_non_differentiable_outputs_get_zero_gradients():
    """test_mark_non_differentiable_mixed"""
    received = []

    class MaxWithIndex(Function):
        @staticmethod
        def forward(ctx, a):
            index = a.argmax().to(wb.float64)  # a float output marked non-differentiable
            ctx.mark_non_differentiable(index)
            return a * 2, index

        @staticmethod
        def backward(ctx, g, g_index):
            received.append(values(g_index))
            return g * 2

    x = T([1.0, 3.0], requires_grad=True)
    out, index = MaxWithIndex.apply(x)
    assert out.requires_grad and not index.requires_grad
    out.sum().backward()
    assert received == [0.0] and values(x.grad) == [2.0, 2.0]


@pytest.mark.parametrize("materialize", [True, False])
def test_d14_108_unused_outputs_get_zeros_unless_materialize_is_off(materialize):
    """test_materialize_grads, test_dont_materialize_grads"""
    received = []

    class Two(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.set_materialize_grads(materialize)
            return a * 1, a * 2

        @staticmethod
        def backward(ctx, g1, g2):
            received.append((values(g1), None if g2 is None else values(g2)))
            return g1

    x = T([1.0, 1.0], requires_grad=True)
    first, _ = Two.apply(x)
    first.sum().backward()
    assert received == [([1.0, 1.0], [0.0, 0.0] if materialize else None)]


class MulInPlace(Function):
    @staticmethod
    def forward(ctx, a, b):
        a.mul_(b)
        ctx.mark_dirty(a)
        ctx.save_for_backward(b)
        return a

    @staticmethod
    def backward(ctx, g):
        (b,) = ctx.saved_tensors
        return g * b, None


def test_d14_109_mark_dirty_returns_the_same_object_with_correct_gradients():
    """test_autograd_python_custom_function_inplace"""
    x = T([1.0, 2.0], requires_grad=True)
    y = x * 1
    version = y._version
    z = MulInPlace.apply(y, T([3.0, 4.0]))
    assert z is y and z._version > version
    assert values(z) == [3.0, 8.0] and z.grad_fn.name() == "MulInPlaceBackward"
    z.sum().backward()
    assert values(x.grad) == [3.0, 4.0]

    class Forgets(Function):
        @staticmethod
        def forward(ctx, a):
            a.add_(1)
            ctx.mark_dirty(a)
            return a * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(
        RuntimeError,
        match="Some elements marked as dirty during the forward method were not returned as "
        "output.",
    ):
        Forgets.apply(x * 1)


def test_d14_110_once_differentiable_refuses_a_second_differentiation():
    """test_once_differentiable"""

    class Square(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return constant(2 * a.detach().numpy() * g.detach().numpy())

    x = T([3.0], requires_grad=True)
    Square.apply(x).sum().backward()
    assert values(x.grad) == [6.0]
    y = Square.apply(x)
    v = T([1.0], requires_grad=True)
    (g,) = wb.autograd.grad(y, x, v, create_graph=True)
    assert g.requires_grad
    with pytest.raises(
        RuntimeError,
        match="trying to differentiate twice a function that was marked with @once_differentiable",
    ):
        g.sum().backward()


def constant(array) -> wb.Tensor:
    return wb.tensor(array, dtype=wb.float64)


def test_d14_111_non_tensor_outputs_pass_through():
    """test_custom_function_non_tensor_inputs_outputs"""

    class Scaled(Function):
        @staticmethod
        def forward(ctx, a, scale, name):
            ctx.scale = scale
            return a * scale, name.upper(), scale + 1

        @staticmethod
        def backward(ctx, g, g_name, g_number):
            assert g_name is None and g_number is None
            return g * ctx.scale, None, None

    x = T([1.0, 2.0], requires_grad=True)
    out, name, number = Scaled.apply(x, 3.0, "abc")
    assert (name, number) == ("ABC", 4.0)
    out.sum().backward()
    assert values(x.grad) == [3.0, 3.0]


def test_d14_112_setup_context_style():
    """test_custom_function_setup_context_simple"""

    class Power(Function):
        @staticmethod
        def forward(x, k):
            return x**k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.save_for_backward(x)
            ctx.k = k

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.k * x ** (ctx.k - 1), None

    x = T([2.0, 3.0], requires_grad=True)
    Power.apply(x, 3).sum().backward()
    assert values(x.grad) == [12.0, 27.0]


def test_d14_113_functions_are_not_instantiated():
    """test_legacy_function_deprecation_exception"""
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        instance = Exp()
    with pytest.raises(
        RuntimeError, match="Legacy autograd function with non-static forward method is deprecated"
    ):
        instance(T([1.0]))


def test_d14_114_forward_and_backward_must_be_implemented():
    """test_custom_function_error"""

    class NoForward(Function):
        @staticmethod
        def backward(ctx, g):
            return g

    class NoBackward(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

    x = T([1.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="must implement the forward"):
        NoForward.apply(x)
    with pytest.raises(RuntimeError, match="must implement either the backward"):
        NoBackward.apply(x).sum().backward()
