"""Write a :class:`GraphModel` as Graphviz DOT text, and mark the step being shown.

The DOT is deterministic (same graph, same ids: same text), so it can be
snapshot-tested and asserted on in lessons. Every vertex carries Graphviz's ``id``
and ``class`` attributes, which the SVG output keeps: ``<g id="n5" class="node
backward active">``. A widget or a page's CSS can then find node ``n5`` and style
the ``active`` and ``done`` ones. The vertices of one checkpoint segment are framed
together (a Graphviz cluster, ``id="segment-c3"``): the segment's boundary.
"""

from __future__ import annotations

import math
from html import escape  # (Graphviz's HTML-like labels are XML: its escapes)

from .model import RECOMPUTED, GraphModel

FONT = "Helvetica,Arial,sans-serif"

STYLES = {
    "backward": {"shape": "box", "style": "rounded,filled", "fillcolor": "#e3ecf7"},
    "accumulate": {"shape": "box", "style": "rounded,filled", "fillcolor": "#bfe3fb"},
    "saved": {"shape": "box", "style": "filled,dashed", "fillcolor": "#ffe3bf", "fontsize": "10"},
    "collapse": {"shape": "invtrapezium", "style": "filled", "fillcolor": "#f4d9f0"},
    "root": {"shape": "box", "style": "filled", "fillcolor": "#cdebc9"},
    "op": {"shape": "ellipse", "style": "filled", "fillcolor": "#e3ecf7"},
    "tensor": {"shape": "box", "style": "filled", "fillcolor": "#ffffff"},
    "leaf": {"shape": "box", "style": "filled", "fillcolor": "#bfe3fb"},
    "const": {"shape": "box", "style": "filled,dashed", "fillcolor": "#f5f5f5"},
    "fold": {"shape": "box3d", "style": "filled", "fillcolor": "#eeeeee"},
}
# Recomputed by a checkpoint: green, as the widgets' CSS draws the class ``recomputed``.
RECOMPUTED_STYLE = {"fillcolor": "#d7f0d0", "color": "#2e7d32", "penwidth": "1.5"}
ACTIVE = {"fillcolor": "#ffd54f", "penwidth": "2.5"}
DONE = {"fillcolor": "#eeeeee", "fontcolor": "#9e9e9e", "color": "#bdbdbd"}
DONE_EDGE = {"color": "#bdbdbd", "fontcolor": "#bdbdbd"}


def mark_step(model: GraphModel, step: int) -> None:
    """Class ``active`` on the node of step ``step`` (from 1: ``order[step - 1]``); ``done``
    on the steps before it. Steps count from 1, as the stepper's panel does."""
    if not 1 <= step <= len(model.order):
        raise IndexError(
            f"step {step} is out of range: this backward pass has steps 1..{len(model.order)}"
        )
    active = model.order[step - 1]
    done = set(model.order[: step - 1])
    state = {}
    for vertex in model.vertices.values():
        if active in vertex.members:
            vertex.classes.append("active")
        elif vertex.members and all(m in done for m in vertex.members):
            vertex.classes.append("done")
        state[vertex.id] = vertex.classes
    for edge in model.edges:
        if "done" in state.get(edge.tail, ()):
            edge.classes.append("done")


def to_dot(model: GraphModel) -> str:
    """The DOT text of the model (vertices first, then edges, in insertion order)."""
    lines = [
        "digraph workbench {",
        f"  graph [rankdir=TB, fontname={_q(FONT)}, fontsize=11, nodesep=0.3, ranksep=0.35"
        + _graph_label(model)
        + "];",
        f'  node [fontname={_q(FONT)}, fontsize=11, margin="0.12,0.05"];',
        f"  edge [fontname={_q(FONT)}, fontsize=9, arrowsize=0.7];",
    ]
    segments: dict = {}
    for vertex in model.vertices.values():
        if vertex.segment:
            segments.setdefault(vertex.segment, []).append(vertex)
        else:
            lines.append(_vertex_line(vertex))
    for segment, members in segments.items():
        lines.extend(_cluster(segment, members))
    for index, edge in enumerate(model.edges):
        attrs = {}
        if edge.room:
            attrs["label"] = _edge_label_with_slot(edge.label, edge.room, index)
        elif edge.label:
            attrs["label"] = edge.label
        if edge.kind == "saved":
            attrs.update(style="dashed", arrowhead="none", color="#c77c00")
        if "done" in edge.classes:
            attrs.update(DONE_EDGE)
        attrs["class"] = " ".join([edge.kind, *edge.classes])
        lines.append(f"  {_q(edge.tail)} -> {_q(edge.head)} [{_attrs(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _vertex_line(vertex) -> str:
    attrs = dict(STYLES.get(vertex.kind, {}))
    if RECOMPUTED in vertex.classes:
        attrs.update(RECOMPUTED_STYLE)
    if "active" in vertex.classes:
        attrs.update(ACTIVE)
    elif "done" in vertex.classes:
        attrs.update(DONE)
    if vertex.room:
        attrs["label"] = _vertex_label_with_slot(vertex.lines, vertex.room, vertex.id)
    else:
        attrs["label"] = vertex.label
    attrs["id"] = vertex.id
    attrs["class"] = " ".join([vertex.kind, *vertex.classes])
    if vertex.tooltip:
        attrs["tooltip"] = vertex.tooltip
    return f"  {_q(vertex.id)} [{_attrs(attrs)}];"


# A caption's slot (see :mod:`.captions`): as wide as its widest caption and SLOT_PAD more,
# as high as a line of 11 px text. Under an edge's label, the label and the caption start
# SLOT_PAD from the edge's line, as one text of two lines beside it; in a box, the slot is
# its last line, and the caption is written in its middle, as the lines above it are.
SLOT_PAD = 7
SLOT_HEIGHT = 14
SLOT_PREFIX = "wb-slot-"  # Graphviz writes it as the id "a_wb-slot-..." of the slot's group
TABLE = '<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0">'


class Html(str):
    """A Graphviz HTML-like label: written between ``<`` and ``>``, not quoted."""


def _edge_label_with_slot(label: str, room: float, index: int) -> Html:
    """An edge's label (its shape) over a blank slot for a caption ``room`` units wide."""
    spacer = f'<TD ROWSPAN="2" WIDTH="{SLOT_PAD}"></TD>'
    first = f'<TR>{spacer}<TD ALIGN="LEFT">{escape(label)}</TD></TR>'
    return Html(f"{TABLE}{first}<TR>{_slot(room, index)}</TR></TABLE>")


def _vertex_label_with_slot(lines: list, room: float, vid: str) -> Html:
    """A box's label ``lines`` over a blank line for a caption ``room`` units wide."""
    rows = "".join(
        f"<TR><TD>{escape(part)}</TD></TR>" for line in lines for part in line.split("\n")
    )
    return Html(f"{TABLE}{rows}<TR>{_slot(room + SLOT_PAD, vid)}</TR></TABLE>")


def _slot(width: float, owner) -> str:
    """A table cell of fixed size, drawn as an invisible box: the page reads where
    Graphviz put it, and writes the caption there."""
    return (
        f'<TD FIXEDSIZE="TRUE" WIDTH="{math.ceil(width + SLOT_PAD)}" HEIGHT="{SLOT_HEIGHT}" '
        f'BGCOLOR="transparent" ID="{SLOT_PREFIX}{escape(str(owner))}" '
        'TOOLTIP="written at each step"></TD>'
    )


def _cluster(segment: str, members: list) -> list:
    """A dashed frame around the vertices of one checkpoint segment: its boundary."""
    rerun = any(RECOMPUTED in v.classes for v in members)
    attrs = {
        "label": "checkpoint segment" + (": rerun in backward" if rerun else ""),
        "style": "dashed,rounded",
        "color": "#2e7d32",
        "fontcolor": "#2e7d32",
        "id": f"segment-{segment}",
        "class": "segment",
    }
    head = f"  subgraph {_q('cluster_' + segment)} {{"
    body = ["  " + _vertex_line(v) for v in members]
    return [head, f"    graph [{_attrs(attrs)}];", *body, "  }"]


def _graph_label(model: GraphModel) -> str:
    if not model.notes:
        return ""
    return f", labelloc=b, labeljust=l, label={_q(chr(10).join(model.notes) + chr(10))}"


def _attrs(attrs: dict) -> str:
    return ", ".join(f"{key}={_value(value)}" for key, value in attrs.items())


def _value(value) -> str:
    return f"<{value}>" if isinstance(value, Html) else _q(str(value))


def _q(text: str) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, newlines as ``\\n``."""
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("\n", "\\n") + '"'
