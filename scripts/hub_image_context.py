"""The build context of the learners' image: everything it needs, and no solution.

    .venv/bin/python scripts/hub_image_context.py build/hub-image     # or: make hub-image
    docker build -t REGISTRY/autodiff-workbench:0.1.0 build/hub-image

The context is a folder of its own, not the repository: the learners' copies of the
lessons (solutions removed by workbench.teaching.course, as nbgrader generate_assignment removes
them), the package's sources without any lesson (for the image's wheel stage; the package
holds no solution), the
pinned requirements, the hub's settings and start hooks, and the Dockerfile. No
source lesson is ever sent to the builder, so no stage, cache or layer can hold a
solution; tests/test_hub_image.py builds it and reads every layer to make sure.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's workbench.teaching.course strips the solutions
from learner_package import copy_package  # noqa: E402

from workbench.teaching.course import make_copies  # noqa: E402

HUB = ROOT / "deploy" / "hub"
HUB_FILES = ("copy-lessons.sh", "instructor-config.sh", "setup-learner-env.sh")
HUB_FOLDERS = ("jupyter", "jupyter-instructor")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")


def make_context(out: Path) -> Path:
    """Write the context into ``out`` (replaced if it exists)."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    copy_package(out / "package")  # no solution in it: scripts/learner_package.py
    make_copies(ROOT / "lessons", out / "lessons")
    shutil.copy2(ROOT / "lessons" / "README.md", out / "lessons" / "README.md")
    (out / "hub").mkdir()
    for name in HUB_FILES:
        shutil.copy2(HUB / name, out / "hub" / name)
    for name in HUB_FOLDERS:
        shutil.copytree(HUB / name, out / "hub" / name, ignore=SKIP)
    shutil.copy2(HUB / "requirements.txt", out / "requirements.txt")
    shutil.copy2(HUB / "Dockerfile", out / "Dockerfile")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", default=str(ROOT / "build" / "hub-image"))
    out = make_context(Path(parser.parse_args(argv).output))
    print(f"built the context in {out}: docker build -t REGISTRY/autodiff-workbench:0.1.0 {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
