"""Build a picture's model from live tensors by walking their ``grad_fn`` graph.

The walk is iterative (a queue), never recursive, so deep graphs draw too. Nothing
here changes the graph: saved tensors are read without unpacking hooks, freed ones
are shown as freed.
"""

from __future__ import annotations

from typing import NamedTuple

from ..core import backend
from ..core.tensor import Tensor
from ..nn.parameter import Parameter
from ..record.graph import (
    FREED,
    AccumulateGrad,
    Node,
    OpNode,
    SavedTensor,
    backward_order,
    edge_of,
    walk,
)
from . import labels
from .model import GraphModel, Vertex, add_recomputed_mark, op_word, output_names, rename_tensors


def root_edges(roots: list) -> list:
    """``(tensor, node)`` for each root that has a graph; a clear error if none has."""
    edges = []
    for t in roots:
        node, _ = edge_of(t)
        if node is not None:
            edges.append((t, node))
    if not edges:
        raise ValueError(
            "nothing to draw: the tensor does not require grad, so it has no graph "
            "(create it with requires_grad=True, or compute it from one that has)"
        )
    return edges


def assign_ids(edges: list, nodes: list) -> None:
    """Give ids in creation order, as events would have: inputs, then outputs, then roots.

    Ids are handed out on first use, so without this the picture drawn first would
    decide the numbering; this way forward and backward pictures agree.
    """
    for node in sorted(nodes, key=lambda n: n._seq):
        node.uid  # noqa: B018  (touching .uid assigns the id)
        if isinstance(node, AccumulateGrad):
            node.variable.uid  # noqa: B018
        elif isinstance(node, OpNode):
            for slot, (child, _) in zip(node.inputs, node.next_functions):
                if isinstance(child, AccumulateGrad):
                    child.variable.uid  # noqa: B018
                elif type(slot) is SavedTensor and slot.tensor is not None:
                    slot.tensor.uid  # noqa: B018
            if node.output() is not None:
                node.output().uid  # noqa: B018
    for tensor, _ in edges:
        tensor.uid  # noqa: B018


def output_meta(edges: list, nodes: list) -> dict:
    """``(node, output_nr) -> (shape, dtype)`` of each node's output, read off its users."""
    meta = {}
    for tensor, _ in edges:
        meta[edge_of(tensor)] = (tuple(tensor.shape), tensor.dtype)
    for node in nodes:
        for (child, nr), m in zip(node.next_functions, getattr(node, "input_meta", ())):
            if child is not None and m is not None:
                meta.setdefault((child, nr), (tuple(m[0]), m[1]))
    return meta


def learner_name(t: Tensor) -> str | None:
    """What a learner calls ``t``: the name given it (``name="x"``), else where a module
    holds it (``"0.weight"``, as ``named_parameters()`` says); None when neither, and a
    picture calls it after the op that made it, or by its id."""
    if t.name is not None:
        return t.name
    return t._module_path if isinstance(t, Parameter) else None


def live_lines(t: Tensor, values=None, grad=None) -> list:
    """The label lines of a live tensor, called as a learner calls it."""
    return labels.tensor_lines(t.uid, learner_name(t), t.shape, t.dtype, values, grad)


def _numpy(t: Tensor | None):
    return None if t is None else backend.to_numpy(t._data)


# --------------------------------------------------------------- backward
# Above this many nodes the labels leave values out (shapes and dtypes stay): such a
# picture is folded, so few labels are ever read, and formatting thousands of small
# arrays would take seconds.
VALUES_NODE_LIMIT = 600


class GraphWalk(NamedTuple):
    """What both pictures read off the graph behind their roots."""

    edges: list  # (root tensor, its node), from root_edges
    root_nodes: list
    nodes: list  # every node reachable from the roots
    shapes: dict  # (node, output_nr) -> (shape, dtype), from output_meta
    values: bool  # few enough nodes for labels to show values, not only shapes


def walk_graph(roots: list, model: GraphModel) -> GraphWalk:
    """Walk the graph behind ``roots`` and number it; note on ``model`` when it is too
    large for values."""
    edges = root_edges(roots)
    root_nodes = [node for _, node in edges]
    nodes = walk(root_nodes)
    assign_ids(edges, nodes)
    values = len(nodes) <= VALUES_NODE_LIMIT
    if not values:
        model.notes.append(f"- {len(nodes)} nodes: labels show shapes, not values")
    return GraphWalk(edges, root_nodes, nodes, output_meta(edges, nodes), values)


def backward_model(roots: list) -> GraphModel:
    """The backward graph: grad_fn nodes with their formulas, saved tensors, leaves."""
    model = GraphModel("backward", title="backward graph")
    graph = walk_graph(roots, model)
    for tensor, node in graph.edges:
        _root_vertex(model, tensor, node)
    for node in graph.nodes:
        _node_vertex(model, node, graph.values)
        if isinstance(node, OpNode):
            _saved_vertices(model, node, graph.values)
        _node_edges(model, node, graph.shapes)
    model.order = [n.uid for n in backward_order(graph.root_nodes)]
    model.made = [n.uid for n in sorted(graph.nodes, key=lambda n: n._seq)]
    return name_outputs(model, graph.nodes)


def name_outputs(model: GraphModel, nodes: list) -> GraphModel:
    """Label each tensor an op made, and the learner did not name, after that op
    (``tanh_out`` rather than an id like ``t67``), in every box that shows it; the view
    ``make_dual`` makes is its primal under another name (``x (dual)``)."""
    made = [n for n in sorted(nodes, key=lambda n: n._seq) if not isinstance(n, AccumulateGrad)]
    duals = {n.uid for n in made if n.metadata.get("dual_of_input")}
    names = output_names([(node.uid, made_by(node)) for node in made if node.uid not in duals])
    by_id = {}
    for node in made:  # a custom Function's output is drawn as its node's "n7.out"
        if node.uid in duals:
            names[node.uid] = f"{input_name(node, names)} (dual)"
        out = node.output() if isinstance(node, OpNode) else None
        if out is None:
            by_id[f"{node.uid}.out"] = names[node.uid]
        elif learner_name(out) is None:
            by_id[out.uid] = names[node.uid]
    return rename_tensors(model, by_id)


def input_name(node: Node, names: dict) -> str:
    """How the picture calls the tensor ``node`` took as its first input: the learner's
    name for it, else the name of the op that made it (``names``), else its id."""
    child, _ = node.next_functions[0]
    if isinstance(child, AccumulateGrad):
        return learner_name(child.variable) or child.variable.uid
    out = child.output() if isinstance(child, OpNode) else None
    given = learner_name(out) if out is not None else None
    return given or names.get(child.uid) or (out.uid if out is not None else f"{child.uid}.out")


def made_by(node: Node) -> str:
    """The op a node's output is named after: ``matmul`` (its registry op, whatever its
    node is called, e.g. ``MvBackward0``), a custom Function's own name (``square``)."""
    return node.op.name if isinstance(node, OpNode) else op_word(node.name())


def _root_vertex(model: GraphModel, tensor: Tensor, node: Node) -> None:
    lines = live_lines(tensor, _numpy(tensor))
    model.add(Vertex(tensor.uid, "root", lines, members=(node.uid,)))
    model.connect(tensor.uid, node.uid, "1" if tensor.ndim == 0 else "ȳ")


def _node_vertex(model: GraphModel, node: Node, values: bool = True) -> None:
    if isinstance(node, AccumulateGrad):
        leaf = node.variable
        data, grad = (_numpy(leaf), _numpy(leaf._grad)) if values else (None, None)
        lines = ["AccumulateGrad"]
        lines += live_lines(leaf, data, grad)
        model.add(Vertex(node.uid, "accumulate", lines, members=(node.uid,), tooltip=node.uid))
        return
    lines = [node.name(), *origin_lines(node), *labels.formula_lines(node.formula)]
    tooltip = f"{node.uid}: {node.formula}" if node.formula else node.uid
    vertex = Vertex(node.uid, "backward", lines, (node.uid,), scope_of(node), tooltip)
    vertex.segment = node.metadata.get("checkpoint", "")
    mark_recomputed(vertex, node)
    model.add(vertex)


def origin_lines(node: Node) -> list:
    """A node the learner did not write says where it came from (``node.metadata["origin"]``,
    e.g. the view ``make_dual`` makes)."""
    origin = node.metadata.get("origin")
    return [origin] if origin else []


def mark_recomputed(vertex: Vertex, node: Node) -> None:
    """Class ``recomputed`` and a line saying so, for a node a checkpoint reran in backward.

    The checkpoint machinery counts reruns in ``node.metadata["recomputed"]`` and names
    the segment in ``node.metadata["checkpoint"]`` (see :mod:`workbench.record.recompute`).
    """
    count = node.metadata.get("recomputed")
    if count:
        add_recomputed_mark(vertex, count, node.metadata.get("checkpoint", "?"))


def scope_of(node: Node) -> tuple:
    """The name scope a node was recorded in, when the recorder kept it in its metadata."""
    return tuple(node.metadata.get("scope") or ())


def _saved_vertices(model: GraphModel, node: OpNode, values: bool = True) -> None:
    """One box per tensor the node saved for its rule (greyed once freed)."""
    slots = [(name, s) for name, s in zip(node.op.input_names, node.inputs)]
    if node.saved_out is not None:
        slots.append(("out", node.saved_out))
    for slot, saved in slots:
        if type(saved) is SavedTensor:
            lines = [f"saved {slot}", *_saved_text(node, saved, values)]
        elif saved is FREED:
            lines = [f"saved {slot}", "(freed)"]
        else:
            continue
        vid = f"{node.uid}.{slot}"
        model.add(Vertex(vid, "saved", lines, members=(node.uid,)))
        model.connect(node.uid, vid, kind="saved")


def _saved_text(node: OpNode, saved: SavedTensor, values: bool) -> list:
    if saved.tensor is not None:
        t = saved.tensor
        return live_lines(t, _numpy(t) if values else None)[0:3]
    if saved.array is not None:
        out = node.output()
        tid = out.uid if out is not None else f"{node.uid}.out"
        array = saved.array
        return labels.tensor_lines(tid, None, array.shape, array.dtype, array if values else None)
    return ["(packed by a saved_tensors_hooks pack hook)"]


def _node_edges(model: GraphModel, node: Node, shapes: dict) -> None:
    """Gradient edges to the next nodes, with a collapse-sum where broadcasting happened."""
    meta = getattr(node, "input_meta", ())
    out_shape = shapes.get((node, 0), (None,))[0]
    for i, (child, _) in enumerate(node.next_functions):
        if child is None:
            continue
        in_shape = meta[i][0] if i < len(meta) and meta[i] is not None else None
        label = "" if in_shape is None else labels.shape_text(in_shape)
        axes = None
        if isinstance(node, OpNode) and in_shape is not None and out_shape is not None:
            axes = labels.broadcast_axes(in_shape, out_shape)
        if axes is None:
            model.connect(node.uid, child.uid, label, shape=in_shape)
            continue
        cid = f"{node.uid}.sum{i}"
        lines = labels.collapse_lines(axes, out_shape, in_shape)
        model.add(Vertex(cid, "collapse", lines, members=(node.uid,)))
        model.connect(node.uid, cid, labels.shape_text(out_shape), shape=out_shape)
        model.connect(cid, child.uid, label, shape=in_shape)


# ---------------------------------------------------------------- forward
def forward_model(roots: list) -> GraphModel:
    """The forward graph: tensors (boxes) and the ops (ellipses) that made them.

    An op has the id of its backward node, and a tensor box is ``members`` of the
    node its gradient flows into, so a backward step can be highlighted here too.
    """
    model = GraphModel("forward", title="forward graph")
    graph = walk_graph(roots, model)
    outputs = {edge_of(t): t for t, _ in graph.edges}
    for node in reversed(graph.nodes):  # inputs first, so the picture reads top-down
        if isinstance(node, AccumulateGrad):
            _leaf_vertex(model, node, graph.values)
            continue
        _op_vertex(model, node)
        _input_edges(model, node)
        tid = _output_vertex(model, node, graph.shapes, outputs, graph.values)
        model.connect(node.uid, tid)
    model.order = [n.uid for n in backward_order(graph.root_nodes)]
    return name_outputs(model, graph.nodes)


def _leaf_vertex(model: GraphModel, node: AccumulateGrad, values: bool = True) -> str:
    leaf = node.variable
    data, grad = (_numpy(leaf), _numpy(leaf._grad)) if values else (None, None)
    lines = live_lines(leaf, data, grad)
    model.add(Vertex(leaf.uid, "leaf", lines, members=(node.uid,)))
    return leaf.uid


def _op_vertex(model: GraphModel, node: Node) -> None:
    name = node.op.name if isinstance(node, OpNode) else node.name().removesuffix("Backward")
    lines = [name, *origin_lines(node)]
    if isinstance(node, OpNode):
        lines += labels.attr_lines(node.attrs)
    vertex = Vertex(node.uid, "op", lines, (node.uid,), scope_of(node), node.name())
    vertex.segment = node.metadata.get("checkpoint", "")
    model.add(vertex)


def _output_vertex(
    model: GraphModel, node: Node, shapes: dict, outputs: dict, values: bool = True
) -> str:
    out = outputs.get((node, 0))
    if out is None and isinstance(node, OpNode):
        out = node.output()
    shape, dtype = shapes.get((node, 0), ((), ""))
    if out is None:
        tid = f"{node.uid}.out"
        lines = [tid, f"{labels.shape_text(shape)} {dtype}".strip()]
    else:
        tid = out.uid
        grad = _numpy(out._grad) if out._retains_grad and values else None
        data = _numpy(out) if values else None
        lines = live_lines(out, data, grad)
    model.vertices[tid] = Vertex(tid, "tensor", lines, members=(node.uid,))  # the full label
    return tid


def _input_edges(model: GraphModel, node: Node) -> None:
    meta = getattr(node, "input_meta", ())
    slots = node.inputs if isinstance(node, OpNode) else ()
    for i, (child, nr) in enumerate(node.next_functions):
        if child is not None:
            tid = _produced_by(model, child, nr)
        else:
            tid = _constant_vertex(model, node, i, meta, slots)
        if tid is not None:
            model.connect(tid, node.uid)


def _produced_by(model: GraphModel, child: Node, nr: int) -> str:
    """The vertex id of the tensor whose gradient goes to ``child`` (output ``nr``)."""
    if isinstance(child, AccumulateGrad):
        return child.variable.uid
    out = child.output() if isinstance(child, OpNode) and nr == 0 else None
    tid = out.uid if out is not None else f"{child.uid}.out" + (str(nr) if nr else "")
    if tid not in model.vertices:
        model.add(Vertex(tid, "tensor", [tid], members=(child.uid,)))  # until its producer fills it
        if nr:
            model.connect(child.uid, tid)  # only output 0 gets its own full box
    return tid


def _constant_vertex(model: GraphModel, node: Node, i: int, meta, slots) -> str | None:
    """An input that needs no gradient: a saved tensor, a plain tensor or a number."""
    slot = slots[i] if i < len(slots) else None
    if type(slot) is SavedTensor and slot.tensor is not None:
        t = slot.tensor
        lines = live_lines(t, _numpy(t))
        return model.add(Vertex(t.uid, "const", lines, members=())).id
    vid = f"{node.uid}.in{i}"
    if i < len(meta) and meta[i] is not None:
        lines = [f"constant {labels.shape_text(meta[i][0])}", str(meta[i][1])]
    elif isinstance(slot, (int, float, bool, complex)):
        lines = [repr(slot)]
    else:
        return None
    model.add(Vertex(vid, "const", lines, members=()))
    return vid
