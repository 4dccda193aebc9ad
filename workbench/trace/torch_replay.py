"""PyTorch's own backward, replayed: ``wb.from_torch(loss)`` records a real PyTorch backward.

::

    import torch
    import workbench as wb

    loss = torch.nn.functional.cross_entropy(model(x), y)
    tr = wb.from_torch(loss, names=model)   # runs loss.backward(): every p.grad is filled in
    wb.widgets.BackwardStepper(tr)          # PyTorch's nodes, in the order PyTorch ran them
    tr.save("torch_run.json")               # a trace like any other

How: walk PyTorch's graph from ``loss.grad_fn`` along ``next_functions``, put a
pre-hook and a hook on every node (``Node.register_prehook`` and ``register_hook``),
run ``loss.backward()``, and write down what each node received and sent as it runs.
The hooks are removed afterwards. The result is a :class:`~workbench.trace.Trace`
holding the same kinds of record as a trace of this workbench's own engine:

- ``op_recorded`` for every node of PyTorch's graph, oldest first: its edges
  (``next_nodes``), the shapes and dtypes PyTorch keeps for them, and the node's
  non-tensor saved values (``dim``, ``stride``...) as ``attrs``;
- ``saved_tensor_packed`` for every tensor a node saved (its ``_saved_*`` attributes:
  ``_saved_self`` is slot ``self``), with the tensor's shape, dtype and values;
- ``backward_started``; then, for each node in the order PyTorch ran it, its
  ``node_step`` (gradients in and out), which for an ``AccumulateGrad`` comes after a
  ``grad_accumulated`` (the leaf's ``.grad`` before, the contribution, and after);
  then ``backward_finished``.

Node names are PyTorch's (``MulBackward0``, ``AccumulateGrad``); ids are numbered like
ours (``n1``, ``t1``), oldest first. What PyTorch's graph does not keep, the trace
cannot show:

- a node's output value, unless some node saved it (``_saved_result``, or the next
  op's ``_saved_self``);
- op names: ``op`` is the node's name without ``Backward0``, lower-cased (``mul``);
- gradient formulas: PyTorch's rules are C++ generated from ``derivatives.yaml``;
- inputs that need no gradient: they are not edges of the graph, so they show as
  ``None`` inputs (a shape of ``()``), as Python numbers do in our traces.

PyTorch is an optional dependency: it is imported only when ``from_torch`` is called.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from ..core import dtypes, events
from ..record.graph import walk
from . import SMALL_ARRAY, Trace, summarize, to_record

if TYPE_CHECKING:  # only for the annotations: importing workbench never imports torch
    import torch

NO_TORCH = (
    "wb.from_torch needs PyTorch, which is not installed here. Install it with "
    "`pip install 'autodiff-workbench[torch]'` (the PyTorch version the tests use), "
    "or `pip install torch`."
)
NO_GRAPH = (
    "This tensor has no grad_fn, so PyTorch has no backward graph to replay: make the "
    "inputs with requires_grad=True (outside torch.no_grad()), compute the loss from "
    "them, and pass the loss."
)
FREED = (
    "PyTorch has already freed this graph's saved tensors (a backward ran without "
    "retain_graph=True), so there is nothing left to replay. Build the loss again, or "
    "pass retain_graph=True the first time to step through the same graph twice."
)
ACCUMULATE_FORMULA = "x.grad += x̄"  # as our own AccumulateGrad says it
UINT64 = 2**64


def from_torch(
    loss: torch.Tensor,
    retain_graph: bool = False,
    *,
    names: torch.nn.Module | Mapping[str, torch.Tensor] | None = None,
    small: int = SMALL_ARRAY,
) -> Trace:
    """Run ``loss.backward()`` in PyTorch and return a :class:`~workbench.trace.Trace` of it.

    ``loss`` is a PyTorch tensor with a ``grad_fn`` (a scalar, as ``backward()`` needs).
    ``retain_graph`` is passed to ``backward()``: keep the graph to replay it again.
    ``names`` names the leaves in pictures and panels: a ``torch.nn.Module`` (its
    ``named_parameters()``) or a mapping from names to tensors; unnamed leaves show
    their ids (``t3``). ``small`` is the largest array stored with its values, as in
    :func:`wb.trace() <workbench.trace.trace>`.

    Like ``loss.backward()``, this adds into every leaf's ``.grad``.
    """
    torch = _import_torch()
    _check_loss(torch, loss)
    replay = TorchReplay(torch, loss, _leaf_names(names), small)
    handles = replay.hook_every_node()
    try:
        loss.backward(retain_graph=retain_graph)
    finally:
        for handle in handles:
            handle.remove()
    return replay.trace(retain_graph)


def _import_torch():
    from ..compat.torch_alias import is_active

    if is_active():
        raise RuntimeError(
            "wb.from_torch needs the real PyTorch, but workbench.as_torch() has put the "
            "workbench under the name torch in this process: a program run that way is "
            "already on the workbench (step through its loss with BackwardStepper(loss)). "
            "Run the PyTorch program in a process without as_torch() to replay PyTorch's "
            "own backward."
        )
    try:
        import torch
    except ImportError as err:  # also when sys.modules["torch"] is None
        raise ModuleNotFoundError(NO_TORCH, name="torch") from err
    return torch


def _check_loss(torch, loss) -> None:
    if not isinstance(loss, torch.Tensor):
        raise TypeError(
            f"wb.from_torch takes a PyTorch tensor, not {type(loss).__module__}."
            f"{type(loss).__name__}. For a workbench tensor, pass it to "
            "BackwardStepper(loss) or record a wb.trace()."
        )
    if loss.grad_fn is None:
        raise ValueError(NO_GRAPH)
    node = loss.grad_fn
    if not all(hasattr(node, a) for a in ("register_prehook", "_input_metadata")):
        raise RuntimeError(
            f"wb.from_torch needs hooks on PyTorch's graph nodes (register_prehook) and "
            f"their shapes (_input_metadata), which PyTorch {torch.__version__} lacks: "
            "please upgrade PyTorch."
        )


def _leaf_names(names) -> dict:
    """``id(tensor) -> name`` from a module or a ``{name: tensor}`` mapping."""
    if names is None:
        return {}
    if hasattr(names, "named_parameters"):
        names = dict(names.named_parameters())
    if not isinstance(names, Mapping):
        raise TypeError("names should be a torch.nn.Module or a {name: tensor} mapping")
    return {id(tensor): (name, tensor) for name, tensor in names.items()}


# ------------------------------------------------------------------ the graph
def graph_nodes(root) -> list:
    """Every node reachable from ``root``, oldest first (``graph.walk`` reads PyTorch's too).

    PyTorch numbers nodes as it makes them (``_sequence_nr``); an ``AccumulateGrad``
    has the largest number, so the leaves come last.
    """
    return sorted(walk([root]), key=lambda node: node._sequence_nr())


def node_name(node) -> str:
    """PyTorch's class name for a node: ``MulBackward0``, ``AccumulateGrad``.

    (``node.name()`` says ``torch::autograd::AccumulateGrad`` for the leaves.)
    """
    return type(node).__name__


def is_leaf_node(node) -> bool:
    return node_name(node) == "AccumulateGrad"


def op_name(name: str) -> str:
    """``MulBackward0 -> mul``: PyTorch's graph keeps the node's name, not the op's."""
    return re.sub(r"Backward\d*$", "", name).lower() or name


def formula(torch, node) -> str:
    """What the panel says about the rule: PyTorch's rules are not readable from Python."""
    name = node_name(node)
    if is_leaf_node(node):
        return ACCUMULATE_FORMULA
    if isinstance(node, torch.autograd.function.BackwardCFunction):
        return f"Forward: your autograd.Function\nBackward: its backward(), run by {name}"
    return f"Forward: PyTorch's {op_name(name)}\nBackward: C++ rule from derivatives.yaml"


def dtype_name(dtype) -> str:
    """``torch.float32 -> "float32"``, numpy's spelling."""
    return str(dtype).removeprefix("torch.")


def attr_value(value):
    """A non-tensor saved value as plain JSON: numbers, text, lists of them."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        # PyTorch hands some int64 values back as unsigned (ignore_index=-100 comes
        # back as 2**64 - 100): give the signed number.
        return value - UINT64 if value >= 2**63 else value
    if isinstance(value, float):
        return value if np.isfinite(value) else str(value)
    if isinstance(value, (tuple, list)):
        return [attr_value(v) for v in value]
    return str(value)


# ------------------------------------------------------------------ recording
class TorchReplay:
    """PyTorch's graph for one loss, the hooks that watch its backward, and the events.

    Made before the backward (the saved tensors are read then: a backward without
    ``retain_graph`` frees them), then :meth:`hook_every_node`, ``loss.backward()``,
    and :meth:`trace`.
    """

    def __init__(self, torch, loss, names: dict, small: int) -> None:
        self.torch = torch
        self.small = small
        self.names = names  # id(tensor) -> (name, tensor): the tensor keeps the id valid
        self.node_ids: dict = {}  # PyTorch node -> "n1"
        self.tensor_ids: dict = {}  # tensor_key(...) -> "t1"
        self.kept: list = []  # tensors whose id() is in a key: alive while we work
        self.values: dict = {}  # tensor id -> summary, for the tensors nodes saved
        self.saved_total = 0
        self.loss = loss
        self.nodes = graph_nodes(loss.grad_fn)
        self.forward = [self._describe(node) for node in self.nodes if not is_leaf_node(node)]
        self.values.setdefault(self.tensor_id(loss), self.summary(loss))
        self.backward: list[events.Event] = []
        self.steps = 0  # node steps recorded so far
        self.came_in: dict = {}  # node -> summaries of the gradients it received
        self.grad_before: dict = {}  # AccumulateGrad node -> its leaf's .grad before

    # ids
    def node_id(self, node) -> str:
        if node not in self.node_ids:
            self.node_ids[node] = f"n{len(self.node_ids) + 1}"
        return self.node_ids[node]

    def tensor_id(self, tensor) -> str:
        """The id of a tensor: an output of a node, or a tensor of its own (a leaf, an input)."""
        if tensor.grad_fn is not None:
            return self.output_id(tensor.grad_fn, tensor.output_nr)
        key = ("tensor", id(tensor))
        if key not in self.tensor_ids:
            self.kept.append(tensor)
            self.tensor_ids[key] = f"t{len(self.tensor_ids) + 1}"
        return self.tensor_ids[key]

    def output_id(self, node, output_nr: int) -> str:
        key = ("output", node, output_nr)
        if key not in self.tensor_ids:
            self.tensor_ids[key] = f"t{len(self.tensor_ids) + 1}"
        return self.tensor_ids[key]

    def leaf_id(self, node) -> str:
        return self.tensor_id(node.variable)

    def name_of(self, tensor) -> str | None:
        found = self.names.get(id(tensor))
        return found[0] if found is not None and found[1] is tensor else None

    # before the backward: what the graph holds
    def _describe(self, node) -> tuple:
        """The node's ``op_recorded`` (its value filled in later) and its saved tensors."""
        nid = self.node_id(node)
        edges = [self._edge(i, child, nr) for i, (child, nr) in enumerate(node.next_functions)]
        output = self.output_id(node, 0)
        attrs = {f"input{i}": "no grad" for i, edge in enumerate(edges) if edge[0] is None}
        saved = []
        for slot, value in self._saved_values(node):
            if isinstance(value, self.torch.Tensor):
                saved.append(self._saved_event(nid, slot, value))
            elif "sym_" not in slot:  # sym_sizes, sym_strides: PyTorch's bookkeeping
                attrs[slot] = attr_value(value)
        shape, dtype = self._output_meta(node, 0)
        op = events.OpRecorded(
            op=op_name(node_name(node)),
            output=output,
            inputs=tuple(edge[0] for edge in edges),
            input_shapes=tuple(edge[1] for edge in edges),
            output_shape=shape,
            dtype=dtype,
            node=nid,
            attrs=attrs,
            next_nodes=tuple(edge[2] for edge in edges),
            next_names=tuple(edge[3] for edge in edges),
            input_names=tuple(edge[4] for edge in edges),
        )
        return op, saved

    def _edge(self, i: int, child, output_nr: int) -> tuple:
        """``(tensor id, shape, node id, node name, tensor name)`` of one input edge."""
        if child is None:  # an input that needs no gradient: not in PyTorch's graph
            return None, (), None, None, None
        if is_leaf_node(child):
            leaf = child.variable
            nid, tid = self.node_id(child), self.tensor_id(leaf)
            return tid, tuple(leaf.shape), nid, "AccumulateGrad", self.name_of(leaf)
        shape, _ = self._output_meta(child, output_nr)
        return self.output_id(child, output_nr), shape, self.node_id(child), node_name(child), None

    def _output_meta(self, node, output_nr: int) -> tuple:
        """The shape and dtype PyTorch's graph keeps for output ``output_nr`` of ``node``."""
        meta = node._input_metadata[output_nr]  # the inputs of the backward node
        return tuple(meta.shape), dtype_name(meta.dtype)

    def _saved_values(self, node) -> list:
        """``(slot, value)`` for every ``_saved_*`` attribute; a list of tensors gives many."""
        found = []
        for attr in sorted(dir(node)):
            if not attr.startswith("_saved_"):
                continue
            try:
                value = getattr(node, attr)
            except RuntimeError as err:  # "Trying to backward through the graph a second time"
                raise RuntimeError(FREED) from err
            slot = attr[len("_saved_") :]
            if isinstance(value, (tuple, list)) and any(
                isinstance(v, self.torch.Tensor) for v in value
            ):
                found += [(f"{slot}[{i}]", v) for i, v in enumerate(value) if v is not None]
            elif value is not None:
                found.append((slot, value))
        return found

    def _saved_event(self, nid: str, slot: str, tensor) -> events.SavedTensorPacked:
        tid = self.tensor_id(tensor)
        summary = self.summary(tensor)
        self.values.setdefault(tid, summary)
        nbytes = tensor.element_size() * tensor.numel()
        self.saved_total += nbytes
        return events.SavedTensorPacked(
            node=nid,
            slot=slot,
            tensor=tid,
            nbytes=nbytes,
            total_bytes=self.saved_total,
            value=summary,
        )

    # during the backward: the hooks
    def hook_every_node(self) -> list:
        """A pre-hook and a hook on every node; returns the handles that remove them."""
        handles = []
        for node in self.nodes:
            handles.append(node.register_prehook(partial(self._before_node, node)))
            handles.append(node.register_hook(partial(self._after_node, node)))
        return handles

    def _before_node(self, node, grads_in: tuple) -> None:
        """PyTorch is about to run ``node``: keep what came in (and a leaf's ``.grad``)."""
        self.came_in[node] = tuple(self.summary(g) for g in grads_in)
        if is_leaf_node(node):
            self.grad_before[node] = self.summary(node.variable.grad)
        # returning None leaves the gradients as they are

    def _after_node(self, node, grads_out: tuple, grads_in: tuple) -> None:
        """``node`` ran. PyTorch names the arguments from the forward's side: the
        ``grad_inputs`` it passes first are the gradients *sent* to the node's inputs."""
        grads_in = self.came_in.pop(node)
        leaf = None
        if is_leaf_node(node):
            leaf = self.leaf_id(node)
            accumulated = events.GradAccumulated(
                tensor=leaf,
                before=self.grad_before.pop(node),
                contribution=grads_in[0],
                after=self.summary(node.variable.grad),
            )
            self.backward.append(accumulated)
        step = events.NodeStep(
            index=self.steps,
            node=self.node_id(node),
            name=node_name(node),
            op=None if leaf else op_name(node_name(node)),
            formula=formula(self.torch, node),
            grads_in=grads_in,
            grads_out=tuple(self.summary(g) for g in grads_out),
            next_nodes=tuple(
                None if child is None else self.node_id(child) for child, _ in node.next_functions
            ),
            leaf=leaf,
        )
        self.backward.append(step)
        self.steps += 1

    # after the backward: the trace
    def trace(self, retain_graph: bool) -> Trace:
        """Every event, numbered in order, as the records of a new Trace."""
        root, root_node = self.tensor_id(self.loss), self.node_id(self.loss.grad_fn)
        recorded: list[events.Event] = []
        for op, saved in self.forward:
            op.value = self.values.get(op.output)  # known when some node saved it
            recorded += [op, *saved]
        seed = self.summary(self.torch.ones_like(self.loss))
        recorded.append(
            events.BackwardStarted(
                roots=(root,),
                root_nodes=(root_node,),
                grad_outputs=(seed,),
                create_graph=False,
                retain_graph=retain_graph,
            )
        )
        recorded += self.backward
        recorded.append(events.BackwardFinished(steps=self.steps, roots=(root,)))
        for seq, event in enumerate(recorded, start=1):
            event.seq = seq
        return Trace([to_record(event) for event in recorded], small=self.small)

    def summary(self, tensor) -> dict | None:
        """A trace summary of a PyTorch tensor, made now (``.grad`` changes in place later)."""
        if tensor is None:
            return None
        return summarize(to_numpy(tensor), self.small)


def to_numpy(tensor) -> np.ndarray:
    """A numpy copy of any PyTorch tensor: detached, dense, on the CPU.

    bfloat16 comes over bit for bit, as ml_dtypes' bfloat16; PyTorch's other small
    floats (float8 types...), which numpy lacks, become float32.
    """
    tensor = tensor.detach()
    if tensor.is_sparse:
        tensor = tensor.to_dense()
    tensor = tensor.cpu().resolve_conj().resolve_neg()
    if str(tensor.dtype) == "torch.bfloat16" and dtypes.bfloat16 is not None:
        import torch  # a torch tensor is here, so torch is imported already

        return tensor.view(torch.int16).numpy().view(dtypes.bfloat16)
    try:
        return tensor.numpy()
    except TypeError:  # "Got unsupported ScalarType Float8_e4m3fn"
        return tensor.float().numpy()
