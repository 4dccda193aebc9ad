"""Predict, then reveal: check a learner's guess about the next step of a backward pass.

Two questions, both about a step the stepper has not shown yet:

- **the gradient**: what a node sends to each of its inputs (for a leaf's node, the
  leaf's ``.grad`` after it), given the gradient ȳ that reached it;
- **the node**: which node runs next.

The answer is checked with the exercise checkers' own diagnoses
(:func:`~workbench.exercises.diagnose.compare`: a factor, a sign, a broadcast gradient
not summed back, the gradient of the other input; lesson 3's reading of a node order),
so the stepper says what a checker would. Nothing here imports ipywidgets.

A prediction is right when it matches to the digits the question shows: within
``PREDICT_RTOL`` of the value, or ``PREDICT_ATOL``, one unit of the fourth decimal the
panel shows (two numbers read off the screen and added are off by that much at most);
the question says so. The diagnoses use the same tolerance,
so a factor of 2 typed to four digits is still named a factor of 2.

A prediction is untrusted input: it is read as plain numbers only (Python's own int,
float and complex, lists and tuples of them, numpy arrays, tensors), never through an
object's own ``__eq__``, ``__float__`` or ``__array__``; anything else gets a sentence
on what a prediction looks like, cut short with :mod:`reprlib`.
"""

from __future__ import annotations

import ast
import reprlib
import sys
import warnings
from dataclasses import dataclass

import numpy as np

from ..core.dtypes import bfloat16
from ..core.tensor import Tensor
from ..exercises.diagnose import (
    Finding,
    capitalize,
    compare,
    diagnose_shape,
    diagnose_swapped,
    index_text,
)
from ..exercises.predictions import Mistake, known_mistake, not_ready, other_choice, read_order
from ..record.graph import Node, walk
from .panel import format_array
from .steps import GradFlow, StepRecord, node_label

BIG = 16  # gradients with more elements than this may be predicted in part (a Glimpse)
PREDICT_RTOL = 1e-3  # a prediction this close to the value is right: the question says so
PREDICT_ATOL = 1e-4  # one unit of the fourth decimal the panel shows (two added: at most that)
TOLERANCE_TEXT = (
    "Right to 3 significant digits or 4 decimals (rtol 1e-3, atol 1e-4): the digits shown "
    "are enough."
)
MOST_NUMBERS = 100_000  # numbers in one prediction: far more than any question shows
DEEPEST = 8  # lists nested deeper than this are no gradient
WHAT_A_PREDICTION_IS = (
    "write a gradient as numbers (0.5, [1, 2], a Tensor), or a big one as a dict of its "
    "shape and a few elements, {'shape': (64, 10), (0, 3): 0.25}"
)

SHORT = reprlib.Repr()
SHORT.maxstring = SHORT.maxother = 40
SHORT.maxlist = SHORT.maxtuple = SHORT.maxdict = 4
SHORT.maxlevel = 2


def short(value) -> str:
    """A value in a message, cut short: a prediction may be a megabyte long. An object
    of the learner's own class is named by its type (its ``__repr__`` is not run)."""
    scalars = (str, bytes, int, float, complex, type(None))
    if type(value) in scalars:
        return SHORT.repr(value)
    if type(value) in (list, tuple) and all(type(item) in scalars for item in value[:9]):
        return SHORT.repr(value[:9])
    return f"a {type(value).__name__}"


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
    tries_left: int = 0  # wrong tries the learner still has at this step
    demo: bool = False  # a lesson's demonstration: shown, never scored

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
            if type(key) is str and key == "shape":
                shape = read_shape(value)
                continue
            index = read_index(key)
            number = as_values(value)
            if not isinstance(number, np.ndarray) or number.size != 1:
                raise ValueError(f"a value {short(value)} for element {short(key)} (one number)")
            elements[index] = number.reshape(())
        if not elements and shape is None:
            raise ValueError("an empty dict")
        return cls(shape, elements)


def is_whole(value) -> bool:
    """A plain whole number (True and False are not one, nor an int's subclass)."""
    return type(value) is int or (isinstance(value, np.integer) and type(value) is not np.bool_)


def read_shape(value) -> tuple:
    """A glimpse's shape: whole numbers, at least 0, at most 32 of them."""
    sizes = value if type(value) in (tuple, list) else (value,)
    if len(sizes) > 32 or not all(is_whole(n) and n >= 0 for n in sizes):
        raise ValueError(f"a shape {short(value)} (write whole numbers, like (64, 10))")
    return tuple(int(n) for n in sizes)


def read_index(key) -> tuple:
    """A glimpse's element index: a whole number or a tuple of them."""
    index = key if type(key) is tuple else (key,)
    if len(index) > 32 or not all(is_whole(i) for i in index):
        raise ValueError(f"a key {short(key)} (write an index, like (0, 3), or 'shape')")
    return tuple(int(i) for i in index)


def as_values(value):
    """A predicted gradient as an array (a Tensor's values, a list, a number), a
    :class:`Glimpse` of one (a dict), or None.

    Only plain values are read, never through a method of the learner's own class; a
    ``ValueError`` names what was given instead.
    """
    if value is None:
        return None
    if isinstance(value, Tensor):
        return numbers_of(value.detach().numpy(), value)
    if is_torch(value):
        return torch_values(value)
    if type(value) is dict:
        return Glimpse.of(value)
    if type(value) is np.ndarray:
        return numbers_of(value, value)
    plain_numbers(value, 0, [0])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy's warning about a ragged list
            array = np.asarray(value)
    except (ValueError, Warning) as err:
        raise ValueError(f"a ragged {type(value).__name__} (rows of different lengths)") from err
    return numbers_of(array, value)


def plain_numbers(value, depth: int, count: list) -> None:
    """``value`` is a plain number, or a list or tuple of them (nested), not too many."""
    if type(value) in (int, float, complex) or (
        isinstance(value, np.number) and type(value).__module__ == "numpy"
    ):
        count[0] += 1
    elif type(value) is np.ndarray and value.dtype.kind in "iufc":
        count[0] += value.size
    elif type(value) in (list, tuple) and depth < DEEPEST:
        for item in value:
            plain_numbers(item, depth + 1, count)
            if count[0] > MOST_NUMBERS:
                break
    elif type(value) in (list, tuple):
        raise ValueError(f"a {type(value).__name__} nested too deep to be a gradient")
    else:
        raise ValueError(f"the text {short(value)}" if type(value) is str else short(value))
    if count[0] > MOST_NUMBERS:
        raise ValueError(f"more than {MOST_NUMBERS:,} numbers, far more than this step has")


def numbers_of(array: np.ndarray, given) -> np.ndarray:
    """``array`` as float64 (or complex) numbers; True/False, text and objects refused."""
    if array.dtype == bfloat16:
        array = array.astype(np.float64)
    if array.size > MOST_NUMBERS:
        raise ValueError(f"more than {MOST_NUMBERS:,} numbers, far more than this step has")
    if array.dtype.kind == "b":
        raise ValueError("True/False values")
    if array.dtype.kind == "O":
        raise ValueError(f"a {type(given).__name__} of Python objects (numbers too large?)")
    if array.dtype.kind not in "iufc":
        raise ValueError(f"a {type(given).__name__} of {array.dtype} values")
    return array.astype(np.float64) if array.dtype.kind in "iu" else array.copy()


def is_torch(value) -> bool:
    """A real PyTorch tensor (torch is imported already when a learner has one), not an
    object that only says it comes from torch."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def torch_values(tensor) -> np.ndarray:
    """A PyTorch tensor's numbers (one that requires grad, or bfloat16, included)."""
    try:
        tensor = tensor.detach().cpu().resolve_conj().resolve_neg()
        if tensor.numel() > MOST_NUMBERS:
            raise ValueError(f"more than {MOST_NUMBERS:,} numbers, far more than this step has")
        if str(tensor.dtype) == "torch.bool":
            raise ValueError("True/False values")
        wide = tensor.cdouble() if tensor.is_complex() else tensor.double()
        return wide.numpy()
    except ValueError:
        raise
    except Exception as err:  # a tensor of another device, or a subclass that misbehaves
        raise ValueError(f"a PyTorch tensor it cannot read ({type(err).__name__})") from err


# ------------------------------------------------------------------ the gradient question
def called(uid: str, name: str, names: dict | None) -> str:
    """A node as the picture labels it (``MulBackward0 (the second mul)``, see
    :func:`workbench.viz.model.name_nodes`); its bare name where there is no picture."""
    return (names or {}).get(uid, name)


def edge_name(i: int, flow: GradFlow, names: dict | None = None) -> str:
    """An input edge in a message: ``w`` for a leaf, else ``input 1 → TanhBackward0``
    (the node the gradient goes to, as the picture names it)."""
    if flow.label.startswith("leaf "):
        return flow.label.split(" ")[1]
    if flow.target is None:
        return f"input {i} (it takes no gradient)"
    return f"input {i} → {called(flow.target, flow.label.split(' ')[0], names)}"


def gradient_question(record: StepRecord, names: dict | None = None) -> str:
    """The question of a step whose result is hidden, in the learner's words; ``names``
    maps node ids to the names the picture shows them by."""
    symbol = "x̄" if record.leaf is not None else "ȳ"  # the panel's names
    incoming = ", ".join(format_array(g) for g in record.grads_in)
    node = called(record.node, record.name, names)
    head = f"Step {record.step}: {node} receives {symbol} = {incoming}."
    if record.leaf is not None:
        before = "None" if record.leaf.before is None else format_array(record.leaf.before)
        return (
            f"{head} {record.leaf.name}.grad is {before} before this step. "
            f"What is {record.leaf.name}.grad after it? {TOLERANCE_TEXT}"
        )
    if len(record.grads_out) == 1:
        asked = f"What gradient does it send to {edge_name(0, record.grads_out[0], names)}?"
    else:
        edges = ", ".join(edge_name(i, f, names) for i, f in enumerate(record.grads_out))
        asked = (
            "What gradient does it send to each input? A list, one per input in this "
            f"order: {edges} (None for an input that takes no gradient)."
        )
    return f"{head} {asked}{_glimpse_hint(record)} {TOLERANCE_TEXT}"


def _glimpse_hint(record: StepRecord) -> str:
    """For a big gradient, how to predict it in part."""
    sizes = [np.size(f.value) for f in record.grads_out if isinstance(f.value, np.ndarray)]
    if not sizes or max(sizes) <= BIG:
        return ""
    return (
        " A big one may be given by its shape and a few elements: "
        "{'shape': (64, 10), (0, 3): 0.25}."
    )


def expected_gradients(record: StepRecord, names: dict | None = None) -> list[tuple[str, object]]:
    """``(what, expected)`` per answer the step asks for."""
    if record.leaf is not None:
        return [(f"your {record.leaf.name}.grad after step {record.step}", record.leaf.after)]
    return [
        (f"your gradient for {edge_name(i, flow, names)}", flow.value)
        for i, flow in enumerate(record.grads_out)
    ]


def check_gradient(record: StepRecord, answer, names: dict | None = None) -> Verdict:
    """``answer`` against what the step sent: one value per input edge."""
    wanted = expected_gradients(record, names)
    if any(isinstance(value, str) for _, value in wanted):
        return unreadable(
            f"This trace kept only a summary of step {record.step}'s gradients, "
            "not their values: there is nothing to check a prediction against."
        )
    answers = _one_per_edge(answer, len(wanted), called(record.node, record.name, names))
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
    return Verdict(True, f"Right. {capitalize(sent)}.")


def _one_per_edge(answer, count: int, node: str):
    """The answer as ``count`` arrays (or None), or an unreadable verdict saying why."""
    if count == 1:
        answer = [answer]
    elif not isinstance(answer, (list, tuple)) or len(answer) != count:
        given = f"{len(answer)} values" if isinstance(answer, (list, tuple)) else "one value"
        return unreadable(
            f"{node} has {count} inputs, and you gave {given}: give a "
            f"list of {count} gradients, one per input (None for one that takes none)."
        )
    try:
        return [as_values(value) for value in answer]
    except ValueError as err:
        return unreadable(f"Your prediction holds {err}: {WHAT_A_PREDICTION_IS}.")


def _diagnose(what, expected, got, upstream, others, record) -> Finding | None:
    """The checkers' diagnosis; with a few more where the step knows more."""
    if isinstance(got, Glimpse):
        return _diagnose_glimpse(what, expected, got)
    rtol, atol = PREDICT_RTOL, PREDICT_ATOL
    finding = compare(what, expected, got, upstream=upstream, rtol=rtol, atol=atol)
    if finding is None or finding.kind not in ("elements", "factor"):
        return finding
    swapped = None
    if finding.kind == "elements":
        swapped = diagnose_swapped(what, expected, got, others, rtol, atol)
    if swapped is not None:
        return swapped
    if record.leaf is None:
        return finding
    mistake = known_mistake(finding, leaf_mistakes(record), rtol, atol)
    if mistake is None:
        return finding
    return Finding(mistake.kind, what, finding.observation, mistake.says, finding.expected, got)


def _diagnose_glimpse(what: str, expected, glimpse: Glimpse) -> Finding | None:
    """The shape, then each element given, as the checkers compare them."""
    if expected is None:
        return compare(what, None, np.broadcast_to(0.0, glimpse.shape or ()))
    expected = np.asarray(expected)
    rtol, atol = PREDICT_RTOL, PREDICT_ATOL
    if glimpse.shape is not None:
        if np.prod(glimpse.shape, dtype=float) > BIG * max(expected.size, 1):
            raise ValueError(f"a shape {glimpse.shape}, far bigger than this gradient")
        shaped = np.broadcast_to(0.0, glimpse.shape)  # no memory taken
        finding = diagnose_shape(what, expected, shaped, values_known=False)
        if finding is not None:
            return finding
    if not glimpse.elements:  # a shape, and the right one: no values predicted yet
        raise ValueError(
            f"the right shape, {expected.shape}, and no element: give at least one "
            "element too, by its index, {'shape': (64, 10), (0, 3): 0.25}"
        )
    for index, value in glimpse.elements.items():
        if len(index) != expected.ndim or not all(
            -n <= i < n for i, n in zip(index, expected.shape)
        ):
            raise ValueError(
                f"element {list(index)}, which a gradient of shape {tuple(expected.shape)} has not"
            )
        finding = compare(
            f"{what}{index_text(index)}", expected[index], value, rtol=rtol, atol=atol
        )
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
def node_question(record: StepRecord, names: dict | None = None) -> str:
    return (
        f"Step {record.step} ran {called(record.node, record.name, names)}. Which node runs "
        f"at step {record.step + 1}? Its name as the picture shows it (MulBackward0)."
    )


def check_node(
    guess,
    ran: list[StepRecord],
    step: int,
    graph: dict[str, Node] | None,
    names: dict | None = None,
) -> Verdict:
    """Is ``guess`` (a node's name, its name as the picture shows it, or its id) the node
    of step ``step`` (from 1)?

    ``ran`` is every record of the pass; ``names`` maps node ids to the picture's names.

    ``graph`` maps node ids to the live nodes (None for a trace): with it, a wrong guess
    is read as lesson 3's order check reads one, naming the rule it breaks.
    """
    record = ran[step - 1]
    if type(guess) is not str:
        kind = type(guess).__name__
        return unreadable(f"Name a node as the picture does (MulBackward0), not a {kind}.")
    by_title = {called(r.node, r.name, names): r.node for r in ran}
    guess = by_title.get(guess, guess)  # "MulBackward0 (the second mul)" is that node
    node = called(record.node, record.name, names)
    if guess in (record.name, record.node):
        return Verdict(True, f"Right: step {step} runs {node}.")
    kinds = {r.name for r in ran}
    if guess not in kinds and guess not in {r.node for r in ran}:
        known = ", ".join(sorted(kinds))
        return unreadable(f"{short(guess)} is no node of this graph: its nodes are named {known}.")
    said = f"Step {step} runs {node}, not {called(guess, guess, names)}."
    if graph is None:
        return Verdict(False, said)
    return Verdict(False, f"{said} {_order_reason(guess, ran, step, graph, names)}")


def _order_reason(guess: str, ran: list[StepRecord], step: int, graph: dict, names) -> str:
    """Lesson 3's words for why ``guess`` cannot, or does not, run at ``step``."""
    nodes = [graph[r.node] for r in ran]
    by_id = {r.node: r.name for r in ran}
    order = [r.name for r in ran[: step - 1]] + [by_id.get(guess, guess)]
    reading = read_order(order, nodes)
    label = (lambda n: called(n.uid, node_label(n), names)) if names else node_label
    if len(reading) < len(order):
        return not_ready(order, reading, nodes, label)
    return other_choice(step - 1, reading, nodes, label)


def live_graph(roots) -> dict[str, Node]:
    return {node.uid: node for node in walk(roots)}


def score_text(right: int, asked: int) -> str:
    return f"score {right} of {asked}" if asked else "no prediction yet"
