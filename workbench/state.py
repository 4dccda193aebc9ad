"""The global state of the workbench, all in one place.

The modes and stacks that change what an op call or a backward pass does live
here, each changed only by the functions below: other modules read them and never
assign to them (tests/test_module_privacy.py checks this). Search for a function's
name to find every place that changes a piece of state. Counters (the random
generator, the saved-memory totals, event and node ids) stay with their modules.

=====================  =================  =============================================
piece                  threads            changed by
=====================  =================  =============================================
``grad_mode``          one per thread     ``no_grad``, ``enable_grad``,
 (enabled, inference)                     ``set_grad_enabled``, ``inference_mode``
                                          (autograd/grad_mode.py), and the engine
                                          while a node runs (``enter_backward``)
anomaly ``enabled``    whole process      ``detect_anomaly``, ``set_detect_anomaly``
anomaly ``check_nan``  one per thread     (autograd/anomaly.py), via ``set_anomaly``
backward depth,        one per thread     the engine, around each node it runs
checkpoint validity                       (``enter_backward`` / ``exit_backward``)
``stage``              whole process      the checkpoint marker stages
 (the stage recorder)                     (autograd/recompute.py)
``saved_hooks``        whole process      ``saved_tensors_hooks`` (autograd/graph.py)
                                          and checkpointing (autograd/recompute.py)
``name_scopes``        one per thread     ``name_scope`` (scope.py) and
                                          ``Module.__call__`` (nn/module.py)
``speed``              whole process      ``autograd.fast.set_enabled`` and
 (fast_path)                              ``autograd.fast.disabled``
``threads`` (how many  whole process      the functions that change grad mode,
 threads are away                         inference mode and name scopes (a fast
 from each default)                       path: see "threads away from the defaults")
=====================  =================  =============================================

"One per thread" is ``threading.local``, as in PyTorch: a thread started inside
``no_grad`` still records graphs. The pieces read on every op call (``grad_mode``,
``anomaly``, ``stage``, ``saved_hooks``, ``name_scopes``) are public objects, read
as plain attributes (``state.grad_mode.enabled``) rather than through a function
call, which would slow every op down. The rest is read through functions.

This module imports nothing from workbench, so every layer can use it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

# ----------------------------------------------------------- grad mode (per thread)


class GradMode(threading.local):
    """``enabled``: ops record graphs; ``inference``: inside ``inference_mode``."""

    def __init__(self) -> None:
        self.enabled = True
        self.inference = False


grad_mode = GradMode()


def set_grad_enabled_flag(enabled: bool) -> None:
    """Turn graph recording on or off in this thread."""
    if enabled != grad_mode.enabled:
        _count_threads(without_grad=-1 if enabled else 1)
    grad_mode.enabled = enabled


def set_inference_flag(inference: bool) -> None:
    """Enter (True) or leave (False) inference mode in this thread."""
    if inference != grad_mode.inference:
        _count_threads(in_inference=1 if inference else -1)
    grad_mode.inference = inference


# -------------------------------------- threads away from the defaults (process)
# fast path: every op call asks whether its thread records a graph, and every new
# node whether a name scope is open. A threading.local read is slow (about as slow
# as three plain attribute reads), and a chain op made four of them. These counts
# say how many threads are away from each default: grad mode off, inside
# inference_mode, inside a name scope. While a count is 0, no thread is, and the
# reader skips the threading.local:
#
#     recording = state.grad_mode.enabled if state.threads.without_grad else True
#
# The threading.local stays the truth. A thread that ends away from a default
# leaves its count too high, which costs a read and changes no answer.
# Pinned by tests/test_state.py::test_the_thread_counts_follow_every_change.


class ThreadCounts:
    """How many threads have grad mode off, are in inference mode, have a scope open."""

    without_grad = 0
    in_inference = 0
    in_a_scope = 0


threads = ThreadCounts()
_threads_lock = threading.Lock()


def _count_threads(without_grad: int = 0, in_inference: int = 0, in_a_scope: int = 0) -> None:
    """Add to the counts (a thread left a default: +1; came back: -1)."""
    with _threads_lock:
        threads.without_grad += without_grad
        threads.in_inference += in_inference
        threads.in_a_scope += in_a_scope


# ------------------------------------------------------------------- anomaly mode


class AnomalyMode:
    """``enabled``: nodes remember their forward stack, the engine checks for NaN.

    One flag for the whole process; whether NaN is checked (``check_nan``) is kept
    per thread, and read through :func:`anomaly_checks_nan`.
    """

    enabled = False


class _CheckNan(threading.local):
    check_nan = True


anomaly = AnomalyMode()
_check_nan = _CheckNan()


def set_anomaly(enabled: bool, check_nan: bool) -> tuple[bool, bool]:
    """Turn anomaly mode on or off (for every thread), and set ``check_nan`` for this thread.

    Returns the previous ``(enabled, check_nan)``, to restore them later.
    """
    previous = (anomaly.enabled, _check_nan.check_nan)
    anomaly.enabled = enabled
    _check_nan.check_nan = check_nan
    return previous


def anomaly_checks_nan() -> bool:
    """Whether the engine checks gradients for NaN: anomaly mode with ``check_nan``."""
    return anomaly.enabled and _check_nan.check_nan


# ------------------------------------------------------ inside backward (per thread)


class _Backward(threading.local):
    depth = 0  # how many backward passes this thread is inside (nested: create_graph)
    checkpoint_valid = True  # see is_checkpoint_valid


_backward = _Backward()


def enter_backward(create_graph: bool, checkpoint_valid: bool) -> tuple[bool, bool]:
    """The engine is about to run a node: record only if ``create_graph``.

    Returns what :func:`exit_backward` needs to restore the caller's state.
    """
    saved = (grad_mode.enabled, _backward.checkpoint_valid)
    set_grad_enabled_flag(create_graph)
    _backward.checkpoint_valid = checkpoint_valid
    _backward.depth += 1
    return saved


def exit_backward(saved: tuple[bool, bool]) -> None:
    """The node has run: back to the state :func:`enter_backward` returned."""
    _backward.depth -= 1
    enabled, _backward.checkpoint_valid = saved
    set_grad_enabled_flag(enabled)


def in_backward() -> bool:
    """Whether this thread is running a node of a backward pass (ops called by a rule)."""
    return _backward.depth > 0


def is_checkpoint_valid() -> bool:
    """False while a node runs for ``grad()`` or ``backward(inputs=...)`` (as in PyTorch).

    The reentrant checkpoint runs a nested ``backward()`` that accumulates into every
    leaf, which would be wrong when only some inputs were asked for.
    """
    return _backward.checkpoint_valid


# ------------------------------------------------------ checkpoint marker stage


class StageRecorder:
    """``record(op, inputs, attrs, result)`` of the open checkpoint marker stage, or None.

    While a stage is open, the op call hands each node to record to it instead of
    recording the node itself (see ``apply_op`` and ``MarkerStage.record_op``).
    """

    record: Callable | None = None


stage = StageRecorder()


def set_stage_recorder(record: Callable | None) -> None:
    """A marker stage opens (``record``) or closes (None)."""
    stage.record = record


@contextlib.contextmanager
def stage_recorder_paused() -> Iterator[None]:
    """Record ops plainly inside the block (the markers themselves, a replay)."""
    recording = stage.record
    stage.record = None
    try:
        yield
    finally:
        stage.record = recording


# ----------------------------------------------------------- saved-tensor hooks


class SavedHooks:
    """``stack``: the ``(pack, unpack)`` pairs in force, innermost last.

    A tuple, replaced on each change, so that a reader cannot change it by accident.
    """

    stack: tuple = ()


saved_hooks = SavedHooks()


def push_saved_hooks(*pairs: tuple) -> None:
    """Put ``(pack, unpack)`` pairs on top of the stack, the last one innermost."""
    saved_hooks.stack += pairs


def pop_saved_hooks() -> tuple:
    """Take the innermost pair off the stack and return it."""
    *rest, top = saved_hooks.stack
    saved_hooks.stack = tuple(rest)
    return top


def cut_saved_hooks(depth: int) -> tuple:
    """Keep the ``depth`` outermost pairs; return the ones taken off, outermost first."""
    above = saved_hooks.stack[depth:]
    saved_hooks.stack = saved_hooks.stack[:depth]
    return above


# ----------------------------------------------------- name scopes (per thread)


class NameScopes(threading.local):
    """``stack``: the names of the scopes open in this thread, outermost first."""

    def __init__(self) -> None:
        self.stack: tuple[str, ...] = ()


name_scopes = NameScopes()


def push_name_scope(name: str) -> tuple[str, ...]:
    """Open a scope called ``name``; returns the stack before, for :func:`restore_name_scopes`."""
    previous = name_scopes.stack
    _set_name_scopes(previous + (name,))
    return previous


def restore_name_scopes(previous: tuple[str, ...]) -> None:
    """Close the scopes opened since ``previous`` was the stack."""
    _set_name_scopes(previous)


def _set_name_scopes(stack: tuple[str, ...]) -> None:
    change = bool(stack) - bool(name_scopes.stack)  # +1: this thread opened its first scope
    if change:
        _count_threads(in_a_scope=change)
    name_scopes.stack = stack


# ------------------------------------------------------- the speed layer (process)


class SpeedLayer:
    """``fast_path``: op recording and ``backward()`` take the shortcuts of
    ``autograd/fast.py`` (on by default). Off, only the plain code runs: what the
    shortcuts stand in for, and what the tests hold them to."""

    fast_path = True


speed = SpeedLayer()


def set_fast_path(enabled: bool) -> bool:
    """Turn the speed layer on or off; returns whether it was on."""
    previous = speed.fast_path
    speed.fast_path = enabled
    return previous
