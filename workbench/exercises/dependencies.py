"""Check a learner's ``count_dependencies(start)``: the edges leading into each node.

The check runs it on four small graphs (a node used twice by one op and once more by
another, fan-out through two nodes, an input that needs no gradient, a leaf used three
times) and compares its table with
the engine's (:func:`workbench.autograd.reference.count_dependencies`). A wrong table
is compared with what each usual wrong walk gives — counting nodes instead of edges,
counting a child once per parent, walking below a node every time it is met — and
named where it is exactly that; otherwise the message shows the first entry that
differs, yours against the engine's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ..autograd import reference
from ..core.tensor import Tensor
from ..record.graph import Node, edge_of, walk
from .guard import checker
from .report import NotAnswered, Passed, fail, learner_error

WHAT = "table of dependency counts"
NODE_ATTRIBUTES = ("next_functions", "num_outputs", "_order", "_seq", "name", "apply")


def leaf(values) -> Tensor:
    return Tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def dependency_graphs() -> list:
    """``(how the lesson writes it, its root)`` for each graph the check counts."""
    x, w = leaf([0.5, -1.0, 2.0]), leaf([1.5, -0.5, 0.25])
    c = Tensor(np.array([1.0, 2.0, -1.0]))  # needs no gradient: its edge is (None, 0)
    h = x.tanh()
    return [
        ("(h * h + h).sum() with h = tanh(x)", (h * h + h).sum()),
        ("(tanh(x) * tanh(x)).sum()", (x.tanh() * x.tanh()).sum()),
        ("(h * w + h * c).sum() with c a constant", (h * w + h * c).sum()),
        ("(sigmoid(x) * x + x).exp().sum()", (x.sigmoid() * x + x).exp().sum()),
    ]


@checker
def check_dependency_counts(count_dependencies: Callable[[Node], Mapping]) -> Passed:
    """``count_dependencies(start)`` must map each node below ``start`` to its edges in."""
    for expression, root in dependency_graphs():
        start = edge_of(root)[0]
        table = run_count(count_dependencies, start, expression)
        truth = reference.count_dependencies(start)
        if not isinstance(table, Mapping):
            fail(f"Write the {WHAT} as a dict, not a {type(table).__name__}.")
        if dict(table) != truth:
            fail(f"On {expression}, {table_mistake(dict(table), truth, start)}")
    return Passed(
        "Your dependency counts are right.",
        "On four graphs, fan-out and a constant input included, each node is counted once "
        "per edge into it: the number of gradients it must wait for.",
    )


def run_count(count_dependencies: Callable, start: Node, expression: str):
    """The learner's table for ``start``; an error in their code names their line."""
    try:
        return count_dependencies(start)
    except Exception as err:
        found = learner_error(err, count_dependencies, "function count_dependencies")
        hint = none_child_hint(err)
        if hint is None or isinstance(found, NotAnswered):
            raise found from None
        fail(f"On {expression}, {found.message[0].lower()}{found.message[1:]} {hint}")


def none_child_hint(err: BaseException) -> str | None:
    """A sentence for an error that came from treating an edge's None child as a node."""
    text = str(err)
    as_node = isinstance(err, AttributeError) and "'NoneType'" in text
    if (as_node and any(f"'{a}'" in text for a in NODE_ATTRIBUTES)) or (
        isinstance(err, KeyError) and err.args == (None,)
    ):
        return (
            "An edge (None, 0) leads to no node: its input needs no gradient (like c here). "
            "Skip such an edge."
        )
    return None


# ------------------------------------------------------------------ diagnoses
def table_mistake(table: dict, truth: dict, start: Node) -> str:
    """What is wrong with ``table``: a known wrong walk, or the first entry that differs."""
    if None in table:
        return (
            f"your {WHAT} has an entry for None: an edge (None, 0) leads to no node (its "
            "input needs no gradient). Skip such an edge."
        )
    keys = {type(key).__name__ for key in table if not isinstance(key, Node)}
    if keys:
        return (
            f"your {WHAT} has keys of type {', '.join(sorted(keys))}: key it by the nodes "
            "themselves, the child of each edge (child, output_nr) in node.next_functions."
        )
    if start in table:
        return (
            f"your {WHAT} has an entry for the start node, {start!r}: no edge leads into it "
            "(backward starts there). Leave it out."
        )
    for diagnose in (counted_nodes, counted_parents, walked_again):
        found = diagnose(table, truth, start)
        if found is not None:
            return found
    return first_difference(table, truth)


def counted_nodes(table: dict, truth: dict, start: Node) -> str | None:
    """Every node given 1: nodes counted, not the edges into them."""
    if table != dict.fromkeys(truth, 1):
        return None
    node = max(truth, key=truth.get)
    return (
        f"your {WHAT} gives every node 1, but {truth[node]} edges lead into {node!r}, and it "
        "waits for a gradient along each: count every edge, not every node."
    )


def counted_parents(table: dict, truth: dict, start: Node) -> str | None:
    """A child counted once per node above it, however many edges that node has into it."""
    if table != parents_per_node(start):
        return None
    parent, child, edges = next(
        (p, c, n) for p in walk([start]) for c, n in edge_counts(p).items() if n > 1
    )
    return (
        "your table counts each node once per node above it, not once per edge: "
        f"{parent!r} has {edges} edges into {child!r} (it uses that input {edges} times), "
        f"so they count {edges}. Count every edge in node.next_functions."
    )


def walked_again(table: dict, truth: dict, start: Node) -> str | None:
    """The walk went below a node each time it met it: the edges below counted again."""
    if table != counted_on_every_visit(start):
        return None
    node = next(n for n in table if table[n] != truth[n])
    return (
        f"your {WHAT} says {table[node]} for {node!r}, where {truth[node]} "
        f"edge{'s lead' if truth[node] > 1 else ' leads'} into it: the walk went below a node "
        "every time it met it, so the edges under a node with several edges into it were "
        "counted again. Count every edge, but walk below a node only the first time you meet it."
    )


def first_difference(table: dict, truth: dict) -> str:
    """No known walk: the first entry missing, extra or different, yours and the engine's."""
    for node, want in truth.items():
        if node not in table:
            return f"your {WHAT} has no entry for {node!r}; the engine's says {want}."
        if table[node] != want:
            return f"your {WHAT} says {table[node]!r} for {node!r}; the engine's says {want}."
    extra = next(node for node in table if node not in truth)
    return f"your {WHAT} has an entry for {extra!r}, which is not below the start node."


# ------------------------------------------------------------- wrong walks
def edge_counts(node: Node) -> dict:
    """How many of ``node``'s edges lead to each child."""
    counts: dict = {}
    for child, _ in node.next_functions:
        if child is not None:
            counts[child] = counts.get(child, 0) + 1
    return counts


def parents_per_node(start: Node) -> dict:
    """Each node below ``start`` counted once per distinct node above it."""
    table: dict = {}
    for parent in walk([start]):
        for child in edge_counts(parent):
            table[child] = table.get(child, 0) + 1
    return table


def counted_on_every_visit(start: Node) -> dict:
    """Edges counted by a walk that goes below a node every time it meets it."""
    table: dict = {}
    stack = [start]
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None:
                table[child] = table.get(child, 0) + 1
                stack.append(child)
    return table
