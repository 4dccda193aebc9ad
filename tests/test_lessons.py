"""Every lesson notebook runs top to bottom; the asserts inside check what it teaches.

And every lesson has the shape of one (what you will be able to do, ..., read it in the
source), its exercises follow the nbgrader convention, and its student copy (solutions
removed) runs with errors only where the learner has work to do.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from workbench.teaching import course

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("*.ipynb"))
GRADED = [p for p in LESSONS if course.graded_cells(json.loads(p.read_text()))]
SECONDS_PER_LESSON = 60


def test_lessons_folder_exists():
    assert LESSONS or (Path(__file__).resolve().parent.parent / "lessons").is_dir()


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_is_stored_without_outputs(path):
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs", []) == [], f"{path.name}: store lessons without outputs"
            assert cell.get("execution_count") is None


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_every_cell_has_an_id(path):
    """nbformat 4.5: a cell without an id is given one when the notebook opens, and
    JupyterLab then shows the lesson as modified before the learner has touched it."""
    notebook = json.loads(path.read_text())
    assert (notebook["nbformat"], notebook["nbformat_minor"]) >= (4, 5)
    ids = [cell.get("id") for cell in notebook["cells"]]
    assert None not in ids, f"{path.name}: cells {[i for i, c in enumerate(ids) if c is None]}"
    assert len(set(ids)) == len(ids), f"{path.name}: a cell id is used twice"


def markdown_of(notebook: dict) -> list[str]:
    return [course.cell_text(c) for c in notebook["cells"] if c["cell_type"] == "markdown"]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_opens_with_its_aims_and_ends_with_the_source_to_read(path):
    texts = markdown_of(json.loads(path.read_text()))
    assert texts and "you will" in texts[0].lower(), f"{path.name}: open with what you will learn"
    tail = "\n".join(texts[-3:]).lower()  # the last markdown cells
    assert "summary" in tail and "in the source" in tail, (
        f"{path.name}: end with a summary and 'read it in the source' pointers"
    )


def test_grade_ids_are_unique_across_the_course():
    ids = [
        course.nbgrader_meta(cell)["grade_id"]
        for path in LESSONS
        for cell in json.loads(path.read_text())["cells"]
        if "grade_id" in course.nbgrader_meta(cell)
    ]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.name)
def test_each_solution_cell_is_followed_by_its_graded_check(path):
    cells = json.loads(path.read_text())["cells"]
    for i, cell in enumerate(cells):
        if not course.is_solution_cell(cell):
            continue
        check = course.nbgrader_meta(cells[i + 1])
        grade_id = course.nbgrader_meta(cell)["grade_id"]
        assert check.get("grade") and check.get("locked") and check.get("points", 0) > 0
        assert check["grade_id"] == f"{grade_id}-check", check
        source = course.cell_text(cell)
        assert "### BEGIN SOLUTION" in source and "### END SOLUTION" in source


def execute(notebook, path: Path, monkeypatch, tmp_path, allow_errors: bool = False):
    """Run ``notebook`` in a kernel as a learner's Jupyter would; returns the seconds taken."""
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    # The kernel imports this checkout's workbench, not whichever one is installed.
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(path.parent)}},
    )
    # Under pytest ipykernel leaves fd 2 alone (PYTEST_CURRENT_TEST); without it the
    # kernel shows what C libraries print there, as a learner's Jupyter does.
    kernel_env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    start = time.monotonic()
    client.execute(env=kernel_env)
    return time.monotonic() - start


def stderr_of(cell) -> list:
    return [
        output["text"]
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream" and output.get("name") == "stderr"
    ]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_runs(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(path, as_version=4)
    seconds = execute(notebook, path, monkeypatch, tmp_path)
    # A pink stderr box reads as an error to a learner (renderer noise such as
    # fontconfig's warnings must stay out of the notebook).
    stderr = [text for cell in notebook.cells for text in stderr_of(cell)]
    assert stderr == [], f"{path.name} printed on stderr: {stderr}"
    assert seconds < SECONDS_PER_LESSON, f"{path.name} took {seconds:.0f} s"


def result_of(cell) -> dict:
    """The cell's ``execute_result`` data ({} when it shows no value)."""
    results = [o for o in cell.get("outputs", []) if o.get("output_type") == "execute_result"]
    return results[0]["data"] if results else {}


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.name)
def test_run_all_of_a_fresh_learner_copy_goes_to_the_end(path, tmp_path, monkeypatch):
    """Solutions removed, Run All stops nowhere: each graded cell says its exercise is not
    answered yet (and shows 0, nbgrader's score), and the last cell lists them all as open."""
    nbformat = pytest.importorskip("nbformat")
    student = course.student_version(json.loads(path.read_text()))
    notebook = nbformat.reads(json.dumps(student), as_version=4)
    execute(notebook, path, monkeypatch, tmp_path)  # an error in any cell fails here
    graded = [c for c in notebook.cells if course.is_graded_cell(c)]
    for cell in graded:
        data = result_of(cell)
        assert data.get("text/plain") == "0", f"{path.name}: {cell.source}: {cell.outputs}"
        assert "Not answered yet" in data["text/html"], data
    for cell in notebook.cells:
        assert stderr_of(cell) == [], f"{path.name}: {cell.source}: {stderr_of(cell)}"
    last = notebook.cells[-1]
    listed = result_of(last).get("text/plain", "")
    count = len(graded)
    assert f"{count} of {count} exercises still open" in listed, listed
    assert listed.count("not answered yet") == count, listed


FORGOT_RETURN = "return None  # the learner forgot to return"


def with_answers_that_forget_to_return(student: dict) -> tuple[dict, int]:
    """The learner copy with every stub answered wrongly: each function body returns None
    (the commonest slip), so each answer is wrong in a way the lesson's later cells meet."""
    import re

    stub = re.compile(r"(?m)^([ \t]*)# YOUR CODE HERE\n[ \t]*raise NotImplementedError\(\)")
    answered = 0
    for cell in student["cells"]:
        source = "".join(cell["source"])
        source, n = stub.subn(lambda m: m.group(1) + FORGOT_RETURN, source)
        cell["source"], answered = source, answered + n
    return student, answered


@pytest.mark.slow
@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.name)
def test_run_all_with_wrong_answers_goes_to_the_end(path, tmp_path, monkeypatch):
    """Issue 38, point 5: with every answer wrong, Run All still reaches the last cell: each
    graded cell shows its verdict (0, "Not yet."), and the cells after an exercise
    that use the learner's answer fall back to the course's own while it has not passed."""
    nbformat = pytest.importorskip("nbformat")
    student, answered = with_answers_that_forget_to_return(
        course.student_version(json.loads(path.read_text()))
    )
    assert answered, f"{path.name}: no stub to answer"
    notebook = nbformat.reads(json.dumps(student), as_version=4)
    execute(notebook, path, monkeypatch, tmp_path)  # an error in any cell fails here
    graded = [c for c in notebook.cells if course.is_graded_cell(c)]
    verdicts = [result_of(cell) for cell in graded]
    assert all(v.get("text/plain") == "0" for v in verdicts), verdicts
    assert any("Not yet." in v.get("text/html", "") for v in verdicts), verdicts
    listed = result_of(notebook.cells[-1]).get("text/plain", "")
    assert f"{len(graded)} of {len(graded)} exercises still open" in listed, listed


def exercises_made(notebook: dict) -> dict:
    """``{grade id: (answer name, the cell's source)}`` of each ``Exercise(...)`` made."""
    import re

    made = {}
    for cell in notebook["cells"]:
        text = course.cell_text(cell)
        for name, answer in re.findall(r'Exercise\(\s*"([^"]+)".*?answer="(\w+)"', text, re.S):
            made[name] = (answer, text)
    return made


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.name)
def test_every_exercise_has_its_hint_button_answer_and_graded_cell(path):
    notebook = json.loads(path.read_text())
    made = exercises_made(notebook)
    cells = notebook["cells"]
    for i, cell in enumerate(cells):
        if not course.is_solution_cell(cell):
            continue
        grade_id = course.nbgrader_meta(cell)["grade_id"]
        assert grade_id in made, f"{path.name}: no Exercise({grade_id!r}, ...) is made"
        answer, setup = made[grade_id]
        assert setup.rstrip().endswith(".button()"), f"{path.name}: {grade_id} has no hint button"
        defines = (f"def {answer}(", f"class {answer}(", f"class {answer}:")
        assert any(d in course.cell_text(cell) for d in defines), (
            f"{path.name}: the answer cell of {grade_id} does not define {answer}"
        )
        assert f'grade("{grade_id}")' in course.cell_text(cells[i + 1])
