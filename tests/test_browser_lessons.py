"""Every lesson, opened in real JupyterLab in Debian's Chromium, after Run All: no error
or stderr box, no widget that failed to show, no broken image, every graph laid out by
the page. And every lesson's fresh
learner copy (solutions removed): Run All reaches the last cell, each exercise says it is
not answered yet, and the last cell lists them all as open.

One JupyterLab serves a copy of ``lessons/`` and the learner copies (checkpoints and
kernels stay out of the checkout); each lesson gets a fresh page and at most
``SECONDS_PER_LESSON`` to run. Skipped only when /usr/bin/chromium is missing
(``make test`` installs it as root).
"""

from __future__ import annotations

import json
import shutil
import time

import pytest
from jupyterlab_harness import (
    BROWSER_TEST,
    ROOT,
    chromium_page,
    run_all_cells,
    running_lab,
    write_notebook,
)

from workbench.teaching import course

pytestmark = BROWSER_TEST

LESSONS = sorted((ROOT / "lessons").glob("*.ipynb"))
GRADED = [p for p in LESSONS if course.graded_cells(json.loads(p.read_text()))]
LEARNER = "learner_"  # a learner copy of 01_x.ipynb is served as learner_01_x.ipynb
SECONDS_PER_LESSON = 150  # a lesson runs in under a minute; the rest is the browser
WIDGET_ERRORS = ("Error displaying widget", "Model not found", "Failed to load model class")

# Error and stderr outputs, as JupyterLab renders them.
BAD_OUTPUTS = (
    ".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'],"
    ".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']"
)
# Shown images that finished loading without a picture (a broken src, an empty widget).
BROKEN_IMAGES = """() => [...document.querySelectorAll('.jp-Notebook img')]
    .filter(img => img.offsetParent !== null && img.complete && img.naturalWidth === 0)
    .map(img => (img.getAttribute('src') || '').slice(0, 80))"""
IMAGES_LOADED = "() => [...document.querySelectorAll('.jp-Notebook img')].every(i => i.complete)"
# The page lays out every graph itself (viz-js): wait until each says done, empty or failed.
LAID_OUT = (
    "() => [...document.querySelectorAll('.wb-graph')]"
    ".every(e => ['done', 'empty', 'failed'].includes(e.dataset.layout))"
)


def every_cell_rendered(home) -> None:
    """Turn JupyterLab's windowing off, so that every cell of a long lesson is in the page."""
    folder = home / "config" / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    home = tmp_path_factory.mktemp("lab-home")
    notebooks = tmp_path_factory.mktemp("lessons")
    for path in LESSONS:
        shutil.copy(path, notebooks / path.name)
        course.write_student_copy(path, notebooks / f"{LEARNER}{path.name}")
    write_notebook(notebooks / "zz_faults.ipynb", FAULTS)
    write_notebook(notebooks / "zz_wrong_answer.ipynb", WRONG_ANSWER)
    every_cell_rendered(home)
    with running_lab(notebooks, home) as running:
        yield running


FAULTS = [
    "import sys\nprint('a warning', file=sys.stderr)",
    "from IPython.display import HTML\nHTML('<img src=\"no-such-picture.png\">')",
    "raise ValueError('a failing cell')",  # the last: Run All stops at an error
]
# A wrong answer: the checker's message, in an error box that must wrap at spaces.
WRONG_ANSWER = [
    "from workbench.exercises import check_rule\n"
    "check_rule('sigmoid', lambda orig, grad: [orig.out * (1 - orig.out)])",
]
# For each error box: its lines of text, and how many lines it takes on the screen. More
# lines on the screen than in the text means the browser broke a line (mid-word).
ERROR_LINES = """() => [...document.querySelectorAll(
        ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error'] pre," +
        ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'] pre")]
    .map(pre => ({text: pre.innerText.replace(/\\n$/, '').split('\\n').length,
                  shown: Math.round(pre.getBoundingClientRect().height /
                                    parseFloat(getComputedStyle(pre).lineHeight)),
                  words: pre.innerText.slice(0, 60)}))"""


NOTHING_WRONG = {"outputs": [], "widget errors": [], "broken images": [], "graphs not laid out": []}


class OwnWorkspace:
    """The lab, opening each notebook in a workspace of its own: JupyterLab would otherwise
    restore the tabs of the lessons opened before, hidden behind the new one."""

    def __init__(self, lab) -> None:
        self.lab = lab

    def page_url(self, notebook: str, workspace: str = "") -> str:
        workspace = workspace or notebook.removesuffix(".ipynb").replace("_", "-")
        return self.lab.page_url(notebook, workspace)


def faults_seen(page) -> dict:
    """What the lesson test looks for, found in the open notebook."""
    page.wait_for_function(IMAGES_LOADED, timeout=30_000)
    page.wait_for_function(LAID_OUT, timeout=120_000)
    page.wait_for_timeout(1500)  # widget views render after their outputs arrive
    bad = page.locator(BAD_OUTPUTS)
    notebook_text = page.locator(".jp-Notebook").first.inner_text()
    graphs = page.locator(".wb-graph")
    layouts = [graphs.nth(i).get_attribute("data-layout") for i in range(graphs.count())]
    return {
        "outputs": [bad.nth(i).inner_text()[:300] for i in range(bad.count())],
        "widget errors": [words for words in WIDGET_ERRORS if words in notebook_text],
        "broken images": page.evaluate(BROKEN_IMAGES),
        "graphs not laid out": [i for i, state in enumerate(layouts) if state == "failed"],
    }


@pytest.mark.timeout(SECONDS_PER_LESSON + 60)
def test_the_faults_looked_for_are_seen(lab, tmp_path):
    """The checks below can fail: a stderr line, an error and a broken image are caught."""
    with chromium_page(tmp_path / "profile") as page:
        run_all_cells(
            page, OwnWorkspace(lab), "zz_faults.ipynb", timeout_ms=SECONDS_PER_LESSON * 1000
        )
        seen = faults_seen(page)
    assert any("a warning" in text for text in seen["outputs"]), seen
    assert any("a failing cell" in text for text in seen["outputs"]), seen
    assert [src.split("?")[0].rsplit("/", 1)[-1] for src in seen["broken images"]] == [
        "no-such-picture.png"
    ], seen


@pytest.mark.timeout(SECONDS_PER_LESSON + 60)
@pytest.mark.parametrize("width", [1500, 800])
def test_a_wrong_answers_message_wraps_at_spaces_only(lab, tmp_path, width):
    """The checker's message shows as HTML, which wraps at spaces; its error box is one
    short line, which the browser never breaks ("expec ted"), on a wide or a narrow page."""
    with chromium_page(tmp_path / "profile", width=width) as page:
        run_all_cells(
            page, OwnWorkspace(lab), "zz_wrong_answer.ipynb", timeout_ms=SECONDS_PER_LESSON * 1000
        )
        boxes = page.evaluate(ERROR_LINES)
        message = page.locator(".jp-Notebook .jp-OutputArea-output", has_text="Not yet.").first
        assert "Multiply it by ȳ" in message.inner_text()
        assert message.evaluate("e => e.scrollWidth <= e.clientWidth")  # no line runs off
    assert [box["words"] for box in boxes] == ["ExerciseError: see the message above."], boxes
    assert all(box["shown"] == box["text"] == 1 for box in boxes), boxes


@pytest.mark.timeout(SECONDS_PER_LESSON + 60)
@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_run_all_shows_no_error_box_no_widget_error_and_no_broken_image(lab, path, tmp_path):
    start = time.monotonic()
    with chromium_page(tmp_path / "profile") as page:
        run_all_cells(page, OwnWorkspace(lab), path.name, timeout_ms=SECONDS_PER_LESSON * 1000)
        seen = faults_seen(page)
        assert seen == NOTHING_WRONG, path.name
        widgets = page.locator(".jp-Notebook .jupyter-widgets").count()
        images = page.locator(".jp-Notebook img, .jp-Notebook svg").count()
        assert widgets + images > 0, f"{path.name}: nothing was drawn"
    assert time.monotonic() - start < SECONDS_PER_LESSON


@pytest.mark.timeout(SECONDS_PER_LESSON + 60)
@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.name)
def test_run_all_of_a_fresh_learner_copy_reaches_the_last_cell(lab, path, tmp_path):
    """Run All waits for every cell to run (an error would stop it short): each exercise
    says it is not answered yet, the widgets after it are drawn, the last cell lists the
    exercises still open."""
    exercises = len(course.graded_cells(json.loads(path.read_text())))
    with chromium_page(tmp_path / "profile") as page:
        run_all_cells(
            page, OwnWorkspace(lab), f"{LEARNER}{path.name}", timeout_ms=SECONDS_PER_LESSON * 1000
        )
        seen = faults_seen(page)
        assert seen == NOTHING_WRONG, path.name
        notes = page.locator(".jp-Notebook .jp-OutputArea-output", has_text="Not answered yet")
        assert notes.count() >= exercises, path.name
        last = page.locator(".jp-Notebook .jp-CodeCell").last.inner_text()
        assert f"{exercises} of {exercises} exercises still open" in last, last
        widgets = page.locator(".jp-Notebook .jupyter-widgets").count()
        images = page.locator(".jp-Notebook img, .jp-Notebook svg").count()
        assert widgets + images > 0, f"{path.name}: nothing was drawn"
