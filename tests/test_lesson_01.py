"""Lesson 1 as a learner meets it: the student copy's checks fail with a message that says
what is wrong, a right answer passes, and the solution opens only after an attempt.

The cells run in this process, in one namespace, as a kernel would run them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench import course
from workbench.exercises import ExerciseError

LESSON = Path(__file__).resolve().parent.parent / "lessons" / "01_sigmoid_gradient.ipynb"

FORGOT_THE_UPSTREAM = """
def sigmoid_rule(orig, grad):
    y = orig.out
    return [y * (1 - y)]
"""
WRONG_SIGN = """
def tanh_rule(orig, grad):
    y = orig.out
    return [grad * (y * y - 1)]
"""


def load(student: bool = False) -> dict:
    notebook = json.loads(LESSON.read_text(encoding="utf-8"))
    return course.student_version(notebook) if student else notebook


def run_cells(notebook: dict, answers: dict | None = None) -> tuple[dict, dict]:
    """Run every code cell; ``answers`` replaces solution cells by grade_id (a learner's
    answer). Returns the namespace and ``{grade_id of a test cell: the error it raised}``."""
    pytest.importorskip("ipywidgets")
    namespace: dict = {"__name__": "__lesson__"}
    failures = {}
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        meta = course.nbgrader_meta(cell)
        source = (answers or {}).get(meta.get("grade_id"), course.cell_text(cell))
        code = compile(source, f"{LESSON.name}[cell {index}]", "exec")
        if meta.get("grade"):
            try:
                exec(code, namespace)
            except AssertionError as err:
                failures[meta["grade_id"]] = err
        else:
            exec(code, namespace)
    return namespace, failures


def test_the_source_lesson_passes_every_check():
    notebook = load()
    _, failures = run_cells(notebook)
    assert failures == {}
    assert len(course.graded_cells(notebook)) >= 2


def test_the_student_copy_fails_each_check_with_a_short_message():
    namespace, failures = run_cells(load(student=True))
    assert set(failures) == {"01-sigmoid-rule-check", "01-tanh-rule-check"}
    for err in failures.values():
        assert isinstance(err, ExerciseError)
        assert "NotImplementedError" in str(err) and len(str(err)) < 400
        assert "Traceback" not in str(err)
    # One checked attempt each: the solution, read from the source lesson, opens now.
    solution = namespace["sigmoid_exercise"].reveal_solution()
    assert solution.code and "grad * y * (1 - y)" in solution.text
    assert "BEGIN SOLUTION" not in solution.text


def test_the_solution_stays_closed_until_the_learner_has_checked_once():
    notebook = load(student=True)
    cells = [c for c in notebook["cells"] if not course.is_graded_cell(c)]
    namespace, _ = run_cells({**notebook, "cells": cells})
    exercise = namespace["sigmoid_exercise"]
    assert exercise.attempts == 0
    hint = exercise.reveal_solution()
    assert hint.title == "Not yet" and "grad * y" not in hint.text


def test_a_wrong_rule_is_told_what_is_wrong():
    answers = {"01-sigmoid-rule": FORGOT_THE_UPSTREAM, "01-tanh-rule": WRONG_SIGN}
    _, failures = run_cells(load(student=True), answers)
    forgot, sign = failures["01-sigmoid-rule-check"], failures["01-tanh-rule-check"]
    assert forgot.kind == "no_upstream" and "Multiply it by ȳ" in str(forgot)
    assert sign.kind == "sign" and "wrong sign" in str(sign)
