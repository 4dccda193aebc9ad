"""Every lesson notebook runs top to bottom; the asserts inside check what it teaches."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("*.ipynb"))


def test_lessons_folder_exists():
    assert LESSONS or (Path(__file__).resolve().parent.parent / "lessons").is_dir()


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_is_stored_without_outputs(path):
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs", []) == [], f"{path.name}: store lessons without outputs"
            assert cell.get("execution_count") is None


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_runs(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    # The kernel imports this checkout's workbench, not whichever one is installed.
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    # Under pytest ipykernel leaves fd 2 alone (PYTEST_CURRENT_TEST); without it the
    # kernel shows what C libraries print there, as a learner's Jupyter does.
    kernel_env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    client.execute(env=kernel_env)
    # A pink stderr box reads as an error to a learner (renderer noise such as
    # fontconfig's warnings must stay out of the notebook).
    stderr = [
        output["text"]
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream" and output.get("name") == "stderr"
    ]
    assert stderr == [], f"{path.name} printed on stderr: {stderr}"
