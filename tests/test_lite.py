"""The static JupyterLite site (scripts/build_lite.py): it builds, holds the course, and says
what it needs.

The default site loads Pyodide and its packages from Pyodide's CDN, which this machine
cannot reach: what is tested is the site itself. Its lessons (a first note saying that
the page needs the CDN, then a cell that installs autodiff-workbench), its package
index (the wheel and the pure-Python wheels Pyodide lacks, pinned; every dependency
found in the index, the kernel's own wheels or Pyodide's lock; PyPI never asked), its
front page, and the widgets' front-ends. With ``--pyodide`` the site carries Pyodide:
built on Pyodide's core from npm (scripts/pyodide_core.sh), the build adds micropip and
the kernel's pure-Python packages from PyPI, and stops, naming them, where the lessons'
compiled packages (numpy) are missing. That workbench runs without threads or
subprocesses is tests/test_browser_kernel.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from workbench.teaching import course
from workbench.teaching.course import student_version

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import build_lite  # noqa: E402

LESSONS = sorted((ROOT / "lessons").glob("*.ipynb"))
BUILD_S = 600  # the wheel, the downloads and the site, on a busy two-core machine
CORE = ROOT / ".tools" / "pyodide-core"
KERNEL = "@jupyterlite/pyodide-kernel-extension:kernel"
# Python in the browser: what a wheel's markers see in Pyodide.
BROWSER = default_environment() | {
    "python_version": "3.14",
    "python_full_version": "3.14.2",
    "sys_platform": "emscripten",
    "platform_system": "Emscripten",
    "platform_machine": "wasm32",
    "implementation_name": "cpython",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("lite") / "site"
    command = [sys.executable, str(ROOT / "scripts" / "build_lite.py"), str(output)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_S)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return output


@pytest.fixture(scope="module")
def pyodide_core() -> Path:
    """Pyodide's core from npm, the version the kernel is built for."""
    if shutil.which("npm") is None:
        pytest.skip("npm not found: Pyodide's core cannot be fetched")
    subprocess.run(["bash", str(ROOT / "scripts" / "pyodide_core.sh")], check=True, timeout=600)
    return CORE


def lite_config(site: Path) -> dict:
    return json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]


def test_every_lesson_says_what_it_needs_then_installs_the_package_and_has_no_solutions(site):
    listed = json.loads((site / "api/contents/lessons/all.json").read_text())["content"]
    assert {entry["name"] for entry in listed} >= {path.name for path in LESSONS}
    for path in LESSONS:
        served = json.loads((site / "files/lessons" / path.name).read_text())
        note, install, *rest = served["cells"]
        assert note["cell_type"] == "markdown"  # shown with no kernel at all
        assert "cdn.jsdelivr.net" in note["source"] and "Unknown" in note["source"]
        assert install["cell_type"] == "code" and "workbench-install" in install["metadata"]["tags"]
        assert "%pip install -q autodiff-workbench" in install["source"]
        learner = student_version(json.loads(path.read_text()))["cells"]
        assert rest == learner, f"{path.name}: the site's copy is not the learner's version"
        assert "### BEGIN SOLUTION" not in json.dumps(rest)


def test_the_first_page_says_the_kernel_needs_the_cdn_and_lists_the_lessons(site):
    page = (site / "index.html").read_text()
    assert "cdn.jsdelivr.net" in page and "cannot reach it" in page
    for path in LESSONS:
        assert f"lab/index.html?path=lessons/{path.name}" in page
    # The CDN named is the one the kernel loads Pyodide from.
    settings = lite_config(site)["litePluginSettings"][KERNEL]
    assert settings.get("pyodideUrl", build_lite.PYODIDE_CDN) == build_lite.PYODIDE_CDN


@pytest.mark.parametrize("offline", [False, True], ids=["cdn", "offline"])
def test_the_first_page_shows_the_notes_marks_as_html_and_keeps_the_busy_mark(offline):
    """The note says a busy cell shows `[*]`: the page shows [*], not [] (issue 37, point 9),
    and no Markdown mark is left over."""
    import html

    page = build_lite.first_page(LESSONS[:1], offline)
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    if not offline:
        assert "keeps showing [*]," in text and "<code>[*]</code>" in page
    assert "*" not in text.replace("[*]", "") and "`" not in text
    assert "<b>Where this page runs.</b>" in page and "<i>Unknown</i>" in page


def index_of(site: Path) -> dict:
    return json.loads((site / "pypi/all.json").read_text())


def test_the_site_installs_from_its_own_index_only(site):
    settings = lite_config(site)["litePluginSettings"][KERNEL]
    assert settings["disablePyPIFallback"] is True
    assert settings["pipliteUrls"][0].split("?")[0] == "./pypi/all.json"
    version = re.search(r'^version = "(.+)"', (ROOT / "pyproject.toml").read_text(), re.M)[1]
    wanted = {"autodiff-workbench": version}
    for line in build_lite.pinned():
        name, pin = line.split("==")
        wanted[canonicalize_name(name)] = pin
    index = index_of(site)
    assert {canonicalize_name(name): list(entry["releases"]) for name, entry in index.items()} == {
        name: [pin] for name, pin in wanted.items()
    }
    for entry in index.values():
        for (release,) in entry["releases"].values():
            wheel = site / "pypi" / release["filename"]
            assert release["filename"].endswith("-none-any.whl")
            assert release["digests"]["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()


def test_the_site_holds_no_solution(site):
    """The site's wheel, which anyone can download from it, holds no solutions file, nor
    does the site (unless it is a self-study site: the test below)."""
    (served,) = (site / "pypi").glob("autodiff_workbench-*.whl")
    with zipfile.ZipFile(served) as wheel:
        names = set(wheel.namelist())
    assert "workbench/exercises/hints.py" in names
    assert not [n for n in names if "solutions" in n]
    assert not list(site.rglob(f"*{course.SOLUTIONS_NAME}*"))


def test_a_self_study_site_has_the_solutions_file_beside_the_lessons(tmp_path):
    """--with-solutions puts the course's file beside the lessons, where the kernel,
    which runs in the lesson's folder, finds it (workbench.teaching.course.solutions_file)."""
    build_lite.stage_lessons(tmp_path / "without")
    assert not (tmp_path / "without" / course.SOLUTIONS_NAME).exists()
    build_lite.stage_lessons(tmp_path / "with", with_solutions=True)
    beside = tmp_path / "with" / course.SOLUTIONS_NAME
    assert beside.read_bytes() == course.SOLUTIONS.read_bytes()


def wheel_requirements(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(name).decode())
    found = [Requirement(line) for line in metadata.get_all("Requires-Dist") or []]
    return [r for r in found if r.marker is None or r.marker.evaluate(BROWSER | {"extra": ""})]


def test_every_dependency_is_in_the_site_the_kernel_or_pyodide(site, pyodide_core):
    lock = json.loads((pyodide_core / "pyodide-lock.json").read_text())["packages"]
    kernel_index = json.loads(
        (site / "extensions/@jupyterlite/pyodide-kernel-extension/static/pypi/all.json").read_text()
    )
    versions = {canonicalize_name(n): {e["version"]} for n, e in lock.items()}
    for name, entry in {**kernel_index, **index_of(site)}.items():
        versions.setdefault(canonicalize_name(name), set()).update(entry["releases"])
    unmet = []
    for wheel in (site / "pypi").glob("*.whl"):
        for requirement in wheel_requirements(wheel):
            have = versions.get(canonicalize_name(requirement.name), set())
            if not any(requirement.specifier.contains(v, prereleases=True) for v in have):
                unmet.append(f"{wheel.name}: {requirement} (have {sorted(have)})")
    assert unmet == []


def test_the_wheel_is_pure_python(site):
    (wheel,) = (site / "pypi").glob("autodiff_workbench-*.whl")
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


# ------------------------------------------------------------------ a site with its own Pyodide
def test_a_core_only_pyodide_is_refused_naming_what_the_lessons_miss(pyodide_core, tmp_path):
    with pytest.raises(SystemExit) as stopped:
        build_lite.complete_pyodide(pyodide_core, tmp_path / "pyodide")
    message = str(stopped.value)
    assert "numpy-" in message and "matplotlib-" in message and "full distribution" in message


def test_not_a_pyodide_folder_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="not a Pyodide distribution"):
        build_lite.complete_pyodide(tmp_path, tmp_path / "out")


def test_the_kernels_pure_python_packages_are_added_from_pypi_at_the_locked_versions(
    pyodide_core, tmp_path
):
    target = tmp_path / "pyodide"
    added = build_lite.complete_pyodide(pyodide_core, target, ("micropip", "ipython"))
    lock = json.loads((target / "pyodide-lock.json").read_text())["packages"]
    assert "micropip" in added and "ipython" in added and "traitlets" in added
    for name in added:
        wheel = target / lock[name]["file_name"]
        assert hashlib.sha256(wheel.read_bytes()).hexdigest() == lock[name]["sha256"]
        with zipfile.ZipFile(wheel) as archive:
            assert any(n.endswith(".dist-info/METADATA") for n in archive.namelist())
    original = json.loads((pyodide_core / "pyodide-lock.json").read_text())["packages"]
    assert {n: e["version"] for n, e in lock.items()} == {
        n: e["version"] for n, e in original.items()
    }
