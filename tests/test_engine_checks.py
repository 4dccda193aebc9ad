"""What the engine checks of every gradient a rule returns, and hooks at the leaves.

A rule must return one gradient per input, each a Tensor of its input's shape (a
gradient of another dtype is cast to the input's); a gradient for an input that needs
none is dropped. A leaf's hooks run whether they were registered before or after the
leaf's AccumulateGrad node existed.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.ops.registry import OPS, register_gradient, register_op
from workbench.record.dispatch import apply_op


@pytest.fixture
def scratch_op():
    """Register a one-off op ``x * 2`` whose rule the test supplies; unregister it after."""
    names = []

    def make(name: str, rule):
        names.append(name)
        op = register_op(name, inputs=("x", "y"))(lambda x, y: x * 2)
        register_gradient(name)(rule)
        return op

    yield make
    for name in names:
        OPS.pop(name)


def test_a_rule_with_the_wrong_number_of_gradients_is_refused(scratch_op):
    op = scratch_op("test_plain_count", lambda orig, grad: [grad * 2])
    x = wb.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 2, got 1\)"):
        apply_op(op, (x, 1.0)).sum().backward()


def test_a_rule_with_the_wrong_shape_is_refused(scratch_op):
    op = scratch_op("test_plain_shape", lambda orig, grad: [wb.ones(4), None])
    x = wb.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"got \[4\] but expected shape compatible with \[3\]"):
        apply_op(op, (x, 1.0)).sum().backward()
    assert x.grad is None


def test_a_rule_returning_an_array_is_refused(scratch_op):
    op = scratch_op("test_plain_type", lambda orig, grad: [np.ones(3), None])
    x = wb.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned a ndarray as gradient 0"):
        apply_op(op, (x, 1.0)).sum().backward()


def test_a_gradient_of_another_dtype_is_cast_to_the_input_dtype(scratch_op):
    op = scratch_op("test_plain_cast", lambda orig, grad: [(grad * 2).to(wb.float64), None])
    x = wb.ones(3, requires_grad=True)  # float32
    apply_op(op, (x, 1.0)).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_a_gradient_for_an_input_without_an_edge_is_dropped(scratch_op):
    op = scratch_op("test_plain_drop", lambda orig, grad: [grad * 2, grad * 3])
    x = wb.ones(3, requires_grad=True)
    y = wb.ones(3)  # needs no gradient: its edge leads nowhere
    apply_op(op, (x, y)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    assert y.grad is None


def test_leaf_hooks_run():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    x.register_hook(lambda g: calls.append(g.numpy().copy()))
    x.register_post_accumulate_grad_hook(lambda t: calls.append("post"))
    (x * 3).sum().backward()
    np.testing.assert_array_equal(calls[0], [3.0, 3.0])
    assert calls[1] == "post"
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_a_leaf_hook_added_after_its_node_exists_runs():
    """The engine looks for hooks only at nodes marked ``_hooked``: a hook registered on
    a leaf whose AccumulateGrad is already in a graph must mark it."""
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 3).sum()  # x's AccumulateGrad exists now
    calls = []
    x.register_hook(lambda g: g * 10)
    x.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.numpy().copy()))
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [30.0, 30.0])
    np.testing.assert_array_equal(calls[0], [30.0, 30.0])


def test_a_custom_backward_that_turns_grad_mode_on_leaves_the_rest_of_the_pass_plain():
    """A Function's backward that calls set_grad_enabled(True) and leaves it on: the nodes
    after it still run in the pass's mode, as in PyTorch. Seen by a pack hook around
    backward(): a rule that recorded its ops would save tensors for them."""
    torch = pytest.importorskip("torch")

    def run(lib, function_base, saved_tensors_hooks):
        class LeavesGradOn(function_base):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                lib.set_grad_enabled(True)
                return grad * 2

        x = lib.ones(3, requires_grad=True)
        w = lib.full((3,), 3.0, requires_grad=True)
        loss = LeavesGradOn.apply(x * w).sum()
        packed = []
        with saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
            loss.backward()  # mul's rule, x̄ = ȳ · w, runs after the Function's backward
        return len(packed), x.grad.tolist()

    ours = run(wb, wb.autograd.Function, wb.autograd.graph.saved_tensors_hooks)
    theirs = run(torch, torch.autograd.Function, torch.autograd.graph.saved_tensors_hooks)
    assert ours == theirs == (0, [6.0, 6.0, 6.0])
