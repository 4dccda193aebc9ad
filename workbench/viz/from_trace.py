"""Build a picture's model from a recorded :class:`~workbench.trace.Trace`.

A trace holds summaries, not the graph, so the picture is rebuilt from the events:
``op_recorded`` gives each forward op, its node and its edges; ``saved_tensor_packed``
the saved tensors; the ``node_step`` records of a backward pass give the order, the
formulas and the gradients; ``collapse_sum`` says where broadcasting was undone; and
``grad_accumulated`` the leaves' gradients; ``checkpoint_recompute`` which nodes a
checkpoint reran. Ids are the ones the live objects had, so a picture of a trace links
to the same ids as a picture of the live tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..record.graph import LEAVES_FIRST, Node, backward_order, walk
from ..trace import BackwardPass, Trace, summary_array
from . import labels
from .model import GraphModel, Vertex, add_recomputed_mark, output_names, rename_tensors


@dataclass
class TensorInfo:
    shape: tuple | None = None  # None: the trace never saw it
    dtype: str = ""
    name: str | None = None
    value: dict | None = None  # a summary


@dataclass
class NodeInfo:
    """What the trace says about one backward node."""

    id: str
    name: str = ""
    formula: str = ""
    op: str | None = None
    next: list = field(default_factory=list)  # node ids (or None), one per input
    input_shapes: list = field(default_factory=list)
    inputs: list = field(default_factory=list)  # tensor ids (or None)
    output: str | None = None  # tensor id
    output_shape: tuple | None = None
    leaf: str | None = None  # tensor id, for an AccumulateGrad
    scope: tuple = ()
    attrs: dict = field(default_factory=dict)
    step: object = None  # the TraceStep that ran it, if any
    rank: int = 0  # creation order, for the predicted step order


class _StandIn:
    """A recorded node as graph.backward_order reads one: its edges and its run order."""

    def __init__(self, info: NodeInfo) -> None:
        self.info = info
        self.next_functions: tuple = ()
        self._order = LEAVES_FIRST if info.leaf is not None else -info.rank

    __lt__ = Node.__lt__  # the heap compares ``_order`` only, as the engine's


class TraceGraph:
    """The graph a trace describes: tensors and nodes by id, and one backward pass."""

    def __init__(self, trace: Trace, which: int = -1) -> None:
        self.tensors: dict[str, TensorInfo] = {}
        self.nodes: dict[str, NodeInfo] = {}
        self.forward_ops: list[dict] = []
        self.saved: dict[str, list] = {}  # node id -> saved_tensor_packed records
        self.reruns: dict[str, int] = {}  # checkpoint segment -> times it was recomputed
        self.recomputed: dict[str, tuple] = {}  # node id -> (times, segment), as live marks
        passes = trace.passes
        self.backward: BackwardPass | None = passes[which] if passes else None
        for record in trace.records:
            self._read(record)
        if self.backward is not None:
            started = self.backward.started
            for tid, grad in zip(started["roots"], started["grad_outputs"]):
                self._learn_from_grad(tid, grad)
            for step in self.backward.steps:
                self._read_step(step)

    # reading records
    def _read(self, r: dict) -> None:
        kind = r["kind"]
        if kind == "op_recorded" and not r["in_backward"]:
            self._read_op(r)
        elif kind == "saved_tensor_packed":
            self.saved.setdefault(r["node"], []).append(r)
            self._learn_from_saved(r)
        elif kind == "checkpoint_recompute" and r["phase"] == "end":
            self._read_recompute(r)

    def _read_op(self, r: dict) -> None:
        self.forward_ops.append(r)
        names = r.get("input_names") or [None] * len(r["inputs"])
        for tid, shape, name in zip(r["inputs"], r["input_shapes"], names):
            if tid is not None:
                info = self.tensors.setdefault(tid, TensorInfo(tuple(shape)))
                info.name = info.name or name
        self.tensors[r["output"]] = TensorInfo(
            tuple(r["output_shape"]), r["dtype"], r.get("name"), r.get("value")
        )
        if r["node"] is None:
            return
        node = self._node(r["node"])
        node.op, node.scope, node.attrs = r["op"], tuple(r.get("scope") or ()), r["attrs"]
        node.next = list(r["next_nodes"])
        node.inputs, node.input_shapes = list(r["inputs"]), [tuple(s) for s in r["input_shapes"]]
        node.output, node.output_shape = r["output"], tuple(r["output_shape"])
        for tid, child, name in zip(r["inputs"], r["next_nodes"], r.get("next_names") or []):
            if child is None:
                continue
            info = self._node(child)
            info.name = info.name or name
            if name == "AccumulateGrad":
                info.leaf = tid
                info.formula = info.formula or "x.grad += x̄"

    def _read_recompute(self, r: dict) -> None:
        """A segment reran: its nodes now count that many reruns, as in ``node.metadata``.

        The whole trace is read, so a picture of any pass shows the counts at the end of
        the recording, as a live picture drawn then would.
        """
        runs = self.reruns[r["segment"]] = self.reruns.get(r["segment"], 0) + 1
        for nid in r["nodes"]:
            self.recomputed[nid] = (runs, r["segment"])

    def _read_step(self, step) -> None:
        r = step.record
        if r.get("leaf") and r["grads_in"]:
            self._learn_from_grad(r["leaf"], r["grads_in"][0])
        node = self._node(r["node"])
        node.name, node.formula, node.step = r["name"], r["formula"], step
        node.next = list(r["next_nodes"])
        node.leaf = r.get("leaf") or node.leaf
        node.op = r.get("op") or node.op

    def _learn_from_saved(self, r: dict) -> None:
        """A saved tensor's own summary (from ``wb.from_torch``) gives its shape and values."""
        if r["tensor"] is None or r.get("value") is None:
            return
        self._learn_from_grad(r["tensor"], r["value"])
        info = self.tensors[r["tensor"]]
        info.value = info.value or r["value"]

    def _learn_from_grad(self, tid: str, grad: dict | None) -> None:
        """A gradient has its tensor's shape and dtype: fill them in if the trace lacks them."""
        if grad is None:
            return
        info = self.tensors.setdefault(tid, TensorInfo())
        info.shape = tuple(grad["shape"]) if info.shape is None else info.shape
        info.dtype = info.dtype or grad["dtype"]

    def _node(self, nid: str) -> NodeInfo:
        if nid not in self.nodes:
            self.nodes[nid] = NodeInfo(nid, rank=len(self.nodes))
        return self.nodes[nid]

    # what to draw
    def root_nodes(self) -> list:
        """The pass's roots; without a pass, the nodes no other node points to."""
        if self.backward is not None:
            return list(self.backward.started["root_nodes"])
        pointed = {c for n in self.nodes.values() for c in n.next if c is not None}
        return [nid for nid in self.nodes if nid not in pointed]

    def root_tensors(self) -> list:
        if self.backward is not None:
            return list(zip(self.backward.started["roots"], self.backward.started["root_nodes"]))
        return [(self.nodes[n].output, n) for n in self.root_nodes() if self.nodes[n].output]

    def reachable(self) -> list:
        """The ids of the nodes the roots reach (``graph.walk``, on stand-ins)."""
        return [stand_in.info.id for stand_in in walk(self.stand_ins(self.nodes))]

    def stand_ins(self, ids) -> list:
        """The root nodes' stand-ins, whose edges lead to stand-ins for the nodes ``ids``."""
        stand_ins = {nid: _StandIn(self.nodes[nid]) for nid in ids}
        for stand_in in stand_ins.values():
            stand_in.next_functions = tuple((stand_ins.get(c), 0) for c in stand_in.info.next)
        return [stand_ins[n] for n in self.root_nodes() if n in stand_ins]

    def order(self, reachable: list) -> list:
        """Step order: as recorded, or before a backward the engine's own order
        (``graph.backward_order``, on stand-ins for the recorded nodes)."""
        if self.backward is not None:
            return [s.node for s in self.backward.steps]
        return [stand_in.info.id for stand_in in backward_order(self.stand_ins(reachable))]

    def grads(self, upto_step: int | None = None) -> dict:
        """``tensor id -> summary`` of each .grad after the pass (or after step ``upto_step``,
        counted from 1)."""
        grads = {}
        if self.backward is None:
            return grads
        steps = self.backward.steps
        if upto_step is not None:
            steps = steps[:upto_step]
        for step in steps:
            for r in step.of_kind("grad_accumulated"):
                grads[r["tensor"]] = r["after"]
        return grads

    def output_names(self) -> dict:
        """``tensor id -> "tanh_out"`` for each output of a graph op the learner did not
        name (see :func:`~workbench.viz.model.output_names`)."""
        ops = [r for r in self.forward_ops if r["node"] is not None]
        names = output_names([(r["output"], r["op"]) for r in ops])
        return {tid: name for tid, name in names.items() if not self.tensors[tid].name}

    def tensor_lines(self, tid: str, grads: dict | None = None) -> list:
        info = self.tensors.get(tid, TensorInfo())
        grad = summary_array((grads or {}).get(tid))
        return labels.tensor_lines(
            tid, info.name, info.shape, info.dtype, summary_array(info.value), grad
        )


# --------------------------------------------------------------- backward
def backward_model(trace: Trace, which: int = -1, upto_step: int | None = None) -> GraphModel:
    """The backward graph of pass ``which`` (or, before any backward, of the forward ops)."""
    graph = TraceGraph(trace, which)
    reachable = graph.reachable()
    if not reachable:
        raise ValueError("nothing to draw: the trace recorded no op that requires grad")
    grads = graph.grads(upto_step)
    model = GraphModel("backward", title="backward graph (from a trace)")
    for tid, nid in graph.root_tensors():
        model.add(Vertex(tid, "root", graph.tensor_lines(tid), members=(nid,)))
        model.connect(tid, nid, "1" if graph.tensors.get(tid, TensorInfo()).shape == () else "ȳ")
    for nid in reachable:
        node = graph.nodes[nid]
        _node_vertex(model, graph, node, grads)
        _saved_vertices(model, graph, node)
        _node_edges(model, graph, node)
    model.order = graph.order(reachable)
    return rename_tensors(model, graph.output_names())


def _node_vertex(model: GraphModel, graph: TraceGraph, node: NodeInfo, grads: dict) -> None:
    if node.leaf is not None or node.name == "AccumulateGrad":
        lines = ["AccumulateGrad"]
        if node.leaf is not None:
            lines += graph.tensor_lines(node.leaf, grads)
        model.add(Vertex(node.id, "accumulate", lines, members=(node.id,), scope=node.scope))
        return
    name, formula = node.name, node.formula
    if not name and node.op is not None:
        name, formula = _registry_names(node.op)
    lines = [name or node.id, *labels.formula_lines(formula)]
    tooltip = f"{node.id}: {formula}" if formula else node.id
    vertex = Vertex(node.id, "backward", lines, (node.id,), node.scope, tooltip)
    if node.id in graph.recomputed:
        add_recomputed_mark(vertex, *graph.recomputed[node.id])
        vertex.segment = graph.recomputed[node.id][1]
    model.add(vertex)


def _registry_names(op: str) -> tuple:
    """Node name and formula from the op registry (for nodes the trace saw only forward)."""
    from ..ops.registry import OPS

    found = OPS.get(op)
    return (found.node_name, found.formula) if found is not None else (op, "")


def _saved_vertices(model: GraphModel, graph: TraceGraph, node: NodeInfo) -> None:
    for r in graph.saved.get(node.id, []):
        vid = f"{node.id}.{r['slot']}"
        lines = [f"saved {r['slot']}"]
        if r["tensor"] is not None:
            lines += graph.tensor_lines(r["tensor"])[:3]
        model.add(Vertex(vid, "saved", lines, members=(node.id,), scope=node.scope))
        model.connect(node.id, vid, kind="saved")


def _node_edges(model: GraphModel, graph: TraceGraph, node: NodeInfo) -> None:
    collapsed = _recorded_collapses(node) if node.step is not None else {}
    for i, child in enumerate(node.next):
        if child is None:
            continue
        if child not in graph.nodes:  # made before the trace began, and it did not run
            model.add(Vertex(child, "backward", [child, "(did not run)"], (child,)))
        shape = _edge_shape(node, i)
        label = "" if shape is None else labels.shape_text(shape)
        found = collapsed.get(i)
        if found is None and node.step is None and shape is not None and node.output_shape:
            axes = labels.broadcast_axes(shape, node.output_shape)
            found = None if axes is None else (axes, node.output_shape, shape)
        if found is None:
            model.connect(node.id, child, label, shape=shape)
            continue
        cid = f"{node.id}.sum{i}"
        model.add(Vertex(cid, "collapse", labels.collapse_lines(*found), (node.id,), node.scope))
        model.connect(node.id, cid, labels.shape_text(found[1]), shape=tuple(found[1]))
        model.connect(cid, child, label, shape=shape)


def _edge_shape(node: NodeInfo, i: int) -> tuple | None:
    if node.step is not None and i < len(node.step.grads_out):
        grad = node.step.grads_out[i]
        if grad is not None:
            return tuple(grad["shape"])
    if i < len(node.input_shapes):
        return node.input_shapes[i]
    return None


def _recorded_collapses(node: NodeInfo) -> dict:
    """``input index -> (axes, from, to)`` for the collapse-sums recorded in the node's step."""
    ids = list(node.step.record.get("grads_out_ids") or [])
    found = {}
    for r in node.step.of_kind("collapse_sum"):
        entry = (tuple(r["axes"]), tuple(r["input_shape"]), tuple(r["output_shape"]))
        if r.get("output") in ids:
            found[ids.index(r["output"])] = entry
            continue
        for i, grad in enumerate(node.step.grads_out):  # the rule reshaped it afterwards
            if i not in found and grad is not None and tuple(grad["shape"]) == entry[2]:
                found[i] = entry
                break
    return found


# ---------------------------------------------------------------- forward
def forward_model(trace: Trace, which: int = -1, upto_step: int | None = None) -> GraphModel:
    """The forward ops of the trace: tensors (boxes) and ops (ellipses)."""
    graph = TraceGraph(trace, which)
    if not graph.forward_ops:
        raise ValueError("nothing to draw: the trace recorded no forward op")
    grads = graph.grads(upto_step)
    acc_of = {n.leaf: n.id for n in graph.nodes.values() if n.leaf is not None}
    model = GraphModel("forward", title="forward graph (from a trace)")
    for k, r in enumerate(graph.forward_ops):
        op_id = r["node"] or f"op{k}"
        scope = tuple(r.get("scope") or ())
        for i, tid in enumerate(r["inputs"]):
            src = tid if tid is not None else f"{op_id}.in{i}"
            if tid is None:
                model.add(Vertex(src, "const", [str(r["attrs"].get(f"input{i}", "?"))]))
            else:
                kind = "leaf" if tid in acc_of else "tensor"
                members = (acc_of[tid],) if tid in acc_of else ()
                model.add(Vertex(tid, kind, graph.tensor_lines(tid, grads), members, scope))
            model.connect(src, op_id)
        lines = [r["op"], *labels.attr_lines(r["attrs"])]
        members = (r["node"],) if r["node"] else ()
        model.add(Vertex(op_id, "op", lines, members, scope))
        out = r["output"]
        model.vertices[out] = Vertex(out, "tensor", graph.tensor_lines(out, grads), members, scope)
        model.connect(op_id, out)
    model.order = graph.order(graph.reachable())
    return rename_tensors(model, graph.output_names())
