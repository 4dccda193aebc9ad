"""Conformance with PyTorch, REFERENCE D1–D3: leaves and graphs, .grad accumulation, retain_grad.

Each test is one checklist item (``d1_01`` is item 1 of section D1); the PyTorch test
it mirrors is named in the docstring.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.record.graph import AccumulateGrad


def T(data, requires_grad=False):
    return wb.tensor(data, dtype=wb.float64, requires_grad=requires_grad)


def values(t) -> list:
    return t.detach().numpy().tolist()


# ------------------------------------------------------------------- D1 graphs
def test_d1_01_a_new_tensor_is_a_leaf():
    """test_requires_grad"""
    a = T([1.0, 2.0], requires_grad=True)
    assert a.is_leaf and a.requires_grad and a.grad is None and a.grad_fn is None


def test_d1_02_next_functions_lead_to_the_accumulator_of_the_leaf():
    """test_next_functions"""
    a = T([1.0, 2.0], requires_grad=True)
    b = a * 2
    assert not b.is_leaf and b.requires_grad
    assert b.grad_fn.name() == "MulBackward0"
    (acc, nr), (constant, _) = b.grad_fn.next_functions
    assert isinstance(acc, AccumulateGrad) and acc.variable is a and nr == 0
    assert constant is None
    # The leaf's accumulator is shared by every node that uses the leaf.
    assert (a + 1).grad_fn.next_functions[0][0] is acc


def test_d1_03_ops_on_tensors_without_grad_record_nothing():
    """test_requires_grad"""
    c = T([1.0, 2.0])
    assert c.is_leaf
    d = c + c
    assert d.requires_grad is False and d.is_leaf


def test_d1_04_one_input_requiring_grad_is_enough():
    a, c = T([1.0, 2.0], requires_grad=True), T([1.0, 2.0])
    assert (a + c).requires_grad is True
    assert (c * a).requires_grad is True


def test_d1_05_integer_and_boolean_outputs_do_not_require_grad():
    """test_integer_outputs"""
    a = T([1.0, 3.0, 2.0], requires_grad=True)
    assert a.argmax().requires_grad is False
    assert (a > 0).requires_grad is False
    assert a.max(0).indices.requires_grad is False
    with pytest.raises(
        RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"
    ):
        a.argmax().backward()


def test_d1_06_repr_shows_requires_grad_or_grad_fn():
    """test_autograd_print_tensor"""
    a = wb.tensor([1.0, 2.0], requires_grad=True)
    assert repr(a) == "tensor([1., 2.], requires_grad=True)"
    assert "grad_fn=<CloneBackward0>" in repr(a.clone())
    assert repr(wb.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
    assert repr(wb.tensor(3.0)) == "tensor(3.)"


def test_d1_07_building_an_op_publishes_an_event_and_the_graph_has_the_right_shape():
    a = T([1.0, 2.0], requires_grad=True)
    b = T([3.0, 4.0])
    with wb.events.collect() as got:
        out = ((a * b) + a).sum()
    recorded = [e for e in got.events if isinstance(e, wb.events.OpRecorded)]
    assert [e.op for e in recorded] == ["mul", "add", "sum"]
    assert recorded[0].inputs == (a.uid, b.uid)
    assert recorded[0].output_shape == (2,)
    assert recorded[0].node == out.grad_fn.next_functions[0][0].next_functions[0][0].uid

    def names(node):
        return None if node is None else node.name()

    add = out.grad_fn.next_functions[0][0]
    assert out.grad_fn.name() == "SumBackward0" and add.name() == "AddBackward0"
    mul, acc = (n for n, _ in add.next_functions)
    assert names(mul) == "MulBackward0" and acc.variable is a
    assert [names(n) for n, _ in mul.next_functions] == ["AccumulateGrad", None]


# ---------------------------------------------------------- D2 .grad accumulation
def test_d2_08_gradients_accumulate_over_backward_calls():
    """test_accumulate_grad"""
    x = T([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    assert values(x.grad) == [2.0, 4.0]
    (x * x).sum().backward()
    assert values(x.grad) == [4.0, 8.0]


def test_d2_09_accumulation_keeps_the_grad_object_unless_create_graph():
    """test_accumulate_grad_tensor_reference"""
    x = T([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    first = x.grad
    (x * x).sum().backward()
    assert x.grad is first and values(first) == [4.0, 8.0]
    with pytest.warns(UserWarning, match="create_graph=True"):
        (x * x).sum().backward(create_graph=True)
    assert x.grad is not first and x.grad.grad_fn is not None
    assert values(first) == [4.0, 8.0]
    assert values(x.grad) == [6.0, 12.0]


def test_d2_10_zeroing_or_clearing_grad_resets_it():
    x = T([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    x.grad.zero_()
    (x * 3).sum().backward()
    assert values(x.grad) == [3.0, 3.0]
    x.grad = None
    (x * 5).sum().backward()
    assert values(x.grad) == [5.0, 5.0]


def test_d2_11_grad_of_a_non_leaf_warns_and_is_none():
    """test_tensor_grad_warnings"""
    y = T([1.0, 2.0], requires_grad=True) * 2
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert y.grad is None


def test_d2_12_broadcast_gradients_are_summed_back_to_each_shape():
    a = wb.ones(2, 3, dtype=wb.float64, requires_grad=True)
    b = wb.ones(3, dtype=wb.float64, requires_grad=True)
    c = wb.ones(2, 1, dtype=wb.float64, requires_grad=True)
    (a * b * c).sum().backward()
    assert values(b.grad) == [2.0, 2.0, 2.0]
    assert values(c.grad) == [[3.0], [3.0]]
    assert values(a.grad) == [[1.0] * 3] * 2


def test_d2_13_each_leaf_gets_a_grad_of_its_own_dtype():
    x = wb.tensor([1.0, 2.0], dtype=wb.float32, requires_grad=True)
    y = wb.tensor([3.0, 4.0], dtype=wb.float64, requires_grad=True)
    (x * y).sum().backward()
    assert x.grad.dtype == wb.float32 and y.grad.dtype == wb.float64
    assert values(x.grad) == [3.0, 4.0]


def _memory(t) -> np.ndarray:
    return t.detach().numpy()


def test_d2_13b_no_two_grads_share_memory_and_none_is_the_callers():
    """A first gradient is kept without a copy only when nothing else holds its memory: an
    in-place update of one ``.grad`` never changes another, nor the caller's gradient."""
    a = T([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = T([[5.0, 6.0], [7.0, 8.0]], requires_grad=True)
    scale = T([1.0, 2.0, 3.0, 4.0])
    ((a.reshape(4) + b.reshape(4)) * scale).sum().backward()  # both: views of one ȳ·scale
    assert not np.shares_memory(_memory(a.grad), _memory(b.grad))
    a.grad.add_(10)
    assert values(b.grad) == [[1.0, 2.0], [3.0, 4.0]]

    c = T([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    given = T([1.0, 1.0, 1.0, 1.0])
    c.reshape(4).backward(given)  # c's gradient: a view of the caller's own tensor
    c.grad.add_(1)
    assert values(given) == [1.0] * 4

    d, e = T([1.0, 2.0], requires_grad=True), T([3.0], requires_grad=True)
    (wb.cat([d, e]) * T([2.0, 3.0, 4.0])).sum().backward()  # slices of one array
    assert _memory(d.grad).base is None and _memory(e.grad).base is None  # (each its own)

    f = T([1.0, 2.0], requires_grad=True)
    f.sum().backward()  # ȳ broadcast: a read-only view, so .grad is a copy
    f.grad.add_(1)
    assert values(f.grad) == [2.0, 2.0]


def test_d2_13c_a_linear_layers_weight_gradient_has_the_weights_layout():
    """nn.Linear's W̄ comes out of two transposes (addmm's, then t's): kept as it is, it is
    laid out as W, and a second pass adds into it."""
    wb.manual_seed(0)
    layer = wb.nn.Linear(3, 2).double()
    x = T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    layer(x).sum().backward()
    first = values(layer.weight.grad)
    assert _memory(layer.weight.grad).flags.c_contiguous
    layer(x).sum().backward()
    assert values(layer.weight.grad) == [[2 * v for v in row] for row in first]
    assert first == [[5.0, 7.0, 9.0], [5.0, 7.0, 9.0]]


def test_d2_14_assigning_grad_checks_type_shape_and_self():
    """test_grad_assignment"""
    x = T([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        x.grad = 3
    with pytest.raises(RuntimeError, match="attempting to assign a gradient of size"):
        x.grad = T([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError):
        x.grad = x
    x.grad = T([5.0, 6.0])
    assert values(x.grad) == [5.0, 6.0]


def test_d2_15_the_same_root_twice_adds_up():
    """test_duplicate_backward_root"""
    a = T([1.0, 2.0], requires_grad=True)
    b = T([3.0, 4.0], requires_grad=True)
    y = a * b
    g = T([1.0, 10.0])
    wb.autograd.backward([y, y], [g, g])
    assert values(a.grad) == [6.0, 80.0]
    assert values(b.grad) == [2.0, 40.0]


def test_d2_16_buffered_gradients_are_never_summed_in_place_twice():
    """test_backward_copy: one gradient buffered in three places."""
    x = wb.ones(5, 5, dtype=wb.float64, requires_grad=True)
    y = wb.ones(5, 5, dtype=wb.float64, requires_grad=True)
    a, b, c = x + 2, y + 2, x + 2
    add2 = (a + b) + c
    for _ in range(4):
        a, b, c = a * 2, b * 2, c * 2
    out = add2 + (a + b + c)
    out.backward(wb.ones(5, 5, dtype=wb.float64))
    np.testing.assert_array_equal(x.grad.numpy(), np.full((5, 5), 34.0))
    np.testing.assert_array_equal(y.grad.numpy(), np.full((5, 5), 17.0))


# -------------------------------------------------------------- D3 retain_grad
def test_d3_17_retain_grad_keeps_a_non_leaf_gradient():
    """test_retain_grad"""
    x = T([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    assert values(y.grad) == [4.0, 8.0]
    assert values(x.grad) == [8.0, 16.0]


def test_d3_18_retain_grad_twice_is_fine_and_accumulates():
    """test_retain_grad"""
    x = T([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.retain_grad()
    out = (y * y).sum()
    out.backward(retain_graph=True)
    out.backward()
    assert values(y.grad) == [8.0, 16.0]


def test_d3_19_retain_grad_on_a_leaf_is_a_no_op():
    x = T([1.0], requires_grad=True)
    x.retain_grad()
    assert x.retains_grad is False


def test_d3_20_retain_grad_needs_requires_grad():
    with pytest.raises(
        RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"
    ):
        T([1.0]).retain_grad()


@pytest.mark.parametrize("hook_first", [True, False])
def test_d3_21_retained_grad_sees_tensor_hooks_in_either_order(hook_first):
    """test_retains_grad_can_always_observe_tensor_prehook"""
    x = T([1.0, 1.0], requires_grad=True)
    y = x * 1
    if hook_first:
        y.register_hook(lambda g: g * 10)
        y.retain_grad()
    else:
        y.retain_grad()
        y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert values(y.grad) == [10.0, 10.0]
    assert values(x.grad) == [10.0, 10.0]


def test_d3_22_retain_grad_follows_an_in_place_change():
    """test_retain_grad_inplace"""
    leaf = T([1.0], requires_grad=True)
    a = leaf.clone()
    a.retain_grad()
    a.mul_(2)
    a.sum().backward()
    assert values(a.grad) == [1.0]
    assert values(leaf.grad) == [2.0]
