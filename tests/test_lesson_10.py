"""Lesson 10 (complex autodiff) follows the exercise convention. tests/test_lessons.py runs it
and its student copy; tests/test_nbgrader.py grades both."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from workbench.teaching import course

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


def markdown(path: Path = LESSON) -> str:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return "\n".join(course.cell_text(c) for c in notebook["cells"] if c["cell_type"] == "markdown")


def test_y_is_the_output_and_a_bar_is_a_gradient():
    """Im z is not y (the op's output), ȳ is not ∂L/∂y (undefined for a complex y), and
    the conjugate is written conj(z), never with the bar the course keeps for gradients."""
    text = markdown()
    assert text.count("x + iy") == 1 and "does not write z = x + iy" in text  # the note
    assert "√(x² + y²)" not in text
    assert "ȳ = ∂L/∂y" not in text
    assert "ȳ = ∂L/∂u + i·∂L/∂v" in text and "2·∂L/∂y*" in text
    assert "A bar means a gradient, never a conjugate" in text and "`conj(z)`" in text


def test_pytorchs_name_for_the_gradient_is_given_once():
    text = markdown()
    assert text.count("conjugate Wirtinger derivative") == 1
    assert "**twice** ∂L/∂z*" in text


def test_the_conjugated_derivative_rule_is_claimed_for_holomorphic_ops_only():
    sentences = re.split(r"(?<=\.)\s", markdown().replace("\n", " "))
    claims = [s for s in sentences if "with the derivative conjugated" in s]
    assert claims and all("holomorphic" in s for s in claims), claims
