"""The event bus: the core publishes what it does; pictures, widgets, plots and tests listen.

Ordered, synchronous and in-process. Every event is a small dataclass with a sequence
number and the stable ids of the tensors (``t17``) and graph nodes (``n5``) it is about.
Array payloads are live references; a :class:`~workbench.trace.Trace` turns them into
summaries when it records them.

With no subscriber, publishing costs one check: publishers test ``events.listening``
before they build an event at all.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

listening = False
_subscribers: list[Callable[[Event], None]] = []
_lock = threading.RLock()
_sequence = itertools.count(1)


@dataclass
class Event:
    """Base of every event. ``seq`` is assigned when the event is published."""

    seq: int = field(default=0, init=False)

    @property
    def kind(self) -> str:
        return _KIND_NAMES[type(self)]


@dataclass
class OpRecorded(Event):
    """An op ran. ``node`` is the id of the graph node it created, or None (no grad)."""

    op: str
    output: str
    inputs: tuple  # tensor ids; None where the input was a Python number
    input_shapes: tuple
    output_shape: tuple
    dtype: str
    node: str | None
    attrs: dict
    name: str | None = None
    in_backward: bool = False
    value: Any = None  # the output array (live)
    scope: tuple = ()


@dataclass
class SavedTensorPacked(Event):
    node: str
    slot: str
    tensor: str | None
    nbytes: int
    total_bytes: int


@dataclass
class SavedTensorFreed(Event):
    node: str
    slot: str
    nbytes: int
    total_bytes: int


@dataclass
class BackwardStarted(Event):
    roots: tuple  # tensor ids
    root_nodes: tuple  # node ids
    grad_outputs: tuple  # arrays (live)
    create_graph: bool
    retain_graph: bool
    inputs: tuple | None = None


@dataclass
class NodeStep(Event):
    """One node of the backward graph ran its gradient rule."""

    index: int
    node: str
    name: str
    op: str | None
    formula: str
    grads_in: tuple  # arrays or None, one per output of the node
    grads_out: tuple  # arrays or None, one per input edge
    next_nodes: tuple  # node ids (or None) the grads_out flow to
    leaf: str | None = None  # tensor id when the node is an AccumulateGrad


@dataclass
class CollapseSum(Event):
    """A broadcast gradient was summed back to its input's shape."""

    input_shape: tuple
    output_shape: tuple
    axes: tuple
    output: str | None = None
    node: str | None = None


@dataclass
class GradAccumulated(Event):
    tensor: str
    before: Any
    contribution: Any
    after: Any


@dataclass
class HookFired(Event):
    hook: str  # "tensor", "retain_grad", "node_pre", "node_post", "post_accumulate"
    target: str  # tensor or node id
    replaced: bool


@dataclass
class CheckpointRecompute(Event):
    phase: str  # "begin" or "end"
    segment: str
    nodes: tuple = ()
    nbytes: int = 0


@dataclass
class Anomaly(Event):
    node: str
    name: str
    message: str
    forward_stack: str | None = None


@dataclass
class BackwardFinished(Event):
    steps: int
    roots: tuple = ()


_KIND_NAMES = {
    OpRecorded: "op_recorded",
    SavedTensorPacked: "saved_tensor_packed",
    SavedTensorFreed: "saved_tensor_freed",
    BackwardStarted: "backward_started",
    NodeStep: "node_step",
    CollapseSum: "collapse_sum",
    GradAccumulated: "grad_accumulated",
    HookFired: "hook_fired",
    CheckpointRecompute: "checkpoint_recompute",
    Anomaly: "anomaly",
    BackwardFinished: "backward_finished",
}
EVENT_TYPES = {name: cls for cls, name in _KIND_NAMES.items()}


def publish(event: Event) -> None:
    """Number the event and hand it to every subscriber, in subscription order."""
    with _lock:
        event.seq = next(_sequence)
        for callback in list(_subscribers):
            callback(event)


class Subscription:
    """A live subscription; close it, or use it as a context manager."""

    def __init__(self, callback: Callable[[Event], None]) -> None:
        self.callback = callback

    def close(self) -> None:
        global listening
        with _lock:
            if self.callback in _subscribers:
                _subscribers.remove(self.callback)
            listening = bool(_subscribers)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def subscribe(callback: Callable[[Event], None]) -> Subscription:
    """Call ``callback(event)`` for every event from now on."""
    global listening
    with _lock:
        _subscribers.append(callback)
        listening = True
    return Subscription(callback)


class collect(Subscription):
    """``with events.collect() as got: ...`` gathers every event into ``got.events``."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        super().__init__(self.events.append)
        subscribe(self.callback)


# Stable ids: short, readable, never id(obj).
_tensor_ids = itertools.count(1)
_node_ids = itertools.count(1)


def new_tensor_id() -> str:
    return f"t{next(_tensor_ids)}"


def new_node_id() -> str:
    return f"n{next(_node_ids)}"


def reset_ids() -> None:
    """Restart id numbering (for deterministic pictures in lessons and tests).

    Objects that already have an id keep it, so only call this between experiments.
    """
    global _tensor_ids, _node_ids
    _tensor_ids = itertools.count(1)
    _node_ids = itertools.count(1)
