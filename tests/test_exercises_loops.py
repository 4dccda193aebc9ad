"""The backward-loop and optimizer-step checks: right answers pass, each known wrong one
is diagnosed (a node run twice, a node never run, fan-out ignored, .grad replaced; no
momentum, momentum applied wrong)."""

from __future__ import annotations

import heapq
import re

import numpy as np
import pytest
from test_catalogue_course_d import sgd_right as sgd_momentum
from test_catalogue_engine import depth_first_with_a_visited_set

import workbench as wb
from workbench.autograd import reference
from workbench.exercises import (
    ExerciseError,
    NotAnswered,
    check_backward_loop,
    check_optimizer_step,
)
from workbench.exercises import backward_loop as loop_check
from workbench.record.graph import AccumulateGrad


def raises(call, *args, **kwargs) -> ExerciseError:
    with pytest.raises(ExerciseError) as info:
        call(*args, **kwargs)
    return info.value


# --------------------------------------------------------- learners' loops
def count_edges(start, walk_each_node_once=True) -> dict:
    deps, stack, seen = {}, [start], {start}
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            deps[child] = deps.get(child, 0) + 1
            if walk_each_node_once and child in seen:
                continue
            seen.add(child)
            stack.append(child)
    return deps


def add_into_grad(leaf, grad) -> None:
    leaf.grad = grad if leaf.grad is None else leaf.grad + grad


def learners_loop(
    walk_each_node_once=True, push_on_every_gradient=False, keep_buffers=False, add=add_into_grad
):
    """A backward loop as a learner writes it; the flags put in one mistake each."""

    def backward(root):
        start = root.grad_fn
        deps = count_edges(start, walk_each_node_once)
        buffers = {start: wb.ones_like(root)}
        ready = [(-start._seq, start)]
        with wb.no_grad():
            while ready:
                _, node = heapq.heappop(ready)
                grad = buffers.get(node) if keep_buffers else buffers.pop(node, None)
                if grad is None:  # no gradient reached it: nothing to compute
                    grads = [None] * len(node.next_functions)
                elif isinstance(node, AccumulateGrad):
                    add(node.variable, grad)
                    continue
                else:
                    grads = node.apply([grad])
                for (child, _), g in zip(node.next_functions, grads):
                    if child is None:
                        continue
                    if g is not None:
                        buffers[child] = g if child not in buffers else buffers[child] + g
                    deps[child] -= 1
                    if deps[child] == 0 or push_on_every_gradient:
                        heapq.heappush(ready, (-child._seq, child))

    return backward


def recursive(root):
    """Sends each gradient down as soon as it is made: right values, nodes run many times."""

    def visit(node, grad):
        if isinstance(node, AccumulateGrad):
            add_into_grad(node.variable, grad)
            return
        for (child, _), g in zip(node.next_functions, node.apply([grad])):
            if child is not None and g is not None:
                visit(child, g)

    with wb.no_grad():
        visit(root.grad_fn, wb.ones_like(root))


# -------------------------------------------------------- the backward loop
def test_the_reference_algorithm_and_a_handwritten_loop_pass():
    result = check_backward_loop(reference.backward)
    assert "Your backward loop is right." in repr(result)
    assert "running each node once" in result.proof
    check_backward_loop(learners_loop())


def test_a_node_that_runs_again_on_every_gradient_is_a_double_count():
    err = raises(check_backward_loop, learners_loop(push_on_every_gradient=True, keep_buffers=True))
    assert err.kind == "factor"
    assert str(err) == (
        "On the fan-out graph, every element of x.grad is 6 times the expected value. "
        "A node ran twice or a gradient was added twice: TanhBackward0 ran 3 times, and each "
        "node must run once."
    )


def test_a_gradient_added_twice_into_grad():
    def add_twice(leaf, grad):
        add_into_grad(leaf, grad)
        leaf.grad = leaf.grad + grad

    err = raises(check_backward_loop, learners_loop(add=add_twice))
    assert str(err) == (
        "On the chain graph, every element of x.grad is 2 times the expected value. "
        "The gradient was added into x.grad twice."
    )


def test_dependencies_counted_too_often_leave_a_node_that_never_runs():
    err = raises(check_backward_loop, learners_loop(walk_each_node_once=False))
    assert err.kind == "missing"
    assert str(err).startswith("On the fan-out graph, x.grad is None, but a gradient was expected.")
    assert "Every node above x's AccumulateGrad ran and sent its gradient" in str(err)
    assert "once its count reaches zero" in str(err)


def test_a_loop_that_ignores_fan_out():
    err = raises(check_backward_loop, depth_first_with_a_visited_set)
    assert str(err).startswith("On the fan-out graph, x.grad is wrong at all 6 elements")
    assert (
        "TanhBackward0 ran before all its gradients had arrived: 3 edges lead into it (fan-out) "
        "and 1 had delivered" in str(err)
    )
    assert err.wrong.all()


def test_right_gradients_from_a_node_run_several_times_still_fail():
    err = raises(check_backward_loop, recursive)
    assert str(err).startswith(
        "On the fan-out graph, your loop gets the right gradients, but TanhBackward0 ran 3 times."
    )
    assert err.finding is None


def test_replacing_a_grad_that_already_held_one():
    def replace(leaf, grad):
        leaf.grad = grad

    err = raises(check_backward_loop, learners_loop(add=replace))
    assert "On the broadcasting graph, x.grad is wrong" in str(err)
    assert "x.grad already held a gradient before this backward: add into it" in str(err)


def test_a_leaf_node_run_before_its_second_gradient_arrived():
    def run_leaves_early(root):
        """Runs a leaf's node as soon as a gradient reaches it, and only once."""
        start = root.grad_fn
        deps = count_edges(start)
        buffers = {start: wb.ones_like(root)}
        ready = [(-start._seq, start)]
        leaves_done = set()
        with wb.no_grad():
            while ready:
                _, node = heapq.heappop(ready)
                grad = buffers.pop(node, None)
                if isinstance(node, AccumulateGrad):
                    if node not in leaves_done:
                        add_into_grad(node.variable, grad)
                    leaves_done.add(node)
                    continue
                for (child, _), g in zip(node.next_functions, node.apply([grad])):
                    if child is None:
                        continue
                    buffers[child] = g if child not in buffers else buffers[child] + g
                    deps[child] -= 1
                    if deps[child] == 0 or isinstance(child, AccumulateGrad):
                        heapq.heappush(ready, (-child._seq, child))

    err = raises(check_backward_loop, run_leaves_early)
    assert "On the broadcasting graph, b.grad is wrong" in str(err)
    assert "b.grad holds only part of the 2 gradients that reach b" in str(err)
    assert "its AccumulateGrad ran before all its gradients had arrived" in str(err)


def test_a_loop_that_never_starts():
    err = raises(check_backward_loop, lambda root: None)
    assert "SumBackward0, the first node, never ran" in str(err)


def test_an_error_in_the_learners_loop_is_one_short_message():
    def typo(root):
        node = root.grad_fn
        return node.aply([wb.ones_like(root)])

    err = raises(check_backward_loop, typo)
    assert str(err).startswith("Your backward loop typo raised an error on line ")
    assert "node.aply" in str(err) and "AttributeError" in str(err)
    assert err.__cause__ is None


def test_apply_called_without_a_list_is_explained():
    err = raises(check_backward_loop, lambda root: root.grad_fn.apply(wb.ones_like(root)))
    assert "called SumBackward0.apply with a Tensor" in str(err)
    assert "node.apply([grad])" in str(err)


def test_a_loop_that_never_stops_is_stopped():
    def forever(root):
        node = root.grad_fn
        while True:
            node.apply([wb.ones_like(root)])

    err = raises(check_backward_loop, forever)
    assert "more than 50 times: it does not stop" in str(err)


def test_the_graphs_are_left_unwatched():
    root, leaves = loop_check.chain()
    watcher = loop_check.Watcher(root, leaves, learner=True)
    assert "apply" in root.grad_fn.__dict__
    assert all("apply" in node.__dict__ for node in watcher.nodes)  # leaves' nodes too
    watcher.stop()
    assert all("apply" not in node.__dict__ for node in watcher.nodes)


# ----------------------------------------------------------------- pictures
def test_the_picture_lights_the_node_where_the_loop_went_wrong():
    err = raises(check_backward_loop, depth_first_with_a_visited_set)
    html = err._repr_html_()
    assert "[TanhBackward0 ← here]" in html
    assert "wb-heatmap" in html and "expected" in html  # the heat map of x.grad
    try:
        wb.viz.renderers.which_renderer()
    except wb.viz.renderers.RendererMissing:  # only a machine with no renderer skips
        pytest.skip("no Graphviz renderer here: the text fallback was checked above")
    svg = err.picture()
    lit = re.findall(r'<g id="n\d+" class="node[^"]*\bactive\b[^"]*">(.*?)</g>', svg, re.S)
    assert len(lit) == 1 and "Backward: x̄ = ȳ · (1 − y²)" in lit[0]  # tanh's node, alone


def test_the_picture_falls_back_to_text_when_drawing_fails(monkeypatch):
    err = raises(check_backward_loop, depth_first_with_a_visited_set)

    def no_renderer(*args, **kwargs):
        raise RuntimeError("no renderer")

    monkeypatch.setattr(wb.viz, "draw", no_renderer)
    picture = err.picture()
    assert "<svg" not in picture and "[TanhBackward0 ← here]" in picture


def test_the_lit_graph_is_a_drawing_a_notebook_lays_out_with_the_node_at_its_step():
    """What lesson 4 shows under the impatient loop's message: no renderer needed."""
    err = raises(check_backward_loop, depth_first_with_a_visited_set)
    drawing = err.picture.graph()
    assert isinstance(drawing, wb.viz.Graph)
    active = [line for line in drawing.dot.splitlines() if 'class="backward active"' in line]
    assert len(active) == 1 and 'label="TanhBackward0' in active[0]
    lit = re.search(r'id="([^"]+)"', active[0]).group(1)
    assert drawing.order.index(lit) + 1 == drawing.step  # lit at the step the engine runs it
    assert err.picture.name == "TanhBackward0"
    assert err._repr_html_().count("ran before all its gradients had arrived") == 1


def test_a_loop_that_calls_an_unanswered_count_is_not_answered_yet_and_says_which():
    def count_dependencies(start):
        raise NotImplementedError()

    def my_backward(root):
        count_dependencies(root.grad_fn)

    with pytest.raises(NotAnswered) as caught:
        check_backward_loop(my_backward)
    assert "your function count_dependencies, which your backward loop my_backward calls" in (
        str(caught.value)
    )


def test_the_heat_map_marks_exactly_the_wrong_cells():
    from workbench.exercises.picture import heat_map_html

    got = np.array([[1.0, 2.0], [3.0, 9.0]])
    html = heat_map_html(got, np.array([[1.0, 2.0], [3.0, 4.0]]), got == 9.0, "x.grad")
    assert html.count("background:rgba") == 1
    assert 'title="expected 4, got 9"' in html
    big = heat_map_html(np.zeros((6, 2, 2, 2)), np.ones((6, 2, 2, 2)), np.ones((6, 2, 2, 2)))
    assert big.count("<table") == 2 * 4 and "4 of the 12 slices" in big  # yours, expected
    nan = heat_map_html(np.array([np.nan, 1.0]), np.array([2.0, 1.0]), np.array([True, False]))
    assert "rgba(211,47,47,0.60)" in nan and "nan" not in nan.split("rgba")[1][:20]


# ------------------------------------------------------------ optimizer step
# Each mistake's diagnosis, and right answers written other ways: the misconception
# catalogue, tests/test_catalogue_course_d.py. Here: how the check runs a step.


def test_a_right_sgd_step_passes():
    result = check_optimizer_step(sgd_momentum)
    assert "Your SGD step is right." in repr(result)
    assert "wb.optim.SGD(lr=0.05, momentum=0.9)" in result.proof
    assert check_optimizer_step(sgd_momentum, lr=0.2, momentum=0.5, steps=3)


def test_the_step_is_called_with_autograd_recording_as_a_training_loop_calls_it():
    seen = []

    def spy(params, state, lr, momentum):
        seen.append(wb.is_grad_enabled())
        sgd_momentum(params, state, lr, momentum)

    check_optimizer_step(spy)
    assert seen and all(seen)


def test_the_gradients_are_zeroed_in_place_between_steps():
    """As optimizer.zero_grad(set_to_none=False): the same tensor, zeroed, then added into."""
    grads = []

    def spy(params, state, lr, momentum):
        grads.append(params[0].grad)
        sgd_momentum(params, state, lr, momentum)

    check_optimizer_step(spy, steps=3)
    assert grads[0] is grads[1] is grads[2]


def test_a_wrong_step_names_the_first_step_and_parameter_that_differ():
    def plain(params, state, lr, momentum):
        with wb.no_grad():
            for p in params:
                p -= lr * p.grad

    err = raises(check_optimizer_step, plain)
    assert str(err).startswith("At step 2, the change your step made to w is wrong at all 6")
    assert err.input == "w" and err.wrong.shape == (2, 3)


def test_an_error_in_the_step_is_one_short_message():
    def typo(params, state, lr, momentum):
        with wb.no_grad():
            for p in params:
                p -= lr * p.gradient

    err = raises(check_optimizer_step, typo)
    assert str(err).startswith("Your step typo raised an error on line")
    assert "p.gradient" in str(err) and "Traceback" not in str(err)


def test_a_step_left_with_autograd_off_is_named_and_autograd_switched_back_on():
    def off(params, state, lr, momentum):
        wb.set_grad_enabled(False)
        sgd_momentum(params, state, lr, momentum)

    assert "left autograd switched off" in str(raises(check_optimizer_step, off))
    assert wb.is_grad_enabled()


def test_a_tried_rules_own_message_goes_through_the_loop_check():
    from workbench.exercises import trying_rule

    def mul_without_sum(orig, grad):
        x, y = orig.args
        return [grad * y, grad * x]

    with trying_rule("mul", mul_without_sum):
        err = raises(check_backward_loop, learners_loop())
    assert str(err).startswith("Your rule mul_without_sum raised an error on line")
    assert "orig.needs_input_grad" in str(err)
