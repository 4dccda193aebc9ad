"""workbench.core.state: which pieces of global state are per thread, and what changes them.

Grad mode, inference mode, the anomaly ``check_nan`` setting, the backward depth,
checkpoint validity, the name scopes, the checkpoint stage recorder and the saved-tensor
hooks are per thread, as in PyTorch; anomaly mode itself is one for the whole process.
"""

from __future__ import annotations

import threading

import pytest

import workbench as wb
from workbench.core import state


def in_thread(fn):
    """Run ``fn`` in a new thread and return its result."""
    result = []
    worker = threading.Thread(target=lambda: result.append(fn()))
    worker.start()
    worker.join()
    return result[0]


def test_grad_mode_and_inference_mode_are_per_thread():
    with wb.inference_mode():
        assert (state.grad_mode.enabled, state.grad_mode.inference) == (False, True)
        assert in_thread(lambda: (state.grad_mode.enabled, state.grad_mode.inference)) == (
            True,
            False,
        )
    assert (state.grad_mode.enabled, state.grad_mode.inference) == (True, False)


def test_anomaly_mode_is_for_the_whole_process_and_check_nan_per_thread():
    previous = state.set_anomaly(True, False)
    try:
        assert previous == (False, True)
        assert wb.autograd.is_anomaly_enabled()
        assert not state.anomaly_checks_nan()
        assert in_thread(wb.autograd.is_anomaly_enabled) is True
        assert in_thread(state.anomaly_checks_nan) is True  # another thread's check_nan
    finally:
        state.set_anomaly(*previous)
    assert not wb.autograd.is_anomaly_enabled()


def test_set_detect_anomaly_restores_what_it_found():
    with wb.autograd.set_detect_anomaly(True, check_nan=False):
        assert (state.anomaly.enabled, state.anomaly_checks_nan()) == (True, False)
    assert state.set_anomaly(False, True) == (False, True)  # set_anomaly returns the old pair


def test_backward_depth_and_checkpoint_validity_are_per_thread():
    seen = []

    def hook(grad):
        seen.append((state.in_backward(), state.is_checkpoint_valid(), wb.is_grad_enabled()))
        seen.append(in_thread(lambda: (state.in_backward(), state.is_checkpoint_valid())))

    x = wb.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(hook)
    wb.autograd.grad(y.sum(), x)  # grad(): checkpoints are not valid while it runs
    assert seen == [(True, False, False), (False, True)]
    assert (state.in_backward(), state.is_checkpoint_valid()) == (False, True)
    assert wb.autograd._is_checkpoint_valid is state.is_checkpoint_valid


def test_the_stage_recorder_is_per_thread():
    calls = []

    def record(op, inputs, attrs, result):
        calls.append(op.name)
        return wb.autograd.graph.OpNode(op, inputs, attrs, result)

    x = wb.ones(2, requires_grad=True)
    state.set_stage_recorder(record)
    try:
        assert in_thread(lambda: state.stage.record) is None
        in_thread(lambda: x * 2)  # another thread records its own node
        x * 4
        with state.stage_recorder_paused():
            assert state.stage.record is None
            x * 3
        assert state.stage.record is record
    finally:
        state.set_stage_recorder(None)
    assert calls == ["mul"]


def test_saved_tensor_hooks_are_per_thread_as_in_torch():
    """A thread started inside saved_tensors_hooks saves plainly; so does PyTorch's."""
    torch = pytest.importorskip("torch")
    for lib in (wb, torch):
        packed = []

        def pack(t, packed=packed):
            packed.append(threading.current_thread().name)
            return t

        x = lib.ones(2, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            in_thread(lambda x=x: x * x)
            x.exp()
        assert packed == [threading.current_thread().name], lib.__name__
    with wb.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        assert state.saved_hooks.stack[-1][0] is pack
        assert in_thread(lambda: state.saved_hooks.stack) == ()
    assert state.saved_hooks.stack == ()


def test_cut_and_push_saved_hooks_keep_the_order():
    a, b, c = ("a", None), ("b", None), ("c", None)
    state.push_saved_hooks(a, b, c)
    try:
        assert state.cut_saved_hooks(1) == (b, c)
        assert state.saved_hooks.stack == (a,)
        state.push_saved_hooks(b, c)
        assert state.pop_saved_hooks() is c
        assert state.saved_hooks.stack == (a, b)
    finally:
        state.cut_saved_hooks(0)


def test_name_scopes_are_per_thread_and_restored():
    with wb.name_scope("outer"):
        previous = state.push_name_scope("inner")
        assert previous == ("outer",)
        assert wb.current_scope() == ("outer", "inner")
        assert in_thread(wb.current_scope) == ()
        state.restore_name_scopes(previous)
        assert wb.current_scope() == ("outer",)
    assert wb.current_scope() == ()


@pytest.mark.parametrize("mode", [wb.no_grad, wb.enable_grad, wb.inference_mode])
def test_a_mode_leaves_the_state_as_it_found_it_after_an_error(mode):
    before = (state.grad_mode.enabled, state.grad_mode.inference)
    with pytest.raises(ValueError), mode():
        raise ValueError
    assert (state.grad_mode.enabled, state.grad_mode.inference) == before


def test_another_threads_modes_never_change_this_one():
    """Grad mode, inference mode and name scopes are per thread: a worker inside
    no_grad and a name scope leaves this thread recording, with no scope noted."""
    inside, release = threading.Event(), threading.Event()

    def away_in_another_thread():
        with wb.no_grad(), wb.name_scope("worker"):
            inside.set()
            release.wait(10)

    worker = threading.Thread(target=away_in_another_thread)
    worker.start()
    inside.wait(10)
    x = wb.ones(2, requires_grad=True)
    y = x * 2
    assert y.grad_fn is not None and "scope" not in y.grad_fn.metadata
    with wb.inference_mode():
        assert (x * 2).is_inference()
        with wb.enable_grad():
            assert (x * 2).is_inference()  # inference mode stays
    release.set()
    worker.join()


def test_a_backward_pass_leaves_the_modes_as_it_found_them_even_after_an_error():
    x = wb.ones(2, requires_grad=True)
    seen = []

    def hook(grad):
        seen.append((wb.is_grad_enabled(), state.in_backward()))
        return grad

    y = x * 3
    y.register_hook(hook)
    y.sum().backward()
    assert seen == [(False, True)]  # nodes run with grad off, inside backward
    assert (wb.is_grad_enabled(), state.in_backward()) == (True, False)

    def fail(grad):
        raise ValueError("in a hook")

    z = x * 3
    z.register_hook(fail)
    with pytest.raises(ValueError):
        z.sum().backward()
    assert (wb.is_grad_enabled(), state.in_backward()) == (True, False)
    assert (x * 2).grad_fn is not None  # still recording


def test_grad_mode_is_set_again_for_each_node():
    """A hook that turns grad mode on inside a pass does not leak into the next node:
    each node runs in the pass's mode (create_graph), as in PyTorch."""
    x = wb.ones(2, requires_grad=True)
    seen = []
    y = x * 3
    z = y * 2

    def turn_grad_on(grad):
        wb.set_grad_enabled(True)  # and never off again

    z.register_hook(turn_grad_on)
    y.register_hook(lambda g: seen.append(wb.is_grad_enabled()))
    z.sum().backward()
    assert seen == [False]


def test_in_use_counts_the_threads_with_stages_or_hooks_and_returns_to_zero():
    """Ops read in_use first: it must count exactly, or a thread's hooks would be skipped."""
    from workbench.ops.markers import end_checkpoint, start_checkpoint

    assert (state.in_use.stages, state.in_use.saved_hooks) == (0, 0)
    seen = []

    def inside_hooks():
        with wb.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            with wb.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                seen.append(state.in_use.saved_hooks)
                h = start_checkpoint(wb.ones(2, requires_grad=True))
                seen.append(state.in_use.stages)
                with state.stage_recorder_paused():
                    seen.append(state.in_use.stages)
                end_checkpoint(h * 2)
        seen.append((state.in_use.stages, state.in_use.saved_hooks))

    with wb.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        in_thread(inside_hooks)
        assert state.in_use.saved_hooks == 1
    assert seen == [2, 1, 0, (0, 1)]
    assert (state.in_use.stages, state.in_use.saved_hooks) == (0, 0)


def test_a_node_notes_the_name_scope_it_was_recorded_in():
    """(OpNode reads the per-thread scope only while some thread has one open: in_use.scopes.)"""
    x = wb.ones(2, requires_grad=True)
    assert "scope" not in (x * 2).grad_fn.metadata
    with wb.name_scope("outer"), wb.name_scope("inner"):
        y = x * 2
    assert y.grad_fn.metadata["scope"] == ("outer", "inner")
    assert "scope" not in (x * 2).grad_fn.metadata
    assert state.in_use.scopes == 0
