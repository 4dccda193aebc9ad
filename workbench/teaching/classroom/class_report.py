"""The class report: per lesson and exercise, how the class did and what went wrong.

    workbench class-report ~/course                          # a table
    workbench class-report ~/course --csv class.csv --chart class.png

It reads what ``nbgrader autograde`` left in a course directory: the gradebook
(``gradebook.db``: the roster, the submissions, each test cell's score) and the
autograded notebooks (``autograded/<student>/<assignment>/<notebook>.ipynb``: the
message each failed check printed). For each exercise (an autograded test cell) it
gives the learners who submitted, how many passed (full points), the most common
diagnoses, and for each assignment the learners on the roster who have not submitted.

A diagnosis is the check's own message, with its numbers and arrays taken out, so that
the same misconception met with different values counts once ("Your gradient for x
has shape (#, #) where (#,) was expected…"). An exercise left as it was handed out
counts as "not answered".
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

NOT_ANSWERED = "not answered (the `raise NotImplementedError()` stub is still there)"
# What workbench.exercises.grade shows for an exercise still open (its text/plain is 0).
OPEN_NOTE = "<b>Open.</b>"
NOTE_PREFIX = "Open: "
TAG = re.compile(r"<[^>]+>")
NO_MESSAGE = "no error shown (a partial score, or the cell did not run)"
UNREADABLE = "the autograded notebook could not be read (listed under the table)"
TOP = 3  # diagnoses listed per exercise
NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")
NUMBER_RUN = re.compile(r"#(?:,\s*#)+")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class ExerciseResult:
    """How the class did on one autograded test cell."""

    assignment: str
    notebook: str
    exercise: str  # the test cell's grade id
    max_score: float
    submitted: list[str] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    diagnoses: Counter = field(default_factory=Counter)

    @property
    def pass_rate(self) -> float | None:
        """Passed over submitted; None when nobody submitted."""
        return len(self.passed) / len(self.submitted) if self.submitted else None

    def top_diagnoses(self, n: int = TOP) -> list[tuple[str, int]]:
        return self.diagnoses.most_common(n)


@dataclass
class ClassReport:
    students: list[str]
    exercises: list[ExerciseResult]
    missing: dict[str, list[str]]  # assignment -> students on the roster who did not submit
    unreadable: dict[str, str] = field(default_factory=dict)  # notebook path -> why


# ------------------------------------------------------------------ reading
def class_report(root: Path, assignments: list[str] | None = None) -> ClassReport:
    """The report of the course directory ``root`` (after ``nbgrader autograde``)."""
    from nbgrader.api import Gradebook  # the teacher's tool, not a dependency of the core

    database = root / "gradebook.db"
    if not database.exists():
        raise FileNotFoundError(f"{database} not found: run nbgrader autograde in {root} first")
    exercises, missing, unreadable = [], {}, {}
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
    return ClassReport(students, in_lesson_order(exercises, root), missing, unreadable)


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
        told = diagnosis(failure_message(notebook, result.exercise))
    except NotebookUnreadable as err:
        unreadable[str(notebook)] = str(err)
        told = UNREADABLE
    result.diagnoses[told] += 1


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
    if not notebook.exists():
        return None
    for cell in notebook_cells(notebook):
        try:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
                return cell_message(cell)
        except (AttributeError, TypeError) as err:  # a cell, an output, not as nbformat says
            raise NotebookUnreadable(f"{type(err).__name__}: {err}") from None
    return None


def cell_message(cell: dict) -> str | None:
    """The error a test cell's outputs hold, or grade()'s *Open.* note; None if neither."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
        note = output.get("data", {}).get("text/html", "")
        note = "".join(note) if isinstance(note, list) else note
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
    text = NUMBER_RUN.sub("#…", NUMBER.sub("#", text))
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:197] + "..."


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
    return "\n".join(lines)


CSV_COLUMNS = ["assignment", "notebook", "exercise", "max_score", "submitted", "passed"]
CSV_COLUMNS += ["pass_rate"] + [
    f"{kind}_{k}" for k in range(1, TOP + 1) for kind in ("diagnosis", "count")
]
CSV_COLUMNS += ["not_submitted"]


def as_csv(report: ClassReport) -> str:
    """One row per exercise; the learners who have not submitted, joined by ';'."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in report.exercises:
        top = row.top_diagnoses() + [("", "")] * TOP
        rate = "" if row.pass_rate is None else f"{row.pass_rate:.3f}"
        cells = [row.assignment, row.notebook, row.exercise, f"{row.max_score:g}"]
        cells += [len(row.submitted), len(row.passed), rate]
        cells += [part for pair in top[:TOP] for part in pair]
        cells.append(";".join(report.missing.get(row.assignment, [])))
        writer.writerow(cells)
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
