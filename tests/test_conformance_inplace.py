"""Conformance with PyTorch, REFERENCE D11–D13: in-place ops and the version counter,
detach and requires_grad_, which dtypes may require gradients."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb

VERSION_ERROR = (
    "one of the variables needed for gradient computation has been modified by an inplace operation"
)


def T(data, requires_grad=False, dtype=wb.float64):
    return wb.tensor(data, dtype=dtype, requires_grad=requires_grad)


def values(t) -> list:
    return t.detach().numpy().tolist()


# ----------------------------------------------------------- D11 version counter
def test_d11_80_the_version_counter_is_shared_by_views_and_detach():
    """test_version_counter"""
    x = T([1.0, 2.0, 3.0, 4.0])
    assert x._version == 0
    x.add_(1)
    x.mul_(2)
    assert x._version == 2
    view, detached = x.view(2, 2), x.detach()
    view.add_(1)
    assert x._version == view._version == detached._version == 3
    detached.zero_()
    assert x._version == 4
    x.data.add_(1)  # writes through .data bypass the counter
    assert x._version == 4
    assert values(x) == [1.0, 1.0, 1.0, 1.0]


def test_d11_81_modifying_a_saved_input_is_caught():
    """test_inplace"""
    x = T([1.0, 2.0], requires_grad=True)
    a = x * 1
    b = a.sin()
    a.mul_(2)
    with pytest.raises(RuntimeError, match=VERSION_ERROR) as info:
        b.sum().backward()
    assert "is at version 1; expected version 0 instead" in str(info.value)


def test_d11_82_modifying_a_saved_output_is_caught():
    x = T([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        y.sum().backward()


def test_d11_83_modifying_what_nothing_saved_is_fine():
    """test_inplace"""
    x = T([1.0, 2.0], requires_grad=True)
    a = x * 1
    b = a + 1
    a.mul_(2)
    b.sum().backward()
    assert values(x.grad) == [1.0, 1.0]


def test_d11_84_in_place_on_a_leaf_that_requires_grad_is_refused():
    x = T([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match="a leaf Variable that requires grad is being used in an in-place operation.",
    ):
        x.mul_(2)


def test_d11_85_in_place_on_a_view_of_such_a_leaf_is_refused():
    """test_inplace_on_view_leaf_errors"""
    x = T([1.0, 2.0], requires_grad=True)
    message = "a view of a leaf Variable that requires grad is being used in an in-place operation."
    with pytest.raises(RuntimeError, match=message):
        x[0] = 5.0
    with pytest.raises(RuntimeError, match=message):
        x.view(2).add_(1)
    assert x._version == 0


def test_d11_86_in_place_on_a_non_leaf_rebases_its_history():
    """test_setitem"""
    x = T([1.0, 1.0], requires_grad=True)
    a = x * 1
    a.mul_(3)
    assert a.grad_fn.name() == "MulBackward0"
    a.sum().backward()
    assert values(x.grad) == [3.0, 3.0]

    x = T([1.0, 1.0], requires_grad=True)
    y = x * 1
    y[0] = 5.0
    y.sum().backward()
    assert values(x.grad) == [0.0, 1.0]

    # Through a view of a non-leaf: the base's history follows.
    x = T([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    row = y[1]
    row.mul_(10)
    assert values(y) == [[1.0, 2.0], [30.0, 40.0]]
    y.sum().backward()
    assert values(x.grad) == [[1.0, 1.0], [10.0, 10.0]]


def test_d11_87_assigning_a_tensor_that_requires_grad_into_a_constant():
    """test_leaf_assignment"""
    x = wb.zeros(5, 5, dtype=wb.float64)
    y = wb.ones(5, dtype=wb.float64, requires_grad=True)
    z = wb.ones(5, dtype=wb.float64, requires_grad=True)
    x[0] = y
    x[1] = 2 * z
    assert x.requires_grad and x.grad_fn is not None
    x.sum().backward()
    assert values(y.grad) == [1.0] * 5
    assert values(z.grad) == [2.0] * 5


def test_d11_88_changing_a_detached_alias_is_caught():
    """test_detach_then_inplace_raises_in_autograd"""
    x = T([1.0, 2.0], requires_grad=True)
    y = x.exp()
    d = y.detach()
    d.zero_()
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        y.sum().backward()


def test_d11_89_anomaly_mode_ends_the_hint_with_good_luck():
    x = T([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning):
        with wb.autograd.detect_anomaly():
            y = x.exp()
            y.add_(1)
            with pytest.raises(RuntimeError, match=VERSION_ERROR) as info:
                y.sum().backward()
    assert str(info.value).endswith("Good luck!")


# --------------------------------------------------------- D12 detach, requires_grad_
def test_d12_90_detach_shares_memory_and_drops_history():
    """test_detach"""
    x = T([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert np.shares_memory(d.numpy(), y.detach().numpy())


def test_d12_91_detach_in_place():
    x = T([1.0, 2.0], requires_grad=True)
    y = x * 2
    assert y.detach_() is y
    assert y.is_leaf and not y.requires_grad
    z = x * 2
    with pytest.raises(RuntimeError, match="view"):
        z[0:1].detach_()


def test_d12_92_requires_grad_can_only_change_on_leaves():
    """test_requires_grad_"""
    x = T([1.0], requires_grad=True)
    y = x * 2
    with pytest.raises(
        RuntimeError,
        match="you can only change requires_grad flags of leaf variables. If you want to use a "
        "computed variable in a subgraph that doesn't require differentiation use "
        "var_no_grad = var.detach().",
    ):
        y.requires_grad_(False)
    assert y.requires_grad_(True) is y


def test_d12_93_requires_grad_on_a_leaf_returns_the_leaf():
    x = T([1.0])
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad_(False)
    assert not x.requires_grad


def test_d12_94_numpy_needs_detach_when_requiring_grad():
    """test_numpy_requires_grad"""
    x = T([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=r"Can't call numpy\(\) on Tensor that requires grad. Use tensor.detach\(\).numpy\(\) "
        "instead.",
    ):
        x.numpy()
    assert x[1].item() == 2.0


# ----------------------------------------------------------------- D13 dtypes
def test_d13_95_integer_tensors_cannot_be_made_to_require_grad():
    with pytest.raises(
        RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"
    ):
        wb.tensor([1, 2], requires_grad=True)


@pytest.mark.parametrize("dtype", [wb.int64, wb.bool_, wb.uint8])
def test_d13_96_requires_grad_on_non_floats(dtype):
    """test_set_requires_grad_only_for_floats"""
    t = wb.tensor([1, 0], dtype=dtype)
    with pytest.raises(
        RuntimeError, match="only Tensors of floating point dtype can require gradients"
    ):
        t.requires_grad_()
    with pytest.raises(
        RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"
    ):
        t.requires_grad = True
    t.requires_grad_(False)
    t.requires_grad = False


@pytest.mark.parametrize("dtype", [wb.float16, wb.float32, wb.float64, wb.complex64, wb.complex128])
def test_d13_97_float_and_complex_dtypes_can_require_grad(dtype):
    t = wb.tensor([1, 2], dtype=dtype, requires_grad=True)
    assert t.requires_grad
    (t * t).sum().backward(wb.tensor(1, dtype=dtype))
    assert t.grad.dtype == dtype


def test_d13_98_float_times_int_stays_float_and_only_the_float_leaf_gets_grad():
    x = T([1.0, 2.0], requires_grad=True, dtype=wb.float32)
    k = wb.tensor([3, 4])
    y = x * k
    assert y.dtype == wb.float32
    y.sum().backward()
    assert values(x.grad) == [3.0, 4.0] and x.grad.dtype == wb.float32
    assert k.grad is None


def test_d13_99_complex_gradients_use_the_conjugate_convention():
    x = wb.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    (x.abs() ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 + 2j, 4 - 2j])


# In-place changes through views of non-leaves, and views that go stale when their base
# changes: each scenario runs on workbench and on torch; values and gradients must agree.
def _stale_view(lib, x):
    y = x * 1
    v = y[1]
    y.mul_(2)  # v was taken before: its history must follow y's new one
    v.sum().backward()
    return v


def _transposed_view(lib, x):
    y = x * 1
    y.t().mul_(2)
    y.sum().backward()
    return y


def _reshaped_view(lib, x):
    y = x * 1
    y.view(4).add_(1)
    y.sum().backward()
    return y


def _view_of_a_view(lib, x):
    y = x * 1
    column = y[:, 0]
    column.mul_(3)
    column[0].mul_(2)
    y.sum().backward()
    return y


def _row_of_a_transpose(lib, x):
    y = x * 1
    y.t()[0].mul_(x[0])  # mul_ saves the old values of its input: they must survive
    (y * y).sum().backward()
    return y


def _buffer_filled_later(lib, x):
    buffer = lib.zeros(2, 2, dtype=lib.float64)
    row = buffer[0]
    buffer[0] = x[1] * 2  # the base gains a history after the view was taken
    (row * 3).sum().backward()
    return row


def _view_gains_a_history(lib, x):
    buffer = lib.zeros(2, 2, dtype=lib.float64)
    buffer[1].add_(x[0])
    (buffer * buffer).sum().backward()
    return buffer


def _sibling_views(lib, x):
    y = x * 1
    first, second = y[0], y[1]
    first.mul_(2)
    (second * first).sum().backward()
    return y


def _chained_in_place(lib, x):
    y = x * 1
    y.pow_(2)
    y.div_(x + 1)
    y.clamp_(0, 1.5)
    y.sum().backward()
    return y


@pytest.mark.parametrize(
    "scenario",
    [
        _stale_view,
        _transposed_view,
        _reshaped_view,
        _view_of_a_view,
        _row_of_a_transpose,
        _buffer_filled_later,
        _view_gains_a_history,
        _sibling_views,
        _chained_in_place,
    ],
    ids=lambda f: f.__name__.strip("_"),
)
def test_d11_86_in_place_through_views_matches_pytorch(scenario):
    torch = pytest.importorskip("torch")
    results = []
    for lib in (wb, torch):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64, requires_grad=True)
        out = scenario(lib, x)
        results.append((out.detach().numpy().copy(), x.grad.numpy().copy(), out.requires_grad))
    (ours, our_grad, ours_req), (theirs, their_grad, theirs_req) = results
    np.testing.assert_allclose(ours, theirs, err_msg="values")
    np.testing.assert_allclose(our_grad, their_grad, err_msg="gradient")
    assert ours_req == theirs_req
