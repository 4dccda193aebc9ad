"""The static JupyterLite site (scripts/build_lite.py): it builds, and holds the course.

Run in a browser, the site loads Pyodide and numpy from Pyodide's CDN, which this
machine cannot reach: what is tested here is the site itself. Its lessons (each
with a first cell that installs workbench), its wheel (pure Python, indexed where
the Pyodide kernel's ``%pip`` looks first), and the front-ends the widgets need.
That workbench runs without threads or subprocesses is tests/test_browser_kernel.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from workbench.course import student_version

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("*.ipynb"))
BUILD_S = 400  # the wheel and the site, on a busy two-core machine


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("lite") / "site"
    command = [sys.executable, str(ROOT / "scripts" / "build_lite.py"), str(output)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_S)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return output


def lite_config(site: Path) -> dict:
    return json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]


def test_site_holds_every_lesson_with_an_install_cell_first_and_no_solutions(site):
    listed = json.loads((site / "api/contents/lessons/all.json").read_text())["content"]
    assert {entry["name"] for entry in listed} >= {path.name for path in LESSONS}
    for path in LESSONS:
        source = json.loads(path.read_text())
        served = json.loads((site / "files/lessons" / path.name).read_text())
        first, *rest = served["cells"]
        assert first["cell_type"] == "code" and "workbench-install" in first["metadata"]["tags"]
        assert "%pip install -q autodiff-workbench" in first["source"]
        learner = student_version(source)["cells"]
        assert rest == learner, f"{path.name}: the site's copy is not the learner's version"
        assert "### BEGIN SOLUTION" not in json.dumps(rest)


def test_site_holds_the_wheel_where_pip_looks_first(site):
    version = re.search(r'^version = "(.+)"', (ROOT / "pyproject.toml").read_text(), re.M)[1]
    wheel = site / "pypi" / f"autodiff_workbench-{version}-py3-none-any.whl"
    index = json.loads((site / "pypi/all.json").read_text())
    (release,) = index["autodiff-workbench"]["releases"][version]
    assert release["filename"] == wheel.name
    assert release["digests"]["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    # The Pyodide kernel's piplite reads the site's own index before PyPI.
    settings = lite_config(site)["litePluginSettings"]
    urls = settings["@jupyterlite/pyodide-kernel-extension:kernel"]["pipliteUrls"]
    assert urls[0].split("?")[0] == "./pypi/all.json"
    # Pure Python: a browser kernel can install it.
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert "workbench/__init__.py" in names and "workbench/widgets/stepper.py" in names
    assert not [name for name in names if name.endswith((".so", ".pyd", ".dylib"))]


def test_site_holds_the_kernel_and_the_widget_front_ends(site):
    wanted = {"@jupyterlite/pyodide-kernel-extension", "@jupyter-widgets/jupyterlab-manager"}
    wanted.add("anywidget")
    extensions = {ext["name"]: ext for ext in lite_config(site)["federated_extensions"]}
    assert wanted <= set(extensions)
    for name in wanted:
        assert (site / "extensions" / name / extensions[name]["load"]).is_file()
