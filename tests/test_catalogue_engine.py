"""Misconception catalogues of the engine exercises: lessons 3 and 4.

Each exercise's check is the one its lesson calls. Every mistake below is one learners
make; the check must name it (``says``), and never with the cause it was once given
(``never``). Every right answer, written another way, must pass.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, deque

import numpy as np
from catalogue import Catalogue, Mistake, Right

import workbench as wb
from workbench.autograd import reference
from workbench.exercises.backward_loop import check_backward_loop
from workbench.exercises.dependencies import check_dependency_counts
from workbench.exercises.in_place import check_fixed_loss
from workbench.exercises.predictions import check_step_order, check_stop_gradient, check_x_grad
from workbench.exercises.value_recorder import ScalarValue, check_value_recorder
from workbench.record.graph import AccumulateGrad, edge_of

ADD, SUM, MUL, TANH, ACC = (
    "AddBackward0",
    "SumBackward0",
    "MulBackward0",
    "TanhBackward0",
    "AccumulateGrad",
)


def answer(value):
    """A learner's function that returns ``value``."""
    return lambda: value


# ------------------------------------------------------------------ 03-order
ORDER = Catalogue(
    exercise="03-order",
    check=check_step_order,
    mistakes=[
        Mistake(
            "the leaf's AccumulateGrad placed late (the old 'latest created' rule)",
            answer([ADD, SUM, MUL, SUM, MUL, TANH, ACC, ACC]),
            says=["At step 6 yours runs TanhBackward0", "A leaf's AccumulateGrad runs as soon"],
            never=["not ready"],
        ),
        Mistake(
            "the two sums swapped: h * w's branch first",
            answer([ADD, SUM, MUL, ACC, SUM, MUL, TANH, ACC]),
            says=["At step 2 yours runs SumBackward0 (the sum of h * w)", "created last"],
            never=["Everything before it is right", "not ready"],
        ),
        Mistake(
            "both sums, then both muls (breadth first)",
            answer([ADD, SUM, SUM, MUL, MUL, ACC, TANH, ACC]),
            says=["the engine MulBackward0 (the product h * h)", "created last"],
        ),
        Mistake(
            "tanh run once h * h has sent its gradients (depth first)",
            answer([ADD, SUM, MUL, TANH, ACC, SUM, MUL, ACC]),
            says=["at step 4 you run TanhBackward0, but it is not ready then", "3 edges"],
        ),
        Mistake(
            "a node listed twice",
            answer([ADD, SUM, MUL, SUM, MUL, ACC, TANH, ACC, ACC]),
            says=["lists AccumulateGrad once more", "each node runs once"],
        ),
        Mistake(
            "x's AccumulateGrad left out",
            answer([ADD, SUM, MUL, SUM, MUL, ACC, TANH]),
            says=["stops after step 7", "still to run, AccumulateGrad (x's)"],
        ),
        Mistake(
            "the order of the forward pass",
            answer([TANH, ACC, MUL, ACC, SUM, MUL, SUM, ADD]),
            says=["the first node is AddBackward0"],
        ),
        Mistake(
            "a name with a typo",
            answer([ADD, "SumBackward", MUL]),
            says=["'SumBackward', is no node of this graph"],
        ),
        Mistake("one string, not a list", answer(ADD), says=["as a list of names"]),
    ],
    rights=[
        Right("the solution's list", answer([ADD, SUM, MUL, SUM, MUL, ACC, TANH, ACC])),
        Right("a tuple", answer((ADD, SUM, MUL, SUM, MUL, ACC, TANH, ACC))),
        Right("built from the two branches", answer([ADD] + [SUM, MUL] * 2 + [ACC, TANH, ACC])),
    ],
)


# ------------------------------------------------------------------ 03-x-grad
X = np.array([0.5, -1.0, 2.0])
W = np.array([1.5, -0.5, 0.25])
H = np.tanh(X)

X_GRAD = Catalogue(
    exercise="03-x-grad",
    check=check_x_grad,
    mistakes=[
        Mistake(
            "h's uses not summed: only h * w",
            answer(W * (1 - H**2)),
            says=["only the gradient of h * w"],
            kind="uses_not_summed",
        ),
        Mistake(
            "h's uses not summed: only h * h",
            answer(2 * H * (1 - H**2)),
            says=["only the gradient of h * h"],
            kind="uses_not_summed",
        ),
        Mistake(
            "h * h counted as one use",
            answer((W + H) * (1 - H**2)),
            says=["h * h once (w + h)"],
            kind="uses_not_summed",
        ),
        Mistake(
            "tanh's slope forgotten",
            answer(W + 2 * H),
            says=["That is h̄ = w + 2h", "multiplies it by its slope"],
            kind="slope_missing",
        ),
        Mistake(
            "the input used where tanh's output belongs (slope)",
            answer((W + 2 * H) * (1 - X**2)),
            says=["not 1 − x²"],
            kind="input_for_output",
        ),
        Mistake(
            "the input used where tanh's output belongs (h * h)",
            answer((W + 2 * X) * (1 - H**2)),
            says=["not w + 2x"],
            kind="input_for_output",
        ),
        Mistake(
            "a sign",
            answer((W + 2 * H) * (H**2 - 1)),
            says=["has the wrong sign"],
            kind="sign",
        ),
        Mistake(
            "backward run twice: the gradient doubled",
            answer(2 * (W + 2 * H) * (1 - H**2)),
            says=["2 times the expected value"],
            kind="factor",
        ),
        Mistake(
            "x.grad after step 7 (None)",
            answer(None),
            says=["is None, but a gradient was expected"],
            kind="missing",
        ),
        Mistake(
            "a slope of 1 − h",
            answer((W + 2 * H) * (1 - H)),
            says=["wrong at", "was expected"],
            kind="elements",
        ),
    ],
    rights=[
        Right("h̄ times the slope", answer((W + 2 * H) * (1 - H**2))),
        Right("use by use", answer(W * (1 - H**2) + 2 * H * (1 - H**2))),
        Right("with cosh", answer((W + 2 * np.tanh(X)) / np.cosh(X) ** 2)),
        Right(
            "a tensor from wb ops",
            answer(wb.tensor(W + 2 * H) * (1 - wb.tanh(wb.tensor(X)) ** 2)),
        ),
    ],
)


# ------------------------------------------------------------------ 03-stop-gradient
SCALE = X.sum()

STOP = Catalogue(
    exercise="03-stop-gradient",
    check=check_stop_gradient,
    mistakes=[
        Mistake(
            ".detach() ignored",
            answer(2 * X + SCALE),
            says=["without .detach()"],
            kind="detach_ignored",
        ),
        Mistake(
            "no_grad() ignored",
            answer(X + 2 * SCALE),
            says=["outside no_grad()"],
            kind="no_grad_ignored",
        ),
        Mistake(
            "both stops ignored",
            answer(2 * X + 2 * SCALE),
            says=["with neither stop"],
            kind="stops_ignored",
            never=["look for a 2"],
        ),
        Mistake(
            "the scale term left out (a constant taken for no gradient)",
            answer(X),
            says=["leaves out (scale * x).sum()"],
            kind="term_left_out",
        ),
        Mistake(
            ".detach() taken to stop the whole product",
            answer(np.full(3, SCALE)),
            says=["leaves out (x * x.detach()).sum()", "of its own factor only"],
            kind="term_left_out",
        ),
        Mistake(
            "another slip",
            answer(X * SCALE),
            says=["wrong at all 3 elements"],
            kind="elements",
        ),
    ],
    rights=[
        Right("x plus the sum", answer(X + X.sum())),
        Right("as a tensor", answer(wb.tensor(X) + float(np.sum(X)))),
        Right("a list", answer(list(X + SCALE))),
    ],
)


# ------------------------------------------------------------------ 03-in-place
def unchanged(x):
    y = wb.sigmoid(x)
    y.add_(1)
    return (y * y).sum()


def under_no_grad(x):
    y = wb.sigmoid(x)
    with wb.no_grad():
        y.add_(1)
    return (y * y).sum()


def through_data(x):
    y = wb.sigmoid(x)
    y.data.add_(1)
    return (y * y).sum()


def detached(x):
    y = wb.sigmoid(x).detach()
    y.add_(1)
    return (y * y).sum()


def one_factor_detached(x):
    y = wb.sigmoid(x) + 1
    return (y * y.detach()).sum()


def plus_one_forgotten(x):
    y = wb.sigmoid(x)
    return (y * y).sum()


def runs_backward_itself(x):
    y = wb.sigmoid(x) + 1
    loss = (y * y).sum()
    loss.backward()
    return loss


def not_summed(x):
    y = wb.sigmoid(x) + 1
    return y * y


def out_of_place(x):
    y = wb.sigmoid(x) + 1
    return (y * y).sum()


def on_a_clone(x):
    y = wb.sigmoid(x).clone()
    y.add_(1)
    return (y * y).sum()


def as_a_power(x):
    return ((1 + x.sigmoid()) ** 2).sum()


IN_PLACE = Catalogue(
    exercise="03-in-place",
    check=check_fixed_loss,
    mistakes=[
        Mistake("left as it was", unchanged, says=["still meets the in-place error"]),
        Mistake(
            "the in-place change moved under no_grad()",
            under_no_grad,
            says=["still meets the in-place error", "under no_grad() too"],
        ),
        Mistake(
            "the change hidden from the version counter (.data)",
            through_data,
            says=["behind the version counter's back (.data)"],
            kind="hidden_change",
        ),
        Mistake("sigmoid's output detached", detached, says=["no graph back to x"]),
        Mistake(
            "one factor of y * y detached",
            one_factor_detached,
            says=["with one factor detached"],
            kind="path_cut",
            never=["look for a 2"],
        ),
        Mistake("the + 1 forgotten", plus_one_forgotten, says=["keep the same value"]),
        Mistake(
            "backward run twice (once inside)", runs_backward_itself, says=["backward ran twice"]
        ),
        Mistake("not summed", not_summed, says=["sum it to one number"]),
        Mistake("a float", lambda x: 7.78, says=["returns a float"]),
    ],
    rights=[
        Right("out of place", out_of_place),
        Right("in place on a clone", on_a_clone),
        Right("as a power", as_a_power),
    ],
)


# ------------------------------------------------------------------ 04-dependencies
def counted(start, child_key=lambda child: child, walk_again=False, skip_none=True):
    """A learner's count: one flag or key function per mistake."""
    counts, stack = {}, [start]
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None and skip_none:
                continue
            first = child_key(child) not in counts
            counts[child_key(child)] = counts.get(child_key(child), 0) + 1
            if child is not None and (first or walk_again):
                stack.append(child)
    return counts


def once_per_node(start):
    counts, stack = {}, [start]
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None and child not in counts:
                counts[child] = 1
                stack.append(child)
    return counts


def once_per_parent(start):
    counts, stack, seen = {}, [start], {start}
    while stack:
        node = stack.pop()
        for child in {c for c, _ in node.next_functions if c is not None}:
            counts[child] = counts.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return counts


def none_followed(start):
    counts, stack = {}, [start]
    while stack:
        for child, _ in stack.pop().next_functions:
            if child not in counts:
                counts[child] = 0
                stack.append(child)
            counts[child] += 1
    return counts


def start_included(start):
    counts = counted(start)
    counts[start] = 0
    return counts


def recursive(start):
    counts = {}

    def visit(node):
        for child, _ in node.next_functions:
            if child is not None:
                counts[child] = counts.get(child, 0) + 1
                if counts[child] == 1:
                    visit(child)

    visit(start)
    return counts


def breadth_first(start):
    counts, queue, seen = Counter(), deque([start]), {start}
    while queue:
        for child, _ in queue.popleft().next_functions:
            if child is None:
                continue
            counts[child] += 1
            if child not in seen:
                seen.add(child)
                queue.append(child)
    return dict(counts)


DEPENDENCIES = Catalogue(
    exercise="04-dependencies",
    check=check_dependency_counts,
    mistakes=[
        Mistake(
            "nodes counted instead of edges",
            once_per_node,
            says=["gives every node 1", "count every edge, not every node"],
        ),
        Mistake(
            "a child counted once per parent",
            once_per_parent,
            says=["once per node above it, not once per edge", "has 2 edges into"],
        ),
        Mistake(
            "below a node walked every time it is met",
            lambda start: counted(start, walk_again=True),
            says=["walk below a node only the first time you meet it"],
        ),
        Mistake(
            "None children counted",
            lambda start: counted(start, skip_none=False),
            says=["an entry for None", "Skip such an edge"],
        ),
        Mistake(
            "None children followed",
            none_followed,
            says=["'NoneType' object has no attribute 'next_functions'", "Skip such an edge"],
        ),
        Mistake("the start node counted", start_included, says=["an entry for the start node"]),
        Mistake(
            "nodes keyed by name",
            lambda start: counted(start, child_key=lambda child: child.name()),
            says=["keys of type str"],
        ),
        Mistake("a list of pairs", lambda start: list(counted(start).items()), says=["as a dict"]),
    ],
    rights=[
        Right("a stack, as the reference", counted),
        Right("recursion", recursive),
        Right("breadth first with a Counter", breadth_first),
    ],
)


# ------------------------------------------------------------------ 04-backward-loop
def loop(
    add="add",
    buffer="sum",
    push_when="count is zero",
    skip_none=True,
    recording=False,
    key=lambda node: node._order,
    leaf_by_apply=False,
    skip_none_child=True,
):
    """A backward loop as a learner writes it: each argument puts in one mistake, or
    writes a right part another way."""

    def backward(root):
        start, output_nr = edge_of(root)
        counts = counted(start)
        buffers = {start: [None] * start.num_outputs}
        buffers[start][output_nr] = wb.ones_like(root)
        ready = [(key(start), id(start), start)]
        with wb.enable_grad() if recording else wb.no_grad():
            while ready:
                *_, node = heapq.heappop(ready)
                grads = buffers.pop(node, None)
                if grads is None and skip_none:
                    grads_out = [None] * len(node.next_functions)
                elif isinstance(node, AccumulateGrad) and not leaf_by_apply:
                    add_into_grad(node.variable, grads[0], add)
                    continue
                else:
                    grads_out = node.apply(grads)
                for (child, nr), grad in zip(node.next_functions, grads_out):
                    if child is None and skip_none_child:
                        continue
                    if grad is not None or not skip_none:
                        slots = buffers.setdefault(child, [None] * child.num_outputs)
                        summed = buffer == "sum" and slots[nr] is not None
                        slots[nr] = slots[nr] + grad if summed else grad
                    counts[child] -= 1
                    if counts[child] == 0 or push_when == "every gradient":
                        heapq.heappush(ready, (key(child), id(child), child))

    return backward


def add_into_grad(leaf, grad, how="add"):
    if how == "replace":
        leaf.grad = grad
    elif how == "in place":
        if leaf.grad is None:
            leaf.grad = grad.clone()
        else:
            leaf.grad += grad
    else:
        leaf.grad = grad.clone() if leaf.grad is None else leaf.grad + grad
        if how == "twice":
            leaf.grad = leaf.grad + grad


def pushed_on_first_gradient(root):
    """A node joins the queue when its first gradient arrives, and runs on what is there."""
    start, _ = edge_of(root)
    buffers, queued = {start: [wb.ones_like(root)]}, {start}
    ready = [(start._order, start)]
    with wb.no_grad():
        while ready:
            _, node = heapq.heappop(ready)
            grads = buffers.pop(node, None)
            if grads is None:
                continue
            if isinstance(node, AccumulateGrad):
                add_into_grad(node.variable, grads[0])
                continue
            for (child, nr), grad in zip(node.next_functions, node.apply(grads)):
                if child is None or grad is None:
                    continue
                slots = buffers.setdefault(child, [None])
                slots[nr] = grad if slots[nr] is None else slots[nr] + grad
                if child not in queued:
                    queued.add(child)
                    heapq.heappush(ready, (child._order, child))


def depth_first_with_a_visited_set(root):
    """Runs a node as soon as one gradient reaches it, and never again."""
    buffers = {root.grad_fn: wb.ones_like(root)}
    stack, visited = [root.grad_fn], set()
    with wb.no_grad():
        while stack:
            node = stack.pop()
            if node in visited:
                continue
            visited.add(node)
            grad = buffers.pop(node)
            if isinstance(node, AccumulateGrad):
                add_into_grad(node.variable, grad)
                continue
            for (child, _), g in zip(node.next_functions, node.apply([grad])):
                if child is not None and g is not None:
                    buffers[child] = g if child not in buffers else buffers[child] + g
                    stack.append(child)


def impatient(root):
    """Sends each gradient on as soon as it is made: right values, nodes run many times."""
    queue = [(root.grad_fn, [wb.ones_like(root)])]
    with wb.no_grad():
        while queue:
            node, grads = queue.pop()
            if isinstance(node, AccumulateGrad):
                add_into_grad(node.variable, grads[0])
                continue
            for (child, _), grad in zip(node.next_functions, node.apply(grads)):
                if child is not None and grad is not None:
                    queue.append((child, [grad]))


def backward_twice(root):
    loop()(root)
    loop()(root)


def buffer_popped_without_a_default(root):
    """Takes a node's buffer with buffers.pop(node): a node no gradient reached has none."""
    start, output_nr = edge_of(root)
    counts = counted(start)
    buffers = {start: [wb.ones_like(root)]}
    ready = [(start._order, start)]
    with wb.no_grad():
        while ready:
            _, node = heapq.heappop(ready)
            grads = buffers.pop(node)
            if isinstance(node, AccumulateGrad):
                add_into_grad(node.variable, grads[0])
                continue
            for (child, nr), grad in zip(node.next_functions, node.apply(grads)):
                if child is None:
                    continue
                if grad is not None:
                    slots = buffers.setdefault(child, [None])
                    slots[nr] = grad if slots[nr] is None else slots[nr] + grad
                counts[child] -= 1
                if counts[child] == 0:
                    heapq.heappush(ready, (child._order, child))


def first_in_first_out(root):
    """A plain queue instead of the heap: another order that waits for every gradient."""
    start, output_nr = edge_of(root)
    counts, buffers = counted(start), {start: [wb.ones_like(root)]}
    queue = deque([start])
    with wb.no_grad():
        while queue:
            node = queue.popleft()
            grads = buffers.pop(node, None)
            if grads is None:
                grads_out = [None] * len(node.next_functions)
            elif isinstance(node, AccumulateGrad):
                add_into_grad(node.variable, grads[0])
                continue
            else:
                grads_out = node.apply(grads)
            for (child, nr), grad in zip(node.next_functions, grads_out):
                if child is None:
                    continue
                if grad is not None:
                    slots = buffers.setdefault(child, [None] * child.num_outputs)
                    slots[nr] = grad if slots[nr] is None else slots[nr] + grad
                counts[child] -= 1
                if counts[child] == 0:
                    queue.append(child)


LOOP = Catalogue(
    exercise="04-backward-loop",
    check=check_backward_loop,
    mistakes=[
        Mistake(
            "= instead of += into .grad (a leaf's grad replaced)",
            loop(add="replace"),
            says=["x.grad already held a gradient before this backward: add into it"],
        ),
        Mistake(
            "a buffer overwritten instead of summed (fan-out)",
            loop(buffer="overwrite"),
            says=["TanhBackward0 ran after all 3 of its gradients had arrived", "(sum them)"],
            never=["ran before all its gradients had arrived"],
        ),
        Mistake(
            "a node pushed when its first gradient arrives",
            pushed_on_first_gradient,
            says=["b.grad holds only part of the 2 gradients", "ran before all its gradients"],
            never=["replaced the one there"],
        ),
        Mistake(
            "a node pushed again on every gradient",
            loop(push_when="every gradient"),
            says=["your loop gets the right gradients, but", "ran 2 times"],
        ),
        Mistake(
            "depth first, with a visited set",
            depth_first_with_a_visited_set,
            says=["TanhBackward0 ran before all its gradients had arrived", "1 had delivered"],
        ),
        Mistake(
            "each gradient sent on at once (the impatient loop)",
            impatient,
            says=["your loop gets the right gradients, but TanhBackward0 ran 3 times"],
        ),
        Mistake(
            "backward run twice",
            backward_twice,
            says=["2 times the expected value", "SumBackward0 ran 2 times"],
            kind="factor",
        ),
        Mistake(
            "a gradient added into .grad twice",
            loop(add="twice"),
            says=["added into x.grad twice"],
            kind="factor",
        ),
        Mistake(
            "None gradients not skipped",
            loop(skip_none=False),
            says=["ran TanhBackward0's rule on None", "skip its rule"],
        ),
        Mistake(
            "a node no gradient reached has no buffer",
            buffer_popped_without_a_default,
            says=["KeyError", "receive no gradient at all"],
        ),
        Mistake(
            "None children not skipped",
            loop(skip_none_child=False),
            says=["KeyError: None", "An edge (None, 0) leads to no node"],
        ),
        Mistake(
            "the rules run outside no_grad (they record a graph)",
            loop(recording=True),
            says=["with graph recording on", "wb.no_grad()"],
        ),
        Mistake(
            "a leaf's node run with node.apply",
            loop(leaf_by_apply=True),
            says=["called node.apply on x's AccumulateGrad"],
            never=["check the dependency counts"],
            kind="missing",
        ),
    ],
    rights=[
        Right("the reference", reference.backward),
        Right("PyTorch's order, as the lesson's steps say", loop()),
        Right("the earliest created first", loop(key=lambda node: node._seq)),
        Right("a plain first-in first-out queue", first_in_first_out),
        Right("leaf.grad += grad", loop(add="in place")),
    ],
)


# ------------------------------------------------------------------ 04-value-recorder
def value_class(
    assign=(), tanh_slope="1 - y**2", mul="other", order="reversed", seed=True, visited=True
):
    """A learner's Value, as the lesson's cell writes it: one keyword per mistake.

    ``assign``: the ops whose closure sets the parents' grad with =; ``tanh_slope``: its
    local derivative; ``mul``: whose data a factor's grad takes; ``order``: "reversed" (a
    topological order reversed), "as built" (not reversed) or "breadth first" (from the
    root, each node when first met); ``seed``: 1.0 set on the root; ``visited``: a set
    keeps each node once in the order. Results are made with type(self), so that a
    subclass (tests/test_value_recorder.py) changes one method for every node."""

    def send(op, parent, part):
        parent.grad = part if op in assign else parent.grad + part

    class Value:
        def __init__(self, data, _parents=(), _op=""):
            self.data = float(data)
            self.grad = 0.0
            self._prev = tuple(_parents)
            self._op = _op
            self._backward = lambda: None

        def __add__(self, other):
            other = other if isinstance(other, Value) else type(self)(other)
            out = type(self)(self.data + other.data, (self, other), "+")

            def _backward():
                send("+", self, out.grad)
                send("+", other, out.grad)

            out._backward = _backward
            return out

        def __mul__(self, other):
            other = other if isinstance(other, Value) else type(self)(other)
            out = type(self)(self.data * other.data, (self, other), "*")

            def _backward():
                own = mul == "own"
                send("*", self, (self.data if own else other.data) * out.grad)
                send("*", other, (other.data if own else self.data) * out.grad)

            out._backward = _backward
            return out

        def tanh(self):
            out = type(self)(math.tanh(self.data), (self,), "tanh")

            def _backward():
                y = out.data
                slope = {"1 - y**2": 1 - y**2, "1 - y": 1 - y, "1 - x**2": 1 - self.data**2}
                send("tanh", self, slope[tanh_slope] * out.grad)

            out._backward = _backward
            return out

        def backward(self):
            if order == "breadth first":
                nodes, queue, seen = [], deque([self]), {self}
                while queue:
                    node = queue.popleft()
                    nodes.append(node)
                    for parent in node._prev:
                        if parent not in seen:
                            seen.add(parent)
                            queue.append(parent)
            else:
                built, seen = [], set()

                def visit(node):
                    if visited and node in seen:
                        return
                    seen.add(node)
                    for parent in node._prev:
                        visit(parent)
                    built.append(node)

                visit(self)
                nodes = list(reversed(built)) if order == "reversed" else built
            if seed:
                self.grad = 1.0
            for node in nodes:
                node._backward()

        def __radd__(self, other):
            return self + other

        def __rmul__(self, other):
            return self * other

        def __neg__(self):
            return self * -1

        def __sub__(self, other):
            return self + (-other)

    return Value


def counted_value_class():
    """A right Value whose backward waits for every consumer by counting, as Exercise 1."""
    Base = value_class()

    class Value(Base):
        def backward(self):
            waiting, stack, seen = Counter(), [self], {self}
            while stack:
                for parent in stack.pop()._prev:
                    waiting[parent] += 1
                    if parent not in seen:
                        seen.add(parent)
                        stack.append(parent)
            self.grad = 1.0
            ready = [self]
            while ready:
                node = ready.pop()
                node._backward()
                for parent in set(node._prev):
                    waiting[parent] -= node._prev.count(parent)
                    if waiting[parent] == 0:
                        ready.append(parent)

    return Value


RIGHT_VALUE = value_class()


class ParentsForgotten(value_class()):
    """Records only the left parent of a product."""

    def __mul__(self, other):
        out = super().__mul__(other)
        out._prev = out._prev[:1]
        return out


VALUE_RECORDER = Catalogue(
    exercise="04-value-recorder",
    check=check_value_recorder,
    mistakes=[
        Mistake(
            "= instead of += in add (a value used twice)",
            value_class(assign={"+"}),
            says=["On a + a", "one use's part alone", "the closure of + sets", "+="],
        ),
        Mistake(
            "= instead of += in mul",
            value_class(assign={"*"}),
            says=["On a * a", "one use's part alone", "the closure of * sets"],
        ),
        Mistake(
            "= instead of += in tanh",
            value_class(assign={"tanh"}),
            says=["On tanh(a) + a", "tanh's closure sets its parent's .grad with ="],
        ),
        Mistake(
            "= everywhere",
            value_class(assign={"+", "*", "tanh"}),
            says=["On a + a", "with = and so replaces"],
        ),
        Mistake(
            "tanh's slope 1 − y", value_class(tanh_slope="1 - y"), says=["= 1 − y,", "y squared"]
        ),
        Mistake(
            "tanh's slope from the input",
            value_class(tanh_slope="1 - x**2"),
            says=["= 1 − a², from the input a"],
        ),
        Mistake(
            "mul's closure uses its own data",
            value_class(mul="own"),
            says=["each factor got its own data", "other.data * out.grad"],
        ),
        Mistake(
            "the order not reversed (leaves first)",
            value_class(order="as built"),
            says=["ran before that of", "which uses it", "reverse a topological order"],
        ),
        Mistake(
            "breadth first from the root, each node when first met",
            value_class(order="breadth first"),
            says=["On (t + h) * h", "the closure of h ran before that of t"],
        ),
        Mistake("the seed missing", value_class(seed=False), says=["the seed is missing"]),
        Mistake(
            "no visited set (a node twice in the order)",
            value_class(visited=False),
            says=["the closure of h ran 3 times", "set of the nodes already visited"],
        ),
        Mistake(
            "a parent not recorded",
            ParentsForgotten,
            says=["On a * b", "b is not among the parents (_prev)"],
        ),
    ],
    rights=[
        Right("leaves made by a function", lambda data: RIGHT_VALUE(data)),
        Right("a recursive walk, reversed, as micrograd", value_class()),
        Right("the workbench's ScalarValue", ScalarValue),
        Right("dependency counts, as Exercise 1", counted_value_class()),
    ],
)


CATALOGUES = [ORDER, X_GRAD, STOP, IN_PLACE, DEPENDENCIES, LOOP, VALUE_RECORDER]
