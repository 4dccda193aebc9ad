"""`make venv` makes a .venv that can build the wheel the way the hub scripts do.

scripts/learner_env.sh (``make hub``, tests/test_hub.py) and deploy/hub/Dockerfile build
the wheel with ``pip wheel --no-build-isolation``: the build runs on the setuptools of
.venv itself, not on the ``setuptools>=77`` that pyproject's ``[build-system]`` asks for
(only an isolated build reads that). setuptools older than 77 refuses pyproject's
licence string (``license = "Apache-2.0 AND MIT AND EPL-1.0"``), and a fresh venv on
Python 3.11 holds ensurepip's setuptools 65.5.0 (3.12 and later hold none).

The test runs the Makefile's own recipe for the venv's Python (the step that makes the
venv and brings its build tools) into a temporary folder, then the hub scripts' build
step with that Python. Reading the Makefile's text would pass a recipe that names
setuptools and still leaves the old one; this runs it. Slow: it installs pip and
setuptools from the package index into a fresh venv.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core_env import SOURCES

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def run(cmd: list, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{cmd[:4]} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_make_venv_recipe_brings_a_setuptools_that_builds_the_wheel(tmp_path):
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    base = Path(sys.base_prefix) / "bin" / "python3"
    # the Makefile's rule for $(PY): make the venv, bring pip and the build tools
    run(["make", "-C", ROOT, f"VENV={venv}", f"PYTHON={base}", python], timeout=600)
    version = run([python, "-c", "import setuptools; print(setuptools.__version__)"]).stdout
    assert int(version.split(".")[0]) >= 77, f"the venv holds setuptools {version.strip()}"

    source = tmp_path / "source"  # a copy: no build/ or .egg-info left in the checkout
    source.mkdir()
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(ROOT / name, source / name)
    out = tmp_path / "dist"
    build = ["-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", out, source]
    run([python, *build], timeout=600)
    assert list(out.glob("autodiff_workbench-*.whl"))
