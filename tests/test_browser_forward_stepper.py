"""ForwardStepper and JacobianBuilder in a real JupyterLab (headless Chromium, Playwright):
Next moves the panel's op, JVP formula and tangent, and lights the op on the picture; the
Jacobian's pass counters count each click's pass."""

from __future__ import annotations

import pytest
from jupyterlab_harness import BROWSER_TEST
from test_browser_stepper import lab_serving, notebook_runner, wait_title
from test_browser_stepper_asks import wait_text

pytestmark = BROWSER_TEST

FORWARD_PASS = """\
import workbench as wb
x = wb.tensor([0.0, 1.0, 2.0])
v = wb.tensor([1.0, 0.0, 0.0])
stepper = wb.widgets.ForwardStepper(lambda x: (x.sigmoid() * x).exp().sum(), (x,), (v,))
stepper
"""
JACOBIAN = """\
import workbench as wb
def tall(x):  # R² → R⁵
    return (x[0] * x[1]).sin() * wb.arange(1.0, 6.0) + x.exp().sum()
builder = wb.widgets.JacobianBuilder(tall, wb.tensor([0.5, -1.0]))
builder
"""
PICTURE = ".wb-forward-graph .wb-graph"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    notebooks = {"forward.ipynb": [FORWARD_PASS], "jacobian.ipynb": [JACOBIAN]}
    with lab_serving(tmp_path_factory.mktemp("forward"), notebooks) as lab:
        yield lab


@pytest.fixture
def opened(lab, tmp_path):
    with notebook_runner(lab, tmp_path / "chromium-profile", width=1400, height=1000) as run:
        yield run


def panel_text(page) -> str:
    return page.locator(".wb-tangent-step").inner_text()


def test_next_shows_each_ops_jvp_and_tangent_and_lights_it(opened):
    page = opened("forward.ipynb", f"{PICTURE} g.node.active")
    wait_title(page, r"^Step 1 of 4: sigmoid")
    text = panel_text(page)
    assert "ẏ = ẋ · y · (1 − y)" in text
    assert "[0.25" in text  # σ'(0) · 1: the tangent's first element
    lit = page.locator(f"{PICTURE} g.node.active").get_attribute("id")
    page.get_by_role("button", name="Next ▶").click()
    wait_title(page, r"^Step 2 of 4: mul")
    assert "ẏ = ẋ · y · (1 − y)" not in panel_text(page)
    assert "[0.5" in panel_text(page)  # (σ(x)·x)' at 0 along e₀: σ(0) = 0.5
    page.wait_for_function(
        "([sel, old]) => document.querySelector(sel + ' g.node.active')?.id !== old",
        arg=[PICTURE, lit],
        timeout=30_000,
    )
    page.get_by_role("button", name="Next ▶").click()
    wait_title(page, r"^Step 3 of 4: exp")
    page.get_by_role("button", name="Next ▶").click()
    wait_title(page, r"^Step 4 of 4: sum")
    # the title and the button's state reach the page in separate messages: wait for both
    page.wait_for_function(
        "() => [...document.querySelectorAll('button')]"
        ".find(b => b.textContent.trim() === 'Next ▶')?.disabled === true",
        timeout=30_000,
    )
    page.get_by_role("button", name="◀ Prev").click()
    wait_title(page, r"^Step 3 of 4: exp")


def test_the_jacobians_pass_counters_count_each_click(opened):
    page = opened("jacobian.ipynb", ".wb-pass-count")
    count = page.locator(".wb-pass-count")
    assert "Forward passes run: 0. Backward passes run: 0." in count.inner_text()
    page.get_by_role("button", name="forward pass ▶ (a column)").click()
    wait_text(page, ".wb-pass-count", "Forward passes run: 1.")
    page.get_by_role("button", name="run all passes").click()
    wait_text(page, ".wb-pass-count", "The two matrices are equal.")
    assert "Forward passes run: 2. Backward passes run: 5." in count.inner_text()
    assert "2 of 2 passes" in page.locator(".wb-jacfwd").inner_text()
    assert "5 of 5 passes" in page.locator(".wb-jacrev").inner_text()
    assert "·" not in page.locator(".wb-jacrev").inner_text()
