"""The stepper's time travel, linked views, folded boxes and a PyTorch replay, in a real
JupyterLab in headless Debian Chromium (Playwright).

One JupyterLab serves every notebook of this module; each test opens its own
notebook and stops the kernels when it is done. The screenshots for the README are
saved to assets/ (stepper_linked.png, stepper_folded.png).
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

import pytest
from jupyterlab_harness import (
    BROWSER_TEST,
    ROOT,
    chromium_page,
    run_all_cells,
    running_lab,
    shut_kernels_down,
    write_notebook,
)

pytestmark = BROWSER_TEST

ASSETS = ROOT / "assets"
SMALL = """\
import workbench as wb
x = wb.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True, name="x")
w = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="w")
b = wb.tensor(0.1, requires_grad=True, name="b")
b.grad = wb.tensor(10.0)  # left over from an earlier backward()
loss = wb.sigmoid(x * w + b).sum()
"""
PRINT_B = 'print(f"b.grad = {b.grad.item():.4f}")'
CHAIN = """\
import workbench as wb
x = wb.tensor([0.5], requires_grad=True, name="x")
y = x
for _ in range(300):
    y = (y * 1.001).tanh()
stepper = wb.widgets.BackwardStepper(y.sum())
stepper.go(101)
stepper
"""
TORCH = """\
import torch
import workbench as wb
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
loss = model(torch.randn(5, 3)).pow(2).mean()
trace = wb.from_torch(loss, names=dict(model.named_parameters()))
stepper = wb.widgets.BackwardStepper(trace)
stepper
"""
PLAY = """\
import workbench as wb
x = wb.tensor([0.5], requires_grad=True, name="x")
y = x
for _ in range(1999):
    y = y * 1.0001
stepper = wb.widgets.BackwardStepper(y.sum(), interval_ms=25)  # the fastest Play
stepper
"""
BACKWARD = ".wb-backward-graph .wb-graph"
FORWARD = ".wb-forward-graph .wb-graph"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stepper")
    notebooks = folder / "notebooks"
    notebooks.mkdir()
    write_notebook(notebooks / "rewind.ipynb", [SMALL, "wb.widgets.BackwardStepper(loss)", PRINT_B])
    linked = 'stepper = wb.widgets.BackwardStepper(loss, view="both")\nstepper'
    write_notebook(notebooks / "linked.ipynb", [SMALL, linked])
    write_notebook(notebooks / "chain.ipynb", [CHAIN])
    write_notebook(notebooks / "torch.ipynb", [TORCH])
    write_notebook(notebooks / "play.ipynb", [PLAY])
    with running_lab(notebooks, folder / "jupyter") as lab:
        yield lab
    assert lab.process.returncode == 0


@pytest.fixture
def opened(lab, tmp_path):
    """Open and run a notebook in a fresh browser; stop its kernel afterwards."""
    with chromium_page(tmp_path / "chromium-profile", width=1800, height=1200) as page:

        def run(name: str):
            run_all_cells(page, OwnWorkspace(lab), name, timeout_ms=180_000)
            page.wait_for_selector(f"{BACKWARD} g.node.active", timeout=120_000)
            return page

        try:
            yield run
        finally:
            shut_kernels_down(lab)


@dataclass
class OwnWorkspace:
    """The lab, seen through a workspace of the notebook's own: no tab left by an earlier test."""

    lab: object

    def page_url(self, notebook: str, workspace: str = "") -> str:
        return self.lab.page_url(notebook, workspace or notebook.removesuffix(".ipynb"))


@contextlib.contextmanager
def lab_serving(folder, notebooks: dict):
    """A JupyterLab serving ``notebooks`` (file name -> its cells' code) from ``folder``."""
    (folder / "notebooks").mkdir()
    for name, cells in notebooks.items():
        write_notebook(folder / "notebooks" / name, cells)
    with running_lab(folder / "notebooks", folder / "jupyter") as lab:
        yield lab
    assert lab.process.returncode == 0


@contextlib.contextmanager
def notebook_runner(lab, profile, width: int, height: int):
    """A fresh Chromium page, and ``run(name, ready)``: Run All of one of ``lab``'s
    notebooks there, then wait for the selector ``ready``. Kernels are shut down after."""
    with chromium_page(profile, width=width, height=height) as page:

        def run(name: str, ready: str):
            run_all_cells(page, OwnWorkspace(lab), name, timeout_ms=180_000)
            page.wait_for_selector(ready, timeout=120_000)
            return page

        try:
            yield run
        finally:
            shut_kernels_down(lab)


def open_more(page) -> None:
    """Show the controls behind "More ▾" (everyday: Prev, Next, Play and the slider)."""
    more = page.get_by_role("button", name="More ▾")
    if more.count() and more.first.is_visible():
        more.first.click()
        page.get_by_role("button", name="Less ▴").first.wait_for(timeout=30_000)


def title(page) -> str:
    return page.locator(".wb-step .wb-title").inner_text()


def wait_title(page, pattern: str) -> None:
    page.wait_for_function(
        "(p) => new RegExp(p).test(document.querySelector('.wb-step .wb-title')?.textContent)",
        arg=pattern,
        timeout=60_000,
    )


def rerun_cell(page, index: int) -> str:
    """Run code cell ``index`` again (as Shift+Enter does); return its new output."""
    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(index)
    before = cell.locator(".jp-InputPrompt").inner_text()
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(
        "([i, before]) => { const p = document.querySelectorAll"
        "('.jp-Notebook .jp-CodeCell .jp-InputPrompt')[i].textContent;"
        " return /\\[\\d+\\]/.test(p) && p !== before; }",
        arg=[index, before],
        timeout=60_000,
    )
    return cell.locator(".jp-OutputArea-output").inner_text().strip()


def test_prev_puts_back_the_grad_that_a_later_cell_prints(opened):
    page = opened("rewind.ipynb")
    assert rerun_cell(page, 2) == "b.grad = 10.0000"  # step 1: b's node has not run
    open_more(page)
    page.locator(".widget-text input").first.fill("leaf b")  # the node picker's filter
    open_more(page)
    page.get_by_role("button", name="Run to node").click()
    wait_title(page, r"^Step \d+ of \d+: AccumulateGrad")
    panel = page.locator(".wb-step").inner_text()
    after = re.search(r"b\.grad after\s+(-?[\d.]+)", panel).group(1)
    assert float(after) != 10.0
    assert rerun_cell(page, 2) == f"b.grad = {float(after):.4f}"  # panel and notebook agree
    at_b = title(page)
    page.get_by_role("button", name="◀ Prev").click()
    page.wait_for_function(
        "(t) => document.querySelector('.wb-step .wb-title').textContent !== t", arg=at_b
    )
    assert rerun_cell(page, 2) == "b.grad = 10.0000"  # rewound: the earlier value is back
    page.get_by_role("button", name="Next ▶").click()
    wait_title(page, r"^Step \d+ of \d+: AccumulateGrad")
    assert rerun_cell(page, 2) == f"b.grad = {float(after):.4f}"  # and re-applied


def test_the_picture_is_readable_and_shows_what_flows(opened):
    page = opened("rewind.ipynb")
    sizes = page.locator(f"{BACKWARD} g.node text").evaluate_all(
        "ts => ts.map(t => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a)"
    )
    assert min(sizes) >= 11, sizes  # at least 11 px on screen at the default zoom
    for _ in range(4):  # to the multiply: its gradients flow to x and (summed) to w
        page.get_by_role("button", name="Next ▶").click()
    wait_title(page, r"^Step 5 of 7: MulBackward0")
    page.wait_for_selector(f"{BACKWARD} g.edge.flowing", timeout=30_000)
    captions = page.locator(f"{BACKWARD} g.edge:has(.wb-caption)").all_text_contents()
    # under its edge's shape (the label), the gradient's norm: the edge to x
    assert any(re.search(r"\(2, 3\)\s*‖g‖=[\d.]+$", c) for c in captions), captions
    assert page.locator(f"{BACKWARD} g.node.collapse-active").count() == 1
    arrays = page.locator(".wb-step .wb-array").first
    style = arrays.evaluate("e => [getComputedStyle(e).whiteSpace, getComputedStyle(e).wordBreak]")
    assert style == ["pre", "normal"]  # no wrap inside a word (JupyterLab's <pre> wraps)
    zoom_in = page.locator(".wb-zoom button", has_text="+").first
    width = page.locator(f"{BACKWARD} svg").evaluate("s => s.getBoundingClientRect().width")
    zoom_in.click()
    page.wait_for_function(
        "([sel, w]) => document.querySelector(sel).getBoundingClientRect().width > w * 1.2",
        arg=[f"{BACKWARD} svg", width],
        timeout=30_000,
    )


def test_a_click_on_a_forward_op_lights_its_backward_node_and_saved_tensors(opened):
    page = opened("linked.ipynb")
    page.wait_for_selector(f"{FORWARD} g.node.active", timeout=60_000)
    mul = page.locator(f"{FORWARD} g.node.op", has_text="mul").first
    mul_id = mul.get_attribute("id")
    mul.click()
    page.wait_for_selector(f"{BACKWARD} g.node.linked[id='{mul_id}']", timeout=30_000)
    backward = page.locator(f"{BACKWARD} g.node.linked").evaluate_all("gs => gs.map(g => g.id)")
    assert sorted(backward) == sorted([mul_id, f"{mul_id}.a", f"{mul_id}.b"])
    assert page.locator(f"{FORWARD} g.node.linked").count() == 3  # the op, x and w
    assert "MulBackward0" in page.locator(".wb-inspect").inner_text()
    page.get_by_role("button", name="Next ▶").click()  # stepping lights the forward op too
    wait_title(page, r"^Step 2 of")
    lit = page.locator(f"{FORWARD} g.node.active").get_attribute("id")
    assert lit == page.locator(".wb-step").get_attribute("data-node")
    widget = page.locator(".jp-OutputArea-output", has=page.locator(FORWARD))
    widget.screenshot(path=str(ASSETS / "stepper_linked.png"))


def test_a_folded_box_opens_on_click_and_closes_again(opened):
    page = opened("chain.ipynb")
    box = page.locator(f"{BACKWARD} g.node.active")
    assert "fold" in box.get_attribute("class")
    box_id = box.get_attribute("id")
    assert re.search(r"\d+ of \d+ run", box.text_content())  # its progress
    box.click()
    page.wait_for_function(
        "(id) => { const g = document.querySelector('.wb-backward-graph .wb-graph');"
        " return g.dataset.layout === 'done' && !g.querySelector(`g.node[id='${id}']`)"
        " && g.querySelector('g.node.opened'); }",
        arg=box_id,
        timeout=120_000,
    )
    part = page.locator(f"{BACKWARD} g.node.active")
    assert part.get_attribute("id").startswith("open0.part")
    widget = page.locator(".jp-OutputArea-output", has=page.locator(BACKWARD))
    widget.screenshot(path=str(ASSETS / "stepper_folded.png"))
    open_more(page)
    page.get_by_role("button", name="Fold again ⟲").click()
    page.wait_for_selector(f"{BACKWARD} g.node.active[id='{box_id}']", timeout=120_000)


def test_a_pytorch_replay_steps_through_pytorchs_own_nodes(opened):
    pytest.importorskip("torch")
    page = opened("torch.ipynb")
    wait_title(page, r"^Step 1 of \d+: MeanBackward")
    total = int(re.search(r"of (\d+)", title(page)).group(1))
    open_more(page)
    page.get_by_role("button", name="Continue ▶▶").click()
    wait_title(page, rf"^Step {total} of {total}: AccumulateGrad")
    assert page.locator(f"{BACKWARD} g.node.active").count() == 1


SLIDER_STEP = (
    "() => Number([...document.querySelectorAll('.widget-slider')]"
    ".find(s => s.textContent.includes('step')).querySelector('.widget-readout').textContent)"
)


def test_play_runs_a_2001_node_pass_in_the_browser_and_the_panel_catches_up(opened):
    page = opened("play.ipynb")
    page.locator(".widget-play button").first.click()
    page.wait_for_function(f"() => ({SLIDER_STEP})() > 1", timeout=30_000)
    start, started = page.evaluate(SLIDER_STEP), page.evaluate("() => performance.now()")
    page.wait_for_timeout(4_000)
    end, ended = page.evaluate(SLIDER_STEP), page.evaluate("() => performance.now()")
    open_more(page)
    page.get_by_role("button", name="■ Stop").click()  # stop, and stay at that step
    rate = (end - start) / ((ended - started) / 1000)
    print(f"\nPlay on a 2,001-node pass at 25 ms/step: {rate:.1f} steps a second in the page")
    assert end > start
    # Stop goes through the kernel, so the slider may move on a few steps after the
    # click: wait until it stays put, then the panel must show that step.
    shown = wait_until_still(page, SLIDER_STEP)
    wait_title(page, rf"^Step {shown} of 2001: ")  # the kernel kept up: panel = slider


def wait_until_still(page, reading: str, seconds: float = 60.0) -> float:
    """Poll ``reading`` (a JS function) every half second until two reads agree."""
    before = page.evaluate(reading)
    for _ in range(int(seconds * 2)):
        page.wait_for_timeout(500)
        now = page.evaluate(reading)
        if now == before:
            return now
        before = now
    raise AssertionError(f"still moving after {seconds} s: {reading}")
