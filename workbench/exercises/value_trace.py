"""Record a ``Value``'s backward pass as a Trace, to set beside the engine's (lesson 4).

:func:`trace_values` does for a learner's ``Value`` (micrograd's, or
:class:`~workbench.exercises.value_recorder.ScalarValue`) what
:func:`~workbench.exercises.backward_loop.trace_loop` does for a loop over the engine's
nodes: it records the graph and the pass as the engine publishes its own, so that
``wb.widgets.CompareStepper`` can match the two node by node and find where they part.

A ``Value`` keeps no record of its pass, so the recording is made around it:

- the graph: one ``op_recorded`` per Value made by an op, parents first, named as the
  engine names the same op (``'+'`` is ``AddBackward0``, ``'*'`` ``MulBackward0``,
  ``'tanh'`` ``TanhBackward0``); its edges lead to its parents;
- the leaves: a leaf you name is a weight, whose node is an ``AccumulateGrad`` as in
  the engine; a leaf you do not name is a number (``a * 3`` wraps 3 in a Value), and
  an edge to it is an edge to nothing, as an input that needs no gradient is in the
  engine (a Python number, a tensor without ``requires_grad``). When you name none,
  every leaf is a weight;
- the pass: before ``backward()`` runs, each node's ``_backward`` closure is wrapped, so
  that each run publishes a ``node_step``: the gradient it received (the node's
  ``.grad`` as the closure starts) and what it sent along each edge (how much each
  parent's ``.grad`` changed while it ran). A closure that sets ``.grad`` with ``=``
  sends the difference it made, not what it meant to add. A weight's step is its own
  closure's run (micrograd runs every node's, leaves included), with the gradient that
  reached it in this pass; a weight whose closure never runs gets its step when
  ``backward()`` returns.

Edges are in the order of ``_prev``, as the engine's are in the order of the op's inputs:
keep ``_prev`` a tuple (micrograd's is a set, whose order is not the inputs').

A node that has one parent twice (``a * a``) adds both parts into that parent's
``.grad`` in one closure, which cannot be told apart: it is recorded with one edge to
the parent, carrying their sum, and without an engine op, so that CompareStepper
compares it with the engine's two edges summed.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import count

import numpy as np

from ..core import events
from ..ops.registry import OPS
from ..trace import SMALL_ARRAY, Trace, trace
from .value_recorder import node_on_a_cycle, parents_of, split, walk

# a Value's ``_op`` (lower-cased: micrograd writes "ReLU") -> the engine's op of that name
ENGINE_OPS = {"+": "add", "*": "mul", "tanh": "tanh", "exp": "exp", "relu": "relu"}
LEAF_FORMULA = "x.grad += x̄"  # as the engine's AccumulateGrad says it
VALUE_PARTS = ("data", "grad", "_prev", "_backward", "backward")


def trace_values(build: Callable[[], object], small: int = SMALL_ARRAY) -> Trace:
    """Build a ``Value`` graph with ``build()``, run its ``backward()``, record both.

    ``build()`` returns the root, or ``(root, {name: value})``. Named leaves are the
    weights (``AccumulateGrad`` nodes, shown by their names), other named values name
    the nodes that made them; when names are given, a leaf left unnamed is a number
    and takes no gradient, as in the engine. With no names every leaf is a weight.
    Like ``root.backward()``, this adds into every Value's ``.grad``.
    """
    root, names = split(build())
    missing = [part for part in VALUE_PARTS if not hasattr(root, part)]
    if missing:
        raise TypeError(
            "trace_values: build() must return the root Value (or (root, {name: value})), "
            f"one with {', '.join(VALUE_PARTS)}; it returned a {type(root).__name__}, which "
            f"has no {', '.join(missing)}"
        )
    with trace(small) as recorded:
        recorder = ValueRecorder(root, names)
        try:
            root.backward()
        finally:
            recorder.finish()
    return recorded


def parents_first(root) -> list:
    """Every Value below ``root``, each after all its parents (a depth-first walk)."""
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        node, parents_done = stack.pop()
        if parents_done:
            order.append(node)
        elif id(node) not in seen:
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((parent, False) for parent in reversed(parents_of(node)))
    return order


def engine_op_name(node) -> str:
    """The engine's name for the op that made ``node``: "" where the engine has none."""
    op = str(getattr(node, "_op", ""))
    if op.startswith("**"):  # micrograd's power of a number: "**2"
        return "pow"
    return ENGINE_OPS.get(op.lower(), "")


def grad_of(node) -> float:
    """The Value's ``.grad`` as a float (NaN where it holds no number)."""
    try:
        return float(node.grad)
    except (TypeError, ValueError):
        return float("nan")


def scalar(number: float) -> np.ndarray:
    return np.array(number, dtype=np.float64)


class ValueRecorder:
    """The graph of ``root`` as events, and its closures wrapped to publish each run."""

    def __init__(self, root, names: dict) -> None:
        if node_on_a_cycle(walk(root)) is not None:
            raise ValueError("trace_values: the Values' _prev lead back to a Value: a cycle")
        self.nodes = parents_first(root)
        self.names = {id(value): name for name, value in names.items()}
        ids = count(1)
        self.node_id = {id(node): f"n{next(ids)}" for node in self.nodes}
        self.tensor_id = {id(node): f"t{next(ids)}" for node in self.nodes}
        self.weights = [node for node in self.nodes if self.is_weight(node, bool(names))]
        self.weight_ids = {id(node) for node in self.weights}
        self.start = {id(node): grad_of(node) for node in self.nodes}
        self.stepped: set = set()  # ids of the weights whose step is published
        self.steps = 0
        self.originals: list = []
        for node in self.nodes:
            if parents_of(node):
                events.publish(self.op_recorded(node))
        events.publish(
            events.BackwardStarted(
                roots=(self.tensor_id[id(root)],),
                root_nodes=(self.node_id[id(root)],),
                grad_outputs=(scalar(1.0),),
                create_graph=False,
                retain_graph=False,
            )
        )
        for node in self.nodes:
            if parents_of(node) or id(node) in self.weight_ids:
                self.wrap(node)

    def is_weight(self, node, named: bool) -> bool:
        return not parents_of(node) and (id(node) in self.names or not named)

    # ------------------------------------------------------------ the graph
    def edges(self, node) -> list:
        """The Values a node's gradient goes to, one edge each (a parent twice: once)."""
        parents = parents_of(node)
        return list({id(parent): parent for parent in parents}.values())

    def target(self, parent) -> str | None:
        """The node an edge to ``parent`` leads to: None for a number."""
        if parents_of(parent) or id(parent) in self.weight_ids:
            return self.node_id[id(parent)]
        return None

    def engine_op(self, node):
        """The engine's op for the node, or None (an op the engine has not, a parent twice)."""
        if len(self.edges(node)) < len(parents_of(node)):
            return None
        return OPS.get(engine_op_name(node))

    def node_name(self, node) -> str:
        if not parents_of(node):
            return "AccumulateGrad"
        engine = self.engine_op(node)
        if engine is not None:
            return engine.node_name
        op = engine_op_name(node) or "value"
        return f"{op.capitalize()}Backward"  # no engine op: a custom Function's kind of name

    def op_recorded(self, node) -> events.OpRecorded:
        edges = self.edges(node)
        targets = [self.target(parent) for parent in edges]
        engine = self.engine_op(node)
        return events.OpRecorded(
            op=engine.name if engine else str(getattr(node, "_op", "")),
            output=self.tensor_id[id(node)],
            inputs=tuple(self.tensor_id[id(p)] if t else None for p, t in zip(edges, targets)),
            input_shapes=tuple(() for _ in edges),
            output_shape=(),
            dtype="float64",
            node=self.node_id[id(node)],
            attrs={
                f"input{i}": float(p.data) for i, (p, t) in enumerate(zip(edges, targets)) if not t
            },
            name=self.names.get(id(node)),
            value=scalar(float(node.data)),
            next_nodes=tuple(targets),
            next_names=tuple(self.node_name(p) if t else None for p, t in zip(edges, targets)),
            input_names=tuple(self.names.get(id(p)) if t else None for p, t in zip(edges, targets)),
        )

    # ------------------------------------------------------------ the pass
    def wrap(self, node) -> None:
        original = node._backward
        self.originals.append((node, original))

        def recorded():
            if parents_of(node):
                self.closure_step(node, original)
            else:
                original()
                self.weight_step(node)

        node._backward = recorded

    def received(self, node) -> float:
        """The gradient that reached ``node`` in this pass."""
        return grad_of(node) - self.start[id(node)]

    def closure_step(self, node, closure: Callable) -> None:
        received = self.received(node)
        edges = self.edges(node)
        before = [grad_of(parent) for parent in edges]
        closure()
        sent = [grad_of(parent) - was for parent, was in zip(edges, before)]
        targets = tuple(self.target(parent) for parent in edges)
        engine = self.engine_op(node)
        self.publish_step(
            node,
            op=engine.name if engine else None,
            formula=engine.formula if engine else "",
            grads_in=(scalar(received),),
            grads_out=tuple(scalar(s) if t else None for s, t in zip(sent, targets)),
            next_nodes=targets,
        )

    def weight_step(self, node) -> None:
        received = self.received(node)
        start, now = self.start[id(node)], grad_of(node)
        leaf = self.tensor_id[id(node)]
        events.publish(events.GradAccumulated(leaf, scalar(start), scalar(received), scalar(now)))
        self.stepped.add(id(node))
        self.publish_step(
            node,
            op=None,
            formula=LEAF_FORMULA,
            grads_in=(scalar(received),),
            grads_out=(),
            next_nodes=(),
            leaf=leaf,
        )

    def publish_step(self, node, **fields) -> None:
        """A ``node_step`` for ``node``: ``fields`` are the event's op, formula, grads
        and edges."""
        node_id, name = self.node_id[id(node)], self.node_name(node)
        events.publish(events.NodeStep(index=self.steps, node=node_id, name=name, **fields))
        self.steps += 1

    def finish(self) -> None:
        """The closures back as they were; a step for each weight whose closure never ran
        but whose ``.grad`` changed; the pass's end."""
        for node, original in self.originals:
            node._backward = original
        for node in self.weights:
            if id(node) not in self.stepped and self.received(node) != 0:
                self.weight_step(node)
        root = self.nodes[-1]
        events.publish(events.BackwardFinished(self.steps, (self.tensor_id[id(root)],)))
