"""The engine runs ready nodes in exactly PyTorch's order, ties between leaves included.

PyTorch keeps ready nodes in a binary heap ordered by sequence number, where every
AccumulateGrad has the same (highest) number, so ready leaves come out in the order
the heap's sifting leaves them (REFERENCE D24). Each program here is built twice, in
PyTorch and in the workbench; the two graphs are matched node for node by their edges,
and the order in which every node runs (seen by hooks, the stepper's Steps, the
reference backward, and ``backward_order``) must be PyTorch's, node by node: not only
the same names, the same nodes. The programs are drawn at random with many leaves ready
together: leaves stacked or concatenated, used twice, diamonds, several roots,
``retain_graph``, ``inputs=`` and ``grad()``.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import workbench as wb
from workbench.autograd import entry_points, reference
from workbench.record.graph import backward_order, edge_of

torch = pytest.importorskip("torch")

MODES = ("backward", "backward", "inputs", "grad", "retain")


# ------------------------------------------------------------------ programs
def draw(seed: int, modes=MODES) -> tuple:
    """A random program: ``(leaves, steps, roots, mode, inputs)``, steps naming tensors by
    their place in the pool (the leaves first, then each step's result). A root is the
    sum of a tensor, a tensor itself (a leaf, perhaps), an earlier root again, or twice
    an earlier root (so one root lies below another)."""
    rng = random.Random(seed)
    leaves = rng.randint(1, 12)
    steps, size = [], leaves
    for _ in range(rng.randint(0, 10)):
        kind = rng.choice(["binary", "binary", "unary", "stack", "stack", "cat"])
        if kind == "binary":
            pair = rng.randrange(size), rng.randrange(size)
            steps.append((rng.choice(["add", "mul", "sub"]), *pair))
        elif kind == "unary":
            steps.append((rng.choice(["tanh", "sin", "neg"]), rng.randrange(size)))
        else:  # several tensors (leaves, often) made ready together
            steps.append((kind, *[rng.randrange(size) for _ in range(rng.randint(1, 9))]))
        size += 1
    roots = [("sum", rng.randrange(size))]
    for n in range(1, rng.randint(1, 4)):  # several roots: PyTorch's GraphRoot feeds them
        kind = rng.choice(["sum", "sum", "raw", "again", "above"])
        roots.append((kind, rng.randrange(n if kind in ("again", "above") else size)))
    inputs = rng.sample(range(size), rng.randint(1, min(4, size)))
    return leaves, steps, roots, rng.choice(modes), inputs


def build(lib, program) -> tuple:
    """The program in ``lib`` (torch or workbench): every tensor, and the roots."""
    leaves, steps, roots, _, _ = program
    values = np.random.default_rng(len(steps)).uniform(0.5, 1.5, size=(leaves, 3))
    pool = [lib.tensor(row.tolist(), requires_grad=True) for row in values]
    for op, *args in steps:
        xs = [pool[i] for i in args]
        if op in ("add", "mul", "sub"):
            y = {"add": xs[0] + xs[1], "mul": xs[0] * xs[1], "sub": xs[0] - xs[1]}[op]
        elif op == "neg":
            y = -xs[0]
        elif op in ("tanh", "sin"):
            y = getattr(xs[0], op)()
        elif op == "stack":
            y = lib.stack(xs).sum(0)
        else:
            y = lib.cat(xs).sum() * xs[0]
        pool.append(y)
    outs = []
    for kind, i in roots:
        if kind in ("sum", "raw"):
            outs.append(pool[i].sum() if kind == "sum" else pool[i])
        else:
            outs.append(outs[i] if kind == "again" else outs[i] * 2)
    return pool, outs


# ------------------------------------------------- matching the two graphs
def node_of(lib, t):
    """The node a root or an input's gradient reaches: its grad_fn, or a leaf's node."""
    if t.grad_fn is not None:
        return t.grad_fn
    if lib is torch:
        return torch.autograd.graph.get_gradient_edge(t).node
    return edge_of(t)[0]


def name(node) -> str:
    return node.name().rsplit("::", 1)[-1]  # PyTorch's torch::autograd::AccumulateGrad


def match(wb_roots: list, torch_roots: list) -> dict:
    """``workbench node -> torch node``, walking both graphs edge by edge from the roots:
    the same names, the same edges, so the graphs are the same graph."""
    partner = {}
    queue = list(zip(wb_roots, torch_roots))
    while queue:
        ours, theirs = queue.pop()
        if ours in partner:
            assert partner[ours] is theirs, "the two graphs are not the same graph"
            continue
        assert name(ours) == name(theirs), (name(ours), name(theirs))
        partner[ours] = theirs
        assert len(ours.next_functions) == len(theirs.next_functions), name(ours)
        for (a, a_nr), (b, b_nr) in zip(ours.next_functions, theirs.next_functions):
            assert (a is None) == (b is None) and a_nr == b_nr, name(ours)
            if a is not None:
                queue.append((a, b))
    return partner


def watch(lib, nodes, inputs: list) -> list:
    """The order the nodes run in, recorded by a pre-hook on each (and a hook on each
    input: PyTorch's ``grad()`` only captures an input's gradient, calling no pre-hook)."""
    ran = []

    def mark(node):
        if not ran or ran[-1] is not node:  # (an input's hook, then its node's pre-hook)
            ran.append(node)

    for node in nodes:
        node.register_prehook(lambda grads, node=node: mark(node))
    for t in inputs:
        node = node_of(lib, t)
        t.register_hook(lambda grad, node=node: mark(node))
    return ran


def walk(roots: list) -> list:
    nodes, seen = list(dict.fromkeys(roots)), set(roots)
    for node in nodes:
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                nodes.append(child)
    return nodes


def run(lib, program) -> tuple:
    """Build and run ``program`` in ``lib``: its tensors, the root nodes, and every node in
    the order it ran (a retained graph's second pass after a ``None``)."""
    _, _, _, mode, chosen = program
    pool, outs = build(lib, program)
    roots = [node_of(lib, t) for t in outs]
    inputs = [pool[i] for i in chosen]
    ran = watch(lib, walk(roots), inputs if mode == "grad" else [])
    autograd = torch.autograd if lib is torch else wb.autograd
    ones = [lib.ones_like(t) for t in outs]
    if mode == "grad":
        autograd.grad(outs, inputs, ones, allow_unused=True)
    elif mode == "inputs":
        autograd.backward(outs, ones, inputs=inputs)
    else:
        autograd.backward(outs, ones, retain_graph=mode == "retain")
        if mode == "retain":
            ran.append(None)
            autograd.backward(outs, ones)
    return pool, roots, ran


def assert_torch_order(program, wb_roots: list, wb_ran: list) -> None:
    pool, torch_roots, torch_ran = run(torch, program)
    partner = match(wb_roots, torch_roots)
    got = [None if node is None else partner[node] for node in wb_ran]
    if got != torch_ran:  # the same nodes, by identity, in the same order
        place = {id(t): i for i, t in enumerate(pool)}

        def label(node):  # a leaf's node by the leaf's place in the program
            if node is None or name(node) != "AccumulateGrad":
                return node and name(node)
            return f"leaf {place[id(node.variable)]}"

        said = [" ".join(map(str, map(label, ran))) for ran in (got, torch_ran)]
        raise AssertionError(f"program {program}:\n workbench {said[0]}\n   PyTorch {said[1]}")


# --------------------------------------------------------------- the tests
D24 = {  # REFERENCE D24, measured in PyTorch 2.13: (program, the leaves in run order)
    "x * w + b": ((3, [("mul", 0, 1), ("add", 3, 2)]), [2, 0, 1]),
    "a stack of five": ((5, [("stack", 0, 1, 2, 3, 4)]), [0, 2, 4, 1, 3]),
    "a + b + c + d + e": (
        (5, [("add", 0, 1), ("add", 5, 2), ("add", 6, 3), ("add", 7, 4)]),
        [4, 3, 2, 0, 1],
    ),
}


@pytest.mark.parametrize("case", D24.values(), ids=D24.keys())
def test_d24_leaves_run_in_pytorchs_order(case):
    (leaves, steps), leaves_in_order = case
    program = (leaves, steps, [("sum", leaves + len(steps) - 1)], "backward", [0])
    pool, roots, ran = run(wb, program)
    assert_torch_order(program, roots, ran)
    place = {id(t): i for i, t in enumerate(pool)}
    assert [place[id(n.variable)] for n in ran if name(n) == "AccumulateGrad"] == leaves_in_order


@pytest.mark.parametrize("block", range(10))
def test_hooks_fire_in_pytorchs_order_on_random_programs(block):
    """Every mode: several roots, ``retain_graph``, ``inputs=``, ``grad()``."""
    for seed in range(30 * block, 30 * block + 30):
        program = draw(seed)
        _, roots, ran = run(wb, program)
        assert_torch_order(program, roots, ran)


@pytest.mark.parametrize("block", range(4))
def test_the_stepper_and_backward_order_step_in_pytorchs_order(block):
    for seed in range(1000 + 25 * block, 1000 + 25 * block + 25):
        program = draw(seed, modes=("backward",))
        _, outs = build(wb, program)
        predicted = backward_order([node_of(wb, t) for t in outs])
        task = entry_points.make_backward_task(outs, [wb.ones_like(t) for t in outs])
        stepped = [step.node for step in task.steps()]
        assert stepped == predicted
        assert_torch_order(program, [node_of(wb, t) for t in outs], stepped)


@pytest.mark.parametrize("block", range(4))
def test_the_reference_runs_in_pytorchs_order(block, monkeypatch):
    """reference.py takes one root: each program's first."""
    ran = []
    run_node = reference.run_node

    def recorded(node, grads):
        ran.append(node)
        return run_node(node, grads)

    monkeypatch.setattr(reference, "run_node", recorded)
    for seed in range(2000 + 25 * block, 2000 + 25 * block + 25):
        leaves, steps, roots, _, inputs = draw(seed)
        program = (leaves, steps, roots[:1], "backward", inputs)
        _, outs = build(wb, program)
        ran.clear()
        reference.backward(outs[0])
        assert_torch_order(program, [outs[0].grad_fn], list(ran))


def test_the_comparison_sees_another_tie_order():
    """Not blind: the old rule (leaves ordered among themselves, latest first) fails it."""
    program = (5, [("stack", 0, 1, 2, 3, 4)], [("sum", 5)], "backward", [0])
    _, roots, ran = run(wb, program)
    leaves = [n for n in ran if name(n) == "AccumulateGrad"]
    latest_first = [n for n in ran if n not in leaves] + sorted(leaves, key=lambda n: -n._seq)
    with pytest.raises(AssertionError, match="workbench"):
        assert_torch_order(program, roots, latest_first)


ROOT_LISTS = {  # leaves as roots, and the order PyTorch 2.13 runs them in
    "five leaves": ([("raw", 4), ("raw", 3), ("raw", 2), ("raw", 1), ("raw", 0)], [4, 2, 0, 3, 1]),
    "a leaf twice": ([("raw", 0), ("raw", 1), ("raw", 2), ("again", 0), ("raw", 3)], [1, 0, 2, 3]),
    "two twice": ([("raw", 1), ("raw", 0), ("again", 0), ("raw", 2), ("again", 1)], [1, 2, 0]),
}


@pytest.mark.parametrize("case", ROOT_LISTS.values(), ids=ROOT_LISTS.keys())
def test_several_roots_are_pushed_as_pytorchs_graph_root_pushes_them(case):
    """One node above the roots sends to each in the order given: a root mentioned twice
    is pushed at its last mention (at its first, "a leaf twice" would run 0, 2, 1, 3)."""
    roots, leaves_in_order = case
    program = (5, [], roots, "backward", [0])
    pool, wb_roots, ran = run(wb, program)
    assert_torch_order(program, wb_roots, ran)
    place = {id(t): i for i, t in enumerate(pool)}
    assert [place[id(node.variable)] for node in ran] == leaves_in_order
