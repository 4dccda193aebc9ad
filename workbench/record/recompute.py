"""Activation checkpointing: keep less for backward, recompute it when backward needs it.

A *checkpoint frame* is a stretch of the forward pass whose saved tensors the graph
does not keep. While the stretch runs, the frame's saved-tensor hook is on top of the
hook stack (``state.saved_hooks``, which ``graph.SavedTensor`` consults), so every node
recorded inside saves a :class:`Handle` -- a claim ticket -- instead of the tensor. The
first time backward unpacks a handle, the frame runs its stretch again (grad enabled,
same random state) under a second hook that hands each tensor saved during the rerun
to the handle with the same position in save order. Backward then carries on through
the *original* graph with the recomputed values, so gradients, hooks and
``autograd.grad`` behave exactly as without checkpointing.

Two ways to mark a stretch, one machinery:

* :class:`FunctionFrame` -- ``checkpoint(fn, *args)`` (:mod:`workbench.utils.checkpoint`)
  reruns ``fn`` on the saved inputs.
* :class:`MarkerStage` -- TVM Relax's ``start_checkpoint`` / ``end_checkpoint``
  (:mod:`workbench.ops.markers`) record the op calls between the markers
  on a tape and replay the tape from the stage inputs.

Memory: a frame keeps its inputs; a handle keeps nothing until a recomputation fills
it (leaves that require grad, i.e. parameters, are kept as they are) and lets go when
the node that saved it frees its saved tensors after backward.

What pictures and widgets can read (no import of this module needed):

* ``node.metadata["checkpoint"]``: the segment id (``"c3"``) of a node recorded inside
  a checkpoint or marker stage (the innermost one when nested);
* ``node.metadata["recomputed"]``: how many times its saved values were recomputed;
* events: :class:`~workbench.core.events.CheckpointRecompute` ``begin``/``end`` (segment,
  node ids, recomputed bytes) around each rerun -- the ops published in between are
  the rerun -- and ``SavedTensorPacked``/``SavedTensorFreed`` whose ``total_bytes``
  is :func:`workbench.autograd.saved_memory` after each change;
* :func:`open_stage` (the marker stage being recorded, if any); a frame's ``segment``,
  ``nodes`` (weak references) and ``recomputations``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Callable

from ..core import events, state
from ..core.random import get_rng_state, set_rng_state
from ..core.tensor import Tensor
from . import dispatch, forward_ad, grad_mode, graph, memory

_segment_ids = itertools.count(1)


@memory.saver
class Handle:
    """What a node inside a checkpoint saves in place of a tensor.

    It remembers where the tensor sat in the graph (its ``grad_fn`` and output
    number, weakly) and its version, and later receives the recomputed array.
    Unpacking rebuilds a tensor attached to the original graph, so second-order
    gradients through a checkpoint work too.
    """

    __slots__ = (
        "frame",
        "kept",
        "array",
        "held",
        "grad_fn",
        "output_nr",
        "version_ref",
        "version",
        "tangents",
        "__weakref__",
    )

    def __init__(self, frame: CheckpointFrame, tensor: Tensor, keep: bool) -> None:
        self.frame = frame
        self.version_ref = tensor._version_ref
        self.version = tensor._version_ref[0]
        self.output_nr = tensor._output_nr
        node = tensor._grad_fn
        self.grad_fn = None if node is None else weakref.ref(node)
        self.array = None
        self.tangents = {}  # forward over reverse: the recomputed value's tangents by level
        self.kept = tensor if keep else None
        self.held = tensor._data if keep else None
        if keep:
            memory.track(self)

    def fill(self, array, tangents: dict | None = None) -> int:
        """Take the recomputed array (and its tangents, when recomputed inside a dual level:
        ``forward_ad.tangents_of``); returns the bytes that this added to saved memory."""
        if self.kept is not None or self.array is not None:
            return 0
        self.array = array
        self.tangents = tangents or {}
        self.held = array
        return memory.track(self)

    @property
    def dropped_as(self) -> tuple:
        """The slot (its segment) and the tensor (none) that the event of its end names."""
        return (self.frame.segment, None)

    def unpack(self) -> Tensor:
        self._check_version()
        if self.kept is not None:
            return self.kept
        if self.array is None:
            self.frame.recompute()
        if self.array is None:
            raise RuntimeError(
                f"checkpoint {self.frame.segment}: a value saved in the forward pass was not "
                "recomputed (the recomputation saved fewer tensors)"
            )
        node = None if self.grad_fn is None else self.grad_fn()
        out = Tensor._make(self.array, node is not None, node, self.output_nr)
        forward_ad.give_tangents(out, self.tangents)
        return out

    def _check_version(self) -> None:
        now = self.version_ref[0]
        if now != self.version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [a tensor saved inside checkpoint {self.frame.segment}] is "
                f"at version {now}; expected version {self.version} instead. Hint: a "
                "checkpoint recomputes from its inputs and parameters, so they must not change "
                "between the forward pass and backward."
            )


def _unpack_handle(handle: Handle) -> Tensor:
    return handle.unpack()


def _refuse_unpack(packed) -> Tensor:
    raise RuntimeError(
        "checkpoint: the graph recorded while recomputing a checkpoint only collects saved "
        "values; it cannot be differentiated"
    )


@contextlib.contextmanager
def _hooks_on_top(entry: tuple):
    """Push a (pack, unpack) pair on the saved-tensor hook stack for the block."""
    state.push_saved_hooks(entry)
    try:
        yield
    finally:
        stack = state.saved_hooks.stack
        if not stack or stack[-1] is not entry:
            raise RuntimeError("checkpoint: saved-tensor hooks were not exited in order")
        state.pop_saved_hooks()


@contextlib.contextmanager
def rng_state(state):
    """Run the block from a stored random state, then restore the caller's state."""
    if state is None:
        yield
        return
    outer = get_rng_state()
    set_rng_state(state)
    try:
        yield
    finally:
        set_rng_state(outer)


def detached(t: Tensor) -> Tensor:
    """The same array as a fresh leaf with the same requires_grad (the rerun's input), and
    the same tangent inside a dual level (so the rerun carries tangents too)."""
    out = Tensor._make(t._data, t._requires_grad)
    forward_ad.carry_tangents(t, out)
    return out


class CheckpointFrame:
    """The bookkeeping shared by function checkpoints and marker stages.

    ``handles``/``meta`` list, in save order, the handles a rerun fills and the
    (shape, dtype) each tensor had in the forward pass; ``nodes`` are the original
    graph nodes whose saved values this frame recomputes.
    """

    def __init__(self, determinism_check: bool = True) -> None:
        self.segment = f"c{next(_segment_ids)}"
        self.handles: list = []
        self.meta: list = []
        self.nodes: list = []
        self.recomputations = 0
        self.check = determinism_check
        self._cursor = 0
        self._mismatches: list = []
        self._filled = 0

    def name(self) -> str:
        """How error messages about this frame's saved inputs name it."""
        return f"checkpoint {self.segment}"

    def rerun(self) -> None:
        raise NotImplementedError  # abstract: FunctionFrame reruns fn, MarkerStage its tape

    def _recomputable(self) -> bool:
        return True

    # ------------------------------------------------------------ forward
    def _pack(self, tensor: Tensor) -> Handle:
        recomputable = self._recomputable()
        is_parameter = tensor._grad_fn is None and tensor._requires_grad
        handle = Handle(self, tensor, keep=is_parameter or not recomputable)
        if recomputable:
            self.handles.append(weakref.ref(handle))
            self.meta.append((tuple(tensor.shape), tensor.dtype))
        return handle

    def _claim(self, node: graph.Node) -> None:
        node.metadata["checkpoint"] = self.segment
        self.nodes.append(weakref.ref(node))

    def _live_nodes(self) -> list:
        return [n for n in (ref() for ref in self.nodes) if n is not None]

    # ----------------------------------------------------------- backward
    def recompute(self) -> None:
        """Run the stretch again and fill every live handle with its recomputed value."""
        nodes = self._live_nodes()
        if events.listening:
            events.publish(
                events.CheckpointRecompute("begin", self.segment, tuple(n.uid for n in nodes))
            )
        self._cursor, self._mismatches, self._filled = 0, [], 0
        with _hooks_on_top((self._recompute_pack, _refuse_unpack)), grad_mode.enable_grad():
            self.rerun()
        self._check_rerun()
        self.recomputations += 1
        for node in nodes:
            node.metadata["recomputed"] = self.recomputations
        graph.saved_memory_packed(None, self._filled, slot=f"recomputed {self.segment}")
        if events.listening:
            events.publish(
                events.CheckpointRecompute(
                    "end", self.segment, tuple(n.uid for n in nodes), self._filled
                )
            )

    def _recompute_pack(self, tensor: Tensor) -> None:
        k = self._cursor
        if k >= len(self.meta):
            raise RuntimeError(
                f"checkpoint {self.segment}: trying to save more tensors during recomputation "
                "than during the original forward pass."
            )
        self._cursor = k + 1
        got = (tuple(tensor.shape), tensor.dtype)
        if self.check and got != self.meta[k]:
            self._mismatches.append((k, self.meta[k], got))
            return None
        handle = self.handles[k]()
        if handle is not None:
            self._filled += handle.fill(tensor._data, forward_ad.tangents_of(tensor))
        return None

    def _check_rerun(self) -> None:
        if not self.check:
            return
        if self._cursor != len(self.meta):
            raise RuntimeError(
                f"checkpoint {self.segment}: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.meta)}\n"
                f"Number of tensors saved during recomputation: {self._cursor}"
            )
        if self._mismatches:
            lines = [
                f"tensor at position {k}:\n"
                f"saved metadata: {{'shape': {saved[0]}, 'dtype': {saved[1]}}}\n"
                f"recomputed metadata: {{'shape': {got[0]}, 'dtype': {got[1]}}}\n"
                for k, saved, got in self._mismatches
            ]
            raise RuntimeError(
                f"checkpoint {self.segment}: Recomputed values for the following tensors have "
                "different metadata than during the forward pass.\n" + "".join(lines)
            )


# ------------------------------------------------------------ checkpoint(fn)
class FunctionFrame(CheckpointFrame):
    """``checkpoint(fn, *args, **kwargs)``: keep the inputs, rerun ``fn`` in backward."""

    def __init__(
        self,
        fn: Callable,
        args: tuple,
        kwargs: dict,
        preserve_rng_state: bool = True,
        determinism_check: bool = True,
    ) -> None:
        super().__init__(determinism_check)
        self.fn = fn
        self.kwargs = kwargs
        # Saved *before* this frame's hook is pushed: an enclosing checkpoint manages them.
        self.args = tuple(
            graph.SavedTensor(a, is_output=False) if isinstance(a, Tensor) else a for a in args
        )
        added = sum(a.added for a in self.args if isinstance(a, graph.SavedTensor))
        graph.saved_memory_packed(None, added, slot=f"inputs of {self.segment}")
        self.rng_state = get_rng_state() if preserve_rng_state else None

    def run(self, args: tuple):
        """The forward pass: run ``fn`` with this frame's hook on top, then claim its nodes."""
        start = next(graph.node_sequence)
        with _hooks_on_top((self._pack, _unpack_handle)):
            out = self.fn(*args, **self.kwargs)
        self._claim_new_nodes(out, start)
        return out

    def _claim_new_nodes(self, out, start: int) -> None:
        """Label the nodes fn recorded (walking back from its outputs)."""
        outputs = out if isinstance(out, (tuple, list)) else (out,)
        recorded_before = lambda node: node._seq <= start or isinstance(node, graph.AccumulateGrad)  # noqa: E731
        ends = [t._grad_fn for t in outputs if isinstance(t, Tensor)]
        for node in graph.walk(ends, stop=recorded_before):
            if "checkpoint" not in node.metadata:  # an inner checkpoint claimed it first
                self._claim(node)

    def rerun(self) -> None:
        args = tuple(
            detached(a.unpack(self, f"input {i}")) if isinstance(a, graph.SavedTensor) else a
            for i, a in enumerate(self.args)
        )
        with rng_state(self.rng_state):
            self.fn(*args, **self.kwargs)


# ------------------------------------------------------------- marker stages
class _TapeEntry:
    """One op call between the markers: the op, where each input comes from, the RNG state."""

    __slots__ = ("op", "refs", "attrs", "rng_state")

    def __init__(self, op, refs: tuple, attrs, rng_state) -> None:
        self.op = op
        self.refs = refs  # ("input", k) | ("node", j) | ("ext", SavedTensor) | ("const", value)
        self.attrs = attrs
        self.rng_state = rng_state


class MarkerStage(CheckpointFrame):
    """The ops recorded between ``start_checkpoint`` and ``end_checkpoint``.

    Its inputs are the tensors marked by ``start_checkpoint``; tensors from outside
    the stage that its ops use (parameters, constants) are kept as external inputs.
    In backward the tape is replayed from those: the stage's own saved tensors are
    never kept.
    """

    def __init__(self) -> None:
        super().__init__(determinism_check=True)
        self.inputs: list = []  # SavedTensor of each stage input
        self.tape: list = []
        self.refs: dict = {}  # id(tensor) -> (weakref to the tensor, its ref)
        self.last_use: dict = {}  # tape index -> index of the last entry that reads it
        self.in_entry = False
        self.hooks = None  # its (pack, unpack) pair while open; None after (no cycle)
        self.depth = 0  # where its hooks sit on the hook stack while it is open

    def _recomputable(self) -> bool:
        return self.in_entry  # saves from anything but a taped op are kept as they are

    @contextlib.contextmanager
    def _hooks_lifted(self):
        """Save with the hooks below this stage (its inputs belong to an enclosing frame)."""
        above = state.cut_saved_hooks(self.depth)
        try:
            yield
        finally:
            state.push_saved_hooks(*above)

    def open(self) -> None:
        self.depth = len(state.saved_hooks.stack)
        self.hooks = (self._pack, _unpack_handle)
        state.push_saved_hooks(self.hooks)
        state.set_stage_recorder(self.record_op)

    def close(self) -> None:
        stack = state.saved_hooks.stack
        if not stack or stack[-1] is not self.hooks:
            raise RuntimeError(
                "end_checkpoint: saved-tensor hooks entered after start_checkpoint must be "
                "exited before end_checkpoint"
            )
        state.pop_saved_hooks()
        state.set_stage_recorder(None)
        self.hooks = None
        self.refs = {}

    def add_input(self, t: Tensor) -> None:
        with self._hooks_lifted():
            saved = graph.SavedTensor(t, is_output=False)
        graph.saved_memory_packed(None, saved.added, slot=f"inputs of {self.segment}", tensor=t)
        self.refs[id(t)] = (weakref.ref(t), ("input", len(self.inputs)))
        self.inputs.append(saved)

    def record_op(self, op, inputs: tuple, attrs, result: Tensor) -> graph.OpNode:
        """apply_op calls this instead of recording the node itself while the stage is open."""
        stack = state.saved_hooks.stack
        if not stack or stack[-1] is not self.hooks:  # another checkpoint or hook is on top
            return graph.OpNode(op, inputs, attrs, result)
        index = len(self.tape)
        refs = tuple(self._ref(x, index) for x in inputs)
        self.tape.append(_TapeEntry(op, refs, attrs, get_rng_state()))
        self.in_entry = True
        try:
            node = graph.OpNode(op, inputs, attrs, result)
        finally:
            self.in_entry = False
        self.refs[id(result)] = (weakref.ref(result), ("node", index))
        self._claim(node)
        return node

    def _ref(self, x, reader: int) -> tuple:
        if not isinstance(x, Tensor):
            return ("const", x)
        known = self.refs.get(id(x))
        if known is not None and known[0]() is x:
            ref = known[1]
        else:
            with self._hooks_lifted():
                ref = ("ext", graph.SavedTensor(x, is_output=False))
            self.refs[id(x)] = (weakref.ref(x), ref)
        if ref[0] == "node":
            self.last_use[ref[1]] = reader
        return ref

    def rerun(self) -> None:
        inputs = [detached(s.unpack(self, f"input {k}")) for k, s in enumerate(self.inputs)]
        results: dict = {}
        outer_rng = get_rng_state()
        try:
            with state.stage_recorder_paused():  # the replay is not taped again
                for index, entry in enumerate(self.tape):
                    args = tuple(self._value(ref, inputs, results) for ref in entry.refs)
                    set_rng_state(entry.rng_state)
                    out = dispatch.apply_op(entry.op, args, entry.attrs)
                    if index in self.last_use:
                        results[index] = out
                    self._forget_read(entry, index, results)
        finally:
            set_rng_state(outer_rng)

    def _value(self, ref: tuple, inputs: list, results: dict):
        kind, what = ref
        if kind == "input":
            return inputs[what]
        if kind == "node":
            return results[what]
        if kind == "ext":
            return what.unpack(self, "an external input")
        return what

    def _forget_read(self, entry: _TapeEntry, index: int, results: dict) -> None:
        """Drop replayed values no later entry reads, so the replay holds no more than needed."""
        for kind, what in entry.refs:
            if kind == "node" and self.last_use.get(what) == index:
                results.pop(what, None)


class _OpenStage(threading.local):
    """The marker stage open in this thread: a stage, like the saved-tensor hooks it
    pushes, belongs to the thread that called start_checkpoint."""

    stage: MarkerStage | None = None


_open = _OpenStage()


def start_stage(t: Tensor) -> MarkerStage:
    """Mark ``t`` as an input of the open stage, opening one if none is open."""
    stage = _open.stage
    if stage is None:
        stage = MarkerStage()
        stage.add_input(t)
        stage.open()
        _open.stage = stage
    else:
        stage.add_input(t)
    return stage


def end_stage() -> MarkerStage:
    """Close the open stage (``end_checkpoint``)."""
    stage = _open.stage
    if stage is None:
        raise RuntimeError(
            "end_checkpoint was called without a matching start_checkpoint in this thread "
            "(a checkpoint stage is per thread: call start_checkpoint and end_checkpoint "
            "in the same thread)"
        )
    _open.stage = None
    stage.close()
    return stage


def stage_paused() -> contextlib.AbstractContextManager[None]:
    """Record the markers themselves outside the tape."""
    return state.stage_recorder_paused()


def open_stage() -> MarkerStage | None:
    """The marker stage open right now, if any (for widgets and tests)."""
    return _open.stage


def close_forgotten_stage() -> None:
    """Warn about, and close, a marker stage still open when a backward pass starts.

    Its ``end_checkpoint`` is missing. Left open, the stage would tape every op
    recorded after it, step after step of a training loop, and each step would get
    slower. Its nodes keep working: they replay the tape as a closed stage's do.
    """
    stage = _open.stage
    if stage is None:
        return
    warnings.warn(
        f"start_checkpoint: the checkpoint stage {stage.segment} opened by start_checkpoint "
        f"is still open when backward runs ({len(stage.tape)} ops recorded in it): its "
        "end_checkpoint is missing. The stage is closed now; call end_checkpoint on the "
        "stage's output before backward.",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
    abandon_open_stage()


def user_stacklevel() -> int:
    """The stacklevel of the first caller outside workbench (the line the warning names)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def abandon_open_stage() -> MarkerStage | None:
    """Close a stage left open by an error between the markers; returns it (or None).

    Its nodes keep working: what they saved can still be replayed from its tape.
    """
    stage = _open.stage
    if stage is None:
        return None
    stack = state.saved_hooks.stack
    if stage.hooks in stack:
        state.cut_saved_hooks(stack.index(stage.hooks))
        state.push_saved_hooks(stage.hooks)  # so that close() finds it on top
    return end_stage()
