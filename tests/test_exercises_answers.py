"""Predictions checked against the engine (check_answer, check_order, check_table), a
learner's function run with a short message (call_answer), and Exercise.grade for nbgrader."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.exercises import (
    Exercise,
    ExerciseError,
    NotAnswered,
    Passed,
    call_answer,
    check_answer,
    check_order,
    check_table,
)


def test_a_right_prediction_passes_with_its_proof():
    passed = check_answer("x.grad after step 3", np.array([1.0, 2.0]), [1.0, 2.0], proof="p")
    assert isinstance(passed, Passed) and passed.proof == "p"


def test_a_wrong_value_is_diagnosed_like_a_gradient():
    with pytest.raises(ExerciseError) as caught:
        check_answer("x.grad after step 3", np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0]))
    assert caught.value.kind == "factor" and "your x.grad after step 3" in str(caught.value)
    with pytest.raises(ExerciseError) as caught:
        check_answer("w.grad", np.ones(3), None)
    assert caught.value.kind == "missing"


def test_an_order_names_the_first_position_that_differs():
    ran = ["AddBackward0", "SumBackward0", "MulBackward0"]
    assert check_order("order", ran, list(ran))
    with pytest.raises(ExerciseError, match="at position 2: you wrote 'MulBackward0' where"):
        check_order("order", ran, ["AddBackward0", "MulBackward0", "SumBackward0"])
    with pytest.raises(ExerciseError, match="has 2 entries where the engine's has 3"):
        check_order("order", ran, ran[:2])
    with pytest.raises(ExerciseError, match="as a list"):
        check_order("order", ran, "AddBackward0")


def test_a_table_names_the_missing_extra_or_wrong_entry():
    truth = {"tanh": 2, "mul": 1}
    assert check_table("counts", truth, {"mul": 1, "tanh": 2})
    with pytest.raises(ExerciseError, match="no entry for 'mul'"):
        check_table("counts", truth, {"tanh": 2})
    with pytest.raises(ExerciseError, match="an entry for 'sum'"):
        check_table("counts", truth, {"tanh": 2, "mul": 1, "sum": 1})
    with pytest.raises(ExerciseError, match="says 1 for 'tanh'; the engine says 2"):
        check_table("counts", truth, {"tanh": 1, "mul": 1})


def test_an_unfinished_function_is_not_answered_yet_and_says_what_to_do():
    def collapse(g, shape):
        raise NotImplementedError()

    with pytest.raises(NotAnswered) as caught:
        call_answer(collapse, np.ones(3), (3,))
    message = str(caught.value)
    assert message.startswith("Not answered yet") and "raise NotImplementedError()" in message
    assert call_answer(lambda a: a + 1, 1) == 2


def test_a_not_implemented_error_from_deeper_down_is_a_real_error_on_the_learners_line():
    def uses_something_unsupported(g, shape):
        return wb.nn.Module()(wb.tensor(g))  # a Module without forward() raises it

    with pytest.raises(ExerciseError) as caught:
        call_answer(uses_something_unsupported, np.ones(3), (3,))
    assert not isinstance(caught.value, NotAnswered)
    assert "raised an error on line" in str(caught.value)


def test_grade_counts_an_attempt_and_returns_nothing(capsys):
    exercise = Exercise("t", lambda v: check_answer("value", 1.0, v), solution="v = 1.0")
    assert exercise.grade(1.0) is None  # nbgrader would read a returned value as a score
    assert "Your value is right" in capsys.readouterr().out
    assert exercise.attempts == 1
    with pytest.raises(ExerciseError):
        exercise.grade(2.0)
    assert exercise.attempts == 2 and exercise.reveal_solution().text == "v = 1.0"


def test_without_a_written_solution_the_learner_is_told_where_it_is():
    exercise = Exercise("t", lambda v: check_answer("value", 1.0, v), solution=None)
    exercise.check(1.0)
    assert "ask your teacher" in exercise.reveal_solution().text.lower()
