"""What a picture shows, before it is DOT: vertices, edges, and the order of backward steps.

Two sources build the same :class:`GraphModel`: a live tensor (walk its ``grad_fn``
graph, see :mod:`workbench.viz.live`) and a recorded trace (see
:mod:`workbench.viz.from_trace`). Folding, step highlighting and DOT output work on
the model only, so they do not care where it came from. The text inside the boxes is
written by :mod:`workbench.viz.labels`.

Ids are the engine's stable ids: ``n5`` for a backward node, ``t17`` for a tensor.
Things that have no id of their own are named after their host: ``n5.x`` is the
tensor node ``n5`` saved in slot ``x``, ``n5.sum1`` the collapse-sum on its input 1,
``n5.out`` the output of ``n5`` when that tensor is gone.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .labels import GRAD_LINE

RECOMPUTED = "recomputed"  # the class of a node whose saved values a checkpoint reran


@dataclass
class Vertex:
    """One box or ellipse. ``members`` are the backward-node ids it stands for."""

    id: str
    kind: str  # backward, accumulate, saved, collapse, root, op, tensor, leaf, const, fold
    lines: list
    members: tuple = ()
    scope: tuple = ()
    tooltip: str = ""
    classes: list = field(default_factory=list)
    segment: str = ""  # the checkpoint segment it was recorded in ("c3"), drawn as a cluster
    room: float = 0  # picture units kept free in its box for a caption (see :mod:`.captions`)

    @property
    def label(self) -> str:
        return "\n".join(self.lines)


@dataclass
class Edge:
    tail: str
    head: str
    label: str = ""
    kind: str = "flow"  # flow, saved
    classes: list = field(default_factory=list)
    shape: tuple | None = None  # the shape of the gradient it carries, where known
    room: float = 0  # picture units kept free under its label for a caption (:mod:`.captions`)


@dataclass
class GraphModel:
    """A picture's content: vertices by id (in insertion order), edges, step order, notes."""

    kind: str  # "forward" or "backward"
    vertices: dict = field(default_factory=dict)
    edges: list = field(default_factory=list)
    order: list = field(default_factory=list)  # backward node ids, in the engine's order
    notes: list = field(default_factory=list)
    title: str = ""
    names: dict = field(default_factory=dict)  # node id -> the name the picture shows it by
    made: list = field(default_factory=list)  # node ids in the order the forward pass made them

    def add(self, vertex: Vertex) -> Vertex:
        """Add a vertex unless one with its id exists; return the one in the model."""
        return self.vertices.setdefault(vertex.id, vertex)

    def connect(
        self, tail: str, head: str, label: str = "", kind: str = "flow", shape=None
    ) -> None:
        shape = None if shape is None else tuple(shape)
        self.edges.append(Edge(tail, head, label, kind, shape=shape))


def add_recomputed_mark(vertex: Vertex, count: int, segment: str) -> None:
    """Class ``recomputed`` and a line saying so: a checkpoint reran this node ``count`` times."""
    vertex.classes.append(RECOMPUTED)
    vertex.lines.append(f"↻ recomputed ×{count} ({segment})")


# ----------------------------------------------------------------- node names
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def ordinal(n: int) -> str:
    """``second`` for 2, ``11th`` for 11."""
    if n <= len(ORDINALS):
        return ORDINALS[n - 1]
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def op_word(node_name: str) -> str:
    """``mul`` from ``MulBackward0``: the op a backward node is the gradient of."""
    return re.sub(r"Backward\d*$", "", node_name).lower() or node_name


def creation_order(model: GraphModel):
    """A sort key: node ids in the order the forward pass made them (``model.made``), else
    in the order the ids were given out (``n9`` before ``n10``), as a trace records them."""
    made = {vid: i for i, vid in enumerate(model.made)}

    def key(vid: str) -> tuple:
        digits = re.sub(r"\D", "", vid)
        return (made.get(vid, len(made)), int(digits) if digits else 0, vid)

    return key


def name_nodes(model: GraphModel) -> GraphModel:
    """Name each node of a backward picture the way its label shows it, in ``model.names``.

    One name for the picture and for every sentence about it (a stepper's questions and
    verdicts): the node's name (``MulBackward0``) where it is the only one, else with
    which one it is in the order the forward pass made them (``MulBackward0 (the second
    mul)``: the label gets the line "(the second mul)" under its name); a leaf's
    ``AccumulateGrad (x)``, drawn with the leaf x in its box. Never an id like ``n4``,
    which the picture does not show.
    """
    nodes = [v for v in model.vertices.values() if v.kind in ("backward", "accumulate")]
    made_before = creation_order(model)
    nodes.sort(key=lambda v: made_before(v.id))
    counts: dict = {}
    for vertex in nodes:
        if vertex.kind == "backward":
            counts[vertex.lines[0]] = counts.get(vertex.lines[0], 0) + 1
    seen: dict = {}
    for vertex in nodes:
        name = vertex.lines[0]
        if vertex.kind == "accumulate":
            leaf = vertex.lines[1].split(" (")[0] if len(vertex.lines) > 1 else ""
            model.names[vertex.id] = f"{name} ({leaf})" if leaf else name
        elif counts[name] > 1:
            seen[name] = seen.get(name, 0) + 1
            which = f"(the {ordinal(seen[name])} {op_word(name)})"
            vertex.lines.insert(1, which)
            model.names[vertex.id] = f"{name} {which}"
        else:
            model.names[vertex.id] = name
    return model


def output_names(made: list) -> dict:
    """``key -> "tanh_out"`` for ``(key, op name)`` pairs in the order the ops ran: each
    output named after the op that made it, numbered where an op ran more than once
    (``mul_out_1``, ``mul_out_2``: the first mul's and the second's, as :func:`name_nodes`
    tells the nodes apart)."""
    total = Counter(op for _, op in made)
    seen: Counter = Counter()
    names = {}
    for key, op in made:
        seen[op] += 1
        names[key] = f"{op}_out_{seen[op]}" if total[op] > 1 else f"{op}_out"
    return names


def rename_tensors(model: GraphModel, names: dict) -> GraphModel:
    """Every label line that is a bare tensor id in ``names`` (``t67``) becomes its name."""
    for vertex in model.vertices.values():
        vertex.lines = [names.get(line, line) for line in vertex.lines]
    return model


def without_grads(model: GraphModel) -> GraphModel:
    """``model`` with no tensor's ``.grad`` in any label (changed in place, and returned).

    A label is drawn once, with the ``.grad`` a tensor held then; a stepper changes
    ``.grad`` at every step. Its pictures show a gradient only as a caption of the step
    that delivers it, so a label must not show one from before (or from another pass).
    """
    for vertex in model.vertices.values():
        vertex.lines = [line for line in vertex.lines if not line.startswith(GRAD_LINE)]
    return model
