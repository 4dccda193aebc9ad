"""Lesson 1 as a learner meets it: the student copy's checks fail with a message that says
what is wrong, a right answer passes, and the solution opens only after an attempt.

The cells run in this process, in one namespace, as a kernel would run them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.exercises import hints
from workbench.teaching import course

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
    hints.EXERCISES.clear()  # a fresh kernel: no exercise set up yet
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


def test_the_student_copy_says_each_exercise_is_not_answered_yet_and_goes_on():
    namespace, failures = run_cells(load(student=True))
    assert failures == {}  # no check fails: Run All goes to the end
    for name in ("sigmoid_exercise", "tanh_exercise"):
        exercise = namespace[name]
        assert exercise.state == "not answered yet" and exercise.attempts == 0
    assert "2 of 2 exercises still open" in repr(namespace["progress"]())


def test_the_solution_opens_after_one_checked_attempt():
    answers = {"01-sigmoid-rule": FORGOT_THE_UPSTREAM}
    namespace, failures = run_cells(load(student=True), answers)
    assert set(failures) == {"01-sigmoid-rule-check"}
    solution = namespace["sigmoid_exercise"].reveal_solution()
    assert solution.code and "grad * y * (1 - y)" in solution.text
    assert "BEGIN SOLUTION" not in solution.text
    assert namespace["tanh_exercise"].reveal_solution().title == "Not yet"


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


def test_the_stepper_section_tells_the_truth_with_a_right_a_wrong_and_no_rule(capsys):
    """Read at the end of the pass, the leaves' .grad say what the rule did, whatever the
    stepper shows afterwards; a wrong rule shows values against the engine's, no cause."""
    namespace, _ = run_cells(load())
    out = capsys.readouterr().out
    assert out.count("as with the engine's rule") == 3 and "did not reach" not in out
    stepper = namespace["stepper"]
    assert stepper.step == 2 and stepper.record.name == "SigmoidBackward0"
    assert "the stepper shows step 2 of 7 : SigmoidBackward0" in out
    assert f"Step 2 of {stepper.total}" in stepper.panel.value

    forgot_a_factor = "def sigmoid_rule(orig, grad):\n    return [grad * orig.out]\n"
    run_cells(load(student=True), {"01-sigmoid-rule": forgot_a_factor})
    out = capsys.readouterr().out
    assert out.count("where the engine's rule gives") == 3

    run_cells(load(student=True))  # not answered yet: the pass stops at the sigmoid's node
    out = capsys.readouterr().out
    assert "The pass stopped at the sigmoid's node" in out
    assert out.count("the pass did not reach") == 3
