"""The package's sources, as the wheels learners install are built from them.

The package holds no solution: every exercise's solution is in the course repository's
``solutions/autodiff-workbench-solutions.json`` (docs/teaching.md). The hub's image
(scripts/hub_image_context.py) and the Lite site (scripts/build_lite.py) build their
wheel from this copy, which fails if a solutions file has found its way into the
package (an old checkout's ``workbench/exercises/solutions.json`` left behind, say).
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "workbench")  # what the wheel is built from
CACHES = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")


def copy_package(out: Path) -> Path:
    """Copy the package's sources into ``out`` (made; must not exist); returns ``out``."""
    out.mkdir(parents=True)
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, out / name, ignore=CACHES)
        else:
            shutil.copy2(source, out / name)
    stray = sorted(str(p.relative_to(out)) for p in out.rglob("*solutions*.json"))
    if stray:
        raise RuntimeError(f"the package holds a solutions file: {', '.join(stray)}; delete it")
    return out
