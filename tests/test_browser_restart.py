"""After the kernel restarts, stops or dies, every workbench widget on the page says so.

A real JupyterLab in headless Debian Chromium (Playwright), on 127.0.0.1, stopped by
the module's fixture. The notebook shows a SigmoidExplorer and a BackwardStepper; the
tests restart the kernel from the Kernel menu, kill it from a cell (JupyterLab's
server starts a new one) and shut it down from the Kernel menu. Each time every widget
drawn before shows its "run this cell again" note, and a cell run again draws a live
widget with no note. A busy kernel (a long cell) is alive: no note.

The last test has a lab of its own, set up with the course's lab defaults (widget state
saved in the notebook, as ``workbench lab`` and the hub's image set it): reopened on a
new kernel, the saved widgets have no kernel-side half, and say so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from jupyterlab_harness import (
    BROWSER_TEST,
    chromium_page,
    open_notebook,
    running_lab,
    shut_kernels_down,
    write_notebook,
)

from workbench.teaching.cli import LAB_DEFAULTS, install_lab_defaults
from workbench.widgets.connection import LOST_KERNEL

pytestmark = BROWSER_TEST

EXPLORER = "import workbench as wb\nwb.widgets.SigmoidExplorer(x=1.0)"
STEPPER = """\
x = wb.tensor([0.5, -1.0], requires_grad=True, name="x")
wb.widgets.BackwardStepper(wb.sigmoid(x * 2.0).sum())
"""
SLEEP = "import time\ntime.sleep(6)\nprint('slept')"
CRASH = "import os\nos._exit(1)  # the kernel process dies; the server starts a new one"
CELLS = [EXPLORER, STEPPER, SLEEP, CRASH]
NOTE = ".wb-connection-note"
SHOWN = ".wb-connection-note:visible"  # hidden notes are display: none
WIDGET_OUTPUT = ".jp-OutputArea-output:has(.wb-connection-note)"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("restart")
    notebooks = folder / "notebooks"
    notebooks.mkdir()
    for name in ["restart", "crash", "shutdown", "busy"]:
        write_notebook(notebooks / f"{name}.ipynb", CELLS)
    with running_lab(notebooks, folder / "jupyter") as lab:
        yield lab
    assert lab.process.returncode == 0


@dataclass
class OwnWorkspace:
    """The lab, seen through a workspace of the notebook's own: no tab left by an earlier test."""

    lab: object

    def page_url(self, notebook: str, workspace: str = "") -> str:
        return self.lab.page_url(notebook, workspace or notebook.removesuffix(".ipynb"))


@pytest.fixture
def page(lab, tmp_path):
    """A fresh browser; every kernel is stopped afterwards."""
    with chromium_page(tmp_path / "chromium-profile") as page:
        try:
            yield page
        finally:
            shut_kernels_down(lab)


def cell(page, index: int):
    return page.locator(".jp-Notebook .jp-CodeCell").nth(index)


def run_cell(page, index: int, wait: bool = True) -> None:
    """Run code cell ``index`` (Shift+Enter); with ``wait``, until it has run.

    After a restart the execution count starts again at 1, so the prompt may read the
    same as before: the cell has run when its prompt shows a number and the old
    outputs (marked here) are gone.
    """
    cell(page, index).evaluate(
        "c => c.querySelectorAll('.jp-OutputArea-output').forEach(o => o.dataset.old = 'yes')"
    )
    cell(page, index).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    if wait:
        page.wait_for_function(
            "(i) => { const c = document.querySelectorAll('.jp-Notebook .jp-CodeCell')[i];"
            " return /\\[\\d+\\]/.test(c.querySelector('.jp-InputPrompt').textContent)"
            " && !c.querySelector('[data-old]') && c.querySelector('.jp-OutputArea-output'); }",
            arg=index,
            timeout=120_000,
        )


def open_with_widgets(page, lab, notebook: str) -> None:
    """Open ``notebook`` and run its two widget cells; wait until both widgets are drawn.

    (Run All would run the sleep and the crash too.)
    """
    open_notebook(page, OwnWorkspace(lab), notebook, timeout_ms=180_000)
    run_cell(page, 0)
    run_cell(page, 1)
    page.wait_for_selector(".wb-backward-graph g.node.active", timeout=120_000)
    assert page.locator(NOTE).count() == 2  # one note per widget, hidden
    assert_live(page)


def assert_live(page) -> None:
    """No note on the page: every note is in the DOM but takes no room and shows no text."""
    assert page.locator(SHOWN).count() == 0
    boxes = page.locator(NOTE).evaluate_all("ns => ns.map(n => n.getBoundingClientRect().height)")
    assert boxes and all(height == 0 for height in boxes), boxes


def wait_notes_on_every_widget(page, count: int) -> None:
    """Wait until ``count`` widgets show the note; check its words and where it is."""
    page.wait_for_function(
        "([sel, n]) => [...document.querySelectorAll(sel)]"
        ".filter((note) => note.offsetHeight > 0 && note.innerText.trim()).length === n",
        arg=[NOTE, count],
        timeout=60_000,
    )
    for note in page.locator(SHOWN).all():
        assert note.is_visible()
        assert note.inner_text().strip() == LOST_KERNEL
    # every widget output on the page has its own note showing
    assert page.locator(WIDGET_OUTPUT).count() == count


def restart_from_kernel_menu(page) -> None:
    page.get_by_role("menuitem", name="Kernel", exact=True).click()
    page.locator(".lm-Menu [data-command='kernelmenu:restart']").click()
    page.locator(".jp-Dialog button.jp-mod-accept").click()  # "Restart"


def shut_down_from_kernel_menu(page) -> None:
    page.get_by_role("menuitem", name="Kernel", exact=True).click()
    page.locator(".lm-Menu [data-command='kernelmenu:shutdown']").click()
    accept = page.locator(".jp-Dialog button.jp-mod-accept")
    if accept.count():  # a confirmation, where this JupyterLab asks for one
        accept.click()


def wait_idle(page) -> None:
    page.get_by_text(re.compile(r"\| Idle")).first.wait_for(timeout=120_000)


def test_a_restart_puts_the_note_on_every_widget_and_a_rerun_is_live(lab, page):
    open_with_widgets(page, lab, "restart.ipynb")
    restart_from_kernel_menu(page)
    wait_notes_on_every_widget(page, 2)
    wait_idle(page)
    run_cell(page, 0)  # the explorer again, on the new kernel
    page.wait_for_selector(".jp-Notebook .jp-CodeCell >> nth=0 >> .widget-slider")
    page.wait_for_timeout(1_000)  # time enough for a false alarm to show
    first = cell(page, 0)
    assert first.locator(NOTE).count() == 1
    assert first.locator(SHOWN).count() == 0  # the new explorer is live
    assert cell(page, 1).locator(SHOWN).count() == 1  # the old stepper still says so
    # and live indeed: the kernel answers a slider move with σ(1.1) in the readout
    first.locator(".widget-slider .noUi-handle").first.focus()
    page.keyboard.press("ArrowRight")
    first.locator(".wb-table", has_text="0.750260").wait_for(timeout=30_000)


def test_a_kernel_that_dies_puts_the_note_on_every_widget(lab, page):
    open_with_widgets(page, lab, "crash.ipynb")
    run_cell(page, 3, wait=False)  # os._exit(1)
    wait_notes_on_every_widget(page, 2)
    dialog = page.locator(".jp-Dialog button.jp-mod-accept")  # "the kernel appears to have died"
    dialog.click(timeout=60_000)
    wait_idle(page)
    run_cell(page, 1)
    page.wait_for_timeout(1_000)
    assert cell(page, 1).locator(SHOWN).count() == 0
    assert cell(page, 0).locator(SHOWN).count() == 1


def test_a_shut_down_kernel_puts_the_note_on_every_widget(lab, page):
    open_with_widgets(page, lab, "shutdown.ipynb")
    shut_down_from_kernel_menu(page)
    wait_notes_on_every_widget(page, 2)


def test_a_busy_kernel_is_alive_no_note(lab, page):
    open_with_widgets(page, lab, "busy.ipynb")
    run_cell(page, 2, wait=False)  # sleeps six seconds
    page.get_by_text(re.compile(r"\| Busy")).first.wait_for(timeout=30_000)
    for _ in range(4):
        page.wait_for_timeout(1_000)
        assert_live(page)
    page.wait_for_function(
        "() => document.querySelectorAll('.jp-CodeCell')[2].textContent.includes('slept')",
        timeout=60_000,
    )
    assert_live(page)


def course_lab_defaults(home: Path) -> tuple:
    """JupyterLab's options for an environment set up as ``workbench lab`` sets its own:
    the course's defaults (widget state saved in notebooks) in its settings folder, no
    user setting of the learner's."""
    prefix = home / "prefix"
    assert install_lab_defaults(prefix)
    return (f"--LabApp.app_settings_dir={(prefix / LAB_DEFAULTS).parent.parent}",)


def test_widgets_saved_in_the_notebook_and_reopened_on_a_new_kernel_say_so(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    write_notebook(notebooks / "saved.ipynb", CELLS)
    home = tmp_path / "jupyter"
    with running_lab(notebooks, home, course_lab_defaults(home)) as lab:
        with chromium_page(tmp_path / "first-profile") as page:
            open_with_widgets(page, lab, "saved.ipynb")
            page.keyboard.press("Control+s")
            page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=60_000)
        saved = json.loads((notebooks / "saved.ipynb").read_text())
        assert "widgets" in saved["metadata"]  # the widgets' state, saved with the notebook
        shut_kernels_down(lab)
        with chromium_page(tmp_path / "second-profile") as page:
            try:
                open_notebook(page, OwnWorkspace(lab), "saved.ipynb", timeout_ms=180_000)
                wait_notes_on_every_widget(page, 2)  # drawn from the notebook, not live
            finally:
                shut_kernels_down(lab)
    assert lab.process.returncode == 0
