"""What the stepper says agrees with what it shows (issue 39, point 3)."""

from __future__ import annotations

import workbench as wb
from workbench.widgets import BackwardStepper


def small_pass():
    x = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="x")
    w = wb.tensor([1.5, 0.5, -0.25], requires_grad=True, name="w")
    return wb.sigmoid(w * x).sum()


def test_going_back_after_running_to_the_end_drops_the_end_note():
    """Lesson 1 runs to the end, then shows step 2: the panel said "Step 2 of 7" and
    "ran to the end of the backward pass" at once."""
    stepper = BackwardStepper(small_pass())
    stepper.continue_()
    assert "ran to the end" in stepper.panel.value
    assert stepper.go(2) and stepper.step == 2
    assert "ran to the end" not in stepper.panel.value.lower()
    stepper.slider.value = 3
    assert "ran to the end" not in stepper.panel.value.lower()
    stepper.close()


def test_a_move_that_has_something_to_say_still_says_it():
    stepper = BackwardStepper(small_pass())
    stepper.go(stepper.total)
    assert not stepper.next()
    assert "the backward pass is done" in stepper.panel.value
    stepper.go(1)
    assert not stepper.prev() and "This is the first step." in stepper.panel.value
    stepper.close()
