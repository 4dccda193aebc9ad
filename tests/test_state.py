"""workbench.state: which pieces of global state are per thread, and what changes them.

Grad mode, inference mode, the anomaly ``check_nan`` setting, the backward depth,
checkpoint validity and the name scopes are per thread; anomaly mode itself, the
checkpoint stage recorder and the saved-tensor hooks are one for the whole process.
"""

from __future__ import annotations

import threading

import pytest

import workbench as wb
from workbench import state


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


def test_the_stage_recorder_is_for_the_whole_process():
    calls = []

    def record(op, inputs, attrs, result):
        calls.append(op.name)
        return wb.autograd.dispatch.record_node(op, inputs, attrs, result)

    x = wb.ones(2, requires_grad=True)
    state.set_stage_recorder(record)
    try:
        in_thread(lambda: x * 2)
        with state.stage_recorder_paused():
            assert state.stage.record is None
            x * 3
        assert state.stage.record is record
    finally:
        state.set_stage_recorder(None)
    assert calls == ["mul"]


def test_saved_tensor_hooks_are_for_the_whole_process():
    packed = []

    def pack(t):
        packed.append(threading.current_thread().name)
        return t

    x = wb.ones(2, requires_grad=True)
    with wb.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        assert state.saved_hooks.stack[-1][0] is pack
        in_thread(lambda: x * x)
    assert packed and threading.current_thread().name not in packed
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


def counts(since=(0, 0, 0)):
    """The three thread counts, less ``since`` (what they were when the test began: a
    thread some earlier test left away from a default still counts)."""
    now = (state.threads.without_grad, state.threads.in_inference, state.threads.in_a_scope)
    return tuple(a - b for a, b in zip(now, since))


def test_the_thread_counts_follow_every_change():
    """The fast path of apply_op and record_node reads the threading.local only when a
    count says some thread is away from the default; the counts must follow every change,
    in this thread and in others, or ops would record where grad mode is off."""
    start = counts()
    inside, release = threading.Event(), threading.Event()

    def away_in_another_thread():
        with wb.no_grad(), wb.name_scope("worker"):
            inside.set()
            release.wait(10)
        return counts(start)

    worker = threading.Thread(target=away_in_another_thread)
    worker.start()
    inside.wait(10)
    assert counts(start) == (1, 0, 1)  # the worker is away; this thread is not
    x = wb.ones(2, requires_grad=True)
    y = x * 2  # ...so this thread still records, and notes no scope
    assert y.grad_fn is not None and "scope" not in y.grad_fn.metadata
    with wb.inference_mode():
        assert counts(start) == (2, 1, 1)
        assert (x * 2).is_inference()
        with wb.enable_grad():  # inference mode stays; grad mode back on here
            assert counts(start) == (1, 1, 1)
    assert counts(start) == (1, 0, 1)
    release.set()
    worker.join()
    assert counts(start) == (0, 0, 0)


def test_the_counts_follow_a_backward_pass_and_an_error_inside_it():
    start = counts()
    x = wb.ones(2, requires_grad=True)
    seen = []

    def hook(grad):
        seen.append(counts(start))
        return grad

    y = x * 3
    y.register_hook(hook)
    y.sum().backward()
    assert seen == [(1, 0, 0)] and counts(start) == (0, 0, 0)  # nodes run with grad off

    def fail(grad):
        raise ValueError("in a hook")

    z = x * 3
    z.register_hook(fail)
    with pytest.raises(ValueError):
        z.sum().backward()
    assert counts(start) == (0, 0, 0)
    assert (x * 2).grad_fn is not None  # still recording
