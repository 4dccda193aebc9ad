"""Every exercise of the course has a misconception catalogue, and every catalogue an exercise.

A catalogue holds at least three mistakes learners make (each named by the check) and two
right answers written differently (each passing); the catalogues' own tests run them.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GROUPS = ("rules", "engine", "course_c", "course_d")
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
