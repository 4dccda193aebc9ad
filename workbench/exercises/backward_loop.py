"""Check a learner's backward loop: ``backward(root)`` on the workbench's own nodes.

The learner writes the algorithm of ``workbench/autograd/reference.py``: count the
edges into each node, run nodes once all their gradients have arrived (a ready
queue), call each node's rule with ``node.apply(grads)``, add into the leaves'
``.grad``, skip what is None. :func:`check_backward_loop` runs it on four small
graphs (a chain, a fan-out, broadcasting, a stop-gradient that sends None) and
compares every leaf's ``.grad`` with the engine's ``backward()`` on an identical graph.

To say *where* a wrong loop went wrong, each op node of both graphs is watched: how
many times it ran and in which order, the gradient it received and the gradients it
sent, whether graph recording was on, and each leaf's ``.grad`` before each run. The
first node (in the engine's order) that went wrong is named in the message and lit in
the picture of the backward graph: it ran twice, never ran, ran before all its
gradients had arrived, or ran after them on a buffer that kept only some of them
(overwritten instead of summed). Where the watch cannot tell why a gradient is
wrong, the message says what differs and names no cause.

:func:`trace_loop` records a loop's pass as a Trace, one step per node it runs, so
that ``wb.widgets.CompareStepper`` can set it beside the engine's, node by node.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ..autograd.pass_events import node_step
from ..core import events, state
from ..core.tensor import Tensor
from ..ops.grad import no_grad as stop_gradient
from ..record.graph import (
    AccumulateGrad,
    OpNode,
    backward_order,
    edge_of,
    walk,
)
from ..trace import Trace, trace
from .dependencies import none_child_hint
from .diagnose import Finding, compare
from .guard import checker, modes_kept
from .picture import graph_picture
from .report import CheckerStop, ExerciseError, NotAnswered, Passed, fail, learner_error

MAX_RUNS = 50  # a node run more often than this: the loop does not stop
KEPT_IN_FULL = 1_000_000  # trace_loop keeps arrays up to this many elements whole


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


def stopped() -> tuple:
    """``a · stop(tanh(b))``: the stop-gradient sends None, so tanh's node and ``b``'s
    AccumulateGrad receive no gradient at all, and ``b.grad`` stays None."""
    a, b = leaf([1.0, -2.0, 0.5]), leaf([0.5, -1.0, 2.0])
    return (a * stop_gradient(b.tanh())).sum(), {"a": a, "b": b}


@dataclass(frozen=True)
class TestGraph:
    name: str  # for messages: "the chain graph"
    build: Callable[[], tuple]  # -> (root, {leaf name: leaf})
    nones: str  # what is None on this graph, for a loop that trips over a None


GRAPHS = (
    TestGraph(
        "the chain graph",
        chain,
        "On this graph no edge and no gradient is None: what is None is each leaf's .grad "
        "before its first gradient arrives.",
    ),
    TestGraph(
        "the fan-out graph",
        fan_out,
        "On this graph c needs no gradient: the edge of h * c into it is (None, 0), and "
        "mul's rule sends None along it.",
    ),
    TestGraph(
        "the broadcasting graph",
        broadcasting,
        "On this graph x.grad already holds a gradient, and b.grad is None until its first.",
    ),
    TestGraph(
        "the stop-gradient graph",
        stopped,
        "On this graph NoGradBackward0 (a stop-gradient) sends None to TanhBackward0, so "
        "TanhBackward0 and b's AccumulateGrad receive no gradient at all, and b.grad stays "
        "None. A node that received nothing has nothing to compute or add: skip it, and "
        "let each of its edges count as delivered.",
    ),
)


# ------------------------------------------------------------ watching nodes
class Watcher:
    """Counts each op node's runs and keeps what it received and sent, and when it ran.

    Nodes are known by their rank in creation order, so the two copies of a graph (one
    for the engine, one for the learner) can be compared node by node. ``log`` lists
    the ranks in the order the nodes ran; before each run, ``recording`` notes whether
    graph recording was on and ``grads_before`` each leaf's ``.grad``.
    """

    def __init__(self, root: Tensor, leaves: dict, learner: bool = False) -> None:
        self.start = edge_of(root)[0]  # the node backward starts from
        self.nodes = nodes_below(root)
        self.leaves = leaves
        self.learner = learner
        self.runs = [0] * len(self.nodes)
        self.received: list = [None] * len(self.nodes)
        self.sent: list = [None] * len(self.nodes)
        self.log: list[int] = []
        self.recording: list[bool] = []
        self.grads_before: list[dict] = []
        self.leaf_applied: list[str] = []  # AccumulateGrad nodes whose apply was called
        for rank, node in enumerate(self.nodes):
            if isinstance(node, OpNode):
                node.apply = self.watched(rank, node)  # an instance attribute: only this node
            elif learner:
                node.apply = self.leaf_watched(node)

    def watched(self, rank: int, node: OpNode) -> Callable:
        run_rule = type(node).apply

        def apply(grad_outputs):
            self.note_run(rank, node, grad_outputs)
            self.received[rank] = [as_array(g) for g in grad_outputs]
            grads = run_rule(node, grad_outputs)
            self.sent[rank] = [as_array(g) for g in grads]
            return grads

        return apply

    def leaf_watched(self, node: AccumulateGrad) -> Callable:
        """A leaf's node does nothing when applied (the engine adds into .grad): note the call."""

        def apply(grad_outputs):
            self.leaf_applied.append(leaf_name(node, self.leaves))
            return []

        return apply

    def grad_changes(self, name: str, before, after) -> int:
        """How many times ``name.grad`` changed during the run (once, in a right loop)."""
        values = [before] + [g[name] for g in self.grads_before] + [after]
        return sum(
            not same_arrays([later], [earlier]) for earlier, later in zip(values, values[1:])
        )

    def note_run(self, rank: int, node: OpNode, grad_outputs) -> None:
        """Count the run; stop a loop that will not stop, or that passes no list or nothing."""
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
        if self.learner and all(g is None for g in grad_outputs):
            raise CheckerStop(
                f"your loop ran {node.name()}'s rule on None: no gradient reached it (every "
                "edge into it carried None). A node that received nothing has nothing to "
                "compute: skip its rule, and let each of its edges count as delivered."
            )
        self.log.append(rank)
        self.recording.append(state.grad_mode.enabled)
        self.grads_before.append({name: as_array(x.grad) for name, x in self.leaves.items()})

    def stop(self) -> None:
        """Take the watch off the nodes (the graph becomes ordinary again)."""
        for node in self.nodes:
            node.__dict__.pop("apply", None)


def nodes_below(root: Tensor) -> list:
    """Every node of ``root``'s backward graph, in creation order."""
    return sorted(walk([edge_of(root)[0]]), key=lambda node: node._seq)


def leaf_name(node: AccumulateGrad, leaves: dict) -> str:
    return next((name for name, x in leaves.items() if x is node.variable), "?")


def as_array(grad) -> np.ndarray | None:
    if grad is None:
        return None
    return np.array(grad.detach().numpy() if isinstance(grad, Tensor) else grad)


# ------------------------------------------------------- recording a loop's pass
def trace_loop(
    backward: Callable[[Tensor], None], build: Callable[[], object], small: int = KEPT_IN_FULL
) -> Trace:
    """Run ``backward(root)`` on a graph ``build()`` makes, and record its pass as a Trace.

    ``build()`` returns the root (or a tuple whose first item is the root); it runs
    inside the recording, so the trace knows the forward ops and the leaves' names. The
    loop's pass is recorded as the engine's is: a ``node_step`` each time the loop runs a
    node's rule (``node.apply``), with what the node received and sent. A loop adds into
    a leaf's ``.grad`` itself, calling nothing a recorder could watch, so a leaf's step is
    recorded when its ``.grad`` is seen to have changed (a new tensor, or new values):
    before the next rule runs, or when the loop returns, with the change as the gradient
    that reached it. Two additions into one leaf with no rule run between them make one
    step. Arrays up to ``small`` elements are kept whole, so a comparison reads values.
    """
    with trace(small) as recorded:
        built = build()
        root = built[0] if isinstance(built, tuple) else built
        if not isinstance(root, Tensor) or not root.requires_grad:
            raise TypeError(
                "trace_loop: build() must return the root, a Tensor that requires grad (or "
                f"a tuple whose first item is the root), not {type(root).__name__}"
            )
        recorder = LoopRecorder(root)
        try:
            backward(root)
        finally:
            recorder.finish()
    return recorded


class LoopRecorder:
    """Publishes a learner's loop's steps as events while it runs on ``root``'s graph.

    Every array in an event is a copy made when the event is published: the loop may
    change its tensors afterwards (``+=`` into a buffer), and the recording must not.
    """

    def __init__(self, root: Tensor) -> None:
        start = edge_of(root)[0]
        self.root = root.uid
        self.nodes = nodes_below(root)
        self.leaves = {n.variable: n for n in self.nodes if isinstance(n, AccumulateGrad)}
        self.seen = {leaf: self.grad_now(leaf) for leaf in self.leaves}
        self.steps = 0
        self.runs: dict = {}
        events.publish(
            events.BackwardStarted(
                roots=(self.root,),
                root_nodes=(start.uid,),
                grad_outputs=(np.ones_like(as_array(root)),),
                create_graph=False,
                retain_graph=False,
            )
        )
        for node in self.nodes:
            if not isinstance(node, AccumulateGrad):
                node.apply = self.recorded(node)  # an instance attribute: only this node

    def recorded(self, node) -> Callable:
        run_rule = type(node).apply

        def apply(grad_outputs):
            self.leaf_steps()
            self.count_run(node, grad_outputs)
            received = tuple(as_array(g) for g in grad_outputs)
            grads = run_rule(node, grad_outputs)
            sent = tuple(as_array(g) for g in grads)
            ids = tuple(g.uid if isinstance(g, Tensor) else None for g in grads)
            self.publish_step(node, received, sent, ids)
            return grads

        return apply

    def count_run(self, node, grad_outputs) -> None:
        if not isinstance(grad_outputs, (list, tuple)):
            raise TypeError(
                f"your loop called {node.name()}.apply with a {type(grad_outputs).__name__}. "
                "Pass a list with one gradient per output of the node: node.apply([grad])."
            )
        self.runs[node] = self.runs.get(node, 0) + 1
        if self.runs[node] > MAX_RUNS:
            raise RuntimeError(
                f"your loop ran {node.name()} more than {MAX_RUNS} times: it does not stop. "
                "Put a node on the ready queue once, when its dependency count reaches zero."
            )

    @staticmethod
    def grad_now(leaf: Tensor) -> tuple:
        """``(the .grad tensor, a copy of its values)``: what a later change is told from."""
        grad = leaf._grad
        return grad, as_array(grad)

    def leaf_steps(self) -> None:
        """A step for each leaf whose ``.grad`` changed since it was last looked at."""
        for leaf, node in self.leaves.items():
            before_grad, before = self.seen[leaf]
            after_grad, after = now = self.grad_now(leaf)
            if after_grad is before_grad and same_arrays([before], [after]):
                continue
            self.seen[leaf] = now
            arrived = after if before is None or after is None else after - before
            events.publish(events.GradAccumulated(leaf.uid, before, arrived, after))
            self.publish_step(node, (arrived,), (), ())

    def publish_step(self, node, received: tuple, sent: tuple, ids: tuple) -> None:
        events.publish(node_step(self.steps, node, received, sent, ids))
        self.steps += 1

    def finish(self) -> None:
        """The loop has returned (or raised): its last leaves' steps, and the pass's end."""
        for node in self.nodes:
            node.__dict__.pop("apply", None)
        self.leaf_steps()
        events.publish(events.BackwardFinished(steps=self.steps, roots=(self.root,)))


# ----------------------------------------------------------------- the check
@dataclass
class Run:
    leaves: dict  # leaf name -> the leaf
    before: dict  # leaf name -> its .grad before backward ran (an array, or None)
    grads: dict  # leaf name -> its .grad after (an array, or None)
    watcher: Watcher


@checker
def check_backward_loop(learner_backward: Callable[[Tensor], None]) -> Passed:
    """Check ``learner_backward(root)``, which must fill ``.grad`` as ``root.backward()`` does.

    It runs on four small graphs. A wrong ``.grad`` raises :class:`ExerciseError` naming
    the leaf, the elements, and the node where it went wrong; the error's picture lights
    that node. Right gradients from a loop that ran a node twice, or ran the rules with
    graph recording on, fail too.
    """
    for graph in GRAPHS:
        expected = run_graph(graph, engine_backward)
        got = run_graph(graph, learner_backward, learner=True)
        check_graph(graph, expected, got)
    return Passed(
        "Your backward loop is right.",
        "On a chain, a fan-out, a broadcasting and a stop-gradient graph it fills every "
        "leaf's .grad exactly as the engine's backward() does (adding to a .grad that "
        "already holds a gradient, leaving alone one that gets none), running each node "
        "once with recording off. You just proved that counting dependencies, running "
        "ready nodes and adding into .grad is the whole backward algorithm.",
    )


def engine_backward(root) -> None:
    """``root.backward()``: the engine calls ``node.apply`` too, so the watcher sees it."""
    root.backward()


def run_graph(graph: TestGraph, backward: Callable, learner: bool = False) -> Run:
    root, leaves = graph.build()
    before = {name: as_array(x.grad) for name, x in leaves.items()}
    watcher = Watcher(root, leaves, learner)
    try:
        with modes_kept():
            backward(root)
    except CheckerStop as stop:
        fail(f"On {graph.name}, {stop}")
    except ExerciseError:  # a rule tried with trying_rule has already said what is wrong
        raise
    except Exception as err:
        if not learner:
            raise
        raise loop_error(err, backward, graph) from None
    finally:
        watcher.stop()
    after = {name: as_array(x.grad) for name, x in leaves.items()}
    return Run(leaves, before, after, watcher)


def loop_error(err: Exception, backward: Callable, graph: TestGraph) -> ExerciseError:
    """The learner's error, on their line; one about None says what is None on this graph."""
    name = getattr(backward, "__name__", "backward")
    found = learner_error(err, backward, f"backward loop {name}")
    if isinstance(found, NotAnswered):
        return stub_called(err, name) or found
    if not about_none(err, graph):
        return found
    hint = none_child_hint(err) or graph.nones
    message = f"On {graph.name}, {found.message[0].lower()}{found.message[1:]} {hint}"
    return ExerciseError(message)


def stub_called(err: Exception, name: str) -> NotAnswered | None:
    """The stub that raised is another function the loop calls (Exercise 1's count)."""
    raised_in = traceback.extract_tb(err.__traceback__)[-1].name
    if raised_in == name:
        return None
    return NotAnswered(f"function {raised_in}, which your backward loop {name} calls,")


def about_none(err: Exception, graph: TestGraph) -> bool:
    """Did the error come from something None: a child, a gradient, a node with no buffer?"""
    if "NoneType" in str(err):
        return True
    missing = err.args[0] if isinstance(err, KeyError) and err.args else ""
    if missing is None:
        return True
    return isinstance(missing, (OpNode, AccumulateGrad)) and missing.name() in graph.nones


def check_graph(graph: TestGraph, expected: Run, got: Run) -> None:
    context = f"On {graph.name}"
    for name in expected.grads:
        finding = compare(f"{name}.grad", expected.grads[name], got.grads[name])
        if finding is not None:
            rank, cause = cause_of(finding, name, expected, got)
            fail(finding.sentences(context, cause), finding, picture=LitGraph(graph, rank))
    ran_twice(graph, got)
    recorded(graph, got)


def ran_twice(graph: TestGraph, got: Run) -> None:
    """Right gradients from a loop that ran a node more than once: say which."""
    watcher = got.watcher
    rank = next((r for r, runs in enumerate(watcher.runs) if runs > 1), None)
    if rank is not None:
        node, runs = watcher.nodes[rank].name(), watcher.runs[rank]
    else:
        changes = {
            name: watcher.grad_changes(name, got.before[name], got.grads[name])
            for name in got.leaves
        }
        name = next((name for name, count in changes.items() if count > 1), None)
        if name is None:
            return
        rank = leaf_rank(name, got)
        node, runs = f"{name}'s AccumulateGrad", changes[name]
    fail(
        f"On {graph.name}, your loop gets the right gradients, but {node} ran {runs} times. "
        "Each node must run once, after all its gradients have arrived and been summed: "
        "that is what the dependency counts are for.",
        picture=LitGraph(graph, rank),
    )


def recorded(graph: TestGraph, got: Run) -> None:
    """Right gradients, but the rules ran with graph recording on: say so."""
    watcher = got.watcher
    if not any(watcher.recording):
        return
    rank = watcher.log[watcher.recording.index(True)]
    node = watcher.nodes[rank]
    marked = [f"{name}.grad" for name, x in got.leaves.items() if records(x.grad)]
    made = ""
    if marked:
        verb = "requires" if len(marked) == 1 else "require"
        made = f" ({' and '.join(marked)} {verb} grad)"
    fail(
        f"On {graph.name}, your loop gets the right gradients, but it ran {node.name()}'s "
        f"rule with graph recording on, so the gradients it made record a graph of their "
        f"own{made}. Run the loop under `with wb.no_grad():`.",
        picture=LitGraph(graph, rank),
    )


def records(grad) -> bool:
    return grad is not None and grad.requires_grad


def leaf_rank(name: str, run: Run) -> int:
    """The rank of ``name``'s AccumulateGrad among the graph's nodes."""
    leaf = run.leaves[name]
    return next(
        r
        for r, node in enumerate(run.watcher.nodes)
        if isinstance(node, AccumulateGrad) and node.variable is leaf
    )


def cause_of(finding: Finding, name: str, expected: Run, got: Run) -> tuple:
    """``(rank of the node to light, a sentence saying where the loop went wrong)``.

    The op nodes are searched in the engine's order, so the first one found is the one
    closest to the loss: the nodes below it only passed its mistake on.
    """
    nodes = got.watcher.nodes
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
            return rank, never_ran(node, rank, got)
        if not same_arrays(got.watcher.received[rank], expected.watcher.received[rank]):
            return rank, received_wrong(rank, expected, got)
    return leaf_cause(finding, name, expected, got)


def never_ran(node: OpNode, rank: int, got: Run) -> str:
    """An op node the loop never ran: say how many of its gradients had been sent to it."""
    parents = edges_into(got.watcher, rank)
    sent = sum(1 for p in parents if got.watcher.runs[p] > 0)
    return (
        f"a node never ran: {len(parents)} edge{'s' if len(parents) > 1 else ''} lead into "
        f"{node.name()} and the nodes above sent {sent} gradient{'s' if sent != 1 else ''} "
        "along them, yet it never ran. It runs once its dependency count (one per edge into "
        "it) reaches zero"
    )


def received_wrong(rank: int, expected: Run, got: Run) -> str:
    """A node that ran once, on a wrong gradient: too early, on a buffer that kept only
    part of its gradients, or on a gradient that is not the one sent along its edge."""
    node = got.watcher.nodes[rank]
    parents = edges_into(got.watcher, rank)
    first_run = got.watcher.log.index(rank)
    delivered = sum(1 for p in parents if p in got.watcher.log[:first_run])
    if delivered < len(parents):
        return (
            f"{node.name()} ran before all its gradients had arrived: {len(parents)} edges "
            f"lead into it (fan-out) and {delivered} had delivered. It must wait until its "
            "dependency count reaches zero, then run once on their sum"
        )
    parts = contributions(expected, rank)
    received = got.watcher.received[rank][0]
    if received is not None and part_of(received, parts):
        return (
            f"{node.name()} ran after all {len(parts)} of its gradients had arrived, yet "
            f"received only part of their sum: a gradient arriving at its buffer replaced "
            "the one there. Add each arriving gradient into the buffer (sum them)"
        )
    return (
        f"the gradient {node.name()} received is not what was sent along the edges into it: "
        "check that each gradient goes into the buffer of the node its own edge leads to "
        "(zip(node.next_functions, grads), slot output_nr)"
    )


def edges_into(watcher: Watcher, rank: int) -> list:
    """The rank of the node at the upper end of each edge into node ``rank``."""
    target = watcher.nodes[rank]
    return [
        r
        for r, node in enumerate(watcher.nodes)
        for child, _ in node.next_functions
        if child is target
    ]


def part_of(received: np.ndarray, parts: list) -> bool:
    """Is ``received`` the sum of some, not all, of ``parts``?"""
    for size in range(1, len(parts)):
        for chosen in combinations(parts, size):
            if np.allclose(received, sum(chosen)):
                return True
    return False


def leaf_cause(finding: Finding, name: str, expected: Run, got: Run) -> tuple:
    """Every op node ran right: the mistake is in adding into ``name.grad``."""
    rank = leaf_rank(name, got)
    before, new = got.before[name], got.grads[name]
    parts = contributions(expected, rank)
    if name in got.watcher.leaf_applied:
        return rank, (
            f"your loop called node.apply on {name}'s AccumulateGrad, which adds nothing: "
            "a leaf's node leaves the adding to the loop. Add its gradient into "
            "node.variable.grad yourself"
        )
    if finding.kind == "missing":
        return rank, (
            f"every node above {name}'s AccumulateGrad ran and sent its gradient, yet none "
            f"reached {name}.grad: take {name}'s AccumulateGrad off the queue once its count "
            "reaches zero, and add its gradient into node.variable.grad"
        )
    if before is not None and new is not None and np.allclose(new, expected.grads[name] - before):
        return rank, (
            f"{name}.grad already held a gradient before this backward: add into it, as "
            "backward() does, rather than replacing it (gradients accumulate)"
        )
    start = 0 if before is None else before
    if new is not None and len(parts) > 1 and part_of(new - start, parts):
        return rank, only_part(name, len(parts), leaf_set_early(name, rank, got))
    if finding.kind == "factor" and finding.details.get("factor") == 2:
        return rank, f"the gradient was added into {name}.grad twice"
    return rank, f"the gradient that reaches {name} differs from what is added into {name}.grad"


def leaf_set_early(name: str, rank: int, got: Run) -> bool:
    """Was ``name.grad`` changed before every node with an edge into its AccumulateGrad ran?"""
    watcher = got.watcher
    parents = edges_into(watcher, rank)
    last_parent = max(watcher.log.index(p) for p in parents)
    changed = [not same_arrays([g[name]], [got.before[name]]) for g in watcher.grads_before]
    return any(changed[: last_parent + 1])


def only_part(name: str, count: int, early: bool) -> str:
    if early:
        return (
            f"{name}.grad holds only part of the {count} gradients that reach {name}: its "
            f"AccumulateGrad ran before all its gradients had arrived. It must wait until its "
            "dependency count reaches zero, then add their sum"
        )
    return (
        f"{name}.grad holds only part of the {count} gradients that reach {name}, though its "
        "AccumulateGrad ran after all of them had arrived: a gradient arriving at its buffer "
        "replaced the one there. Add each arriving gradient into the buffer (sum them)"
    )


def contributions(run: Run, rank: int) -> list:
    """The gradients the engine sent along each edge into node ``rank``."""
    target = run.watcher.nodes[rank]
    parts = []
    for r, node in enumerate(run.watcher.nodes):
        for i, (child, _) in enumerate(node.next_functions):
            if child is target and run.watcher.sent[r] is not None:
                parts.append(run.watcher.sent[r][i])
    return [p for p in parts if p is not None]


def same_arrays(a: list | None, b: list | None) -> bool:
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(
        (x is None and y is None)
        or (x is not None and y is not None and x.shape == y.shape and np.allclose(x, y))
        for x, y in zip(a, b)
    )


# ------------------------------------------------------------------ picture
class LitGraph:
    """The backward graph of a fresh copy of a test graph, with node ``rank`` lit.

    Called, it gives the HTML an error shows under its message: the graph as SVG
    where a Graphviz renderer is installed, else the backward order as text with the
    node marked. :meth:`graph` is the drawing itself: shown in a notebook, it is laid
    out in the browser (no renderer needed), the node lit at the step the engine runs
    it and the nodes before it greyed as done.
    """

    def __init__(self, graph: TestGraph, rank: int) -> None:
        self.test_graph = graph
        self.rank = rank

    def __call__(self) -> str:
        return graph_picture(self.graph, self.text())()

    def built(self) -> tuple:
        """A fresh copy: ``(root, leaves, the lit node)``."""
        root, leaves = self.test_graph.build()
        return root, leaves, nodes_below(root)[self.rank]

    def graph(self):
        from .. import viz

        root, _, lit = self.built()
        order = viz.build_model(root, "backward").order
        return viz.draw(root, kind="backward", step=order.index(lit.uid) + 1)

    def text(self) -> str:
        root, leaves, lit = self.built()
        names = {id(x): name for name, x in leaves.items()}

        def label(node) -> str:
            if isinstance(node, AccumulateGrad):
                return f"AccumulateGrad({names.get(id(node.variable), '?')})"
            return node.name()

        order = backward_order([edge_of(root)[0]])
        marked = [f"[{label(n)} ← here]" if n is lit else label(n) for n in order]
        return "Backward order: " + " → ".join(marked)

    @property
    def name(self) -> str:
        """The lit node's name."""
        return self.built()[2].name()
