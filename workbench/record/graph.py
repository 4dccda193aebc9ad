"""The backward graph: its nodes, the edges between them, the tensors saved for the
rules, and the walks over it that the engine, the pictures and the checkers share.

Every differentiable op call creates one :class:`OpNode` holding what its gradient
rule needs (the saved tensors, the attributes, the input shapes) and one edge per
input: ``next_functions[i] == (node, output_nr)``, where a leaf's node is its
:class:`AccumulateGrad`. The node holds its output weakly, so a graph never keeps
itself alive through a cycle.

Each object here is made by its own class, and only there: a node by its
constructor, an edge by :func:`edge_of`, a saved tensor by :class:`SavedTensor`,
which :mod:`.memory` lists to find the saved bytes. A tensor gets its history in one place,
:func:`set_history`, whoever made it: an op, an in-place op, a custom Function.

The walks (:func:`walk`, :func:`count_dependencies`, :func:`backward_order`) never
recurse: a chain of 100,000 nodes would overflow Python's recursion limit.
"""

from __future__ import annotations

import heapq
import itertools
import traceback
import weakref
from collections.abc import Callable, Mapping
from types import MappingProxyType

from ..core import events, state
from ..core.tensor import RemovableHandle, Tensor, add_hook
from . import collector, forward_ad, memory

node_sequence = itertools.count()  # each new node takes the next number: its creation order

# The engine runs the ready node with the smallest ``_order`` first: the node recorded
# last (``_order`` is minus its creation number), except that a leaf's AccumulateGrad
# runs as soon as it is ready, before any op node. PyTorch gives every AccumulateGrad the
# same, highest sequence number, so every AccumulateGrad here has the same ``_order``:
# LEAVES_FIRST, below any op node's. Between two of them the heap decides (Node.__lt__).
LEAVES_FIRST = -(1 << 62)

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


class Node:
    """A function of the backward graph: gradients in, one gradient per input edge out."""

    # Every node sets these three; the rarely-set fields live in the instance dict, with
    # the class defaults below, so that making a node costs three assignments.
    __slots__ = ("next_functions", "_seq", "_order", "__dict__", "__weakref__")

    num_outputs = 1
    _uid = None
    _pre_hooks = None
    _post_hooks = None
    _tensor_hooks = None  # {output_nr: {key: hook}}
    _retained = None  # {output_nr: weakref to a tensor that retains its grad}
    _forward_stack = None
    # True once a hook of any kind (or retain_grad) may run at this node: the engine asks
    # this one question and looks for hooks only where it is True.
    _hooked = False
    # True for a vmap's batched call that the levels outside the vmap see through its rule
    # (set by func/batching.py's mark_seen_outside, read by func/reverse.py).
    seen_outside = False

    def __init__(self) -> None:
        self.next_functions: tuple = ()
        self._seq = seq = next(node_sequence)
        self._order = -seq

    @property
    def metadata(self) -> dict:
        """Free-form notes on the node (name scope, checkpoint segment), as PyTorch's."""
        notes = self.__dict__.get("_metadata")
        if notes is None:
            notes = self._metadata = {}
        return notes

    @property
    def uid(self) -> str:
        if self._uid is None:
            self._uid = events.new_node_id()
        return self._uid

    def __lt__(self, other: Node) -> bool:
        """Which of two ready nodes runs first, on the engine's heap: the smaller ``_order``.

        Two leaves' nodes (the same ``_order``) are neither smaller: the heap leaves them
        where its sifting puts them, as PyTorch's ready queue (a binary heap, a
        ``std::priority_queue``) does. Python's ``heapq`` sifts as libstdc++'s
        ``push_heap``/``pop_heap`` do, so ties fall as in PyTorch.
        """
        return self._order < other._order

    def name(self) -> str:
        raise NotImplementedError  # abstract: each kind of node names itself

    @property
    def formula(self) -> str:
        """The rule's *Forward / Backward* text, for pictures and widgets."""
        return ""

    def __repr__(self) -> str:
        return f"<{self.name()} {self.uid}>"

    # hooks, with PyTorch's signatures
    def register_prehook(self, hook: Callable) -> RemovableHandle:
        """``hook(grad_outputs) -> tuple | None`` runs before the node's rule."""
        self._pre_hooks, handle = add_hook(self._pre_hooks, hook)
        self._hooked = True
        return handle

    def register_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(grad_inputs, grad_outputs) -> tuple | None`` runs after the node's rule."""
        self._post_hooks, handle = add_hook(self._post_hooks, hook)
        self._hooked = True
        return handle

    def _add_tensor_hook(self, output_nr: int, hook: Callable) -> RemovableHandle:
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        hooks, handle = add_hook(self._tensor_hooks.get(output_nr), hook)
        self._tensor_hooks[output_nr] = hooks
        self._hooked = True
        return handle

    def _keep_tensor_hooks(self, hooks: dict) -> None:
        """Take over the hooks of output 0 from the node this one replaces (a view's)."""
        self._tensor_hooks = {0: hooks}
        self._hooked = True

    def _retain(self, tensor: Tensor) -> None:
        if self._retained is None:
            self._retained = {}
        self._retained[tensor._output_nr] = weakref.ref(tensor)
        self._hooked = True

    def _tensor_hooks_for(self, output_nr: int) -> dict | None:
        return None if self._tensor_hooks is None else self._tensor_hooks.get(output_nr)

    # what the engine calls
    def apply(self, grad_outputs: list) -> list:
        """Gradients w.r.t. the node's outputs in (ȳ), one gradient per input edge out (x̄)."""
        raise NotImplementedError  # abstract: each kind of node computes its gradients

    def release(self) -> None:
        """Free saved tensors after a backward that does not retain the graph."""

    def was_freed(self) -> bool:
        """Whether an earlier backward freed what this node saved (running it would fail)."""
        return False


class AccumulateGrad(Node):
    """The node of a leaf: the engine adds the gradient that reaches it into ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable: Tensor) -> None:
        self.next_functions = ()
        self._seq = next(node_sequence)
        self._order = LEAVES_FIRST  # it runs as soon as it is ready (see LEAVES_FIRST)
        self.variable = variable
        if variable._hooks is not None or variable._post_acc_hooks is not None:
            self._hooked = True

    def name(self) -> str:
        return "AccumulateGrad"

    @property
    def formula(self) -> str:
        return "x.grad += x̄"

    def _tensor_hooks_for(self, output_nr: int) -> dict | None:
        return self.variable._hooks

    def apply(self, grad_outputs: list) -> list:
        return []  # a leaf sends nothing on; the engine accumulates (GraphTask.accumulate)


def grad_accumulator(leaf: Tensor) -> AccumulateGrad:
    """The leaf's AccumulateGrad node, made on first use and shared while alive."""
    node = leaf._grad_acc() if leaf._grad_acc is not None else None
    if node is None:
        node = AccumulateGrad(leaf)
        leaf._grad_acc = weakref.ref(node)
    return node


def set_history(tensor: Tensor, node: Node, output_nr: int = 0) -> None:
    """Make ``tensor`` the ``output_nr``-th output of ``node``: a non-leaf that requires
    grad, whose gradient flows into ``node`` (PyTorch's ``set_history``)."""
    tensor._grad_fn = node
    tensor._output_nr = output_nr
    tensor._requires_grad = True


def on_some_tape(t: Tensor) -> bool:
    """Whether ``t`` is on a tape: it requires grad, or (under ``wb.func.vmap``) the batch
    behind it is on the tape of the levels outside the vmap (``func/batched.py``), so
    what is computed from it must be recorded there even if ``t`` has no history of its
    own at the vmap's level."""
    return t._requires_grad or getattr(t._data, "on_outer_tape", False)


def edge_of(t: Tensor) -> tuple:
    """The (node, output_nr) a gradient for ``t`` flows into: the node that made ``t``,
    a leaf's AccumulateGrad, or ``(None, 0)`` when ``t`` needs no gradient."""
    if t._grad_fn is not None:
        if t._view_of is not None:
            t._refresh_view()
        return (t._grad_fn, t._output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return NO_EDGE


# ------------------------------------------------------------------ saved tensors
@memory.saver
class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    Saved inputs keep the input tensor. A saved *output* keeps only its array and
    version counter (the node already owns the output's history; keeping the
    tensor would make a cycle) and is rebuilt, attached to the node, when unpacked.

    While it keeps an array, the saved tensor *holds* it (``held``, where :mod:`.memory`
    finds the saved bytes), and it lets go as it dies:
    when backward frees the node's slots (``OpNode.release``), or when the graph is
    dropped without a backward.
    """

    __slots__ = (
        "tensor",
        "array",
        "version_ref",
        "version",
        "packed",
        "unpack_hook",
        "output_nr",
        "held",
        "added",
        "tangent_kept",  # forward mode: a saved output's tangents by level (keep_tangent only)
        "__weakref__",  # memory's counters, once started, watch it die
    )

    def __init__(self, tensor: Tensor, is_output: bool, output_nr: int = 0) -> None:
        self.held = None  # set first: memory's search reads it, even on one whose __init__ raised
        if tensor._is_inference and not state.grad_mode.inference:
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. To work around you can make "
                "a clone to get a normal tensor and use it in autograd."
            )
        self.output_nr = output_nr
        self.version_ref = version_ref = tensor._version_ref
        self.version = version_ref[0]
        self.unpack_hook = None
        if state.in_use.saved_hooks and state.saved_hooks.stack:
            self._pack(tensor)
            return
        data = tensor._data
        if is_output:
            self.tensor = None
            self.array = data
        else:
            self.tensor = tensor
            self.array = None
        self.held = data
        self.added = memory.track(self)  # 0 when nothing counts, or the array was held

    def _pack(self, tensor: Tensor) -> None:
        """Hand the tensor to the innermost saved_tensors_hooks' pack hook; keep its result."""
        memory.counting()  # (started now if a listener needs it, before ``before`` is read)
        before = memory.SavedMemory.current
        pack, unpack = state.saved_hooks.stack[-1]
        self.tensor = None
        self.array = None
        self.packed = pack(tensor)  # the hook's owner accounts for what it keeps
        self.unpack_hook = unpack
        self.added = memory.SavedMemory.current - before
        if events.listening:
            events.publish(events.HookFired(hook="pack", target=tensor.uid, replaced=True))

    @property
    def dropped_as(self) -> tuple:
        """The slot and the tensor that the event of a graph dropped with it names."""
        return ("dropped", self.tensor)

    def drop(self) -> int:
        """Let go of the saved array now; returns the bytes that freed in the counters."""
        if self.held is None:
            return 0
        freed = memory.uncount(self)
        self.held = None
        return freed

    def unpack(self, node: Node, what: str | int) -> Tensor:
        """The saved tensor, unless it changed in place since; ``what`` names it in errors."""
        if self.unpack_hook is not None:
            return self._unpack_hooked(node)
        if self.version_ref[0] != self.version:
            raise RuntimeError(self._modified_message(node, what))
        if self.tensor is not None:
            return self.tensor
        out = Tensor._make(self.array, node is not None, node, self.output_nr)  # an output
        out._version_ref = self.version_ref
        if forward_ad.LEVELS:  # forward over reverse: the output's tangent too
            forward_ad.restore_tangent(self, out)
        return out

    def keep_tangent(self, level, tangent: Tensor) -> None:
        """Keep a saved output's tangent at ``level`` (the rebuilt output gets it back while
        the level is in use)."""
        if getattr(self, "tangent_kept", None) is None:
            self.tangent_kept = {}
        self.tangent_kept[level] = tangent

    def _unpack_hooked(self, node: Node) -> Tensor:
        value = self.unpack_hook(self.packed)
        if events.listening:
            target = node.uid if node is not None else ""
            events.publish(events.HookFired(hook="unpack", target=target, replaced=True))
        if not isinstance(value, Tensor):
            raise TypeError(
                f"Output of saved tensor unpack_hook expected to be a Tensor but got "
                f"result of type {type(value).__name__}"
            )
        return value

    def _modified_message(self, node: Node, what: str | int) -> str:
        if isinstance(what, int):  # the label is built only when it is needed
            what = f"input {what} ({node.op.input_names[what]})"
        hint = _anomaly_hint(node) if _anomaly_enabled() else _version_hint(node)
        return (
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [{what} of {node.name()}] is at version "
            f"{self.version_ref[0]}; expected version {self.version} instead. Hint: {hint}"
        )


def _version_hint(node: Node) -> str:
    """What the version error says outside anomaly mode: what happened, how to find where."""
    name = node.name()
    return (
        f"{name} saved this tensor in the forward pass to compute its gradient, and an "
        "in-place operation has changed it since (each one adds 1 to the tensor's version). "
        f"To see the line of your forward pass that created {name}, turn on anomaly "
        "detection with wb.autograd.set_detect_anomaly(True), or run the forward pass and "
        "backward() inside `with wb.autograd.detect_anomaly():`."
    )


def _anomaly_hint(node: Node) -> str:
    """In anomaly mode: where its warning shows the forward call (ending, as PyTorch's
    does, with "Good luck!")."""
    name = node.name()
    if getattr(node, "_forward_stack", None) is None:
        return (
            f'{name} was created while anomaly detection was off, so its warning, "Error '
            f'detected in {name}", has no traceback of the forward call: run the forward pass '
            f"inside wb.autograd.detect_anomaly() too. The variable in question was changed "
            f"after {name} saved it. Good luck!"
        )
    return (
        f'anomaly detection\'s warning, "Error detected in {name}", shows the traceback of '
        f"the forward call that created {name}, the operation that failed to compute its "
        "gradient. The variable in question was changed in there or anywhere later. Good luck!"
    )


class _Freed:
    """Stands in for a saved tensor after the graph was freed."""

    __slots__ = ()

    def unpack(self, node, what):
        raise RuntimeError(FREED_MESSAGE)


FREED = _Freed()


class saved_tensors_hooks:
    """Intercept what the graph saves for backward, as ``torch.autograd.graph.saved_tensors_hooks``.

    Inside the ``with`` block, every tensor an op saves for its gradient rule is handed
    to ``pack_hook(tensor)``, and the graph keeps whatever it returns instead of the
    tensor. When backward needs the tensor, ``unpack_hook(packed)`` must give back a
    Tensor with the original's value. This is how saved activations can be moved to
    another device, compressed, or dropped and recomputed (checkpointing)::

        def pack(x):
            return x.detach().numpy().copy()  # keep a plain copy instead of the tensor

        def unpack(array):
            return wb.tensor(array)

        with wb.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = (x * x).sum()
        y.backward()                         # mul's rule sees the unpacked copies

    Hooks nest: the innermost pair is used. They apply when the tensor is saved
    (in the forward), not when backward runs.
    """

    def __init__(self, pack_hook: Callable, unpack_hook: Callable) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        state.push_saved_hooks((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc) -> None:
        state.pop_saved_hooks()


def _anomaly_enabled() -> bool:
    from . import anomaly

    return anomaly.is_anomaly_enabled()


# ---------------------------------------------------------------------- op nodes
NOT_SAVED = object()  # an input slot whose tensor the op did not need to keep
NO_EDGE = (None, 0)  # the edge of a Python-number input: no gradient goes anywhere
NO_ATTRS = MappingProxyType({})  # the attrs of a call that has none (read-only, shared)


class TensorMeta:
    """Shape and dtype of input ``i`` of ``node``, which the op did not save (enough for
    collapse_sum_like); using it as a tensor says what to add to ``saves=``."""

    __slots__ = ("shape", "dtype", "op", "slot")

    def __init__(self, node: OpNode, i: int) -> None:
        (self.shape, self.dtype), self.op = node.input_meta[i], node.op.name
        self.slot = node.op.input_names[i]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:  # events and pictures show it: no memory address
        return f"TensorMeta(shape={tuple(self.shape)}, dtype={self.dtype})"

    def __getattr__(self, name):
        raise self.not_saved()

    def __array__(self, *args, **kwargs):  # used as an operand (grad * x): the same error
        raise self.not_saved()

    def not_saved(self) -> RuntimeError:
        return RuntimeError(not_saved_message(self.op, f"input {self.slot}", "it"))


def not_saved_message(op: str, what: str, name: str) -> str:
    return (
        f"the gradient rule of '{op}' used {what}, which the op does not save for backward: "
        f"add {name} to saves= in register_op('{op}')"
    )


class OpNode(Node):
    """The backward node of one registered op call (``MulBackward0``, ``SumBackward0``...)."""

    __slots__ = (
        "op",
        "inputs",
        "attrs",
        "needs_input_grad",
        "input_meta",
        "saved_out",
        "_output_ref",
    )

    def __init__(
        self, op, inputs: tuple, attrs: Mapping | None, output: Tensor, on_tape: tuple = ()
    ) -> None:
        """Record one call of ``op``: one edge per input, and what its rule needs saved.

        ``inputs`` are Tensors and Python numbers; ``output`` is the call's result,
        which becomes non-leaf with this node as its ``grad_fn``. ``on_tape``, under
        vmap (``func/batching.py``): a flag per input, False for an input on the tape of
        the levels outside the vmap, which gets no edge here (it is saved all the same).
        """
        self._seq = seq = next(node_sequence)  # first: it precedes the nodes of new leaves
        self._order = -seq
        self.op = op
        self.attrs = NO_ATTRS if attrs is None else attrs
        needs, edges, metas, slots = [], [], [], []  # one entry per input
        for x in inputs:
            if isinstance(x, Tensor):
                needs.append(x._requires_grad)
                edges.append(edge_of(x))
                metas.append((x._data.shape, x._data.dtype))
                slots.append(NOT_SAVED)
            else:  # a Python number: kept in its slot, no edge
                needs.append(False)
                edges.append(NO_EDGE)
                metas.append(None)
                slots.append(x)
        if on_tape:
            needs = [need and keep for need, keep in zip(needs, on_tape)]
            edges = [edge if keep else NO_EDGE for edge, keep in zip(edges, on_tape)]
        self.needs_input_grad = needs = tuple(needs)
        self.next_functions = tuple(edges)
        self.input_meta = tuple(metas)
        save_inputs, save_out = op.save_plans[needs]
        for i in save_inputs:
            if slots[i] is NOT_SAVED:
                slots[i] = SavedTensor(inputs[i], False)
        self.inputs = tuple(slots)
        self._output_ref = weakref.ref(output)
        set_history(output, self)
        self.saved_out = SavedTensor(output, True) if save_out else None
        if state.in_use.scopes and state.name_scopes.stack:  # for pictures: its module path
            self.metadata["scope"] = state.name_scopes.stack
        if state.anomaly.enabled:  # for error messages: the Python stack that recorded it
            self._forward_stack = forward_stack()
        if seq >= collector.freeze_at:  # a growing graph, out of the collector's sight
            collector.freeze_recorded_graph(seq)

    def name(self) -> str:
        names = self.op.names  # PyTorch's name when it depends on the call (sum over a dim)
        return self.op.node_name if names is None else names(self)

    @property
    def formula(self) -> str:
        return self.op.formula

    @property
    def saved_tensors(self) -> dict:
        """The saved values by slot name, as tensors (raises once the graph was freed)."""
        saved = {}
        for i, slot in enumerate(self.inputs):
            if isinstance(slot, (SavedTensor, _Freed)):
                saved[self.op.input_names[i]] = slot.unpack(self, f"input {i}")
        if self.saved_out is not None:
            saved["out"] = self.saved_out.unpack(self, "output 0")
        return saved

    def input_shape(self, i: int) -> tuple | None:
        meta = self.input_meta[i]
        return None if meta is None else meta[0]

    # What a gradient rule reads from ``orig``, the node of the original call (Relay's
    # ``orig``): ``orig.args``, ``orig.out``, ``orig.attrs`` and ``orig.needs_input_grad``.
    @property
    def args(self) -> tuple:
        """The inputs: saved tensors (unpacked on each read), Python numbers, and a
        :class:`TensorMeta` (shape and dtype) for an input the op did not save."""
        args = []
        for i, slot in enumerate(self.inputs):
            if slot is NOT_SAVED:
                slot = TensorMeta(self, i)
            elif isinstance(slot, (SavedTensor, _Freed)):
                slot = slot.unpack(self, i)  # checks the version; raises once freed
            args.append(slot)
        return tuple(args)

    @property
    def out(self) -> Tensor:
        """The forward output, when the op saves it (``saves=("out",)``)."""
        if self.saved_out is None:
            raise RuntimeError(not_saved_message(self.op.name, "the output", "'out'"))
        return self.saved_out.unpack(self, "output 0")

    def apply(self, grad_outputs: list) -> list:
        rule = self.op.gradient
        if rule is None:
            raise RuntimeError(f"op '{self.op.name}' has no gradient rule registered")
        return rule(self, grad_outputs[0])  # the node is the rule's ``orig``

    def release(self) -> None:
        """Free what the node saved (a backward without ``retain_graph``): each saved
        tensor lets go of its array as its slot drops it, and dies."""
        if events.listening:
            self._publish_release()
        if SavedTensor in map(type, self.inputs):  # (a quick scan: most nodes save little)
            self.inputs = tuple([FREED if type(s) is SavedTensor else s for s in self.inputs])
        self.saved_out = None if self.saved_out is None else FREED

    def _publish_release(self) -> None:
        """One SavedTensorFreed per saved slot, each let go of first (the bytes it freed)."""
        released = [
            (self.op.input_names[i], slot, slot.drop())
            for i, slot in enumerate(self.inputs)
            if type(slot) is SavedTensor
        ]
        if type(self.saved_out) is SavedTensor:
            released.append(("out", self.saved_out, self.saved_out.drop()))
        saved_memory_release(self, released)

    def was_freed(self) -> bool:
        return self.saved_out is FREED or any(slot is FREED for slot in self.inputs)

    def output(self) -> Tensor | None:
        return None if self._output_ref is None else self._output_ref()


# -------------------------------------------------------------- saved memory
def saved_memory_packed(node: Node | None, nbytes: int, slot: str = "*", tensor=None) -> None:
    """Tell listeners that ``node`` (None: a checkpoint) made the total grow by ``nbytes``."""
    if events.listening:
        events.publish(
            events.SavedTensorPacked(
                node="" if node is None else node.uid,
                slot=slot,
                tensor=None if tensor is None else tensor.uid,
                nbytes=nbytes,
                total_bytes=memory.running_total(),
            )
        )


def saved_memory_release(node: Node | None, released: list) -> None:
    """Publish one SavedTensorFreed per ``(slot, SavedTensor or None, bytes freed)``.

    The bytes were already let go (:meth:`SavedTensor.drop`); ``node`` None means the
    graph was dropped without backward, or a checkpoint handle died.
    """
    if not events.listening:
        return
    total = memory.running_total() + sum(freed for _, _, freed in released)
    for slot, saved, freed in released:
        total -= freed
        events.publish(
            events.SavedTensorFreed(
                node="" if node is None else node.uid,
                slot=slot,
                nbytes=freed,
                total_bytes=total,
                tensor=_saved_tensor_id(node, slot, saved),
            )
        )


def _saved_tensor_id(node: Node | None, slot: str, saved: SavedTensor | None) -> str | None:
    if saved is not None and saved.tensor is not None:
        return saved.tensor.uid
    if slot == "out" and isinstance(node, OpNode) and node.output() is not None:
        return node.output().uid
    return None


def forward_stack() -> str:
    return "".join(traceback.format_stack()[:-3])


# -------------------------------------------------------------------- walks
def walk(roots, stop: Callable | None = None) -> list:
    """Every node reachable from ``roots`` along ``next_functions``, each once, breadth
    first from the roots. A node for which ``stop(node)`` is true is left out, and so is
    what lies only beyond it. Works on PyTorch's graphs too: only ``next_functions`` is
    read."""
    order = [r for r in dict.fromkeys(roots) if r is not None and not (stop and stop(r))]
    seen = set(order)
    for node in order:  # (the list grows while it is read: a queue)
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                if not (stop and stop(child)):
                    order.append(child)
    return order


def count_dependencies(roots) -> dict:
    """How many edges lead into each node below ``roots`` (a root no edge reaches: none)."""
    dependencies, roots = {}, dict.fromkeys(roots)
    stack = list(roots)
    while stack:
        for child, _ in stack.pop().next_functions:
            if child in dependencies:
                dependencies[child] += 1
            elif child is not None:  # the first edge into it: walk below it once
                dependencies[child] = 1
                if child not in roots:  # (a root is on the stack already)
                    stack.append(child)
    return dependencies


def backward_order(roots) -> list:
    """The order in which ``backward()`` runs the nodes below ``roots``, without running
    anything: a node is ready once every edge into it has delivered, and the ready node
    with the smallest ``_order`` runs first (see ``LEAVES_FIRST`` and ``Node.__lt__``)."""
    dependencies = count_dependencies(roots)
    ready = ready_roots(roots, dependencies)
    order = []
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for child, _ in node.next_functions:
            if child is not None:
                dependencies[child] -= 1
                if dependencies[child] == 0:
                    heapq.heappush(ready, child)
    return order


def ready_roots(roots: list, dependencies: dict, needed: set | None = None) -> list:
    """The ready queue (a heap of nodes) as a pass starts, as PyTorch fills it: one node above
    the roots (its GraphRoot) sends to each root in the order given, so a root that no other
    edge leads into is pushed at its last mention (with ``inputs=``, only if ``needed``)."""
    last = {node: i for i, node in enumerate(roots)}
    ready = []
    for i, node in enumerate(roots):
        if last[node] == i and node not in dependencies and (needed is None or node in needed):
            heapq.heappush(ready, node)  # one by one: the order of pushes places tied leaves
    return ready
