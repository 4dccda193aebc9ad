"""The backward pass as a list of steps that a widget can move through.

Nothing here imports ipywidgets: this is the stepper's state, testable and timed on
its own.

- :class:`StepRecord` is a plain summary of one node the engine ran: the gradient
  that arrived, the gradient sent along each edge, any collapse-sum, and a leaf's
  ``.grad`` before and after.
- :class:`LiveSteps` pulls records from the engine's own step generator
  (``make_backward_task(loss).steps()``) one node at a time, so the real ``.grad``
  values fill in as the learner clicks. Records are kept, so going back is a lookup.
- :class:`StepCursor` is the position in the list: next, prev, reset, run to a node,
  breakpoints. A widget only draws what the cursor says.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from ..autograd.engine import Step
from ..autograd.entry_points import make_backward_task
from ..core import events
from ..core.tensor import Tensor
from ..record.graph import FREED_MESSAGE, AccumulateGrad, Node, OpNode, SavedTensor, walk
from ..viz.live import learner_name
from .time_travel import GradHistory, to_array

FREED_GRAPH = (
    FREED_MESSAGE + "\n\nAn earlier backward() already ran through this graph and freed "
    "what its nodes saved, so stepping through it would fail at the first such node. "
    "Build the stepper before calling backward(), call backward(retain_graph=True), or "
    "compute the loss again."
)


# ------------------------------------------------------------------ records
@dataclass(frozen=True)
class GradFlow:
    """The gradient a step sent along one input edge."""

    target: str | None  # node id the gradient flows into (None: the input needs no grad)
    label: str  # what the learner reads: "MulBackward0 n4" or "leaf w"
    value: np.ndarray | None


@dataclass(frozen=True)
class CollapseInfo:
    """A broadcast gradient summed back to an input's shape: which axes vanished."""

    from_shape: tuple
    to_shape: tuple
    axes: tuple
    input_index: int | None  # which input edge got the summed gradient, when known


@dataclass(frozen=True)
class LeafUpdate:
    """A leaf's ``.grad`` around the accumulation this step did (``before`` None: first)."""

    tensor: str
    name: str
    before: np.ndarray | None
    after: np.ndarray


@dataclass(frozen=True)
class StepRecord:
    """One node run by the engine, summarised for display.

    Arrays are private copies. From a trace, an array too large to keep in full is a
    string describing its shape and statistics.
    """

    index: int
    node: str
    name: str
    op: str | None
    formula: str
    grads_in: tuple  # np.ndarray or None, one per output of the node
    grads_out: tuple[GradFlow, ...]
    collapses: tuple[CollapseInfo, ...] = ()
    leaf: LeafUpdate | None = None
    grad_changes: tuple = ()  # (tensor id, its .grad after this step) for each .grad it changed
    recomputed: tuple = ()  # node ids whose saved values a checkpoint recomputed in this step

    @property
    def step(self) -> int:
        """The learner's number for this step, from 1 (``index`` is its place in the list)."""
        return self.index + 1


@dataclass
class NodeInfo:
    """What the inspector shows for a node, captured before the backward frees anything."""

    uid: str
    name: str
    label: str
    formula: str
    data: np.ndarray | None = None  # the node's forward output (a leaf: its value)
    saved: dict = field(default_factory=dict)  # saved tensors by slot name
    saved_note: str = ""  # why ``saved`` is empty, when it is
    leaf: str | None = None  # the leaf's display name for an AccumulateGrad
    saved_ids: tuple = ()  # ids of the tensors it saved (its inputs', its output's)


# ------------------------------------------------------------------ helpers
def leaf_name(t: Tensor) -> str:
    """A leaf as the pictures call it: its name, its path in a module, else its id."""
    return learner_name(t) or t.uid


def node_label(node: Node) -> str:
    """How a node is named in lists and panels: ``MulBackward0 n4`` or ``leaf w (n6)``."""
    if isinstance(node, AccumulateGrad):
        return f"leaf {leaf_name(node.variable)} ({node.uid})"
    return f"{node.name()} {node.uid}"


def nodes_of(roots: Iterable[Node]) -> list[Node]:
    """Every node reachable from ``roots``, newest first."""
    return sorted(walk(roots), key=lambda n: -n._seq)


def describe_node(node: Node) -> NodeInfo:
    """Capture a node's data and saved tensors now, before a backward frees them."""
    info = NodeInfo(node.uid, node.name(), node_label(node), node.formula)
    if isinstance(node, AccumulateGrad):
        info.data = to_array(node.variable)
        info.leaf = leaf_name(node.variable)
        info.saved_note = "a leaf saves nothing: it only adds the gradient into .grad"
        return info
    output = node.output() if isinstance(node, OpNode) else None
    info.data = to_array(output)
    info.saved_ids = saved_tensor_ids(node)
    segment = node.metadata.get("checkpoint")
    if segment and not node.metadata.get("recomputed"):
        # unpacking now would rerun the segment before the pass reaches it
        info.saved_note = f"checkpoint {segment}: recomputed when the backward pass reaches it"
        return info
    if isinstance(node, OpNode):
        try:
            info.saved = {name: to_array(t) for name, t in node.saved_tensors.items()}
        except RuntimeError as err:  # freed by an earlier backward
            info.saved_note = str(err).split(". ")[0] + "."
        if not info.saved and not info.saved_note:
            info.saved_note = f"{node.op.name} needs nothing saved for its gradient"
    return info


def saved_tensor_ids(node: Node) -> tuple:
    """The ids of the tensors ``node`` saved for its rule, read without unpacking them."""
    if not isinstance(node, OpNode):
        return ()
    ids = [s.tensor.uid for s in node.inputs if type(s) is SavedTensor and s.tensor is not None]
    if node.saved_out is not None and node.output() is not None:
        ids.append(node.output().uid)
    return tuple(dict.fromkeys(ids))


def _edge_label(child: Node | None) -> str:
    return "nothing (needs no gradient)" if child is None else node_label(child)


def record_step(step: Step, heard: list) -> StepRecord:
    """Summarise an engine :class:`Step` plus the events published while it ran."""
    node = step.node
    out_ids = {g.uid: i for i, g in enumerate(step.grads_out) if isinstance(g, Tensor)}
    collapses = tuple(
        CollapseInfo(e.input_shape, e.output_shape, e.axes, out_ids.get(e.output))
        for e in heard
        if isinstance(e, events.CollapseSum)
    )
    leaf = None
    if step.accumulated is not None:
        acc = [e for e in heard if isinstance(e, events.GradAccumulated)]
        before = to_array(acc[-1].before) if acc else None
        tensor = step.accumulated
        leaf = LeafUpdate(tensor.uid, leaf_name(tensor), before, to_array(tensor.grad))
    changes = tuple(
        (e.tensor, to_array(e.after)) for e in heard if isinstance(e, events.GradAccumulated)
    )
    recomputed = tuple(
        uid
        for e in heard
        if isinstance(e, events.CheckpointRecompute) and e.phase == "end"
        for uid in e.nodes
    )
    flows = tuple(
        GradFlow(None if child is None else child.uid, _edge_label(child), to_array(g))
        for (child, _), g in zip(node.next_functions, _padded(step.grads_out, node))
    )
    return StepRecord(
        index=step.index,
        node=node.uid,
        name=node.name(),
        op=node.op.name if isinstance(node, OpNode) else None,
        formula=node.formula,
        grads_in=tuple(to_array(g) for g in step.grads_in),
        grads_out=flows,
        collapses=collapses,
        leaf=leaf,
        grad_changes=changes,
        recomputed=recomputed,
    )


def _padded(grads_out: tuple, node: Node) -> tuple:
    """One entry per input edge (a leaf sends nothing; a pruned node sends ())."""
    missing = len(node.next_functions) - len(grads_out)
    return tuple(grads_out) + (None,) * max(missing, 0)


# ------------------------------------------------------------------ sources
class StepSource:
    """An ordered list of :class:`StepRecord` plus what is known about each node."""

    def __init__(self) -> None:
        self.records: list[StepRecord] = []
        self.nodes: dict[str, NodeInfo] = {}
        self.finished = False

    @property
    def expected_steps(self) -> int:
        """How many steps there will be (exact once finished)."""
        return len(self.records) if self.finished else max(len(self.nodes), len(self.records))

    def load(self, index: int) -> bool:
        """Make sure record ``index`` exists; False if the pass ends before it."""
        return index < len(self.records)

    def load_all(self) -> None:
        """Make sure every record exists (run the rest of a live pass)."""

    def show(self, index: int) -> None:
        """Step ``index`` is on show now (a live pass puts its ``.grad`` values back)."""


class LiveSteps(StepSource):
    """Records pulled one at a time from the engine's step generator for ``loss``.

    Each pull runs one real node: leaf ``.grad`` values change as it goes, exactly
    as ``loss.backward()`` would change them, in the same order. :meth:`show` puts
    every ``.grad`` back to its value at an earlier step (see :class:`GradHistory`),
    and forward again, so ``x.grad`` always matches the step on show.
    """

    def __init__(self, loss: Tensor, retain_graph: bool = False, gradient=None) -> None:
        super().__init__()
        task = make_backward_task(loss, gradient, retain_graph=retain_graph)
        nodes = nodes_of(task.root_nodes)
        if any(node.was_freed() for node in nodes):  # say so now, not at the failing step
            raise RuntimeError(FREED_GRAPH)
        for node in nodes:
            self.nodes[node.uid] = describe_node(node)
        self.history = GradHistory(grad_holders(nodes))
        self.task = task
        self._steps: Iterator[Step] = task.steps()

    def load(self, index: int) -> bool:
        if not self.finished and len(self.records) <= index:
            self.history.restore(len(self.records) - 1)  # the engine goes on from its own state
            while not self.finished and len(self.records) <= index:
                self._pull()
        return index < len(self.records)

    def _pull(self) -> None:
        with events.collect() as heard:
            step = next(self._steps, None)
        if step is None:
            self.finished = True
            return
        record = record_step(step, heard.events)
        self.records.append(record)
        self.history.add(record.index, record.grad_changes)

    def load_all(self) -> None:
        self.load(len(self.records))
        while not self.finished:
            self._pull()

    def show(self, index: int) -> None:
        self.history.restore(index)


def grad_holders(nodes: Iterable[Node]) -> list[Tensor]:
    """The tensors whose ``.grad`` a backward through ``nodes`` may change.

    Each leaf (through its AccumulateGrad node) and each tensor that called
    ``retain_grad()`` (held weakly by the node that made it).
    """
    holders = []
    for node in nodes:
        if isinstance(node, AccumulateGrad):
            holders.append(node.variable)
        for ref in (node._retained or {}).values():
            if ref() is not None:
                holders.append(ref())
    return holders


class RecordedSteps(StepSource):
    """Records known in full up front (from a saved trace, or a finished run)."""

    def __init__(self, records: Iterable[StepRecord], nodes: Iterable[NodeInfo]) -> None:
        super().__init__()
        self.records = list(records)
        self.nodes = {info.uid: info for info in nodes}
        self.finished = True


# ------------------------------------------------------------------ cursor
class StepCursor:
    """The position in a backward pass, with breakpoints; knows nothing about widgets.

    ``position`` is the index of the step on show: that node has just run. Every
    move tells the source, so a live pass puts each ``.grad`` back to its value at
    that step (the engine itself never un-runs a node).
    """

    def __init__(self, source: StepSource) -> None:
        self.source = source
        self.position = 0
        self.breakpoints: set[str] = set()
        self.note = ""  # a sentence for the learner about the last move
        if not source.load(0):
            raise ValueError("the backward pass ran no step: nothing reaches the graph")
        source.show(0)

    @property
    def record(self) -> StepRecord:
        return self.source.records[self.position]

    @property
    def last(self) -> int:
        """The highest position known so far (grows in live mode)."""
        return self.source.expected_steps - 1

    def go(self, index: int) -> bool:
        """Show step ``index``; False (and no move) if the pass has no such step.

        The note said of an earlier move goes: a move that has something to say (run to
        the end, a breakpoint) says it after its last ``go``.
        """
        self.note = ""
        if index < 0 or not self.source.load(index):
            self.source.show(self.position)  # loading may have run ahead: back to the one shown
            return False
        self.position = index
        self.source.show(index)
        return True

    def next(self) -> bool:
        moved = self.go(self.position + 1)
        self.note = "" if moved else "This is the last step: the backward pass is done."
        return moved

    def prev(self) -> bool:
        moved = self.go(self.position - 1)
        self.note = "" if moved else "This is the first step."
        return moved

    def reset(self) -> None:
        self.go(0)
        self.note = ""

    def run_to(self, node_id: str) -> bool:
        """Show the step where ``node_id`` runs: ahead (running the engine) or already run.

        False, and no move, when the node never runs.
        """
        name = self.source.nodes[node_id].label if node_id in self.source.nodes else node_id
        self.note = ""
        if self._find(lambda r: r.node == node_id):
            return True
        for record in self.source.records[: self.position + 1]:
            if record.node == node_id:
                self.go(record.index)
                self.note = f"{name} had already run: showing its step again."
                return True
        self.note = f"{name} does not run in this backward pass."
        return False

    def toggle_breakpoint(self, node_id: str) -> bool:
        """Add or remove a breakpoint on a node; True when it is now set."""
        if node_id in self.breakpoints:
            self.breakpoints.discard(node_id)
            return False
        self.breakpoints.add(node_id)
        return True

    def continue_(self) -> bool:
        """Run on to the next step whose node has a breakpoint (or to the end)."""
        found = self.run_until(lambda r: r.node in self.breakpoints)
        if not found:
            self.note = "No breakpoint ahead: ran to the end of the backward pass."
        else:
            self.note = f"Stopped at the breakpoint on {self.record.name} {self.record.node}."
        return found

    def run_until(self, wanted) -> bool:
        """Go to the first step ahead whose record is ``wanted``; else to the last step."""
        self.note = ""
        found = self._find(wanted)
        if not found:
            self.source.load_all()
            self.go(len(self.source.records) - 1)
            self.note = "Ran to the end of the backward pass."
        return found

    def _find(self, wanted) -> bool:
        index = self.position + 1
        while self.source.load(index):
            if wanted(self.source.records[index]):
                return self.go(index)
            index += 1
        self.source.show(self.position)
        return False
