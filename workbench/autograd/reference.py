"""The backward algorithm, whole, on one screen: read this first.

``backward(root)`` fills the ``.grad`` of every leaf below ``root`` exactly as
``root.backward()`` does, on the same graph nodes and with the same gradient rules.
It is the specification the engine (:mod:`workbench.autograd.engine`) implements:
the engine runs this loop, with what a real tool needs woven into it — hooks,
``retain_grad``, ``inputs=``, ``create_graph``, events for the widgets,
one-step-at-a-time stepping, clear errors. A test runs every registered op and random
programs through both and compares the gradients and every step exactly.

The graph, as the forward pass left it:

- ``root.grad_fn`` is the node of the op that made ``root``. Every node has
  ``next_functions``: one edge ``(node, output_nr)`` per input of its op, leading to
  the node that made that input (``(None, 0)`` where no gradient is needed).
- A leaf that requires grad (``x = wb.tensor(..., requires_grad=True)``) is reached
  through its :class:`AccumulateGrad` node, whose ``variable`` is the leaf.
- ``node.apply(grads)`` runs the op's gradient rule: gradients with respect to the
  node's outputs in (ȳ), one gradient per input edge out (x̄).

The algorithm:

1. Count, for every node, how many edges lead into it (its *dependencies*).
2. A node is *ready* once every edge into it has delivered its gradient; it is then
   pushed onto a heap of ready nodes, and the one with the smallest ``node._order``
   runs next: a leaf's node as soon as it is ready, otherwise the node recorded last.
   Any order that waits for every gradient gives the same ``.grad``; this one is
   PyTorch's, ties included, so hooks fire and the stepper steps as they would there.
3. Running a node calls its rule; each gradient it returns is added into the
   buffer of the node its edge leads to. A leaf's node adds into ``leaf.grad``.

Why ties fall as in PyTorch: PyTorch's ready queue is a binary heap (a
``std::priority_queue``) keyed by each node's sequence number, its place in creation
order, larger first (``_order`` is minus it: ``heapq`` pops the smallest). Every leaf's
node (AccumulateGrad) has the same number, the largest, so leaves ready at once tie and
only the heap's own moves order them: ``(x * w).sum()`` runs x's node, then w's; a stack
of a, b, c, d, e runs a, c, e, b, d. ``heapq`` moves items as libstdc++'s ``push_heap``
and ``pop_heap`` do (a pop sifts the hole down to the bottom along the child that
comes out first, the right one on a tie, then sifts the last item up), ``Node.__lt__`` compares
``_order`` alone, and each node is pushed when its last gradient arrives, as PyTorch
pushes it: so the order is PyTorch's (``tests/test_ready_order.py`` checks it).

What it leaves out (the engine's job): hooks and ``retain_grad``, ``inputs=``,
``retain_graph`` (the graph's saved tensors are always freed here),
``create_graph``, events, checks of the gradients a rule returns.
"""

from __future__ import annotations

import heapq

from ..core.factories import ones_like
from ..core.tensor import Tensor
from ..record.grad_mode import no_grad
from ..record.graph import AccumulateGrad, Node, edge_of


def backward(root: Tensor, grad: Tensor | None = None) -> None:
    """Accumulate the gradient of ``root`` into the ``.grad`` of the leaves below it.

    ``grad`` is ``root``'s own gradient (ones for a scalar ``root``), as in
    ``root.backward(grad)``.
    """
    if grad is None:
        grad = ones_like(root)
    start, output_nr = edge_of(root)
    if start is None:
        raise RuntimeError("the root does not require grad and has no grad_fn")
    dependencies = count_dependencies(start)
    buffers = {start: [None] * start.num_outputs}  # node -> its gradients so far
    buffers[start][output_nr] = grad
    ready = [start]  # a heap of nodes: the smallest _order comes out first (Node.__lt__)
    with no_grad():  # rules compute gradients; they record no graph of their own
        while ready:
            node = heapq.heappop(ready)
            grads = buffers.pop(node, None)
            if grads is None:  # every edge into it carried None: it has nothing to send
                grads_out = [None] * len(node.next_functions)
            else:
                grads_out = run_node(node, grads)
            for (child, nr), child_grad in zip(node.next_functions, grads_out):
                if child is None:
                    continue
                if child_grad is not None:
                    add_to_buffer(buffers, child, nr, child_grad)
                dependencies[child] -= 1
                if dependencies[child] == 0:  # every edge into it has delivered
                    heapq.heappush(ready, child)


def count_dependencies(start: Node) -> dict:
    """How many edges lead into each node below ``start`` (a walk with a stack: a graph
    of 100,000 nodes would overflow Python's recursion limit)."""
    dependencies = {}
    stack = [start]
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            if child not in dependencies:  # the first edge into it: walk below it once
                dependencies[child] = 0
                stack.append(child)
            dependencies[child] += 1
    return dependencies


def run_node(node: Node, grads: list) -> list:
    """Run one node: a leaf's node accumulates into ``.grad``; any other runs its rule."""
    if isinstance(node, AccumulateGrad):
        accumulate(node.variable, grads[0])
        return []
    grads_out = node.apply(grads)  # the op's gradient rule
    node.release()  # free what the forward pass saved for this rule
    return grads_out


def add_to_buffer(buffers: dict, node: Node, output_nr: int, grad: Tensor) -> None:
    """Where several edges lead into one output, their gradients are summed."""
    slots = buffers.setdefault(node, [None] * node.num_outputs)
    slots[output_nr] = grad if slots[output_nr] is None else slots[output_nr] + grad


def accumulate(leaf: Tensor, grad: Tensor) -> None:
    """``leaf.grad += grad``, in the leaf's dtype; the first gradient is copied, so that
    no two leaves share one array."""
    if grad.is_complex() and not leaf.is_complex():
        grad = grad.real  # a real leaf of a complex expression keeps the real part
    grad = grad.to(leaf.dtype)
    leaf.grad = grad.clone() if leaf.grad is None else leaf.grad + grad
