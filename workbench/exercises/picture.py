"""Pictures for a wrong answer: a heat map of the wrong elements, a graph with a node lit.

Both are HTML, so they show in any notebook front end and in nbgrader's feedback,
with no plotting library. The heat map is two tables side by side, your values and
the expected ones, one cell per element; your wrong ones are in red (darker: further
from the expected value; hover a cell for the expected value). Arrays with more
than two dimensions show one 2-D slice per leading index, up to a few.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import numpy as np

MAX_SLICES = 4  # 2-D slices of a big array shown in a heat map
MAX_CELLS = 400  # elements shown in a heat map, at most


def heat_map_html(got, expected, wrong, title: str = "") -> str:
    """Two HTML tables side by side: your values (red where ``wrong``) and the expected ones."""
    got, expected, wrong = np.asarray(got), np.asarray(expected), np.asarray(wrong, dtype=bool)
    if got.shape != expected.shape or got.shape != wrong.shape or got.size > MAX_CELLS:
        return ""
    distance = np.nan_to_num(np.abs(got - expected), nan=0.0, posinf=0.0)
    scale = float(np.max(distance[wrong], initial=0.0)) or 1.0
    parts = [
        f"<p><b>{html.escape(title)}</b>: your values beside the expected ones; the "
        "elements that differ are in red</p>"
    ]
    for index, (g, e, w) in slices(got, expected, wrong):
        caption = "" if index is None else f"[{', '.join(str(i) for i in index)}, :, :]"
        yours = table_html(g, e, w, scale, f"yours {caption}".strip())
        theirs = table_html(e, e, np.zeros_like(w), scale, f"expected {caption}".strip())
        parts.append(f'<div style="display:flex;flex-wrap:wrap;gap:24px">{yours}{theirs}</div>')
    count = int(np.prod(got.shape[:-2])) if got.ndim > 2 else 1
    if count > MAX_SLICES:
        parts.append(
            f"<p>({MAX_SLICES} of the {count} slices, those with wrong elements first)</p>"
        )
    return '<div class="wb-heatmap">' + "".join(parts) + "</div>"


def slices(got: np.ndarray, expected: np.ndarray, wrong: np.ndarray) -> list:
    """``(leading index or None, 2-D got, 2-D expected, 2-D wrong)``, slices with errors first."""
    if got.ndim <= 2:
        return [(None, tuple(np.atleast_2d(a) for a in (got, expected, wrong)))]
    lead = got.shape[:-2]
    indices = sorted(np.ndindex(lead), key=lambda i: not wrong[i].any())[:MAX_SLICES]
    return [(i, (got[i], expected[i], wrong[i])) for i in indices]


def table_html(got, expected, wrong, scale: float, caption: str) -> str:
    rows = []
    for r in range(got.shape[0]):
        cells = []
        for c in range(got.shape[1]):
            cells.append(cell_html(got[r, c], expected[r, c], wrong[r, c], scale))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    head = f'<caption style="text-align:left">{html.escape(caption)}</caption>'
    style = "border-collapse:collapse;margin:4px 0;font-family:monospace;font-size:12px"
    return f'<table style="{style}">{head}{"".join(rows)}</table>'


def cell_html(got: float, expected: float, wrong: bool, scale: float) -> str:
    # Colours set on every cell: a notebook's dark theme or nbgrader's feedback page may
    # give rows backgrounds of their own, and the values must stay readable on them.
    style = "border:1px solid #ccc;padding:2px 6px;text-align:right;background:#fff;color:#000"
    title = f"expected {expected:.4g}"
    if wrong:
        distance = abs(got - expected)
        strength = 1.0 if not np.isfinite(distance) else min(1.0, distance / scale)
        # From pale to mid red, with black bold text: readable (contrast above 4.5) at
        # every strength, on a white page and printed.
        style += f";background:rgba(211,47,47,{0.2 + 0.4 * strength:.2f});font-weight:bold"
        title = f"expected {expected:.4g}, got {got:.4g}"
    return f'<td style="{style}" title="{html.escape(title)}">{got:.4g}</td>'


def graph_picture(draw: Callable[[], object], text: str) -> Callable[[], str]:
    """A callable that draws the graph as SVG, or falls back to ``text`` when it cannot.

    ``draw`` returns a :class:`workbench.viz.Graph`; rendering needs Graphviz, which may
    be missing: then the text (the backward order, the wrong node marked) shows instead.
    """

    def picture() -> str:
        try:
            svg = draw().svg()
        except Exception:  # no renderer, or any drawing problem: the text says it all
            return f"<pre>{html.escape(text)}</pre>"
        return f'<div class="wb-exercise-graph">{svg}</div><pre>{html.escape(text)}</pre>'

    return picture
