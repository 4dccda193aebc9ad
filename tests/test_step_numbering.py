"""One step numbering: "step k" names the same node everywhere.

The stepper's ``step``, its panel's "Step k of N", its slider, its picture, ``go(k)``,
``wb.viz.draw(..., step=k)`` of a live graph and of a trace, and a trace's replay
``goto(k)``: for every k, from 1 to N, they all point at the k-th node the engine runs.
"""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.core import events
from workbench.widgets import BackwardStepper


def build():
    """The fan-out graph of lesson 3, with the same ids each time it is built."""
    events.reset_ids()
    x = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="x")
    w = wb.tensor([1.5, -0.5, 0.25], requires_grad=True, name="w")
    h = wb.tanh(x)
    return (h * w).sum() + (h * h).sum()


def lit(graph) -> set[str]:
    """The nodes a picture lights as the step on show (a root's tensor is lit with its node)."""
    return {m for v in graph.model.vertices.values() if "active" in v.classes for m in v.members}


@pytest.fixture
def recorded():
    with wb.trace() as trace:
        build().backward()
    return trace


def test_every_view_of_step_k_names_the_same_node(recorded):
    loss = build()
    drawn = {k: lit(wb.viz.draw(loss, step=k, fold_limit=None)) for k in range(1, 9)}
    stepper = BackwardStepper(loss)  # the same graph, before anything ran
    total = stepper.cursor.source.expected_steps
    assert total == 8 and stepper.step == 1  # made at step 1: the root's node has run
    replay = recorded.replay()
    for k in range(1, total + 1):
        assert stepper.go(k)
        node = stepper.active
        assert stepper.step == k == stepper.slider.value == stepper.graph.step
        assert f"Step {k} of {total}" in stepper.panel.value
        assert stepper.record.step == k
        assert drawn[k] == {node}
        replay.goto(k)  # the trace: a recording of another run of the same program
        assert replay.step == k and replay.current.name == stepper.record.name
        assert lit(wb.viz.draw(recorded, step=k, fold_limit=None)) == {replay.active}
    stepper.close()


def test_next_prev_and_the_slider_count_the_same_way():
    stepper = BackwardStepper(build())
    stepper.next()
    assert stepper.step == 2 and "Step 2 of 8" in stepper.panel.value
    stepper.slider.value = 5
    assert stepper.step == 5 and "Step 5 of 8" in stepper.panel.value
    stepper.prev()
    assert stepper.step == 4 and stepper.slider.value == 4
    assert not stepper.go(0) and not stepper.go(9) and stepper.step == 4
    stepper.close()


def test_a_step_outside_1_to_n_is_refused_with_the_range(recorded):
    for step in (0, 9):
        with pytest.raises(IndexError, match=r"steps 1\.\.8"):
            wb.viz.draw(build(), step=step)
    with pytest.raises(IndexError, match=r"steps 1\.\.8"):
        recorded.replay().goto(9)
