"""LiveGraph: the forward graph growing while the learner runs cells.

It listens to the event bus through a :class:`~workbench.trace.Trace` (so it keeps
summaries, never tensors: it cannot keep a graph alive) and redraws after each cell
(IPython's ``post_run_cell``), not after each op: one new DOT text per cell, laid out
in the browser.
Vertices added since the last picture get the class ``new``.
"""

from __future__ import annotations

import ipywidgets as widgets

from ..trace import Trace
from .closing import ClosingBox
from .graphview import GraphView
from .panel import STYLE, message_html


def _ipython():
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - ipykernel brings IPython
        return None
    return get_ipython()


class LiveGraph(ClosingBox):
    """Shows the forward graph of every op run since it was created (or cleared).

    Outside IPython, or with ``auto=False``, call :meth:`refresh` to redraw.
    :meth:`stop` stops listening; ``close()`` stops too, and closes every part of it.
    """

    def __init__(self, auto: bool = True) -> None:
        super().__init__()
        self.trace = Trace().start()
        self.listening = True
        self.view = GraphView()
        self.status = widgets.HTML()
        self.clear_button = widgets.Button(description="Clear", tooltip="forget the ops so far")
        self._on_click(self.clear_button, lambda _: self.clear())
        self._drawn: set[str] = set()
        self._seen_ops = 0
        self._shell = _ipython() if auto else None
        if self._shell is not None:
            self._shell.events.register("post_run_cell", self._after_cell)
        controls = widgets.HBox([self.clear_button, self.status])
        self.children = [widgets.HTML(STYLE), controls, self.view]
        self.refresh()

    @property
    def ops(self) -> list[dict]:
        """The forward ``op_recorded`` records heard so far."""
        return [r for r in self.trace.of_kind("op_recorded") if not r["in_backward"]]

    def refresh(self) -> None:
        """Redraw if ops were recorded since the last picture."""
        ops = self.ops
        if len(ops) == self._seen_ops and self._drawn:
            return
        self._seen_ops = len(ops)
        if not ops:
            self.status.value = "No ops yet: run a cell that computes with tensors."
            return
        from .. import viz

        try:
            graph = viz.draw(self.trace, kind="forward")
        except (ValueError, RuntimeError) as err:  # a message, not a traceback
            self.status.value = message_html(str(err))
            return
        vertices = set(graph.model.vertices)
        new = vertices - self._drawn
        self.view.dot = graph.dot
        self.view.classes = {vid: "new" for vid in sorted(new)}
        self._drawn = vertices
        self.status.value = f"{len(ops)} ops recorded; {len(new)} new vertices since last time"

    def clear(self) -> None:
        """Forget everything recorded so far; the next cell starts a fresh picture."""
        self.trace.stop()
        self.trace = Trace().start() if self.listening else Trace()
        self._drawn = set()
        self._seen_ops = 0
        self.view.dot = ""
        self.view.classes = {}
        self.refresh()

    def stop(self) -> None:
        """Stop listening to the event bus and to cell runs; the last picture stays."""
        self.listening = False
        self.trace.stop()
        if self._shell is not None:
            self._shell.events.unregister("post_run_cell", self._after_cell)
            self._shell = None

    def _let_go(self) -> None:
        """Stop listening, and drop what was heard (a trace of a long session can be big)."""
        self.stop()
        self.trace = Trace()
        self._drawn = set()
        self._seen_ops = 0

    def _after_cell(self, result=None) -> None:
        self.refresh()
