"""A backward loop you wrote, recorded with ``trace_loop`` and compared node by node.

``trace_loop(loop, build)`` records the loop's pass as a Trace; ``CompareStepper`` sets
it beside the engine's pass (or PyTorch's) and names the first node where they part.
Right loops agree at every step; each broken loop is found at the node it broke.
"""

from __future__ import annotations

import heapq

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.autograd import reference
from workbench.exercises.backward_loop import GRAPHS, MAX_RUNS, trace_loop
from workbench.record.graph import AccumulateGrad, edge_of
from workbench.widgets import CompareStepper


def heap_loop(root, overwrite=False, replace_grad=False, skip_leaves=False):
    """The lesson's loop; each flag is one mistake a learner makes."""
    start, output_nr = edge_of(root)
    dependencies = reference.count_dependencies(start)
    buffers = {start: [None] * start.num_outputs}
    buffers[start][output_nr] = wb.ones_like(root)
    ready = [(start._order, start)]
    with wb.no_grad():
        while ready:
            _, node = heapq.heappop(ready)
            grads = buffers.pop(node, None)
            if grads is None:
                grads_out = [None] * len(node.next_functions)
            elif isinstance(node, AccumulateGrad):
                leaf = node.variable
                if skip_leaves:
                    continue
                if leaf.grad is None or replace_grad:
                    leaf.grad = grads[0].clone()
                else:
                    leaf.grad = leaf.grad + grads[0]
                continue
            else:
                grads_out = node.apply(grads)
            for (child, nr), grad in zip(node.next_functions, grads_out):
                if child is None:
                    continue
                if grad is not None:
                    slots = buffers.setdefault(child, [None] * child.num_outputs)
                    keep = slots[nr] is None or overwrite
                    slots[nr] = grad if keep else slots[nr] + grad
                dependencies[child] -= 1
                if dependencies[child] == 0:
                    heapq.heappush(ready, (child._order, child))


def impatient_loop(root):
    """No counts, no buffers: each gradient goes on at once (lesson 4's impatient loop)."""
    start, _ = edge_of(root)
    queue = [(start, [wb.ones_like(root)])]
    with wb.no_grad():
        while queue:
            node, grads = queue.pop()
            if isinstance(node, AccumulateGrad):
                leaf = node.variable
                leaf.grad = grads[0].clone() if leaf.grad is None else leaf.grad + grads[0]
                continue
            for (child, _), grad in zip(node.next_functions, node.apply(grads)):
                if child is not None and grad is not None:
                    queue.append((child, [grad]))


def fan_out(lib):
    """Lesson 4's graph: h = tanh(x) used three times; x and w are leaves."""
    if lib is torch:
        x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
        w = torch.tensor([1.5, -0.5, 0.25], requires_grad=True)
    else:
        x = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="x")
        w = wb.tensor([1.5, -0.5, 0.25], requires_grad=True, name="w")
    h = lib.tanh(x)
    return (h * w).sum() + (h * h).sum(), x, w


def compared_with_engine(loop, build) -> CompareStepper:
    return CompareStepper(build()[0], trace_loop(loop, build))


@pytest.mark.parametrize("graph", GRAPHS, ids=[g.name for g in GRAPHS])
def test_a_right_loop_agrees_with_the_engine_at_every_step(graph):
    compared = compared_with_engine(heap_loop, graph.build)
    assert compared.first_difference is None, compared.first_difference
    engine, loop = (side.cursor.source.records for side in compared.sides)
    assert [r.name for r in loop] == [r.name for r in engine]  # the same order, too
    compared.close()


def test_a_loop_s_recorded_pass_agrees_with_pytorch_s_own():
    torch_loss, tx, tw = fan_out(torch)
    recorded = trace_loop(reference.backward, lambda: fan_out(wb))
    compared = CompareStepper(recorded, torch_loss)  # runs PyTorch's backward: fills tx.grad
    assert compared.first_difference is None, compared.first_difference
    leaves = {r.leaf.name: r.leaf.after for r in compared.sides[0].cursor.source.records if r.leaf}
    np.testing.assert_allclose(leaves["x"], tx.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(leaves["w"], tw.grad.numpy(), rtol=1e-6)
    compared.close()


def test_a_node_run_before_all_its_gradient_arrived_is_found_there():
    compared = compared_with_engine(impatient_loop, lambda: fan_out(wb))
    difference = compared.first_difference
    engine_order = [r.name for r in compared.sides[0].cursor.source.records]
    assert difference.node == difference.node_b == "TanhBackward0"
    assert difference.step == engine_order.index("TanhBackward0") + 1
    assert "b runs TanhBackward0 before all of its gradient has arrived" in difference.diagnosis
    assert difference.finding is None and difference.step_b < difference.step
    assert compared.run_to_difference()
    assert [side.record.name for side in compared.sides] == ["TanhBackward0"] * 2
    assert compared.sides[1].step == difference.step_b
    compared.close()


def test_a_buffer_overwritten_instead_of_summed_is_found_where_the_sum_arrives():
    compared = compared_with_engine(
        lambda root: heap_loop(root, overwrite=True), lambda: fan_out(wb)
    )
    difference = compared.first_difference
    assert difference.node == "TanhBackward0" and difference.finding is not None
    assert "b's gradient that reached it" in difference.diagnosis
    compared.close()


def test_a_leaf_grad_replaced_instead_of_added_is_found_at_its_leaf():
    broadcasting = next(g for g in GRAPHS if g.name == "the broadcasting graph")  # x.grad is set
    compared = compared_with_engine(
        lambda root: heap_loop(root, replace_grad=True), broadcasting.build
    )
    difference = compared.first_difference
    assert difference.node == "AccumulateGrad"
    assert compared.go(difference.step) and compared.sides[0].record.leaf.before is not None
    assert "b's gradient that reached it" in difference.diagnosis
    compared.close()


def test_a_loop_that_never_fills_a_leaf_is_found_at_that_leaf():
    compared = compared_with_engine(lambda root: heap_loop(root, skip_leaves=True), GRAPHS[0].build)
    difference = compared.first_difference
    first_leaf = next(r for r in compared.sides[0].cursor.source.records if r.leaf)
    assert difference.step == first_leaf.step and difference.node == "AccumulateGrad"
    assert "b never runs the node in its place" in difference.diagnosis
    compared.close()


def test_a_loop_that_does_not_stop_is_stopped_with_a_reason():
    def endless(root):
        start, _ = edge_of(root)
        with wb.no_grad():
            while True:
                start.apply([wb.ones_like(root)])

    with pytest.raises(RuntimeError, match=f"more than {MAX_RUNS} times: it does not stop"):
        trace_loop(endless, lambda: fan_out(wb))


@pytest.mark.parametrize("built", [3.0, wb.tensor([1.0])])
def test_build_must_return_a_root_that_requires_grad(built):
    with pytest.raises(TypeError, match="build\\(\\) must return the root"):
        trace_loop(reference.backward, lambda: built)


def test_the_graph_is_left_as_it_was():
    loss, x, _ = fan_out(wb)
    trace_loop(lambda root: None, lambda: (loss, x))
    from workbench.exercises.backward_loop import nodes_below

    assert all("apply" not in node.__dict__ for node in nodes_below(loss))
    loss.backward()  # the engine still runs the rules themselves
    assert x.grad is not None


def stray_first_run(root):
    """Runs the first node's rule once too often, then the right loop."""
    start, _ = edge_of(root)
    with wb.no_grad():
        start.apply([wb.ones_like(root)])
    reference.backward(root)


def test_a_node_run_twice_is_found_on_either_side():
    build = GRAPHS[0].build
    compared = compared_with_engine(stray_first_run, build)
    difference = compared.first_difference
    assert difference.step == difference.step_b == 1
    assert "b runs SumBackward0 twice (its steps 1, 2), a once" in difference.diagnosis
    compared.close()
    swapped = CompareStepper(trace_loop(stray_first_run, build), build()[0])
    difference = swapped.first_difference
    assert difference.step == 2 and difference.node == "SumBackward0"
    assert "a runs SumBackward0 n" in difference.diagnosis
    assert "again (2 runs so far); b runs it once" in difference.diagnosis
    swapped.close()
