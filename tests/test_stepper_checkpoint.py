"""Checkpointing pictured in the stepper: segment frames, and recomputed nodes lit in the
step where the checkpoint reruns them, live and from a saved trace."""

from __future__ import annotations

import workbench as wb
from workbench.core import events
from workbench.utils.checkpoint import checkpoint
from workbench.widgets import BackwardStepper


def checkpointed_loss():
    """loss = sum(exp(tanh(x * w))²) with the three inner ops in one checkpoint segment."""
    x = wb.tensor([0.5, 1.0], requires_grad=True, name="x")
    w = wb.tensor([2.0, 3.0], requires_grad=True, name="w")
    h = checkpoint(lambda t: (t * w).tanh().exp(), x, use_reentrant=False)
    return (h * h).sum(), h


def segment_nodes(h) -> set:
    exp_node = h.grad_fn
    tanh_node = exp_node.next_functions[0][0]
    mul_node = tanh_node.next_functions[0][0]
    return {exp_node.uid, tanh_node.uid, mul_node.uid}


def test_the_segment_is_framed_and_reruns_only_when_the_pass_reaches_it():
    loss, h = checkpointed_loss()
    inside = segment_nodes(h)
    with events.collect("checkpoint_recompute") as heard:
        stepper = BackwardStepper(loss)
    assert heard.events == []  # building the stepper did not rerun the segment
    segment = h.grad_fn.metadata["checkpoint"]
    assert f'subgraph "cluster_{segment}"' in stepper.picture.dot
    assert f'id="segment-{segment}"' in stepper.picture.dot
    lit = {vid for vid, names in stepper.graph.classes.items() if "recomputed" in names}
    assert lit == set()
    stepper.run_to(h.grad_fn)  # exp's rule needs its saved output: the segment reruns
    assert set(stepper.record.recomputed) == inside
    lit = {vid for vid, names in stepper.graph.classes.items() if "recomputed" in names}
    assert lit == inside
    assert "reran its segment" in stepper.panel.value
    stepper.next()
    lit = {vid for vid, names in stepper.graph.classes.items() if "recomputed" in names}
    assert lit == inside  # stays marked
    stepper.prev()
    stepper.prev()
    assert all("recomputed" not in names for names in stepper.graph.classes.values())


def test_a_saved_trace_keeps_the_recompute_marks_and_the_frame():
    with wb.trace() as tr:
        loss, h = checkpointed_loss()
        loss.backward()
    inside = segment_nodes(h)
    graph = wb.viz.draw(tr, kind="backward", fold_limit=None)
    marked = {v.id for v in graph.model.vertices.values() if "recomputed" in v.classes}
    assert marked == inside
    segment = h.grad_fn.metadata["checkpoint"]
    assert f'subgraph "cluster_{segment}"' in graph.dot
    stepper = BackwardStepper(tr)
    stepper.run_to(h.grad_fn.uid)
    assert set(stepper.record.recomputed) == inside
    lit = {vid for vid, names in stepper.graph.classes.items() if "recomputed" in names}
    assert lit == inside
