"""Lesson 10 (complex autodiff) follows the exercise convention. tests/test_lessons.py runs it
and its student copy; tests/test_nbgrader.py grades both."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "lessons" / "10_complex_autodiff.ipynb"


def graded(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def test_exercise_cells_follow_the_convention():
    nbformat = pytest.importorskip("nbformat")
    cells = nbformat.read(LESSON, as_version=4).cells
    ids = [graded(c)["grade_id"] for c in cells if graded(c)]
    assert len(ids) == len(set(ids)) and all(i.startswith("complex-autodiff-") for i in ids)
    solutions = [i for i, c in enumerate(cells) if graded(c).get("solution")]
    assert len(solutions) >= 2
    for i in solutions:
        check = graded(cells[i + 1])
        assert "### BEGIN SOLUTION" in cells[i].source and "### END SOLUTION" in cells[i].source
        assert check["grade"] and check["locked"] and check["points"] > 0
        assert check["grade_id"] == graded(cells[i])["grade_id"] + "-check"
        assert f'grade("{graded(cells[i])["grade_id"]}")' in cells[i + 1].source
