"""An exercise in a lesson: its check, its hints in levels, its solution, its state.

::

    sigmoid_exercise = Exercise(
        "01-sigmoid-rule",                      # the grade id of its nbgrader cells
        lambda rule: check_rule("sigmoid", rule),
        answer="sigmoid_rule",                  # the name the learner's cell defines
    )
    sigmoid_exercise.button()   # help a level at a time: a nudge, a stronger hint, the solution

and, in the graded cell under the learner's answer::

    from workbench.exercises import grade
    grade("01-sigmoid-rule")

The hints are the course's, by the exercise's name (:mod:`.nudges`): the cell that makes
the exercise does not print them above the button. Each :meth:`Exercise.check` of an
answer is one attempt; the solution opens after the
first (it is read from the course's solutions, :func:`workbench.teaching.course.solution`).
An answer that is still the stub (its ``raise NotImplementedError()`` runs) is *not
answered yet*: :func:`grade` says so and scores 0 without stopping the notebook, so
Run All of a fresh copy goes to the end, where :func:`progress` lists what is open.
A wrong answer in a learner's own kernel shows its diagnosis and scores 0 the same way,
so Run All goes on past it too; under nbgrader (``NBGRADER_EXECUTION`` is set while it
autogrades or validates) the graded cell fails instead, as nbgrader expects of a wrong
answer.

For graded work a teacher sets ``WORKBENCH_EXAM=1`` (:func:`workbench.teaching.course.exam_mode`):
hints and solutions are then off; the checks still say what is wrong.
"""

from __future__ import annotations

import html
import os
import sys
import warnings
from collections.abc import Callable, Sequence

from ..teaching import course
from .nudges import HINTS
from .report import KIND_KEY, ExerciseError, NotAnswered, Passed, running_ipython

PARTLY_RIGHT = "Partly right."  # the note of a partial score (the class report reads it)

NOT_YET = (
    "The solution opens after you have tried once: run the check on your answer first. "
    "A wrong answer is fine; the check's message is worth reading."
)

NO_SOLUTION = (
    "This course has no written solution for this exercise. Compare your answer with the "
    "check's message, or ask your teacher."
)

EXAM = (
    "Hints and solutions are off: this is graded work (WORKBENCH_EXAM is set). "
    "The check still says what is wrong with an answer."
)

EXERCISES: dict[str, Exercise] = {}  # this kernel's exercises by name, in the order made


class Hint:
    """One level of help; displays as Markdown in a notebook."""

    def __init__(self, title: str, text: str, code: bool = False) -> None:
        self.title = title
        self.text = text
        self.code = code

    def __repr__(self) -> str:
        return f"{self.title}\n{self.text}"

    def _repr_markdown_(self) -> str:
        body = f"```python\n{self.text}\n```" if self.code else self.text
        return f"**{self.title}**\n\n{body}"

    def _repr_html_(self) -> str:
        body = f"<pre>{html.escape(self.text)}</pre>" if self.code else html.escape(self.text)
        return f"<p><b>{html.escape(self.title)}</b></p><div>{body}</div>"


class Hints:
    """Hint levels shown one at a time, then the solution after at least one attempt.

    ``solution`` is the code as text, or a callable that finds it when it is asked for
    (None: there is none).
    """

    def __init__(self, levels: Sequence[str], solution: str | Callable | None = None) -> None:
        self.levels = list(levels)
        self.solution = solution
        self.shown = 0  # how many levels have been shown
        self.attempts = 0

    def record_attempt(self) -> None:
        """Count one checked try at the exercise (the solution opens after the first)."""
        self.attempts += 1

    def next(self) -> Hint:
        """The next level: a nudge, a stronger hint... and, after the last, the solution."""
        if course.exam_mode():
            return Hint("No hints in graded work", EXAM)
        if self.shown < len(self.levels):
            self.shown += 1
            return Hint(self.title(self.shown), self.levels[self.shown - 1])
        return self.reveal_solution()

    def title(self, level: int) -> str:
        kind = "a nudge" if level == 1 else "a stronger hint" if level == len(self.levels) else ""
        kind = f" ({kind})" if kind else ""
        return f"Hint {level} of {len(self.levels)}{kind}"

    def reveal_solution(self) -> Hint:
        """The solution — if the learner has tried at least once; else a note saying so."""
        if course.exam_mode():
            return Hint("No solution in graded work", EXAM)
        if self.attempts == 0:
            return Hint("Not yet", NOT_YET)
        text = self.solution() if callable(self.solution) else self.solution
        if text is None:
            return Hint("No solution here", NO_SOLUTION)
        return Hint("The solution", text, code=True)

    @property
    def solution_open(self) -> bool:
        return self.attempts > 0 and not course.exam_mode() and self.reveal_solution().code

    def button(self):
        """A button that shows the next level below it at each click (needs ipywidgets).

        Above it, hidden while the kernel lives, the note that says the button is dead
        once the kernel is gone (:func:`workbench.widgets.connection_note`).
        """
        import ipywidgets as widgets

        from ..widgets import connection_note

        shown = widgets.HTML()
        press = widgets.Button(description=self.button_label(), layout={"width": "auto"})

        def on_click(_button) -> None:
            shown.value += self.next()._repr_html_()
            press.description = self.button_label()

        press.on_click(on_click)
        return widgets.VBox([connection_note(), press, shown])

    def button_label(self) -> str:
        if course.exam_mode():
            return "Hints are off (graded work)"
        if self.shown < len(self.levels):
            return f"Show hint {self.shown + 1} of {len(self.levels)}"
        return "Show the solution"


class Exercise:
    """A check with its hints and solution, and what has happened to it in this kernel.

    ``check`` is any checker with the learner's answer left open, e.g.
    ``lambda rule: check_rule("sigmoid", rule)``; ``answer`` is the name the learner's
    cell defines (what :func:`grade` checks); ``title`` is how :func:`progress` names
    it. The hints and the solution are the course's, found by ``name`` (or given as
    ``hints`` and ``solution``: an exercise of the teacher's own).
    Making an exercise registers it under its name, replacing one made before.
    """

    def __init__(
        self,
        name: str,
        check: Callable[..., Passed],
        hints: Sequence[str] | None = None,
        answer: str | None = None,
        title: str | None = None,
        solution: str | None = None,
    ) -> None:
        self.name = name
        self.checker = check
        self.answer = answer
        self.title = title or name
        written = solution if solution is not None else (lambda: course.solution(name))
        self.hints = Hints(HINTS.get(name, ()) if hints is None else hints, written)
        self.state = "not checked yet"
        EXERCISES[name] = self

    def check(self, *answer, **options) -> Passed:
        """Run the check on the learner's answer: one attempt, unless it is not answered yet.

        Returns :class:`Passed`; raises :class:`ExerciseError` (:class:`NotAnswered` for
        an answer that is still the stub).
        """
        try:
            passed = self.checker(*answer, **options)
        except NotAnswered:
            self.state = "not answered yet"
            raise
        except ExerciseError as wrong:
            self.hints.record_attempt()
            self.state = f"not right yet: {first_sentence(wrong.message)}"
            raise
        self.hints.record_attempt()
        self.state = "passed"
        return passed

    def grade(self, *answer, **options) -> Unanswered | NotRightYet | None:
        """:meth:`check`, for an nbgrader test cell.

        A right answer is *displayed* (nbgrader gives full marks to a cell that shows no
        value and no error); a wrong one raises :class:`ExerciseError` (the cell fails:
        0 points). One not answered yet returns a note whose plain text is ``0``:
        nbgrader reads that as the score, and the notebook goes on to the next cell.
        In a learner's own kernel a wrong answer does the same (:class:`NotRightYet`:
        its diagnosis, and ``0``), so Run All reaches the end of the lesson; under
        nbgrader, or outside a notebook, it raises.
        Warnings are shown in the note, not on stderr (nbgrader scores a cell that
        writes to stderr 0).
        """
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                passed = self.check(*answer, **options)
            except NotAnswered as note:
                return Unanswered(note.message)
            except ExerciseError as wrong:
                if under_nbgrader() or running_ipython() is None:
                    raise
                return NotRightYet(wrong)
        show(passed, warned(caught))
        return None

    @property
    def attempts(self) -> int:
        return self.hints.attempts

    @property
    def passed(self) -> bool:
        return self.state == "passed"

    def hint(self) -> Hint:
        return self.hints.next()

    def reveal_solution(self) -> Hint:
        return self.hints.reveal_solution()

    def button(self):
        return self.hints.button()

    def __repr__(self) -> str:
        return f"<Exercise {self.name}: {self.state}, {self.attempts} attempts>"


class Unanswered:
    """What a graded cell shows for an open exercise: a note, and 0 for nbgrader.

    In a notebook the note shows (HTML); nbgrader reads the plain text, ``0``, as the
    cell's score.
    """

    def __init__(self, message: str) -> None:
        self.message = message

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        note = f'<p style="color:#0d47a1"><b>Open.</b> {html.escape(self.message)}</p>'
        return {"text/plain": "0", "text/html": note}

    def __repr__(self) -> str:
        return f"<Unanswered: {self.message}>"


class NotRightYet:
    """What a graded cell shows for a wrong answer in a learner's kernel: the check's
    message and pictures, and 0 for anything that reads the plain text as a score.

    Raising would stop Run All at this cell and leave the rest of the lesson blank.
    The plain text is ``0`` (not the message) so that even a kernel whose
    ``NBGRADER_EXECUTION`` was cleared by the learner's own code scores the cell 0.
    """

    def __init__(self, error: ExerciseError) -> None:
        self.error = error

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        note = (
            '<p style="color:#555">Run All goes on; fix your answer above and run this '
            "cell again.</p>"
        )
        return {"text/plain": "0", "text/html": self.error._repr_html_() + note}

    def __repr__(self) -> str:
        return f"<NotRightYet: {self.error.message}>"


class PartlyRight:
    """What a graded cell shows, under the sealed grading, for an answer right in some of
    its parts (a rule right on some calls, some steps of a prediction session): the
    check's message, and ``right / asked`` of the cell's points as its plain text, which
    nbgrader reads as the cell's score (its partial credit)."""

    def __init__(self, error: ExerciseError, points: float) -> None:
        self.error = error
        self.points = float(points)
        right, asked = error.parts
        self.score = round(self.points * right / asked, 2)

    def _repr_mimebundle_(self, include=None, exclude=None) -> tuple[dict, dict]:
        right, asked = self.error.parts
        note = (
            f'<p style="color:#555"><b>{PARTLY_RIGHT}</b> {right} of {asked} parts right: '
            f"{self.score:g} of {self.points:g} points.</p>"
        )
        data = {"text/plain": f"{self.score:g}", "text/html": self.error._repr_html_() + note}
        kind = self.error.kind
        return data, ({KIND_KEY: {"kind": kind}} if kind else {})

    def __repr__(self) -> str:
        return f"<PartlyRight {self.score:g}/{self.points:g}: {self.error.message}>"


def under_nbgrader() -> bool:
    """True while nbgrader autogrades or validates this notebook (it sets the variable)."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def grade(name: str) -> Unanswered | NotRightYet | None:
    """Check the answer of exercise ``name``, as its graded cell does.

    The exercise and the learner's answer are looked up in this kernel, so that a cell
    run before them (after a restart, or out of order) says which cells to run instead
    of failing with a NameError.
    """
    exercise = EXERCISES.get(name)
    if exercise is None:
        return Unanswered(
            f"The exercise {name} is not set up in this kernel (it was restarted, or the "
            "cells above have not run yet). Click this cell and run every cell above it "
            "(Run → Run All Above Selected Cell), then this one."
        )
    namespace = sys._getframe(1).f_globals
    if exercise.answer is None or exercise.answer not in namespace:
        return Unanswered(
            f"Your answer, `{exercise.answer}`, is not defined in this kernel: run the cell "
            f"where you wrote it (under “{exercise.title}”), then this one."
        )
    return exercise.grade(namespace[exercise.answer])


def progress() -> Progress:
    """The exercises of this kernel and where each stands: the last cell of a lesson."""
    return Progress(list(EXERCISES.values()))


class Progress:
    """A table of exercises and their states; the open ones say what to do."""

    def __init__(self, exercises: list[Exercise]) -> None:
        self.exercises = exercises

    @property
    def open(self) -> list[Exercise]:
        return [e for e in self.exercises if not e.passed]

    def __repr__(self) -> str:
        if not self.exercises:
            return "No exercise has been set up in this kernel: run the lesson from the top."
        lines = [f"{'✓' if e.passed else '·'} {e.title}: {e.state}" for e in self.exercises]
        return "\n".join([self.headline(), *lines])

    def headline(self) -> str:
        count = len(self.open)
        if count == 0:
            return f"All {len(self.exercises)} exercises passed."
        return (
            f"{count} of {len(self.exercises)} exercises still open: write the answer in its "
            "cell, run it, then run the check under it."
        )

    def _repr_html_(self) -> str:
        if not self.exercises:
            return f"<p>{html.escape(repr(self))}</p>"
        rows = "".join(
            f"<tr><td>{'✓' if e.passed else '·'}</td><td>{html.escape(e.title)}</td>"
            f"<td>{html.escape(e.state)}</td></tr>"
            for e in self.exercises
        )
        style = "border-collapse:collapse;text-align:left"
        return (
            f"<p><b>{html.escape(self.headline())}</b></p>"
            f'<table style="{style}"><tr><th></th><th>exercise</th><th>state</th></tr>'
            f"{rows}</table>"
        )


def first_sentence(message: str) -> str:
    """The first sentence of a check's message (the state in :func:`progress`)."""
    end = message.find(". ")
    return message if end < 0 else message[: end + 1]


def warned(caught: list) -> str:
    """The warnings the learner's code raised during a check, as one line each."""
    return "\n".join(f"{w.category.__name__}: {w.message}" for w in caught)


def show(passed: Passed, warnings_text: str = "") -> None:
    """Display a passed check (and any warnings) in a notebook; print it elsewhere."""
    shell = running_ipython()
    if shell is None:
        print(repr(passed) + (f"\n{warnings_text}" if warnings_text else ""))
        return
    from IPython.display import HTML, display

    display(passed)
    if warnings_text:
        display(HTML(f"<p>Your code warned on the way:</p><pre>{html.escape(warnings_text)}</pre>"))
