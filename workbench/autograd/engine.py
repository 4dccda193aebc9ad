"""The backward engine: the loop of ``reference.py``, with what a real tool needs woven in.

Read :mod:`workbench.autograd.reference` first. :meth:`GraphTask.steps` is the same
loop: count the edges into every node, run the ready node with the smallest
``_order`` (a leaf's AccumulateGrad as soon as it is ready, otherwise the node
recorded last), call its rule, send each gradient along its edge. ``backward()`` and
``grad()`` run it to the end; the stepper widget pulls one :class:`Step` at a time
from the same generator. Each extra costs only the nodes and passes that use it:

- hooks and ``retain_grad``, in PyTorch's order, only at a node whose ``_hooked``
  flag is set (adding any hook sets it);
- ``grad()`` and ``backward(inputs=...)``: only the nodes on a path to an input run
  (``needed``), and the gradients at the inputs are kept (``targets``);
- ``create_graph``: rules run in grad mode, so they record a graph, and gradients that
  meet are summed by the ``add`` op instead of by numpy;
- ``retain_graph``: each node keeps what it saved instead of freeing it;
- events for the widgets, built only while someone listens; anomaly mode's checks.

Every gradient a rule returns is checked against the input it is for (count, shape,
dtype), with PyTorch's errors.
"""

from __future__ import annotations

import contextlib
import heapq
import threading
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .. import backend, events, state
from ..tensor import Tensor
from . import collector, recompute
from .graph import AccumulateGrad, Node, OpNode, backward_order, count_dependencies, edge_of

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

    def __init__(
        self,
        roots: Sequence[Tensor],
        grad_roots: Sequence[Tensor],
        retain_graph: bool,
        create_graph: bool,
        inputs: Sequence[Tensor] | None = None,
        accumulate: bool = True,
    ) -> None:
        self.roots = list(roots)
        self.retain_graph = retain_graph
        self.create_graph = bool(create_graph)
        self.accumulate = accumulate  # False for grad(): the gradients are returned instead
        self.stepping = False  # True: steps() yields a Step after each node (the stepper)
        self.buffers: dict[Node, list] = {}  # node -> the gradients that reached it so far
        self.owned: dict[int, object] = {}  # arrays already stored in some .grad
        self.steps_run = 0
        self.root_nodes = []
        for root, grad in zip(self.roots, grad_roots):
            node, nr = edge_of(root)
            slots = self.buffers.setdefault(node, [None] * node.num_outputs)
            slots[nr] = grad if slots[nr] is None else self.sum(slots[nr], grad)
            self.root_nodes.append(node)
            self.owned[id(grad._data)] = grad._data
        self.dependencies = count_dependencies(self.root_nodes)
        self.inputs = None if inputs is None else list(inputs)
        self.needed: set | None = None  # with inputs: the nodes on a path to one
        self.targets: dict[tuple, list[int]] = {}  # (node, output_nr) -> input indices
        self.captured: list = []  # with inputs: the gradient that reached each
        if inputs is not None:
            self._set_targets(self.inputs)

    def _set_targets(self, inputs: list) -> None:
        """Only nodes on a path to an input run; gradients are captured at the inputs."""
        self.captured = [None] * len(inputs)
        for i, t in enumerate(inputs):
            if t._grad_fn is not None:
                edge = edge_of(t)
            elif t._grad_acc is not None and t._grad_acc() is not None:
                edge = (t._grad_acc(), 0)
            else:
                continue  # a leaf that no graph uses
            self.targets.setdefault(edge, []).append(i)
        wanted = {node for node, _ in self.targets}
        needed = set()
        for node in reversed(backward_order(self.root_nodes)):  # inputs before their users
            if node in wanted or any(child in needed for child, _ in node.next_functions):
                needed.add(node)
        self.needed = needed

    # ---------------------------------------------------------------- the loop
    def steps(self) -> Iterator[Step]:
        """The pass, one node at a time: the stepper pulls a :class:`Step` after each node.
        Between two steps the caller's grad mode is back in force (the learner's code
        runs there)."""
        self.stepping = True
        yield from self.loop()

    def run(self) -> None:
        """The whole pass at once (``backward()``, ``grad()``)."""
        for _ in self.loop():
            pass

    def loop(self) -> Iterator[Step]:
        """The reference's loop: run the ready node with the smallest ``_order`` until no
        node is ready. Yields each node's Step while ``stepping``."""
        ready = self.start()
        grad_mode = state.grad_mode
        with Running(self) as running:
            while ready:
                node = heapq.heappop(ready)[1]
                if grad_mode.enabled != self.create_graph:  # a hook or a rule changed it
                    state.set_grad_enabled_flag(self.create_graph)
                step = self.run_node(node, self.buffers.pop(node, None), ready)
                if step is not None and self.stepping:
                    with running.paused():
                        yield step
        self.finish()

    def run_node(self, node: Node, grads: list | None, ready: list) -> Step | None:
        """Run one ready node, in PyTorch's order: tensor hooks and ``retain_grad``, the
        gradients ``grad()`` asked for, pre-hooks, the rule (a leaf: into ``.grad``),
        post-hooks; then free what it saved and send what it computed. A node that no
        gradient reached, or that leads to no input asked for, runs nothing."""
        if grads is None or (self.needed is not None and node not in self.needed):
            self.send(node, (), ready)  # its edges still count down
            return None
        if node._hooked:
            grads = self.tensor_hooks(node, grads)
        if self.targets:
            self.capture(node, grads)
        if node._pre_hooks:
            grads = call_pre_hooks(node, grads)
        leaf = None
        if type(node) is AccumulateGrad:
            grads_out, leaf = (), self.accumulate_into_leaf(node, grads[0])
        elif self.needed is not None and not self.leads_to_a_target(node):
            grads_out = ()  # grad(): captured above, nothing beyond it is asked for
        else:
            try:
                grads_out = node.apply(grads)  # the rule: one gradient per input edge
            except Exception:
                _note_forward_stack(node)  # anomaly mode: where the failing op was recorded
                raise
            if state.anomaly.enabled:
                _check_nan(node, grads_out)
        if node._post_hooks:
            grads_out = call_post_hooks(node, grads_out, grads)
        if not self.retain_graph:
            node.release()
        sent = self.send(node, grads_out, ready)
        self.steps_run += 1
        if not (self.stepping or events.listening):
            return None
        step = Step(self.steps_run - 1, node, tuple(grads), tuple(sent), leaf)
        if events.listening:
            publish_step(step)  # after sending: every event of this step comes before it
        return step

    def send(self, node: Node, grads_out, ready: list) -> list:
        """Add each gradient into the buffer of the node its edge leads to (checked against
        the input it is for, summed where several edges meet); a node whose every edge
        has delivered joins ``ready``. Returns the gradients as sent, one per edge."""
        edges = node.next_functions
        if grads_out and len(grads_out) != len(edges):
            raise wrong_count(node, len(grads_out))
        sent = [None] * len(edges)
        buffers, dependencies = self.buffers, self.dependencies
        for i, (child, nr) in enumerate(edges):
            if child is None:
                continue
            grad = grads_out[i] if grads_out else None
            if grad is not None:
                shape, dtype = node.input_meta[i]
                if (
                    type(grad) is not Tensor
                    or grad._data.shape != shape
                    or grad._data.dtype != dtype
                ):
                    grad = checked_output(node, i, grad)  # cast, or raise
                sent[i] = grad
                slots = buffers.get(child)
                if slots is None:
                    slots = buffers[child] = [None] * child.num_outputs
                slots[nr] = grad if slots[nr] is None else self.sum(slots[nr], grad)
            dependencies[child] -= 1
            if dependencies[child] == 0:  # every edge into it has delivered
                heapq.heappush(ready, (child._order, child))
        return sent

    def sum(self, a: Tensor, b: Tensor) -> Tensor:
        """Two gradients that meet: the add op when the sum must be on the recorded graph
        (``create_graph``), numpy's add otherwise."""
        if self.create_graph:
            return a + b
        total = backend.quiet.run(np.add, a._data, b._data)
        return Tensor._make(np.asarray(total) if isinstance(total, np.generic) else total)

    def start(self) -> list:
        """Publish BackwardStarted; return the heap of the nodes ready to run."""
        if events.listening:
            events.publish(
                events.BackwardStarted(
                    roots=tuple(r.uid for r in self.roots),
                    root_nodes=tuple(n.uid for n in self.root_nodes),
                    grad_outputs=tuple(self.buffers[n][0]._data for n in self.root_nodes),
                    create_graph=self.create_graph,
                    retain_graph=self.retain_graph,
                    inputs=None if self.inputs is None else tuple(t.uid for t in self.inputs),
                )
            )
        roots = dict.fromkeys(self.root_nodes)
        ready = [(node._order, node) for node in roots if node not in self.dependencies]
        heapq.heapify(ready)
        return ready

    def finish(self) -> None:
        if events.listening:
            events.publish(
                events.BackwardFinished(
                    steps=self.steps_run, roots=tuple(r.uid for r in self.roots)
                )
            )

    # ------------------------------------------------- grad() and inputs=
    def capture(self, node: Node, grads: list) -> None:
        """``grad()`` and ``backward(inputs=...)``: keep the gradients of the inputs."""
        for nr, g in enumerate(grads):
            for index in self.targets.get((node, nr), ()):
                self.captured[index] = g

    def leads_to_a_target(self, node: Node) -> bool:
        return any(child in self.needed for child, _ in node.next_functions)

    # --------------------------------------------------------- hooks
    def tensor_hooks(self, node: Node, grads: list) -> list:
        """Tensor hooks (``register_hook``), then retain_grad, for each output of ``node``."""
        grads = list(grads)
        for nr, grad in enumerate(grads):
            if grad is None:
                continue
            for hook in list((node._tensor_hooks_for(nr) or {}).values()):
                grads[nr] = grad = _run_tensor_hook(hook, grad, node)
            retained = node._retained and node._retained.get(nr)
            tensor = retained() if retained else None
            if tensor is not None and tensor._grad_fn is node:
                self.store_grad(tensor, grad)
                if events.listening:
                    events.publish(
                        events.HookFired(hook="retain_grad", target=tensor.uid, replaced=False)
                    )
        return grads

    # ---------------------------------------------------------- accumulation
    def accumulate_into_leaf(self, node: AccumulateGrad, grad: Tensor | None) -> Tensor | None:
        """``leaf.grad += grad`` (backward(), and for backward(inputs=...) only the inputs
        asked for), then the leaf's post-accumulate hooks. Returns the leaf, if it did."""
        wanted = self.needed is None or (node, 0) in self.targets
        if not (self.accumulate and wanted and grad is not None):
            return None
        leaf = node.variable
        self.store_grad(leaf, grad)
        for hook in list((leaf._post_acc_hooks or {}).values()):
            if hook(leaf) is not None:
                raise RuntimeError("hooks should return None.")
            if events.listening:
                events.publish(
                    events.HookFired(hook="post_accumulate", target=leaf.uid, replaced=False)
                )
        return leaf

    def store_grad(self, tensor: Tensor, grad: Tensor) -> None:
        """Add ``grad`` into ``tensor.grad`` (a leaf, or a non-leaf that retains it): the
        first gradient is stored as it is unless another ``.grad`` holds its array."""
        with _accumulate_lock:
            old = tensor._grad
            before = None if old is None or not events.listening else old._data.copy()
            if old is None:
                new = grad if self.create_graph else self._owned_copy(grad)
                if new.dtype != tensor.dtype:
                    new = Tensor._make(new._data.astype(tensor.dtype))
                tensor._grad = new
            elif self.create_graph or old._requires_grad or grad._requires_grad:
                tensor._grad = old + grad
            elif backend.is_writeable(old._data) and old.shape == grad.shape:
                backend.quiet.run(np.add, old._data, grad._data, out=old._data, casting="unsafe")
                old._bump_version()
            else:
                tensor._grad = self.sum(old, grad)
        if events.listening:
            events.publish(
                events.GradAccumulated(
                    tensor=tensor.uid,
                    before=before,
                    contribution=grad._data,
                    after=tensor._grad._data,
                )
            )

    def _owned_copy(self, grad: Tensor) -> Tensor:
        """A gradient array that no other .grad shares, so in-place updates stay private."""
        array = grad._data
        if getattr(array, "base", None) is not None or id(array) in self.owned:
            array = array.copy()
        self.owned[id(array)] = array
        return Tensor._make(array)


class Running:
    """What holds while the nodes of a pass run, and is lifted between two steps: grad
    mode is ``create_graph`` (rules record only then), the thread counts as inside
    backward, and Python's cyclic garbage collector is paused (see collector.py)."""

    def __init__(self, task: GraphTask) -> None:
        self.create_graph = task.create_graph
        self.checkpoint_valid = task.needed is None  # see state.is_checkpoint_valid

    def __enter__(self) -> Running:
        self.saved = state.enter_backward(self.create_graph, self.checkpoint_valid)
        collector.pause()
        return self

    def __exit__(self, *exc) -> None:
        collector.resume()
        state.exit_backward(self.saved)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        self.__exit__()
        try:
            yield
        finally:
            self.__enter__()


# ------------------------------------------------------------ node hooks
def _run_tensor_hook(hook, grad: Tensor, node: Node) -> Tensor:
    result = hook(grad)
    if events.listening:
        target = node.variable.uid if isinstance(node, AccumulateGrad) else node.uid
        events.publish(events.HookFired(hook="tensor", target=target, replaced=result is not None))
    if result is None:
        return grad
    if not isinstance(result, Tensor):
        raise TypeError(
            f"expected a Tensor or None from hook '{_hook_name(hook)}', but the hook returned "
            f"{type(result).__name__}"
        )
    if result.shape != grad.shape:
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has changed the size of value: expected "
            f"{tuple(grad.shape)}, got {tuple(result.shape)}"
        )
    if result.dtype != grad.dtype:
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has changed the type of value: expected {grad.dtype}, "
            f"got {result.dtype}"
        )
    return result


def _hook_name(hook) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


def call_pre_hooks(node: Node, grads: list) -> list:
    for hook in list(node._pre_hooks.values()):
        result = hook(tuple(grads))
        if events.listening:
            events.publish(
                events.HookFired(hook="node_pre", target=node.uid, replaced=result is not None)
            )
        if result is not None:
            grads = _replaced_by_hook(hook, result, grads)
    if type(node) is OpNode and grads[0] is None:  # a hook took the gradient away: zeros
        grads = [_zeros_like_output(node)]
    return grads


def call_post_hooks(node: Node, grads_out, grads_in) -> list:
    for hook in list(node._post_hooks.values()):
        result = hook(tuple(grads_out), tuple(grads_in))
        if events.listening:
            events.publish(
                events.HookFired(hook="node_post", target=node.uid, replaced=result is not None)
            )
        if result is not None:
            grads_out = _replaced_by_hook(hook, result, grads_out, none_stays=True)
    return list(grads_out)


def _replaced_by_hook(hook, result, old, none_stays: bool = False) -> list:
    """A node hook's replacement gradients, checked as PyTorch checks them: a tuple of one
    Tensor (or None) per gradient, each the size of the one it replaces. A post-hook may
    not give a gradient where there was none (``none_stays``): that edge leads nowhere."""
    name = _hook_name(hook)
    if not isinstance(result, (tuple, list)):
        raise TypeError(f"expected tuple, but hook '{name}' returned '{type(result).__name__}'")
    if len(result) != len(old):
        raise RuntimeError(
            f"hook '{name}' has returned an incorrect number of values (got {len(result)}, "
            f"but expected {len(old)})"
        )
    for i, (new, was) in enumerate(zip(result, old)):
        if new is None:
            continue
        if not isinstance(new, Tensor):
            raise TypeError(
                f"hook '{name}' returned a {type(new).__name__} at position {i}: expected a "
                "Tensor or None"
            )
        if was is None and none_stays:
            raise RuntimeError(
                f"hook '{name}': can't replace a None gradient with a non-None value (position {i})"
            )
        if was is not None and new.shape != was.shape:
            raise RuntimeError(
                f"hook '{name}' has changed the size of value at position {i}: expected "
                f"{tuple(was.shape)}, got {tuple(new.shape)}"
            )
    return list(result)


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


def _zeros_like_output(node: OpNode) -> Tensor:
    out = node.output()
    if out is None:
        raise RuntimeError(f"{node.name()}: a gradient is missing and the output is gone")
    return Tensor._make(np.zeros_like(out._data))


def _check_nan(node: Node, grads_out: list) -> None:
    if state.anomaly_checks_nan():
        from . import anomaly

        anomaly.check_outputs(node, grads_out)


def _note_forward_stack(node: Node) -> None:
    if state.anomaly.enabled:
        from . import anomaly

        anomaly.warn_forward_stack(node)


def publish_step(step: Step) -> None:
    node = step.node
    events.publish(
        events.NodeStep(
            index=step.index,
            node=node.uid,
            name=node.name(),
            op=node.op.name if isinstance(node, OpNode) else None,
            formula=node.formula,
            grads_in=_arrays(step.grads_in),
            grads_out=_arrays(step.grads_out),
            next_nodes=tuple([None if c is None else c.uid for c, _ in node.next_functions]),
            leaf=node.variable.uid if isinstance(node, AccumulateGrad) else None,
            grads_out_ids=tuple([None if g is None else g.uid for g in step.grads_out]),
        )
    )


def _arrays(grads: tuple) -> tuple:
    """The arrays of ``grads`` (None where there is no gradient)."""
    return tuple([None if g is None else g._data for g in grads])


# ------------------------------------------------------------- public API
def _tensor_list(value) -> list:
    if isinstance(value, Tensor):
        return [value]
    if value is None:
        return []
    return list(value)


def _make_grads(outputs: list, grad_outputs: list | None, op: str) -> list:
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(
            f"{op}: got {len(outputs)} tensors and {len(grad_outputs)} gradients (give one "
            "gradient per tensor)"
        )
    grads = []
    for i, (out, grad) in enumerate(zip(outputs, grad_outputs)):
        if grad is None:
            if out._requires_grad and out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if out._requires_grad and out.dtype.kind == "c":
                raise RuntimeError("grad can be implicitly created only for real scalar outputs")
            grad = Tensor._make(np.ones_like(out._data))
        elif not isinstance(grad, Tensor):
            raise TypeError(
                f"gradients can be either Tensors or None, but got {type(grad).__name__}"
            )
        elif grad.shape != out.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(grad.shape)} and "
                f"output[{i}] has a shape of {tuple(out.shape)}."
            )
        grads.append(grad)
    return grads


def _check_roots(outputs: list) -> None:
    for i, out in enumerate(outputs):
        if not out._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )


def backward(
    tensors,
    grad_tensors=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs=None,
) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of graph leaves.

    As ``torch.autograd.backward``: ``grad_tensors`` are the vectors of the
    vector-Jacobian product (implicit ones for scalar outputs); ``inputs`` limits
    which tensors receive ``.grad``.
    """
    make_backward_task(tensors, grad_tensors, retain_graph, create_graph, inputs).run()


def make_backward_task(
    tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None
) -> GraphTask:
    """The GraphTask of a ``backward()`` call, not yet run (widgets step through it)."""
    recompute.close_forgotten_stage()
    outputs = _tensor_list(tensors)
    if grad_tensors is not None and isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors]
    if create_graph:
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between "
            "the parameter and its gradient which can cause a memory leak. We recommend using "
            "autograd.grad when creating the graph to avoid this.",
            UserWarning,
            stacklevel=3,
        )
    if inputs is not None:
        inputs = _tensor_list(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        for t in inputs:
            if t._grad_fn is not None:
                t.retain_grad()  # as PyTorch: a non-leaf input keeps its .grad from now on
    grads = _make_grads(outputs, None if grad_tensors is None else list(grad_tensors), "backward")
    _check_roots(outputs)
    retain_graph = create_graph if retain_graph is None else retain_graph
    return GraphTask(outputs, grads, retain_graph, create_graph, inputs, accumulate=True)


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
    recompute.close_forgotten_stage()
    outputs = _tensor_list(outputs)
    inputs_list = _tensor_list(inputs)
    if not inputs_list:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    for t in inputs_list:
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if grad_outputs is not None and isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    if is_grads_batched:
        return _batched_grad(
            outputs, inputs_list, grad_outputs, retain_graph, create_graph, allow_unused
        )
    grads = _make_grads(outputs, None if grad_outputs is None else list(grad_outputs), "grad")
    _check_roots(outputs)
    retain_graph = create_graph if retain_graph is None else retain_graph
    task = GraphTask(outputs, grads, retain_graph, create_graph, inputs_list, accumulate=False)
    task.run()
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
