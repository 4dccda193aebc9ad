"""Predict mode is fair (issue 39, point 4).

- typing the digits the question shows is right: the tolerance (rtol 1e-3) is the one
  the question states, and the question shows the numbers a leaf's ``.grad`` is made of;
- a wrong prediction gets its diagnosis at that tolerance (a factor of 2 typed to four
  digits is still a factor of 2) and one more try before the reveal;
- a guess the lesson's own code makes to demonstrate (``demo=True``) is never scored;
- a prediction is untrusted input: every odd value gets a verdict that is not "right",
  never a crash, never a megabyte message;
- every node a question names is named the same way in the picture.

The right answers are PyTorch's, computed here.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.core import events
from workbench.exercises.diagnose import compare
from workbench.widgets import BackwardStepper

PREDICT_RTOL = 1e-3  # the tolerance the questions state

X = [0.5, -1.0, 2.0]
LONGEST_MESSAGE = 600  # characters: a verdict is a sentence or two


def sigmoid_quiz(**options) -> tuple[BackwardStepper, torch.Tensor]:
    """Lesson 1's quiz, ``(3 * sigmoid(x)).sum()``, and PyTorch's x.grad for it."""
    events.reset_ids()
    x = wb.tensor(X, requires_grad=True, name="x")
    stepper = BackwardStepper((3 * wb.sigmoid(x)).sum(), predict=True, **options)
    tx = torch.tensor(X, requires_grad=True)
    (3 * torch.sigmoid(tx)).sum().backward()
    return stepper, tx.grad.numpy()


def at_the_leaf(stepper: BackwardStepper) -> BackwardStepper:
    """Shown, as the lesson's own demonstration, up to the question about x.grad."""
    while stepper.question and stepper._record_at(stepper.revealed + 1).leaf is None:
        stepper.show_me(demo=True)
        stepper.next()
    return stepper


def shown_numbers(question: str, after: str) -> list[float]:
    """The numbers the question prints after ``after`` (up to "shape" or the sentence's end)."""
    text = question.split(after, 1)[1]
    text = re.split(r"shape|\. ", text, maxsplit=1)[0]
    return [float(n) for n in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?", text)]


# ------------------------------------------------------------------ 1. the digits shown
def test_the_digits_the_question_shows_are_a_right_answer():
    stepper, x_grad = sigmoid_quiz()
    at_the_leaf(stepper)
    question = stepper.question
    assert "x.grad is None before this step" in question, question
    shown = shown_numbers(question, "receives x̄ = ")
    assert len(shown) == 3 and not np.array_equal(shown, x_grad)  # rounded, not exact
    np.testing.assert_allclose(shown, x_grad, rtol=PREDICT_RTOL)  # the same numbers
    verdict = stepper.predict(shown)
    assert verdict.right, verdict.message
    assert stepper.score == (1, 1)
    stepper.close()


def test_the_question_states_its_tolerance():
    stepper, _ = sigmoid_quiz()
    assert "rtol 1e-3" in stepper.question and "3 significant digits" in stepper.question
    assert "rtol 1e-3" in stepper.question_text.value
    stepper.close()


def leaf_question(value: float, **options) -> BackwardStepper:
    """A stepper asking x.grad after ``x * value``'s backward: it is ``value``."""
    events.reset_ids()
    x = wb.tensor(1.0, requires_grad=True, name="x")
    stepper = BackwardStepper(x * value, predict=True, **options)
    return at_the_leaf(stepper)


@pytest.mark.parametrize("typed, right", [(1.907, True), (1.9073, True), (1.91, False)])
def test_a_number_typed_as_shown_is_right(typed, right):
    stepper = leaf_question(1.90734)
    verdict = stepper.predict(typed)
    assert verdict.right is right, verdict.message
    stepper.close()


def test_a_wrong_answer_shows_digits_that_differ():
    stepper = leaf_question(1.90734)
    verdict = stepper.predict(1.9045)
    assert not verdict.right and "1.905 where 1.907 was expected" in verdict.message
    stepper.close()
    # a check with a tighter tolerance never says "0.705 where 0.705 was expected"
    finding = compare("your x.grad", np.array([0.70501107]), np.array([0.705]))
    assert "it is 0.705 where 0.70501 was expected" in finding.observation, finding.observation


# ------------------------------------------------------------------ 2. diagnosis, two tries
def test_a_factor_of_two_typed_to_four_digits_is_named():
    stepper, x_grad = sigmoid_quiz()
    at_the_leaf(stepper)
    typed = np.round(2 * x_grad, 4)
    verdict = stepper.predict(typed)
    assert not verdict.right and [f.kind for f in verdict.findings] == ["factor"], verdict.message
    assert "2 times the expected value" in verdict.message
    stepper.close()


@pytest.mark.parametrize(
    "mistake, kind",
    [
        (lambda g: -np.round(g, 4), "sign"),
        (lambda g: np.round(g / 3, 4), "factor"),  # ȳ = 3 forgotten is a factor here
    ],
)
def test_a_sign_or_factor_typed_to_four_digits_is_named(mistake, kind):
    stepper, x_grad = sigmoid_quiz()
    at_the_leaf(stepper)
    verdict = stepper.predict(mistake(x_grad))
    assert [f.kind for f in verdict.findings] == [kind], verdict.message
    stepper.close()


def test_a_broadcast_gradient_typed_to_four_digits_not_summed_is_named():
    events.reset_ids()
    a = wb.tensor([[0.1234, 0.5678], [0.9123, 0.4567]], requires_grad=True, name="a")
    b = wb.tensor([0.3333, 0.6667], requires_grad=True, name="b")
    stepper = BackwardStepper((a * b).sum(), predict=True)
    stepper.predict(np.ones((2, 2)))
    stepper.next()
    unsummed = np.round(a.detach().numpy(), 4)  # b̄ before the collapse-sum, as typed
    verdict = stepper.predict([np.round(np.broadcast_to(b.detach().numpy(), (2, 2)), 4), unsummed])
    (finding,) = verdict.findings
    assert finding.kind == "shape" and finding.details["right_once_summed"], verdict.message
    stepper.close()


def test_a_wrong_answer_gets_one_more_try_then_the_reveal():
    stepper, x_grad = sigmoid_quiz()
    at_the_leaf(stepper)
    step = stepper.revealed + 1
    first = stepper.predict(2 * x_grad)
    assert not first.right and first.counted and first.tries_left == 1
    assert "one more try" in first.message.lower()
    assert stepper.hidden and stepper.revealed == step - 1 and stepper.score == (0, 0)
    assert "one more try" in stepper.verdict_text.value.lower()
    assert not stepper.check_button.disabled
    second = stepper.predict(-x_grad)
    assert not second.right and second.tries_left == 0
    assert [f.kind for f in second.findings] == ["sign"]
    assert not stepper.hidden and stepper.revealed == step and stepper.score == (0, 1)
    stepper.close()


def test_a_second_try_that_is_right_scores():
    stepper, x_grad = sigmoid_quiz()
    at_the_leaf(stepper)
    assert not stepper.predict(2 * x_grad).right
    verdict = stepper.predict(x_grad)
    assert verdict.right and stepper.score == (1, 1) and not stepper.hidden
    stepper.close()


def test_tries_can_be_one():
    stepper, x_grad = sigmoid_quiz(tries=1)
    at_the_leaf(stepper)
    verdict = stepper.predict(2 * x_grad)
    assert verdict.tries_left == 0 and not stepper.hidden and stepper.score == (0, 1)
    stepper.close()
    with pytest.raises(ValueError, match="tries"):
        sigmoid_quiz(tries=0)


def test_a_node_guess_gets_one_more_try_too():
    events.reset_ids()
    x = wb.tensor(X, requires_grad=True, name="x")
    w = wb.tensor([1.5, -0.5, 0.25], requires_grad=True, name="w")
    stepper = BackwardStepper((wb.tanh(x) * w).sum(), predict="node")
    first = stepper.predict("TanhBackward0")
    assert not first.right and first.tries_left == 1 and stepper.step == 1
    assert stepper.predict("MulBackward0").right and stepper.step == 2
    assert stepper.score == (1, 1)
    stepper.close()


# ------------------------------------------------------------------ 3. demonstrations
def test_the_lessons_demonstration_guesses_never_count():
    stepper, x_grad = sigmoid_quiz()
    shown = stepper.predict(np.ones(3), demo=True)
    assert shown.right and shown.demo and "demonstration" in shown.message
    assert stepper.score == (0, 0) and not stepper.hidden
    stepper.next()
    stepper.show_me(demo=True)
    stepper.next()
    slip = stepper.predict(np.ones(3), demo=True)  # wrong: shown at once, not scored
    assert not slip.right and not stepper.hidden and stepper.score == (0, 0)
    stepper.next()
    assert stepper.predict(x_grad).right and stepper.score == (1, 1)
    stepper.close()


# ------------------------------------------------------------------ 4. untrusted input
class LyingEq:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


class LyingFloat:
    def __float__(self):
        return 1.0


class LyingArray:
    """Says it is the right answer the first time numpy asks, something else after."""

    def __init__(self):
        self.calls = 0

    def __array__(self, dtype=None, copy=None):
        self.calls += 1
        return np.ones(3) if self.calls == 1 else np.zeros(3)


class LyingList(list):
    def __eq__(self, other):
        return True


class Word(str):
    pass


class One(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


def hostile_predictions() -> list:
    return [
        pytest.param({}, id="empty dict"),
        pytest.param({"shape": (3,)}, id="dict with only a shape"),
        pytest.param([{}], id="list of an empty dict"),
        pytest.param([{}, {}, {}], id="list of empty dicts"),
        pytest.param({"shape": float("inf")}, id="infinite shape"),
        pytest.param({"shape": None}, id="None shape"),
        pytest.param({"shape": (-3,), 0: 1.0}, id="negative shape"),
        pytest.param({"shape": "3", 0: 1.0}, id="text shape"),
        pytest.param({(True,): 1.0}, id="True as an index"),
        pytest.param({0: LyingFloat()}, id="glimpse of a lying float"),
        pytest.param("x" * 1_000_000, id="megabyte string"),
        pytest.param({"x" * 1_000_000: 1.0}, id="megabyte key"),
        pytest.param({0: "x" * 1_000_000}, id="megabyte value"),
        pytest.param([1.0] * 2_000_000, id="two million numbers"),
        pytest.param(LyingEq(), id="lying __eq__"),
        pytest.param(LyingFloat(), id="lying __float__"),
        pytest.param(LyingArray(), id="lying __array__"),
        pytest.param([LyingFloat()] * 3, id="list of lying floats"),
        pytest.param(LyingList([1.0, 1.0, 1.0]), id="list subclass"),
        pytest.param([One(1)] * 3, id="int subclass"),
        pytest.param(Word("1"), id="str subclass"),
        pytest.param([True, True, True], id="booleans"),
        pytest.param(np.array([1, 1, 1], dtype=object), id="object array"),
        pytest.param(float("nan"), id="NaN"),
        pytest.param([[[[[[[[[[1.0]]]]]]]]]], id="deeply nested"),
    ]


@pytest.mark.parametrize("answer", hostile_predictions())
def test_an_untrusted_prediction_is_never_right_and_never_a_crash(answer):
    events.reset_ids()
    x = wb.tensor(X, requires_grad=True, name="x")
    stepper = BackwardStepper(wb.sigmoid(x).sum(), predict=True)
    verdict = stepper.predict(answer)  # step 1: sum sends ones, shape (3,)
    assert not verdict.right, verdict.message
    assert verdict.message and len(verdict.message) < LONGEST_MESSAGE, verdict.message[:2000]
    stepper.close()


def test_a_node_guess_a_megabyte_long_is_said_short():
    events.reset_ids()
    x = wb.tensor(X, requires_grad=True, name="x")
    stepper = BackwardStepper(wb.sigmoid(x).sum(), predict="node")
    for guess in ("x" * 1_000_000, Word("SigmoidBackward0"), LyingEq()):
        verdict = stepper.predict(guess)
        assert not verdict.right and len(verdict.message) < LONGEST_MESSAGE, verdict.message[:999]
    stepper.close()


def test_a_multi_input_node_gets_a_verdict_for_empty_dicts():
    events.reset_ids()
    x = wb.tensor(X, requires_grad=True, name="x")
    w = wb.tensor([1.5, -0.5, 0.25], requires_grad=True, name="w")
    stepper = BackwardStepper((x * w).sum(), predict=True)
    stepper.predict(np.ones(3))
    stepper.next()
    for answer in ([{}, {}], [{"shape": (3,)}, {"shape": (3,)}], [{}, w]):
        verdict = stepper.predict(answer)
        assert not verdict.right and stepper.hidden, verdict.message
    stepper.close()


def test_a_torch_tensor_that_requires_grad_is_read_as_numbers():
    stepper, x_grad = sigmoid_quiz()
    right = stepper.predict(torch.ones(3, requires_grad=True))
    assert right.right, right.message
    stepper.close()
    stepper, x_grad = sigmoid_quiz()
    wrong = stepper.predict(torch.full((3,), 2.0, requires_grad=True))
    assert not wrong.right and [f.kind for f in wrong.findings] == ["factor"], wrong.message
    stepper.close()


@pytest.mark.parametrize("make", [torch.tensor, wb.tensor], ids=["torch", "workbench"])
def test_a_right_bfloat16_answer_is_right_and_a_wrong_one_wrong(make):
    for value, is_right in [(1.0, True), (1.5, False)]:
        stepper, _ = sigmoid_quiz()
        dtype = torch.bfloat16 if make is torch.tensor else wb.bfloat16
        verdict = stepper.predict(make([value] * 3, dtype=dtype))
        assert verdict.right is is_right, verdict.message
        stepper.close()


def test_a_bfloat16_answer_within_the_tolerance_is_right():
    stepper = leaf_question(0.8125)  # a bfloat16 exactly
    verdict = stepper.predict(torch.tensor(0.8125, dtype=torch.bfloat16))
    assert verdict.right, verdict.message
    stepper.close()


def lesson_cell(lesson: str, cell_id: str) -> str:
    import json
    from pathlib import Path

    notebook = json.loads((Path(__file__).parent.parent / "lessons" / lesson).read_text())
    (cell,) = [c for c in notebook["cells"] if c.get("id") == cell_id]
    return "".join(cell["source"])


def test_lesson_1s_last_question_is_answered_by_what_it_shows(capsys):
    """Lesson 1's quiz cell: its demonstrations leave the score at (0, 0), and typing
    the x̄ its last question prints is right."""
    names = {"np": np, "wb": wb}
    exec(lesson_cell("01_sigmoid_gradient.ipynb", "predict-sigmoid-code"), names)
    quiz = names["quiz"]
    assert quiz.score == (0, 0)
    printed = capsys.readouterr().out
    question = quiz.question
    assert question in printed and "x.grad" in question and "rtol 1e-3" in question
    verdict = quiz.predict(shown_numbers(question, "receives x̄ = "))
    assert verdict.right and quiz.score == (1, 1), verdict.message
    quiz.close()


# ------------------------------------------------------------------ 5. names in the picture
NODE_ID = re.compile(r"\bn\d+\b")


def twice_mul():
    """``((x * w) * x).sum()``: two MulBackward0 nodes, told apart by the order made."""
    events.reset_ids()
    x = wb.tensor(X, requires_grad=True, name="x")
    w = wb.tensor([1.5, -0.5, 0.25], requires_grad=True, name="w")
    return ((x * w) * x).sum()


def picture_names(stepper: BackwardStepper) -> set:
    """Every node's name as its label reads: the first line, with "(the second mul)"."""
    found = set()
    for vertex in stepper._unfolded.vertices.values():  # the model the picture is drawn from
        if vertex.kind == "backward":
            which = (
                vertex.lines[1] if vertex.lines[1:2] and vertex.lines[1].startswith("(the ") else ""
            )
            found.add(f"{vertex.lines[0]} {which}".strip())
        elif vertex.kind == "accumulate":  # "AccumulateGrad" over the leaf "x"
            found.add(f"{vertex.lines[0]} ({vertex.lines[1].split(' (')[0]})")
    return found


def named_nodes(text: str) -> list:
    """The nodes a sentence names: ``MulBackward0``, ``MulBackward0 (the second mul)``."""
    pattern = r"\b(?:\w+Backward\d*|AccumulateGrad)(?: \((?:the \w+ \w+|\w+)\))?"
    return re.findall(pattern, text)


def test_every_node_a_question_names_is_labelled_so_in_the_picture():
    stepper = BackwardStepper(twice_mul(), predict=True)
    shown = picture_names(stepper)
    assert {"MulBackward0 (the first mul)", "MulBackward0 (the second mul)"} <= shown, shown
    said = []
    while stepper.question:
        said.append(stepper.question)
        said.append(stepper.predict([1e9] * 3 if stepper.record else 0).message)
        said.append(stepper.show_me().message)
        stepper.next()
    text = " ".join(said)
    assert not NODE_ID.search(text), NODE_ID.search(text)
    named = named_nodes(text)
    assert "MulBackward0 (the second mul)" in named and "AccumulateGrad (x)" in named, text
    for name in named:
        assert name in shown, f"{name!r} is not how the picture labels a node: {sorted(shown)}"
    assert "(the second mul)" in stepper.picture.dot  # drawn in the label the browser gets
    stepper.close()


def test_node_guesses_use_and_accept_the_pictures_names():
    stepper = BackwardStepper(twice_mul(), predict="node")
    assert not NODE_ID.search(stepper.question), stepper.question
    verdict = stepper.predict("MulBackward0 (the second mul)")
    assert verdict.right, verdict.message
    assert verdict.message == "Right: step 2 runs MulBackward0 (the second mul)."
    wrong = stepper.predict("AccumulateGrad (x)")  # not ready: the first mul sends to x too
    assert not wrong.right and "it is not ready then" in wrong.message, wrong.message
    assert not NODE_ID.search(wrong.message), wrong.message
    assert stepper.predict("MulBackward0 (the first mul)").right
    stepper.close()


def test_the_panel_names_nodes_as_the_picture_does():
    stepper = BackwardStepper(twice_mul())
    stepper.go(2)
    title = re.search(r"<div class='wb-title'>(.*?)</div>", stepper.panel.value).group(1)
    assert title == "Step 2 of 5: <b>MulBackward0 (the second mul)</b>", title
    assert "→ input 0: MulBackward0 (the first mul)" in stepper.panel.value
    stepper.close()


def test_intermediate_tensors_are_named_after_the_op_that_made_them():
    """Issue 39, point 6: ``tanh_out``, ``mul_out_2``, not ``t2``; a name given stays."""
    events.reset_ids()
    x = wb.tensor(X, requires_grad=True, name="x")
    h = wb.tanh(x)
    loss = (h * x * h).sum()
    bare_id = re.compile(r"^(t\d+|n\d+\.out)$")
    for kind in ("backward", "forward"):
        lines = [line for v in wb.viz.build_model(loss, kind).vertices.values() for line in v.lines]
        assert not [line for line in lines if bare_id.match(line)], (kind, lines)
        assert {"tanh_out", "sum_out"} <= set(lines), (kind, lines)
    forward = [
        line for v in wb.viz.build_model(loss, "forward").vertices.values() for line in v.lines
    ]
    assert {"mul_out_1", "mul_out_2"} <= set(forward), forward  # the first mul's, the second's
    h.name = "h"
    named = [v.lines[0] for v in wb.viz.build_model(loss, "forward").vertices.values()]
    assert "h" in named and "tanh_out" not in named, named


def test_the_whole_pass_check_reads_a_bfloat16_torch_prediction():
    """Lesson 2's graded session hands answers to a stepper: a right bfloat16 one is right."""
    from workbench.exercises.whole_pass import check_whole_pass

    ones, w = np.ones((2, 2)), np.array([0.5, -1.0])
    b_bar, w_bar = np.array([4.0]), np.array([4.0, 6.0])
    steps = [ones, [ones, b_bar], b_bar, [ones * w, w_bar], ones * w, w_bar]  # x's leaf, then w's
    as_bfloat16 = [torch.tensor(ones, dtype=torch.bfloat16), *steps[1:]]
    assert "predicted right" in str(check_whole_pass(lambda: as_bfloat16))


def test_a_grad_added_from_the_digits_shown_is_right():
    """x.grad after = before + x̄, each shown to four decimals: their sum is right."""
    events.reset_ids()
    x = wb.tensor([1.0, 1.0], requires_grad=True, name="x")
    (x * 0.00504).sum().backward()  # x.grad holds 0.00504, shown as 0.005
    stepper = at_the_leaf(BackwardStepper((x * 0.00504).sum(), predict=True))
    question = stepper.question
    before = shown_numbers(question, "x.grad is ")
    incoming = shown_numbers(question, "receives x̄ = ")
    assert before == incoming == [0.005, 0.005], question
    verdict = stepper.predict(np.add(before, incoming))  # 0.01 where 0.01008 is exact
    assert verdict.right, verdict.message
    stepper.close()


def test_a_right_leaf_prediction_says_x_grad_in_lower_case():
    stepper, x_grad = sigmoid_quiz()
    verdict = at_the_leaf(stepper).predict(x_grad)
    assert verdict.message.startswith("Right. x.grad after step 4: "), verdict.message
    stepper.close()


def test_the_whole_pass_check_says_a_megabyte_string_short():
    from workbench.exercises import ExerciseError
    from workbench.exercises.whole_pass import check_whole_pass

    with pytest.raises(ExerciseError) as caught:
        check_whole_pass(lambda: ["x" * 1_000_000] * 6)
    assert len(str(caught.value)) < LONGEST_MESSAGE, str(caught.value)[:999]


def test_a_traces_pictures_name_tensors_and_nodes_the_same_way():
    events.reset_ids()
    x = wb.tensor(X, requires_grad=True, name="x")
    with wb.trace() as trace:
        h = wb.tanh(x)
        loss = (h * x * h).sum()
        loss.backward()
    forward = [v.lines[0] for v in wb.viz.build_model(trace, "forward").vertices.values()]
    assert {"tanh_out", "mul_out_1", "mul_out_2", "sum_out"} <= set(forward), forward
    backward = wb.viz.build_model(trace, "backward")
    assert sorted(n for n in backward.names.values() if n.startswith("Mul")) == [
        "MulBackward0 (the first mul)",
        "MulBackward0 (the second mul)",
    ]
    stepper = BackwardStepper(trace, predict=True)
    stepper.show_me()
    stepper.next()
    assert stepper.question.startswith("Step 2: MulBackward0 (the second mul) receives")
    stepper.close()
