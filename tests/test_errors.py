"""Errors teach (DESIGN principle 6): bad input names the op and the shapes, never a bare
numpy traceback from deep inside."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb


def message_of(call) -> str:
    with pytest.raises(Exception) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize(
    "name, call",
    [
        ("add", lambda: wb.ones(2, 3) + wb.ones(4)),
        ("sub", lambda: wb.ones(2, 3) - wb.ones(4)),
        ("mul", lambda: wb.ones(2, 3) * wb.ones(4)),
        ("div", lambda: wb.ones(2, 3) / wb.ones(4)),
        ("maximum", lambda: wb.maximum(wb.ones(2, 3), wb.ones(4))),
        ("where", lambda: wb.where(wb.ones(2, 3) > 0, wb.ones(2, 3), wb.ones(4))),
    ],
)
def test_a_broadcast_mismatch_names_the_op_and_both_shapes(name, call):
    with pytest.raises(RuntimeError) as info:
        call()
    message = str(info.value)
    assert message.startswith(f"{name}:")
    assert "(2, 3)" in message and "(4,)" in message
    assert "must match the size of tensor" in message and "non-singleton dimension 1" in message


@pytest.mark.parametrize(
    "make",
    [
        lambda: wb.tensor([1, 2], requires_grad=True),
        lambda: wb.arange(3).requires_grad_(),
        lambda: wb.zeros(2, dtype=wb.int64, requires_grad=True),
        lambda: wb.tensor([True, False], requires_grad=True),
    ],
)
def test_requiring_grad_on_a_non_float_tensor_says_why(make):
    with pytest.raises(RuntimeError, match="floating point") as info:
        make()
    assert "int64" in str(info.value) or "bool" in str(info.value)


def test_a_custom_function_returning_a_wrongly_shaped_gradient_names_both_shapes():
    class Wrong(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return wb.ones(3, 2)

    x = wb.ones(2, 3, requires_grad=True)
    message = message_of(lambda: Wrong.apply(x).sum().backward())
    assert "WrongBackward" in message
    assert "[3, 2]" in message and "[2, 3]" in message


def test_a_broadcastable_custom_gradient_is_summed_back_as_pytorch_does():
    class Broadcasting(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return wb.ones(4, 3)

    x = wb.ones(3, requires_grad=True)
    Broadcasting.apply(x).sum().backward()
    assert x.grad.tolist() == [4.0, 4.0, 4.0]


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ((2, 3), (4, 5), "(2x3 and 4x5)"),
        ((3,), (4,), "(1x3 and 4x1)"),
        ((2, 2, 3), (2,), "(2x3 and 2x1)"),
    ],
)
def test_matmul_inner_dimension_mismatch(a, b, expected):
    message = message_of(lambda: wb.ones(*a) @ wb.ones(*b))
    assert message.startswith("matmul:")
    assert str(a) in message and str(b) in message and expected in message


def test_matmul_batch_mismatch_names_the_batch_dimension():
    message = message_of(lambda: wb.ones(2, 3, 4) @ wb.ones(5, 4, 2))
    assert message.startswith("matmul:") and "batch" in message
    assert "(2, 3, 4)" in message and "(5, 4, 2)" in message


def test_shape_ops_name_the_op_and_the_shape():
    assert "reshape" in message_of(lambda: wb.ones(2, 3).reshape(4, 4))
    assert "(2, 3)" in message_of(lambda: wb.ones(2, 3).reshape(4, 4))
    assert "expand" in message_of(lambda: wb.ones(2, 3).expand(4, 4))
    assert "permute" in message_of(lambda: wb.ones(3).permute(1, 0))
    assert "sum: Dimension out of range" in message_of(lambda: wb.ones(2, 3).sum(3))


def test_an_index_out_of_range_is_an_index_error_that_names_the_op():
    with pytest.raises(IndexError, match="getitem") as info:
        wb.ones(3)[5]
    assert "(3,)" in str(info.value)
    with pytest.raises(IndexError, match="index"):
        wb.ones(3)[[0, 5]]


def test_an_in_place_op_that_would_change_the_shape_is_refused():
    message = message_of(lambda: wb.ones(3).add_(wb.ones(2, 3)))
    assert message.startswith("add_:") and "[3]" in message and "[2, 3]" in message


def test_zero_dim_results_stay_arrays_and_keep_float64():
    """numpy returns np.float64 scalars for 0-d results; tensors must still hold arrays.

    A scalar slipping through made where(c, 1.0, x) treat x as a Python number and
    round ∂(base ** p)/∂p to float32 (found by the pow property test).
    """
    a = wb.tensor(np.float64(-0.7101521235337205), requires_grad=True)
    p = wb.tensor(np.float64(1.2844694664108616), requires_grad=True)
    base = a * a + 0.5
    assert isinstance(base._data, np.ndarray) and base.dtype == np.float64
    z = base**p
    (grad_p,) = wb.autograd.grad(z, [p])
    exact = float(base.item() ** p.item() * np.log(base.item()))
    assert grad_p.dtype == np.float64
    assert abs(grad_p.item() - exact) <= 1e-15 * max(1.0, abs(exact))
    assert wb.where(wb.tensor(True), 1.0, base).dtype == np.float64
