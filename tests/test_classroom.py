"""The teacher's commands: course directories, the exam switch, the answer key, the
schedule, and the class report on a fake class graded by nbgrader (tests/nbgrader_class.py).
"""

from __future__ import annotations

import ast
import csv
import html
import io
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbgrader_class import (
    ANSWERS,
    ASSIGNMENT,
    LESSON,
    SUBMITTERS,
    answered,
    check_lesson_one_report,
    nbgrader,
    roster_csv,
)

from workbench.exercises.hints import Unanswered
from workbench.exercises.nudges import HINTS
from workbench.exercises.report import NotAnswered
from workbench.teaching import cli, course
from workbench.teaching.classroom import class_report as report
from workbench.teaching.classroom import coursedir, schedule
from workbench.teaching.classroom import solution_key as answer_key

ROOT = Path(__file__).resolve().parent.parent
LESSONS = course.lesson_paths(ROOT / "lessons")


# ------------------------------------------------------------------ course directories
def test_one_assignment_per_lesson_or_one_for_the_whole_course(tmp_path):
    per_lesson = coursedir.make_course(tmp_path / "a", ["01", "02"])
    assert {name: [p.name for p in paths] for name, paths in per_lesson.items()} == {
        "lesson01": [LESSONS[0].name],
        "lesson02": [LESSONS[1].name],
    }
    whole = coursedir.make_course(tmp_path / "b", whole=True)
    assert list(whole) == ["course"] and len(whole["course"]) == len(LESSONS)
    config = (tmp_path / "b" / "nbgrader_config.py").read_text()
    assert 'course_id = "autodiff-workbench"' in config
    assert "os.path.dirname(os.path.abspath(__file__))" in config  # an absolute root
    source = json.loads((tmp_path / "a/source/lesson01" / LESSONS[0].name).read_text())
    assert source == json.loads(LESSONS[0].read_text())  # the source, solutions in


def test_the_course_command_names_a_missing_lesson(tmp_path, capsys):
    assert cli.main(["course", str(tmp_path / "c"), "99"]) == 2
    assert "no lesson named '99…'" in capsys.readouterr().err


# ------------------------------------------------------------------ the exam switch
HELP_WORDS = ("hints=", ".button()", "course.solution(")


def hint_texts(notebook: dict) -> list[str]:
    """Every hint the notebook's help cells give: written in a cell (``Exercise(...,
    hints=[...])``, ``Hints([...])``) or the course's for an exercise made by name."""
    found = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code" or course.nbgrader_meta(cell):
            continue
        for node in ast.walk(ast.parse(course.cell_text(cell))):
            if isinstance(node, ast.Call) and coursedir.called_name(node) in ("Exercise", "Hints"):
                given = [k.value for k in node.keywords if k.arg == "hints"] + node.args[2:]
                given += node.args[:1] if coursedir.called_name(node) == "Hints" else []
                found += [
                    c.value for g in given for c in ast.walk(g) if isinstance(c, ast.Constant)
                ]
                if coursedir.called_name(node) == "Exercise" and not given:
                    found += HINTS.get(ast.literal_eval(node.args[0]), ())
    return [text for text in found if isinstance(text, str)]


def is_help_cell(cell: dict) -> bool:
    text = course.cell_text(cell)
    return cell["cell_type"] == "code" and ("Exercise(" in text or "Hints(" in text)


def without_the_switch(exam: dict) -> list[dict]:
    """The exam version's cells but its exam switch, which comes before the first code."""
    cells = exam["cells"]
    (switch,) = [k for k, cell in enumerate(cells) if cell.get("id") == "exam-switch"]
    first_code = next(k for k, cell in enumerate(cells) if cell["cell_type"] == "code")
    assert switch == first_code
    assert course.nbgrader_meta(cells[switch])["locked"]
    assert 'os.environ["WORKBENCH_EXAM"] = "1"' in course.cell_text(cells[switch])
    return cells[:switch] + cells[switch + 1 :]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_the_exam_version_has_no_hints_and_the_same_checks(path):
    source = json.loads(path.read_text())
    exam = coursedir.exam_version(source)
    texts = [course.cell_text(cell) for cell in exam["cells"]]
    hints = hint_texts(source)
    assert len(hints) >= 2, "the source lesson has hints"
    assert not [hint for hint in hints if any(hint in text for text in texts)]
    assert not [t for t in texts if any(word in t for word in HELP_WORDS)]
    assert exam["metadata"]["workbench"] == {"exam": True}
    cells = without_the_switch(exam)
    assert len(cells) == len(source["cells"])
    for before, after in zip(source["cells"], cells):
        if is_help_cell(before) and not course.nbgrader_meta(before):
            assert after["source"].startswith(coursedir.EXAM_NOTE)
        else:
            assert after == before  # only the help cells change
    # Every exercise and every Hints is still made, for the cells that use them.
    for name in ("Exercise(", "Hints("):
        made = sum(course.cell_text(c).count(name) for c in source["cells"])
        assert "\n".join(texts).count(name) == made


# Appended to the exam copy: what its kernel says about the exam switch and the solutions.
PROBE = """\
from workbench.teaching import course
print("exam mode:", course.exam_mode(), "| solutions file:", course.SOLUTIONS.exists(),
      "| solution:", course.solution("01-sigmoid-rule"))
"""


def test_an_exam_learner_copy_runs_to_its_last_cell_with_the_switch_on(tmp_path, monkeypatch):
    """Run All of lesson 1's exam version, as a learner gets it, in a kernel started
    without WORKBENCH_EXAM and with the package's solutions.json at hand: every exercise
    is "not answered yet" and the lesson goes on; the notebook's own switch turns exam
    mode on, so no solution is given (the switch and --exam agree)."""
    monkeypatch.delenv(course.EXAM, raising=False)
    assert course.SOLUTIONS.exists() and course.solution("01-sigmoid-rule")
    exam = course.student_version(coursedir.exam_version(json.loads(LESSONS[0].read_text())))
    exam["cells"].append(nbformat.v4.new_code_cell(PROBE))
    notebook = nbformat.reads(json.dumps(exam), as_version=4)
    client = NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True)
    client.resources = {"metadata": {"path": str(tmp_path)}}
    client.execute()
    errors = [
        (k, out["ename"])
        for k, cell in enumerate(notebook.cells)
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert errors == []

    def printed(cell) -> str:
        return "".join(
            out.get("text", "") + json.dumps(out.get("data", "")) for out in cell.outputs
        )

    graded = [cell for cell in notebook.cells if course.is_graded_cell(cell)]
    assert graded and all("not answered yet" in printed(cell).lower() for cell in graded)
    assert "".join(out.get("text", "") for out in notebook.cells[-1].outputs).split("|") == [
        "exam mode: True ",
        " solutions file: True ",
        " solution: None\n",
    ]


# ------------------------------------------------------------------ the answer key
def test_the_answer_key_holds_every_solution(tmp_path):
    assert cli.main(["answer-key", "-o", str(tmp_path / "key.md")]) == 0
    assert cli.main(["answer-key", "-o", str(tmp_path / "key.ipynb")]) == 0
    text = (tmp_path / "key.md").read_text()
    key = nbformat.read(tmp_path / "key.ipynb", as_version=4)
    nbformat.validate(key)
    solutions = [
        course.solution_text(course.cell_text(cell))
        for path in LESSONS
        for cell in json.loads(path.read_text())["cells"]
        if course.is_solution_cell(cell)
    ]
    assert solutions and all(solution in text for solution in solutions)
    code = [cell.source for cell in key.cells if cell.cell_type == "code"]
    assert code == solutions
    points = {a.grade_id: a.points for a in answer_key.answers()}
    assert points["01-sigmoid-rule"] == 2


# ------------------------------------------------------------------ the schedule
def test_the_schedule_counts_what_each_lesson_holds():
    loads = schedule.schedule()
    assert [load.lesson for load in loads] == [p.name for p in LESSONS]
    first = loads[0]
    graded = course.graded_cells(json.loads(LESSONS[0].read_text()))
    assert first.exercises == len(graded) and first.points == sum(
        c["metadata"]["nbgrader"]["points"] for c in graded
    )
    assert all(load.minutes() % 5 == 0 and load.minutes() > 0 for load in loads)
    slower = schedule.as_markdown(loads, words_per_minute=60)
    assert slower != schedule.as_markdown(loads)


def test_teaching_md_shows_the_schedule_the_command_prints(capsys):
    teaching = (ROOT / "docs" / "teaching.md").read_text()
    assert schedule.as_markdown(schedule.schedule()) in teaching
    assert cli.main(["schedule"]) == 0
    assert capsys.readouterr().out.strip() in teaching


# ------------------------------------------------------------------ diagnoses
def test_diagnoses_take_the_values_out_of_a_message(tmp_path):
    one = "ExerciseError: Your gradient for x has shape (2, 3) where (3,) was expected."
    two = "ExerciseError: Your gradient for x has shape (4, 5) where (5,) was expected."
    assert report.diagnosis(one) == report.diagnosis(two)
    assert "#" in report.diagnosis(one) and "ExerciseError" not in report.diagnosis(one)
    stub = "ExerciseError: Your rule raised an error on line 3: NotImplementedError."
    assert report.diagnosis(stub) == report.NOT_ANSWERED
    # What grade() shows for an exercise still open, as the autograded notebook holds it.
    note = NotAnswered("sigmoid_rule")._repr_html_()
    open_cell = {
        "cell_type": "code",
        "metadata": {"nbgrader": {"grade_id": "01-x-check"}},
        "outputs": [{"output_type": "execute_result", "data": {"text/html": note}}],
    }
    notebook = tmp_path / "graded.ipynb"
    notebook.write_text(json.dumps({"cells": [open_cell]}))
    message = report.failure_message(notebook, "01-x-check")
    assert message.startswith(report.NOTE_PREFIX) and "<" not in message
    assert report.diagnosis(message) == report.NOT_ANSWERED
    not_run = Unanswered("The exercise 01-x is not set up in this kernel (it was restarted).")
    open_cell["outputs"][0]["data"] = not_run._repr_mimebundle_()
    notebook.write_text(json.dumps({"cells": [open_cell]}))
    told = report.diagnosis(report.failure_message(notebook, "01-x-check"))
    assert told == "Open: The exercise #-x is not set up in this kernel (it was restarted)."
    assert report.diagnosis(None) == report.NO_MESSAGE
    assert report.diagnosis("ExerciseError: x1 and y_2 are wrong") == "x1 and y_2 are wrong"


# ------------------------------------------------------------------ the class report
@pytest.fixture(scope="module")
def graded_class(tmp_path_factory) -> Path:
    """Lesson 1 as an assignment; three learners' submissions and a roster of four; autograded."""
    root = tmp_path_factory.mktemp("class")
    coursedir.make_course(root, ["01"])
    (root / "roster.csv").write_text(roster_csv())
    nbgrader(root, "db", "student", "import", "roster.csv")
    nbgrader(root, "generate_assignment", ASSIGNMENT, "--force")
    released = json.loads((root / "release" / ASSIGNMENT / LESSON).read_text())
    for student in SUBMITTERS:
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        notebook = answered(released, ANSWERS[student])
        (folder / LESSON).write_text(json.dumps(notebook))
    nbgrader(root, "autograde", ASSIGNMENT, "--force")
    return root


def test_the_course_directorys_feedback_needs_no_network(graded_class):
    """nbgrader_config.py of `workbench course` names the course's feedback template:
    a learner's page loads nothing from a CDN (nbgrader's own loads MathJax)."""
    nbgrader(graded_class, "generate_feedback", ASSIGNMENT, "--force")
    page = (graded_class / "feedback" / "grace" / ASSIGNMENT / LESSON).with_suffix(".html")
    text = page.read_text()
    assert "Multiply it by ȳ" in html.unescape(re.sub(r"<[^>]+>", "", text))
    assert re.findall(r"<(?:script|link)[^>]*(?:src|href)=\"(https?:[^\"]*)", text) == []


def test_the_class_report_of_the_fake_class(graded_class):
    check_lesson_one_report(report.class_report(graded_class))


def test_the_class_report_command_writes_a_table_a_csv_and_a_chart(graded_class, tmp_path, capsys):
    out_csv, chart = tmp_path / "class.csv", tmp_path / "class.png"
    command = ["class-report", str(graded_class), "--csv", str(out_csv), "--chart", str(chart)]
    assert cli.main(command) == 0
    printed = capsys.readouterr().out
    assert "4 learners on the roster" in printed
    assert "01-sigmoid-rule-check" in printed and "1/3" in printed and "33%" in printed
    assert "not submitted lesson01: linus" in printed
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert [row["exercise"] for row in rows] == ["01-sigmoid-rule-check", "01-tanh-rule-check"]
    assert rows[0]["submitted"] == "3" and rows[0]["passed"] == "1"
    assert rows[0]["pass_rate"] == "0.333" and rows[0]["not_submitted"] == "linus"
    assert report.NOT_ANSWERED in {rows[0]["diagnosis_1"], rows[0]["diagnosis_2"]}
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_class_report_says_when_nothing_was_graded(tmp_path, capsys):
    assert cli.main(["class-report", str(tmp_path)]) == 2
    assert "run nbgrader autograde" in capsys.readouterr().err


def test_the_class_report_lists_exercises_in_lesson_order_not_by_name(tmp_path):
    """The gradebook keeps no order: the source notebook's cell order is the lesson's."""
    source = tmp_path / "source" / "lesson01" / "01_sigmoid_gradient.ipynb"
    source.parent.mkdir(parents=True)
    graded = [{"nbgrader": {"grade_id": g}} for g in ("01-zeta-check", "01-alpha-check")]
    cells = [{"cell_type": "code", "metadata": m, "source": ""} for m in graded]
    source.write_text(json.dumps({"cells": [{"cell_type": "markdown"}, *cells]}))
    results = [
        report.ExerciseResult("lesson01", "01_sigmoid_gradient", name, 1.0)
        for name in ("01-alpha-check", "not-in-source", "01-zeta-check")
    ]
    ordered = report.in_lesson_order(results, tmp_path)
    assert [r.exercise for r in ordered] == ["01-zeta-check", "01-alpha-check", "not-in-source"]
    # no source notebook to read (or a corrupt one): by name, and no crash
    source.write_text("{not json")
    ordered = report.in_lesson_order(results, tmp_path)
    assert [r.exercise for r in ordered] == ["01-alpha-check", "01-zeta-check", "not-in-source"]


def test_the_course_command_suggests_commands_nbgrader_accepts(tmp_path, capsys):
    """nbgrader generate_assignment takes one assignment a call: one command each."""
    assert cli.main(["course", str(tmp_path / "c"), "01", "02"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("next, in")]
    steps = line.split(": ", 1)[1].split(" && ")
    assert steps == [f"nbgrader generate_assignment lesson0{n}" for n in (1, 2)]


@pytest.mark.parametrize("command", [["answer-key", "-o", "key.md"], ["schedule"]])
def test_a_teachers_command_without_lessons_fails_clearly(tmp_path, capsys, command):
    """On a hub the package ships no lessons: an empty key or schedule is not a success."""
    empty = tmp_path / "no-lessons"
    empty.mkdir()
    args = [a if a != "key.md" else str(tmp_path / "key.md") for a in command]
    assert cli.main([*args, "--lessons", str(empty)]) == 2
    assert "no lesson notebooks in" in capsys.readouterr().err
    assert not (tmp_path / "key.md").exists()


def test_a_corrupt_autograded_notebook_is_reported_and_skipped(graded_class, tmp_path, capsys):
    """One learner's autograded notebook that cannot be read (cut short, not JSON, not a
    notebook) does not stop the class report: its scores still count, and the report
    names the file."""
    root = tmp_path / "class"
    shutil.copytree(graded_class, root)
    grace = root / "autograded" / "grace" / ASSIGNMENT / LESSON
    grace.write_text(grace.read_text()[:1000])  # cut short
    edsger = root / "autograded" / "edsger" / ASSIGNMENT / LESSON
    edsger.write_text(json.dumps({"cells": "not a list"}))
    made = report.class_report(root)
    assert sorted(made.unreadable) == [str(edsger), str(grace)]
    (sigmoid,) = [r for r in made.exercises if r.exercise == "01-sigmoid-rule-check"]
    assert sigmoid.passed == ["ada"] and len(sigmoid.submitted) == 3
    assert sigmoid.diagnoses[report.UNREADABLE] == 2
    assert cli.main(["class-report", str(root)]) == 0
    printed = capsys.readouterr().out
    assert f"could not read {grace}" in printed and f"could not read {edsger}" in printed


def test_the_course_directory_autogrades_with_the_sealed_checker():
    """`workbench course`'s nbgrader_config.py replaces nbgrader's Execute step of
    autograde with the one that grades apart from the learner's code (docs/teaching.md)."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute
    from traitlets.config import Config

    from workbench.teaching.classroom.preprocessors import SealedExecute

    config = Config()
    namespace = {"get_config": lambda: config, "__file__": "/course/nbgrader_config.py"}
    exec(coursedir.CONFIG.format(course_id="c"), namespace)
    steps = Autograde(config=config).autograde_preprocessors
    assert SealedExecute in steps and Execute not in steps
    assert steps.index(SealedExecute) == 0
