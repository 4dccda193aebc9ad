"""The learner's copies of the lessons: solutions removed, made on first use, reset on request.

``lessons/`` holds the *source* notebooks, with every solution written out between
``### BEGIN SOLUTION`` and ``### END SOLUTION`` (the test suite runs them end to end).
A learner works in copies without them, in a folder git ignores (``my-lessons/``)::

    python -m workbench lab                    # makes the copies once, opens them
    python -m workbench lessons --reset 01     # a fresh copy of lesson 01 (yours is kept aside)

A solution region is removed the way ``nbgrader generate_assignment`` removes it:
the lines from ``### BEGIN SOLUTION`` to ``### END SOLUTION`` become
``# YOUR CODE HERE`` and ``raise NotImplementedError()``, indented like the first
marker; nothing else changes. ``tests/test_nbgrader.py`` holds the two to the same
code cells.

:func:`solution` gives an :class:`~workbench.exercises.Exercise` its written solution,
to show after the learner's first attempt. The solutions are *not* in the package (the
wheel on the package index carries none, tests/test_core_wheel.py): they are one file,
``autodiff-workbench-solutions.json``, written from the source lessons into the course
repository's ``solutions/`` folder by ``python scripts/write_solutions.py`` (a test holds
the two equal). :func:`solutions_file` finds it: where ``WORKBENCH_SOLUTIONS`` points,
else in the repository the package runs from (a clone: ``make lab``), else in the
current folder (a self-study learner's download, put beside their lessons). A teacher
turns hints and solutions off for graded work with ``WORKBENCH_EXAM=1`` (:func:`exam_mode`).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LESSONS = ROOT / "lessons"
MY_LESSONS = ROOT / "my-lessons"
SOLUTIONS_NAME = "autodiff-workbench-solutions.json"  # the self-study download's name too
SOLUTIONS = ROOT / "solutions" / SOLUTIONS_NAME  # in the course repository, not the package
SOLUTIONS_VARIABLE = "WORKBENCH_SOLUTIONS"  # a path to the file, where it is elsewhere
KEPT = "before-reset"  # the folder in my-lessons/ where reset moves the learner's copies
EXAM = "WORKBENCH_EXAM"  # set to 1 for graded work: no hints, no solutions

BEGIN, END = "BEGIN SOLUTION", "END SOLUTION"  # as nbgrader finds them: anywhere in a line
CODE_STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
TEXT_STUB = "YOUR ANSWER HERE"


# ------------------------------------------------------------ stripping
def nbgrader_meta(cell: dict) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def is_solution_cell(cell: dict) -> bool:
    return bool(nbgrader_meta(cell).get("solution"))


def is_graded_cell(cell: dict) -> bool:
    return bool(nbgrader_meta(cell).get("grade"))


def cell_text(cell: dict) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def strip_region(source: str, cell_type: str = "code") -> tuple[str, bool]:
    """``source`` with each solution region replaced by the stub; and whether one was found."""
    lines, kept, inside, found = source.split("\n"), [], False, False
    for line in lines:
        if BEGIN in line:
            inside, found = True, True
            indent = line[: len(line) - len(line.lstrip())]
            stub = CODE_STUB if cell_type == "code" else (TEXT_STUB,)
            kept.extend(indent + part for part in stub)
        elif END in line:
            inside = False
        elif not inside:
            kept.append(line)
    if inside:
        raise ValueError(f"a solution region opens with '{BEGIN}' but never ends with '{END}'")
    return "\n".join(kept), found


def strip_cell(cell: dict) -> dict:
    """A solution cell with its solution removed; other cells as they are."""
    if not is_solution_cell(cell):
        return cell
    source, found = strip_region(cell_text(cell), cell["cell_type"])
    if not found:  # a solution cell without markers: all of it is the solution
        source = "\n".join(CODE_STUB) if cell["cell_type"] == "code" else TEXT_STUB
    return {**cell, "source": source}


def student_version(notebook: dict) -> dict:
    """The notebook a learner gets: solutions removed, outputs cleared."""
    cells = []
    for cell in notebook["cells"]:
        cell = strip_cell(cell)
        if cell["cell_type"] == "code":
            cell = {**cell, "outputs": [], "execution_count": None}
        cells.append(cell)
    return {**notebook, "cells": cells}


def graded_cells(notebook: dict) -> list[dict]:
    return [c for c in notebook["cells"] if is_graded_cell(c)]


# ------------------------------------------------------------ copies
def lesson_paths(lessons: Path = LESSONS) -> list[Path]:
    return sorted(lessons.glob("*.ipynb"))


def write_student_copy(source: Path, target: Path) -> Path:
    notebook = json.loads(source.read_text(encoding="utf-8"))
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(student_version(notebook), indent=1, ensure_ascii=False) + "\n"
    target.write_text(text, encoding="utf-8")
    return target


def make_copies(lessons: Path = LESSONS, mine: Path = MY_LESSONS) -> list[Path]:
    """Copy every lesson missing from ``mine``; a copy already there is the learner's: kept."""
    made = []
    for source in lesson_paths(lessons):
        target = mine / source.name
        if not target.exists():
            made.append(write_student_copy(source, target))
    return made


def find_lesson(prefix: str, lessons: Path = LESSONS) -> Path:
    """The one lesson whose file name starts with ``prefix`` ("01", "01_sigmoid")."""
    found = [p for p in lesson_paths(lessons) if p.name.startswith(prefix)]
    if len(found) != 1:
        names = ", ".join(p.name for p in lesson_paths(lessons))
        what = "no lesson" if not found else f"{len(found)} lessons"
        raise ValueError(f"{what} named '{prefix}…' (the lessons: {names})")
    return found[0]


def reset_copy(prefix: str, lessons: Path = LESSONS, mine: Path = MY_LESSONS) -> tuple:
    """A fresh copy of one lesson; the learner's copy is moved aside, never deleted.

    The old copy goes to ``before-reset/`` with the time first in its name
    (``2026-11-26 12.52.30 01_sigmoid_gradient.ipynb``), so that a file browser that
    cuts long names still tells the copies apart. Returns ``(the fresh copy, where the
    old copy went or None)``.
    """
    source = find_lesson(prefix, lessons)
    target = mine / source.name
    kept = None
    if target.exists():
        stamp = time.strftime("%Y-%m-%d %H.%M.%S")
        kept = mine / KEPT / f"{stamp} {target.name}"
        kept.parent.mkdir(exist_ok=True)
        shutil.move(target, kept)
    return write_student_copy(source, target), kept


# ------------------------------------------------------------ solutions
def exam_mode() -> bool:
    """True when hints and solutions are off: ``WORKBENCH_EXAM`` is set to 1 (or yes, true)."""
    return os.environ.get(EXAM, "").strip().lower() in {"1", "yes", "true", "on"}


def solution(grade_id: str, solutions: Path | None = None) -> str | None:
    """The written solution of the exercise ``grade_id``; None where there is none.

    Read from ``solutions`` (by default :func:`solutions_file`). None too in graded
    work (:func:`exam_mode`) and where there is no solutions file (the package alone,
    as on a class's hub or from ``pip install``).
    """
    if exam_mode():
        return None
    solutions = solutions or solutions_file()
    if solutions is None or not solutions.is_file():
        return None
    return json.loads(solutions.read_text(encoding="utf-8")).get(grade_id)


def solutions_file() -> Path | None:
    """The solutions file this learner has, if any: ``$WORKBENCH_SOLUTIONS``, the
    repository's ``solutions/autodiff-workbench-solutions.json`` (a clone), or the
    download of that name in the current folder; None when there is none."""
    named = os.environ.get(SOLUTIONS_VARIABLE, "").strip()
    places = [Path(named).expanduser()] if named else []
    places += [SOLUTIONS, Path.cwd() / SOLUTIONS_NAME]
    return next((place for place in places if place.is_file()), None)


def solutions_of(lessons: Path = LESSONS) -> dict[str, str]:
    """Every exercise's solution in the source lessons, by grade id."""
    found = {}
    for path in lesson_paths(lessons):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for cell in notebook["cells"]:
            if is_solution_cell(cell):
                found[nbgrader_meta(cell)["grade_id"]] = solution_text(cell_text(cell))
    return found


def write_solutions(lessons: Path = LESSONS, solutions: Path = SOLUTIONS) -> Path:
    """Write the solutions file from the source lessons (``scripts/write_solutions.py``)."""
    text = json.dumps(solutions_of(lessons), indent=1, ensure_ascii=False, sort_keys=True)
    solutions.write_text(text + "\n", encoding="utf-8")
    return solutions


def solution_text(source: str) -> str:
    """The cell as the source lesson writes it, without the marker lines."""
    lines = [ln for ln in source.split("\n") if BEGIN not in ln and END not in ln]
    return "\n".join(lines).strip("\n")
