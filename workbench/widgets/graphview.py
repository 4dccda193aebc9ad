"""The pictures the widgets draw: DOT from ``wb.viz``, with the ids of the nodes on it.

:class:`~workbench.viz.browser.GraphView` (re-exported here) lays a picture out in the
browser; :class:`Picture` says which vertex belongs to which engine node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..viz.browser import DRAW_LIMIT, LAYOUT_LIMIT_S, GraphView

__all__ = [
    "DRAW_LIMIT",
    "LAYOUT_LIMIT_S",
    "GraphView",
    "Picture",
    "draw",
    "draw_folded",
    "picture_of",
]


@dataclass
class Picture:
    """A graph to lay out: its DOT text and, per vertex, the engine node ids it stands for.

    All of it comes from ``wb.viz``'s model; nothing here runs Graphviz.
    """

    dot: str
    members: dict  # vertex id -> tuple of node ids (a folded box stands for many)
    kinds: dict  # vertex id -> what it draws: backward, accumulate, saved, fold, ...
    order: list  # backward node ids in the order their steps run (as wb.viz predicts it)
    _box_of: dict | None = field(default=None, repr=False)  # see _boxes()

    def vertex_of(self, node_id: str) -> str:
        """The vertex that lights up for ``node_id``: its own, else the box it was folded into."""
        if node_id in self.members:
            return node_id
        return self._boxes().get(node_id, node_id)

    def _boxes(self) -> dict:
        """``node id -> the first box holding it`` (not a saved tensor, collapse or root),
        worked out once: a 2,000-node graph asks for every node at every step."""
        boxes = self._box_of
        if boxes is None:
            boxes = {}
            for vid, members in self.members.items():
                if self.kinds[vid] not in ("saved", "collapse", "root"):
                    for node_id in members:
                        boxes.setdefault(node_id, vid)
            self._box_of = boxes
        return boxes

    def node_of(self, vertex_id: str) -> str | None:
        """The engine node a clicked vertex is about (a saved tensor: the node that saved it)."""
        members = self.members.get(vertex_id, ())
        if vertex_id in members:
            return vertex_id
        return members[0] if members else None


def draw(target, kind: str = "backward") -> Picture:
    """The picture of ``target`` (a Tensor or a Trace) from ``wb.viz``'s model: DOT, no layout."""
    from .. import viz

    return picture_of(viz.draw(target, kind=kind))


def picture_of(graph) -> Picture:
    """A :class:`Picture` of a drawn ``wb.viz`` graph."""
    vertices = graph.model.vertices.values()
    members = {v.id: tuple(v.members) for v in vertices}
    return Picture(graph.dot, members, {v.id: v.kind for v in vertices}, list(graph.order))


def draw_folded(model, opened=()) -> Picture:
    """The picture of an unfolded ``wb.viz`` model, folded, with the ``opened`` boxes open,
    and a slot laid out for every caption a stepper writes on it (see
    :mod:`workbench.viz.captions`).

    ``opened`` holds the member sets of boxes the learner opened (see
    :func:`workbench.viz.fold.fold`). ``model`` itself is left as it was.
    """
    from .. import viz
    from ..viz.captions import reserve_captions

    return picture_of(viz.Graph(reserve_captions(viz.fold(model, viz.FOLD_LIMIT, opened))))
