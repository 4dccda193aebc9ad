"""The backward engine's short road for plain nodes (no hooks, no anomaly mode).

``backward()`` runs the speed layer (``autograd/fast.py``): an op's node without
hooks takes ``run_plain_node``, which checks each gradient as it delivers it, and a
leaf without hooks ``run_plain_leaf``. These tests hold the short road to the general one: the same
errors for bad rules, the same casts, and the same gradients and events as a pass in
anomaly mode (which sends every node down the general road).
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench import events
from workbench.autograd.dispatch import apply_op
from workbench.ops.registry import OPS, register_gradient, register_op


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


def _watched(run) -> tuple:
    """``run()``'s result and the NodeStep and GradAccumulated events it published."""
    seen = []
    with events.subscribe(seen.append):
        result = run()
    steps = [e for e in seen if isinstance(e, (events.NodeStep, events.GradAccumulated))]
    assert any(isinstance(e, events.NodeStep) for e in steps)
    return result, steps


def _on_the_general_road(run):
    """``run()`` in anomaly mode: every node takes the general road."""
    with wb.autograd.detect_anomaly():
        return run()


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


def _chain_grads():
    """Gradients of a small network with shared leaves, broadcasting and a fan-out."""
    rng = np.random.default_rng(0)
    x = wb.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    w = wb.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    b = wb.tensor(rng.standard_normal(3), requires_grad=True)
    h = (x @ w + b).tanh()
    loss = (h * h.sigmoid() + h).sum() + (x * b).mean()
    loss.backward()
    return [t.grad.numpy() for t in (x, w, b)]


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_the_short_road_gives_the_gradients_and_events_of_the_general_one():
    plain, plain_steps = _watched(_chain_grads)
    general, general_steps = _on_the_general_road(lambda: _watched(_chain_grads))
    for a, b in zip(plain, general):
        np.testing.assert_array_equal(a, b)
    assert len(plain_steps) == len(general_steps)
    for a, b in zip(plain_steps, general_steps):
        assert type(a) is type(b)
        if isinstance(a, events.NodeStep):
            same = (a.index, a.name, a.op, a.leaf is None)
            assert same == (b.index, b.name, b.op, b.leaf is None)
            for x, y in zip(a.grads_in + a.grads_out, b.grads_in + b.grads_out):
                assert (x is None) == (y is None)
                if x is not None:
                    np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_array_equal(a.after, b.after)


def test_leaf_hooks_still_run_after_the_short_road():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    x.register_hook(lambda g: calls.append(g.numpy().copy()))
    x.register_post_accumulate_grad_hook(lambda t: calls.append("post"))
    (x * 3).sum().backward()
    np.testing.assert_array_equal(calls[0], [3.0, 3.0])
    assert calls[1] == "post"
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
