"""Lessons 3 and 3b run top to bottom in a real kernel; their asserts are the facts they teach."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ["03_stepping_through_backward.ipynb", "03b_explorers.ipynb"]


@pytest.mark.parametrize("name", LESSONS)
def test_lesson_is_stored_without_outputs(name):
    nb = nbformat.read(ROOT / "lessons" / name, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.parametrize("name", LESSONS)
def test_lesson_runs(name, tmp_path, monkeypatch):
    """Execute in a kernel that imports this checkout's workbench, with private Jupyter dirs."""
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.getenv("PYTHONPATH")]))
    )
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "matplotlib"))
    nb = nbformat.read(ROOT / "lessons" / name, as_version=4)
    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(ROOT / "lessons")}},
    )
    client.execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
