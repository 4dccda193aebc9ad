"""Linked views: the forward graph beside the backward one, lit together.

A forward op and its backward node share an id, so clicking either one, or a tensor
the node saved, lights all of them; while stepping, the forward op whose gradient is
being computed is lit.
"""

from __future__ import annotations

import pytest

import workbench as wb
from tests.test_widgets import small_graph as widget_graph
from workbench.widgets import BackwardStepper


def small_graph():
    """test_widgets' graph, and its multiply node (which saved x and w)."""
    loss, x, w, _ = widget_graph()
    mul = loss.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0]
    return loss, x, w, mul


def linked(graph) -> set:
    return {vid for vid, names in graph.classes.items() if "linked" in names.split()}


def test_stepping_lights_the_forward_op_whose_gradient_is_computed():
    loss, x, w, mul = small_graph()
    stepper = BackwardStepper(loss, view="both")
    assert f'"{mul.uid}" [' in stepper.forward_graph.dot  # the op has its node's id
    seen = []
    while True:
        seen.append((stepper.active, stepper.forward_graph.active))
        if not stepper.next():
            break
    lit = dict(seen)
    assert lit[mul.uid] == mul.uid  # the multiply op itself
    assert lit[x._grad_acc().uid] == x.uid  # a leaf's step lights the leaf tensor x
    assert lit[loss.grad_fn.uid] == loss.grad_fn.uid  # the sum op, at step 1
    assert stepper.forward_graph.step == stepper.graph.step == stepper.slider.value


def test_clicking_a_forward_op_lights_its_backward_node_and_saved_tensors():
    loss, x, w, mul = small_graph()
    stepper = BackwardStepper(loss, view="both")
    stepper.forward_graph.selected = mul.uid  # a click on the op in the forward picture
    assert linked(stepper.graph) == {mul.uid, f"{mul.uid}.a", f"{mul.uid}.b"}
    assert linked(stepper.forward_graph) == {mul.uid, x.uid, w.uid}  # mul saved x and w
    assert "MulBackward0" in stepper.inspector.value
    stepper.next()  # stays lit while stepping
    assert linked(stepper.graph) == {mul.uid, f"{mul.uid}.a", f"{mul.uid}.b"}


def test_clicking_a_saved_tensor_in_the_backward_graph_lights_the_same_three():
    loss, x, w, mul = small_graph()
    stepper = BackwardStepper(loss, view="both")
    stepper.graph.selected = f"{mul.uid}.b"
    assert linked(stepper.graph) == {mul.uid, f"{mul.uid}.a", f"{mul.uid}.b"}
    assert linked(stepper.forward_graph) == {mul.uid, x.uid, w.uid}


def test_the_forward_view_is_made_when_first_switched_to():
    loss, *_ = small_graph()
    stepper = BackwardStepper(loss)
    assert stepper.view_switch.value == "backward" and stepper.forward_graph is None
    stepper.next()
    stepper.view_switch.value = "both"
    assert stepper.forward_graph in stepper.graph_row.children
    assert stepper.forward_graph.step == stepper.graph.step == 2
    assert stepper.forward_graph.active == stepper.active


def test_the_view_switch_shows_one_graph_or_both():
    loss, *_ = small_graph()
    stepper = BackwardStepper(loss, view="both")
    assert stepper.view_switch.value == "both"
    assert stepper.graph.layout.display == stepper.forward_graph.layout.display == ""
    stepper.view_switch.value = "forward"
    assert stepper.graph.layout.display == "none" and stepper.forward_graph.layout.display == ""
    stepper.view_switch.value = "backward"
    assert stepper.graph.layout.display == "" and stepper.forward_graph.layout.display == "none"


def test_a_pytorch_replay_is_linked_to_its_forward_ops_too():
    torch = pytest.importorskip("torch")
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    trace = wb.from_torch((x * x).sum(), names={"x": x})
    stepper = BackwardStepper(trace, view="both")
    assert stepper.error is None and stepper.forward_picture is not None
    stepper.next()
    assert stepper.record.name == "MulBackward0"
    assert stepper.forward_graph.active == stepper.active  # the mul op, under the node's id
    stepper.graph.selected = stepper.active
    assert stepper.active in linked(stepper.forward_graph)
