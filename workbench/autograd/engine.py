"""The backward engine: the loop of ``reference.py``, with what a real tool needs woven in.

Read :mod:`workbench.autograd.reference` first. :meth:`GraphTask.loop` is the same
loop: count the edges into every node, run the ready node with the smallest
``_order`` (a leaf's AccumulateGrad as soon as it is ready, otherwise the node
recorded last; PyTorch's order, ties included), call its rule, send each gradient
along its edge. ``backward()`` and ``grad()`` run it to the end
(:meth:`GraphTask.run`); the stepper widget pulls one :class:`Step` at a time from
the same loop (:meth:`GraphTask.steps`). Their arguments are checked as PyTorch checks
them in :mod:`.entry_points`; the events a pass publishes are built in
:mod:`.pass_events`. Each extra costs only the nodes and passes that use it:

- hooks and ``retain_grad``, in PyTorch's order (:mod:`.hooks`), only at a node whose
  ``_hooked`` flag is set: adding any hook sets it;
- ``grad()`` and ``backward(inputs=...)``: only the nodes on a path to an input run
  (``needed``; as in PyTorch, no other node joins the ready queue), and the gradient
  that reaches each input is kept (``captured``);
- ``create_graph``: rules run in grad mode, so they record a graph, and gradients that
  meet are summed by the ``add`` op instead of by numpy;
- ``retain_graph``: each node keeps what it saved instead of freeing it;
- events for the widgets are built only while someone listens; anomaly mode's
  checks run only in anomaly mode; a graph of ``collector.BIG_GRAPH`` nodes or more
  is kept from Python's cyclic garbage collector.

Every gradient a rule returns is checked against the input it is for (count, shape,
dtype), with PyTorch's errors. A node's first gradient into ``.grad`` is stored as it
is, without a copy, unless another ``.grad`` or the caller holds its array
(:meth:`GraphTask.add_to_grad`).
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..core import backend, events, state
from ..core.tensor import Tensor
from ..record import collector, forward_ad
from ..record.graph import (
    AccumulateGrad,
    Node,
    OpNode,
    backward_order,
    count_dependencies,
    edge_of,
    ready_roots,
)
from . import hooks
from .pass_events import publish_accumulated, publish_finished, publish_started, publish_step

_accumulate_lock = threading.Lock()


@dataclass
class Step:
    """One node run by the engine, as a widget or a test sees it."""

    index: int
    node: Node
    grads_in: tuple  # the gradients that arrived, one per output of the node
    grads_out: tuple  # the gradients sent on, one per input edge (None where none)
    accumulated: Tensor | None = None  # the leaf whose .grad was updated


class GraphTask:
    """One call of ``backward()`` or ``grad()``: the gradients in flight, and the loop."""

    # What a plain backward() does; aim_at() and steps() change them for their pass.
    accumulate = True  # into .grad (grad() keeps the gradients in ``captured`` instead)
    stepping = False  # the loop yields each node's Step (steps())
    inputs = needed = targets = None  # grad() and backward(inputs=...): see aim_at
    steps_run = 0

    def __init__(self, roots: list, grads: list, retain_graph=False, create_graph=False):
        self.roots, self.retain_graph, self.create_graph = roots, retain_graph, bool(create_graph)
        self.buffers: dict[Node, list] = {}  # node -> the gradients that reached it so far
        # the memory of the caller's gradients, then of each .grad: never shared (add_to_grad)
        self.owned = {id(g._data if g._data.base is None else g._data.base) for g in grads}
        self.root_nodes = []
        for root, grad in zip(roots, grads):
            node, nr = edge_of(root)
            self.root_nodes.append(node)
            self.receive(node, nr, grad)
        self.dependencies = count_dependencies(self.root_nodes)
        self.big = len(self.dependencies) >= collector.BIG_GRAPH

    def aim_at(self, inputs: list, accumulate: bool) -> GraphTask:
        """``grad()`` and ``backward(inputs=...)``: only the nodes on a path to an input
        run (``needed``), and the gradient that reaches each input is kept (``captured``)."""
        self.inputs, self.captured, self.accumulate = inputs, [None] * len(inputs), accumulate
        self.targets = {}  # (node, output_nr) -> the indices of the inputs it is
        for i, t in enumerate(inputs):
            if t._grad_fn is not None:
                edge = edge_of(t)
            else:
                edge = (t._grad_acc and t._grad_acc(), 0)  # a leaf's node (None: unused)
            if edge[0] is not None:
                self.targets.setdefault(edge, []).append(i)
        wanted = {node for node, _ in self.targets}
        self.needed = set()
        for node in reversed(backward_order(self.root_nodes)):  # inputs before their users
            if node in wanted or any(child in self.needed for child, _ in node.next_functions):
                self.needed.add(node)
        return self

    # ---------------------------------------------------------------- the loop
    def run(self) -> None:
        """The whole pass at once (``backward()``, ``grad()``)."""
        for _ in self.loop():
            pass

    def steps(self) -> Iterator[Step]:
        """The pass one node at a time (the stepper): each node's Step, with the caller's
        grad mode back in force until the next is pulled (the learner's code runs there)."""
        self.stepping = True
        for step in self.loop():
            self.leave()
            try:
                yield step
            finally:
                self.enter()

    def loop(self) -> Iterator[Step]:
        """The reference's loop, from the roots no edge leads into: run the ready node with the
        smallest ``_order`` until none is ready. Yields each node's Step while ``stepping``."""
        self.watched = self.stepping or events.listening  # Steps are made for them
        self.extras = self.watched or self.needed is not None or state.anomaly.enabled
        if events.listening:
            publish_started(self)
        ready = ready_roots(self.root_nodes, self.dependencies, self.needed)  # a heap of nodes
        self.enter()
        try:
            while ready:
                node = heapq.heappop(ready)
                step = self.run_node(node, self.buffers.pop(node, None), ready)
                if step is not None and self.stepping:
                    yield step
        finally:
            self.leave()
        if events.listening:
            publish_finished(self)

    def enter(self) -> None:
        """While nodes run: grad mode is ``create_graph``, the thread is inside backward,
        and a big graph is kept from the cyclic garbage collector (collector.py)."""
        self.outside = state.enter_backward(self.create_graph, self.needed is None)
        if self.big:
            collector.pause()

    def leave(self) -> None:
        if self.big:
            collector.resume()
        state.exit_backward(self.outside)

    def run_node(self, node: Node, grads: list | None, ready: list) -> Step | None:
        """Run one ready node and send each gradient it computes along its edge into the
        next node's buffer, checked against the input it is for; a node whose every edge
        has delivered joins ``ready``. The extras (hooks, ``grad()``, anomaly mode, steps)
        cost only where ``node._hooked`` or the pass's ``extras`` says they are used."""
        plain = not (node._hooked or self.extras)  # no hook at this node, no extra in the pass
        if grads is None:
            grads_out = None  # nothing reached it: it sends nothing
        elif plain and type(node) is OpNode:
            grads_out = node.apply(grads)  # the rule: one gradient per input edge
            if not self.retain_graph:
                node.release()  # what the forward pass saved for the rule
        elif plain and type(node) is AccumulateGrad:
            grads_out = None  # a leaf sends nothing on
            if self.accumulate:
                self.add_to_grad(node.variable, grads[0])
        else:  # hooks, grad(), anomaly mode, steps, and custom Functions (which may change modes)
            grads, grads_out = self.run_with_extras(node, grads)
        if grads_out and len(grads_out) != len(node.next_functions):
            raise wrong_count(node, len(grads_out))
        sent = [None] * len(node.next_functions) if self.watched else None  # for the node's Step
        for i, (child, nr) in enumerate(node.next_functions):
            if child is None:
                continue
            grad = grads_out[i] if grads_out else None
            if grad is not None:
                shape, dtype = node.input_meta[i]
                data = grad._data if type(grad) is Tensor else None
                if data is None or data.shape != shape or data.dtype != dtype:
                    grad = checked_output(node, i, grad)  # cast, or raise
                if sent is not None:
                    sent[i] = grad
                self.receive(child, nr, grad)
            self.dependencies[child] -= 1
            if self.dependencies[child] == 0 and (self.needed is None or child in self.needed):
                heapq.heappush(ready, child)  # every edge into it has delivered, and it runs
        return self.step(node, grads, sent) if sent is not None and grads is not None else None

    def run_with_extras(self, node: Node, grads: list) -> tuple:
        """A node in PyTorch's order: tensor hooks and ``retain_grad``, the gradients
        ``grad()`` asks for, pre-hooks, the rule (a leaf: into ``.grad``), post-hooks.
        Returns the gradients as the hooks left them, and one gradient per edge (or ())."""
        if node._hooked:
            grads = self.tensor_hooks(node, grads)
        if self.targets:
            self.capture(node, grads)
        if node._pre_hooks:
            grads = hooks.call_pre_hooks(node, grads)
        grads_out = ()
        if type(node) is AccumulateGrad:
            if self.accumulate and grads[0] is not None:  # (grad() only captures)
                self.add_to_grad(node.variable, grads[0])
        elif self.needed is None or self.leads_to_a_target(node):
            try:
                grads_out = node.apply(grads)
            except Exception:
                _note_forward_stack(node)  # anomaly mode: where the failing op was recorded
                raise
            if state.anomaly.enabled:
                _check_nan(node, grads_out)
            if not self.retain_graph:
                node.release()
        if node._post_hooks:
            grads_out = hooks.call_post_hooks(node, grads_out, grads)
        if state.grad_mode.enabled != self.create_graph:  # a hook or a Function changed it
            state.set_grad_enabled_flag(self.create_graph)
        return grads, grads_out

    def receive(self, node: Node, nr: int, grad: Tensor) -> None:
        """Add ``grad`` into the buffer of ``node``'s output ``nr``, where the gradients
        that reach it wait until it runs (summed where several edges meet)."""
        slots = self.buffers.get(node)
        if slots is None:
            slots = self.buffers[node] = [None] * node.num_outputs
        slots[nr] = grad if slots[nr] is None else self.sum(slots[nr], grad)

    def sum(self, a: Tensor, b: Tensor) -> Tensor:
        """Two gradients that meet: the add op when the sum must be on the recorded graph
        (``create_graph``), carry tangents (a dual level) or a batch (vmap), numpy's add
        otherwise."""
        if self.create_graph or forward_ad.LEVELS or state.in_use.vmaps:
            return a + b
        total = backend.quiet.run(np.add, a._data, b._data)
        return Tensor._make(np.asarray(total) if isinstance(total, np.generic) else total)

    def step(self, node: Node, grads: list, sent: list) -> Step:
        """The Step of a node that ran, published after everything it sent (every event of
        the step comes before it)."""
        self.steps_run += 1
        ran_into_grad = type(node) is AccumulateGrad and self.accumulate and grads[0] is not None
        step = Step(self.steps_run - 1, node, tuple(grads), tuple(sent), None)
        step.accumulated = node.variable if ran_into_grad else None
        if events.listening:
            publish_step(step)
        return step

    # -------------------------------------------------- hooks, grad(), inputs=
    def tensor_hooks(self, node: Node, grads: list) -> list:
        """Tensor hooks (``register_hook``), then ``retain_grad``, for each output."""
        grads = list(grads)
        for nr, grad in enumerate(grads):
            if grad is None:
                continue
            for hook in list((node._tensor_hooks_for(nr) or {}).values()):
                grads[nr] = grad = hooks.run_tensor_hook(hook, grad, node)
            retained = node._retained and node._retained.get(nr)
            tensor = retained() if retained else None
            if tensor is not None and tensor._grad_fn is node:
                self.add_to_grad(tensor, grad)
                if events.listening:
                    events.publish(
                        events.HookFired(hook="retain_grad", target=tensor.uid, replaced=False)
                    )
        return grads

    def capture(self, node: Node, grads: list) -> None:
        """``grad()`` and ``backward(inputs=...)``: keep the gradients of the inputs."""
        for nr, g in enumerate(grads):
            for index in self.targets.get((node, nr), ()):
                self.captured[index] = g

    def leads_to_a_target(self, node: Node) -> bool:
        return any(child in self.needed for child, _ in node.next_functions)

    # ---------------------------------------------------------- accumulation
    def add_to_grad(self, tensor: Tensor, grad: Tensor) -> None:
        """``tensor.grad += grad`` (a leaf's, or a retained non-leaf's); with ``create_graph``
        a first gradient becomes ``.grad`` itself, its graph with it."""
        listening = events.listening and tensor._grad is not None
        before = tensor._grad._data.copy() if listening else None
        with _accumulate_lock:
            if tensor._grad is None:
                tensor._grad = grad if self.create_graph else self.first_grad(tensor, grad._data)
            else:
                self.add_onto(tensor, grad)
        if events.listening:
            publish_accumulated(tensor, before, grad)
        if tensor._post_acc_hooks:  # (only a leaf has them)
            hooks.call_post_accumulate_hooks(tensor)

    def first_grad(self, tensor: Tensor, array) -> Tensor:
        """A first gradient becomes ``.grad`` as it is, in the tensor's dtype, unless another
        ``.grad`` or the caller holds its memory: then a copy does."""
        if array.dtype != tensor._data.dtype:
            array = array.astype(tensor._data.dtype)
        elif id(array) in self.owned or (
            array.base is not None and not self.view_may_stay(array, tensor._data)
        ):
            array = array.copy()
        self.owned.add(id(array if array.base is None else array.base))
        return Tensor._make(array)

    def add_onto(self, tensor: Tensor, grad: Tensor) -> None:
        """A later gradient: added into ``.grad``'s own array where nothing else can see the
        change, else summed into a new ``.grad`` (recorded, where a graph must be)."""
        old = tensor._grad
        if self.create_graph or old._requires_grad or grad._requires_grad:
            tensor._grad = old + grad
        elif backend.is_writeable(old._data) and old.shape == grad.shape:
            backend.quiet.run(np.add, old._data, grad._data, out=old._data, casting="unsafe")
            old._bump_version()
        else:
            tensor._grad = self.sum(old, grad)

    def view_may_stay(self, array, data) -> bool:
        """Whether ``.grad`` may keep a view (nn.Linear's W̄, out of two transposes) rather
        than a copy: its memory is held by no other ``.grad`` nor the caller, and it is
        writeable, all of that memory, and laid out as ``data``."""
        base = array.base
        return (
            id(base) not in self.owned
            and backend.is_writeable(array)
            and getattr(base, "nbytes", None) == array.nbytes
            and array.strides == data.strides
        )


# ------------------------------------------------------ checks of gradients
def wrong_count(node: Node, got: int) -> RuntimeError:
    return RuntimeError(
        f"Function {node.name()} returned an incorrect number of gradients "
        f"(expected {len(node.next_functions)}, got {got})"
    )


def checked_output(node: Node, i: int, grad) -> Tensor | None:
    """Gradient ``i`` of ``node`` as the engine passes it on: a Tensor of the input's
    shape (or an error) and dtype (cast)."""
    if not isinstance(grad, Tensor):
        raise RuntimeError(
            f"Function {node.name()} returned a {type(grad).__name__} as gradient {i}: "
            f"expected Variable or None (a Tensor or None; wrap arrays with wb.tensor)"
        )
    shape, dtype = node.input_meta[i]
    if grad._data.shape != shape:
        grad = _fit_custom_grad(node, i, grad, shape)
    if grad._data.dtype != dtype and dtype is not None:
        grad = real_part_for(dtype, grad).to(dtype)
    return grad


def real_part_for(dtype, grad: Tensor) -> Tensor:
    """A real input of a complex op gets the real part of its gradient, as in PyTorch:
    x̄ = ∂L/∂x, which is Re(z̄) when x feeds z."""
    if grad._data.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        return grad.real
    return grad


def _fit_custom_grad(node: Node, index: int, grad: Tensor, shape: tuple) -> Tensor:
    """Custom Functions may return a broadcastable gradient (PyTorch sums it); rules may not."""
    from .. import ops

    if not isinstance(node, OpNode) and _expandable(shape, grad.shape):
        return ops.collapse_sum_like(grad, ops.TensorShape(shape))
    raise RuntimeError(
        f"Function {node.name()} returned an invalid gradient at index {index} - got "
        f"{list(grad.shape)} but expected shape compatible with {list(shape)}"
    )


def _expandable(shape: tuple, target: tuple) -> bool:
    if len(shape) > len(target):
        return False
    for a, b in zip(reversed(shape), reversed(target)):
        if a != b and a != 1:
            return False
    return True


def _check_nan(node: Node, grads_out: list) -> None:
    if state.anomaly_checks_nan():
        from ..record import anomaly

        anomaly.check_outputs(node, grads_out)


def _note_forward_stack(node: Node) -> None:
    if state.anomaly.enabled:
        from ..record import anomaly

        anomaly.warn_forward_stack(node)
