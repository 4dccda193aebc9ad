"""The BackwardStepper in a real browser: JupyterLab, headless Debian Chromium, Playwright.

Skipped only when /usr/bin/chromium is missing (``make test`` installs it as root).
Saves the README's screenshot to assets/stepper.png.
"""

from __future__ import annotations

import re

from jupyterlab_harness import (
    BROWSER_TEST,
    ROOT,
    chromium_page,
    run_all_cells,
    running_lab,
    write_notebook,
)

from workbench.widgets.panel import format_array
from workbench.widgets.steps import LiveSteps, StepCursor

pytestmark = BROWSER_TEST

GRAPH = """\
import workbench as wb
x = wb.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True, name="x")
w = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="w")
b = wb.tensor(0.1, requires_grad=True, name="b")
loss = wb.sigmoid(x * w + b).sum()
"""
CLICKS = 3
SCREENSHOT = ROOT / "assets" / "stepper.png"


def expected_step(index: int):
    """The record the stepper should show after ``index`` clicks, computed here in Python."""
    scope: dict = {}
    exec(GRAPH, scope)
    cursor = StepCursor(LiveSteps(scope["loss"]))
    assert cursor.go(index)
    return cursor.record


def panel_title(page) -> str:
    return page.locator(".wb-step .wb-title").inner_text()


def test_stepper_next_moves_the_highlight_and_shows_the_gradient(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    write_notebook(
        notebooks / "stepper.ipynb",
        [GRAPH, "stepper = wb.widgets.BackwardStepper(loss)\nstepper"],
    )
    expected = expected_step(CLICKS)
    with running_lab(notebooks, tmp_path / "jupyter") as lab:
        with chromium_page(tmp_path / "chromium-profile", width=1700) as page:
            run_all_cells(page, lab, "stepper.ipynb")
            page.wait_for_selector(".wb-graph g.node.active", timeout=60_000)
            first = page.locator(".wb-graph g.node.active").get_attribute("id")
            assert panel_title(page).startswith("Step 1 of")  # steps count from 1
            next_button = page.get_by_role("button", name="Next ▶")
            for k in range(1, CLICKS + 1):
                next_button.click()
                page.wait_for_function(
                    f"() => document.querySelector('.wb-step .wb-title')"
                    f"?.textContent.startsWith('Step {k + 1} of')",
                    timeout=30_000,
                )
            active = page.locator(".wb-graph g.node.active")
            assert active.count() == 1
            fill = active.locator("path, polygon, ellipse").first.evaluate(
                "e => getComputedStyle(e).fill"
            )
            assert fill == "rgb(255, 213, 79)"  # the stylesheet's highlight really applies
            now = active.get_attribute("id")
            assert now != first
            assert now == page.locator(".wb-step").get_attribute("data-node")  # graph = panel
            panel = page.locator(".wb-step").inner_text()
            # the title names the node as the picture does (a leaf's by its tensor), no id
            title = rf"Step {CLICKS + 1} of \d+: {expected.name} \({expected.leaf.name}\)"
            assert re.fullmatch(title, panel_title(page)), panel_title(page)
            grad = format_array(expected.grads_in[0])
            assert re.search(rf"incoming gradient x̄\s+{re.escape(grad)}", panel), panel  # a leaf's
            assert f"{expected.leaf.name}.grad after" in panel
            page.locator(".wb-graph g.node.backward").first.click()  # click to inspect
            page.wait_for_selector(".wb-inspect", timeout=30_000)
            assert "Inspecting" in page.locator(".wb-inspect").inner_text()
            SCREENSHOT.parent.mkdir(exist_ok=True)
            widget = page.locator(".jp-OutputArea-output", has=page.locator(".wb-graph"))
            widget.screenshot(path=str(SCREENSHOT))
            page.locator(".widget-play button").first.click()  # Play drives the slider
            lit = "document.querySelector('.wb-graph').dataset.active"
            page.wait_for_function(f"() => !['', '{now}'].includes({lit})", timeout=30_000)
    assert lab.process.returncode == 0  # JupyterLab shut down cleanly, on /api/shutdown
