"""An exercise's life in a notebook: not answered yet, wrong, right; its graded cell, its
hints and solution, the teacher's exam switch, and the list of what is still open.

Run All of a fresh learner copy must reach the last cell: an answer that is still the
stub is *not answered yet* (graded 0, no error). nbgrader reads a test cell's plain-text
value as its score, so the note's plain text is ``0``.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from workbench.exercises import (
    Exercise,
    ExerciseError,
    NotAnswered,
    check_answer,
    check_rule,
    grade,
    progress,
)
from workbench.exercises import hints as hints_module
from workbench.exercises.nudges import HINTS
from workbench.exercises.report import wrapped
from workbench.teaching import course

ROOT = Path(__file__).resolve().parent.parent
LESSONS = course.lesson_paths(ROOT / "lessons")


def stub_rule(orig, grad):
    # YOUR CODE HERE
    raise NotImplementedError()


def sigmoid_rule(orig, grad):
    y = orig.out
    return [grad * y * (1 - y)]


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    """Each test starts with no exercise set up, as a fresh kernel does."""
    monkeypatch.setattr(hints_module, "EXERCISES", {})
    monkeypatch.delenv(course.EXAM, raising=False)


def sigmoid_exercise() -> Exercise:
    return Exercise(
        "01-sigmoid-rule",
        lambda rule: check_rule("sigmoid", rule),
        hints=["a nudge", "a stronger hint"],
        answer="sigmoid_rule",
        title="Exercise 1 · Write sigmoid's rule",
    )


def test_a_stub_answer_is_not_answered_yet_scored_0_without_an_error():
    exercise = sigmoid_exercise()
    note = exercise.grade(stub_rule)
    bundle = note._repr_mimebundle_()
    assert bundle["text/plain"] == "0"  # nbgrader's score for the cell
    assert "Not answered yet" in bundle["text/html"] and "stub_rule" in bundle["text/html"]
    assert exercise.state == "not answered yet" and exercise.attempts == 0
    assert exercise.reveal_solution().title == "Not yet"  # no checked attempt yet


def test_check_raises_not_answered_which_is_an_exercise_error():
    exercise = sigmoid_exercise()
    with pytest.raises(NotAnswered, match="Not answered yet"):
        exercise.check(stub_rule)
    assert issubclass(NotAnswered, ExerciseError)


def test_a_wrong_answer_still_fails_its_cell_and_counts_as_an_attempt():
    exercise = sigmoid_exercise()
    with pytest.raises(ExerciseError):
        exercise.grade(lambda orig, grad: [grad])
    assert exercise.attempts == 1 and exercise.state.startswith("not right yet")
    assert exercise.reveal_solution().code  # the course's own solution, after one attempt
    assert "grad * y * (1 - y)" in exercise.reveal_solution().text


def test_a_right_answer_shows_a_note_and_returns_no_score(capsys):
    exercise = sigmoid_exercise()
    assert exercise.grade(sigmoid_rule) is None  # no value: nbgrader gives full marks
    assert "✓" in capsys.readouterr().out
    assert exercise.passed


def test_grade_by_name_finds_the_exercise_and_the_answer_in_the_callers_namespace():
    sigmoid_exercise()
    assert grade("01-sigmoid-rule") is None  # sigmoid_rule is a global of this module


def test_grade_before_the_setup_says_which_cells_to_run():
    note = grade("01-sigmoid-rule")
    text = note._repr_mimebundle_()
    assert text["text/plain"] == "0"
    assert "not set up in this kernel" in note.message
    assert "Run All Above Selected Cell" in note.message


def test_grade_before_the_answer_cell_names_the_answer_and_its_exercise():
    Exercise("t-missing", lambda f: f(), answer="never_defined", title="Exercise 9 · Nothing")
    note = grade("t-missing")
    assert "`never_defined`, is not defined" in note.message
    assert "Exercise 9 · Nothing" in note.message


def test_warnings_in_the_learners_code_stay_off_stderr(capsys):
    def warns(orig, grad):
        warnings.warn("something odd", RuntimeWarning, stacklevel=1)
        return sigmoid_rule(orig, grad)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning that escaped would fail this test
        assert sigmoid_exercise().grade(warns) is None
    captured = capsys.readouterr()
    assert captured.err == ""  # nbgrader scores a cell with stderr output 0
    assert "RuntimeWarning: something odd" in captured.out


def test_progress_lists_every_exercise_and_what_is_open():
    first = sigmoid_exercise()
    Exercise("t-two", lambda v: check_answer("value", 1.0, v), title="Exercise 2 · A value")
    first.grade(stub_rule)
    listed = repr(progress())
    assert "2 of 2 exercises still open" in listed
    assert "Exercise 1 · Write sigmoid's rule: not answered yet" in listed
    assert "Exercise 2 · A value: not checked yet" in listed
    first.grade(sigmoid_rule)
    assert "1 of 2 exercises still open" in repr(progress())
    assert "<table" in progress()._repr_html_()


def test_exam_mode_turns_hints_and_solutions_off(monkeypatch):
    monkeypatch.setenv(course.EXAM, "1")
    exercise = sigmoid_exercise()
    with pytest.raises(ExerciseError) as wrong:
        exercise.check(lambda orig, grad: [grad])
    assert wrong.value.message  # the check still says what is wrong
    assert "graded work" in exercise.hint().title and "a nudge" not in exercise.hint().text
    assert not exercise.reveal_solution().code
    assert course.solution("01-sigmoid-rule") is None
    pytest.importorskip("ipywidgets")
    _note, button, shown = exercise.button().children
    assert button.description == "Hints are off (graded work)"
    button.click()
    assert "WORKBENCH_EXAM" in shown.value


@pytest.mark.parametrize("value", ["", "0", "no"])
def test_exam_mode_is_off_unless_the_variable_says_so(monkeypatch, value):
    monkeypatch.setenv(course.EXAM, value)
    assert not course.exam_mode()


def test_an_installation_without_solutions_json_says_there_is_none(tmp_path):
    assert course.solution("01-sigmoid-rule", tmp_path / "solutions.json") is None


def test_the_solutions_file_is_found_where_a_learner_has_it(tmp_path, monkeypatch):
    """In the course repository (a clone), where WORKBENCH_SOLUTIONS points, or as the
    download of that name in the current folder; else there is none (the package alone,
    which holds none)."""
    assert course.SOLUTIONS.parent == ROOT / "solutions"  # the repository's, not the package's
    assert course.solutions_file() == course.SOLUTIONS
    assert "grad * y * (1 - y)" in course.solution("01-sigmoid-rule")
    monkeypatch.setattr(course, "SOLUTIONS", tmp_path / "no-clone" / course.SOLUTIONS_NAME)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(course.SOLUTIONS_VARIABLE, raising=False)
    assert course.solutions_file() is None and course.solution("01-sigmoid-rule") is None
    download = tmp_path / course.SOLUTIONS_NAME
    download.write_text(json.dumps({"01-sigmoid-rule": "downloaded"}))
    assert course.solutions_file() == download
    assert course.solution("01-sigmoid-rule") == "downloaded"
    elsewhere = tmp_path / "kept" / "mine.json"
    elsewhere.parent.mkdir()
    elsewhere.write_text(json.dumps({"01-sigmoid-rule": "pointed at"}))
    monkeypatch.setenv(course.SOLUTIONS_VARIABLE, str(elsewhere))
    assert course.solution("01-sigmoid-rule") == "pointed at"


def test_the_repositorys_solutions_are_the_source_lessons_solutions():
    packaged = json.loads(course.SOLUTIONS.read_text(encoding="utf-8"))
    assert packaged == course.solutions_of(ROOT / "lessons"), (
        "run `python scripts/write_solutions.py` after changing a solution"
    )
    graded = {
        course.nbgrader_meta(c)["grade_id"]
        for p in LESSONS
        for c in json.loads(p.read_text())["cells"]
        if course.is_solution_cell(c)
    }
    assert set(packaged) == graded


def test_every_solution_region_is_inside_a_function_so_its_stub_raises_only_when_called():
    for path in LESSONS:
        for cell in json.loads(path.read_text())["cells"]:
            if course.is_solution_cell(cell):
                for line in course.cell_text(cell).split("\n"):
                    if course.BEGIN in line:
                        assert line.startswith(" "), f"{path.name}: {line!r} at the top level"


def region_lines(source: str) -> list[str]:
    """The code lines between the solution markers, without spaces or comments; short
    ones (``y=orig.out``) are left out: the lesson's text says as much."""
    inside, lines = False, []
    for line in source.split("\n"):
        if course.BEGIN in line or course.END in line:
            inside = course.BEGIN in line
            continue
        code = "".join(line.split("#")[0].split())
        if inside and len(code) >= 12:
            lines.append(code)
    return lines


def hints_of(notebook: dict) -> str:
    """The exercises' hints (in the cells that make each Exercise, and the course's for
    each exercise made there), without spaces.

    The lesson's text may give a line of scaffolding on purpose ("run it all under
    `with wb.no_grad():`"); the hints must stop short of the code."""
    cells = [course.cell_text(c) for c in notebook["cells"] if "Exercise(" in course.cell_text(c)]
    made = [name for name in HINTS if any(f'"{name}"' in cell for cell in cells)]
    return "".join("\n".join(cells + [h for name in made for h in HINTS[name]]).split())


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_no_hint_gives_a_solution_away(path):
    """Hints stop short of the code: no line of a solution is in a learner's copy's hints."""
    notebook = json.loads(path.read_text())
    readable = hints_of(course.student_version(notebook))
    for cell in notebook["cells"]:
        if course.is_solution_cell(cell):
            for line in region_lines(course.cell_text(cell)):
                assert line not in readable, f"{path.name}: the copy's help holds {line!r}"


def test_the_solution_leak_check_finds_a_leak():
    solution = "def f(orig, grad):\n    ### BEGIN SOLUTION\n    return [grad * orig.out]\n"
    solution += "    ### END SOLUTION"
    hint = 'Exercise("t", check, hints=["Return [grad * orig.out]", "return [grad*orig.out]"])'
    assert region_lines(solution) == ["return[grad*orig.out]"]
    assert region_lines(solution)[0] in hints_of({"cells": [{"cell_type": "code", "source": hint}]})


def test_error_text_wraps_at_spaces():
    message = "ExerciseError: " + " ".join(["expected"] * 30) + " AccumulateGrad"
    lines = wrapped(message, width=40)
    assert all(len(line) <= 40 for line in lines)
    assert " ".join(lines) == message  # nothing cut, no word broken
    assert wrapped("a\n\nb") == ["a", "", "b"]


def luminance(rgb) -> float:
    """WCAG's relative luminance of an sRGB colour (0–255 channels)."""
    linear = [(c / 255) / 12.92 if c <= 10 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def colour(text: str) -> tuple:
    """``#fff``, ``#000`` or ``rgba(r,g,b,a)`` over a white page, as (r, g, b)."""
    if text.startswith("#"):
        digits = text[1:] if len(text) == 7 else "".join(c * 2 for c in text[1:])
        return tuple(int(digits[i : i + 2], 16) for i in (0, 2, 4))
    r, g, b, a = (float(v) for v in re.findall(r"[\d.]+", text))
    return tuple(a * c + (1 - a) * 255 for c in (r, g, b))


def test_heat_map_values_keep_contrast_on_every_background():
    """Each cell sets its text and background colours, and they differ enough to read
    (WCAG's 4.5:1), whatever the page around them (a dark theme, nbgrader's feedback)."""
    from workbench.exercises.picture import heat_map_html

    got = np.array([[1.0, 1.2], [3.0, 40.0]])
    page = heat_map_html(got, np.ones((2, 2)), got != 1.0, "x̄")
    cells = re.findall(r'<td style="([^"]*)"', page)
    assert len(cells) == 8 and "expected" in page and "yours" in page  # side by side
    for style in cells:
        declarations = dict(d.split(":", 1) for d in style.split(";"))  # the last one wins
        fore, back = (
            luminance(colour(declarations["color"])),
            luminance(colour(declarations["background"])),
        )
        ratio = (max(fore, back) + 0.05) / (min(fore, back) + 0.05)
        assert ratio >= 4.5, (style, ratio)


def test_a_long_error_of_the_learners_is_shown_whole_or_cut_at_a_space():
    from workbench.exercises.report import LONGEST, error_text

    short = ValueError("operands could not be broadcast together with shapes (2,3) (4,)")
    assert error_text(short) == f"ValueError: {short}."
    numbers = " ".join(f"[{i}, {i + 1}]" for i in range(200))
    text = error_text(ValueError(numbers))
    kept = text.removeprefix("ValueError: ").split(" … ")[0]
    assert numbers.startswith(kept) and numbers[len(kept)] == " "  # cut between items
    assert len(kept) <= LONGEST and "more characters)" in text


def exercises_made(notebook: dict) -> list[str]:
    """The names of the exercises a notebook's cells make (``Exercise("name", ...)``)."""
    text = "\n".join(course.cell_text(c) for c in notebook["cells"])
    return re.findall(r'Exercise\(\s*"([^"]+)"', text)


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_the_cell_that_makes_an_exercise_shows_no_hint(path):
    """A hint is read when the learner asks for it (issue 38, point 5): no lesson cell
    prints one above the button, and the button gives the course's, level by level."""
    notebook = json.loads(path.read_text())
    made = exercises_made(notebook)
    assert made, f"{path.name} makes no exercise"
    squeezed = "".join("\n".join(course.cell_text(c) for c in notebook["cells"]).split())
    for name in made:
        assert len(HINTS[name]) >= 2, f"{name}: a nudge and a stronger hint"
        for hint in HINTS[name]:
            assert "".join(hint.split()) not in squeezed, f"{path.name} prints {hint!r}"


def test_every_course_hint_belongs_to_an_exercise_a_lesson_makes():
    made = {name for path in LESSONS for name in exercises_made(json.loads(path.read_text()))}
    assert set(HINTS) == made


def test_an_exercise_made_by_name_gives_the_course_hints_in_order(monkeypatch):
    monkeypatch.setattr(hints_module, "EXERCISES", {})
    exercise = hints_module.Exercise("02-mul-rule", lambda rule: None, answer="mul_rule")
    first, second = exercise.hint(), exercise.hint()
    assert (first.text, second.text) == HINTS["02-mul-rule"]
    assert "a nudge" in first.title
