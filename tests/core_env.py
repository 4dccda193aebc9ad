"""The core install, as a learner's first ``pip install autodiff-workbench`` makes it.

:func:`build_wheel` builds the wheel from this checkout's sources; :func:`make_core_venv`
makes a fresh virtual environment (no system site-packages) and installs that wheel
with its core dependencies only, from the package index: no ``[render]`` (pygraphviz),
no ``[lab]`` (JupyterLab). Used by tests/test_core_wheel.py and, with a kernel added
(:func:`add_kernel`), by tests/test_browser_core.py. Every step is bounded in time.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "workbench")
PIP = ("-m", "pip", "--disable-pip-version-check", "--no-input")


def run(cmd: list, timeout: float, **kwargs) -> subprocess.CompletedProcess:
    """Run ``cmd``; on failure the error shows what it printed."""
    done = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kwargs
    )
    if done.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


def build_wheel(folder: Path) -> Path:
    """The wheel of this checkout, built from a copy of its sources (no build/ left here)."""
    source = folder / "source"
    source.mkdir(parents=True)
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, source / name)
    out = folder / "dist"
    build = ["wheel", "--no-deps", "--no-build-isolation", "-w", out, source]
    run([sys.executable, *PIP, *build], 300)
    (wheel,) = out.glob("autodiff_workbench-*.whl")
    return wheel


@dataclass
class CoreVenv:
    folder: Path
    installed: set  # distribution names (lower case) right after installing the wheel

    @property
    def bin(self) -> Path:
        return self.folder / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def environment(self, home: Path) -> dict:
        """A bare environment: only the venv's bin on PATH (so no `dot`), no PYTHONPATH."""
        return {"PATH": str(self.bin), "HOME": str(home), "MPLCONFIGDIR": str(home / "mpl")}


def make_core_venv(folder: Path, wheel: Path) -> CoreVenv:
    """A fresh venv holding ``wheel`` and its core dependencies, nothing else."""
    run([sys.executable, "-m", "venv", folder], 120)
    venv = CoreVenv(folder, set())
    run([venv.python, *PIP, "install", "-q", wheel], 600)
    listed = run([venv.python, *PIP, "list", "--format=json"], 120).stdout
    venv.installed = {item["name"].lower().replace("_", "-") for item in json.loads(listed)}
    return venv


def add_kernel(venv: CoreVenv, kernels: Path, name: str = "workbench-core") -> dict:
    """Install ipykernel (the kernel itself, nothing else) and a kernelspec under ``kernels``.

    The kernel runs with the venv's bin alone on PATH and no PYTHONPATH, so it imports
    the installed wheel and finds no ``dot``. Returns the notebook's kernelspec metadata.
    """
    run([venv.python, *PIP, "install", "-q", "ipykernel"], 600)
    spec = {
        "argv": [str(venv.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Workbench (core install)",
        "language": "python",
        "env": {"PATH": str(venv.bin), "PYTHONPATH": ""},
    }
    folder = kernels / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.json").write_text(json.dumps(spec))
    return {"name": name, "display_name": spec["display_name"], "language": "python"}
