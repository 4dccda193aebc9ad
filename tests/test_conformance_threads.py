"""Conformance with PyTorch, REFERENCE D19: backward from several threads at once."""

from __future__ import annotations

import threading
import traceback

import numpy as np
import pytest

import workbench as wb


def run_threads(count: int, work) -> list:
    """Run ``work(i)`` in ``count`` threads started together; re-raise the first error."""
    results: list = [None] * count
    errors: list = []
    start = threading.Barrier(count)

    def target(i: int) -> None:
        try:
            start.wait()
            results[i] = work(i)
        except BaseException as err:  # handed to the main thread below
            errors.append(err)

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def test_d19_144_threads_with_their_own_graphs_get_their_own_gradients():
    """test_simple_backward"""

    def work(i: int):
        x = wb.tensor([1.0, 2.0, 3.0], dtype=wb.float64, requires_grad=True)
        for _ in range(20):
            (x * x * (i + 1)).sum().backward()
        return x.grad.numpy()

    for i, grad in enumerate(run_threads(10, work)):
        np.testing.assert_array_equal(grad, 20 * 2 * (i + 1) * np.array([1.0, 2.0, 3.0]))


def test_d19_145_threads_accumulating_into_one_leaf_give_the_exact_sum():
    """test_simple_backward_same_input: 8 threads, each backward many times into one leaf."""
    x = wb.tensor([1.0, 2.0, 3.0, 4.0], dtype=wb.float64, requires_grad=True)
    rounds = 25

    def work(i: int) -> None:
        for _ in range(rounds):
            (x * float(i + 1)).sum().backward()

    run_threads(8, work)
    expected = rounds * sum(range(1, 9))  # every contribution is an exact small integer
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, float(expected)))


def test_d19_145_autograd_grad_in_threads_does_not_accumulate():
    x = wb.tensor([1.0, 2.0], dtype=wb.float64, requires_grad=True)

    def work(i: int):
        (g,) = wb.autograd.grad((x * x).sum(), x)
        return g.numpy()

    for grad in run_threads(8, work):
        np.testing.assert_array_equal(grad, [2.0, 4.0])
    assert x.grad is None


def test_d19_146_an_error_in_a_custom_backward_keeps_the_user_frame():
    """test_preserve_backtrace"""

    class Broken(wb.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("something went wrong in my backward")

    x = wb.tensor([1.0], dtype=wb.float64, requires_grad=True)
    with pytest.raises(ValueError, match="something went wrong") as info:
        Broken.apply(x).sum().backward()
    frames = [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    assert frames[-1] == "backward"
