"""The backward engine: the loop of ``reference.py``, with what a real tool needs woven in.

Read :mod:`workbench.autograd.reference` first. :meth:`GraphTask.loop` is the same
loop: count the edges into every node, run the ready node with the smallest
``_order`` (a leaf's AccumulateGrad as soon as it is ready, otherwise the node
recorded last; PyTorch's order, ties included), call its rule, send each gradient
along its edge. ``backward()`` and ``grad()`` run it to the end
(:meth:`GraphTask.run`); the stepper widget pulls one :class:`Step` at a time from
the same loop (:meth:`GraphTask.steps`). Each extra costs only the nodes and passes
that use it:

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
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..core import backend, events, state
from ..core.tensor import Tensor
from ..record import collector, forward_ad, recompute
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
        if self.create_graph or forward_ad.LEVEL is not None or state.in_use.vmaps:
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


def publish_accumulated(tensor: Tensor, before, grad: Tensor) -> None:
    events.publish(
        events.GradAccumulated(
            tensor=tensor.uid, before=before, contribution=grad._data, after=tensor._grad._data
        )
    )


def publish_started(task: GraphTask) -> None:
    events.publish(
        events.BackwardStarted(
            roots=tuple(r.uid for r in task.roots),
            root_nodes=tuple(n.uid for n in task.root_nodes),
            grad_outputs=tuple(task.buffers[n][0]._data for n in task.root_nodes),
            create_graph=task.create_graph,
            retain_graph=task.retain_graph,
            inputs=None if task.inputs is None else tuple(t.uid for t in task.inputs),
        )
    )


def publish_finished(task: GraphTask) -> None:
    roots = tuple(r.uid for r in task.roots)
    events.publish(events.BackwardFinished(steps=task.steps_run, roots=roots))


def publish_step(step: Step) -> None:
    sent_ids = tuple([None if g is None else g.uid for g in step.grads_out])
    events.publish(
        node_step(step.index, step.node, _arrays(step.grads_in), _arrays(step.grads_out), sent_ids)
    )


def node_step(index: int, node: Node, grads_in: tuple, grads_out: tuple, sent_ids: tuple):
    """The event of ``node`` run as step ``index``: the gradient arrays it received and sent,
    and the ids of the tensors it sent (also what a learner's recorded loop publishes)."""
    return events.NodeStep(
        index=index,
        node=node.uid,
        name=node.name(),
        op=node.op.name if isinstance(node, OpNode) else None,
        formula=node.formula,
        grads_in=grads_in,
        grads_out=grads_out,
        next_nodes=tuple([None if c is None else c.uid for c, _ in node.next_functions]),
        leaf=node.variable.uid if isinstance(node, AccumulateGrad) else None,
        grads_out_ids=sent_ids,
    )


def _arrays(grads: tuple) -> tuple:
    """The arrays of ``grads`` (None where there is no gradient)."""
    return tuple([None if g is None else g._data for g in grads])


# ------------------------------------------------------------- public API
def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of ``tensors`` into the leaves' ``.grad``, as
    ``torch.autograd.backward`` (``inputs``: only into theirs)."""
    make_backward_task(tensors, grad_tensors, retain_graph, create_graph, inputs).run()


def make_backward_task(
    tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None
) -> GraphTask:
    """The GraphTask of a ``backward()`` call, not yet run (the stepper steps through it)."""
    if state.stage.record is not None:
        recompute.close_forgotten_stage()
    roots = [tensors] if isinstance(tensors, Tensor) else _outputs(tensors, "backward")
    grads = root_gradients(roots, grad_tensors, "backward")
    if create_graph:
        _warn_create_graph()
    retain_graph = create_graph if retain_graph is None else retain_graph
    task = GraphTask(roots, grads, retain_graph, create_graph)
    return task if inputs is None else task.aim_at(_backward_inputs(inputs), accumulate=True)


def _tensor_list(value) -> list:
    if isinstance(value, Tensor):
        return [value]
    return [] if value is None else list(value)


def _outputs(value, op: str) -> list:
    """The tensors to differentiate, checked (PyTorch asserts they are Tensors; the
    workbench says which one is not, as a TypeError)."""
    outputs = _tensor_list(value)
    for i, t in enumerate(outputs):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{op}(): the outputs to differentiate must be Tensors, but output {i} is "
                f"{type(t).__name__} ({t!r})"
            )
    return outputs


def _inputs(value, op: str) -> list:
    """The tensors to differentiate with respect to: Tensors that require grad."""
    inputs = _tensor_list(value)
    if not inputs:
        raise RuntimeError(f"`inputs` argument to `{op}()` cannot be empty.")
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise RuntimeError(
                f"{op}(): all inputs have to be Tensors, but got {type(t).__name__} "
                f"(inputs[{i}] = {t!r})"
            )
        if not t._requires_grad:
            why = (
                "can't retain_grad on Tensor that has requires_grad=False"
                if op == "backward"
                else "One of the differentiated Tensors does not require grad"
            )
            raise RuntimeError(f"{op}(): inputs[{i}] does not require grad: {why}")
    return inputs


def _warn_create_graph() -> None:
    warnings.warn(
        "Using backward() with create_graph=True will create a reference cycle between "
        "the parameter and its gradient which can cause a memory leak. We recommend using "
        "autograd.grad when creating the graph to avoid this.",
        UserWarning,
        stacklevel=4,
    )


def _backward_inputs(inputs) -> list:
    inputs = _inputs(inputs, "backward")
    for t in inputs:
        if t._grad_fn is not None:
            t.retain_grad()  # as PyTorch: a non-leaf input keeps its .grad from now on
    return inputs


def root_gradients(roots: list, given, op: str) -> list:
    """The gradient each root starts with: the one given, or ones for a real scalar root."""
    given = [None] * len(roots) if given is None else _tensor_list(given)
    if len(given) != len(roots):
        raise RuntimeError(f"{op}: got {len(roots)} tensors and {len(given)} gradients")
    for i, (root, grad) in enumerate(zip(roots, given)):
        if grad is None and root._data.size == 1 and root._data.dtype.kind != "c":
            grad = given[i] = Tensor._make(np.ones_like(root._data))  # ȳ = 1
        if not root._requires_grad or not isinstance(grad, Tensor) or grad.shape != root.shape:
            raise _bad_gradient(i, root, grad)
        if (grad._data.dtype.kind == "c") != (root._data.dtype.kind == "c"):
            raise _bad_gradient(i, root, grad)
    return given


def _bad_gradient(i: int, root: Tensor, grad) -> Exception:
    """PyTorch's error for root ``i``: it needs no gradient, or ``grad`` does not fit it."""
    if not root._requires_grad:
        return RuntimeError(
            f"element {i} of tensors does not require grad and does not have a grad_fn"
        )
    if grad is None:
        what = "real scalar" if root._data.size == 1 else "scalar"
        return RuntimeError(f"grad can be implicitly created only for {what} outputs")
    if not isinstance(grad, Tensor):
        return TypeError(f"gradients can be either Tensors or None, but got {type(grad).__name__}")
    if grad.shape != root.shape:
        return RuntimeError(
            f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(grad.shape)} and "
            f"output[{i}] has a shape of {tuple(root.shape)}."
        )
    return RuntimeError(
        "For complex Tensors, both grad_output and output are required to have the same "
        f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {grad.dtype} and "
        f"output[{i}] has a dtype of {root.dtype}."
    )


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """The gradients of ``outputs`` w.r.t. ``inputs``, returned rather than accumulated."""
    if state.stage.record is not None:
        recompute.close_forgotten_stage()
    outputs = _outputs(outputs, "grad")
    inputs_list = _inputs(inputs, "grad")
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    if isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    if is_grads_batched:
        return _batched_grad(
            outputs, inputs_list, grad_outputs, retain_graph, create_graph, allow_unused
        )
    grads = root_gradients(outputs, grad_outputs, "grad")
    retain_graph = create_graph if retain_graph is None else retain_graph
    task = GraphTask(outputs, grads, retain_graph, create_graph)
    task.aim_at(inputs_list, accumulate=False).run()
    result = []
    for i, (t, g) in enumerate(zip(inputs_list, task.captured)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior."
                )
            if materialize_grads:
                g = Tensor._make(np.zeros_like(t._data))
        elif not create_graph and g._requires_grad:
            g = g.detach()
        result.append(g)
    return tuple(result)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused):
    """``is_grads_batched=True``: the first dimension of each grad_output is a batch of vectors."""
    batch = grad_outputs[0].shape[0]
    rows = []
    for b in range(batch):
        rows.append(
            grad(
                outputs,
                inputs,
                [g[b] for g in grad_outputs],
                retain_graph=True if retain_graph is None else retain_graph,
                create_graph=create_graph,
                allow_unused=allow_unused,
            )
        )
    return tuple(_stack_rows([row[i] for row in rows]) for i in range(len(inputs)))


def _stack_rows(rows: list) -> Tensor | None:
    """Stack one gradient per batch row along a new first dim (differentiably).

    Each row is scattered into its own slot of a zero tensor and the slots are added,
    so the result stays on the graph when ``create_graph`` is on.
    """
    from ..ops.shape import getitem_backward

    if all(r is None for r in rows):
        return None
    like = next(r for r in rows if r is not None)
    shape = (len(rows),) + tuple(like.shape)
    out = None
    for b, row in enumerate(rows):
        if row is not None:
            slot = getitem_backward(row, shape, b)
            out = slot if out is None else out + slot
    return out
