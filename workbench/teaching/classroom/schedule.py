"""A schedule for the course: each lesson's time to *do*, from what the lesson holds.

    workbench schedule                        # a Markdown table, one row per lesson
    workbench schedule --words-per-minute 100 --minutes-per-point 6

Nobody's time was measured here (no class has done the course yet): the time is an
estimate built from what is measured in each lesson — the words of prose to read,
the code cells to read and run, the exercises and their points — at rates a teacher
can set from their own class: 120 words a minute for technical prose with formulas,
a minute per code cell (read it, run it, look at what it shows), 4 minutes per
exercise point (the exercises are 2 or 3 points: 8 to 12 minutes each, a first
attempt, the check's message, a second). Time one pilot learner per lesson and set
the rates from it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from .. import course

WORDS_PER_MINUTE = 120
MINUTES_PER_CODE_CELL = 1.0
MINUTES_PER_POINT = 4.0


@dataclass
class LessonLoad:
    lesson: str
    words: int  # of Markdown prose
    code_cells: int  # not counting the exercises' own cells
    exercises: int
    points: float

    def minutes(
        self,
        words_per_minute: float = WORDS_PER_MINUTE,
        per_code_cell: float = MINUTES_PER_CODE_CELL,
        per_point: float = MINUTES_PER_POINT,
    ) -> int:
        """The estimated time to do the lesson, rounded up to 5 minutes."""
        total = self.words / words_per_minute + self.code_cells * per_code_cell
        total += self.points * per_point
        return 5 * math.ceil(total / 5)


def lesson_load(path: Path) -> LessonLoad:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    words = sum(len(course.cell_text(c).split()) for c in cells if c["cell_type"] == "markdown")
    graded = [c for c in cells if course.is_graded_cell(c)]
    exercise_cells = [c for c in cells if course.nbgrader_meta(c)]
    code = [c for c in cells if c["cell_type"] == "code" and c not in exercise_cells]
    points = sum(float(course.nbgrader_meta(c).get("points", 0)) for c in graded)
    return LessonLoad(path.name, words, len(code), len(graded), points)


def schedule(lessons: Path = course.LESSONS) -> list[LessonLoad]:
    return [lesson_load(path) for path in course.lesson_paths(lessons)]


def as_markdown(loads: list[LessonLoad], **rates) -> str:
    lines = ["| lesson | words | code cells | exercises (points) | time to do |"]
    lines.append("|---|---|---|---|---|")
    for load in loads:
        work = f"{load.exercises} ({load.points:g})"
        lines.append(
            f"| `{load.lesson}` | {load.words} | {load.code_cells} | {work} "
            f"| {load.minutes(**rates)} min |"
        )
    total = sum(load.minutes(**rates) for load in loads)
    lines.append(f"| all | | | | {total} min ({total / 60:.1f} h) |")
    return "\n".join(lines)
