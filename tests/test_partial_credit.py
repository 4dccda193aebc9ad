"""Partial credit inside an exercise (issue 37, point 5): an exercise checked in parts
(a rule on several calls of its op, a prediction session's steps) scores the share of
its parts that are right, under the course's sealed grading, as nbgrader's partial
credit (a graded cell whose value is a number scores that number)."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.exercises import check_rule
from workbench.exercises.report import ExerciseError
from workbench.exercises.whole_pass import check_whole_pass
from workbench.teaching.classroom import class_report as report

HELP = """\
mul_exercise = Exercise(
    "02-mul-rule",
    lambda rule: check_rule("mul", rule),
    hints=["a nudge"],
    answer="mul_rule",
)
"""
NOT_SUMMED = "def mul_rule(orig, grad):\n    a, b = orig.args\n    return [grad * b, grad * a]\n"
NO_UPSTREAM = "def mul_rule(orig, grad):\n    a, b = orig.args\n    return [b, a]\n"


def wrong(rule) -> ExerciseError:
    with pytest.raises(ExerciseError) as caught:
        check_rule("mul", rule)
    return caught.value


def test_a_rule_right_on_some_calls_is_right_in_part():
    def not_summed(orig, grad):  # right where nothing broadcasts
        a, b = orig.args
        return [grad * b, grad * a]

    def no_upstream(orig, grad):  # wrong on every call
        a, b = orig.args
        return [b, a]

    def the_engines(orig, grad):  # no credit at all
        return wb.ops.OPS["mul"].gradient(orig, grad)

    partly = wrong(not_summed)
    assert partly.parts == (1, 5) and partly.kind == "shape"
    assert partly.message.endswith("(Right on 1 of 5 calls.)")
    assert "collapse_sum_like" in partly.message  # the first wrong call's diagnosis
    none = wrong(no_upstream)
    assert none.parts == (0, 5) and "Right on" not in none.message
    engine = wrong(the_engines)
    assert engine.parts is None and engine.kind == "engine_rule"


def sealed(source: str, points: float):
    from workbench.exercises.sealed import sealed_grade

    namespace: dict = {"__name__": "__main__"}
    imports = "from workbench.exercises import Exercise, check_rule, grade"
    for cell in (imports, HELP, source):
        exec(compile(cell, "<cell>", "exec"), namespace)
    return sealed_grade("02-mul-rule", namespace, HELP, points)


def test_the_sealed_grading_scores_the_share_of_the_points(monkeypatch):
    """Under nbgrader the cell's value is the score: 1 of 5 calls right, 3 points: 0.6."""
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    shown = sealed(NOT_SUMMED, 3.0)
    data, metadata = shown._repr_mimebundle_()
    assert data["text/plain"] == "0.6"
    assert "Partly right." in data["text/html"] and "0.6 of 3 points" in data["text/html"]
    assert metadata == {"workbench": {"kind": "shape"}}
    with pytest.raises(AssertionError, match="Multiply it by"):
        sealed(NO_UPSTREAM, 3.0)  # nothing right: the cell fails, 0 points
    with pytest.raises(AssertionError, match="Right on 1 of 5"):
        sealed(NOT_SUMMED, 0)  # no points given (an old course's cell): as before


def test_the_class_report_reads_a_partial_scores_message_and_id(monkeypatch, tmp_path):
    import json

    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    data, metadata = sealed(NOT_SUMMED, 3.0)._repr_mimebundle_()
    cell = {
        "cell_type": "code",
        "metadata": {"nbgrader": {"grade_id": "02-mul-rule-check"}},
        "outputs": [{"output_type": "execute_result", "data": data, "metadata": metadata}],
    }
    notebook = tmp_path / "graded.ipynb"
    notebook.write_text(json.dumps({"cells": [cell]}))
    message, kind = report.failure(notebook, "02-mul-rule-check")
    assert kind == "shape" and message.startswith("With a of shape (2, 3)")
    assert message.endswith("(Right on 1 of 5 calls.)") and "<" not in message


def test_a_prediction_session_scores_right_answers_out_of_asked():
    """Lesson 2's session: 4 of its 6 steps right is 4/6 of the points."""
    ones, w = np.ones((2, 2)), np.array([0.5, -1.0])
    b_bar, w_bar = np.array([4.0]), np.array([4.0, 6.0])
    steps = [ones, [ones, b_bar], b_bar, [ones * w, w_bar], ones * w, w_bar]
    assert "predicted right" in str(check_whole_pass(lambda: steps))
    slipped = [*steps[:2], ones, *steps[3:]]  # b̄ not summed back: step 3, and it carries
    with pytest.raises(ExerciseError) as caught:
        check_whole_pass(lambda: slipped)
    right, asked = caught.value.parts
    assert asked == 6 and 0 < right < 6
    assert caught.value.message.startswith(f"{right} of 6 steps right.")
