"""Graphs laid out in the learner's browser: JupyterLab in headless Debian Chromium.

- The stepper draws and lights its nodes with a kernel from the core install (a fresh
  venv holding the wheel, its core dependencies and ipykernel: tests/core_env.py), so
  no pygraphviz and no `dot` anywhere the kernel can reach; the notebook checks that.
- (Every lesson's Run All, with no stderr box and every graph laid out by the page:
  tests/test_browser_lessons.py.)
- A 2,000-node chain: how long until the stepper shows it (printed; run with ``-s``).
"""

from __future__ import annotations

import time

from jupyterlab_harness import (
    BROWSER_TEST,
    chromium_page,
    click_run_all,
    open_notebook,
    run_all_cells,
    running_lab,
    write_notebook,
)

from tests.core_env import add_kernel

pytestmark = BROWSER_TEST

STDERR = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
LAID_OUT = (
    "() => { const g = [...document.querySelectorAll('.wb-graph')];"
    " return g.every(e => ['done', 'empty', 'failed'].includes(e.dataset.layout)); }"
)
CORE_CHECK = """\
import importlib.util, shutil, sys
assert shutil.which("dot") is None, shutil.which("dot")
assert importlib.util.find_spec("pygraphviz") is None
import workbench as wb
print("core kernel:", sys.executable, wb.__file__)
"""
GRAPH = """\
x = wb.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True, name="x")
w = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="w")
loss = wb.sigmoid(x * w).sum()
"""
CHAIN = """\
import time
import workbench as wb
x = wb.tensor([0.5], requires_grad=True, name="x")
y = x
for _ in range(1999):
    y = y * 1.0001
loss = y.sum()            # 2,000 ops: a 2,001-node backward graph
"""
CHAIN_STEPPER = """\
started = time.perf_counter()
stepper = wb.widgets.BackwardStepper(loss)
print(f"kernel: stepper built in {time.perf_counter() - started:.2f} s")
stepper
"""
UNFOLDED = """\
wb.widgets.GraphView(dot=wb.viz.draw(loss, fold_limit=None).dot)  # all 2,002 vertices
"""
TOO_SLOW = """\
import random
pick = random.Random(0).randrange  # 300 vertices, 3,000 random edges: seconds of layout
tangle = "; ".join(f"v{pick(300)} -> v{pick(300)}" for _ in range(3000))
wb.widgets.GraphView(dot="digraph { " + tangle + " }", layout_limit_s=0.2)  # stopped
"""
AFTER = """\
wb.widgets.GraphView(dot=wb.viz.draw(loss, kind="forward").dot)  # a fresh worker draws it
"""
# Started before Run All, so that it cannot miss the layout however fast the worker is:
# while the unfolded graph is laid out, how long the page's main thread goes without
# running a 10 ms timer (a layout on the main thread would stall it for seconds). Only
# gaps between two ticks that both saw "pending" count: the gap into the first one may
# hold the page drawing the stepper.
WATCH_MAIN_THREAD = """() => {
  const watch = (window.wbWatch = { worst: 0, ticks: 0, said: null, state: null });
  let last = performance.now(), before = false;
  const tick = () => {
    const now = performance.now();
    const big = document.querySelectorAll('.wb-graph')[1];
    const pending = big !== undefined && big.dataset.layout === 'pending';
    if (pending && before) {
      watch.worst = Math.max(watch.worst, now - last);
      watch.ticks += 1;
    }
    if (pending) watch.said = watch.said || big.previousSibling.textContent;
    if (before && !pending) {
      watch.state = big.dataset.layout;
      watch.ms = Number(big.dataset.layoutMs);
      return;
    }
    before = pending;
    last = now;
    setTimeout(tick, 10);
  };
  setTimeout(tick, 10);
}"""
WATCHED = "() => window.wbWatch.state !== null"


def active_id(page) -> str:
    return page.locator(".wb-graph").first.get_attribute("data-active") or ""


def test_stepper_draws_and_highlights_with_a_core_only_kernel(core_venv, tmp_path):
    home = tmp_path / "jupyter"
    kernel = add_kernel(core_venv, home / "data" / "kernels")  # JUPYTER_DATA_DIR's kernels
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    cells = [CORE_CHECK, GRAPH, "stepper = wb.widgets.BackwardStepper(loss)\nstepper"]
    write_notebook(notebooks / "core.ipynb", cells, kernelspec=kernel)
    with running_lab(notebooks, home) as lab:
        with chromium_page(tmp_path / "chromium-profile") as page:
            run_all_cells(page, lab, "core.ipynb", timeout_ms=180_000)
            page.wait_for_selector(".wb-graph g.node.active", timeout=60_000)
            said = page.locator(".jp-OutputArea-output").first.inner_text()
            assert f"core kernel: {core_venv.python}" in said  # really the core venv
            assert str(core_venv.folder) in said.split()[-1]  # and its installed wheel
            first = active_id(page)
            assert page.locator(".wb-graph g.node.active").get_attribute("id") == first
            page.get_by_role("button", name="Next ▶").click()
            page.wait_for_function(
                f"() => !['', '{first}'].includes("
                "document.querySelector('.wb-graph').dataset.active)",
                timeout=30_000,
            )
            lit = page.locator(".wb-graph g.node.active")
            assert lit.count() == 1 and lit.get_attribute("id") == active_id(page) != first
            done = page.locator(f".wb-graph g.node.done[id='{first}']")
            assert done.count() == 1  # the step before is greyed
            assert page.locator(STDERR).count() == 0


def test_time_to_show_a_2000_node_chain_in_the_stepper(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    cells = [CHAIN, CHAIN_STEPPER, UNFOLDED, TOO_SLOW, AFTER]
    write_notebook(notebooks / "chain.ipynb", cells)
    with running_lab(notebooks, tmp_path / "jupyter") as lab:
        with chromium_page(tmp_path / "chromium-profile") as page:
            open_notebook(page, lab, "chain.ipynb", timeout_ms=120_000)
            page.evaluate(WATCH_MAIN_THREAD)
            started = time.monotonic()
            click_run_all(page, timeout_ms=240_000)
            page.wait_for_selector(".wb-graph", state="attached", timeout=120_000)
            attached = time.monotonic()
            page.wait_for_selector(".wb-graph g.node.active", timeout=120_000)
            lit = time.monotonic()
            layout_ms = int(page.locator(".wb-graph").first.get_attribute("data-layout-ms"))
            vertices = page.locator(".wb-graph").first.locator("g.node").count()
            said = ".jp-OutputArea-output pre"
            kernel = page.locator(said, has_text="kernel: stepper built in").inner_text()
            page.wait_for_function(WATCHED, timeout=240_000)
            big = page.evaluate("() => window.wbWatch")
            held = page.locator(".wb-graph-status").nth(1).inner_text()
            clicked = time.monotonic()
            page.get_by_role("button", name="Draw all").click()
            page.wait_for_function(
                "() => document.querySelectorAll('.wb-graph')[1].dataset.layout === 'done'",
                timeout=120_000,
            )
            page.evaluate("() => new Promise((r) => requestAnimationFrame(() => r()))")
            drawn_in = time.monotonic() - clicked
            drawn = page.locator(".wb-graph").nth(1).locator("g.node").count()
            page.wait_for_function(LAID_OUT, timeout=120_000)
            states = page.eval_on_selector_all(".wb-graph", "gs => gs.map(g => g.dataset.layout)")
            stopped = page.locator(".wb-graph-status").nth(2).inner_text()
    print(
        f"\n2,000-node chain: Run All to the lit stepper {lit - started:.1f} s "
        f"(widget on the page after {attached - started:.1f} s; {kernel.strip()}); "
        f"page: widget to lit graph {lit - attached:.2f} s, of which the worker's layout "
        f"{layout_ms} ms for {vertices} vertices (folded).\n"
        f"Unfolded, {drawn} vertices: worker's layout {big['ms'] / 1000:.1f} s, meanwhile "
        f"the page's longest stall {big['worst']:.0f} ms ({big['ticks']} timer ticks); "
        f"held back, then drawn on a click in {drawn_in:.1f} s"
    )
    assert vertices <= 160  # folded to at most FOLD_LIMIT vertices (plus notes)
    assert lit - started < 120
    assert big["said"] == "laying out…", big  # the page said so while it waited
    assert big["state"] == "held" and "2002 vertices" in held and drawn > 2000
    # The page kept running its timers meanwhile. A layout on the main thread is one
    # synchronous call: no tick while pending, or one stall as long as the layout itself.
    assert big["ticks"] >= 10 and big["worst"] < 1000 and 2 * big["worst"] < big["ms"], big
    assert states == ["done", "done", "failed", "done"], states
    assert "took longer than 0.2 s, so it was stopped" in stopped, stopped
