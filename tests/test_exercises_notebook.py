"""In a real notebook kernel: a wrong answer is an error output (nbgrader fails the cell)
that shows the message alone, no traceback through the checker, with the heat map under
it; a right answer shows what it proved; other errors keep their usual traceback."""

from __future__ import annotations

import html
import re

import pytest
from kernel_run import run_in_kernel

CELLS = [
    "import workbench as wb\nfrom workbench.exercises import check_rule",
    # a rule that forgets one factor of the chain rule on one element: a heat map helps
    "def sigmoid_rule(orig, grad):\n"
    "    y = orig.out\n"
    "    return [grad * y * (1 - y) * wb.tensor([1.0, 1.0, 1.0, 1.0, 2.0])]\n"
    "\n"
    "check_rule('sigmoid', sigmoid_rule, shapes=[(5,)])",
    "def sigmoid_rule(orig, grad):\n"
    "    y = orig.out\n"
    "    return [grad * y * (1 - y)]\n"
    "\n"
    "check_rule('sigmoid', sigmoid_rule)",
    "1 / 0",
]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return run_in_kernel(CELLS, tmp_path_factory.mktemp("kernel"))


def test_a_wrong_answer_is_its_message_and_heat_map_then_a_one_line_error(outputs):
    """The message is HTML (it wraps at spaces at any width), the error box one short line:
    a notebook breaks preformatted lines mid-word once they are wider than the box."""
    cell = outputs[1]
    shown, error = cell  # the message with its pictures, then the error
    assert shown.output_type == "display_data" and error.output_type == "error"
    assert error.ename == "ExerciseError"  # nbgrader records the cell as failed
    assert error.evalue.startswith("With x of shape (5,), your gradient for x is wrong at 1")
    assert plain(error.traceback) == "ExerciseError: see the message above."
    page = shown.data["text/html"]
    assert html.escape(error.evalue) in page and "wb-heatmap" in page
    text = shown.data["text/plain"].split("\n")  # for a front end without HTML
    assert " ".join(text) == error.evalue and all(len(line) <= 88 for line in text)


def test_a_right_answer_shows_what_it_proved(outputs):
    (result,) = outputs[2]
    assert result.output_type == "execute_result"
    assert "Your rule for sigmoid is right." in result.data["text/plain"]
    assert "You just proved" in result.data["text/html"]


def test_other_errors_keep_their_traceback(outputs):
    (error,) = outputs[3]
    assert error.ename == "ZeroDivisionError"
    assert "1 / 0" in plain(error.traceback)  # the cell's line, as IPython always shows it


def plain(traceback: list) -> str:
    """The traceback's text without its colours (ANSI escape codes)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(traceback))


GRADED_CELLS = [
    "import workbench as wb\n"
    "from workbench.exercises import Exercise, check_rule, grade\n"
    "sigmoid_exercise = Exercise('t-sigmoid', lambda rule: check_rule('sigmoid', rule),"
    " answer='sigmoid_rule')",
    # the chain rule's ȳ forgotten: a wrong answer
    "def sigmoid_rule(orig, grad):\n    return [orig.out * (1 - orig.out)]",
    "grade('t-sigmoid')",
    "print('the next cell ran')",
]


def test_a_wrong_answer_in_a_graded_cell_shows_its_diagnosis_and_run_all_goes_on(tmp_path):
    """In a learner's kernel the graded cell shows what is wrong and scores 0, without
    failing: Run All reaches the cells below it (the rest of the lesson is not blank)."""
    outputs = run_in_kernel(GRADED_CELLS, tmp_path)
    (verdict,) = outputs[2]
    assert verdict.output_type == "execute_result"
    assert verdict.data["text/plain"] == "0"  # what nbgrader would read as the score
    assert "Not yet." in verdict.data["text/html"] and "ȳ" in verdict.data["text/html"]
    assert [o.text for o in outputs[3]] == ["the next cell ran\n"]


def test_under_nbgrader_a_wrong_answer_still_fails_its_graded_cell(tmp_path, monkeypatch):
    """nbgrader sets NBGRADER_EXECUTION while it autogrades: the cell fails as before."""
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    outputs = run_in_kernel(GRADED_CELLS, tmp_path)
    errors = [o for o in outputs[2] if o.output_type == "error"]
    assert [e.ename for e in errors] == ["ExerciseError"]
