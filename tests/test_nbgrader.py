"""nbgrader runs the course as a teacher would: generate, then autograde two students.

In a course directory of its own (``nbgrader_config.py`` with a course id,
``source/course/`` holding every lesson that has graded cells), the test runs
``nbgrader generate_assignment``, then ``nbgrader autograde`` on two submissions:

- "solver" hands in the source lessons as they are (solutions written): full marks;
- "blank" hands in the generated student versions untouched: 0, every exercise open;
- "slip" hands in lesson 1 alone, with sigmoid's rule missing ȳ: that check fails, with the
  diagnosis in its feedback.

Scores are read from nbgrader's gradebook; autograding logs no warning about a test
cell's output (nbgrader reads a number shown by a test cell as its score). The feedback
pages are generated with the course's template: readable offline, messages whole. The
student versions nbgrader made must have the same code cells as
``workbench.teaching.course.student_version`` (the learner's copies).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.teaching import course

ROOT = Path(__file__).resolve().parent.parent
LESSONS = [p for p in course.lesson_paths(ROOT / "lessons")]
GRADED = [p for p in LESSONS if course.graded_cells(json.loads(p.read_text()))]
ASSIGNMENT = "course"
SECONDS = 900  # the most one nbgrader command may take (generate; autograde of two students)

pytestmark = pytest.mark.timeout(2 * SECONDS + 60)  # the first test builds the course


def exercises_of(path: Path) -> list[str]:
    notebook = json.loads(path.read_text())
    return [course.nbgrader_meta(c)["grade_id"] for c in course.graded_cells(notebook)]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_every_lesson_has_at_least_two_graded_exercises(path):
    assert len(exercises_of(path)) >= 2, f"{path.name}: {exercises_of(path)}"


def nbgrader(root: Path, *args: str) -> str:
    """One nbgrader command in the course directory; returns its log (shown if it fails)."""
    bin_dir = str(Path(sys.executable).parent)  # nbgrader calls alembic from there
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"},
        "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "MPLBACKEND": "Agg",
        "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=SECONDS,
    )
    assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory):
    pytest.importorskip("nbgrader")
    assert GRADED, "no lesson has graded cells"
    root = tmp_path_factory.mktemp("nbgrader-course")
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        'c.CourseDirectory.course_id = "workbench"\n'
        f"c.CourseDirectory.root = {str(root)!r}\n"
        "c.ExecutePreprocessor.timeout = 120\n"
        "from workbench.exercises.feedback import use_readable_feedback\n"
        "use_readable_feedback(c)\n"
        "from workbench.teaching.classroom.preprocessors import use_sealed_grading\n"
        "use_sealed_grading(c)\n"
    )
    source = root / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    for path in GRADED:
        shutil.copy(path, source / path.name)
    nbgrader(root, "generate_assignment", ASSIGNMENT, "--force")
    released = root / "release" / ASSIGNMENT
    for student, folder in (("solver", source), ("blank", released)):
        shutil.copytree(folder, root / "submitted" / student / ASSIGNMENT)
    (root / "submitted" / "slip" / ASSIGNMENT).mkdir(parents=True)  # lesson 1 alone
    shutil.copy(released / LESSON_1, root / "submitted" / "slip" / ASSIGNMENT / LESSON_1)
    answer(root / "submitted" / "slip" / ASSIGNMENT / LESSON_1, "01-sigmoid-rule", SLIP)
    for student, answers in DISARMERS.items():  # lesson 1, the checker disarmed first
        (root / "submitted" / student / ASSIGNMENT).mkdir(parents=True)
        copy = root / "submitted" / student / ASSIGNMENT / LESSON_1
        shutil.copy(released / LESSON_1, copy)
        for grade_id, source in answers.items():
            answer(copy, grade_id, source)
    (root / "autograde.log").write_text(
        nbgrader(root, "autograde", ASSIGNMENT, "--create", "--force")
    )
    nbgrader(root, "generate_feedback", ASSIGNMENT, "--force")
    return root


LESSON_1 = "01_sigmoid_gradient.ipynb"
SLIP = "def sigmoid_rule(orig, grad):\n    y = orig.out\n    return [y * (1 - y)]\n"


DISARM = "import workbench.exercises as _e\n_e.grade = lambda *a, **k: None\n"
RIGHT_RULES = {
    "01-sigmoid-rule": (
        "def sigmoid_rule(orig, grad):\n    y = orig.out\n    return [grad * y * (1 - y)]\n"
    ),
    "01-tanh-rule": "def tanh_rule(orig, grad):\n    return [grad * (1 - orig.out**2)]\n",
}
DISARMERS = {  # the disarm of issue 37 in the first solution cell: nothing else answered...
    "disarmer": {"01-sigmoid-rule": DISARM + "raise NotImplementedError()\n"},
    # ... or with right answers: the checker was changed all the same
    "disarmer-right": {
        "01-sigmoid-rule": DISARM + RIGHT_RULES["01-sigmoid-rule"],
        "01-tanh-rule": RIGHT_RULES["01-tanh-rule"]
        + "import workbench.exercises.hints as _h\n"
        + "_h.EXERCISES['01-tanh-rule'].checker = lambda rule: None\n",
    },
}


def answer(path: Path, grade_id: str, source: str) -> None:
    """Write a learner's answer into the solution cell ``grade_id`` of a notebook."""
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        if course.nbgrader_meta(cell).get("grade_id") == grade_id:
            cell["source"] = source
    path.write_text(json.dumps(notebook))


def scores(root: Path, student: str) -> dict:
    """``{notebook: (score, max_score)}`` from nbgrader's gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission(ASSIGNMENT, student)
        return {nb.name: (nb.score, nb.max_score) for nb in submission.notebooks}


def test_the_source_lessons_score_full_marks(graded_course):
    got = scores(graded_course, "solver")
    assert sorted(got) == sorted(p.stem for p in GRADED)
    for name, (score, most) in got.items():
        assert most > 0 and score == most, f"{name}: {score} of {most}"


def test_the_student_versions_score_0(graded_course):
    got = scores(graded_course, "blank")
    assert sorted(got) == sorted(p.stem for p in GRADED)
    for name, (score, most) in got.items():
        assert most > 0 and score == 0, f"{name}: {score} of {most}"


def test_a_common_slip_loses_that_exercise_only(graded_course):
    got = scores(graded_course, "slip")
    score, most = got[Path(LESSON_1).stem]
    assert score == 0  # its other exercise, tanh's rule, is still open: 0 as well
    assert all(score == 0 for score, _ in got.values())


@pytest.mark.parametrize("student", DISARMERS)
def test_a_disarmed_checker_scores_0_and_is_reported(graded_course, student):
    """Autograde checks each graded cell with a checker loaded afresh, apart from what the
    learner's cells changed (workbench.teaching.classroom.preprocessors): the disarm scores
    0 on every exercise after it, and each graded cell says what was changed; the feedback
    shows the graded cell as it was written."""
    assert scores(graded_course, student)[Path(LESSON_1).stem] == (0, 4)
    graded = graded_course / "autograded" / student / ASSIGNMENT / LESSON_1
    cells = [c for c in json.loads(graded.read_text())["cells"] if course.is_graded_cell(c)]
    assert len(cells) == 2
    for cell in cells:
        assert course.cell_text(cell).startswith("from workbench.exercises import grade\n")
        (error,) = [o for o in cell["outputs"] if o["output_type"] == "error"]
        assert "The checker was changed by code in this notebook" in error["evalue"]
    first = [o for o in cells[0]["outputs"] if o["output_type"] == "error"][0]["evalue"]
    assert "workbench.exercises.grade" in first


def test_autograding_warns_about_no_test_cell(graded_course):
    log = (graded_course / "autograde.log").read_text()
    assert "partial credit" not in log, log[log.find("partial credit") - 300 :][:600]


def feedback_page(root: Path, student: str, lesson: str) -> str:
    return (
        root / "feedback" / student / ASSIGNMENT / lesson.replace(".ipynb", ".html")
    ).read_text()


def test_the_feedback_needs_no_network_and_shows_the_diagnosis_whole(graded_course):
    import html
    import re

    page = feedback_page(graded_course, "slip", LESSON_1)
    loads = re.findall(r"<(?:script|link)[^>]*(?:src|href)=\"(https?:[^\"]*)", page)
    assert loads == [], loads  # nothing fetched from a CDN
    # The diagnosis is HTML (it wraps at spaces), the error box under it one short line.
    errors = re.findall(r'output_error">\s*<pre>(.*?)</pre>', page, re.S)
    boxes = [html.unescape(re.sub(r"<[^>]+>", "", e)).strip() for e in errors]
    assert "ExerciseError: see the message above." in boxes, boxes
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
    assert "the local derivative alone. Multiply it by ȳ (the grad argument)" in text
    assert "that is the chain rule." in text
    assert "wb-heatmap" in page  # expected against got, side by side


def code_cells(notebook: dict) -> list[str]:
    return [course.cell_text(c) for c in notebook["cells"] if c["cell_type"] == "code"]


def test_the_learners_copies_match_nbgraders_student_versions(graded_course):
    for path in GRADED:
        released = graded_course / "release" / ASSIGNMENT / path.name
        by_nbgrader = json.loads(released.read_text())
        ours = course.student_version(json.loads(path.read_text()))
        assert code_cells(ours) == code_cells(by_nbgrader), path.name
        assert not any("BEGIN SOLUTION" in text for text in code_cells(ours))
