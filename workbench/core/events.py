"""The event bus: the core publishes what it does; pictures, widgets, plots and tests listen.

Ordered, synchronous and in-process. Every event is a small dataclass with a sequence
number and the stable ids of the tensors (``t17``) and graph nodes (``n5``) it is about.
Array payloads are live references; a :class:`~workbench.trace.Trace` turns them into
summaries when it records them.

With no subscriber, publishing costs one check: publishers test ``events.listening``
before they build an event at all.

Order of one backward pass: ``BackwardStarted``, then for every node the engine runs,
everything that node caused (hooks, the ops its rule called, collapse-sums, freed saved
tensors, gradients accumulated into leaves) followed by the node's ``NodeStep``; then
``BackwardFinished``. So the events between two ``NodeStep`` belong to the second one.

Listening::

    with events.subscribe(print):                # any callable, as a context manager
        loss.backward()
    with events.collect("node_step") as got:    # or gather them (optionally some kinds)
        loss.backward()
    got.events                                   # [NodeStep(seq=..., ...), ...]
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

listening = False
_subscribers: tuple[Callable[[Event], None], ...] = ()  # replaced, never changed in place
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
    next_nodes: tuple = ()  # the node's edges: ids of the nodes its input grads flow to
    next_names: tuple = ()  # and their names (AccumulateGrad for a leaf input)
    input_names: tuple = ()  # the inputs' .name (None where unnamed), for pictures


@dataclass
class SavedTensorPacked(Event):
    """A node kept a tensor for its backward. ``slot`` is the rule's name for it (``x``, ``out``).

    ``total_bytes`` is the running total held by all live graphs; ``nbytes`` is what this
    save added to it (0 when another save already holds the same array). Checkpoints
    publish with ``node=""`` (their inputs, and values recomputed in backward).

    ``value`` is the saved array itself when the publisher has no other record of it:
    ``wb.from_torch`` fills it in (PyTorch saves inputs that are in no graph). The
    engine leaves it None: its tensor ids lead to values already in the trace.
    """

    node: str
    slot: str
    tensor: str | None  # the id of the saved tensor
    nbytes: int
    total_bytes: int
    value: Any = None  # the saved array (live), when given


@dataclass
class SavedTensorFreed(Event):
    """A saved tensor was let go (the graph ran backward without ``retain_graph``).

    ``nbytes`` is what the total went down by. ``node=""`` when a graph was dropped
    without backward (``slot="dropped"``) or a checkpoint let go of a recomputed value.
    """

    node: str
    slot: str
    nbytes: int
    total_bytes: int
    tensor: str | None = None


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
    grads_out_ids: tuple = ()  # tensor ids of grads_out (links a CollapseSum to its edge)


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
    """``tensor.grad`` was updated: ``after = before + contribution`` (before None: first time)."""

    tensor: str
    before: Any
    contribution: Any
    after: Any


@dataclass
class HookFired(Event):
    """A user hook ran. ``replaced``: it returned a value that took the gradient's place.

    ``hook`` is one of ``tensor``, ``retain_grad``, ``node_pre``, ``node_post``,
    ``post_accumulate``, ``pack`` or ``unpack`` (saved-tensor hooks).
    """

    hook: str
    target: str  # tensor or node id
    replaced: bool


@dataclass
class CheckpointRecompute(Event):
    """A checkpoint segment reruns in backward: ``nodes`` get their saved values back.

    ``nbytes`` (at ``end``) is what the recomputed values added to the saved total.
    """

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

# Fields that carry live arrays (one array, or a tuple of arrays and None); a Trace
# stores summaries of them and checks them as such when it loads a file.
ARRAY_FIELDS = frozenset(
    {"value", "grad_outputs", "grads_in", "grads_out", "before", "contribution", "after"}
)


def publish(event: Event) -> None:
    """Number the event and hand it to every subscriber, in subscription order."""
    with _lock:
        event.seq = next(_sequence)
        for callback in _subscribers:  # a callback that (un)subscribes makes a new tuple
            callback(event)


def _only(kinds: tuple, callback: Callable[[Event], None]) -> Callable[[Event], None]:
    """Wrap ``callback`` so that it sees only events of the given kinds."""
    unknown = set(kinds) - set(EVENT_TYPES)
    if unknown:
        raise ValueError(f"unknown event kinds {sorted(unknown)}; known: {sorted(EVENT_TYPES)}")
    wanted = tuple(EVENT_TYPES[k] for k in kinds)

    def filtered(event: Event) -> None:
        if isinstance(event, wanted):
            callback(event)

    return filtered


class Subscription:
    """A live subscription; close it, or use it as a context manager."""

    def __init__(self, callback: Callable[[Event], None]) -> None:
        self.callback = callback

    def close(self) -> None:
        global listening, _subscribers
        with _lock:
            if self.callback in _subscribers:
                i = _subscribers.index(self.callback)
                _subscribers = _subscribers[:i] + _subscribers[i + 1 :]
            listening = bool(_subscribers)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def subscribe(callback: Callable[[Event], None], *kinds: str) -> Subscription:
    """Call ``callback(event)`` for every event from now on (or only those of ``kinds``).

    Returns a :class:`Subscription`: call ``.close()``, or use it in a ``with`` block.
    """
    global listening, _subscribers
    if kinds:
        callback = _only(kinds, callback)
    with _lock:
        _subscribers += (callback,)
        listening = True
    return Subscription(callback)


class collect(Subscription):
    """``with events.collect() as got: ...`` gathers events into ``got.events``.

    ``collect("node_step", "grad_accumulated")`` keeps only those kinds.
    """

    def __init__(self, *kinds: str) -> None:
        self.events: list[Event] = []
        super().__init__(subscribe(self.events.append, *kinds).callback)

    def kinds(self) -> list[str]:
        """The kinds of the collected events, in order (handy in tests and lessons)."""
        return [event.kind for event in self.events]


_DTYPE_NAMES: dict = {}


def dtype_name(dtype) -> str:
    """``str(dtype)``, remembered: numpy works it out in Python on every call."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype)
    return name


# Stable ids: short, readable, never id(obj).
_tensor_ids = itertools.count(1)
_node_ids = itertools.count(1)


def new_tensor_id() -> str:
    return f"t{next(_tensor_ids)}"


def new_node_id() -> str:
    return f"n{next(_node_ids)}"


def reset_ids() -> None:
    """Restart id and sequence numbering (for deterministic pictures in lessons and tests).

    Objects that already have an id keep it, so only call this between experiments.
    """
    global _tensor_ids, _node_ids, _sequence
    _tensor_ids = itertools.count(1)
    _node_ids = itertools.count(1)
    _sequence = itertools.count(1)
