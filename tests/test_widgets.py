"""The widgets as Python objects: state after clicks, panels, inspection, bad input.

The browser half (JupyterLab in Chromium) is tests/test_browser.py.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import workbench as wb
from tests.helpers import dot_vertices
from workbench.core import events
from workbench.widgets import BackwardStepper
from workbench.widgets.explorers import _as_grid
from workbench.widgets.panel import format_array


def small_graph():
    """loss = sum(sigmoid(x * w + b)) with w broadcast over rows and b a scalar."""
    x = wb.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True, name="x")
    w = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="w")
    b = wb.tensor(0.1, requires_grad=True, name="b")
    loss = wb.sigmoid(x * w + b).sum()
    return loss, x, w, b


def reference_grads():
    loss, x, w, b = small_graph()
    loss.backward()
    return {"x": x.grad.numpy(), "w": w.grad.numpy(), "b": b.grad.numpy()}


def node_of(t):
    """The node whose step handles ``t``'s gradient (a leaf's AccumulateGrad)."""
    return t.grad_fn if t.grad_fn is not None else t._grad_acc()


def test_import_workbench_does_not_import_ipywidgets():
    code = "import sys, workbench; print('ipywidgets' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_first_step_is_the_root_and_next_moves_the_highlight_and_panel():
    loss, *_ = small_graph()
    stepper = BackwardStepper(loss)
    assert stepper.error is None
    assert stepper.step == 1  # steps count from 1: the root's node is step 1
    assert stepper.active == loss.grad_fn.uid == stepper.graph.active
    assert stepper.active in dot_vertices(stepper.graph.dot)
    first_panel = stepper.panel.value
    assert "SumBackward0" in first_panel
    stepper.next_button.click()
    # one numbering: the second step is "Step 2" in the panel, the slider and the picture
    assert stepper.step == 2 and stepper.slider.value == 2 and stepper.graph.step == 2
    assert "Step 2 of" in stepper.panel.value
    assert stepper.active == loss.grad_fn.next_functions[0][0].uid
    assert stepper.panel.value != first_panel
    assert "SigmoidBackward0" in stepper.panel.value
    assert "Backward: x̄ = ȳ · y · (1 − y)" in stepper.panel.value
    assert "<th>forward mode</th><td>JVP: ẏ = ẋ · y · (1 − y)" in stepper.panel.value


def test_prev_at_step_one_stays():
    loss, *_ = small_graph()
    stepper = BackwardStepper(loss)
    assert stepper.prev() is False
    stepper.prev_button.click()
    assert stepper.step == 1
    assert stepper.prev_button.disabled
    assert "first step" in stepper.panel.value


def test_stepping_backwards_shows_earlier_steps_again():
    loss, *_ = small_graph()
    stepper = BackwardStepper(loss)
    stepper.next()
    stepper.next()
    panel_at_two = stepper.panel.value
    stepper.prev()
    assert stepper.step == 2 and "SigmoidBackward0" in stepper.panel.value
    stepper.next()
    assert stepper.panel.value == panel_at_two


def test_live_stepping_fills_in_the_real_grads_in_engine_order():
    loss, x, w, b = small_graph()
    expected = reference_grads()
    stepper = BackwardStepper(loss)
    assert b.grad is None
    assert stepper.run_to(b) is True
    assert stepper.active == node_of(b).uid
    np.testing.assert_allclose(b.grad.numpy(), expected["b"])
    assert w.grad is None and x.grad is None  # their nodes have not run yet
    leaf = stepper.record.leaf
    assert leaf.name == "b" and leaf.before is None
    assert format_array(leaf.after) in stepper.panel.value
    while stepper.next():
        pass
    for name, t in (("x", x), ("w", w), ("b", b)):
        np.testing.assert_allclose(t.grad.numpy(), expected[name])
    assert stepper.next_button.disabled


def test_reset_shows_the_first_step_and_puts_the_grads_back():
    loss, x, w, b = small_graph()
    stepper = BackwardStepper(loss)
    stepper.go(5)
    assert b.grad is not None
    stepper.reset_button.click()
    assert stepper.step == 1 and stepper.active == loss.grad_fn.uid
    assert b.grad is None  # as at the first step: b's node had not run yet


def test_collapse_sum_step_names_the_summed_axes():
    loss, x, w, b = small_graph()
    stepper = BackwardStepper(loss)
    add_node = loss.grad_fn.next_functions[0][0].next_functions[0][0]
    stepper.run_to(add_node)
    record = stepper.record
    assert record.name == "AddBackward0"
    (collapse,) = record.collapses
    assert collapse.from_shape == (2, 3) and collapse.to_shape == () and collapse.axes == (0, 1)
    assert collapse.input_index == 1  # the edge to b
    assert "summed axes (0, 1)" in stepper.panel.value


def test_leaf_grad_before_and_after_accumulation():
    loss, x, w, b = small_graph()
    b.grad = wb.tensor(10.0)
    stepper = BackwardStepper(loss)
    stepper.run_to(b)
    leaf = stepper.record.leaf
    assert float(leaf.before) == 10.0
    assert float(leaf.after) == pytest.approx(10.0 + reference_grads()["b"])


def test_run_to_node_button_uses_the_picked_node():
    loss, x, w, b = small_graph()
    stepper = BackwardStepper(loss)
    order = [uid for _, uid in stepper.node_picker.options]
    assert stepper.node_picker.value == order[0] == loss.grad_fn.uid
    stepper.node_picker.value = node_of(w).uid
    stepper.run_to_button.click()
    assert stepper.active == node_of(w).uid
    stepper.continue_()
    ran = [r.node for r in stepper.cursor.source.records]
    assert order == ran  # the picker lists nodes in the order they run


def test_run_to_a_node_that_already_ran_goes_back_to_it():
    loss, x, w, b = small_graph()
    stepper = BackwardStepper(loss)
    stepper.continue_()  # to the end
    assert stepper.run_to(loss) is True
    assert stepper.step == 1
    assert "already run" in stepper.panel.value


def test_run_to_a_node_outside_the_graph_stays_and_says_so():
    loss, *_ = small_graph()
    stepper = BackwardStepper(loss)
    assert stepper.run_to("n999999") is False
    assert stepper.step == 1
    assert "does not run" in stepper.panel.value


def test_breakpoints_stop_continue():
    loss, x, w, b = small_graph()
    stepper = BackwardStepper(loss)
    assert stepper.toggle_breakpoint(w) is True
    assert stepper.graph.classes == {node_of(w).uid: "breakpoint"}  # nothing else at step 1
    assert stepper.continue_() is True
    assert stepper.active == node_of(w).uid
    assert "breakpoint" in stepper.panel.value
    assert stepper.continue_() is False  # none ahead: runs to the end
    assert stepper.cursor.source.finished and stepper.step == len(stepper.cursor.source.records)
    assert stepper.toggle_breakpoint(w) is False
    assert all("breakpoint" not in names for names in stepper.graph.classes.values())


def test_moving_the_slider_steps_like_play_does():
    loss, *_ = small_graph()
    stepper = BackwardStepper(loss)
    stepper.slider.value = 5  # what Play does in the browser, through jslink: "Step 5"
    assert stepper.step == 5 and stepper.record.name == "MulBackward0"
    assert stepper.active == stepper.record.node


def test_clicking_a_node_inspects_its_data_grad_and_saved_tensors():
    loss, x, w, b = small_graph()
    stepper = BackwardStepper(loss)
    sigmoid_node = loss.grad_fn.next_functions[0][0]
    stepper.graph.selected = sigmoid_node.uid  # what a click in the SVG does
    text = stepper.inspector.value
    assert "SigmoidBackward0" in text and "saved out" in text
    assert "not reached yet" in text
    expected_out = wb.sigmoid(x * w + b).detach().numpy()
    assert format_array(expected_out).splitlines()[0] in text.replace("&#x27;", "'")
    stepper.next()  # the sigmoid step runs: its incoming gradient is known, saved out freed
    assert "not reached yet" not in stepper.inspector.value
    assert "freed after this node" in stepper.inspector.value
    assert stepper.node_picker.value == sigmoid_node.uid


def test_clicking_a_saved_tensor_inspects_the_node_that_saved_it():
    loss, x, w, b = small_graph()
    stepper = BackwardStepper(loss)
    mul_node = loss.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0]
    assert f"{mul_node.uid}.a" in dot_vertices(stepper.graph.dot)  # saved a: a box of its own
    stepper.graph.selected = f"{mul_node.uid}.a"
    assert "MulBackward0" in stepper.inspector.value and "saved a" in stepper.inspector.value
    assert stepper.node_picker.value == mul_node.uid


@pytest.mark.parametrize(
    ("target", "words"),
    [
        (lambda: wb.tensor([1.0, 2.0]), "does not require grad"),
        (lambda: 3.0, "needs a loss Tensor or a saved Trace"),
        (lambda: wb.tensor([1.0, 2.0], requires_grad=True) * 2, "only for scalar outputs"),
    ],
)
def test_bad_input_shows_a_message_not_a_traceback(target, words):
    stepper = BackwardStepper(target())
    assert stepper.error is not None and words in stepper.error
    assert words in stepper.message.value
    assert stepper.next_button.disabled and stepper.slider.disabled
    assert stepper.next() is False


def test_a_freed_graph_explains_retain_graph_in_the_widget():
    loss, *_ = small_graph()
    loss.backward()
    stepper = BackwardStepper(loss)
    while stepper.next():
        pass
    assert "retain_graph=True" in stepper.message.value


def test_stepper_from_a_saved_trace_matches_the_live_run(tmp_path):
    loss, *_ = small_graph()
    with wb.trace() as tr:
        small_graph()[0].backward()
    path = tr.save(tmp_path / "run.json")
    replay = BackwardStepper(wb.Trace.load(path))
    live = BackwardStepper(loss)
    assert replay.error is None
    names, live_names = [], []
    for stepper, got in ((replay, names), (live, live_names)):
        got.append((stepper.record.name, format_array(stepper.record.grads_in[0])))
        while stepper.next():
            got.append((stepper.record.name, format_array(stepper.record.grads_in[0])))
    assert names == live_names
    assert replay.active in dot_vertices(replay.graph.dot)


def test_a_trace_without_backward_is_a_message():
    with wb.trace() as tr:
        (wb.tensor([1.0], requires_grad=True) * 2).sum()
    stepper = BackwardStepper(tr)
    assert "no backward pass" in stepper.message.value


def test_a_two_hundred_node_chain_steps_to_the_end():
    x = wb.tensor([0.5], requires_grad=True)
    y = x
    for _ in range(199):
        y = y * 1.01
    loss = y.sum()
    stepper = BackwardStepper(loss)
    stepper.continue_()
    assert len(stepper.cursor.source.records) == 201
    # the picture is folded (too big to read): the lit vertex is the box holding the node
    assert stepper.graph.active in dot_vertices(stepper.graph.dot)
    np.testing.assert_allclose(x.grad.numpy(), [1.01**199], rtol=1e-5)


def test_events_heard_by_the_stepper_are_still_published_to_others():
    loss, *_ = small_graph()
    with events.collect("node_step") as got:
        stepper = BackwardStepper(loss)
        stepper.next()
    assert [e.name for e in got.events] == ["SumBackward0", "SigmoidBackward0"]


def test_live_graph_grows_with_each_refresh_and_marks_new_vertices():
    live = wb.widgets.LiveGraph(auto=False)
    assert "No ops yet" in live.status.value
    x = wb.tensor([1.0, 2.0], requires_grad=True, name="x")
    y = (x * 3).exp()
    live.refresh()
    assert y.grad_fn.uid in dot_vertices(live.view.dot)
    z = y.sum()
    live.refresh()
    assert live.view.classes == {z.grad_fn.uid: "new", z.uid: "new"}
    assert "3 ops recorded" in live.status.value
    live.stop()
    (z * 2).sum()
    live.refresh()
    assert "3 ops recorded" in live.status.value  # stopped: nothing more heard
    live.clear()
    assert live.view.dot == "" and "No ops yet" in live.status.value
    assert not events.listening  # stopped stays stopped: no subscriber left behind


def test_live_graph_keeps_no_tensor_alive():
    import gc
    import weakref

    live = wb.widgets.LiveGraph(auto=False)
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    ref = weakref.ref(y)
    live.refresh()
    del y
    gc.collect()
    assert ref() is None
    live.stop()


def test_sigmoid_explorer_slope_comes_from_backward_and_matches_the_rule():
    explorer = wb.widgets.SigmoidExplorer(x=0.0)
    assert explorer.point.slope == 0.25
    first_png = explorer.image.value
    explorer.slider.value = 2.0
    p = explorer.point
    assert p.x == 2.0
    assert p.slope == pytest.approx(p.value * (1 - p.value), abs=1e-12)
    assert p.slope == pytest.approx(p.finite_difference, abs=1e-8)
    assert bytes(explorer.image.value) != bytes(first_png)
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert f"{p.slope:.6f}" in explorer.readout.value


def test_broadcast_explorer_shows_the_collapse_sum_of_each_input():
    explorer = wb.widgets.BroadcastExplorer("2, 1", "1, 3", op="mul")
    a, b = explorer.result.inputs
    assert explorer.result.out_shape == (2, 3)
    assert a.axes == (1,) and b.axes == (0,)
    assert a.grad_before.shape == b.grad_before.shape == (2, 3)
    np.testing.assert_allclose(a.grad_after, a.grad_before.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(b.grad_after, b.grad_before.sum(axis=0, keepdims=True))
    weights = np.arange(1, 7).reshape(2, 3)
    np.testing.assert_allclose(b.grad_before, weights * np.broadcast_to(a.value, (2, 3)))
    assert "collapse-sum over axes (1,)" in explorer.readout.value


def test_broadcast_explorer_scalar_and_add():
    explorer = wb.widgets.BroadcastExplorer("", "2, 3", op="add")
    a, b = explorer.result.inputs
    assert a.shape == () and a.axes == (0, 1) and b.axes == ()
    assert float(a.grad_after) == pytest.approx(21.0)  # the weights 1..6 summed


@pytest.mark.parametrize(("a", "b", "words"), [("2, 3", "4", "(4,)"), ("2, x", "3", "not a shape")])
def test_broadcast_explorer_bad_shapes_show_a_message(a, b, words):
    explorer = wb.widgets.BroadcastExplorer(a, b)
    assert explorer.result is None and words in explorer.error
    assert "wb-message" in explorer.readout.value and bytes(explorer.image.value) == b""
    assert explorer.image.layout.display == "none"  # hidden, not a broken picture
    explorer.a_text.value, explorer.b_text.value = "2, 3", "3"
    assert explorer.error is None and explorer.image.layout.display is None


def test_broadcast_explorer_draws_3d_shapes_as_slices():
    explorer = wb.widgets.BroadcastExplorer("4, 1, 3", "2, 1")
    a, b = explorer.result.inputs
    assert explorer.result.out_shape == (4, 2, 3)
    assert a.axes == (1,) and b.axes == (0, 2)
    np.testing.assert_allclose(b.grad_after, b.grad_before.sum(axis=(0, 2))[:, None])
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    grid = _as_grid(a.grad_before)  # the four (2, 3) slices side by side, a blank between
    assert grid.shape == (2, 4 * 3 + 3)
    for i in range(4):
        np.testing.assert_array_equal(grid[:, 4 * i : 4 * i + 3], a.grad_before[i])
    assert np.isnan(grid[:, 3::4]).all()
    assert _as_grid(np.zeros((7, 2, 2))) is None  # too many slices: the table says it all
