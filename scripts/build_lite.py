"""Build the course as a static JupyterLite site: JupyterLab and Python run in the browser.

    python scripts/build_lite.py build/lite          # or: make lite
    python -m http.server -d build/lite 8000         # any static host serves it
    # open http://127.0.0.1:8000/lab/index.html?path=lessons/01_sigmoid_gradient.ipynb

The site holds the lessons (under ``lessons/``) and the workbench wheel (under
``pypi/``, indexed for piplite, the Pyodide kernel's pip). Each lesson's copy in the
site starts with one added cell, ``%pip install autodiff-workbench``: piplite finds the wheel
in the site's own index before looking on PyPI. Pyodide itself and its packages
(numpy, matplotlib) are not in the site: the browser loads them from Pyodide's CDN,
and the pure-Python dependencies (ipywidgets, anywidget) from PyPI.

Built with jupyterlite-core and jupyterlite-pyodide-kernel (pinned in pyproject.toml's
dev extra); the widget front-ends (ipywidgets' manager, anywidget) are copied in from
this environment's JupyterLab extensions.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from jupyter_core.paths import jupyter_path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's workbench.course strips the solutions
from workbench.course import student_version  # noqa: E402

LESSONS = ROOT / "lessons"
INSTALL_TAG = "workbench-install"
# The Pyodide kernel, and the front-ends of workbench's widgets.
EXTENSIONS = (
    "@jupyterlite/pyodide-kernel-extension",
    "@jupyter-widgets/jupyterlab-manager",
    "anywidget",
)

INSTALL_CELL = """\
# JupyterLite: install workbench into this browser tab's Python (Pyodide).
# The wheel comes from this site; numpy and the rest from Pyodide's CDN and PyPI.
%pip install -q autodiff-workbench"""


def build_wheel(folder: Path) -> Path:
    """The workbench wheel, built from this checkout into ``folder``."""
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(folder)]
    subprocess.run([*command, str(ROOT)], check=True, timeout=600)
    (wheel,) = folder.glob("autodiff_workbench-*.whl")
    return wheel


def with_install_cell(notebook: dict) -> dict:
    """``notebook`` with a first cell that installs workbench (tagged, to find it again)."""
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "id": INSTALL_TAG,
        "metadata": {"tags": [INSTALL_TAG]},
        "outputs": [],
        "source": INSTALL_CELL,
    }
    return {**notebook, "cells": [cell, *notebook["cells"]]}


def stage_lessons(target: Path) -> list[Path]:
    """Copy the learner's versions of the lessons (solutions removed, as ``nbgrader
    generate_assignment`` removes them) into ``target``, each with the install cell first."""
    target.mkdir(parents=True)
    staged = []
    for path in sorted(LESSONS.glob("*.ipynb")):
        source = json.loads(path.read_text(encoding="utf-8"))
        notebook = with_install_cell(student_version(source))
        out = target / path.name
        out.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", "utf-8")
        staged.append(out)
    if (LESSONS / "README.md").exists():
        shutil.copy(LESSONS / "README.md", target / "README.md")
    return staged


def lab_extension(name: str) -> Path:
    """The folder of the installed JupyterLab extension ``name`` (with its package.json)."""
    for folder in jupyter_path("labextensions"):
        if (Path(folder) / name / "package.json").exists():
            return Path(folder) / name
    raise FileNotFoundError(f"JupyterLab extension {name} is not installed: pip install '.[dev]'")


def build_site(output: Path) -> None:
    """Build the site into ``output`` (replaced if it exists)."""
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp)
        wheel = build_wheel(stage / "wheels")
        stage_lessons(stage / "contents" / "lessons")
        # Only the extensions the site needs, not every one this environment has.
        config = {
            "LiteBuildConfig": {
                "contents": [str(stage / "contents")],
                "output_dir": str(output.resolve()),
                "ignore_sys_prefix": ["federated_extensions"],
                "federated_extensions": [str(lab_extension(name)) for name in EXTENSIONS],
                "no_sourcemaps": True,
            },
            "PipliteAddon": {"piplite_urls": [str(wheel)]},
        }
        (stage / "jupyter_lite_config.json").write_text(json.dumps(config, indent=1))
        if output.exists():
            shutil.rmtree(output)
        command = [sys.executable, "-m", "jupyterlite_core", "build", "--lite-dir", str(stage)]
        subprocess.run(command, check=True, cwd=stage, timeout=600)
    print(f"built {output}: serve it with `python -m http.server -d {output} 8000`")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", default=str(ROOT / "build" / "lite"))
    args = parser.parse_args(argv)
    build_site(Path(args.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
