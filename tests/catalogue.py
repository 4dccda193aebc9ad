"""Misconception catalogues: for each exercise, the mistakes learners make and the right
answers written differently.

Each ``tests/test_catalogue_*.py`` defines ``CATALOGUES``, a list of :class:`Catalogue`,
one per exercise (by its grade id). ``tests/test_catalogue_coverage.py`` runs
:func:`assert_named` on every mistake and :func:`assert_passes` on every right answer of
them all, and holds the course to it: every exercise has a catalogue.

A mistake's message must contain what ``says`` lists (the diagnosis, in the words a
learner reads) and nothing ``never`` lists (a wrong cause it was once given). Where
the checker cannot tell the cause, ``says`` holds the expected-against-got wording and
``kind`` is ``"elements"``: no cause is named.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

from workbench.exercises import ExerciseError, NotAnswered

# Words that name a cause; a message with none of them names none.
CAUSES = (
    "sign",
    "factor",
    "conjugate",
    "local derivative alone",
    "summed back",
    "needs_input_grad",
    "ran before",
    "twice",
    "transpose",
    "swapped",
)


@dataclass
class Mistake:
    """One mistake: ``answer`` is the learner's wrong answer, as the check takes it."""

    name: str
    answer: object
    says: Sequence[str]
    never: Sequence[str] = ()
    kind: str | None = None  # the Finding's kind, where the message comes from one


@dataclass
class Right:
    """A right answer written another way (via orig.args, via the output, in another order)."""

    name: str
    answer: object


@dataclass
class Catalogue:
    """An exercise (its grade id), how its check runs an answer, its mistakes and rights."""

    exercise: str
    check: Callable[[object], object]
    mistakes: list[Mistake] = field(default_factory=list)
    rights: list[Right] = field(default_factory=list)


def assert_named(catalogue: Catalogue, mistake: Mistake) -> ExerciseError:
    """The check fails ``mistake`` with a message that names it (and no wrong cause)."""
    with pytest.raises(ExerciseError) as caught:
        catalogue.check(mistake.answer)
    error = caught.value
    assert not isinstance(error, NotAnswered), f"{mistake.name}: {error}"
    message = str(error)
    for words in mistake.says:
        assert words in message, f"{catalogue.exercise} / {mistake.name}: {message}"
    for words in mistake.never:
        assert words not in message, f"{catalogue.exercise} / {mistake.name}: {message}"
    if mistake.kind is not None:
        assert error.kind == mistake.kind, f"{catalogue.exercise} / {mistake.name}: {error.kind}"
    if mistake.kind == "elements":
        named = [c for c in CAUSES if c in message.lower()]
        assert not named, f"{mistake.name}: names a cause it cannot know: {named}: {message}"
    return error


def assert_passes(catalogue: Catalogue, right: Right) -> None:
    """The check passes a right answer written another way."""
    try:
        passed = catalogue.check(right.answer)
    except ExerciseError as wrong:
        pytest.fail(f"{catalogue.exercise} / {right.name} is right, but: {wrong}")
    assert passed, f"{catalogue.exercise} / {right.name}"


def parametrize(catalogues: Sequence[Catalogue]):
    """``(test_mistake, test_right)`` parameters: ids read "exercise / what"."""
    mistakes = [
        pytest.param(c, m, id=f"{c.exercise} / {m.name}") for c in catalogues for m in c.mistakes
    ]
    rights = [
        pytest.param(c, r, id=f"{c.exercise} / {r.name}") for c in catalogues for r in c.rights
    ]
    return mistakes, rights


def not_yet(*args):
    """A learner's copy of an exercise: the stub, ``raise NotImplementedError()``."""
    raise NotImplementedError()


def exercise_setup(notebook: dict, exercise: str) -> str:
    """The text of the one cell of ``notebook`` that sets ``exercise`` up (``Exercise(...)``)."""
    from workbench.teaching import course

    setups = [
        course.cell_text(c)
        for c in notebook["cells"]
        if f'Exercise(\n    "{exercise}"' in course.cell_text(c)
    ]
    assert len(setups) == 1, exercise
    return setups[0]
