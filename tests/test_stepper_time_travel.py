"""Time travel: Prev, Go, the slider and Reset put every .grad back to its value at the
step on show; Next re-applies it. The notebook's ``x.grad`` and the panel always agree.

The reference for "the value at step k" is a second stepper on a fresh copy of the
graph that was only ever run up to step k: what the engine itself leaves in .grad.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.widgets import BackwardStepper
from workbench.widgets.panel import format_array
from workbench.widgets.steps import LiveSteps, StepCursor


def graph(b_grad_before: float | None = None):
    """loss = sum(sigmoid(x * w + b) * h) with h = x * 2 retaining its grad; w used twice."""
    x = wb.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True, name="x")
    w = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="w")
    b = wb.tensor(0.1, requires_grad=True, name="b")
    if b_grad_before is not None:
        b.grad = wb.tensor(b_grad_before)  # left over from an earlier backward()
    h = x * 2
    h.retain_grad()
    loss = (wb.sigmoid(x * w + b) * h).sum() + w.sum()
    return loss, {"x": x, "w": w, "b": b, "h": h}


def grads(tensors: dict) -> dict:
    return {name: None if t.grad is None else t.grad.numpy().copy() for name, t in tensors.items()}


def grads_stopped_at(k: int, b_grad_before: float | None = None) -> dict:
    """The .grad values a pass that was run up to step ``k`` (from 1) and no further leaves."""
    loss, tensors = graph(b_grad_before)
    cursor = StepCursor(LiveSteps(loss))
    assert cursor.go(k - 1)  # the cursor's position is the place in its list of records
    return grads(tensors)


def assert_same(got: dict, expected: dict, k: int) -> None:
    for name in expected:
        if expected[name] is None:
            assert got[name] is None, f"step {k}: {name}.grad should be None, is {got[name]}"
        else:
            assert got[name] is not None, f"step {k}: {name}.grad should be set"
            np.testing.assert_allclose(got[name], expected[name], err_msg=f"{name} at step {k}")


def steps_of_graph() -> int:
    loss, _ = graph()
    return StepCursor(LiveSteps(loss)).source.expected_steps


@pytest.mark.parametrize("b_grad_before", [None, 10.0])
def test_going_back_step_by_step_gives_each_steps_grads(b_grad_before):
    loss, tensors = graph(b_grad_before)
    stepper = BackwardStepper(loss)
    stepper.continue_()  # to the end
    last = stepper.step
    assert last == steps_of_graph()
    for k in range(last, 0, -1):
        assert_same(grads(tensors), grads_stopped_at(k, b_grad_before), k)
        stepper.prev()


def test_a_grad_from_an_earlier_backward_comes_back_before_its_node_runs():
    loss, tensors = graph(b_grad_before=10.0)
    stepper = BackwardStepper(loss)
    stepper.run_to(tensors["b"])
    b_step = stepper.step
    assert float(tensors["b"].grad) != 10.0  # the pass added its part
    stepper.go(b_step - 1)
    assert float(tensors["b"].grad) == 10.0
    stepper.reset()
    assert float(tensors["b"].grad) == 10.0
    stepper.next()
    assert float(tensors["b"].grad) == 10.0


def test_jumps_with_go_and_the_slider_restore_and_reapply():
    loss, tensors = graph()
    stepper = BackwardStepper(loss)
    total = steps_of_graph()
    for k in [total, 3, 1, 6, total - 1, 2]:
        stepper.go(k)
        assert stepper.step == k
        assert_same(grads(tensors), grads_stopped_at(k), k)
    stepper.slider.value = 4  # "Step 4": the slider, the panel and step agree
    assert stepper.step == 4 and "Step 4 of" in stepper.panel.value
    assert_same(grads(tensors), grads_stopped_at(4), 4)


def test_running_on_after_going_back_adds_each_gradient_once():
    """Back to an early step, then on past the furthest step reached: nothing doubles."""
    loss, tensors = graph(b_grad_before=10.0)
    stepper = BackwardStepper(loss)
    stepper.go(6)
    stepper.go(2)  # rewound: the engine is still paused after step 6
    stepper.continue_()  # re-applies steps 3..6, then runs the rest for real
    reference, ref_tensors = graph(b_grad_before=10.0)
    reference.backward()
    assert_same(grads(tensors), grads(ref_tensors), stepper.step)


def test_a_retained_grad_rewinds_too():
    loss, tensors = graph()
    h = tensors["h"]
    stepper = BackwardStepper(loss)
    stepper.run_to(h)  # h's node runs: h.grad is stored when its gradient arrives
    assert h.grad is not None
    value = h.grad.numpy().copy()
    stepper.prev()
    assert h.grad is None
    stepper.next()
    np.testing.assert_array_equal(h.grad.numpy(), value)


def test_the_panel_and_the_grad_agree_at_every_step():
    loss, tensors = graph()
    stepper = BackwardStepper(loss)
    stepper.continue_()
    while True:
        leaf = stepper.record.leaf
        if leaf is not None:
            shown = format_array(tensors[leaf.name].grad.numpy())
            assert format_array(leaf.after) == shown
            assert shown.splitlines()[0] in stepper.panel.value
        if not stepper.prev():
            break


def test_a_grad_the_learner_holds_keeps_its_values():
    """Restoring gives .grad a new tensor: one taken earlier is not changed behind one's back."""
    loss, tensors = graph()
    stepper = BackwardStepper(loss)
    stepper.continue_()
    held = tensors["x"].grad
    before = held.numpy().copy()
    stepper.reset()
    stepper.continue_()
    np.testing.assert_array_equal(held.numpy(), before)


def test_while_play_runs_grad_follows_every_step_and_the_panel_catches_up_on_pause():
    loss, tensors = graph()
    stepper = BackwardStepper(loss)
    stepper.play.playing = True  # what the Play button does in the browser
    for value in range(2, 8):  # Play moves the slider (jslink): steps 2..7, quickly
        stepper.slider.value = value
        assert_same(grads(tensors), grads_stopped_at(value), value)
    stepper.play.playing = False
    assert stepper.step == 7 and "Step 7 of" in stepper.panel.value
