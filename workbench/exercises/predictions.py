"""Lesson 3's predictions about a backward pass, checked against the engine.

The lesson asks the learner to predict before a widget reveals; the checks here build
the lesson's graphs themselves (the lesson shows the same functions), run the engine,
and say where a prediction went wrong:

* :func:`check_step_order`: the order of the backward steps of :func:`fan_out`,
  as node names. Names repeat (two sums, two muls, two AccumulateGrads), so the check
  *reads* the learner's list: it finds the nodes the names can stand for, in an order
  where each node runs after every edge into it has delivered. A list no such reading
  fits runs some node too early, and the message names it; a list one fits is a valid
  order, and the message names the rule of PyTorch's engine it departs from (a leaf's
  AccumulateGrad first, otherwise the node created last).
* :func:`check_x_grad`: ``x.grad`` after the last step of :func:`fan_out`.
* :func:`check_stop_gradient`: ``x.grad`` of :func:`stopped`, where ``.detach()`` and
  ``no_grad()`` stop the gradient.

Each diagnosis compares the answer with what the engine computes for one known
mistake (a program without the ``.detach()``, a sum without one of h's uses): a
message names a cause only when the answer is exactly what that mistake gives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

import workbench as wb

from ..core.tensor import Tensor
from ..record.graph import AccumulateGrad, Node, count_dependencies, edge_of, walk
from .answers import as_numbers, call_answer
from .diagnose import ATOL, RTOL, Finding, compare, is_close
from .guard import checker
from .report import Passed, fail


# ------------------------------------------------------------ lesson 3's graphs
def fan_out() -> tuple:
    """``h = tanh(x)`` used three times: once in ``h * w``, twice in ``h * h``."""
    x = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="x")
    w = wb.tensor([1.5, -0.5, 0.25], requires_grad=True, name="w")
    h = wb.tanh(x)
    loss = (h * w).sum() + (h * h).sum()
    return loss, x, w, h


def fan_out_labels(loss: Tensor) -> dict:
    """The nodes of :func:`fan_out`'s graph in the lesson's words ("the sum of h * w")."""
    add = loss.grad_fn
    labels = {add: "AddBackward0 (the add)"}
    for sum_node, _ in add.next_functions:
        mul = sum_node.next_functions[0][0]
        first, second = (child for child, _ in mul.next_functions)
        expression = "h * h" if first is second else "h * w"
        labels[sum_node] = f"SumBackward0 (the sum of {expression})"
        labels[mul] = f"MulBackward0 (the product {expression})"
        for child, _ in mul.next_functions:
            if isinstance(child, AccumulateGrad):
                labels[child] = f"AccumulateGrad ({child.variable.name}'s)"
            else:
                labels[child] = "TanhBackward0"
                labels[child.next_functions[0][0]] = "AccumulateGrad (x's)"
    return labels


def stopped() -> tuple:
    """A loss where ``.detach()`` and ``no_grad()`` stop the gradient on two of its paths."""
    x = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="x")
    with wb.no_grad():
        scale = x.sum()  # made without a graph: to backward, a constant
    loss = (x * x.detach()).sum() + (scale * x).sum()
    return loss, x


# ------------------------------------------------------------- the engine's run
def engine_steps(root: Tensor) -> list:
    """The nodes of ``root``'s graph in the order the stepper runs them (step 1 first)."""
    from ..widgets import BackwardStepper

    nodes = {node.uid: node for node in walk([edge_of(root)[0]])}
    stepper = BackwardStepper(root)
    stepper.continue_()
    ran = [nodes[record.node] for record in stepper.cursor.source.records]
    stepper.close()
    return ran


def x_grad_after(step: int):
    """``x.grad`` of a fresh :func:`fan_out` graph, after the stepper has run ``step`` steps."""
    from ..widgets import BackwardStepper

    loss, x, _, _ = fan_out()
    stepper = BackwardStepper(loss)
    stepper.go(step)
    stepper.close()
    return x.grad


# ------------------------------------------------------------- 03-order
ORDER = "order of the backward steps"


@checker
def check_step_order(predicted_order: Callable[[], list]) -> Passed:
    """``predicted_order()`` must name :func:`fan_out`'s nodes in the order backward runs them."""
    loss, *_ = fan_out()
    ran = engine_steps(loss)
    names = call_answer(predicted_order, what="function predicted_order")
    check_names(names, ran)
    names = list(names)
    if names != [node.name() for node in ran]:
        fail(order_mistake(names, ran, fan_out_labels(loss)))
    return Passed(
        "Your order of the backward steps is right.",
        "Dependencies decide when a node may run; among the ready nodes a leaf's "
        "AccumulateGrad runs first, otherwise the node created last.",
    )


def check_names(names, ran: list) -> None:
    """A list of strings, each the name of some node of the graph."""
    if not isinstance(names, (list, tuple)):
        fail(f"Write the {ORDER} as a list of names, not a {type(names).__name__}.")
    known = sorted({node.name() for node in ran})
    for position, name in enumerate(names, start=1):
        if not isinstance(name, str):
            fail(f"Entry {position} of your {ORDER} is a {type(name).__name__}: write names.")
        if name not in known:
            fail(
                f"Entry {position} of your {ORDER}, {name!r}, is no node of this graph: "
                f"its nodes are named {', '.join(map(repr, known))}."
            )


def order_mistake(names: list, ran: list, labels: dict) -> str:
    """What is wrong with ``names``, a list of known names unlike the engine's."""
    reading = read_order(names, ran)
    label = labels.get
    if len(reading) < len(names):
        return not_ready(names, reading, ran, label)
    if len(names) < len(ran):
        left = [label(n) or n.name() for n in ran if n not in reading]
        return (
            f"Your {ORDER} stops after step {len(names)}, and the engine runs {len(ran)} "
            f"steps (every node runs once): still to run, {', '.join(left)}."
        )
    step = next(i for i, (yours, its) in enumerate(zip(reading, ran)) if yours is not its)
    return other_choice(step, reading, ran, label)


def read_order(names: list, ran: list) -> list:
    """The longest run of nodes ``names`` can stand for, each node once and each run only
    after every edge into it has delivered; of such readings, the one that follows the
    engine's order longest."""
    start = ran[0]
    pending = count_dependencies([start])
    best: list = []

    def extend(reading: list) -> bool:
        nonlocal best
        if len(reading) > len(best):
            best = list(reading)
        if len(reading) == len(names):
            return True
        for node in candidates(names[len(reading)], reading):
            for child, _ in node.next_functions:
                if child is not None:
                    pending[child] -= 1
            found = extend([*reading, node])
            for child, _ in node.next_functions:
                if child is not None:
                    pending[child] += 1
            if found:
                return True
        return False

    def candidates(name: str, reading: list) -> list:
        ready = [n for n in ran if n.name() == name and n not in reading and pending.get(n, 0) == 0]
        return sorted(ready, key=lambda n: n is not ran[len(reading)])  # the engine's first

    extend([])
    return best


def not_ready(names: list, reading: list, ran: list, label: Callable) -> str:
    """The step where ``names`` runs a node too early, or one node twice."""
    step, name = len(reading), names[len(reading)]
    same = [n for n in ran if n.name() == name]
    waiting = [n for n in same if n not in reading]
    prefix = f"Your {ORDER} is right up to step {step}" if step else "Your first step"
    if not waiting:
        count = f"{len(same)} {name} node" + ("s" if len(same) > 1 else "")
        return (
            f"{prefix}, then lists {name} once more, but the graph has {count}: each node runs "
            "once (a node ran twice)."
        )
    node = waiting[0]
    edges = edges_into(node, ran)
    arrived = [parent for parent in edges if parent in reading]
    which = label(node) or node.name()
    if step == 0:
        return (
            f"Your first step, {name}, cannot run first: the first node is {label(ran[0])}, "
            "the node of the op that made the loss; every other node waits for a gradient "
            "from above."
        )
    lead = f"{len(edges)} edges lead" if len(edges) > 1 else "1 edge leads"
    have = "has" if len(arrived) == 1 else "have"
    return (
        f"{prefix}; at step {step + 1} you run {which}, but it is not ready then: {lead} "
        f"into it and {len(arrived)} of {len(edges)} gradients {have} arrived. A node runs "
        "only once all its gradients have arrived (they are summed first)."
    )


def edges_into(node: Node, ran: list) -> list:
    """The node at the upper end of each edge into ``node`` (one entry per edge)."""
    return [parent for parent in ran for child, _ in parent.next_functions if child is node]


def other_choice(step: int, reading: list, ran: list, label: Callable) -> str:
    """A valid order that departs from the engine's at ``step``: which rule it broke."""
    yours, its = reading[step], ran[step]
    opening = (
        f"Your {ORDER} lets every node wait for all its gradients, but it is not the "
        f"engine's: its names fit no order that agrees with the engine's beyond step {step}. "
        f"At step {step + 1} yours runs {label(yours)}, the engine {label(its)}, and both "
        "are ready then."
    )
    if isinstance(its, AccumulateGrad) and not isinstance(yours, AccumulateGrad):
        return (
            f"{opening} A leaf's AccumulateGrad runs as soon as it is ready, before any "
            "other ready node."
        )
    return (
        f"{opening} Of the ready nodes, the engine runs the one created last in the forward "
        f"pass: {label(its)} was created after {label(yours)}."
    )


# ------------------------------------------------------------- 03-x-grad
@dataclass(frozen=True)
class Mistake:
    """A known wrong answer: what it computes, and the sentence that names it."""

    kind: str
    value: np.ndarray
    says: str


@checker
def check_x_grad(x_grad_after_step_8: Callable[[], object]) -> Passed:
    """``x_grad_after_step_8()`` must give :func:`fan_out`'s ``x.grad`` after its last step."""
    expected = x_grad_after(8)
    answer = call_answer(x_grad_after_step_8, what="function x_grad_after_step_8")
    got = as_numbers(answer, "x.grad after step 8")
    _, x, w, h = fan_out()
    mistakes = fan_out_mistakes(*(t.detach().numpy() for t in (x, w, h)))
    check_prediction("x.grad after step 8", expected, got, mistakes)
    return Passed(
        "Your x.grad after step 8 is right.",
        "The three uses of h were summed before tanh's rule ran: h̄ = w + 2h, and x̄ = h̄ · (1 − h²).",
    )


def fan_out_mistakes(x: np.ndarray, w: np.ndarray, h: np.ndarray) -> list:
    """What the usual wrong answers compute, for :func:`fan_out`'s values."""
    slope = 1 - h**2
    some_uses = [
        ("w", w, "only the gradient of h * w (w): h * h uses h twice and sends 2h back too"),
        ("2h", 2 * h, "only the gradient of h * h (2h): h * w uses h too and sends w back"),
        ("h", h, "only one of h's three uses (h, from one factor of h * h)"),
        ("w + h", w + h, "h * h once (w + h): h * h uses h twice, so it sends h back twice"),
    ]
    found = [
        Mistake(
            "uses_not_summed",
            value * slope,
            f"Tanh's node must receive the sum of what all three uses of h send back, "
            f"h̄ = w + h + h; yours holds {says}",
        )
        for _, value, says in some_uses
    ]
    found += [
        Mistake(
            "slope_missing",
            w + 2 * h,
            "That is h̄ = w + 2h, the gradient of h: tanh's rule still multiplies it by its "
            "slope, x̄ = h̄ · (1 − h²)",
        ),
        Mistake(
            "input_for_output",
            (w + 2 * h) * (1 - x**2),
            "tanh's slope is 1 − h², with h = tanh(x) its output, not 1 − x²",
        ),
        Mistake(
            "input_for_output",
            (w + 2 * x) * slope,
            "In h * h each factor sends back the other one, h = tanh(x), not x: the sum is "
            "w + 2h, not w + 2x",
        ),
    ]
    return found


def check_prediction(what: str, expected, got, mistakes: list) -> None:
    """``got`` must be ``expected``; a known mistake is named, any other shows the values."""
    finding = compare(f"your {what}", expected, got)
    if finding is None:
        return
    mistake = known_mistake(finding, mistakes)
    if mistake is not None:
        finding = replace(finding, kind=mistake.kind, advice=mistake.says)
    fail(finding.sentences(), finding)


def known_mistake(
    finding: Finding, mistakes: list, rtol: float = RTOL, atol: float = ATOL
) -> Mistake | None:
    """The mistake whose value ``finding.got`` is (within ``rtol``, ``atol``), if any."""
    if finding.got is None or finding.expected is None:
        return None
    got = np.asarray(finding.got, dtype=np.float64)
    return next((m for m in mistakes if is_close(np.asarray(m.value), got, rtol, atol)), None)


# ------------------------------------------------------------- 03-stop-gradient
def stopped_grad(loss_of: Callable[[Tensor], tuple]) -> np.ndarray | None:
    """``x.grad`` after ``loss_of(x)``'s backward, for :func:`stopped`'s x."""
    x = wb.tensor([0.5, -1.0, 2.0], requires_grad=True)
    loss_of(x).backward()
    return None if x.grad is None else x.grad.numpy()


def without_detach(x: Tensor) -> Tensor:
    """:func:`stopped` without ``.detach()``: both factors of ``x * x`` send a gradient."""
    with wb.no_grad():
        scale = x.sum()
    return (x * x).sum() + (scale * x).sum()


def without_no_grad(x: Tensor) -> Tensor:
    """:func:`stopped` without ``no_grad()``: ``scale`` sends its gradient on to x."""
    scale = x.sum()
    return (x * x.detach()).sum() + (scale * x).sum()


def without_either(x: Tensor) -> Tensor:
    scale = x.sum()
    return (x * x).sum() + (scale * x).sum()


def first_term_only(x: Tensor) -> Tensor:
    return (x * x.detach()).sum()


def second_term_only(x: Tensor) -> Tensor:
    with wb.no_grad():
        scale = x.sum()
    return (scale * x).sum()


STOP_MISTAKES = (
    (
        "detach_ignored",
        without_detach,
        "it is the gradient without .detach(): x.detach() is a constant to backward, so "
        "x * x.detach() sends a gradient to its first factor only",
    ),
    (
        "no_grad_ignored",
        without_no_grad,
        "it is the gradient with scale computed outside no_grad(): made under no_grad(), "
        "scale has no graph, so it is a constant and sends nothing back to x",
    ),
    (
        "stops_ignored",
        without_either,
        "it is the gradient with neither stop: x.detach() and the scale made under "
        "no_grad() are both constants to backward",
    ),
    (
        "term_left_out",
        first_term_only,
        "it leaves out (scale * x).sum(): scale is a constant, yet x is a factor there "
        "and gets ȳ · scale",
    ),
    (
        "term_left_out",
        second_term_only,
        "it leaves out (x * x.detach()).sum(): .detach() stops the gradient of its own "
        "factor only; the other factor, x, gets ȳ · x.detach()",
    ),
)


@checker
def check_stop_gradient(x_grad_of_stopped: Callable[[], object]) -> Passed:
    """``x_grad_of_stopped()`` must give ``x.grad`` after :func:`stopped`'s backward."""
    loss, x = stopped()
    loss.backward()
    answer = call_answer(x_grad_of_stopped, what="function x_grad_of_stopped")
    got = as_numbers(answer, "x.grad")
    mistakes = [Mistake(kind, stopped_grad(program), says) for kind, program, says in STOP_MISTAKES]
    check_prediction("x.grad", x.grad.numpy(), got, mistakes)
    return Passed(
        "Your x.grad is right.",
        "Backward follows only the graph: x.detach() and a value made under no_grad() are "
        "constants to it, so x.grad = x.detach() + scale.",
    )
