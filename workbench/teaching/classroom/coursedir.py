"""An nbgrader course directory made from the lessons, and the exam switch.

A course directory is what nbgrader works in: ``nbgrader_config.py`` (the course id,
the root, the feedback template that needs no network) and ``source/<assignment>/``
holding the source lessons, solutions in. An assignment is one lesson (``lesson01`` …
``lesson10``) or the whole course (``course``); nbgrader grades per notebook either
way. Then, in that directory::

    nbgrader generate_assignment lesson01      # release/lesson01/: solutions removed
    nbgrader release_assignment lesson01       # into the exchange, for the learners

The **exam switch** (``exam=True``, ``workbench course DIR --exam``) takes the help out
of the notebooks before nbgrader sees them: each ``Exercise(...)`` keeps its check but
loses its ``hints=`` and ``solution=``, each ``Hints(...)`` its levels, and every
``.button()`` call goes. The learner's copy then holds no hint to read, not even in a
cell's source. And the notebook turns on the package's own exam switch
(``WORKBENCH_EXAM=1``, :func:`workbench.teaching.course.exam_mode`) in a locked cell before its
first line of code, so the two agree: where the package still has its solutions (a
learner's own ``pip install autodiff-workbench``), an exercise made by hand, or
``course.solution(...)``, shows none in this notebook either. nbgrader puts the locked
cell back as it was when it autogrades. (The class's image holds no solutions at all:
deploy/hub/setup-learner-env.sh.)
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from .. import course

COURSE_ID = "autodiff-workbench"  # the one course id: values.yaml, the hub, the docs
WHOLE = "course"  # the assignment that holds every lesson
# In submitted/<student>/<assignment>/: the time a learner's own timestamp.txt claimed,
# kept by the exchange's collect (its timestamp.txt is the file system's time).
CLAIMED = "claimed_timestamp.txt"
EXAM_NOTE = "# Exam: hints and solutions are off for this exercise."
EXAM_SWITCH = """\
# Exam: hints and solutions are off in this notebook (workbench.teaching.course.exam_mode).
import os

os.environ["WORKBENCH_EXAM"] = "1"\
"""

CONFIG = """\
# nbgrader's settings for this course directory (made by `workbench course`).
import os

c = get_config()  # noqa: F821 - nbgrader defines it for config files
c.CourseDirectory.course_id = "{course_id}"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))  # this folder
c.ExecutePreprocessor.timeout = 120  # seconds per cell; a lesson runs in under a minute

# Feedback pages a learner can read offline: nbgrader's template without MathJax from a
# CDN, the checks' messages whole (workbench.exercises.feedback).
from workbench.exercises.feedback import use_readable_feedback  # noqa: E402

use_readable_feedback(c)

# Autograde checks each graded cell with the checker loaded afresh, apart from what the
# learner's cells changed (workbench.teaching.classroom.preprocessors).
from workbench.teaching.classroom.preprocessors import use_sealed_grading  # noqa: E402

use_sealed_grading(c)
"""


def assignment_of(lesson: Path) -> str:
    """``lesson01`` for ``01_sigmoid_gradient.ipynb``."""
    return f"lesson{lesson.name[:2]}"


def select_lessons(prefixes: list[str] | None, lessons: Path = course.LESSONS) -> list[Path]:
    """The lessons named by their prefixes ("01", "02_mul"), or all of them."""
    if not prefixes:
        return course.lesson_paths(lessons)
    return [course.find_lesson(prefix, lessons) for prefix in prefixes]


def make_course(
    root: Path,
    prefixes: list[str] | None = None,
    *,
    whole: bool = False,
    exam: bool = False,
    course_id: str = COURSE_ID,
    lessons: Path = course.LESSONS,
) -> dict[str, list[Path]]:
    """Write ``root``'s nbgrader config (if it has none) and the source assignments.

    Returns ``{assignment: [its notebooks]}``. A notebook already in ``source/`` is
    replaced: the source lessons are the truth, edit them, not the copies.
    """
    root.mkdir(parents=True, exist_ok=True)
    config = root / "nbgrader_config.py"
    if not config.exists():
        config.write_text(CONFIG.format(course_id=course_id), encoding="utf-8")
    made: dict[str, list[Path]] = {}
    for lesson in select_lessons(prefixes, lessons):
        assignment = WHOLE if whole else assignment_of(lesson)
        notebook = json.loads(lesson.read_text(encoding="utf-8"))
        if exam:
            notebook = exam_version(notebook)
        target = root / "source" / assignment / lesson.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", "utf-8")
        made.setdefault(assignment, []).append(target)
    return made


# ------------------------------------------------------------------ the exam switch
def exam_version(notebook: dict) -> dict:
    """``notebook`` with every exercise's hints, solution and help button taken out, and
    the exam switch turned on before its first code cell."""
    cells = [exam_cell(cell) for cell in notebook["cells"]]
    first_code = next(k for k, cell in enumerate(cells) if cell["cell_type"] == "code")
    cells.insert(first_code, exam_switch_cell())
    metadata = {**notebook.get("metadata", {}), "workbench": {"exam": True}}
    return {**notebook, "cells": cells, "metadata": metadata}


def exam_switch_cell() -> dict:
    """The cell that sets ``WORKBENCH_EXAM=1`` in the learner's kernel: locked, so that
    nbgrader restores it if it is changed."""
    grading = {"grade": False, "solution": False, "locked": True, "grade_id": "exam-switch"}
    return {
        "cell_type": "code",
        "id": "exam-switch",
        "metadata": {
            "nbgrader": {**grading, "schema_version": 3},
            "editable": False,
            "deletable": False,
        },
        "execution_count": None,
        "outputs": [],
        "source": EXAM_SWITCH,
    }


def exam_cell(cell: dict) -> dict:
    """A help cell (one that makes an ``Exercise`` or ``Hints``) without its help;
    other cells as they are."""
    text = course.cell_text(cell)
    helps = "Exercise(" in text or "Hints(" in text
    if cell["cell_type"] != "code" or course.nbgrader_meta(cell) or not helps:
        return cell
    try:
        tree = ast.parse(text)
    except SyntaxError as err:
        raise ValueError(f"cannot read the help cell to take its hints out: {err}") from None
    tree.body = [node for node in tree.body if not is_button_call(node)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and called_name(node) == "Exercise":
            node.args = node.args[:2]  # the name and the check
            node.keywords = [k for k in node.keywords if k.arg not in ("hints", "solution")]
        elif isinstance(node, ast.Call) and called_name(node) == "Hints":
            node.args, node.keywords = [ast.List(elts=[], ctx=ast.Load())], []
    return {**cell, "source": EXAM_NOTE + "\n" + ast.unparse(tree)}


def called_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def is_button_call(node: ast.stmt) -> bool:
    """``something.button()`` as a statement of its own."""
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == "button"
    )
