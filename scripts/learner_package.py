"""The package's sources as learners get them: without its solutions.json.

``workbench/exercises/solutions.json`` holds every exercise's solution. It ships in the
wheel on PyPI (for self-study: the hint button shows an exercise's solution after one
checked attempt), but nothing a class's learners can reach may hold it: the hub's image
(scripts/hub_image_context.py) and the Lite site (scripts/build_lite.py) build their
wheel from this copy. Without the file, an exercise's last hint level says there is no
written solution (:func:`workbench.course.solution` gives None).
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "workbench")  # what the wheel is built from
SOLUTIONS = Path("workbench") / "exercises" / "solutions.json"
CACHES = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")


def copy_package(out: Path, with_solutions: bool = False) -> Path:
    """Copy the package's sources into ``out`` (made; must not exist), solutions.json
    left out unless ``with_solutions``; returns ``out``."""
    out.mkdir(parents=True)
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, out / name, ignore=CACHES)
        else:
            shutil.copy2(source, out / name)
    if not with_solutions:
        (out / SOLUTIONS).unlink()
    return out
