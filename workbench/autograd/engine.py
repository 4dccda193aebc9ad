"""The backward engine's general road: the algorithm of ``reference.py`` with
everything a real tool needs around it, written for reading.

Read :mod:`workbench.autograd.reference` first: the same loop in a few dozen lines.
This module adds, in PyTorch's order and with PyTorch's errors: tensor hooks,
``retain_grad``, node pre- and post-hooks, ``grad()`` and ``backward(inputs=...)``
(only the nodes on a path to an input run), ``create_graph`` (rules record a graph
of their own), ``retain_graph``, checks of every gradient a rule returns, events for
the widgets, and a generator of steps (:meth:`GraphTask.steps`) that a widget runs
one node at a time.

How one backward runs:

1. Walk the graph from the roots (with a stack) and count, for every node, how
   many edges lead into it: its dependencies.
2. A node is ready when all its dependencies have delivered their gradients.
   Ready nodes wait in a heap ordered by creation (latest first), as PyTorch does.
3. Running a node (:meth:`GraphTask.run_node`): tensor hooks → node pre-hooks → its
   gradient rule (or, for a leaf, accumulation into ``.grad``) → node post-hooks →
   the gradients go into the buffers of the next nodes, summed where several edges
   meet.

``backward()`` and ``grad()`` run the same pass through the speed layer,
:mod:`workbench.autograd.fast`, which the test suite holds to this road.
"""

from __future__ import annotations

import heapq
import threading
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .. import backend, events, state
from ..tensor import Tensor
from . import recompute
from .graph import AccumulateGrad, Node, OpNode, edge_of

_accumulate_lock = threading.Lock()


class _BackwardMode:
    """The context nodes run in (a class, not a generator: entered once per step)."""

    __slots__ = ("create_graph", "checkpoint_valid", "saved")

    def __init__(self, create_graph: bool, checkpoint_valid: bool) -> None:
        self.create_graph = create_graph
        self.checkpoint_valid = checkpoint_valid

    def __enter__(self) -> None:
        self.saved = state.enter_backward(self.create_graph, self.checkpoint_valid)

    def __exit__(self, *exc) -> None:
        state.exit_backward(self.saved)


@dataclass
class Step:
    """One node run by the engine, as a widget or a test sees it."""

    index: int
    node: Node
    grads_in: tuple  # the gradients that arrived, one per output of the node
    grads_out: tuple  # the gradients sent on, one per input edge (None where none)
    accumulated: Tensor | None = None  # the leaf whose .grad was updated


class GraphTask:
    """Everything one call of backward()/grad() needs, and its step generator."""

    def __init__(
        self,
        roots: Sequence[Tensor],
        grad_roots: Sequence[Tensor],
        keep_graph: bool,
        create_graph: bool,
        inputs: Sequence[Tensor] | None = None,
        accumulate: bool = True,
    ) -> None:
        self.roots = list(roots)
        self.inputs = None if inputs is None else list(inputs)
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.accumulate = accumulate
        self.buffers: dict[Node, list] = {}
        self.dependencies: dict[Node, int] = {}
        self.owned: dict[int, object] = {}  # arrays already stored in some .grad
        self.targets: dict[tuple, list[int]] = {}  # (node, output_nr) -> input indices
        self.captured: list = [] if inputs is None else [None] * len(inputs)
        self.needed: set | None = None
        self.steps_run = 0
        root_nodes = []
        for root, grad in zip(self.roots, grad_roots):
            node, nr = edge_of(root)
            self.add_to_buffer(node, nr, grad)
            root_nodes.append(node)
            self.owned[id(grad._data)] = grad._data
        self.root_nodes = root_nodes
        self._count_dependencies(root_nodes)
        if inputs is not None:
            self._set_targets(inputs)

    # --------------------------------------------------------------- set-up
    def _count_dependencies(self, root_nodes: list) -> None:
        """How many edges lead into each node below the roots (a walk with a stack)."""
        deps = self.dependencies
        roots = set(root_nodes)
        stack = list(roots)
        while stack:
            node = stack.pop()
            for child, _ in node.next_functions:
                if child is None:
                    continue
                count = deps.get(child)
                if count is None:  # the first edge into it: walk below it once
                    deps[child] = 1
                    if child not in roots:
                        stack.append(child)
                else:
                    deps[child] = count + 1

    def _set_targets(self, inputs: Sequence[Tensor]) -> None:
        """Only nodes on a path to an input run; gradients are captured at the inputs."""
        for i, t in enumerate(inputs):
            if t._grad_fn is not None:
                edge = edge_of(t)
            elif t._grad_acc is not None and t._grad_acc() is not None:
                edge = (t._grad_acc(), 0)
            else:
                continue  # a leaf that no graph uses
            self.targets.setdefault(edge, []).append(i)
        target_nodes = {node for node, _ in self.targets}
        needed = set()
        for node in self._reverse_topological_order():
            if node in target_nodes or any(
                child in needed for child, _ in node.next_functions if child is not None
            ):
                needed.add(node)
        self.needed = needed

    def _reverse_topological_order(self) -> list:
        deps = dict(self.dependencies)
        order = []
        # each root once: an output given twice must not be walked (and counted down) twice
        ready = [n for n in dict.fromkeys(self.root_nodes) if deps.get(n, 0) == 0]
        seen = set(ready)
        while ready:
            node = ready.pop()
            order.append(node)
            for child, _ in node.next_functions:
                if child is None:
                    continue
                deps[child] -= 1
                if deps[child] == 0 and child not in seen:
                    seen.add(child)
                    ready.append(child)
        order.reverse()
        return order

    def add_to_buffer(self, node: Node, nr: int, grad) -> None:
        slots = self.buffers.get(node)
        if slots is None:
            slots = [None] * node.num_outputs
            self.buffers[node] = slots
        if grad is None:
            return
        if slots[nr] is None:
            slots[nr] = grad
        else:  # several edges meet here: an add op (recorded when create_graph is on)
            slots[nr] = slots[nr] + grad

    # ---------------------------------------------------------------- running
    def steps(self) -> Iterator[Step]:
        """Run the backward pass, yielding one :class:`Step` per node that ran.

        Between two steps the caller's grad mode is back in force: a widget may run
        its own code while the pass is paused.
        """
        ready = self.start()
        while ready:
            node = heapq.heappop(ready)[1]
            with self.backward_mode():
                step = self.run_node(node, self.buffers.pop(node, None), ready, make_step=True)
            if step is not None:
                yield step
        self.finish()

    def run(self) -> None:
        """Run the whole pass at once: every step of :meth:`steps`, none kept."""
        for _ in self.steps():
            pass

    def start(self) -> list:
        """Publish BackwardStarted; return the heap of the nodes ready to run."""
        if events.listening:
            events.publish(
                events.BackwardStarted(
                    roots=tuple(r.uid for r in self.roots),
                    root_nodes=tuple(n.uid for n in self.root_nodes),
                    grad_outputs=tuple(self.buffers[n][0]._data for n in self.root_nodes),
                    create_graph=self.create_graph,
                    retain_graph=self.keep_graph,
                    inputs=None if self.inputs is None else tuple(t.uid for t in self.inputs),
                )
            )
        ready = []
        for node in dict.fromkeys(self.root_nodes):
            if self.dependencies.get(node, 0) == 0:
                heapq.heappush(ready, (-node._seq, node))
        return ready

    def finish(self) -> None:
        if events.listening:
            events.publish(
                events.BackwardFinished(
                    steps=self.steps_run, roots=tuple(r.uid for r in self.roots)
                )
            )

    def backward_mode(self) -> _BackwardMode:
        """While nodes run: grad mode is ``create_graph``, ops count as 'in backward'."""
        return _BackwardMode(self.create_graph, self.needed is None)

    def run_node(self, node: Node, grads: list | None, ready: list, make_step: bool) -> Step | None:
        """Run one node, in PyTorch's order, and deliver what it sends on.

        1. the tensor hooks (``register_hook``), then ``retain_grad``, on each
           gradient that arrived;
        2. for ``grad()`` and ``backward(inputs=...)``: keep the gradients asked for;
        3. the node's pre-hooks;
        4. a leaf's node adds into ``.grad``; any other node runs its op's rule;
        5. the node's post-hooks; the saved tensors are freed (unless retain_graph);
        6. each gradient goes to the node its edge leads to.

        ``grads`` is what the node's buffer held (None: nothing arrived). Returns the
        node's :class:`Step` when ``make_step`` (a Step is only built for someone who
        looks at it: the step generator, or event listeners).
        """
        grads = grads or [None] * node.num_outputs
        if not (self._is_wanted(node) and _has_grad(grads)):
            self.deliver(node, (), ready)  # nothing runs; its edges still count down
            return None
        grads = self._tensor_hooks(node, grads)
        self._capture(node, grads)
        if node._pre_hooks:
            grads = _call_pre_hooks(node, grads)
        leaf = None
        if isinstance(node, AccumulateGrad):
            grads_out = ()
            leaf = self._accumulate_leaf(node, grads[0])
        elif self._leads_to_nothing_wanted(node):
            grads_out = ()  # grad(): captured above, nothing beyond it is asked for
        else:
            grads_out = self._call_rule(node, grads)
        if node._post_hooks:
            grads_out = _call_post_hooks(node, grads_out, grads)
        if not self.keep_graph:
            node.release()
        self.deliver(node, grads_out, ready)
        self.steps_run += 1
        if not make_step:
            return None
        step = Step(self.steps_run - 1, node, tuple(grads), tuple(grads_out), leaf)
        if events.listening:
            publish_step(step)  # after delivery: every event of this step comes before it
        return step

    def deliver(self, node: Node, grads_out: tuple, ready: list) -> None:
        """Add the gradients into the next nodes' buffers; queue nodes that became ready."""
        for i, (child, nr) in enumerate(node.next_functions):
            if child is None:
                continue
            grad = grads_out[i] if i < len(grads_out) else None
            if grad is not None:
                self.add_to_buffer(child, nr, grad)
            self.dependencies[child] -= 1
            if self.dependencies[child] == 0:  # every edge into it has delivered
                heapq.heappush(ready, (-child._seq, child))

    def _is_wanted(self, node: Node) -> bool:
        """With ``inputs=``, only the nodes on a path to an input run."""
        return self.needed is None or node in self.needed

    def _leads_to_nothing_wanted(self, node: Node) -> bool:
        if self.needed is None:
            return False
        return not any(child in self.needed for child, _ in node.next_functions)

    def _capture(self, node: Node, grads: list) -> None:
        """``grad()`` and ``backward(inputs=...)``: keep the gradients of the inputs."""
        for nr, g in enumerate(grads):
            for index in self.targets.get((node, nr), ()):
                self.captured[index] = g

    def _accumulate_leaf(self, node: AccumulateGrad, grad: Tensor | None) -> Tensor | None:
        """Add ``grad`` into the leaf's ``.grad`` (if wanted); returns the leaf, if it did."""
        wanted = self.needed is None or (node, 0) in self.targets
        if not (self.accumulate and wanted and grad is not None):
            return None
        self._accumulate(node.variable, grad)
        return node.variable

    def _tensor_hooks(self, node: Node, grads: list) -> list:
        """Tensor hooks (``register_hook``), then retain_grad, for each output of ``node``."""
        if node._tensor_hooks is None and node._retained is None:
            if not isinstance(node, AccumulateGrad) or node.variable._hooks is None:
                return grads
        grads = list(grads)
        for nr in range(len(grads)):
            hooks = node._tensor_hooks_for(nr)
            if hooks and grads[nr] is not None:
                for hook in list(hooks.values()):
                    grads[nr] = _run_tensor_hook(hook, grads[nr], node)
            if node._retained and nr in node._retained and grads[nr] is not None:
                tensor = node._retained[nr]()
                if tensor is not None and tensor._grad_fn is node:
                    self.store_grad(tensor, grads[nr])
                    if events.listening:
                        events.publish(
                            events.HookFired(hook="retain_grad", target=tensor.uid, replaced=False)
                        )
        return grads

    def _call_rule(self, node: Node, grads: list) -> list:
        """The node's gradient rule, its result checked (count, shapes, dtypes)."""
        if isinstance(node, OpNode):
            if grads[0] is None or len(grads) > 1:
                grads = [g if g is not None else _zeros_like_output(node) for g in grads]
        try:
            grads_out = node.apply(grads, self.create_graph)
        except Exception as err:
            _note_forward_stack(err, node)
            raise
        grads_out = validate_outputs(node, grads_out)
        if state.anomaly.enabled and _anomaly_checks_nan():
            _check_nan(node, grads_out)
        return grads_out

    # ---------------------------------------------------------- accumulation
    def _owned_copy(self, grad: Tensor) -> Tensor:
        """A gradient array that no other .grad shares, so in-place updates stay private."""
        array = grad._data
        if getattr(array, "base", None) is not None or id(array) in self.owned:
            array = array.copy()
        self.owned[id(array)] = array
        return Tensor._make(array)

    def store_grad(self, tensor: Tensor, grad: Tensor) -> None:
        """Add ``grad`` into ``tensor.grad`` (a leaf, or a non-leaf that retains it)."""
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
                np.add(old._data, grad._data, out=old._data, casting="unsafe")
                old._bump_version()
            else:
                tensor._grad = Tensor._make(old._data + grad._data)
        if events.listening:
            events.publish(
                events.GradAccumulated(
                    tensor=tensor.uid,
                    before=before,
                    contribution=grad._data,
                    after=tensor._grad._data,
                )
            )

    def _accumulate(self, leaf: Tensor, grad: Tensor) -> None:
        self.store_grad(leaf, grad)
        if leaf._post_acc_hooks:
            for hook in list(leaf._post_acc_hooks.values()):
                if hook(leaf) is not None:
                    raise RuntimeError("hooks should return None.")
                if events.listening:
                    events.publish(
                        events.HookFired(hook="post_accumulate", target=leaf.uid, replaced=False)
                    )


# ------------------------------------------------------------------ helpers
def _has_grad(grads: list) -> bool:
    """Whether any gradient arrived (a loop: cheaper than any() over a generator)."""
    for g in grads:
        if g is not None:
            return True
    return False


def _zeros_like_output(node: OpNode) -> Tensor:
    out = node.output()
    if out is None:
        raise RuntimeError(f"{node.name()}: a gradient is missing and the output is gone")
    return Tensor._make(np.zeros_like(out._data))


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


def _call_pre_hooks(node: Node, grads: list) -> list:
    for hook in list(node._pre_hooks.values()):
        result = hook(tuple(grads))
        if events.listening:
            events.publish(
                events.HookFired(hook="node_pre", target=node.uid, replaced=result is not None)
            )
        if result is not None:
            grads = _replaced_by_hook(hook, result, grads)
    return grads


def _call_post_hooks(node: Node, grads_out, grads_in) -> list:
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


def validate_outputs(node: Node, grads_out) -> list:
    """One gradient per input edge, each of the input's shape and dtype."""
    if type(grads_out) is not list:  # rules return lists; custom Functions may give tuples
        grads_out = list(grads_out)
    expected = len(node.next_functions)
    if len(grads_out) != expected:
        raise RuntimeError(
            f"Function {node.name()} returned an incorrect number of gradients "
            f"(expected {expected}, got {len(grads_out)})"
        )
    for i, grad in enumerate(grads_out):
        if grad is not None:
            grads_out[i] = checked_output(node, i, grad)
    return grads_out


def checked_output(node: Node, i: int, grad) -> Tensor | None:
    """Gradient ``i`` of ``node`` as the engine passes it on: None where the edge leads
    nowhere, else a Tensor of the input's shape (or an error) and dtype (cast)."""
    if node.next_functions[i][0] is None:
        return None
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


def _anomaly_checks_nan() -> bool:
    return state.anomaly_checks_nan()


def _check_nan(node: Node, grads_out: list) -> None:
    from . import anomaly

    anomaly.check_outputs(node, grads_out)


def _note_forward_stack(err: Exception, node: Node) -> None:
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
    return tuple([None if g is None else g._data for g in grads])  # a list: quicker to fill


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
    task = make_backward_task(tensors, grad_tensors, retain_graph, create_graph, inputs)
    run_to_end(task)


def run_to_end(task: GraphTask) -> None:
    """Run every step of ``task``: ``backward()`` and ``grad()`` end here.

    While the speed layer is on (the default), the pass runs through
    :func:`fast.run`, with Python's cyclic garbage collector paused; otherwise down
    the general road, :meth:`GraphTask.run`. Both give the same gradients and the
    same events (the test suite checks this on every registered op).
    """
    if not state.speed.fast_path:
        with backend.quiet_numpy():  # rules' own numpy math: no RuntimeWarning either
            task.run()
        return
    from . import fast  # (fast.py builds on this module: imported here, not at the top)

    with fast.paused_gc(), backend.quiet_numpy():  # fast.add_arrays adds with numpy itself
        fast.run(task)


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
    keep = create_graph if retain_graph is None else retain_graph
    return GraphTask(outputs, grads, keep, create_graph, inputs, accumulate=True)


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
    keep = create_graph if retain_graph is None else retain_graph
    task = GraphTask(outputs, grads, keep, create_graph, inputs_list, accumulate=False)
    run_to_end(task)
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
