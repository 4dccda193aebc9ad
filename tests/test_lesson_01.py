"""Lesson 1 runs top to bottom and its assert cells hold (lessons assert what they teach)."""

from __future__ import annotations

import json
from pathlib import Path

LESSON = Path(__file__).resolve().parent.parent / "lessons" / "01_gradients_by_hand.ipynb"


def load() -> dict:
    return json.loads(LESSON.read_text(encoding="utf-8"))


def test_the_lesson_is_stored_as_nbformat_4_without_outputs():
    notebook = load()
    assert notebook["nbformat"] == 4
    code_cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert code_cells
    for cell in code_cells:
        assert cell["outputs"] == [] and cell["execution_count"] is None


def test_the_lesson_runs_and_its_asserts_hold():
    """Run every code cell in order, in one namespace, as a kernel would."""
    notebook = load()
    namespace: dict = {"__name__": "__lesson__"}
    asserts = 0
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        asserts += source.count("assert ")
        exec(compile(source, f"{LESSON.name}[cell {index}]", "exec"), namespace)
    assert asserts >= 8, "the lesson should assert the facts it teaches"
    assert "import workbench as wb" in "".join(
        "".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"
    )
