"""Labels that fit their boxes, and values that wait for their step, measured in real
JupyterLab (headless Debian Chromium, Playwright).

- Every line of every node's label lies inside its node's box, in both pictures of a
  stepper and in a folded chain's picture: the page's font is wider than Graphviz's
  guess, so a line too wide is cut short with "…" and keeps its whole text in an SVG
  <title> (shown on hover).
- A gradient appears on a node only from the step that delivers it: with a .grad left
  over from an earlier backward(), no text of either picture shows a leaf's .grad before
  its AccumulateGrad has run, and its caption is there from that step on.
"""

from __future__ import annotations

import ast

import pytest
from jupyterlab_harness import (
    BROWSER_TEST,
    running_lab,
    write_notebook,
)
from test_browser_stepper import BACKWARD, FORWARD, notebook_runner, wait_title

pytestmark = BROWSER_TEST

LEFT_OVER = """\
import workbench as wb
x = wb.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True, name="x")
w = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="w")
b = wb.tensor(0.1, requires_grad=True, name="b")
loss = wb.sigmoid(x * w + b).sum()
loss.backward(retain_graph=True)  # every leaf has a .grad before the stepper starts
stepper = wb.widgets.BackwardStepper(loss, view="both")
delivered = {}  # leaf name -> the step of its AccumulateGrad
for k in range(1, stepper.total + 1):
    stepper.go(k)
    if stepper.record.leaf is not None:
        delivered[stepper.record.leaf.name] = k
print(delivered)
stepper.go(1)
stepper
"""
FOLDED = """\
import workbench as wb
x = wb.tensor([0.5], requires_grad=True, name="x")
h = x
for _ in range(200):
    h = wb.tanh(h)
stepper = wb.widgets.BackwardStepper(h.sum())
stepper
"""

# Per picture: the lines of labels outside their node's box, and the lines cut short.
LABELS = """(sel) => {
  const box = document.querySelector(sel);
  if (!box || box.dataset.labelsFit !== "yes") return null;
  const outside = [], cut = [];
  for (const g of box.querySelectorAll("g.node")) {
    const room = g.querySelector("polygon, ellipse, path").getBBox();
    for (const t of g.querySelectorAll("text:not(.wb-caption)")) {
      const b = t.getBBox();
      if (b.x < room.x - 0.5 || b.x + b.width > room.x + room.width + 0.5 ||
          b.y < room.y - 0.5 || b.y + b.height > room.y + room.height + 0.5) {
        outside.push([g.id, t.textContent, b.width, room.width]);
      }
      const hover = t.querySelector("title");
      if (hover) cut.push([t.firstChild.textContent, hover.textContent]);
    }
  }
  return [outside, cut, box.querySelectorAll("g.node").length];
}"""
TEXTS = "(sel) => Array.from(document.querySelectorAll(sel + ' svg text')).map(t => t.textContent)"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("labels")
    notebooks = folder / "notebooks"
    notebooks.mkdir()
    write_notebook(notebooks / "left_over.ipynb", [LEFT_OVER])
    write_notebook(notebooks / "folded.ipynb", [FOLDED])
    with running_lab(notebooks, folder / "jupyter") as lab:
        yield lab
    assert lab.process.returncode == 0


@pytest.fixture
def opened(lab, tmp_path):
    with notebook_runner(lab, tmp_path / "chromium-profile", width=1000, height=1100) as run:
        yield run


def measured(page, selector: str):
    page.wait_for_function(f"({LABELS})('{selector}') !== null", timeout=60_000)
    return page.evaluate(f"({LABELS})('{selector}')")


def assert_cut_lines_keep_their_text(cut: list) -> None:
    for shown, whole in cut:
        assert shown.endswith("…") and whole.startswith(shown[:-1]) and len(whole) > len(shown) - 1


def test_every_label_fits_its_box_and_a_cut_one_keeps_its_text_on_hover(opened):
    page = opened("left_over.ipynb", f"{FORWARD} g.node")
    cut_somewhere = []
    for selector in (BACKWARD, FORWARD):
        outside, cut, nodes = measured(page, selector)
        assert nodes > 5 and outside == [], outside
        assert_cut_lines_keep_their_text(cut)
        cut_somewhere += cut
    formula = "x̄ = broadcast ȳ back over the summed axes"
    texts = page.evaluate(f"({TEXTS})('{BACKWARD}')")
    assert formula in texts or any(whole == formula for _, whole in cut_somewhere), texts

    page = opened("folded.ipynb", f"{BACKWARD} g.node.fold")
    outside, cut, nodes = measured(page, BACKWARD)
    assert outside == [], outside
    assert_cut_lines_keep_their_text(cut)
    summary = [whole for _, whole in cut] + page.evaluate(f"({TEXTS})('{BACKWARD}')")
    assert any("× [TanhBackward0" in text for text in summary), summary


def test_a_leafs_grad_shows_only_from_the_step_that_delivers_it(opened):
    page = opened("left_over.ipynb", f"{FORWARD} g.node")
    delivered = ast.literal_eval(page.locator(".jp-OutputArea-output").first.inner_text())
    assert sorted(delivered) == ["b", "w", "x"] and max(delivered.values()) == 7, delivered
    for step in range(1, 8):
        if step > 1:
            page.get_by_role("button", name="Next ▶").click()
            wait_title(page, rf"^Step {step} of 7")
        page.wait_for_function(
            f"document.querySelector('{BACKWARD}').dataset.active !== ''", timeout=30_000
        )
        page.wait_for_timeout(300)  # the captions come with the step's message
        backward = page.evaluate(f"({TEXTS})('{BACKWARD}')")
        forward = page.evaluate(f"({TEXTS})('{FORWARD}')")
        assert not any(t.startswith("grad ") for t in backward + forward), (step, forward)
        for leaf, at in delivered.items():
            shown = any(t.startswith(f"{leaf}.grad") for t in backward)
            assert shown == (step >= at), (step, leaf, backward)
