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


# ------------------------------------- checkpoints and saved-tensor hooks per thread
def _paused_checkpoint_beside_another_thread(lib, checkpoint):
    """Thread 0 pauses inside a non-reentrant checkpoint while thread 1 runs a whole
    forward and backward pass; then thread 0 finishes. Both gradients come back."""
    paused, other_done = threading.Event(), threading.Event()

    def function(x):
        h = x.sin()
        paused.set()
        assert other_done.wait(10)
        return (h * x).exp()

    def work(i):
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        if i == 0:
            checkpoint(function, x, use_reentrant=False).sum().backward()
        else:
            assert paused.wait(10)
            (x * x).tanh().sum().backward()
            other_done.set()
        return np.asarray(x.grad.tolist())

    return run_threads(2, work)


def test_a_paused_checkpoint_keeps_to_its_thread_as_in_torch():
    checkpoint_module = pytest.importorskip("torch.utils.checkpoint")
    torch = pytest.importorskip("torch")

    ours = _paused_checkpoint_beside_another_thread(wb, wb.utils.checkpoint.checkpoint)
    theirs = _paused_checkpoint_beside_another_thread(torch, checkpoint_module.checkpoint)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_marker_stage_tapes_the_ops_of_its_own_thread_only():
    from workbench.ops.markers import end_checkpoint, start_checkpoint

    started, other_done = threading.Event(), threading.Event()

    def work(i):
        x = wb.tensor([0.5, -1.0, 2.0], requires_grad=True)
        if i == 0:
            h = start_checkpoint(x)
            stage = wb.autograd.recompute.open_stage()
            started.set()
            assert other_done.wait(10)
            y = end_checkpoint(h.sin() * x)
            y.sum().backward()
            return len(stage.tape), x.grad.tolist()
        assert started.wait(10)
        assert wb.autograd.recompute.open_stage() is None
        (x * x).exp().sum().backward()  # no warning of a forgotten stage: none is open here
        other_done.set()
        return None, x.grad.tolist()

    (taped, grad0), (_, grad1) = run_threads(2, work)
    x = np.array([0.5, -1.0, 2.0])
    assert taped == 2  # sin and mul; not the other thread's mul and exp
    np.testing.assert_allclose(grad0, x * np.cos(x) + np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(grad1, 2 * x * np.exp(x * x), rtol=1e-6)


def test_end_checkpoint_in_another_thread_says_stages_are_per_thread():
    from workbench.ops.markers import end_checkpoint, start_checkpoint

    h = start_checkpoint(wb.ones(2, requires_grad=True))
    try:
        with pytest.raises(RuntimeError, match="a checkpoint stage is per thread"):
            run_threads(1, lambda i: end_checkpoint(h * 2))
    finally:
        end_checkpoint(h * 2)
