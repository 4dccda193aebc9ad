"""What the stepper's picture says about the step on show, besides the lit node.

Plain functions from the picture and the step records to the :class:`GraphView`'s
``classes`` (CSS classes by vertex id) and ``captions`` (short texts by vertex id or
edge ``"tail->head"``), so they are easy to test and cheap to recompute each click:

- the gradient that just moved is written on each edge it took (``flow_text``);
- a collapse-sum vertex that ran in this step gets ``collapse-active`` and a caption
  naming its summed axes;
- a leaf's AccumulateGrad gets ``has-grad`` once its ``.grad`` has been filled in this
  pass, ``grad-filled`` in the step that filled it, and a caption with its ``.grad``;
- a folded box holding the active node shows its progress, "k of m run";
- a node whose saved values a checkpoint recomputed (in this step or before) gets
  ``recomputed``, so the rerun segment turns green as the pass reaches it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from .graphview import Picture
from .steps import StepRecord

VALUES_ON_EDGE = 4  # arrays up to this many elements are written out on an edge


def flow_text(value) -> str:
    """A gradient in a few characters: ``0.25``, ``[0.1, -2]``, or ``(2, 3) ‖g‖=1.73``."""
    if value is None:
        return ""
    if isinstance(value, str):  # a trace's description of an array it did not keep
        return value.split(":")[0]
    array = np.asarray(value)
    if array.size == 1:
        return f"{array.reshape(()).item():.4g}"
    if array.size <= VALUES_ON_EDGE and array.ndim == 1:
        return "[" + ", ".join(f"{v:.3g}" for v in array.tolist()) + "]"
    norm = float(np.linalg.norm(array.astype(np.float64).ravel()))
    return f"{tuple(array.shape)} ‖g‖={norm:.3g}"


@dataclass
class StepMarks:
    """Precomputed lookups over a picture, so each step's marks cost little."""

    picture: Picture
    order: list  # predicted node id per step
    steps_of: dict = field(default_factory=dict)  # vertex id -> step indices inside it
    leaf_steps: list = field(default_factory=list)  # steps that filled a leaf drawn on its own
    leaf_records: list = field(default_factory=list)  # ... and their records
    rerun_steps: list = field(default_factory=list)  # steps in which a checkpoint recomputed
    rerun_vertices: list = field(default_factory=list)  # ... and the vertices it lit
    seen: int = 0  # how many records have been looked at
    opened_vertices: set = field(default_factory=set)  # drawn from inside an opened box

    def __post_init__(self) -> None:
        for index, node in enumerate(self.order):
            self.steps_of.setdefault(self.picture.vertex_of(node), []).append(index)

    def filled_leaves(self, records: list, position: int) -> list:
        """Records of the steps up to ``position`` that filled a leaf with a vertex of its own.

        A leaf folded into a box is left out: the box stands for many nodes.
        """
        self._learn(records)
        return self.leaf_records[: bisect.bisect_right(self.leaf_steps, position)]

    def recomputed_vertices(self, records: list, position: int) -> set:
        """Vertices of the nodes a checkpoint recomputed up to step ``position``."""
        self._learn(records)
        return set(self.rerun_vertices[: bisect.bisect_right(self.rerun_steps, position)])

    def _learn(self, records: list) -> None:
        """Index the records that arrived since the last call (records only grow)."""
        for record in records[self.seen :]:
            if record.leaf is not None and self.picture.vertex_of(record.node) == record.node:
                self.leaf_steps.append(record.index)
                self.leaf_records.append(record)
            for node in record.recomputed:
                self.rerun_steps.append(record.index)
                self.rerun_vertices.append(self.picture.vertex_of(node))
        self.seen = len(records)

    def classes(self, records: list, position: int, breakpoints) -> dict:
        """``vertex id -> "class names"`` for the step ``position`` of ``records``."""
        marks: dict = {}

        def add(vid: str, name: str) -> None:
            marks[vid] = f"{marks[vid]} {name}" if vid in marks else name

        for vid in sorted(self.opened_vertices):
            add(vid, "opened")
        for node in sorted(breakpoints):
            add(self.picture.vertex_of(node), "breakpoint")
        record = records[position]
        for vid in self.collapse_vertices(record):
            add(vid, "collapse-active")
        for vid in sorted(self.recomputed_vertices(records, position)):
            add(vid, "recomputed")
        for filled in self.filled_leaves(records, position):
            add(filled.node, "has-grad")
        if record.leaf is not None and record.node in marks:
            add(record.node, "grad-filled")
        return marks

    def collapse_vertices(self, record: StepRecord) -> list:
        """The collapse-sum vertices of the node that ran (those its step summed into)."""
        prefix = f"{record.node}.sum"
        drawn = [vid for vid in self.picture.members if vid.startswith(prefix)]
        indexes = {c.input_index for c in record.collapses}
        if None in indexes:
            return drawn if record.collapses else []
        return [vid for vid in drawn if vid[len(prefix) :] in {str(i) for i in indexes}]

    def captions(self, records: list, position: int) -> dict:
        """Texts for the picture: gradients on edges, axes, a leaf's .grad, a box's progress."""
        record = records[position]
        texts = {}
        tail = self.picture.vertex_of(record.node)
        collapsed = {c.input_index: c for c in record.collapses}
        for i, flow in enumerate(record.grads_out):
            if flow.target is None or flow.value is None:
                continue
            head = self.picture.vertex_of(flow.target)
            summed = f"{record.node}.sum{i}"
            text = flow_text(flow.value)
            if summed in self.picture.members:
                before = self._collapsed_from(collapsed.get(i))
                texts[f"{tail}->{summed}"] = before or text
                texts[f"{summed}->{head}"] = text
                if i in collapsed:
                    texts[summed] = f"Σ axes {collapsed[i].axes}"
            elif head != tail:
                texts[f"{tail}->{head}"] = text
        for filled in self.filled_leaves(records, position):
            texts[filled.node] = f"{filled.leaf.name}.grad {flow_text(filled.leaf.after)}"
        progress = self.progress(tail, position)
        if progress:
            texts[tail] = progress
        return texts

    @staticmethod
    def _collapsed_from(collapse) -> str:
        return "" if collapse is None else f"{tuple(collapse.from_shape)} before Σ"

    def progress(self, vertex: str, position: int) -> str:
        """``"k of m run"`` for a folded box (a vertex standing for several steps)."""
        steps = self.steps_of.get(vertex, [])
        if len(steps) < 2:
            return ""
        return f"{bisect.bisect_right(steps, position)} of {len(steps)} run"
