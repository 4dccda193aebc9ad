"""The misconception catalogues, run: every mistake named by its check, every right answer
passing; and every exercise of the course has a catalogue, every catalogue an exercise.

The catalogues are written beside their checks' other tests, in
``tests/test_catalogue_<group>.py`` files, each found here by its name (see
tests/catalogue.py); a catalogue holds at least three mistakes learners make and two
right answers written differently.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from catalogue import assert_named, assert_passes, parametrize

ROOT = Path(__file__).resolve().parent.parent
# Every tests/test_catalogue_<group>.py but this file: a new catalogue file is found by its name.
GROUPS = tuple(
    sorted(
        path.stem.removeprefix("test_catalogue_")
        for path in Path(__file__).parent.glob("test_catalogue_*.py")
        if path.stem != "test_catalogue_coverage"
    )
)
MIN_MISTAKES, MIN_RIGHTS = 3, 2


def exercises_in_lessons() -> set[str]:
    """The grade ids of the lessons' answer cells (nbgrader's solution cells)."""
    ids = set()
    for path in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            grading = cell.get("metadata", {}).get("nbgrader", {})
            if grading.get("solution") and not grading.get("grade"):
                ids.add(grading["grade_id"])
    return ids


def catalogues() -> dict:
    found = {}
    for group in GROUPS:
        for catalogue in importlib.import_module(f"test_catalogue_{group}").CATALOGUES:
            assert catalogue.exercise not in found, f"two catalogues for {catalogue.exercise}"
            found[catalogue.exercise] = catalogue
    return found


CATALOGUES = catalogues()
EXERCISES = exercises_in_lessons()
MISTAKES, RIGHTS = parametrize(list(CATALOGUES.values()))

# A few checks and answers run backward(create_graph=True), which warns (as PyTorch's
# does) of the cycle between x and x.grad.
BACKWARD_WARNING = "ignore:Using backward\\(\\) with create_graph=True"


@pytest.mark.filterwarnings(BACKWARD_WARNING)
@pytest.mark.parametrize("catalogue, mistake", MISTAKES)
def test_the_check_names_the_mistake(catalogue, mistake):
    assert_named(catalogue, mistake)


@pytest.mark.filterwarnings(BACKWARD_WARNING)
@pytest.mark.parametrize("catalogue, right", RIGHTS)
def test_a_right_answer_written_another_way_passes(catalogue, right):
    assert_passes(catalogue, right)


def test_the_lessons_have_exercises():
    assert len(EXERCISES) >= 20, EXERCISES


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_every_exercise_has_a_catalogue(exercise):
    assert exercise in CATALOGUES, f"{exercise} has no misconception catalogue"
    catalogue = CATALOGUES[exercise]
    assert len(catalogue.mistakes) >= MIN_MISTAKES, [m.name for m in catalogue.mistakes]
    assert len(catalogue.rights) >= MIN_RIGHTS, [r.name for r in catalogue.rights]


def test_every_catalogue_is_of_an_exercise_in_the_lessons():
    assert set(CATALOGUES) <= EXERCISES, set(CATALOGUES) - EXERCISES
