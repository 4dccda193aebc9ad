"""The stepper's pictures: the backward graph (folded into boxes), the forward one
beside it, and what each step lights in them.

The graph is laid out once, in the browser; a step only changes the classes and
captions of its vertices (see :mod:`.flow_marks`). Opening or folding a box draws the
picture again from the unfolded model. The forward picture is drawn the first time
the view switch shows it, and linked to the backward one (see :mod:`.linked`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import ipywidgets as widgets

from ..viz.model import without_grads
from .flow_marks import StepMarks
from .graphview import GraphView, Picture, draw_folded, picture_of
from .linked import Links, with_class
from .panel import picture_and_panel

if TYPE_CHECKING:
    from .stepper import BackwardStepper
    from .steps import StepCursor

VIEWS = {"backward": (False, True), "forward": (True, False), "both": (True, True)}


def forward_picture(target) -> Picture | None:
    """The forward graph of a loss or trace; None when there is none to draw.

    A trace replayed from PyTorch has no forward ops of ours: its stepper shows the
    backward graph only.
    """
    from .. import viz

    try:
        model = viz.build_model(target, "forward")
    except ValueError:
        return None
    return picture_of(viz.Graph(viz.fold(without_grads(model), viz.FOLD_LIMIT)))


def backward_model(target):
    """The unfolded backward picture of a loss or a trace (``wb.viz``'s model); no label
    shows a ``.grad``: the captions show each gradient from the step that delivers it."""
    from .. import viz

    return without_grads(viz.build_model(target, "backward"))


class StepPictures:
    """The backward and forward pictures of one stepper, its folded boxes, and the
    classes and captions that show a step in them.

    ``order`` is the node id of every step, as the picture predicts it before step 1,
    then as the steps ran; the browser gets the lit vertex of each, so Play can move
    the highlight without the kernel.
    """

    def __init__(self, owner: BackwardStepper, target) -> None:
        self.owner = owner
        self.picture: Picture | None = None
        self.marks: StepMarks | None = None
        self.opened: list[frozenset] = []  # member sets of the boxes opened, in order
        self.unfolded = None  # the whole picture's model, folded afresh when a box opens
        self.linked: str | None = None  # the node lit in both pictures after a click
        self.flagged: list[str] = []  # nodes outlined as where a comparison found a difference
        self.forward_picture: Picture | None = None  # drawn the first time it is shown
        self.target = target  # a loss or trace, for the forward picture
        self.links: Links | None = None
        self.order: list = []  # node id per step, predicted before step 1, then as run
        self.checked = 0  # how many records are known to have run as predicted
        self.graph = GraphView()
        self.graph.add_class("wb-backward-graph")
        self.forward_graph: GraphView | None = None  # made the first time it is shown
        self.panel = widgets.HTML()  # a wide array scrolls inside it, never over the picture
        self.panel.add_class("wb-panel")
        self.graph_row = picture_and_panel(self.graph, self.panel)

    def draw(self) -> dict:
        """Draw the backward picture, folded; the names its labels give the nodes."""
        self.unfolded = backward_model(self.target)  # before any node runs and frees
        self.picture = draw_folded(self.unfolded)
        return self.unfolded.names

    def start(self, nodes: dict) -> None:
        """Link the pictures to the pass's ``nodes`` and predict the order of the steps."""
        self.links = Links(self.picture, self.forward_picture, nodes)
        self.order = self.predicted_order(nodes)
        self.new_marks()

    def predicted_order(self, nodes: dict) -> list:
        """Node ids in the order their steps run: as the picture predicts it, then any others."""
        ordered = [uid for uid in self.picture.order if uid in nodes]
        placed = set(ordered)
        return ordered + [uid for uid in nodes if uid not in placed]

    def show_order(self) -> None:
        """Send the lit vertex of every step to the browser (slot 0 unused: steps count from 1).

        Sent once, and again only if a step ran another node than predicted, so Play
        can move the highlight in the browser without the kernel.
        """
        self.graph.step_nodes = ["", *(self.picture.vertex_of(uid) for uid in self.order)]
        if self.forward_graph is not None:
            lit = (self.forward_picture.vertex_of(uid) for uid in self.order)
            self.forward_graph.step_nodes = ["", *lit]

    def check_order(self, records: list) -> None:
        """Put the steps that ran first in ``order`` if they ran otherwise than predicted."""
        order = self.order
        if all(r.index < len(order) and order[r.index] == r.node for r in records[self.checked :]):
            self.checked = len(records)
            return
        ran = [r.node for r in records]
        if self.order[: len(ran)] != ran:
            placed = set(ran)
            self.order = ran + [uid for uid in self.order if uid not in placed]
            self.new_marks()
            self.show_order()
        self.checked = len(records)

    def paint(
        self, cursor: StepCursor, pictures: bool, hide: Callable[[dict], dict] | None
    ) -> None:
        """Light the step on show in both pictures; ``pictures=False`` leaves their step
        as the browser moved it. ``hide`` takes out the captions a hidden step sent."""
        records = cursor.source.records
        if pictures:
            self.graph.step = cursor.position + 1
        classes = self.marks.classes(records, cursor.position, cursor.breakpoints)
        if self.linked:
            classes = with_class(classes, self.links.in_backward(self.linked), "linked")
        flagged = [self.picture.vertex_of(uid) for uid in self.flagged]
        classes = with_class(classes, flagged, "differs")
        self.graph.classes = classes
        captions = self.marks.captions(records, cursor.position)
        self.graph.captions = hide(captions) if hide else captions
        if self.forward_graph is not None:
            lit = self.links.in_forward(self.linked) if self.linked else []
            self.forward_graph.classes = with_class({}, lit, "linked")
            if pictures:
                self.forward_graph.step = cursor.position + 1

    # ----------------------------------------------------------- folded boxes
    def open_box(self, vertex: str) -> bool:
        """Note a folded box as opened; False when ``vertex`` is no folded box."""
        if self.picture is None or self.picture.kinds.get(vertex) != "fold":
            return False
        self.opened.append(frozenset(self.picture.members[vertex]))
        return True

    def close_box(self, node: str | None = None) -> bool:
        """Note the innermost opened box holding ``node`` (default: the last opened) as
        folded, with the boxes opened inside it; False when none is open."""
        if not self.opened:
            return False
        holding = [s for s in self.opened if node in s] if node else []
        closing = min(holding, key=len) if holding else self.opened[-1]
        self.opened = [s for s in self.opened if not s <= closing]
        return True

    def refold(self, nodes: dict) -> None:
        """Draw the backward picture again with the boxes opened now."""
        self.picture = draw_folded(self.unfolded, self.opened)
        self.links = Links(self.picture, self.forward_picture, nodes)
        self.graph.selected = ""
        self.graph.dot = self.picture.dot
        self.new_marks()
        self.show_order()

    def new_marks(self) -> None:
        """The step marks of the picture as drawn now (an opened box's vertices marked)."""
        opened = set().union(*self.opened) if self.opened else set()
        inside = {vid for vid, m in self.picture.members.items() if opened.intersection(m)}
        self.marks = StepMarks(self.picture, self.order, opened_vertices=inside)

    def selected_node(self) -> str | None:
        """The node of the vertex selected in the backward picture, if any."""
        selected = self.graph.selected
        return self.picture.node_of(selected) if selected and self.picture else None

    # ----------------------------------------------------------- the forward picture
    def switch_view(self, view: str, nodes: dict) -> None:
        """Show the backward graph, the forward graph, or both side by side."""
        forward, backward = VIEWS[view]
        if forward and self.forward_picture is None:
            self.forward_picture = forward_picture(self.target)
            self.links = Links(self.picture, self.forward_picture, nodes)
        forward = forward and self.forward_picture is not None
        backward = backward or not forward  # no forward picture: the backward one stays
        if forward:
            self.forward_view()
        if self.forward_graph is not None:  # widths: picture_and_panel's flex, wrapping
            self.forward_graph.layout.display = "" if forward else "none"
        self.graph.layout.display = "" if backward else "none"

    def forward_view(self) -> GraphView:
        """The forward picture's view, made (and linked to the slider) the first time."""
        if self.forward_graph is None:
            owner = self.owner
            layout = widgets.Layout(flex=self.graph.layout.flex, min_width="0", width="auto")
            view = GraphView(dot=self.forward_picture.dot, layout=layout)
            view.add_class("wb-forward-graph")
            owner._keep(widgets.jslink((owner.slider, "value"), (view, "step")))
            owner._observe(view, owner._on_forward_select, names="selected")
            self.forward_graph = view
            self.graph_row.children = [view, self.graph, self.panel]
            self.show_order()
            owner._show()
        return self.forward_graph

    def let_go(self) -> None:
        """Drop the models and the loss or trace the pictures were drawn from."""
        self.picture = None
        self.marks = None
        self.unfolded = None
        self.target = None
