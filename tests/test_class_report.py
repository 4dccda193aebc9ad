"""The class report a teacher reads (issue 37, point 7): wrong answers counted by their
misconception's id, across exercises and lessons, per learner; suspicious submissions
flagged (answers identical to another's, a disarmed checker, a forged time).

One lesson graded by nbgrader with the course's sealed grading, for five learners:

- ada answers both exercises right;
- grace forgets ȳ in sigmoid's rule and gets tanh's sign wrong;
- gracie hands in grace's answers, comments and blank lines changed;
- mallory disarms the checker in her first answer cell;
- trent answers right (in his own words), and his timestamp.txt said 2099;
- pat's tanh rule is right on vectors only (2 of its 3 calls): partial credit.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
from pathlib import Path

import pytest
from nbgrader_class import ANSWERS, ASSIGNMENT, LESSON, RIGHT, answered, nbgrader, rule

from workbench.teaching import cli
from workbench.teaching.classroom import class_report as report
from workbench.teaching.classroom import coursedir

pytest.importorskip("nbgrader")

DISARM = "import workbench.exercises as _e\n_e.grade = lambda *a, **k: None\n"
COPIED = {  # grace's answers, made to look different
    grade_id: "# my own work\n\n" + text.replace("\n", "\n\n") + "  # checked twice"
    for grade_id, text in ANSWERS["grace"].items()
}
LEARNERS = {
    "ada": RIGHT,
    "grace": ANSWERS["grace"],
    "gracie": COPIED,
    "mallory": {"01-sigmoid-rule": DISARM + "raise NotImplementedError()\n"},
    "trent": {
        "01-sigmoid-rule": rule("sigmoid_rule", "grad * y * (1 - y)"),
        "01-tanh-rule": rule("tanh_rule", "grad - grad * y * y"),
    },
    "pat": {
        "01-sigmoid-rule": RIGHT["01-sigmoid-rule"],
        "01-tanh-rule": rule(
            "tanh_rule", "grad * (1 - y**2) if len(y.shape) < 2 else grad * (y**2 - 1)"
        ),
    },
}
COLLECTED_AT = "2026-12-02 10:00:00.000000 UTC"  # what the collect's timestamp.txt says


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("class")
    coursedir.make_course(root, ["01"])
    (root / "roster.csv").write_text(
        "id,first_name,last_name,email\n" + "".join(f"{n},{n},X,{n}@x.org\n" for n in LEARNERS)
    )
    nbgrader(root, "db", "student", "import", "roster.csv")
    nbgrader(root, "generate_assignment", ASSIGNMENT, "--force")
    released = json.loads((root / "release" / ASSIGNMENT / LESSON).read_text())
    for student, answers in LEARNERS.items():
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / LESSON).write_text(json.dumps(answered(released, answers)))
        (folder / "timestamp.txt").write_text(COLLECTED_AT)
        claimed = "2099-01-01 00:00:00.000000 UTC" if student == "trent" else COLLECTED_AT
        (folder / coursedir.CLAIMED).write_text(claimed)
    nbgrader(root, "autograde", ASSIGNMENT, "--force")
    return root


def test_wrong_answers_are_counted_by_their_misconceptions_id(graded):
    made = report.class_report(graded)
    sigmoid, tanh = made.exercises  # in lesson order
    assert (sigmoid.exercise, tanh.exercise) == ("01-sigmoid-rule-check", "01-tanh-rule-check")
    assert sigmoid.told == {
        "grace": "no_upstream",
        "gracie": "no_upstream",
        "mallory": "checker_changed",
    }
    assert tanh.told == {
        "grace": "sign",
        "gracie": "sign",
        "mallory": "checker_changed",
        "pat": "sign",  # right on 2 of 3 calls: the same misconception, in part
    }
    assert sigmoid.diagnoses["no_upstream"] == 2
    assert "ȳ" in sigmoid.examples["no_upstream"]
    assert made.by_learner() == {
        "grace": {"no_upstream": 1, "sign": 1},
        "gracie": {"no_upstream": 1, "sign": 1},
        "pat": {"sign": 1},  # mallory's disarmed checker is flagged, not a misconception
    }


def test_the_report_lists_exercises_where_the_lesson_puts_them(graded, tmp_path):
    """The report follows the cells' order in the teacher's source notebook, not the
    gradebook's ids by name (issue 37, point 9): with tanh's cells moved before sigmoid's,
    tanh's exercise comes first (by name it would not)."""
    import shutil

    root = tmp_path / "course"
    shutil.copytree(graded, root)
    source = root / "source" / ASSIGNMENT / LESSON
    notebook = json.loads(source.read_text())
    notebook["cells"].reverse()
    source.write_text(json.dumps(notebook))
    made = report.class_report(root)
    assert [row.exercise for row in made.exercises] == [
        "01-tanh-rule-check",
        "01-sigmoid-rule-check",
    ]


def test_an_answer_right_in_part_scores_that_share_of_the_points(graded):
    """pat's tanh rule is right on 2 of its 3 calls: 2/3 of the cell's points, in
    nbgrader's own gradebook (the sealed grading's partial credit)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{graded / 'gradebook.db'}") as gradebook:
        cell = "01-tanh-rule-check"
        pat = gradebook.find_grade(cell, LESSON[:-6], ASSIGNMENT, "pat")
        grace = gradebook.find_grade(cell, LESSON[:-6], ASSIGNMENT, "grace")
        assert pat.score == pytest.approx(round(pat.max_score * 2 / 3, 2)) and pat.score > 0
        assert grace.score == 0


def test_suspicious_submissions_are_flagged(graded):
    made = report.class_report(graded)
    whys = {s.student: s.why for s in made.suspicious}
    assert {s.student for s in made.suspicious} == {"grace", "gracie", "mallory", "trent"}
    assert "identical to gracie's" in whys["grace"] and "identical to grace's" in whys["gracie"]
    assert whys["mallory"] == (
        "their code changed the checker (01-sigmoid-rule-check, 01-tanh-rule-check)"
    )
    assert "says 2099-01-01 00:00, the file system 2026-12-02 10:00" in whys["trent"]
    assert all(s.assignment == ASSIGNMENT for s in made.suspicious)


def test_the_command_prints_misconceptions_learners_and_flags(graded, capsys):
    assert cli.main(["class-report", str(graded)]) == 0
    printed = capsys.readouterr().out
    across = printed.split("misconceptions across exercises", 1)[1]
    assert "2× [no_upstream]" in across and "learners: grace 1, gracie 1" in across
    assert "in lesson01 · 01-sigmoid-rule-check" in across
    assert "pat: 1× sign" in across and "mallory:" not in across.split("suspicious")[0]
    assert "trent lesson01: its timestamp.txt says 2099" in across
    assert "ada" not in across  # right everywhere, nothing suspicious


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def test_the_csv_has_the_misconceptions_each_learners_and_the_flags(graded, tmp_path, capsys):
    """--csv class.csv: the table by exercise, and beside it the parts below the table,
    one CSV each (a spreadsheet opens each as a table of its own)."""
    out = tmp_path / "class.csv"
    assert cli.main(["class-report", str(graded), "--csv", str(out)]) == 0
    names = ["class.csv", "class-misconceptions.csv", "class-learners.csv"]
    names.append("class-suspicious.csv")
    assert f"wrote {', '.join(str(tmp_path / name) for name in names)}" in capsys.readouterr().out
    assert [row["exercise"] for row in read_csv(out)] == [
        "01-sigmoid-rule-check",
        "01-tanh-rule-check",
    ]
    sign, no_upstream = read_csv(tmp_path / "class-misconceptions.csv")  # most frequent first
    assert (sign["misconception"], sign["times"], sign["learners"]) == (
        "sign",
        "3",
        "grace;gracie;pat",
    )
    assert sign["exercises"] == "lesson01 · 01-tanh-rule-check" and "sign" in sign["example"]
    assert (no_upstream["misconception"], no_upstream["times"]) == ("no_upstream", "2")
    assert "ȳ" in no_upstream["example"]
    assert read_csv(tmp_path / "class-learners.csv") == [
        {"learner": learner, "misconception": key, "times": "1"}
        for learner, key in [
            ("grace", "no_upstream"),
            ("grace", "sign"),
            ("gracie", "no_upstream"),
            ("gracie", "sign"),
            ("pat", "sign"),
        ]
    ]
    flagged = {row["learner"]: row for row in read_csv(tmp_path / "class-suspicious.csv")}
    assert set(flagged) == {"grace", "gracie", "mallory", "trent"}
    assert flagged["mallory"]["why"].startswith("their code changed the checker")
    assert "2099" in flagged["trent"]["why"] and flagged["trent"]["assignment"] == ASSIGNMENT


def result(assignment: str, exercise: str, told: dict[str, str]) -> report.ExerciseResult:
    """An exercise's row as the report makes it: each learner's misconception id."""
    row = report.ExerciseResult(assignment, assignment, exercise, 2.0, submitted=list(told))
    for student, key in told.items():
        if key:
            row.record_wrong(student, key, f"a message about {key}")
        else:
            row.passed.append(student)
    return row


def test_the_same_misconception_in_two_lessons_adds_up():
    """no_upstream in lesson 1 and in lesson 3 is one misconception, counted twice."""
    rows = [
        result("lesson01", "01-sigmoid-rule-check", {"ada": "", "grace": "no_upstream"}),
        result("lesson01", "01-tanh-rule-check", {"ada": "sign", "grace": report.NOT_ANSWERED}),
        result("lesson03", "03-exp-rule-check", {"ada": "no_upstream", "grace": "no_upstream"}),
    ]
    made = report.ClassReport(["ada", "grace"], rows, {})
    first, second = made.misconceptions()
    assert (first.key, first.total, dict(first.learners)) == (
        "no_upstream",
        3,
        {"grace": 2, "ada": 1},
    )
    assert first.places == ["lesson01 · 01-sigmoid-rule-check", "lesson03 · 03-exp-rule-check"]
    assert (second.key, second.total) == ("sign", 1)
    assert made.by_learner() == {
        "ada": {"sign": 1, "no_upstream": 1},
        "grace": {"no_upstream": 2},  # not answered is no misconception
    }
    # The CSV groups them the same way.
    rows = list(csv.DictReader(io.StringIO(report.misconceptions_csv(made))))
    assert [(row["misconception"], row["times"], row["learners"]) for row in rows] == [
        ("no_upstream", "3", "ada;grace"),
        ("sign", "1", "ada"),
    ]
    assert rows[0]["exercises"] == "lesson01 · 01-sigmoid-rule-check;lesson03 · 03-exp-rule-check"
    learners = list(csv.DictReader(io.StringIO(report.learners_csv(made))))
    assert [(row["learner"], row["misconception"], row["times"]) for row in learners] == [
        ("ada", "no_upstream", "1"),
        ("ada", "sign", "1"),
        ("grace", "no_upstream", "2"),
    ]


def test_a_diagnosis_without_an_id_leaves_the_learners_code_out():
    one = "Your rule raised an error on line 3 (`y = orig.out * yy`): NameError."
    two = "Your rule raised an error on line 4 (`z = zz`): NameError."
    assert report.diagnosis(one) == report.diagnosis(two)
    assert "yy" not in report.diagnosis(one)
    assert report.misconception(one, "raised NameError") == "raised NameError"
    assert report.misconception(one, "not_answered") == report.NOT_ANSWERED


def test_a_time_within_minutes_is_not_a_forgery(tmp_path):
    folder = tmp_path / "submitted"
    folder.mkdir()
    (folder / "timestamp.txt").write_text(COLLECTED_AT)
    assert report.forged_time(folder) is None  # nothing claimed (nbgrader's own collect)
    near = datetime.datetime(2026, 12, 2, 10, 4)
    (folder / coursedir.CLAIMED).write_text(f"{near:%Y-%m-%d %H:%M:%S.%f} UTC")
    assert report.forged_time(folder) is None  # a clock a few minutes off
    (folder / coursedir.CLAIMED).write_text("whenever")
    assert "not a time" in report.forged_time(folder)
