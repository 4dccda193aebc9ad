"""The engine's speed layer: shortcuts that stand in for the general road.

Read :mod:`workbench.autograd.reference` for the algorithm and
:mod:`workbench.autograd.engine` for the general road (hooks, ``inputs=``, events,
stepping). Everything here computes exactly what the general road computes, only
with less Python per node; each shortcut is marked ``# fast path:``, says what it
stands in for, and names the test that pins it to the plain code:

- :func:`run` — the short road through a backward pass, used by ``backward()`` and
  ``grad()``. A node with no hooks skips the general road's hook machinery.
  Pinned by ``tests/test_engine_roads.py`` (every registry sample, both roads:
  equal gradients and equal events) and ``tests/test_engine_plain.py``.
- :func:`add_arrays` — summing two gradients that meet at a node as raw arrays
  when nothing records or listens, instead of through the ``add`` op.
- :func:`paused_gc` — Python's cyclic garbage collector paused during a pass;
  :func:`freeze_recorded_graph` — a big graph kept out of the collector's walks
  while it is recorded.
- :func:`record_node` — an op call's node built in one pass over the inputs, with
  ``edge_of`` inlined and what the op saves looked up once per pattern of
  ``needs_input_grad``; stands in for ``OpNode(...)`` (``OpNode.__init__``). Pinned
  by ``tests/test_fast_path.py``.

The fused backward kernels (``ops/fused.py``) are a speed layer of their own, off
by default. This one is on by default and changes no result: ``set_enabled(False)``
or ``with disabled():`` runs only the plain code, for reading and for the tests.
"""

from __future__ import annotations

import contextlib
import gc
import heapq
import threading
import weakref
from collections.abc import Iterator

import numpy as np

from .. import backend, events, state
from ..tensor import Tensor
from .engine import GraphTask, Step, checked_output, publish_step, validate_outputs
from .graph import (
    FREED,
    NO_ATTRS,
    NO_EDGE,
    NOT_SAVED,
    AccumulateGrad,
    OpNode,
    SavedTensor,
    edge_of,
    forward_stack,
    node_sequence,
)
from .memory import SavedMemory


def is_enabled() -> bool:
    """Whether op recording and ``backward()`` take the shortcuts of this module."""
    return state.speed.fast_path


def set_enabled(enabled: bool) -> None:
    """Turn the shortcuts of this module on (the default) or off (plain code only)."""
    state.set_fast_path(enabled)


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Inside the block, only the plain code runs: what the shortcuts stand in for."""
    previous = state.set_fast_path(False)
    try:
        yield
    finally:
        state.set_fast_path(previous)


def run(task: GraphTask) -> None:
    """Run ``task`` to the end, as :meth:`GraphTask.run` does, with plain nodes fast.

    # fast path: stands in for GraphTask.run (the general road, one Step per node);
    # pinned by tests/test_engine_roads.py::test_both_roads_give_the_same_gradients_and_events
    The backward grad mode is set once for the pass, not once per node. Outside
    anomaly mode and ``inputs=``, a node with no hooks of any kind takes the short
    road (:func:`run_plain_node`, :func:`run_plain_leaf`); any other node goes down
    the general road (``task.run_node``).
    """
    ready = task.start()
    plain = task.needed is None and not state.anomaly.enabled
    buffers = task.buffers
    # fast path: numpy's warnings off once for the whole pass, not once per op (apply_op
    # finds them off and leaves them alone)
    with task.backward_mode(), backend.quiet_numpy():
        while ready:
            node = heapq.heappop(ready)[1]
            grads = buffers.pop(node, None)
            if (
                plain
                and grads is not None
                and grads[0] is not None
                and not node._hooked  # no hooks of any kind, no retain_grad
            ):
                kind = type(node)
                if kind is OpNode:
                    run_plain_node(task, node, grads[0], ready)
                    continue
                if kind is AccumulateGrad and run_plain_leaf(task, node, grads[0]):
                    continue
            task.run_node(node, grads, ready, make_step=events.listening)
    task.finish()


def run_plain_leaf(task: GraphTask, node: AccumulateGrad, grad: Tensor) -> bool:
    """A leaf with no hooks: add ``grad`` into its ``.grad``. False if it has hooks.

    # fast path: stands in for GraphTask.run_node on a leaf (hooks, then accumulation).
    """
    leaf = node.variable
    if leaf._hooks is not None or leaf._post_acc_hooks:
        return False  # the general road runs them
    if task.accumulate:
        task.store_grad(leaf, grad)
    task.steps_run += 1
    if events.listening:
        accumulated = leaf if task.accumulate else None
        publish_step(Step(task.steps_run - 1, node, (grad,), (), accumulated))
    return True


def run_plain_node(task: GraphTask, node: OpNode, grad: Tensor, ready: list) -> None:
    """An op's node with no hooks: its rule, then each gradient checked and delivered.

    # fast path: stands in for GraphTask.run_node on an OpNode: the same checks
    # (engine.checked_output, one gradient at a time), delivery and freeing, with
    # no hook calls and no Step unless someone listens; the rule is called directly,
    # not through OpNode.apply.
    """
    rule = node.op.gradient
    if rule is None:  # OpNode.apply raises the error
        node.apply([grad], task.create_graph)
    grads_out = rule(node, grad)  # OpNode.apply, inline: the node is the rule's ``orig``
    edges = node.next_functions
    if len(grads_out) != len(edges):
        validate_outputs(node, grads_out)  # raises: the wrong number of gradients
    metas, deps, buffers = node.input_meta, task.dependencies, task.buffers
    sent = [None] * len(edges) if events.listening else None  # for the NodeStep event
    for i, (child, nr) in enumerate(edges):
        if child is None:
            continue
        grad_out = grads_out[i]
        if grad_out is not None:
            shape, dtype = metas[i]
            if (
                type(grad_out) is not Tensor
                or grad_out._data.shape != shape
                or (grad_out._data.dtype is not dtype and grad_out._data.dtype != dtype)
            ):
                grad_out = checked_output(node, i, grad_out)  # cast, or raise
            if sent is not None:
                sent[i] = grad_out
            slots = buffers.get(child)
            if slots is None and child.num_outputs == 1:
                buffers[child] = [grad_out]  # the first gradient to reach it
            elif (
                slots is not None
                and slots[nr] is not None
                and not task.create_graph
                and sent is None
            ):
                slots[nr] = add_arrays(slots[nr], grad_out)  # nothing records the add
            else:
                task.add_to_buffer(child, nr, grad_out)
        left = deps[child] - 1
        deps[child] = left
        if left == 0:
            heapq.heappush(ready, (-child._seq, child))
    if not task.keep_graph:
        release(node)
    task.steps_run += 1
    if sent is not None:  # last: every event of this step comes before it
        publish_step(Step(task.steps_run - 1, node, (grad,), tuple(sent)))


def add_arrays(a: Tensor, b: Tensor) -> Tensor:
    """``a + b`` on the raw arrays (numpy's scalar result for 0-d arrays made an array).

    # fast path: stands in for the add op in GraphTask.add_to_buffer, when nothing
    # records the graph (no create_graph) and nobody listens for the add's event.
    """
    total = a._data + b._data
    if isinstance(total, np.generic):  # 0-d + 0-d: keep an array, and its dtype
        total = np.asarray(total)
    return Tensor._make(total)


# ------------------------------------------------------------ recording a node
_new_object = object.__new__


def record_node(op, inputs: tuple, attrs, result: Tensor) -> OpNode:
    """The node of one op call, as ``dispatch.record_node`` makes it (``OpNode(...)``).

    # fast path: stands in for OpNode.__init__ + dispatch.note_where_recorded:
    # one pass over the inputs builds every per-input tuple; edge_of's common cases
    # inline; op.what_to_save looked up once per pattern of needs_input_grad;
    # OpNode's constructor bypassed. Pinned by tests/test_fast_path.py.
    """
    node = _new_object(OpNode)
    node._seq = next(node_sequence)  # before edge_of: it precedes the nodes of new leaves
    needs, edges, metas = [], [], []
    slots = list(inputs)  # Python numbers stay; tensor slots become NOT_SAVED or saved
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor):
            needs.append(x._requires_grad)
            if x._grad_fn is not None and x._view_of is None:
                edges.append((x._grad_fn, x._output_nr))  # edge_of's common cases, inline
            elif x._grad_acc is not None and x._grad_acc() is not None:
                edges.append((x._grad_acc(), 0))  # a leaf whose AccumulateGrad is alive
            else:
                edges.append(edge_of(x))
            metas.append((x._data.shape, x._data.dtype))
            slots[i] = NOT_SAVED
        else:
            needs.append(False)
            edges.append(NO_EDGE)
            metas.append(None)
    node.op = op
    node.attrs = attrs if attrs is not None else NO_ATTRS
    node.needs_input_grad = needs = tuple(needs)
    node.next_functions = tuple(edges)
    node.input_meta = tuple(metas)
    save_inputs, save_out = op.save_plans.get(needs) or _remember_save_plan(op, needs)
    for index in save_inputs:
        if slots[index] is NOT_SAVED:  # (a Python number is kept as it is)
            slots[index] = save(inputs[index], False)
    node.inputs = tuple(slots)
    node._output_ref = weakref.ref(result)
    result._requires_grad = True
    result._grad_fn = node
    node.saved_out = save(result, True) if save_out else None
    # dispatch.note_where_recorded's two notes, inline (the thread count: see state.py)
    if state.threads.in_a_scope and state.name_scopes.stack:
        node.metadata["scope"] = state.name_scopes.stack
    if state.anomaly.enabled:
        node._forward_stack = forward_stack()
    if node._seq >= _next_freeze_at:  # (an int comparison: cheaper than node._seq % N)
        freeze_recorded_graph(node._seq)
    return node


def _remember_save_plan(op, needs: tuple) -> tuple:
    """``op.what_to_save(needs)``, kept in ``op.save_plans`` for the next call like it.

    # fast path: the save-plan cache; pinned by tests/test_fast_path.py (same slots saved).
    """
    plan = op.save_plans[needs] = op.what_to_save(needs)
    return plan


def save(tensor: Tensor, is_output: bool) -> SavedTensor:
    """``SavedTensor(tensor, is_output)``: with no saved-tensor hooks set, for a tensor
    that is not an inference tensor, the same fields and the same count in the memory
    counters (``memory.hold``), in one call.

    # fast path: stands in for SavedTensor.__init__ + memory.hold; pinned by
    # tests/test_fast_path.py (same fields, same counters).
    """
    if tensor._is_inference or state.saved_hooks.stack:
        return SavedTensor(tensor, is_output)  # its checks, or the pack hook
    saved = _new_object(SavedTensor)
    saved.output_nr = 0
    saved.version_ref = version_ref = tensor._version_ref
    saved.version = version_ref[0]
    saved.unpack_hook = None
    saved.held = data = tensor._data
    if is_output:
        saved.tensor = None
        saved.array = data
    else:
        saved.tensor = tensor
        saved.array = None
    held = SavedMemory.held
    key = id(data)
    savers = held.get(key, 0)
    held[key] = savers + 1
    if savers:  # another saver holds this array: counted once
        saved.added = 0
        return saved
    saved.added = nbytes = data.nbytes
    SavedMemory.current = current = SavedMemory.current + nbytes
    if current > SavedMemory.peak:
        SavedMemory.peak = current
    return saved


def release(node: OpNode) -> None:
    """``node.release()``: when nobody listens, each saved array let go in the memory
    counters (``memory.let_go``) and its slot marked FREED, with no event list.

    # fast path: stands in for OpNode.release, _free_saved_inputs, SavedTensor.drop and
    # memory.let_go; pinned by tests/test_fast_path.py (same slots, same counters).
    """
    if events.listening:
        node.release()  # it publishes what it freed
        return
    inputs = node.inputs
    if SavedTensor in map(type, inputs):
        # (a list comprehension: tuple() over a generator re-enters it once per slot)
        slots = [_let_go(slot) if type(slot) is SavedTensor else slot for slot in inputs]
        node.inputs = tuple(slots)
    saved_out = node.saved_out
    if type(saved_out) is SavedTensor:
        _let_go(saved_out)
        node.saved_out = FREED


def _let_go(saved: SavedTensor) -> object:
    """One saved array let go (``SavedTensor.drop``); returns FREED for its slot."""
    data = saved.held
    if data is not None:
        saved.held = None
        held = SavedMemory.held
        key = id(data)
        savers = held.pop(key, 0)
        if savers > 1:
            held[key] = savers - 1
        elif savers == 1:
            SavedMemory.current -= data.nbytes
    return FREED


# ---------------------------------------------------- the garbage collector
class _GcPause:
    """How many passes are running, whether the collector was on before the first,
    and whether recording froze the tracked objects (:func:`freeze_recorded_graph`)."""

    lock = threading.Lock()
    passes = 0
    was_enabled = False
    froze = False


FREEZE_EVERY = 4096  # recorded nodes between two freezes
_next_freeze_at = 0  # the node number at which record_node freezes next


def freeze_recorded_graph(seq: int) -> None:
    """Move every object the cyclic collector tracks out of its sight (``gc.freeze``).

    # fast path: recording a graph of 100,000 nodes creates about 400,000 objects the
    # collector tracks, and its collections walk them again and again: recording
    # time would grow faster than the graph (15-30x for 10x the ops, here). Graph
    # objects never form reference cycles (nodes hold their outputs weakly), so the
    # collector can never free them; frozen, they are still freed by reference
    # counting as usual. Young cyclic garbage is collected first; the next backward
    # pass unfreezes everything (paused_gc), so nothing the collector could free is
    # kept from it for longer than one step. Called by record_node for node number
    # ``seq`` once every FREEZE_EVERY nodes recorded in the process.
    # Pinned by tests/test_engine_gc.py.
    """
    global _next_freeze_at
    _next_freeze_at = seq + FREEZE_EVERY
    with _GcPause.lock:
        if gc.isenabled():
            gc.collect(1)  # the young generations: cheap, and cycles there are freed
        gc.freeze()
        _GcPause.froze = True


def paused_gc():
    """A context in which Python's cyclic garbage collector is paused (thread-safe).

    # fast path: a graph of 100,000 nodes is about half a million Python objects, and
    # a backward pass allocates enough (a gradient per node) to set off several full
    # collections, each of which walks the whole graph still waiting to run:
    # backward time would grow faster than the graph. Backward makes no reference
    # cycles of its own and the nodes it frees are freed by reference counting, so
    # pausing loses nothing. Passes in several threads share one pause: the first
    # to start remembers whether the collector was on, the last to end restores it.
    # Pinned by tests/test_engine_gc.py.
    """
    return _GcPauseContext()


class _GcPauseContext:
    def __enter__(self) -> None:
        with _GcPause.lock:
            if _GcPause.passes == 0:
                _GcPause.was_enabled = gc.isenabled()
                gc.disable()
            _GcPause.passes += 1

    def __exit__(self, *exc) -> None:
        with _GcPause.lock:
            _GcPause.passes -= 1
            if _GcPause.passes > 0:
                return
            if _GcPause.froze:  # what recording froze is the collector's again
                gc.unfreeze()
                _GcPause.froze = False
            if _GcPause.was_enabled:
                gc.enable()
