"""Run cells in a real notebook kernel (nbclient), with this checkout's workbench on the
kernel's path: what each cell showed, as nbformat outputs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_in_kernel(cells: list[str], folder: Path) -> list[list]:
    """Each cell's outputs; errors are kept as outputs (the kernel runs every cell)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    env = {
        "JUPYTER_RUNTIME_DIR": str(folder / "runtime"),
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        client = nbclient.NotebookClient(
            notebook, timeout=120, kernel_name="python3", allow_errors=True
        )
        client.execute()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return [cell.outputs for cell in notebook.cells]
