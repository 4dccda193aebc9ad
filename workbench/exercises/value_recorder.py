"""Check a learner's scalar ``Value`` (lesson 4): the recording half of autograd, by hand.

A ``Value`` (as in Karpathy's micrograd) is a number that records how it was made: its
parents (``_prev``) and a closure (``_backward``) that sends its ``.grad`` on to them,
*adding* into their ``.grad``. ``backward()`` seeds the root's ``.grad`` with 1.0 and runs
the closures, each node after all the nodes that use it (its consumers).

The check builds small expressions with the learner's class, one idea at a time: one op
with two leaves (``a + b``, ``a * b``, ``tanh(a)``), numbers on either side, a value used
twice, then a chain and a diamond. Every leaf's ``.grad`` is compared with the engine's on
the same expression (scalar float64 tensors). Before ``backward()`` runs, each node's
``_backward`` is wrapped so that the check sees the order the closures run in: a node run
before one of its consumers, twice, or never is named from what was seen, not guessed. The
other mistakes are named where the numbers are exactly theirs: ``=`` for ``+=`` (a value
used twice keeps one path's part), ``1 − y`` for tanh's ``1 − y²``, a product's closure
using its own data instead of the other factor's, the seed left out. Otherwise the message
shows the leaf's grad, yours against the engine's.

:class:`ScalarValue` is the workbench's own ``Value``: the lesson trains with it until the
learner's class is written.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..core.tensor import Tensor
from .guard import checker
from .report import PASSED_ON, ExerciseError, Passed, fail, learner_error

WHAT = "Value class"
DONE = object()  # the end of a node's parents, in a walk
RTOL, ATOL = 1e-9, 1e-12


# ------------------------------------------------------------ the workbench's own Value
class ScalarValue:
    """A number that records its parents and how to send its gradient back to them."""

    def __init__(self, data: float, _parents: tuple = (), _op: str = "") -> None:
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(_parents)
        self._op = _op
        self._backward: Callable[[], None] = lambda: None

    def __repr__(self) -> str:
        return f"ScalarValue(data={self.data:.4g}, grad={self.grad:.4g})"

    def __add__(self, other) -> ScalarValue:
        other = other if isinstance(other, ScalarValue) else ScalarValue(other)
        out = ScalarValue(self.data + other.data, (self, other), "+")

        def _backward() -> None:
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other) -> ScalarValue:
        other = other if isinstance(other, ScalarValue) else ScalarValue(other)
        out = ScalarValue(self.data * other.data, (self, other), "*")

        def _backward() -> None:
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def tanh(self) -> ScalarValue:
        out = ScalarValue(math.tanh(self.data), (self,), "tanh")

        def _backward() -> None:
            self.grad += (1 - out.data**2) * out.grad

        out._backward = _backward
        return out

    def backward(self) -> None:
        """Seed 1.0, then run each node's closure after those of all its consumers."""
        order, visited = [], set()
        stack = [(self, False)]
        while stack:  # a depth-first walk: a node joins the order after all its parents
            node, parents_done = stack.pop()
            if parents_done:
                order.append(node)
            elif node not in visited:
                visited.add(node)
                stack.append((node, True))
                stack.extend((parent, False) for parent in node._prev)
        self.grad = 1.0
        for node in reversed(order):
            node._backward()

    def __radd__(self, other) -> ScalarValue:
        return self + other

    def __rmul__(self, other) -> ScalarValue:
        return self * other

    def __neg__(self) -> ScalarValue:
        return self * -1

    def __sub__(self, other) -> ScalarValue:
        return self + (-other)


# ------------------------------------------------------------------ the expressions
@dataclass
class Probe:
    """One expression: ``build(*leaves)`` works on Values and on tensors alike and returns
    the root, or ``(root, {name: node})`` to name the nodes in between."""

    text: str
    names: str  # the leaves' names, in build's order
    numbers: tuple
    build: Callable
    used_twice: dict = field(default_factory=dict)  # leaf → (op, each path's part)
    diagnose: Callable | None = None  # (numbers, got, expected) → a sentence, or None


def tanh_diagnosis(numbers, got, expected) -> str | None:
    y = math.tanh(numbers[0])
    if close(got["a"], 1 - y):
        return (
            f"a.grad is {got['a']:.6g} = 1 − y, with y = tanh(a) = {y:.6g}; the engine's is "
            f"{expected['a']:.6g} = 1 − y². The local derivative of tanh is 1 − y², "
            "y squared: out.data ** 2."
        )
    if close(got["a"], 1 - numbers[0] ** 2):
        return (
            f"a.grad is {got['a']:.6g} = 1 − a², from the input a; the engine's is "
            f"{expected['a']:.6g} = 1 − y², from the output y = tanh(a) (out.data)."
        )
    return None


def mul_diagnosis(numbers, got, expected) -> str | None:
    a, b = numbers
    if close(got["a"], a) and close(got["b"], b):
        return (
            f"a.grad is {got['a']:.6g} and b.grad {got['b']:.6g}: each factor got its own "
            f"data. d(a·b)/da is the other factor, b = {b:g}, and d(a·b)/db is a = {a:g}: in "
            "the closure, self.grad adds other.data * out.grad, and other.grad adds "
            "self.data * out.grad."
        )
    return None


def diamond(a, b):
    h = a * b
    t = h.tanh()
    return (t + h) * h, {"h": h, "t": t}


def chain(a, b, c):
    u = a * b
    t = u.tanh()
    return (t * c + 1).tanh(), {"u": u, "t": t}


def tanh_plus_a(a):
    t = a.tanh()
    return t + a, {"tanh(a)": t}


def neuron(x1, w1, x2, w2, b):
    return (x1 * w1 + x2 * w2 + b).tanh()


PROBES = [
    Probe("a + b", "ab", (2.0, -3.0), lambda a, b: a + b),
    Probe("a * b", "ab", (2.0, -3.0), lambda a, b: a * b, diagnose=mul_diagnosis),
    Probe("tanh(a)", "a", (0.5,), lambda a: a.tanh(), diagnose=tanh_diagnosis),
    Probe("a + 2 (a number on the right)", "a", (0.5,), lambda a: a + 2),
    Probe("2 + a (a number on the left)", "a", (0.5,), lambda a: 2 + a),
    Probe("a * 3 (a number on the right)", "a", (0.5,), lambda a: a * 3),
    Probe("3 * a (a number on the left)", "a", (0.5,), lambda a: 3 * a),
    Probe("a + a", "a", (0.5,), lambda a: a + a, used_twice={"a": ("+", (1.0, 1.0))}),
    Probe("a * a", "a", (0.5,), lambda a: a * a, used_twice={"a": ("*", (0.5, 0.5))}),
    Probe(
        "tanh(a) + a",
        "a",
        (0.5,),
        tanh_plus_a,
        used_twice={"a": ("tanh", (1 - math.tanh(0.5) ** 2, 1.0))},
    ),
    Probe("a - b", "ab", (2.0, -3.0), lambda a, b: a - b),
    Probe("tanh(tanh(a * b) * c + 1) with u = a * b, t = tanh(u)", "abc", (0.5, -1.5, 2.0), chain),
    Probe("(t + h) * h with h = a * b, t = tanh(h)", "ab", (0.7, -0.4), diamond),
    Probe(
        "tanh(x1·w1 + x2·w2 + b), a neuron",
        ("x1", "w1", "x2", "w2", "b"),
        (2.0, -3.0, 0.0, 1.0, 6.8813735870195432),
        neuron,
    ),
]


# ------------------------------------------------------------------ the check
@checker
def check_value_recorder(Value: Callable) -> Passed:
    """``Value`` must record +, *, tanh and run backward as the engine does."""
    if not callable(Value):
        fail(
            f"Give the check your class Value itself (Value, not Value(1.0)), not a {kind(Value)}."
        )
    for probe in PROBES:
        check_probe(Value, probe)
    return Passed(
        "Your Value records its graph and runs it back as the engine does.",
        f"On {len(PROBES)} expressions — one op at a time, numbers on either side, a value "
        "used twice, a chain, a diamond and a neuron — every leaf's grad equals the engine's: "
        "each closure adds its part into its parents' .grad, and backward runs each node "
        "after all the nodes that use it.",
    )


def check_probe(Value: Callable, probe: Probe) -> None:
    """Build ``probe`` with the learner's Value and with the engine; compare every grad."""
    leaves = [make_leaf(Value, number, probe) for number in probe.numbers]
    root, named = learners_call(lambda: split(probe.build(*leaves)), Value, probe)
    truth_root, truth_leaves = engine_result(probe)
    data = number_of(getattr(root, "data", None), "the data of the Value it returns", probe)
    if not close(data, truth_root):
        fail(
            f"On {probe.text}, your Value's data is {data:.6g}; the engine's is "
            f"{truth_root:.6g}. Compute the forward value first: out's data is the op on "
            "the parents' data."
        )
    names = node_names(probe, leaves, named, root)
    graph = walk(root)
    missing = [leaf for leaf in leaves if id(leaf) not in graph]
    if missing:
        fail(
            f"On {probe.text}, {names[id(missing[0])]} is not among the parents (_prev) of "
            "the Value it made, or of theirs: record every input as a parent, so that "
            "backward can reach it."
        )
    looped = node_on_a_cycle(graph)
    if looped is not None:
        fail(
            f"On {probe.text}, the parents (_prev) of {names[id(looped)]} lead back to it: "
            "a Value is made from Values that existed before it, so its graph has no cycle. "
            "Record the op's inputs as its parents, and nothing else."
        )
    runs = watch_closures(graph)
    learners_call(lambda: root.backward(), Value, probe)
    seed = number_of(getattr(root, "grad", None), "the grad of the root", probe)
    if seed == 0:
        fail(
            f"On {probe.text}, the root's grad is still 0 after backward(): the seed is "
            "missing. Every gradient starts from dL/dL = 1.0: set self.grad = 1.0 before the "
            "closures run."
        )
    order_mistake(probe, graph, runs, names)
    got = {
        name: number_of(leaf.grad, f"{name}.grad", probe)
        for name, leaf in zip(names_of(probe), leaves)
    }
    expected = dict(zip(names_of(probe), truth_leaves))
    wrong = [name for name in got if not close(got[name], expected[name])]
    if not wrong:
        return
    if not close(seed, 1.0):
        fail(
            f"On {probe.text}, the root's grad is {seed:.6g} after backward(): backward "
            "starts from dL/dL = 1.0 — set it to 1.0, not to anything else."
        )
    said = probe.diagnose(probe.numbers, got, expected) if probe.diagnose else None
    said = said or assigned_not_added(probe, got, expected)
    name = wrong[0]
    if said is None:
        said = (
            f"{name}.grad is {got[name]:.6g}; the engine's is {expected[name]:.6g} "
            f"(every leaf, yours: {shown(got)}; the engine's: {shown(expected)})."
        )
    fail(f"On {probe.text}, {said}")


def assigned_not_added(probe: Probe, got: dict, expected: dict) -> str | None:
    """A leaf used twice holds one path's part alone: a closure set .grad with =."""
    for name, (op, parts) in probe.used_twice.items():
        if any(close(got[name], part) for part in parts):
            where = "tanh's closure" if op == "tanh" else f"the closure of {op}"
            return (
                f"{name} is used twice, so {name}.grad must be the sum of what both uses send "
                f"back: {' + '.join(f'{p:.6g}' for p in parts)} = {expected[name]:.6g}. Yours "
                f"is {got[name]:.6g}, one use's part alone: {where} sets its parent's .grad "
                "with = and so replaces what the other use sent. Add into it with +=."
            )
    return None


def order_mistake(probe: Probe, graph: dict, runs: list, names: dict) -> None:
    """Fail if the closures, as they were seen to run, ran twice, never, or too early."""
    if not runs:
        return  # the closures were not called through ._backward: the values judge alone
    inner = [node for node in graph.values() if parents_of(node)]
    counts = {id(node): 0 for node in inner}
    for node in runs:
        counts[id(node)] = counts.get(id(node), 0) + 1
    for node in inner:
        if counts[id(node)] > 1:
            fail(
                f"On {probe.text}, the closure of {names[id(node)]} ran {counts[id(node)]} "
                f"times, so what it sends reached its parents {counts[id(node)]} times: a "
                "node that two others use appears more than once in your order. Add each "
                "node to the order once (keep a set of the nodes already visited)."
            )
        if counts[id(node)] == 0:
            fail(
                f"On {probe.text}, the closure of {names[id(node)]} never ran: your order "
                "missed it. Walk from the root through every node's _prev."
            )
    position = {id(node): step for step, node in enumerate(runs)}
    consumers = consumers_of(graph)
    for node in runs:
        later = [c for c in consumers.get(id(node), []) if position[id(c)] > position[id(node)]]
        if later:
            fail(
                f"On {probe.text}, the closure of {names[id(node)]} ran before that of "
                f"{names[id(later[0])]}, which uses it: it sent its .grad on before all of it "
                "had arrived. Run a node only after all the nodes that use it: reverse a "
                "topological order (a depth-first walk that adds a node after its parents)."
            )


# ------------------------------------------------------------------ the learner's graph
def walk(root) -> dict:
    """Every node reachable from ``root`` through ``_prev``, by id (a cycle ends the walk)."""
    found, stack = {}, [root]
    while stack:
        node = stack.pop()
        if id(node) in found:
            continue
        found[id(node)] = node
        stack.extend(parents_of(node))
    return found


def node_on_a_cycle(graph: dict):
    """A node from which ``_prev`` leads back to itself, or None (a depth-first walk that
    keeps the nodes on its current path)."""
    done: set = set()
    for first in graph.values():
        if id(first) in done:
            continue
        path, stack = set(), [(first, iter(parents_of(first)))]
        path.add(id(first))
        while stack:
            node, parents = stack[-1]
            parent = next(parents, DONE)
            if parent is DONE:
                stack.pop()
                path.discard(id(node))
                done.add(id(node))
            elif id(parent) in path:
                return parent
            elif id(parent) not in done:
                path.add(id(parent))
                stack.append((parent, iter(parents_of(parent))))
    return None


def parents_of(node) -> list:
    parents = getattr(node, "_prev", ())
    try:
        return list(parents)
    except TypeError:
        fail(f"A Value's _prev must hold its parents (a tuple or a set), not a {kind(parents)}.")


def consumers_of(graph: dict) -> dict:
    consumers: dict = {}
    for node in graph.values():
        for parent in {id(p): p for p in parents_of(node)}:
            consumers.setdefault(parent, []).append(node)
    return consumers


def watch_closures(graph: dict) -> list:
    """Wrap each inner node's ``_backward`` so that each run is seen, in order."""
    runs: list = []
    for node in graph.values():
        original = getattr(node, "_backward", None)
        if not parents_of(node) or not callable(original):
            continue

        def watched(node=node, original=original):
            runs.append(node)
            return original()

        try:
            node._backward = watched
        except (AttributeError, TypeError):
            return []
    return runs


def node_names(probe: Probe, leaves: list, named: dict, root) -> dict:
    """Words for each node: the leaves' and the probe's names, else 'the root'/its data."""
    names = {id(leaf): name for name, leaf in zip(names_of(probe), leaves)}
    names.update({id(node): name for name, node in named.items() if node is not None})
    names.setdefault(id(root), "the root")
    for node in walk(root).values():
        if id(node) not in names:
            names[id(node)] = f"the node of data {float_or_nan(node):.4g}"
    return names


def float_or_nan(node) -> float:
    try:
        return float(node.data)
    except Exception:
        return math.nan


# ------------------------------------------------------------------ running their code
def make_leaf(Value: Callable, number: float, probe: Probe):
    return learners_call(lambda: Value(number), Value, probe)


def learners_call(step: Callable, Value: Callable, probe: Probe):
    """``step()``, the learner's code; an error in it names their line, never the checker's."""
    try:
        return step()
    except PASSED_ON:
        raise
    except Exception as err:
        found = learner_error(err, learners_home(Value), WHAT, f"On {probe.text}")
        hint = unwrapped_number_hint(err)
        if hint:
            raise ExerciseError(f"{found.message} {hint}", kind=found.kind) from None
        raise found from None


def learners_home(Value: Callable) -> Callable:
    """A function in the learner's file, so that their line is found in a traceback."""
    method = getattr(Value, "__add__", None)
    return method if hasattr(method, "__code__") else Value


def unwrapped_number_hint(err: Exception) -> str:
    text = str(err)
    if isinstance(err, AttributeError) and any(f"'{t}' object" in text for t in ("int", "float")):
        return (
            "A number met a Value: wrap it first, `other = other if isinstance(other, Value) "
            "else Value(other)`."
        )
    return ""


def split(built) -> tuple:
    if isinstance(built, tuple) and len(built) == 2 and isinstance(built[1], dict):
        return built
    return built, {}


def number_of(value, what: str, probe: Probe) -> float:
    """``value`` as a float, or a sentence saying why it is not a number."""
    if isinstance(value, (bool, np.bool_)) or value is None:
        fail(f"On {probe.text}, {what} is {value!r}, not a number.")
    try:
        number = float(value)
    except Exception:
        fail(f"On {probe.text}, {what} is a {kind(value)}, not a number.")
    return number


# ------------------------------------------------------------------ the engine's answer
def engine_result(probe: Probe) -> tuple[float, list[float]]:
    """The root's value and every leaf's grad, from the engine on float64 scalars."""
    leaves = [Tensor(np.asarray(n, dtype=np.float64), requires_grad=True) for n in probe.numbers]
    root, _ = split(probe.build(*leaves))
    root.backward()
    return root.item(), [leaf.grad.item() for leaf in leaves]


# ------------------------------------------------------------------ small words
def names_of(probe: Probe) -> list[str]:
    return list(probe.names) if isinstance(probe.names, str) else list(probe.names)


def close(a: float, b: float) -> bool:
    return bool(np.isclose(a, b, rtol=RTOL, atol=ATOL))


def shown(grads: dict) -> str:
    return ", ".join(f"{name} {value:.6g}" for name, value in grads.items())


def kind(value) -> str:
    return type(value).__name__
