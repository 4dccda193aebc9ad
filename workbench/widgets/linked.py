"""The forward graph beside the backward one, linked node for node.

A forward op and its backward node share one id (``n5``), so the link needs no
table: clicking the op, the backward node, or one of the tensors it saved (drawn in
the backward graph as ``n5.x``, in the forward graph as the tensor's own box) names
the same node, and :class:`Links` lists what to light in each picture. While
stepping, the forward picture's ``step_nodes`` light the op whose gradient is being
computed, moved in the browser by the same slider as the backward picture.
"""

from __future__ import annotations

from dataclasses import dataclass

from .graphview import Picture
from .steps import NodeInfo


@dataclass
class Links:
    """What lights up, in each picture, for one node of the backward pass."""

    backward: Picture
    forward: Picture | None
    nodes: dict  # node id -> NodeInfo (its saved tensors' ids)

    def in_backward(self, node: str) -> list:
        """The node's vertex (or its box) and the saved tensors drawn beside it."""
        prefix = f"{node}."
        saved = [
            vid
            for vid, kind in self.backward.kinds.items()
            if kind == "saved" and vid.startswith(prefix)
        ]
        return [self.backward.vertex_of(node), *saved]

    def in_forward(self, node: str) -> list:
        """The op (or its box) and the tensors it saved, in the forward picture."""
        if self.forward is None:
            return []
        info: NodeInfo | None = self.nodes.get(node)
        saved = [t for t in (info.saved_ids if info else ()) if t in self.forward.members]
        return [self.forward.vertex_of(node), *saved]


def with_class(classes: dict, vertices: list, name: str) -> dict:
    """``classes`` (vertex id -> "names") with ``name`` added to each of ``vertices``."""
    marks = dict(classes)
    for vid in dict.fromkeys(vertices):
        marks[vid] = f"{marks[vid]} {name}" if vid in marks else name
    return marks
