"""Predict mode, a comparison and a view that follows the action, in real JupyterLab
(headless Debian Chromium, Playwright).

Measured, not looked at: text on screen is never under 11 px (at 100% and after "fit"),
the pictures shown side by side never overlap each other or the panel, and after every
step of a 200-node pass the lit node is inside the visible part of its picture.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from jupyterlab_harness import (
    BROWSER_TEST,
    running_lab,
    write_notebook,
)
from test_browser_stepper import (
    BACKWARD,
    FORWARD,
    notebook_runner,
    open_more,
    title,
    wait_title,
)

pytestmark = BROWSER_TEST

SMALL = """\
import workbench as wb
x = wb.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True, name="x")
w = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="w")
b = wb.tensor(0.1, requires_grad=True, name="b")
loss = wb.sigmoid(x * w + b).sum()
"""
PREDICT = "quiz = wb.widgets.BackwardStepper(loss, predict=True)\nquiz"
COMPARE = """\
import workbench as wb


class Exp(wb.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return 2 * grad * y  # a factor 2 too many


x = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="x")
w = wb.tensor([1.5, -0.5, 0.25], requires_grad=True, name="w")
compared = wb.widgets.CompareStepper(
    wb.tanh(x.exp() * w).sum(), wb.tanh(Exp.apply(x) * w).sum()
)
compared
"""
SIDE_BY_SIDE = """\
import workbench as wb
x = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="x")
ws = [wb.tensor([1.5, -0.5, 0.25], requires_grad=True, name=f"w{i}") for i in range(6)]
h = x
for w in ws:
    h = wb.tanh(h * w) + h
stepper = wb.widgets.BackwardStepper(h.sum(), view="both")
stepper
"""
CHAIN_200 = """\
import workbench as wb
x = wb.tensor([0.5], requires_grad=True, name="x")
ws = [wb.tensor([1.0], requires_grad=True, name=f"w{i}") for i in range(100)]
h = x
for i, w in enumerate(ws):  # a tall picture of about a hundred vertices, none alike
    h = h * w if i % 2 else h + w
stepper = wb.widgets.BackwardStepper(h.sum())
print("steps:", stepper.total)
stepper
"""

PLAY = """\
import workbench as wb
x = wb.tensor([0.5], requires_grad=True, name="x")
y = x
for _ in range(30):
    y = y * 1.01
stepper = wb.widgets.BackwardStepper(y.sum(), interval_ms=150)
stepper
"""

SCREEN_PX = "ts => ts.map(t => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a)"
RECT = "e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }"
LIT_INSIDE = """(sel) => {
  const box = document.querySelector(sel);
  const g = box && box.querySelector("g.node.active");
  if (!g) return null;
  const shape = g.querySelector("polygon, ellipse, path") || g;  // the node's outline
  const seen = box.getBoundingClientRect(), lit = shape.getBoundingClientRect();
  const inside = lit.left >= seen.left - 1 && lit.right <= seen.right + 1 &&
    lit.top >= seen.top - 1 && lit.bottom <= seen.bottom + 1;
  return [box.dataset.active, inside, box.scrollTop];
}"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("asks")
    notebooks = folder / "notebooks"
    notebooks.mkdir()
    write_notebook(notebooks / "predict.ipynb", [SMALL, PREDICT])
    write_notebook(notebooks / "compare.ipynb", [COMPARE])
    write_notebook(notebooks / "both.ipynb", [SIDE_BY_SIDE])
    write_notebook(notebooks / "chain.ipynb", [CHAIN_200])
    write_notebook(notebooks / "play.ipynb", [PLAY])
    with running_lab(notebooks, folder / "jupyter") as lab:
        yield lab
    assert lab.process.returncode == 0


@pytest.fixture
def opened(lab, tmp_path):
    with notebook_runner(lab, tmp_path / "chromium-profile", width=1000, height=1100) as run:
        yield run


def overlap(a: list, b: list) -> float:
    """The area two screen rectangles share."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return max(width, 0) * max(height, 0)


def wait_text(page, selector: str, words: str) -> None:
    page.wait_for_function(
        "([s, w]) => (document.querySelector(s)?.textContent || '').includes(w)",
        arg=[selector, words],
        timeout=60_000,
    )


def sigmoid_slopes() -> np.ndarray:
    """What SMALL's sigmoid sends back for ȳ = 1: σ'(x * w + b), from PyTorch."""
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    z = (x * torch.tensor([0.5, -1.0, 2.0]) + 0.1).requires_grad_()
    torch.sigmoid(z).sum().backward()
    return z.grad.numpy()


def typed(values: np.ndarray) -> str:
    """Values as a learner types them: four decimals."""
    return repr(np.round(values.astype(np.float64), 4).tolist())


def test_predict_mode_asks_checks_and_reveals(opened):
    page = opened("predict.ipynb", f"{BACKWARD} g.node.active")
    assert "predict it" in page.locator(".wb-step").inner_text()
    assert page.get_by_role("button", name="Next ▶").is_disabled()  # no skipping the question
    assert "Step 1: SumBackward0" in page.locator(".wb-question").inner_text()
    page.locator(".wb-quiz input").fill("[[1, 1, 1], [1, 1, 1]]")
    page.get_by_role("button", name="Check", exact=True).click()
    wait_text(page, ".wb-verdict", "score 1 of 1")
    assert page.locator(".wb-verdict").inner_text().startswith("✔")
    assert "predict it" not in page.locator(".wb-step").inner_text()
    page.get_by_role("button", name="Next ▶").click()
    wait_title(page, r"^Step 2 of \d+: SigmoidBackward0")
    assert "rtol 1e-3" in page.locator(".wb-question").inner_text()  # the tolerance, stated
    page.locator(".wb-quiz input").fill(typed(2 * sigmoid_slopes()))  # a factor 2 too many
    page.get_by_role("button", name="Check", exact=True).click()
    wait_text(page, ".wb-verdict", "one more try")
    verdict = page.locator(".wb-verdict").inner_text()
    assert verdict.startswith("✘") and "2 times the expected value" in verdict, verdict
    assert "score 1 of 1" in verdict and "predict it" in page.locator(".wb-step").inner_text()
    page.locator(".wb-quiz input").fill(typed(sigmoid_slopes()))  # four digits, as shown
    page.get_by_role("button", name="Check", exact=True).click()
    wait_text(page, ".wb-verdict", "score 2 of 2")
    assert page.locator(".wb-verdict").inner_text().startswith("✔")
    page.get_by_role("button", name="Next ▶").click()
    wait_title(page, r"^Step 3 of \d+: AddBackward0")
    page.get_by_role("button", name="Show me", exact=True).click()
    wait_text(page, ".wb-verdict", "score 2 of 3")
    assert "predict it" not in page.locator(".wb-step").inner_text()
    assert title(page).startswith("Step 3 of")


def test_a_comparison_runs_to_the_difference_side_by_side(opened):
    page = opened("compare.ipynb", ".wb-compare-b .wb-graph g.node.active")
    assert "first difference is ahead" in page.locator(".wb-compare-note").inner_text()
    page.get_by_role("button", name="Run to difference ▶▶").click()
    wait_text(page, ".wb-compare-note", "2 times the built-in's")
    for side in "ab":  # the node where they part, outlined in both pictures
        assert page.locator(f".wb-compare-{side} .wb-graph g.node.differs").count() == 1
    assert "your Exp" in page.locator(".wb-compare-values").inner_text()
    titles = page.locator(".wb-step .wb-title").all_inner_texts()
    assert [t.split(":")[0] for t in titles] == ["Step 5 of 6", "Step 5 of 6"], titles
    assert "ExpBackward0" in titles[0] and "ExpBackward" in titles[1]
    a, b = (page.locator(f".wb-compare-{side}").evaluate(RECT) for side in "ab")
    assert overlap(a, b) == 0, (a, b)
    scrolls = "e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX)"
    assert all(page.locator(".wb-panel").evaluate_all(f"ps => ps.map({scrolls})"))
    pictures = [page.locator(f".wb-compare-{side} .wb-graph").evaluate(RECT) for side in "ab"]
    panels = [page.locator(f".wb-compare-{side} .wb-panel").evaluate(RECT) for side in "ab"]
    assert overlap(*pictures) == 0 and overlap(*panels) == 0
    assert overlap(pictures[0], panels[1]) == 0 and overlap(pictures[1], panels[0]) == 0
    sizes = page.locator(".wb-graph svg text").evaluate_all(SCREEN_PX)
    assert min(sizes) >= 11, sizes


def test_side_by_side_pictures_never_overlap_and_fit_keeps_text_readable(opened):
    page = opened("both.ipynb", f"{FORWARD} g.node")
    boxes = [page.locator(sel).evaluate(RECT) for sel in (FORWARD, BACKWARD, ".wb-panel")]
    forward, backward, panel = boxes
    assert overlap(forward, backward) == 0 and overlap(backward, panel) == 0, boxes
    assert overlap(forward, panel) == 0, boxes
    for fit in page.locator(".wb-zoom button", has_text="fit").all():
        fit.click()
    page.wait_for_timeout(500)
    sizes = page.locator(".wb-graph svg text").evaluate_all(SCREEN_PX)
    assert min(sizes) >= 11 - 0.01, sizes  # fit stops shrinking at 11 px: the box scrolls
    boxes = [page.locator(sel).evaluate(RECT) for sel in (FORWARD, BACKWARD, ".wb-panel")]
    assert overlap(boxes[0], boxes[1]) == 0 and overlap(boxes[1], boxes[2]) == 0, boxes


def test_the_lit_node_stays_in_view_at_every_step_of_a_200_node_pass(opened):
    page = opened("chain.ipynb", f"{BACKWARD} g.node.active")
    total = int(page.locator(".jp-OutputArea-output").first.inner_text().split()[-1])
    assert total >= 200
    out_of_view, lit, scrolled = [], set(), 0
    for step in range(1, total + 1):
        if step > 1:
            page.get_by_role("button", name="Next ▶").click()
            wait_title(page, rf"^Step {step} of ")
        page.wait_for_function(f"({LIT_INSIDE})('{BACKWARD}') !== null", timeout=30_000)
        active, inside, top = page.evaluate(f"({LIT_INSIDE})('{BACKWARD}')")
        lit.add(active)
        scrolled = max(scrolled, top)
        if not inside:
            out_of_view.append((step, active))
    assert out_of_view == []
    assert len(lit) > 90 and scrolled > 1000  # the light went far down: the box followed it


def test_play_pauses_and_stop_stays_at_the_step_it_reached(opened):
    page = opened("play.ipynb", f"{BACKWARD} g.node.active")
    play = page.locator(".wb-play button").first
    assert not page.locator(".wb-play button").nth(1).is_visible()  # Play's own ■ (to step 1)
    play.click()
    page.wait_for_selector(".wb-play button i.fa-pause", timeout=30_000)  # ▶ became ⏸
    page.wait_for_function(
        "() => document.querySelector('.wb-step .wb-title').textContent"
        ".match(/Step (\\d+)/)[1] > 4",
        timeout=60_000,
    )
    open_more(page)
    page.get_by_role("button", name="■ Stop").click()
    page.wait_for_selector(".wb-play button i.fa-play", timeout=30_000)
    page.wait_for_timeout(1000)  # the panel catches up with where Play stopped
    stopped = title(page)
    lit = page.locator(BACKWARD).evaluate("b => b.dataset.active")
    page.wait_for_timeout(1000)
    assert title(page) == stopped and not stopped.startswith("Step 1 of")
    assert page.locator(BACKWARD).evaluate("b => b.dataset.active") == lit  # it stayed
