"""Predict mode of the stepper: it asks before it shows.

``predict=True`` asks for the gradient each step sends on (hidden until a guess is
checked or Show me gives up); ``predict="node"`` asks which node runs next. The quiz
keeps the score, the tries left at the step asked, and how far the pass is shown;
the stepper asks it how far a move may go (:attr:`PredictQuiz.reachable`).
"""

from __future__ import annotations

import html
from dataclasses import replace
from typing import TYPE_CHECKING

import ipywidgets as widgets

from ..core.tensor import Tensor
from ..record.graph import Node
from .controls import wrapping_row
from .steps import LiveSteps, StepRecord
from .verdicts import (
    Verdict,
    check_gradient,
    check_node,
    gradient_question,
    live_graph,
    node_question,
    read_text,
    score_text,
    unreadable,
)

if TYPE_CHECKING:
    from .stepper import BackwardStepper

PREDICT_KINDS = {False: "", True: "gradient", "gradient": "gradient", "node": "node"}
DEMO_NOTE = "(A demonstration: not in your score.)"


def more_tries(left: int) -> str:
    """What a learner reads after a wrong guess with ``left`` tries still to go."""
    tries = "one more try" if left == 1 else f"{left} more tries"
    return f"You have {tries} before the step is shown."


class PredictQuiz:
    """The questions, answers and score of predict mode, and its question box.

    ``predicting`` is ``"gradient"``, ``"node"`` or ``""`` (asks nothing: every step is
    shown, and the quiz has no widgets). ``revealed`` counts the steps shown in full.
    """

    def __init__(self, owner: BackwardStepper, predict: bool | str, tries: int) -> None:
        if predict not in PREDICT_KINDS:
            raise ValueError(
                f"BackwardStepper: predict must be True (the gradients), 'node' (the next "
                f"node) or False, not {predict!r}."
            )
        if type(tries) is not int or tries < 1:
            raise ValueError(
                f"BackwardStepper: tries must be a whole number, 1 or more (the guesses a "
                f"step allows before it is shown), not {tries!r}."
            )
        self.owner = owner
        self.predicting = PREDICT_KINDS[predict]
        self.tries = tries
        self.wrong_tries = 0  # wrong guesses at the step asked now
        self.revealed = 0 if self.predicting == "gradient" else 1  # steps shown in full
        self.right = self.asked = 0
        self.verdict: Verdict | None = None  # the last prediction's

    def build(self) -> list:
        """The question box of predict mode: the question, an answer, Check and Show me."""
        if not self.predicting:
            return []
        owner = self.owner
        self.question_text = widgets.HTML()
        self.answer_box = widgets.Text(placeholder="e.g. 0.5, [1, 2], [[1, 2], None]")
        if self.predicting == "node":
            self.answer_box.placeholder = "a node's name, e.g. MulBackward0"
        self.check_button = widgets.Button(description="Check", button_style="primary")
        self.show_me_button = widgets.Button(description="Show me")
        self.verdict_text = widgets.HTML()
        check = lambda _: owner.predict(read_text(self.answer_box.value))  # noqa: E731
        owner._on_click(self.check_button, check)
        owner._on_click(self.show_me_button, lambda _: owner.show_me())
        answer_row = wrapping_row([self.answer_box, self.check_button, self.show_me_button])
        box = widgets.VBox([self.question_text, answer_row, self.verdict_text])
        box.add_class("wb-quiz")
        return [box]

    def controls(self) -> list:
        """The quiz's controls (none when it asks nothing)."""
        if not self.predicting:
            return []
        return [self.answer_box, self.check_button, self.show_me_button]

    # ----------------------------------------------------------- state
    @property
    def reachable(self) -> int:
        """The furthest step a move may show: in predict mode, the step asked about."""
        if self.predicting == "gradient":
            return self.revealed + 1
        return self.revealed if self.predicting else self.owner.total

    @property
    def hidden(self) -> bool:
        """Whether the step on show still hides its result (predict mode)."""
        return self.predicting == "gradient" and self.owner.step > self.revealed

    @property
    def score(self) -> tuple[int, int]:
        """``(right, asked)``: a Show me counts as asked, and not right."""
        return self.right, self.asked

    @property
    def question(self) -> str:
        """What the stepper asks now ("" when it asks nothing, or the pass is all shown)."""
        owner = self.owner
        if not self.predicting or owner.cursor is None or self.revealed >= owner.total:
            return ""
        if self.predicting == "node":
            return node_question(owner.cursor.source.records[self.revealed - 1], owner.names)
        record = self.record_at(self.revealed + 1)
        return gradient_question(record, owner.names) if record is not None else ""

    # ----------------------------------------------------------- answers
    def predict(self, answer, *, demo: bool = False) -> Verdict:
        """Check a guess about the step asked (see :meth:`.BackwardStepper.predict`)."""
        record = self._asked_record()
        if isinstance(record, Verdict):
            return self._say(record)
        step = self.revealed + 1
        if self.predicting == "gradient":
            verdict = check_gradient(record, answer, self.owner.names)
        else:
            verdict = self._check_node(answer, step)
        if not verdict.counted:
            return self._say(verdict)
        if demo:
            self._reveal(step)
            return self._say(replace(verdict, message=f"{DEMO_NOTE} {verdict.message}", demo=True))
        if not verdict.right:
            self.wrong_tries += 1
            tries_left = self.tries - self.wrong_tries
            if tries_left > 0:
                said = f"{verdict.message} {more_tries(tries_left)}"
                return self._say(replace(verdict, message=said, tries_left=tries_left))
            verdict = replace(verdict, message=f"{verdict.message} Step {step} is shown now.")
        self.asked += 1
        self.right += verdict.right
        self._reveal(step)
        return self._say(verdict)

    def show_me(self, *, demo: bool = False) -> Verdict:
        """Reveal the step asked without a guess (see :meth:`.BackwardStepper.show_me`)."""
        record = self._asked_record()
        if isinstance(record, Verdict):
            return self._say(record)
        self.asked += not demo
        self._reveal(self.revealed + 1)
        said = f"Shown: step {record.step} is in the panel."
        if demo:
            return self._say(Verdict(False, f"{DEMO_NOTE} {said}", counted=False, demo=True))
        return self._say(Verdict(False, said))

    def _asked_record(self) -> StepRecord | Verdict:
        """The record of the step asked about, or a verdict saying why there is none."""
        if not self.predicting:
            return unreadable("This stepper asks nothing: make it with predict=True.")
        if self.owner.cursor is None:
            return unreadable(self.owner.error or "This stepper is closed.")
        record = self.record_at(self.revealed + 1)
        if record is None:
            return unreadable("The backward pass is done: every step is shown.")
        return record

    def record_at(self, step: int) -> StepRecord | None:
        """Step ``step``'s record, running the engine to it if need be (what is shown stays)."""
        source = self.owner.cursor.source
        loaded = source.load(step - 1)
        source.show(self.owner._grads_at)  # loading ran ahead: .grad back to the step on show
        return source.records[step - 1] if loaded else None

    def _check_node(self, guess, step: int) -> Verdict:
        owner = self.owner
        if isinstance(guess, (Node, Tensor)):
            try:
                guess = owner.node_id(guess)
            except ValueError as err:
                return unreadable(f"{err}.")
        source = owner.cursor.source
        source.load_all()  # the whole order, to say which rule a wrong guess breaks
        source.show(owner._grads_at)
        graph = live_graph(source.task.root_nodes) if isinstance(source, LiveSteps) else None
        return check_node(guess, source.records, step, graph, owner.names)

    def _reveal(self, step: int) -> None:
        self.wrong_tries = 0  # the next question starts with every try
        self.revealed = max(self.revealed, step)
        self.owner.cursor.go(step - 1)
        self.owner.cursor.note = ""

    def _say(self, verdict: Verdict) -> Verdict:
        self.verdict = verdict
        if self.owner.cursor is not None:
            self.owner._show()
        return verdict

    # ----------------------------------------------------------- what is shown
    def stop_at_question(self) -> None:
        """A move went past the step asked about: stay there, and say why."""
        cursor = self.owner.cursor
        cursor.go(self.reachable - 1)
        cursor.note = f"Step {self.revealed + 1} first: predict it, or press Show me."

    def unrevealed(self, captions: dict) -> dict:
        """The picture's captions less what the hidden step sent (its edges, a leaf's .grad)."""
        record = self.owner.cursor.record
        tail = self.owner.picture.vertex_of(record.node)
        sent = (f"{tail}->", f"{record.node}.sum")
        kept = {key: text for key, text in captions.items() if not key.startswith(sent)}
        if record.leaf is not None:
            kept.pop(record.node, None)
        return kept

    def show_question(self) -> None:
        """Write the question, the last verdict and the score; Check waits for a question."""
        if not self.predicting:
            return
        question = self.question or "Every step is shown."
        asked = f"<b>Predict:</b> {html.escape(question)}"  # (an emoji drew as a box)
        self.question_text.value = f"<div class='wb-question'>{asked}</div>"
        said = self.verdict.message if self.verdict else ""
        mark = "" if self.verdict is None else ("✔ " if self.verdict.right else "✘ ")
        self.verdict_text.value = (
            f"<div class='wb-verdict'>{mark}{html.escape(said)} "
            f"<i>({score_text(*self.score)})</i></div>"
        )
        waiting = bool(self.question)
        self.check_button.disabled = self.show_me_button.disabled = not waiting
