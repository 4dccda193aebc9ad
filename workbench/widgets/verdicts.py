"""Predict, then reveal: check a learner's guess about the next step of a backward pass.

Two questions, both about a step the stepper has not shown yet:

- **the gradient**: what a node sends to each of its inputs (for a leaf's node, the
  leaf's ``.grad`` after it), given the gradient ȳ that reached it;
- **the node**: which node runs next.

The answer is checked with the exercise checkers' own diagnoses
(:func:`~workbench.exercises.diagnose.compare`: a factor, a sign, a broadcast gradient
not summed back, the gradient of the other input; lesson 3's reading of a node order),
so the stepper says what a checker would. Nothing here imports ipywidgets.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from ..autograd.graph import Node, walk
from ..exercises.diagnose import Finding, compare, diagnose_shape, diagnose_swapped, index_text
from ..exercises.predictions import Mistake, known_mistake, not_ready, other_choice, read_order
from ..tensor import Tensor
from .panel import format_array
from .steps import GradFlow, StepRecord, node_label

BIG = 16  # gradients with more elements than this may be predicted in part (a Glimpse)


@dataclass(frozen=True)
class Verdict:
    """What the stepper says about one prediction.

    ``counted`` is False for an answer it could not read (a list of the wrong length,
    a word where numbers belong): the step stays hidden and the score is unchanged.
    """

    right: bool
    message: str
    counted: bool = True
    findings: tuple[Finding, ...] = ()

    def __repr__(self) -> str:
        return f"Verdict(right={self.right}, message={self.message!r})"


def unreadable(message: str) -> Verdict:
    return Verdict(False, message, counted=False)


# ------------------------------------------------------------------ reading an answer
def read_text(text: str):
    """A prediction typed into the stepper's box: a number, a list, ``None``, or a name.

    Read as a Python literal (never run as code); anything else is a node's name.
    """
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


@dataclass(frozen=True)
class Glimpse:
    """A big gradient predicted in part: its shape and a few elements.

    Written as a dict, ``{"shape": (64, 10), (0, 3): 0.25, (5, 1): -1.0}``: the shape
    (optional) and any elements by index.
    """

    shape: tuple | None
    elements: dict  # index tuple -> number

    @classmethod
    def of(cls, answer: dict) -> Glimpse:
        shape, elements = None, {}
        for key, value in answer.items():
            if key == "shape":
                shape = tuple(int(n) for n in np.atleast_1d(value))
                continue
            index = key if isinstance(key, tuple) else (key,)
            if not all(isinstance(i, (int, np.integer)) for i in index):
                raise ValueError(f"a key {key!r} (write an index, like (0, 3), or 'shape')")
            number = as_values(value)
            if number is None or number.size != 1:
                raise ValueError(f"a value {value!r} for element {key!r} (one number)")
            elements[tuple(int(i) for i in index)] = number.reshape(())
        return cls(shape, elements)


def as_values(value):
    """A predicted gradient as an array (a Tensor's values, a list, a number), a
    :class:`Glimpse` of one (a dict), or None."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        return value.detach().numpy()
    if isinstance(value, dict):
        return Glimpse.of(value)
    if isinstance(value, (str, bytes, set)):
        raise ValueError(f"a {type(value).__name__}")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise ValueError(f"a {type(value).__name__}") from err
    if array.dtype.kind not in "biufc":
        raise ValueError(f"a {type(value).__name__}")
    return array


# ------------------------------------------------------------------ the gradient question
def edge_name(i: int, flow: GradFlow) -> str:
    """An input edge in a message: ``w`` for a leaf, else ``input 1 (TanhBackward0 n3)``."""
    if flow.label.startswith("leaf "):
        return flow.label.split(" ")[1]
    return f"input {i} ({flow.label})"


def gradient_question(record: StepRecord) -> str:
    """The question of a step whose result is hidden, in the learner's words."""
    symbol = "x̄" if record.leaf is not None else "ȳ"  # the panel's names
    incoming = ", ".join(format_array(g) for g in record.grads_in)
    head = f"Step {record.step}: {record.name} {record.node} receives {symbol} = {incoming}."
    if record.leaf is not None:
        before = "None" if record.leaf.before is None else format_array(record.leaf.before)
        return (
            f"{head} {record.leaf.name}.grad is {before} before this step. "
            f"What is {record.leaf.name}.grad after it?"
        )
    if len(record.grads_out) == 1:
        asked = f"What gradient does it send to {edge_name(0, record.grads_out[0])}?"
    else:
        names = ", ".join(edge_name(i, f) for i, f in enumerate(record.grads_out))
        asked = (
            "What gradient does it send to each input? A list, one per input in this "
            f"order: {names} (None for an input that takes no gradient)."
        )
    return f"{head} {asked}{_glimpse_hint(record)}"


def _glimpse_hint(record: StepRecord) -> str:
    """For a big gradient, how to predict it in part."""
    sizes = [np.size(f.value) for f in record.grads_out if isinstance(f.value, np.ndarray)]
    if not sizes or max(sizes) <= BIG:
        return ""
    return (
        " A big one may be given by its shape and a few elements: "
        "{'shape': (64, 10), (0, 3): 0.25}."
    )


def expected_gradients(record: StepRecord) -> list[tuple[str, object]]:
    """``(what, expected)`` per answer the step asks for."""
    if record.leaf is not None:
        return [(f"your {record.leaf.name}.grad after step {record.step}", record.leaf.after)]
    return [
        (f"your gradient for {edge_name(i, flow)}", flow.value)
        for i, flow in enumerate(record.grads_out)
    ]


def check_gradient(record: StepRecord, answer) -> Verdict:
    """``answer`` against what the step sent: one value per input edge."""
    wanted = expected_gradients(record)
    if any(isinstance(value, str) for _, value in wanted):
        return unreadable(
            f"This trace kept only a summary of step {record.step}'s gradients, "
            "not their values: there is nothing to check a prediction against."
        )
    answers = _one_per_edge(answer, len(wanted), record)
    if isinstance(answers, Verdict):
        return answers
    upstream = record.grads_in[0] if len(record.grads_in) == 1 else None
    findings = []
    for (what, expected), got in zip(wanted, answers):
        others = {w: e for w, e in wanted if w != what}
        try:
            finding = _diagnose(what, expected, got, upstream, others, record)
        except ValueError as err:
            return unreadable(f"Your prediction names {err}.")
        if finding is not None:
            findings.append(finding)
    if findings:
        return Verdict(False, " ".join(f.sentences() for f in findings), findings=tuple(findings))
    sent = "; ".join(f"{what[5:]}: {format_array(value)}" for what, value in wanted)
    return Verdict(True, f"Right. {sent[:1].upper()}{sent[1:]}.")


def _one_per_edge(answer, count: int, record: StepRecord):
    """The answer as ``count`` arrays (or None), or an unreadable verdict saying why."""
    if count == 1:
        answer = [answer]
    elif not isinstance(answer, (list, tuple)) or len(answer) != count:
        given = f"{len(answer)} values" if isinstance(answer, (list, tuple)) else "one value"
        return unreadable(
            f"{record.name} {record.node} has {count} inputs, and you gave {given}: give a "
            f"list of {count} gradients, one per input (None for one that takes none)."
        )
    try:
        return [as_values(value) for value in answer]
    except ValueError as err:
        return unreadable(
            f"Your prediction holds {err}: write a gradient as numbers, or a big one as a "
            "dict of its shape and a few elements, {'shape': (64, 10), (0, 3): 0.25}."
        )


def _diagnose(what, expected, got, upstream, others, record) -> Finding | None:
    """The checkers' diagnosis; with a few more where the step knows more."""
    if isinstance(got, Glimpse):
        return _diagnose_glimpse(what, expected, got)
    finding = compare(what, expected, got, upstream=upstream)
    if finding is None or finding.kind not in ("elements", "factor"):
        return finding
    swapped = diagnose_swapped(what, expected, got, others) if finding.kind == "elements" else None
    if swapped is not None:
        return swapped
    if record.leaf is None:
        return finding
    mistake = known_mistake(finding, leaf_mistakes(record))
    if mistake is None:
        return finding
    return Finding(mistake.kind, what, finding.observation, mistake.says, finding.expected, got)


def _diagnose_glimpse(what: str, expected, glimpse: Glimpse) -> Finding | None:
    """The shape, then each element given, as the checkers compare them."""
    if expected is None:
        return compare(what, None, np.broadcast_to(0.0, glimpse.shape or ()))
    expected = np.asarray(expected)
    if glimpse.shape is not None:
        if np.prod(glimpse.shape, dtype=float) > BIG * max(expected.size, 1):
            raise ValueError(f"a shape {glimpse.shape}, far bigger than this gradient")
        shaped = np.broadcast_to(0.0, glimpse.shape)  # no memory taken
        finding = diagnose_shape(what, expected, shaped, values_known=False)
        if finding is not None:
            return finding
    for index, value in glimpse.elements.items():
        if len(index) != expected.ndim or not all(
            -n <= i < n for i, n in zip(index, expected.shape)
        ):
            raise ValueError(
                f"element {list(index)}, which a gradient of shape {tuple(expected.shape)} has not"
            )
        finding = compare(f"{what}{index_text(index)}", expected[index], value)
        if finding is not None:
            return finding
    return None


def leaf_mistakes(record: StepRecord) -> list[Mistake]:
    """A leaf's ``.grad`` replaced rather than added to: the usual wrong answer."""
    leaf = record.leaf
    if leaf.before is None or not record.grads_in or record.grads_in[0] is None:
        return []
    return [
        Mistake(
            "not_accumulated",
            np.asarray(record.grads_in[0]),
            f"backward adds into .grad: {leaf.name}.grad was {format_array(leaf.before)}, so "
            f"it becomes that plus the incoming x̄",
        )
    ]


# ------------------------------------------------------------------ the node question
def node_question(record: StepRecord) -> str:
    return (
        f"Step {record.step} ran {record.name} {record.node}. Which node runs at step "
        f"{record.step + 1}? Its name (MulBackward0) or its id (n4)."
    )


def check_node(guess, ran: list[StepRecord], step: int, graph: dict[str, Node] | None) -> Verdict:
    """Is ``guess`` (a node's name or id) the node of step ``step`` (from 1)?

    ``ran`` is every record of the pass.

    ``graph`` maps node ids to the live nodes (None for a trace): with it, a wrong guess
    is read as lesson 3's order check reads one, naming the rule it breaks.
    """
    record = ran[step - 1]
    if not isinstance(guess, str):
        kind = type(guess).__name__
        return unreadable(f"Name a node (MulBackward0) or give its id (n4), not a {kind}.")
    names = {r.name for r in ran}
    if guess in (record.name, record.node):
        return Verdict(True, f"Right: step {step} runs {record.name} {record.node}.")
    if guess not in names and guess not in {r.node for r in ran}:
        known = ", ".join(sorted(names))
        return unreadable(f"{guess!r} is no node of this graph: its nodes are named {known}.")
    said = f"Step {step} runs {record.name} {record.node}, not {guess}."
    if graph is None:
        return Verdict(False, said)
    return Verdict(False, f"{said} {_order_reason(guess, ran, step, graph)}")


def _order_reason(guess: str, ran: list[StepRecord], step: int, graph: dict) -> str:
    """Lesson 3's words for why ``guess`` cannot, or does not, run at ``step``."""
    nodes = [graph[r.node] for r in ran]
    by_id = {r.node: r.name for r in ran}
    names = [r.name for r in ran[: step - 1]] + [by_id.get(guess, guess)]
    reading = read_order(names, nodes)
    if len(reading) < len(names):
        return not_ready(names, reading, nodes, node_label)
    return other_choice(step - 1, reading, nodes, node_label)


def live_graph(roots) -> dict[str, Node]:
    return {node.uid: node for node in walk(roots)}


def score_text(right: int, asked: int) -> str:
    return f"score {right} of {asked}" if asked else "no prediction yet"
