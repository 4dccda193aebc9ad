"""The class report: per lesson and exercise, how the class did and what went wrong.

    workbench class-report ~/course                          # a table
    workbench class-report ~/course --csv class.csv --chart class.png
    # class.csv by exercise; class-misconceptions.csv, class-learners.csv and
    # class-suspicious.csv: the parts below the table

It reads what ``nbgrader autograde`` left in a course directory: the gradebook
(``gradebook.db``: the roster, the submissions, each test cell's score) and the
autograded notebooks (``autograded/<student>/<assignment>/<notebook>.ipynb``: the
message each failed check printed). For each exercise (an autograded test cell) it
gives the learners who submitted, how many passed (full points), the most common
diagnoses, and for each assignment the learners on the roster who have not submitted.

A wrong answer is counted by its misconception's id, which the check's message carries
in the notebook (the output's metadata, ``{"workbench": {"kind": "no_upstream"}}``:
workbench.exercises.report): "no_upstream" (the local derivative alone, ȳ left out),
"sign", "shape"..., or "raised NameError" for an error in the learner's code. Wrong
answers of one id count together however they are worded, and the report shows one
message of each, its numbers, arrays and quoted code taken out. A message without an id
(a check that names none, a notebook graded before ids) is counted by that message,
with its numbers, arrays and quoted code taken out ("Your gradient for x has shape
(#, #) where (#,) was expected…"). An exercise left as it was handed out counts as
"not answered".

Besides the table by exercise, the report counts each misconception across exercises
and lessons (the same id in lessons 1 and 3 adds up), and each learner's, and it flags
submissions to look at before trusting their grade:

- answers identical to another learner's (every answered solution cell of a notebook,
  comments, blank lines and spacing aside);
- a checker changed by the learner's code (the sealed grading's message:
  workbench.exercises.sealed, id "checker_changed");
- a forged time: what the learner's ``timestamp.txt`` said (kept by the exchange's
  collect as ``claimed_timestamp.txt``) more than :data:`FORGED_AFTER` away from the
  time the file system gave the submission.
"""

from __future__ import annotations

import ast
import csv
import datetime
import html
import io
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ...exercises.hints import PARTLY_RIGHT
from ...exercises.report import KIND_KEY
from ...exercises.sealed import CHECKER_CHANGED
from .. import course
from .coursedir import CLAIMED

NOT_ANSWERED = "not answered (the `raise NotImplementedError()` stub is still there)"
# What workbench.exercises.grade shows for an exercise still open (its text/plain is 0).
OPEN_NOTE = "<b>Open.</b>"
NOTE_PREFIX = "Open: "
PARTLY_NOTE = f"<b>{PARTLY_RIGHT}</b>"  # a partial score: the check's message is above it
NOT_YET = re.compile(r"<b>Not yet\.</b>(.*?)</p>", re.S)
TAG = re.compile(r"<[^>]+>")
NO_MESSAGE = "no error shown (a partial score, or the cell did not run)"
UNREADABLE = "the autograded notebook could not be read (listed under the table)"
TOP = 3  # diagnoses listed per exercise
NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")
NUMBER_RUN = re.compile(r"#(?:,\s*#)+")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
QUOTED_CODE = re.compile(r"`[^`\n]*`")  # a learner's line, quoted in a message
# Left out of the tallies across exercises: no misconception (a disarmed checker is
# listed with the suspicious submissions instead).
NOT_MISCONCEPTIONS = (NOT_ANSWERED, NO_MESSAGE, UNREADABLE, CHECKER_CHANGED)
STUB_KINDS = ("not_answered",)  # an id that says: still the stub
FORGED_AFTER = datetime.timedelta(minutes=10)  # a claimed time this far off is flagged


@dataclass
class ExerciseResult:
    """How the class did on one autograded test cell."""

    assignment: str
    notebook: str
    exercise: str  # the test cell's grade id
    max_score: float
    submitted: list[str] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    diagnoses: Counter = field(default_factory=Counter)  # misconception id -> learners
    told: dict[str, str] = field(default_factory=dict)  # learner -> their misconception id
    examples: dict[str, str] = field(default_factory=dict)  # id -> one message of it

    @property
    def pass_rate(self) -> float | None:
        """Passed over submitted; None when nobody submitted."""
        return len(self.passed) / len(self.submitted) if self.submitted else None

    @property
    def place(self) -> str:
        return f"{self.assignment} · {self.exercise}"

    def record_wrong(self, student: str, key: str, example: str) -> None:
        """``student`` got it wrong: misconception ``key``, one message of it ``example``."""
        self.diagnoses[key] += 1
        self.told[student] = key
        self.examples.setdefault(key, example)

    def described(self, key: str) -> str:
        """A misconception as the report prints it: ``[id] one message of it``."""
        example = self.examples.get(key)
        return f"[{key}] {example}" if example and example != key else key

    def top_diagnoses(self, n: int = TOP) -> list[tuple[str, int]]:
        return [(self.described(key), count) for key, count in self.diagnoses.most_common(n)]


@dataclass
class Misconception:
    """One misconception across the exercises: who showed it, how often, where."""

    key: str  # its id ("no_upstream"), or the message where a check names none
    example: str
    learners: Counter = field(default_factory=Counter)  # learner -> times
    places: list[str] = field(default_factory=list)  # "lesson01 · 01-sigmoid-rule-check"

    @property
    def total(self) -> int:
        return sum(self.learners.values())

    def described(self) -> str:
        return f"[{self.key}] {self.example}" if self.example != self.key else self.key


@dataclass
class Suspicion:
    """A submission to look at before its grade is trusted."""

    student: str
    assignment: str
    why: str


@dataclass
class ClassReport:
    students: list[str]
    exercises: list[ExerciseResult]
    missing: dict[str, list[str]]  # assignment -> students on the roster who did not submit
    unreadable: dict[str, str] = field(default_factory=dict)  # notebook path -> why
    suspicious: list[Suspicion] = field(default_factory=list)

    def misconceptions(self) -> list[Misconception]:
        """Every misconception across exercises and lessons, the most frequent first."""
        found: dict[str, Misconception] = {}
        for row in self.exercises:
            for student, key in row.told.items():
                if key in NOT_MISCONCEPTIONS:
                    continue
                entry = found.setdefault(key, Misconception(key, row.examples.get(key, key)))
                entry.learners[student] += 1
                if row.place not in entry.places:
                    entry.places.append(row.place)
        return sorted(found.values(), key=lambda m: (-m.total, m.key))

    def by_learner(self) -> dict[str, Counter]:
        """``{learner: Counter(misconception id)}`` across exercises and lessons."""
        found: dict[str, Counter] = {}
        for row in self.exercises:
            for student, key in row.told.items():
                if key not in NOT_MISCONCEPTIONS:
                    found.setdefault(student, Counter())[key] += 1
        return dict(sorted(found.items()))


# ------------------------------------------------------------------ reading
def class_report(root: Path, assignments: list[str] | None = None) -> ClassReport:
    """The report of the course directory ``root`` (after ``nbgrader autograde``)."""
    from nbgrader.api import Gradebook  # the teacher's tool, not a dependency of the core

    database = root / "gradebook.db"
    if not database.exists():
        raise FileNotFoundError(f"{database} not found: run nbgrader autograde in {root} first")
    exercises, missing, unreadable, suspicious = [], {}, {}, []
    with Gradebook(f"sqlite:///{database}") as gradebook:
        students = sorted(student.id for student in gradebook.students)
        for assignment in sorted(gradebook.assignments, key=lambda a: a.name):
            if assignments and assignment.name not in assignments:
                continue
            handed_in = sorted({s.student.id for s in assignment.submissions})
            missing[assignment.name] = [s for s in students if s not in handed_in]
            for notebook in assignment.notebooks:
                for cell in sorted(notebook.grade_cells, key=lambda c: c.name):
                    result = ExerciseResult(
                        assignment.name, notebook.name, cell.name, cell.max_score
                    )
                    for student in handed_in:
                        grade = gradebook.find_grade(
                            cell.name, notebook.name, assignment.name, student
                        )
                        record(result, student, grade.score, root, unreadable)
                    exercises.append(result)
                suspicious += identical_answers(root, assignment.name, notebook.name, handed_in)
            suspicious += [
                Suspicion(student, assignment.name, why)
                for student in handed_in
                if (why := forged_time(root / "submitted" / student / assignment.name))
            ]
    suspicious += disarmed(exercises)
    ordered = in_lesson_order(exercises, root)
    return ClassReport(students, ordered, missing, unreadable, suspicious)


def in_lesson_order(exercises: list[ExerciseResult], root: Path) -> list[ExerciseResult]:
    """The exercises as a learner meets them: by assignment, then by where each graded cell
    stands in the teacher's source notebook (the gradebook keeps no order, and its ids
    sorted by name put "01-tanh" before "01-sigmoid" as soon as they are renamed).
    A cell the source notebook lacks comes after the others, by name."""
    places: dict[tuple[str, str], dict[str, int]] = {}

    def key(result: ExerciseResult) -> tuple:
        where = (result.assignment, result.notebook)
        if where not in places:
            places[where] = grade_id_places(root / "source" / where[0] / f"{where[1]}.ipynb")
        place = places[where].get(result.exercise, len(places[where]))
        return (result.assignment, result.notebook, place, result.exercise)

    return sorted(exercises, key=key)


def grade_id_places(notebook: Path) -> dict[str, int]:
    """Each nbgrader grade id of ``notebook`` and its cell's place; {} if it cannot be read."""
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    places = {}
    for place, cell in enumerate(cells):
        if not isinstance(cell, dict):
            continue
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if isinstance(grade_id, str):
            places.setdefault(grade_id, place)
    return places


def record(
    result: ExerciseResult, student: str, score: float | None, root: Path, unreadable: dict
) -> None:
    """Count ``student``'s score on one exercise; a failure's diagnosis from their autograded
    notebook, or, where it cannot be read, :data:`UNREADABLE` and its path in ``unreadable``."""
    result.submitted.append(student)
    if score is not None and score >= result.max_score:
        result.passed.append(student)
        return
    notebook = root / "autograded" / student / result.assignment / f"{result.notebook}.ipynb"
    try:
        message, kind = failure(notebook, result.exercise)
    except NotebookUnreadable as err:
        unreadable[str(notebook)] = str(err)
        result.record_wrong(student, UNREADABLE, UNREADABLE)
        return
    result.record_wrong(student, misconception(message, kind), diagnosis(message))


def misconception(message: str | None, kind: str | None) -> str:
    """What a wrong answer is counted by: its misconception's id where the check named
    one, else its message with the particular values taken out (:func:`diagnosis`)."""
    if kind in STUB_KINDS:
        return NOT_ANSWERED
    if kind:
        return kind
    return diagnosis(message)


class NotebookUnreadable(Exception):
    """An autograded notebook that is not a notebook: cut short, not JSON, cells not a list."""


def notebook_cells(notebook: Path) -> list[dict]:
    """The cells of a notebook file, each a dict; :class:`NotebookUnreadable` if it is none."""
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
        raise NotebookUnreadable(f"{type(err).__name__}: {err}") from None
    if not isinstance(cells, list):
        raise NotebookUnreadable(f"its cells are a {type(cells).__name__}, not a list")
    return [cell for cell in cells if isinstance(cell, dict)]


def failure_message(notebook: Path, grade_id: str) -> str | None:
    """What the test cell ``grade_id`` of an autograded notebook raised, or the note it
    showed for an open exercise (``grade()``'s *Open.*, scored 0); None if neither.
    :class:`NotebookUnreadable` if the file is not a notebook."""
    return failure(notebook, grade_id)[0]


def failure(notebook: Path, grade_id: str) -> tuple[str | None, str | None]:
    """The message of the test cell ``grade_id`` (:func:`failure_message`) and the
    misconception id its output carries (None where it carries none)."""
    if not notebook.exists():
        return None, None
    for cell in notebook_cells(notebook):
        try:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
                return cell_message(cell), cell_kind(cell)
        except (AttributeError, TypeError) as err:  # a cell, an output, not as nbformat says
            raise NotebookUnreadable(f"{type(err).__name__}: {err}") from None
    return None, None


def cell_kind(cell: dict) -> str | None:
    """The misconception id a check's shown message carries in its output's metadata."""
    for output in cell.get("outputs", []):
        kind = output.get("metadata", {}).get(KIND_KEY, {}).get("kind")
        if isinstance(kind, str) and kind:
            return kind
    return None


def cell_message(cell: dict) -> str | None:
    """The error a test cell's outputs hold, or grade()'s *Open.* note; None if neither."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
        note = output.get("data", {}).get("text/html", "")
        note = "".join(note) if isinstance(note, list) else note
        wrong = NOT_YET.search(note) if PARTLY_NOTE in note else None
        if wrong:
            return html.unescape(TAG.sub("", wrong.group(1))).strip()
        if OPEN_NOTE in note:
            text = html.unescape(TAG.sub("", note.split(OPEN_NOTE, 1)[1]))
            return f"{NOTE_PREFIX}{text.strip()}"
    return None


def diagnosis(message: str | None) -> str:
    """The misconception a failure message names, its particular values taken out."""
    if message is None:
        return NO_MESSAGE
    if "NotImplementedError" in message:  # an error, or grade()'s note, about the stub
        return NOT_ANSWERED
    text = ANSI.sub("", message).strip()
    text = text.removeprefix("ExerciseError: ")
    text = QUOTED_CODE.sub("`…`", text)
    text = NUMBER_RUN.sub("#…", NUMBER.sub("#", text))
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:197] + "..."


# ------------------------------------------------------------------ suspicious submissions
def identical_answers(
    root: Path, assignment: str, notebook: str, students: list[str]
) -> list[Suspicion]:
    """Learners whose answered solution cells of ``notebook`` are all the same as another
    learner's (blank lines and comments aside); nothing answered is never flagged."""
    by_answers: dict[tuple[str, ...], list[str]] = {}
    for student in students:
        path = root / "autograded" / student / assignment / f"{notebook}.ipynb"
        answers = answered_cells(path)
        if answers:
            by_answers.setdefault(answers, []).append(student)
    flagged = []
    for group in by_answers.values():
        for student in group if len(group) > 1 else []:
            others = ", ".join(s for s in group if s != student)
            why = f"{notebook}: every answer identical to {others}'s"
            flagged.append(Suspicion(student, assignment, why))
    return flagged


def answered_cells(notebook: Path) -> tuple[str, ...]:
    """The learner's answered solution cells, each without comments and blank lines;
    () if none is answered or the notebook cannot be read."""
    try:
        cells = notebook_cells(notebook) if notebook.exists() else []
    except NotebookUnreadable:
        return ()
    answers = []
    for cell in cells:
        if not course.is_solution_cell(cell):
            continue
        text = course.cell_text(cell)
        if "NotImplementedError" not in text:
            answers.append(code_alone(text))
    return tuple(answers) if any(answers) else ()


def code_alone(text: str) -> str:
    """Python code as its syntax tree reads back: comments, blank lines and spacing out."""
    try:
        return ast.unparse(ast.parse(text))
    except (SyntaxError, ValueError):
        lines = [line.strip() for line in text.splitlines()]
        return "\n".join(line for line in lines if line and not line.startswith("#"))


def forged_time(submitted: Path) -> str | None:
    """How a learner's ``timestamp.txt`` disagreed with the file system's time of their
    submission (the collect keeps the former as ``claimed_timestamp.txt``), or None."""
    claimed_file, real_file = submitted / CLAIMED, submitted / "timestamp.txt"
    if not claimed_file.is_file() or not real_file.is_file():
        return None
    real, claimed = read_time(real_file), read_time(claimed_file)
    if real is None:
        return None  # not the exchange's own time: nothing to compare with
    if claimed is None:
        return f"its timestamp.txt is not a time ({first_line(claimed_file)!r})"
    if abs(claimed - real) <= FORGED_AFTER:
        return None
    return (
        f"its timestamp.txt says {claimed:%Y-%m-%d %H:%M}, the file system {real:%Y-%m-%d %H:%M}"
        " UTC: a forged time"
    )


def read_time(path: Path) -> datetime.datetime | None:
    """The UTC time a ``timestamp.txt`` holds, as nbgrader reads it; None if it holds none."""
    from nbgrader.utils import parse_utc

    try:
        return parse_utc(first_line(path))
    except (ValueError, OverflowError):
        return None


def first_line(path: Path, most: int = 80) -> str:
    """The start of a small text file a learner wrote (at most ``most`` characters)."""
    with path.open(encoding="utf-8", errors="replace") as text:
        return text.read(most).strip().split("\n")[0]


def disarmed(exercises: list[ExerciseResult]) -> list[Suspicion]:
    """Learners whose code changed the checker (the sealed grading said so), once each
    per assignment, with the exercises it scored 0."""
    found: dict[tuple[str, str], list[str]] = {}
    for row in exercises:
        for student, key in row.told.items():
            if key == CHECKER_CHANGED:
                found.setdefault((student, row.assignment), []).append(row.exercise)
    return [
        Suspicion(student, assignment, f"their code changed the checker ({', '.join(names)})")
        for (student, assignment), names in sorted(found.items())
    ]


# ------------------------------------------------------------------ writing
def percent(rate: float | None) -> str:
    return "—" if rate is None else f"{100 * rate:.0f}%"


def as_table(report: ClassReport) -> str:
    """The report as plain text: one line per exercise, then who has not submitted."""
    lines = [f"{len(report.students)} learners on the roster", ""]
    header = f"{'assignment':<12} {'exercise':<36} {'passed':>9} {'rate':>5}  most common diagnosis"
    lines += [header, "-" * len(header)]
    for row in report.exercises:
        top = row.top_diagnoses(1)
        common = f"{top[0][1]}× {top[0][0]}" if top else ""
        count = f"{len(row.passed)}/{len(row.submitted)}"
        rate = percent(row.pass_rate)
        lines.append(f"{row.assignment:<12} {row.exercise:<36} {count:>9} {rate:>5}  {common}")
        for text, n in row.top_diagnoses()[1:]:
            lines.append(f"{'':<12} {'':<36} {'':>9} {'':>5}  {n}× {text}")
    lines.append("")
    for assignment, names in report.missing.items():
        who = ", ".join(names) if names else "everyone has submitted"
        lines.append(f"not submitted {assignment}: {who}")
    for path, why in report.unreadable.items():
        lines.append(f"could not read {path} ({why}): its diagnoses are left out, its scores count")
    return "\n".join(lines + across_exercises(report))


def across_exercises(report: ClassReport) -> list[str]:
    """The misconceptions across exercises, each learner's, and the suspicious submissions."""
    lines = ["", "misconceptions across exercises (the same id in several lessons adds up):"]
    for found in report.misconceptions():
        who = ", ".join(f"{student} {n}" for student, n in sorted(found.learners.items()))
        lines.append(f"  {found.total}× {found.described()}")
        lines.append(f"      learners: {who}; in {', '.join(found.places)}")
    lines += ["", "each learner's misconceptions:"]
    for student, kinds in report.by_learner().items():
        listed = ", ".join(f"{n}× {key}" for key, n in sorted(kinds.items(), key=by_count))
        lines.append(f"  {student}: {listed}")
    lines += ["", "suspicious submissions (look at them before trusting their grade):"]
    for found in report.suspicious:
        lines.append(f"  {found.student} {found.assignment}: {found.why}")
    if not report.suspicious:
        lines.append("  none")
    return lines


def by_count(item: tuple[str, int]) -> tuple[int, str]:
    return (-item[1], item[0])


CSV_COLUMNS = ["assignment", "notebook", "exercise", "max_score", "submitted", "passed"]
CSV_COLUMNS += ["pass_rate"] + [
    f"{kind}_{k}" for k in range(1, TOP + 1) for kind in ("diagnosis", "count")
]
CSV_COLUMNS += ["not_submitted"]


def as_csv(report: ClassReport) -> str:
    """One row per exercise; the learners who have not submitted, joined by ';'."""
    rows = []
    for row in report.exercises:
        top = row.top_diagnoses() + [("", "")] * TOP
        rate = "" if row.pass_rate is None else f"{row.pass_rate:.3f}"
        cells = [row.assignment, row.notebook, row.exercise, f"{row.max_score:g}"]
        cells += [len(row.submitted), len(row.passed), rate]
        cells += [part for pair in top[:TOP] for part in pair]
        cells.append(";".join(report.missing.get(row.assignment, [])))
        rows.append(cells)
    return csv_text(CSV_COLUMNS, rows)


def misconceptions_csv(report: ClassReport) -> str:
    """One row per misconception across exercises and lessons, the most frequent first:
    its id, how many times, the learners and the exercises (joined by ';'), one message."""
    rows = [
        [found.key, found.total, ";".join(sorted(found.learners)), ";".join(found.places)]
        + [found.example]
        for found in report.misconceptions()
    ]
    return csv_text(["misconception", "times", "learners", "exercises", "example"], rows)


def learners_csv(report: ClassReport) -> str:
    """One row per learner and misconception: how many exercises showed it."""
    rows = [
        [student, key, n]
        for student, kinds in report.by_learner().items()
        for key, n in sorted(kinds.items(), key=by_count)
    ]
    return csv_text(["learner", "misconception", "times"], rows)


def suspicious_csv(report: ClassReport) -> str:
    """One row per submission to look at before trusting its grade, and why."""
    rows = [[found.student, found.assignment, found.why] for found in report.suspicious]
    return csv_text(["learner", "assignment", "why"], rows)


# What --csv class.csv writes: class.csv, class-misconceptions.csv, ... (one table each)
CSV_TABLES = {
    "": as_csv,
    "-misconceptions": misconceptions_csv,
    "-learners": learners_csv,
    "-suspicious": suspicious_csv,
}


def write_csv(report: ClassReport, path: Path) -> list[Path]:
    """The report's tables as CSV files: ``path`` by exercise, and beside it, named after
    it, the misconceptions across exercises, each learner's, the suspicious submissions."""
    written = []
    for suffix, table in CSV_TABLES.items():
        target = path.with_name(f"{path.stem}{suffix}{path.suffix}")
        target.write_text(table(report), encoding="utf-8")
        written.append(target)
    return written


def csv_text(header: list[str], rows: list[list]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def save_chart(report: ClassReport, path: Path) -> None:
    """A bar per exercise: the share of submissions that passed, with ``passed/submitted``."""
    import matplotlib

    matplotlib.use("Agg")  # a file, never a window
    import matplotlib.pyplot as plt

    rows = report.exercises
    labels = [f"{row.assignment} · {row.exercise}" for row in rows]
    rates = [100 * (row.pass_rate or 0.0) for row in rows]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.4))
    bars = ax.barh(labels, rates, color="#4a7fb5")
    for bar, row in zip(bars, rows):
        ax.text(
            bar.get_width() + 1,
            bar.get_y() + bar.get_height() / 2,
            f"{len(row.passed)}/{len(row.submitted)}",
            va="center",
            fontsize=9,
        )
    ax.set_xlim(0, 110)
    ax.invert_yaxis()  # the first exercise on top
    ax.set_xlabel("passed (% of submissions)")
    ax.set_title(f"Class report: {len(report.students)} learners")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
