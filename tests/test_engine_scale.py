"""The engine never recurses over the graph: very long chains work (DESIGN principle 4)."""

from __future__ import annotations

import sys

import numpy as np

import workbench as wb

CHAIN = 100_000


def long_chain(x: wb.Tensor, length: int) -> wb.Tensor:
    y = x
    for _ in range(length):
        y = y * 1.0
    return y


def test_a_100000_node_chain_runs_backward_without_recursion():
    assert CHAIN > 10 * sys.getrecursionlimit()
    x = wb.tensor([1.0, 2.0], dtype=wb.float64, requires_grad=True)
    y = long_chain(x, CHAIN) * wb.tensor([3.0, 4.0], dtype=wb.float64)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])
    del y  # freeing the whole chain must not recurse either


def test_a_long_chain_works_with_grad_and_steps_one_node_at_a_time():
    x = wb.tensor(2.0, dtype=wb.float64, requires_grad=True)
    y = long_chain(x, CHAIN // 10) * x
    (g,) = wb.autograd.grad(y, x, retain_graph=True)
    assert g.item() == 4.0
    task = wb.autograd.make_backward_task(y)
    steps = list(task.steps())
    assert len(steps) == CHAIN // 10 + 2  # the mul nodes, the last mul, the leaf
    assert steps[-1].accumulated is x and x.grad.item() == 4.0
