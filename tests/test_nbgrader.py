"""nbgrader runs the course as a teacher would: generate, then autograde two students.

In a course directory of its own (``nbgrader_config.py`` with a course id,
``source/course/`` holding every lesson that has graded cells), the test runs
``nbgrader generate_assignment``, then ``nbgrader autograde`` on two submissions:

- "solver" hands in the source lessons as they are (solutions written): full marks;
- "blank" hands in the generated student versions untouched: at most 25% of the points.

Scores are read from nbgrader's gradebook. The student versions nbgrader made must have
the same code cells as ``workbench.course.student_version`` (the learner's copies).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import course

ROOT = Path(__file__).resolve().parent.parent
LESSONS = [p for p in course.lesson_paths(ROOT / "lessons")]
GRADED = [p for p in LESSONS if course.graded_cells(json.loads(p.read_text()))]
ASSIGNMENT = "course"
STUDENT_SHARE = 0.25
SECONDS = 900  # the most one nbgrader command may take (generate; autograde of two students)

pytestmark = pytest.mark.timeout(2 * SECONDS + 60)  # the first test builds the course


def exercises_of(path: Path) -> list[str]:
    notebook = json.loads(path.read_text())
    return [course.nbgrader_meta(c)["grade_id"] for c in course.graded_cells(notebook)]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_every_lesson_has_at_least_two_graded_exercises(path):
    assert len(exercises_of(path)) >= 2, f"{path.name}: {exercises_of(path)}"


def nbgrader(root: Path, *args: str) -> None:
    """One nbgrader command in the course directory; its log is shown if it fails."""
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
    )
    source = root / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    for path in GRADED:
        shutil.copy(path, source / path.name)
    nbgrader(root, "generate_assignment", ASSIGNMENT, "--force")
    for student, folder in (("solver", source), ("blank", root / "release" / ASSIGNMENT)):
        shutil.copytree(folder, root / "submitted" / student / ASSIGNMENT)
    nbgrader(root, "autograde", ASSIGNMENT, "--create", "--force")
    return root


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


def test_the_student_versions_score_at_most_a_quarter(graded_course):
    got = scores(graded_course, "blank")
    total = sum(score for score, _ in got.values())
    most = sum(most for _, most in got.values())
    assert most > 0 and total <= STUDENT_SHARE * most, got
    for name, (score, most) in got.items():
        assert score <= STUDENT_SHARE * most, f"{name}: {score} of {most}"


def code_cells(notebook: dict) -> list[str]:
    return [course.cell_text(c) for c in notebook["cells"] if c["cell_type"] == "code"]


def test_the_learners_copies_match_nbgraders_student_versions(graded_course):
    for path in GRADED:
        released = graded_course / "release" / ASSIGNMENT / path.name
        by_nbgrader = json.loads(released.read_text())
        ours = course.student_version(json.loads(path.read_text()))
        assert code_cells(ours) == code_cells(by_nbgrader), path.name
        assert not any("BEGIN SOLUTION" in text for text in code_cells(ours))
