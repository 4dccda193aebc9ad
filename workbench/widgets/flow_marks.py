"""What the stepper's picture says about the step on show, besides the lit node.

Plain functions from the picture and the step records to the :class:`GraphView`'s
``classes`` (CSS classes by vertex id) and ``captions`` (short texts by vertex id or
edge ``"tail->head"``), so they are easy to test and cheap to recompute each click:

- the gradient that just moved is written on each edge it took (``flow_text``);
- a collapse-sum vertex that ran in this step gets ``collapse-active`` (its box names
  the summed axes; the edge into it says "before Σ");
- a leaf's AccumulateGrad gets ``has-grad`` once its ``.grad`` has been filled in this
  pass, ``grad-filled`` in the step that filled it, and a caption with its ``.grad``;
- a folded box holding the active node shows its progress, "k of m run";
- a node whose saved values a checkpoint recomputed (in this step or before) gets
  ``recomputed``, so the rerun segment turns green as the pass reaches it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from ..viz.captions import BEFORE_SUM, grad_text, gradient_text, progress_text
from .graphview import Picture
from .steps import StepRecord

flow_text = gradient_text  # a gradient on its edge: ``0.25``, ``[0.1, -2]``, ``‖g‖=1.73``


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
        """Texts for the picture, each for the slot its vertex or edge keeps for it (see
        :mod:`workbench.viz.captions`): gradients on edges (the edge's label shows the
        shape), a leaf's .grad, a box's progress."""
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
                texts[f"{tail}->{summed}"] = BEFORE_SUM if i in collapsed else text
                texts[f"{summed}->{head}"] = text
            elif head != tail:
                texts[f"{tail}->{head}"] = text
        for filled in self.filled_leaves(records, position):
            texts[filled.node] = grad_text(filled.leaf.name, filled.leaf.after)
        progress = self.progress(tail, position)
        if progress:
            texts[tail] = progress
        return texts

    def progress(self, vertex: str, position: int) -> str:
        """``"k of m run"`` for a folded box (a vertex standing for several steps)."""
        steps = self.steps_of.get(vertex, [])
        if len(steps) < 2:
            return ""
        return progress_text(bisect.bisect_right(steps, position), len(steps))
