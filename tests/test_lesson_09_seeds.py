"""Lesson 9's claims about training hold whatever the seed, not only for the lesson's own.

The lesson starts with ``wb.manual_seed(0)``; a learner who changes it (the text invites
them to) must find every printed claim and assert still true. This runs the lesson's code
from the first cell to the end of section 9 (momentum, its fair comparison, the doubled
step, gradients that vanish and explode) for other seeds, in one namespace as a kernel
would, with the exercises' solutions in place of a learner's answers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from workbench.teaching import course

LESSON = Path(__file__).resolve().parent.parent / "lessons" / "09_training_a_network.ipynb"
# Seeds besides the lesson's own 0: three in `make test`, twenty in `make fuzz` (the long
# run: scripts/fuzz.sh sets HYPOTHESIS_PROFILE=fuzz).
SEEDS = list(range(1, 21 if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" else 4))
LAST_SECTION = "## 10. Gradient accumulation"


def cells_through_section_9() -> list[str]:
    """The code cells before section 10, less the exercises' buttons and graded checks."""
    sources = []
    for cell in json.loads(LESSON.read_text())["cells"]:
        text = course.cell_text(cell)
        if cell["cell_type"] == "markdown" and text.startswith(LAST_SECTION):
            return sources
        meta = course.nbgrader_meta(cell)
        if cell["cell_type"] != "code" or meta.get("grade") or "Exercise(" in text:
            continue
        sources.append(text)
    raise AssertionError(f"lesson 9 has no heading {LAST_SECTION!r}")


@pytest.mark.parametrize("seed", SEEDS)
def test_sections_1_to_9_hold_for_another_seed(seed, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    sources = cells_through_section_9()
    assert "wb.manual_seed(0)" in sources[0]
    assert not any("manual_seed" in s for s in sources[1:])  # one seed, set once
    sources[0] = sources[0].replace("wb.manual_seed(0)", f"wb.manual_seed({seed})")
    namespace: dict = {"__name__": "__lesson__"}
    for source in sources:
        exec(compile(source, f"lesson 9, seed {seed}", "exec"), namespace)  # the asserts inside
    assert namespace["sick"].verdict.kind == "vanishing"  # the last section did run
    for name in ("monitor", "sick", "cured", "diverging", "calm"):
        namespace[name].close()
