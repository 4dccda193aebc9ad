"""Hints in levels — a nudge, a stronger hint, then the solution — each shown on request.

::

    hints = Hints(
        ["Which tensor does sigmoid's rule need: x, or the output y?",
         "σ'(x) = σ(x) · (1 − σ(x)) = y · (1 − y). Multiply by ȳ."],
        solution=SIGMOID_SOLUTION,     # the code, as text
    )
    hints.next()             # the nudge; called again, the stronger hint
    hints.reveal_solution()  # only once the learner has tried (an attempt was recorded)
    hints.button()           # the same, as a button (needs ipywidgets)

An :class:`Exercise` ties a check to its hints and counts the attempts: each call of
``exercise.check(answer)`` (or ``exercise.grade(answer)``, in an nbgrader test cell) is
one. The lessons read each solution from the source lesson with
``workbench.course.solution(grade_id)``; where only the student versions are
installed there is none to show.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

from .report import Passed, running_ipython

NOT_YET = (
    "The solution opens after you have tried once: run the check on your answer first. "
    "A wrong answer is fine; the check's message is worth reading."
)


NO_SOLUTION = (
    "No written solution is at hand here: the source lessons (with solutions) are not "
    "installed next to your copy. Ask your teacher, or compare with the check's message."
)


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
    """Hint levels shown one at a time, then the solution after at least one attempt."""

    def __init__(self, levels: Sequence[str], solution: str | None = None) -> None:
        self.levels = list(levels)
        self.solution = solution
        self.shown = 0  # how many levels have been shown
        self.attempts = 0

    def record_attempt(self) -> None:
        """Count one try at the exercise (the solution opens after the first)."""
        self.attempts += 1

    def next(self) -> Hint:
        """The next level: a nudge, a stronger hint... and, after the last, the solution."""
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
        if self.solution is None:
            return Hint("No solution here", NO_SOLUTION)
        if self.attempts == 0:
            return Hint("Not yet", NOT_YET)
        return Hint("The solution", self.solution, code=True)

    @property
    def solution_open(self) -> bool:
        return self.solution is not None and self.attempts > 0

    def button(self):
        """A button that shows the next level below it at each click (needs ipywidgets)."""
        import ipywidgets as widgets

        shown = widgets.HTML()
        press = widgets.Button(description=self.button_label())

        def on_click(_button) -> None:
            shown.value += self.next()._repr_html_()
            press.description = self.button_label()

        press.on_click(on_click)
        return widgets.VBox([press, shown])

    def button_label(self) -> str:
        if self.shown < len(self.levels):
            return f"Show hint {self.shown + 1} of {len(self.levels)}"
        return "Show the solution"


class Exercise:
    """A check with its hints and solution; ``check(...)`` counts each attempt.

    ``check`` is any checker with the learner's answer left open, e.g.
    ``lambda rule: check_rule("sigmoid", rule)``.
    """

    def __init__(
        self,
        name: str,
        check: Callable[..., Passed],
        hints: Sequence[str] = (),
        solution: str | None = None,
    ) -> None:
        self.name = name
        self.checker = check
        self.hints = Hints(hints, solution)

    def check(self, *answer, **options) -> Passed:
        """Run the check on the learner's answer (one attempt, right or wrong)."""
        self.hints.record_attempt()
        return self.checker(*answer, **options)

    def grade(self, *answer, **options) -> None:
        """:meth:`check`, for an nbgrader test cell: a right answer is *displayed*, not returned.

        nbgrader reads a test cell's returned value (its ``execute_result``) as a partial
        score; a displayed note is only shown. A wrong answer raises ExerciseError, as in
        :meth:`check`, and nbgrader records the cell as failed.
        """
        passed = self.check(*answer, **options)
        shell = running_ipython()
        if shell is None:
            print(repr(passed))
            return
        from IPython.display import display

        display(passed)

    @property
    def attempts(self) -> int:
        return self.hints.attempts

    def hint(self) -> Hint:
        return self.hints.next()

    def reveal_solution(self) -> Hint:
        return self.hints.reveal_solution()

    def button(self):
        return self.hints.button()

    def __repr__(self) -> str:
        return f"<Exercise {self.name}: {self.attempts} attempts>"
