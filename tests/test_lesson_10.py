"""Lesson 10 (complex autodiff) as nbgrader grades it: the source version earns full marks
(tests/test_lessons.py runs it and fails on any error), the student version at most 25%."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "lessons" / "10_complex_autodiff.ipynb"
SOLUTION = re.compile(r"### BEGIN SOLUTION\n.*?### END SOLUTION", re.DOTALL)


def graded(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def student_version(notebook):
    """What ``nbgrader generate_assignment`` hands out: each solution replaced by a stub."""
    for cell in notebook.cells:
        if graded(cell).get("solution"):
            cell.source = SOLUTION.sub(
                "# YOUR CODE HERE\n    raise NotImplementedError()", cell.source
            )
    return notebook


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
        assert "check_rule(" in cells[i + 1].source


def test_the_student_version_scores_at_most_a_quarter(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    notebook = student_version(nbformat.read(LESSON, as_version=4))
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(LESSON.parent)}},
    )
    kernel_env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    client.execute(env=kernel_env)
    checks = [c for c in notebook.cells if graded(c).get("grade")]
    total = sum(graded(c)["points"] for c in checks)
    earned = sum(
        graded(c)["points"] for c in checks if not any(o.output_type == "error" for o in c.outputs)
    )
    assert total > 0 and earned <= total / 4, f"the student version earns {earned} of {total}"
    failed = [o for c in checks for o in c.outputs if o.output_type == "error"]
    assert {o.ename for o in failed} <= {"NotImplementedError", "ExerciseError"}
    others = [c for c in notebook.cells if c.cell_type == "code" and not graded(c)]
    assert not [o for c in others for o in c.outputs if o.output_type == "error"]
