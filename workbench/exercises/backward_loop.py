"""Check a learner's backward loop: ``backward(root)`` on the workbench's own nodes.

The learner writes the algorithm of ``workbench/autograd/reference.py``: count the
edges into each node, run nodes once all their gradients have arrived (a ready
queue), call each node's rule with ``node.apply(grads)``, add
into the leaves' ``.grad``. :func:`check_backward_loop` runs it on a few small graphs
(a chain, a fan-out, broadcasting) and compares every leaf's ``.grad`` with the
engine's ``backward()`` on an identical graph.

To say *where* a wrong loop went wrong, each op node of both graphs is watched: how
many times it ran, the gradient it received and the gradients it sent. The first
node (in the engine's order) that ran twice, never ran, or ran before all its
gradients had arrived is named in the message and lit in the picture of the
backward graph.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..autograd.graph import (
    AccumulateGrad,
    OpNode,
    backward_order,
    count_dependencies,
    edge_of,
    walk,
)
from ..tensor import Tensor
from .diagnose import Finding, compare
from .picture import graph_picture
from .report import CheckerStop, ExerciseError, Passed, fail, learner_error

MAX_RUNS = 50  # a node run more often than this: the loop does not stop


def leaf(values) -> Tensor:
    return Tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def chain() -> tuple:
    """``L = Σ sigmoid(x) · w``: one path from the loss to each leaf."""
    x, w = leaf([0.5, -1.0, 2.0]), leaf([1.5, -0.5, 0.25])
    return (x.sigmoid() * w).sum(), {"x": x, "w": w}


def fan_out() -> tuple:
    """``h = tanh(x)`` used three times (``h · h`` and ``h · c``); ``c`` needs no gradient."""
    x = leaf([[0.5, -1.0, 2.0], [0.1, 0.3, -0.7]])
    c = Tensor(np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]]))
    h = x.tanh()
    return (h * h).sum() + (h * c).sum(), {"x": x}


def broadcasting() -> tuple:
    """``b`` (3,) broadcast over the rows of ``x`` (2, 3) and used twice; ``x.grad`` already
    holds ones from an earlier backward, so the new gradient must be added to it."""
    x = leaf([[0.2, -0.4, 0.6], [1.0, 0.0, -1.0]])
    b = leaf([0.1, -0.2, 0.3])
    x.grad = Tensor(np.ones((2, 3)))
    return (x * b + b).exp().mean(), {"x": x, "b": b}


@dataclass(frozen=True)
class TestGraph:
    name: str  # for messages: "the chain graph"
    build: Callable[[], tuple]  # -> (root, {leaf name: leaf})


GRAPHS = (
    TestGraph("the chain graph", chain),
    TestGraph("the fan-out graph", fan_out),
    TestGraph("the broadcasting graph", broadcasting),
)


# ------------------------------------------------------------ watching nodes
class Watcher:
    """Counts each op node's runs and keeps the gradients it received and sent.

    Nodes are known by their rank in creation order, so the two copies of a graph (one
    for the engine, one for the learner) can be compared node by node.
    """

    def __init__(self, root: Tensor) -> None:
        self.start = edge_of(root)[0]  # the node backward starts from
        self.nodes = nodes_below(root)
        self.runs = [0] * len(self.nodes)
        self.received: list = [None] * len(self.nodes)
        self.sent: list = [None] * len(self.nodes)
        for rank, node in enumerate(self.nodes):
            if isinstance(node, OpNode):
                node.apply = self.watched(rank, node)  # an instance attribute: only this node

    def watched(self, rank: int, node: OpNode) -> Callable:
        run_rule = type(node).apply

        def apply(grad_outputs):
            self.runs[rank] += 1
            if self.runs[rank] > MAX_RUNS:
                raise CheckerStop(
                    f"your loop ran {node.name()} more than {MAX_RUNS} times: it does not "
                    "stop. Put a node on the ready queue once, when its dependency count "
                    "reaches zero."
                )
            if not isinstance(grad_outputs, (list, tuple)):
                raise CheckerStop(
                    f"your loop called {node.name()}.apply with a "
                    f"{type(grad_outputs).__name__}. Pass a list with one gradient per output "
                    "of the node: node.apply([grad])."
                )
            self.received[rank] = [as_array(g) for g in grad_outputs]
            grads = run_rule(node, grad_outputs)
            self.sent[rank] = [as_array(g) for g in grads]
            return grads

        return apply

    def stop(self) -> None:
        """Take the watch off the nodes (the graph becomes ordinary again)."""
        for node in self.nodes:
            node.__dict__.pop("apply", None)


def nodes_below(root: Tensor) -> list:
    """Every node of ``root``'s backward graph, in creation order."""
    return sorted(walk([edge_of(root)[0]]), key=lambda node: node._seq)


def as_array(grad) -> np.ndarray | None:
    if grad is None:
        return None
    return np.array(grad.detach().numpy() if isinstance(grad, Tensor) else grad)


# ----------------------------------------------------------------- the check
@dataclass
class Run:
    leaves: dict  # leaf name -> the leaf
    before: dict  # leaf name -> its .grad before backward ran (an array, or None)
    grads: dict  # leaf name -> its .grad after (an array, or None)
    watcher: Watcher


def check_backward_loop(learner_backward: Callable[[Tensor], None]) -> Passed:
    """Check ``learner_backward(root)``, which must fill ``.grad`` as ``root.backward()`` does.

    It runs on three small graphs. A wrong ``.grad`` raises :class:`ExerciseError` naming
    the leaf, the elements, and the node where it went wrong (ran twice, never ran, ran
    before its gradients had all arrived); the error's picture lights that node.
    """
    for graph in GRAPHS:
        expected = run_graph(graph, engine_backward)
        got = run_graph(graph, learner_backward, learner=True)
        check_graph(graph, expected, got)
    return Passed(
        "Your backward loop is right.",
        "On a chain, a fan-out and a broadcasting graph it fills every leaf's .grad exactly "
        "as the engine's backward() does (adding to a .grad that already holds a gradient), "
        "running each node once. You just proved that counting dependencies, running ready "
        "nodes and adding into .grad is the whole backward algorithm.",
    )


def engine_backward(root) -> None:
    """``root.backward()``: the engine calls ``node.apply`` too, so the watcher sees it."""
    root.backward()


def run_graph(graph: TestGraph, backward: Callable, learner: bool = False) -> Run:
    root, leaves = graph.build()
    before = {name: as_array(x.grad) for name, x in leaves.items()}
    watcher = Watcher(root)
    try:
        backward(root)
    except CheckerStop as stop:
        fail(f"On {graph.name}, {stop}")
    except ExerciseError:  # a rule tried with trying_rule has already said what is wrong
        raise
    except Exception as err:
        if not learner:
            raise
        name = getattr(backward, "__name__", "backward")
        raise learner_error(err, backward, f"backward loop {name}") from None
    finally:
        watcher.stop()
    after = {name: as_array(x.grad) for name, x in leaves.items()}
    return Run(leaves, before, after, watcher)


def check_graph(graph: TestGraph, expected: Run, got: Run) -> None:
    context = f"On {graph.name}"
    for name in expected.grads:
        finding = compare(f"{name}.grad", expected.grads[name], got.grads[name])
        if finding is not None:
            rank, cause = cause_of(finding, name, expected, got)
            fail(finding.sentences(context, cause), finding, picture=lit_graph(graph, rank))
    rank = next((r for r, runs in enumerate(got.watcher.runs) if runs > 1), None)
    if rank is not None:
        node = got.watcher.nodes[rank]
        message = (
            f"{context}, your loop gets the right gradients, but {node.name()} ran "
            f"{got.watcher.runs[rank]} times. Each node must run once, after all its "
            "gradients have arrived and been summed: that is what the dependency counts are for."
        )
        fail(message, picture=lit_graph(graph, rank))


def cause_of(finding: Finding, name: str, expected: Run, got: Run) -> tuple:
    """``(rank of the node to light, a sentence saying where the loop went wrong)``.

    The op nodes are searched in the engine's order, so the first one found is the one
    closest to the loss: the nodes below it only passed its mistake on.
    """
    nodes = got.watcher.nodes
    into = count_dependencies([got.watcher.start])  # edges into each node (none: the start)
    for node in backward_order([got.watcher.start]):
        if not isinstance(node, OpNode):
            continue
        rank = nodes.index(node)
        runs, wanted = got.watcher.runs[rank], expected.watcher.runs[rank]
        if runs > wanted:
            return rank, (
                f"a node ran twice or a gradient was added twice: {node.name()} ran {runs} "
                "times, and each node must run once"
            )
        if runs < wanted and node is got.watcher.start:
            return rank, (
                f"{node.name()}, the first node, never ran: start the ready queue with "
                "root.grad_fn, its gradient ones_like(root)"
            )
        if runs < wanted:
            return rank, (
                f"a node never ran: {node.name()}'s dependency count never reached zero — "
                "check the dependency counts (one per edge into the node)"
            )
        if not same_arrays(got.watcher.received[rank], expected.watcher.received[rank]):
            return rank, early_or_misrouted(node, into.get(node, 0))
    return leaf_cause(finding, name, expected, got)


def early_or_misrouted(node: OpNode, edges: int) -> str:
    if edges > 1:
        return (
            f"{node.name()} ran before all its gradients had arrived: {edges} edges lead "
            "into it (fan-out), so it must wait until its dependency count reaches zero, "
            "then run once on their sum"
        )
    return (
        f"the gradient that reached {node.name()} is wrong: check that each gradient goes "
        "along its own edge (zip(node.next_functions, grads))"
    )


def leaf_cause(finding: Finding, name: str, expected: Run, got: Run) -> tuple:
    """Every op node ran right: the mistake is in adding into ``name.grad``."""
    nodes = got.watcher.nodes
    leaf = got.leaves[name]
    rank = next(
        r for r, n in enumerate(nodes) if isinstance(n, AccumulateGrad) and n.variable is leaf
    )
    before, new = got.before[name], got.grads[name]
    parts = contributions(expected, rank)
    if finding.kind == "missing":
        return rank, (
            f"a node never ran: the AccumulateGrad node of {name} never added its gradient "
            f"to {name}.grad — check the dependency counts (one per edge into the node)"
        )
    if before is not None and new is not None and np.allclose(new, expected.grads[name] - before):
        return rank, (
            f"{name}.grad already held a gradient before this backward: add into it, as "
            "backward() does, rather than replacing it (gradients accumulate)"
        )
    start = 0 if before is None else before
    if new is not None and len(parts) > 1 and any(np.allclose(new - start, p) for p in parts):
        return rank, (
            f"{name}.grad holds only one of the {len(parts)} gradients that reach {name}: "
            f"its node must run only after all {len(parts)} have arrived, on their sum"
        )
    if finding.kind == "factor" and finding.details.get("factor") == 2:
        return rank, f"the gradient was added into {name}.grad twice"
    return rank, f"check how the gradient that reaches {name} is added into {name}.grad"


def contributions(run: Run, rank: int) -> list:
    """The gradients the engine sent along each edge into node ``rank``."""
    target = run.watcher.nodes[rank]
    parts = []
    for r, node in enumerate(run.watcher.nodes):
        for i, (child, _) in enumerate(node.next_functions):
            if child is target and run.watcher.sent[r] is not None:
                parts.append(run.watcher.sent[r][i])
    return parts


def same_arrays(a: list | None, b: list | None) -> bool:
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(
        (x is None and y is None)
        or (x is not None and y is not None and x.shape == y.shape and np.allclose(x, y))
        for x, y in zip(a, b)
    )


# ------------------------------------------------------------------ picture
def lit_graph(graph: TestGraph, rank: int | None) -> Callable[[], str] | None:
    """The backward graph of a fresh copy of ``graph``, with node ``rank`` lit."""
    if rank is None:
        return None
    root, leaves = graph.build()
    nodes = nodes_below(root)
    lit = nodes[rank]
    names = {id(x): name for name, x in leaves.items()}

    def label(node) -> str:
        if isinstance(node, AccumulateGrad):
            return f"AccumulateGrad({names.get(id(node.variable), '?')})"
        return node.name()

    text = "Backward order: " + " → ".join(
        f"[{label(n)} ← here]" if n is lit else label(n) for n in backward_order([edge_of(root)[0]])
    )

    def draw():
        from .. import viz

        order = viz.build_model(root, "backward").order
        return viz.draw(root, kind="backward", step=order.index(lit.uid) + 1)

    return graph_picture(draw, text)
