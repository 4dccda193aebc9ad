"""A fake class for nbgrader: lesson 1 released, answered three ways, autograded.

Used by tests/test_classroom.py (in a course directory on this machine) and
tests/test_hub.py (the same answers, typed by three learners on a hub):

- ada answers both exercises right;
- grace forgets ȳ in sigmoid's rule and gets tanh's sign wrong;
- edsger hands the notebook in as it was released (nothing answered);
- linus is on the roster and never submits.

On the hub edsger cheats instead (:data:`CHEATS`): his sigmoid rule returns the
engine's own rule, and his tanh cell disarms the checker before leaving the stub.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.exercises.rules import ENGINE_RULE
from workbench.exercises.sealed import CHECKER_CHANGED
from workbench.teaching import course
from workbench.teaching.classroom import class_report as report

ROOT = Path(__file__).resolve().parent.parent
LESSON = "01_sigmoid_gradient.ipynb"
ASSIGNMENT = "lesson01"
ROSTER = [  # nbgrader's roster columns: id, first_name, last_name, email
    ("ada", "Ada", "Lovelace", "ada@example.org"),
    ("grace", "Grace", "Hopper", "grace@example.org"),
    ("edsger", "Edsger", "Dijkstra", "edsger@example.org"),
    ("linus", "Linus", "Never-Submits", "linus@example.org"),
]
SUBMITTERS = ("ada", "grace", "edsger")


def rule(name: str, returned: str) -> str:
    """A rule as a learner writes it: y is the op's output, grad is ȳ."""
    return f"def {name}(orig, grad):\n    y = orig.out\n    return [{returned}]"


RIGHT = {  # written differently from the source lesson's solution
    "01-sigmoid-rule": rule("sigmoid_rule", "y * (1 - y) * grad"),
    "01-tanh-rule": rule("tanh_rule", "grad * (1 - y**2)"),
}
MISTAKES = {
    "01-sigmoid-rule": rule("sigmoid_rule", "y * (1 - y)"),  # forgot ȳ
    "01-tanh-rule": rule("tanh_rule", "grad * (y * y - 1)"),  # the sign
}
ANSWERS = {"ada": RIGHT, "grace": MISTAKES, "edsger": {}}
CHEATS = {  # the first rule is the engine's; the second cell replaces the checker
    "01-sigmoid-rule": rule("sigmoid_rule", 'wb.ops.OPS["sigmoid"].gradient(orig, grad)[0]'),
    "01-tanh-rule": (
        "import workbench.exercises as _e\n\n_e.grade = lambda *a, **k: None\n"
        "_e.check_answer = print\nraise NotImplementedError()"
    ),
}


def roster_csv() -> str:
    lines = ["id,first_name,last_name,email"] + [",".join(row) for row in ROSTER]
    return "\n".join(lines) + "\n"


def answered(notebook: dict, answers: dict[str, str], signed: str = "") -> dict:
    """The released ``notebook`` with the solution cells named in ``answers`` filled in,
    each under a comment ``# <signed>`` when given (to tell whose feedback is whose)."""
    cells = []
    for cell in notebook["cells"]:
        grade_id = course.nbgrader_meta(cell).get("grade_id")
        if course.is_solution_cell(cell) and grade_id in answers:
            source = f"# {signed}\n{answers[grade_id]}" if signed else answers[grade_id]
            cell = {**cell, "source": source}
        cells.append(cell)
    return {**notebook, "cells": cells}


def nbgrader(root: Path, *args: str, timeout: float = 600) -> str:
    """One nbgrader command in the course directory ``root``; fails with its log."""
    bin_dir = str(Path(sys.executable).parent)  # nbgrader calls alembic from there
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env |= {"MPLBACKEND": "Agg", "JUPYTER_RUNTIME_DIR": str(root / "runtime")}
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def check_lesson_one_report(made: report.ClassReport, cheater: str | None = None) -> None:
    """What the fake class's report must say (tests/test_hub.py checks the same, with
    edsger as the ``cheater`` who handed in :data:`CHEATS`)."""
    assert made.students == sorted(row[0] for row in ROSTER)
    rows = {row.exercise: row for row in made.exercises}
    assert set(rows) == {"01-sigmoid-rule-check", "01-tanh-rule-check"}
    for row in rows.values():
        assert sorted(row.submitted) == sorted(SUBMITTERS)
        assert row.passed == ["ada"] and row.pass_rate == pytest.approx(1 / 3)
        assert sum(row.diagnoses.values()) == 2
        if cheater is None:
            assert row.diagnoses[report.NOT_ANSWERED] == 1  # edsger's
    # grace's mistakes, counted by their misconception's id, one message of each shown
    sigmoid, tanh = rows["01-sigmoid-rule-check"], rows["01-tanh-rule-check"]
    assert sigmoid.told["grace"] == "no_upstream" and tanh.told["grace"] == "sign"
    assert "ȳ" in sigmoid.examples["no_upstream"], sigmoid.examples  # forgot the upstream ȳ
    assert "sign" in tanh.examples["sign"], tanh.examples
    learners = {"grace": {"no_upstream": 1, "sign": 1}}
    if cheater is not None:  # the engine's rule refused; the disarmed checker flagged
        assert sigmoid.told[cheater] == ENGINE_RULE, sigmoid.told
        assert "does not compute the gradient itself" in sigmoid.examples[ENGINE_RULE]
        assert tanh.told[cheater] == CHECKER_CHANGED, tanh.told
        assert "The checker was changed" in tanh.examples[CHECKER_CHANGED]
        learners[cheater] = {ENGINE_RULE: 1}
        why = "their code changed the checker (01-tanh-rule-check)"
        assert made.suspicious == [report.Suspicion(cheater, ASSIGNMENT, why)]
    assert made.by_learner() == learners
    assert made.missing == {ASSIGNMENT: ["linus"]}
