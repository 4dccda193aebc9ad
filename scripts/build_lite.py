"""Build the course as a static JupyterLite site: JupyterLab and Python run in the browser.

    python scripts/build_lite.py build/lite                         # or: make lite
    python scripts/build_lite.py build/lite --pyodide ~/pyodide     # make lite PYODIDE=~/pyodide
    python scripts/build_lite.py build/lite --with-solutions        # make lite SOLUTIONS=1
    python -m http.server -d build/lite 8000                        # any static host serves it
    # open http://127.0.0.1:8000/ (the first page lists the lessons and says what they need)

The site holds the learners' copies of the lessons (under ``lessons/``, solutions
removed) and a package index of its own (``pypi/``): the autodiff-workbench wheel
(which holds no solution; ``--with-solutions``, ``make lite SOLUTIONS=1``, puts the
course's ``autodiff-workbench-solutions.json`` beside the lessons, for a self-study site
whose hint button shows a solution after one checked attempt: the kernel runs in the
lesson's folder, where :func:`workbench.teaching.course.solutions_file` finds it) and
the pure-Python wheels the lessons need that Pyodide does not ship, at the versions of
scripts/lite_requirements.txt. Each lesson starts with two added cells: a note saying
what the page needs to run, and ``%pip install -q autodiff-workbench``, which the
Pyodide kernel answers from the site's index only (PyPI is never asked).

Python itself (Pyodide) and its packages (numpy, matplotlib, ml_dtypes) come either
from Pyodide's CDN, the default (the first page and each lesson's note say so: a
learner whose browser cannot reach it would otherwise see a kernel that never starts),
or, with ``--pyodide``, from a Pyodide distribution copied into the site, which then
needs no network at all. The distribution must be the one the kernel was built for
(``PYODIDE_VERSION``) and hold every package the lessons load; a pure-Python one it
lacks (micropip, say: the npm package ``pyodide`` has the core only) is taken from PyPI
at the version its pyodide-lock.json names; a compiled one (numpy) cannot be, and the
build stops, naming it.

Built with jupyterlite-core and jupyterlite-pyodide-kernel (pinned in pyproject.toml's
dev extra); the widget front-ends (ipywidgets' manager, anywidget) are copied in from
this environment's JupyterLab extensions.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from jupyter_core.paths import jupyter_path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's workbench.teaching.course strips the solutions
from learner_package import copy_package  # noqa: E402

from workbench.teaching import course  # noqa: E402
from workbench.teaching.course import student_version  # noqa: E402

LESSONS = ROOT / "lessons"
REQUIREMENTS = ROOT / "scripts" / "lite_requirements.txt"
INSTALL_TAG = "workbench-install"
NOTICE_TAG = "workbench-runs-where"
KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
PYODIDE_VERSION = "314.0.6"  # the Pyodide jupyterlite-pyodide-kernel 0.8.6 is built for
PYODIDE_CDN = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/pyodide.mjs"
# What the kernel and the lessons load from Pyodide's distribution (with their dependencies).
PYODIDE_PACKAGES = ("micropip", "ipython", "numpy", "ml-dtypes", "matplotlib")
# The Pyodide kernel, and the front-ends of workbench's widgets.
EXTENSIONS = (
    "@jupyterlite/pyodide-kernel-extension",
    "@jupyter-widgets/jupyterlab-manager",
    "anywidget",
)

INSTALL_CELL = """\
# JupyterLite: install autodiff-workbench into this browser tab's Python (Pyodide),
# from this site's own package index (never from PyPI).
%pip install -q autodiff-workbench"""

NEEDS_CDN = f"""\
**Where this page runs.** Python runs in your browser (Pyodide), downloaded the first
time from Pyodide's CDN: `{PYODIDE_CDN.split("/pyodide/")[0]}`. If the kernel's name at
the top right stays *Unknown*, or the next cell keeps showing `[*]`, your browser cannot
reach it (no internet, or a network that blocks it): the lesson cannot run here. Connect
to the internet and reload, or ask your teacher for the offline site (`make lite
PYODIDE=...`), which carries its own Python."""

OFFLINE = f"""\
**Where this page runs.** Python runs in your browser (Pyodide {PYODIDE_VERSION}), which
this site carries itself: nothing is downloaded from the internet. The first start takes
a few seconds; if the kernel's name at the top right stays *Unknown*, reload the page."""


# ------------------------------------------------------------------ the site's index
def build_wheel(folder: Path) -> Path:
    """The autodiff-workbench wheel, built from this checkout into ``folder`` (it holds
    no solution: scripts/learner_package.py)."""
    sources = copy_package(folder / "sources")
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(folder)]
    subprocess.run([*command, str(sources)], check=True, timeout=600)
    (wheel,) = folder.glob("autodiff_workbench-*.whl")
    return wheel


def download_wheels(requirements: list[str], folder: Path) -> list[Path]:
    """Pure-Python wheels, exactly as pinned, from PyPI (no dependencies resolved here)."""
    folder.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder)]
    command += ["--only-binary=:all:", "--platform", "any", "--implementation", "py"]
    command += ["--python-version", "3.14", "--abi", "none"]
    subprocess.run([*command, *requirements], check=True, timeout=600)
    return sorted(folder.glob("*.whl"))


def pinned(path: Path = REQUIREMENTS) -> list[str]:
    lines = [line.strip() for line in path.read_text().splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


# ------------------------------------------------------------------ a local Pyodide
def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def dist_key(wheel_name: str) -> tuple[str, str]:
    """(normalized name, version) of a wheel's file name."""
    name, version = wheel_name.split("-")[:2]
    return canonical(name), version


def canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def needed_packages(lock: dict, names=PYODIDE_PACKAGES) -> list[str]:
    """``names`` and everything they depend on, as the lock names them."""
    keys = {canonical(key): key for key in lock["packages"]}
    wanted, seen = [keys[canonical(n)] for n in names], []
    while wanted:
        name = wanted.pop()
        if name not in seen:
            seen.append(name)
            wanted.extend(keys[canonical(d)] for d in lock["packages"][name].get("depends", []))
    return sorted(seen)


def complete_pyodide(source: Path, target: Path, packages=PYODIDE_PACKAGES) -> list[str]:
    """Copy the distribution ``source`` to ``target`` and add the pure-Python wheels it
    lacks from PyPI; raise, naming them, if compiled ones are missing. Returns the added."""
    for name in ("pyodide.mjs", "pyodide-lock.json", "pyodide.asm.wasm", "python_stdlib.zip"):
        if not (source / name).exists():
            raise SystemExit(f"{source} is not a Pyodide distribution: it has no {name}")
    shutil.copytree(source, target)
    lock = json.loads((target / "pyodide-lock.json").read_text())
    version = lock.get("info", {}).get("version")
    if version not in (None, PYODIDE_VERSION):
        raise SystemExit(f"{source} is Pyodide {version}; the kernel needs {PYODIDE_VERSION}")
    entries = lock["packages"]
    missing = [
        n
        for n in needed_packages(lock, packages)
        if not (target / entries[n]["file_name"]).exists()
    ]
    compiled = [
        lock["packages"][n]["file_name"]
        for n in missing
        if not lock["packages"][n]["file_name"].endswith("-none-any.whl")
    ]
    if compiled:
        raise SystemExit(
            f"{source} lacks packages the lessons load, which only Pyodide's full distribution "
            f"has (pyodide-{PYODIDE_VERSION}.tar.bz2 from Pyodide's releases, unpacked): "
            + ", ".join(compiled)
        )
    with tempfile.TemporaryDirectory() as tmp:
        specs = [f"{n}=={entries[n]['version']}" for n in missing]
        downloaded = (
            {dist_key(w.name): w for w in download_wheels(specs, Path(tmp))} if specs else {}
        )
        for name in missing:  # the PyPI file of the same version, under the lock's file name
            entry = entries[name]
            shutil.copy(downloaded[dist_key(entry["file_name"])], target / entry["file_name"])
            entry["sha256"] = sha256(target / entry["file_name"])
    (target / "pyodide-lock.json").write_text(json.dumps(lock))
    return missing


# ------------------------------------------------------------------ the lessons
def code_cell(cell_id: str, source: str) -> dict:
    metadata = {"tags": [cell_id]}
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": cell_id,
        "metadata": metadata,
        "outputs": [],
        "source": source,
    }


def with_first_cells(notebook: dict, offline: bool) -> dict:
    """``notebook`` with a note of what it needs to run, then the install cell (tagged)."""
    note = {
        "cell_type": "markdown",
        "id": NOTICE_TAG,
        "metadata": {"tags": [NOTICE_TAG]},
        "source": OFFLINE if offline else NEEDS_CDN,
    }
    return {**notebook, "cells": [note, code_cell(INSTALL_TAG, INSTALL_CELL), *notebook["cells"]]}


def stage_lessons(target: Path, offline: bool = False, with_solutions: bool = False) -> list[Path]:
    """Copy the learner's versions of the lessons (solutions removed, as ``nbgrader
    generate_assignment`` removes them) into ``target``, each with the two cells first;
    ``with_solutions``: the course's solutions file beside them (a self-study site)."""
    target.mkdir(parents=True)
    if with_solutions:
        shutil.copy(course.SOLUTIONS, target / course.SOLUTIONS_NAME)
    staged = []
    for path in sorted(LESSONS.glob("*.ipynb")):
        source = json.loads(path.read_text(encoding="utf-8"))
        notebook = with_first_cells(student_version(source), offline)
        out = target / path.name
        out.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", "utf-8")
        staged.append(out)
    if (LESSONS / "README.md").exists():
        shutil.copy(LESSONS / "README.md", target / "README.md")
    return staged


def first_page(lessons: list[Path], offline: bool) -> str:
    """The site's front page: what it needs to run, and a link to each lesson."""
    link = '<li><a href="lab/index.html?path=lessons/{}">{}</a></li>'
    items = "\n".join(link.format(html.escape(p.name), html.escape(p.stem)) for p in lessons)
    needs = as_html(OFFLINE if offline else NEEDS_CDN)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Autodiff Workbench: the lessons</title></head>
<body style="font-family: sans-serif; max-width: 46em; margin: 2em auto">
<h1>Autodiff Workbench: the lessons</h1>
<p id="runs-where">{needs}</p>
<ol>
{items}
</ol>
<p><a href="lab/index.html">All files (JupyterLab)</a></p>
</body></html>
"""


def as_html(note: str) -> str:
    """A lesson's first note (Markdown) as one paragraph of HTML: `code` kept as written
    (the `[*]` a busy cell shows), **bold** and *italic* as HTML, the rest escaped."""
    parts = re.split(r"`([^`]*)`", " ".join(note.split()))
    out = []
    for i, part in enumerate(parts):
        part = html.escape(part)
        if i % 2:  # between backquotes
            out.append(f"<code>{part}</code>")
            continue
        part = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", part)
        out.append(re.sub(r"\*(\S(?:.*?\S)?)\*", r"<i>\1</i>", part))
    return "".join(out)


def lab_extension(name: str) -> Path:
    """The folder of the installed JupyterLab extension ``name`` (with its package.json)."""
    for folder in jupyter_path("labextensions"):
        if (Path(folder) / name / "package.json").exists():
            return Path(folder) / name
    raise FileNotFoundError(f"JupyterLab extension {name} is not installed: pip install '.[dev]'")


# ------------------------------------------------------------------ the build
def build_site(
    output: Path,
    pyodide: Path | None = None,
    packages: tuple[str, ...] = PYODIDE_PACKAGES,
    with_solutions: bool = False,
) -> None:
    """Build the site into ``output`` (replaced if it exists); ``packages``: what the site
    loads from the Pyodide distribution ``pyodide`` (the tests ask for less than the lessons);
    ``with_solutions``: the course's solutions file beside the lessons (a site for
    self-study; the wheel never holds it)."""
    offline = pyodide is not None
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp)
        if offline:  # first: a distribution that cannot do stops the build at once
            added = complete_pyodide(pyodide.resolve(), stage / "pyodide", packages)
        wheel = build_wheel(stage / "wheels")
        wheels = [wheel, *download_wheels(pinned(), stage / "pypi-only")]
        lessons = stage_lessons(stage / "contents" / "lessons", offline, with_solutions)
        # Only the extensions the site needs, not every one this environment has.
        config = {
            "LiteBuildConfig": {
                "contents": [str(stage / "contents")],
                "output_dir": str(output.resolve()),
                "ignore_sys_prefix": ["federated_extensions"],
                "federated_extensions": [str(lab_extension(name)) for name in EXTENSIONS],
                "no_sourcemaps": True,
            },
            "PipliteAddon": {"piplite_urls": [str(wheel) for wheel in wheels]},
        }
        if offline:
            config["PyodideAddon"] = {"pyodide_url": str(stage / "pyodide")}
            if added:
                print(f"added from PyPI to the Pyodide distribution: {', '.join(added)}")
        (stage / "jupyter_lite_config.json").write_text(json.dumps(config, indent=1))
        if output.exists():
            shutil.rmtree(output)
        command = [sys.executable, "-m", "jupyterlite_core", "build", "--lite-dir", str(stage)]
        subprocess.run(command, check=True, cwd=stage, timeout=900)
    settle(output, lessons, offline)
    print(f"built {output}: serve it with `python -m http.server -d {output} 8000`")


def settle(output: Path, lessons: list[Path], offline: bool) -> None:
    """The kernel asks the site's index only; the front page says what the site needs."""
    path = output / "jupyter-lite.json"
    config = json.loads(path.read_text())
    settings = config["jupyter-config-data"].setdefault("litePluginSettings", {})
    settings.setdefault(KERNEL_PLUGIN, {})["disablePyPIFallback"] = True
    path.write_text(json.dumps(config, indent=2) + "\n")
    (output / "index.html").write_text(first_page(lessons, offline), encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", default=str(ROOT / "build" / "lite"))
    parser.add_argument("--pyodide", help="a Pyodide distribution (folder): no CDN needed")
    parser.add_argument(
        "--with-solutions",
        action="store_true",
        help="the solutions file beside the lessons (self-study: shown after one try)",
    )
    args = parser.parse_args(argv)
    pyodide = Path(args.pyodide) if args.pyodide else None
    build_site(Path(args.output), pyodide, with_solutions=args.with_solutions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
