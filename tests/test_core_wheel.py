"""The core install is light: a pure-Python wheel that draws with no native Graphviz.

``pip install autodiff-workbench`` must not pull JupyterLab's server or pygraphviz (they are the
``[lab]`` and ``[render]`` extras), and must carry the browser's Graphviz inside. These
tests build the wheel from this checkout and install it, with its core dependencies
only, into a fresh virtual environment from the package index (tests/core_env.py):
slow-ish (a minute or two), bounded in time, and part of ``make test``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from workbench.teaching import course
from workbench.teaching.cli import LAB_DEFAULTS, NO_LAB, install_lab_defaults, main
from workbench.viz.graphviz_asset import asset_source

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
CORE = {"numpy", "ml-dtypes", "ipywidgets", "anywidget", "matplotlib"}  # ml-dtypes: bfloat16
HEAVY = {"jupyterlab", "jupyter-server", "notebook", "tornado", "pygraphviz", "graphviz", "torch"}


def metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return Parser().parsestr(archive.read(name).decode("utf-8"))


def requirement_name(line: str) -> str:
    return re.match(r"[A-Za-z0-9_.\-]+", line)[0].lower().replace("_", "-")


def test_the_wheel_is_pure_python_and_needs_only_the_core(core_wheel):
    assert core_wheel.name.endswith("-py3-none-any.whl")
    assert metadata(core_wheel)["Name"] == "autodiff-workbench"  # `workbench` on PyPI is another
    requires = metadata(core_wheel).get_all("Requires-Dist")
    core = {requirement_name(r) for r in requires if "extra ==" not in r}
    assert core == CORE
    assert not core & HEAVY
    extras = set(metadata(core_wheel).get_all("Provides-Extra"))
    assert {"lab", "render", "torch", "cuda", "dev"} <= extras
    by_extra = {
        extra: {requirement_name(r) for r in requires if f'extra == "{extra}"' in r}
        for extra in extras
    }
    assert by_extra["lab"] == {"jupyterlab"} and by_extra["render"] == {"pygraphviz"}
    assert by_extra["torch"] == {"torch"}


def test_the_wheel_carries_the_browsers_graphviz_and_no_native_code(core_wheel):
    with zipfile.ZipFile(core_wheel) as archive:
        names = archive.namelist()
        assert archive.read("workbench/viz/graphviz/viz-global.js") == asset_source()
        assert "workbench/viz/graphviz/VERSION" in names
        assert "workbench/viz/graphviz/LICENSE" in names
        wheel_info = next(n for n in names if n.endswith(".dist-info/WHEEL"))
        assert "Root-Is-Purelib: true" in archive.read(wheel_info).decode()
    assert not [n for n in names if n.endswith((".so", ".pyd", ".dylib", ".dll"))]


def test_the_wheel_carries_the_lab_defaults_that_save_widget_state(core_wheel, tmp_path):
    """Issue 39, point 7: a reopened notebook draws the course's lost-kernel note, which
    needs the widgets' state saved in it; ``workbench lab`` (and the hub's image) set
    JupyterLab's default so, from the file the wheel carries."""
    with zipfile.ZipFile(core_wheel) as archive:
        defaults = json.loads(archive.read("workbench/lab_defaults.json"))
    assert defaults == {"@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True}}
    assert install_lab_defaults(tmp_path)
    assert json.loads((tmp_path / LAB_DEFAULTS).read_text()) == defaults
    (tmp_path / LAB_DEFAULTS).write_text("{}")  # a teacher's own choice there is kept
    assert not install_lab_defaults(tmp_path) and (tmp_path / LAB_DEFAULTS).read_text() == "{}"


def test_a_fresh_core_venv_imports_workbench_and_builds_a_stepper(core_venv, tmp_path):
    assert not core_venv.installed & HEAVY, core_venv.installed & HEAVY
    assert CORE <= core_venv.installed
    code = """
import importlib.util, shutil
assert shutil.which("dot") is None, shutil.which("dot")
assert importlib.util.find_spec("pygraphviz") is None
assert importlib.util.find_spec("jupyterlab") is None
import workbench as wb
print(wb.__file__)
x = wb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True, name="x")
loss = (x * 2.0).sigmoid().sum()
stepper = wb.widgets.BackwardStepper(loss)
assert stepper.error is None, stepper.error
assert stepper.next() and stepper.step == 2
assert stepper.graph.dot.startswith("digraph") and stepper.graph._graphviz.source
try:
    wb.viz.draw(loss).svg()   # static export needs a native renderer: a clear message
except wb.viz.RendererMissing as err:
    print(err)
"""
    done = subprocess.run(
        [core_venv.python, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,  # not the checkout: the installed wheel is imported
        env=core_venv.environment(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    where, message = done.stdout.splitlines()
    assert where.startswith(str(core_venv.folder))
    assert "pip install 'autodiff-workbench[render]'" in message
    assert done.stderr == ""


def solution_forms() -> list[bytes]:
    """Every exercise's solution (longer than 20 characters: shorter ones are common
    code) as a file may hold it: as written, and inside a JSON string."""
    texts = [text for text in course.solutions_of(ROOT / "lessons").values() if len(text) > 20]
    quoted = [json.dumps(t, ensure_ascii=ascii)[1:-1] for t in texts for ascii in (0, 1)]
    return [form.encode() for form in dict.fromkeys([*texts, *quoted])]


def test_the_wheel_holds_no_solution_and_carries_the_feedback_template(core_wheel):
    """What goes to the package index: a learner can `pip install` it anywhere, so no
    member may hold a solution (docs/teaching.md: they are in the course repository)."""
    forms = solution_forms()
    assert len(forms) > 30 and any(f in course.SOLUTIONS.read_bytes() for f in forms)
    with zipfile.ZipFile(core_wheel) as archive:
        names = archive.namelist()
        assert not [n for n in names if "solutions" in Path(n).name], names
        for name in names:
            data = archive.read(name)
            assert not [f for f in forms if f in data], f"{name} holds a solution"
        for name in ("conf.json", "mathjax.html.j2"):
            assert f"workbench/exercises/feedback/workbench_feedback/{name}" in names


SOLUTION_AFTER_AN_ATTEMPT = """
from workbench.exercises import Exercise, ExerciseError, check_rule
exercise = Exercise("01-sigmoid-rule", lambda rule: check_rule("sigmoid", rule))
print(exercise.reveal_solution().title)
try:
    exercise.check(lambda orig, grad: [grad])
except ExerciseError:
    pass
print(repr(exercise.reveal_solution()))
"""


@pytest.mark.parametrize(
    "exam, download",
    [(False, True), (False, False), (True, True)],
    ids=["self-learner with the download", "the package alone", "graded work"],
)
def test_an_installed_workbench_shows_a_solution_after_an_attempt_with_the_download(
    core_venv, tmp_path, exam, download
):
    """No repository next to an install: the solution comes from the separate download
    (autodiff-workbench-solutions.json, beside the lessons), none without it, and
    WORKBENCH_EXAM=1 keeps it closed."""
    env = core_venv.environment(tmp_path)
    if exam:
        env["WORKBENCH_EXAM"] = "1"
    if download:
        shutil.copy(course.SOLUTIONS, tmp_path / course.SOLUTIONS_NAME)
    done = subprocess.run(
        [core_venv.python, "-c", SOLUTION_AFTER_AN_ATTEMPT],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    before, *after = done.stdout.splitlines()
    if exam:
        assert before == "No solution in graded work" and "grad * y" not in done.stdout
    elif download:
        assert before == "Not yet" and "grad * y * (1 - y)" in "\n".join(after)
    else:
        assert before == "Not yet" and "grad * y" not in done.stdout
        assert "no written solution" in "\n".join(after)


def test_workbench_lab_without_jupyterlab_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    assert main(["lab", "--no-browser"]) == 2
    assert capsys.readouterr().err.strip() == NO_LAB
    assert "pip install 'autodiff-workbench[lab]'" in NO_LAB
