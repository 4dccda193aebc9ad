"""Measure the lessons' own widgets as a learner on a 13-inch laptop sees them (issue 39).

The browser geometry suite (tests/test_browser_geometry.py) measures widgets its own
notebook makes. This script measures the ones the lessons make: it starts JupyterLab
on loopback, opens each lesson asked for in headless Debian Chromium at 1280 × 800 with
the file browser open, runs all its cells, and for every stepper-like widget on the page
(one with a Next button) steps forward up to 10 times with Next, measuring after each
step with the suite's own checks (``MEASURE`` and ``violations``): the lit node inside
every clipping box, no two texts overlapping, no caption across an edge, node text in
its shape, text of at least 11 px, no panel running off, the widget within its output
area. A widget without a Next button is measured once, as it opens.

Prints one JSON line per lesson: its name, the widgets measured, the violation count and
the violations. Screenshots of each widget after its last step go to ``--shots``.
The server it starts is always stopped (bounded in time, as the tests' harness does).

    PYTHONPATH=$PWD .venv/bin/python scripts/check_lesson_geometry.py
    PYTHONPATH=$PWD .venv/bin/python scripts/check_lesson_geometry.py --lessons 03 11
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from jupyterlab_harness import (  # noqa: E402  (the tests' folder is put on the path above)
    chromium_page,
    run_all_cells,
    running_lab,
    shut_kernels_down,
)
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402
from test_browser_geometry import (  # noqa: E402
    MEASURE,
    NEXT,
    STEPS,
    TO_TOP,
    click_move,
    show_file_browser,
    violations,
)
from test_browser_lessons import LAID_OUT, OwnWorkspace, every_cell_rendered  # noqa: E402

LESSONS = ["01", "03", "04", "11"]
WIDTH, HEIGHT = 1280, 800  # a 13-inch laptop's browser window
SECONDS_PER_LESSON = 240

# Each widget output's outermost view gets the class ``lesson-geo-<k>``; the answer says,
# for each, whether it is stepper-like (a Next button a learner can see).
TAG_WIDGETS = """(names) => {
  // a widget's output area is a panel holding the widget's view (JupyterLab gives it
  // no mime type); an HTML or text output is its own renderer, with no widget inside
  const areas = [...document.querySelectorAll(".jp-Notebook .jp-OutputArea-output.lm-Panel")]
    .filter((area) => area.firstElementChild?.classList.contains("lm-Widget"));
  const found = [];
  areas.forEach((area, k) => {
    const view = area.firstElementChild;
    if (!view || view.getClientRects().length === 0) return;
    view.classList.add(`lesson-geo-${k}`);
    const buttons = [...view.querySelectorAll("button")]
      .filter((b) => b.getClientRects().length > 0 && names.includes(b.textContent.trim()));
    const cell = area.closest(".jp-CodeCell");
    const cells = [...document.querySelectorAll(".jp-Notebook .jp-Cell")];
    found.push({ root: `.lesson-geo-${k}`, cell: cells.indexOf(cell),
                 stepper: buttons.length > 0,
                 code: (cell.querySelector(".jp-InputArea-editor")?.innerText || "")
                   .trim().split("\\n").pop().slice(0, 60) });
  });
  return found;
}"""


def measure_widget(page, widget: dict) -> tuple[list, int]:
    """Step through one widget (when it has Next); the violations after each step and
    the number of measurements taken."""
    root, found, taken = widget["root"], [], 0
    page.evaluate(f"({TO_TOP})", root)
    for step in range(STEPS + 1 if widget["stepper"] else 1):
        if step:
            try:
                if not click_move(page, root, NEXT):
                    break
            except PlaywrightTimeout:
                found.append({"step": step, "Next did not move the widget in 60 s": True})
                break
        seen = page.evaluate(f"({MEASURE})", root)
        taken += 1
        wrong = violations(seen)
        if widget["stepper"] and seen["graphs"] and not seen["lit"]:  # a drawing lights none
            wrong["no lit node"] = seen["litMissing"]
        if wrong:
            found.append({"step": step, **wrong})
    return found, taken


def check_lesson(page, lab, name: str, shots: Path, size: str) -> dict:
    run_all_cells(page, OwnWorkspace(lab), name, timeout_ms=SECONDS_PER_LESSON * 1000)
    show_file_browser(page)
    page.wait_for_function(LAID_OUT, timeout=120_000)
    page.wait_for_timeout(1500)  # widget views render after their outputs arrive
    widgets = page.evaluate(f"({TAG_WIDGETS})", NEXT)
    if not widgets:  # every lesson checked shows widgets: none found is this script's fault
        raise RuntimeError(f"{name}: no widget found on the page")
    report = {"lesson": name, "viewport": size, "widgets": [], "violations": []}
    for widget in widgets:
        found, taken = measure_widget(page, widget)
        label = f"cell {widget['cell']}: {widget['code']}"
        report["widgets"].append({"widget": label, "stepper": widget["stepper"], "measured": taken})
        report["violations"] += [{"widget": label, **v} for v in found]
        page.screenshot(path=str(shots / f"{Path(name).stem}-cell{widget['cell']}.png"))
    report["violation_count"] = len(report["violations"])
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lessons", nargs="+", default=LESSONS, help="number prefixes")
    parser.add_argument("--size", nargs=2, type=int, default=[WIDTH, HEIGHT], help="w h")
    parser.add_argument("--shots", type=Path, default=Path(tempfile.gettempdir()) / "lesson-geo")
    args = parser.parse_args()
    args.shots.mkdir(parents=True, exist_ok=True)
    size = "x".join(map(str, args.size))
    paths = [p for n in args.lessons for p in sorted((ROOT / "lessons").glob(f"{n}_*.ipynb"))]
    with tempfile.TemporaryDirectory(prefix="lesson-geometry-") as folder:
        notebooks, home = Path(folder) / "notebooks", Path(folder) / "jupyter"
        notebooks.mkdir()
        for path in paths:
            shutil.copy(path, notebooks / path.name)
        every_cell_rendered(home)
        with running_lab(notebooks, home) as lab:
            for path in paths:
                with chromium_page(Path(folder) / f"profile-{path.stem}", *args.size) as page:
                    try:
                        report = check_lesson(page, lab, path.name, args.shots, size)
                    except (PlaywrightTimeout, RuntimeError) as error:
                        report = {"lesson": path.name, "error": str(error).splitlines()[0]}
                    finally:
                        shut_kernels_down(lab)
                print(json.dumps(report, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
