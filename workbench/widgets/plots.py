"""Matplotlib figures turned into PNG bytes for an ``ipywidgets.Image``.

Explorers redraw by replacing the Image's bytes: no Output widget is cleared, so
nothing flickers, and no pyplot state leaks into the learner's notebook.
"""

from __future__ import annotations

import io


def new_figure(width: float = 7.0, height: float = 3.2):
    """A figure that is not registered with pyplot (so it never shows by itself)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def figure_png(fig) -> bytes:
    """Render ``fig`` to PNG bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()
