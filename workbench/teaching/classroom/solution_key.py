"""The answer key: every exercise's solution, read from the source lessons, in one file.

    workbench answer-key -o answer-key.md      # Markdown; or answer-key.ipynb, a notebook

For the teacher only: it holds what the learners' copies leave out. Each exercise
comes with its grade id (the one nbgrader and the class report use) and its points.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .. import course


@dataclass
class Answer:
    lesson: str  # the notebook's file name
    grade_id: str  # the solution cell's id; its test cell is usually "<grade_id>-check"
    points: float  # of the test cells that follow it
    solution: str  # the code between the markers


def answers(lessons: Path = course.LESSONS) -> list[Answer]:
    """Every exercise of every lesson, in order."""
    found = []
    for path in course.lesson_paths(lessons):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for k, cell in enumerate(cells):
            if course.is_solution_cell(cell) and not course.is_graded_cell(cell):
                grade_id = course.nbgrader_meta(cell)["grade_id"]
                solution = course.solution_text(course.cell_text(cell))
                found.append(Answer(path.name, grade_id, points_after(cells, k), solution))
    return found


def points_after(cells: list[dict], k: int) -> float:
    """The points of the test cells right after solution cell ``k``."""
    points = 0.0
    for cell in cells[k + 1 :]:
        if not course.is_graded_cell(cell):
            break
        points += float(course.nbgrader_meta(cell).get("points", 0))
    return points


def as_markdown(found: list[Answer]) -> str:
    lines = ["# Answer key — for the teacher, never for the learners", ""]
    lesson = None
    for answer in found:
        if answer.lesson != lesson:
            lesson = answer.lesson
            lines += [f"## {lesson}", ""]
        lines += [f"### `{answer.grade_id}` ({answer.points:g} points)", ""]
        lines += ["```python", answer.solution, "```", ""]
    return "\n".join(lines)


def as_notebook(found: list[Answer]) -> dict:
    cells = [markdown_cell("title", as_markdown([]).splitlines()[0])]
    for answer in found:
        title = f"**{answer.lesson}** · `{answer.grade_id}` ({answer.points:g} points)"
        cells += [markdown_cell(f"{answer.grade_id}-title", title)]
        cells += [code_cell(answer.grade_id, answer.solution)]
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def markdown_cell(cell_id: str, text: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": text}


def code_cell(cell_id: str, text: str) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": cell_id,
        "metadata": {},
        "outputs": [],
        "source": text,
    }


def write_answer_key(out: Path, lessons: Path = course.LESSONS) -> int:
    """Write the key as Markdown (``.md``) or a notebook (``.ipynb``); the number of exercises."""
    found = answers(lessons)
    if out.suffix == ".ipynb":
        text = json.dumps(as_notebook(found), indent=1, ensure_ascii=False) + "\n"
    else:
        text = as_markdown(found)
    out.write_text(text, encoding="utf-8")
    return len(found)
