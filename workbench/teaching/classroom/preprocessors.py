"""nbgrader's autograde with each graded cell checked apart from the learner's code.

In the course's ``nbgrader_config.py`` (``workbench course`` writes it)::

    from workbench.teaching.classroom.preprocessors import use_sealed_grading
    use_sealed_grading(c)

replaces nbgrader's ``Execute`` step of ``nbgrader autograde`` with :class:`SealedExecute`.
It runs the notebook as ``Execute`` does, except each graded cell whose code is
``grade("<id>")``: that cell runs :func:`workbench.exercises.sealed.sealed_grade`,
loaded by its file's path, with the exercise's help cell read from the teacher's source
notebook (``source/<assignment>/``), not from the learner's copy. A learner's cell that
replaced ``grade``, ``check_answer``, a check or the exercise registry then scores 0 on
the exercises graded after it, and the cell's message says what was changed. An
answer right in some of its parts (a rule right on some of its calls, some steps of a
prediction session) scores that share of the cell's points: the cell shows the score,
which nbgrader takes as partial credit. The feedback shows the cell as it was written
(``grade("<id>")``).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute

from workbench.exercises import sealed
from workbench.teaching import course

GRADE_CALL = re.compile(r"^grade\(\s*[\"']([^\"']+)[\"']\s*\)", re.M)


class SealedExecute(Execute):
    """nbgrader's Execute, with each ``grade("<id>")`` cell run by the sealed grader."""

    def preprocess(self, nb, resources, km=None):
        self.help_sources = help_sources(self.source_notebook(resources))
        return super().preprocess(nb, resources, km)

    def source_notebook(self, resources: dict) -> Path | None:
        """The teacher's version of the notebook being graded, if it is there."""
        names = resources.get("nbgrader", {})
        if "assignment" not in names or "notebook" not in names:
            return None
        coursedir = CourseDirectory(config=self.config)
        folder = coursedir.format_path(coursedir.source_directory, ".", names["assignment"])
        path = Path(folder) / f"{names['notebook']}.ipynb"
        return path if path.is_file() else None

    def preprocess_cell(self, cell, resources, index):
        written = cell.source
        sealed_source = self.sealed_source(cell)
        if sealed_source is None:
            return super().preprocess_cell(cell, resources, index)
        cell.source = sealed_source
        try:
            return super().preprocess_cell(cell, resources, index)
        finally:
            cell.source = written

    def sealed_source(self, cell) -> str | None:
        """What a graded ``grade("<id>")`` cell runs instead; None for any other cell."""
        if not course.is_graded_cell(cell) or cell.cell_type != "code":
            return None
        call = GRADE_CALL.search(course.cell_text(cell))
        if call is None or call.group(1) not in self.help_sources:
            return None
        points = float(course.nbgrader_meta(cell).get("points", 0))
        return sealed_call(call.group(1), self.help_sources[call.group(1)], points)


def sealed_call(grade_id: str, help_source: str, points: float = 0) -> str:
    """One line of code: load sealed.py by its path and grade ``grade_id`` with it (an
    answer right in some parts scores that share of ``points``, the cell's)."""
    path = str(Path(sealed.__file__).resolve())
    return (
        f'__import__("runpy").run_path({path!r}, run_name="workbench_sealed_grading")'
        f'["sealed_grade"]({grade_id!r}, globals(), {help_source!r}, {points!r})'
    )


def help_sources(notebook: Path | None) -> dict[str, str]:
    """``{grade id: the code of the help cell that makes its Exercise}`` of a notebook."""
    if notebook is None:
        return {}
    found = {}
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        text = course.cell_text(cell)
        if cell.get("cell_type") != "code" or "Exercise(" not in text:
            continue
        for grade_id in exercises_made(text):
            found.setdefault(grade_id, text)
    return found


def exercises_made(source: str) -> list[str]:
    """The grade ids of the ``Exercise("<id>", ...)`` calls in a cell's code."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    made = []
    for node in ast.walk(tree):
        func = getattr(node, "func", None)
        name = getattr(func, "id", None) or getattr(func, "attr", None)
        if isinstance(node, ast.Call) and name == "Exercise" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                made.append(first.value)
    return made


def use_sealed_grading(config) -> None:
    """In an ``nbgrader_config.py``: autograde with :class:`SealedExecute` in place of
    nbgrader's ``Execute`` (its settings, ``ExecutePreprocessor.timeout``..., apply)."""
    from nbgrader.converters import Autograde

    steps = Autograde.class_traits()["autograde_preprocessors"].default()
    if Execute not in steps:
        raise RuntimeError(f"nbgrader's autograde has no Execute step to replace: {steps}")
    config.Autograde.autograde_preprocessors = [
        SealedExecute if step is Execute else step for step in steps
    ]
