"""``wb.viz.draw``: a picture of the forward or backward graph, as DOT, SVG or PNG.

::

    g = wb.viz.draw(loss, kind="backward")          # a live tensor's graph
    g = wb.viz.draw(trace, kind="backward", step=3)  # a recorded trace, step 3 lit up
    g                                                # Jupyter lays it out in the browser
    g.dot                                            # the DOT text (no renderer needed)
    g.svg()                                          # SVG text: <g id="n5" class="node ...">
    g.save("graph.png")                              # .svg, .png or .dot

Shown in a notebook, a drawing is a :class:`~workbench.viz.browser.GraphView`: the page
lays the DOT out with a WebAssembly Graphviz, so lessons need no native renderer.
``.svg()``, ``.png()`` and ``.save()`` are the static export: they run a native
Graphviz (:mod:`.renderers`) in a child process.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..core.tensor import Tensor
from ..trace import Trace
from . import from_trace, live
from .dot import mark_step, to_dot
from .fold import FOLD_LIMIT, fold
from .model import GraphModel, name_nodes
from .renderers import render

KINDS = ("forward", "backward")


class Graph:
    """A drawn graph: ``.dot`` text, ``.svg()``, ``.png()``, ``.save()``, a widget in Jupyter.

    ``model`` is what was drawn (vertices, edges, the step order), ``notes`` say what
    was folded, ``order`` lists the backward node ids in the order the steps run.
    """

    def __init__(self, model: GraphModel, step: int | None = None) -> None:
        self.model = model
        self.kind = model.kind
        self.step = step
        self.notes = list(model.notes)
        self.order = list(model.order)
        self.dot = to_dot(model)
        self._svg: str | None = None

    def __repr__(self) -> str:
        at = "" if self.step is None else f", step {self.step}"
        return f"<Graph {self.kind}: {len(self.model.vertices)} vertices{at}>"

    def svg(self, timeout: float | None = None) -> str:
        """The rendered SVG text (computed once).

        ``timeout``: seconds the layout may take (default ``renderers.TIMEOUT_S``).
        """
        if self._svg is None:
            svg = render(self.dot, "svg", timeout).decode("utf-8")
            self._svg = ensure_ids_and_classes(svg, self.model)
        return self._svg

    def png(self, timeout: float | None = None) -> bytes:
        return render(self.dot, "png", timeout)

    def save(self, path, fmt: str | None = None, timeout: float | None = None) -> Path:
        """Write the picture; the format comes from the suffix (``.svg``, ``.png``, ``.dot``)."""
        path = Path(path)
        fmt = (fmt or path.suffix.lstrip(".") or "svg").lower()
        if fmt in ("dot", "gv"):
            path.write_text(self.dot, encoding="utf-8")
        elif fmt == "svg":
            path.write_text(self.svg(timeout), encoding="utf-8")
        elif fmt == "png":
            path.write_bytes(self.png(timeout))
        else:
            raise ValueError(f"cannot save as {fmt!r}: use .svg, .png or .dot")
        return path

    def widget(self):
        """A :class:`~workbench.viz.browser.GraphView` of this drawing, laid out in the browser."""
        from .browser import GraphView

        return GraphView(dot=self.dot)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """Jupyter shows :meth:`widget`: no native renderer runs for a notebook's picture.

        (No ``_repr_svg_``: IPython would call it as well, and run a native renderer.)
        """
        view = {"version_major": 2, "version_minor": 0, "model_id": self.widget().model_id}
        return {"application/vnd.jupyter.widget-view+json": view, "text/plain": repr(self)}


def draw(
    source,
    kind: str = "backward",
    step: int | None = None,
    fold_limit: int | None = FOLD_LIMIT,
    which: int = -1,
) -> Graph:
    """Draw the forward or backward graph of a tensor (or tensors), or of a Trace.

    ``step=k`` lights up the node that runs at backward step ``k`` (class ``active``)
    and greys the ones already done. Steps count from 1, as in the stepper: its
    ``step`` and its panel's "Step k of N" name the same node. For a live tensor the
    steps are the ones its ``backward()`` would run; for a trace, the ones recorded
    (``which`` picks the backward pass, the last by default). Graphs with more than ``fold_limit``
    vertices are folded, with a note saying what was folded; ``fold_limit=None``
    draws everything.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be 'forward' or 'backward', not {kind!r}")
    model = build_model(source, kind, step, which)
    if fold_limit is not None:
        model = fold(model, fold_limit)
    if step is not None:
        mark_step(model, step)
    return Graph(model, step)


def build_model(source, kind: str, step: int | None = None, which: int = -1) -> GraphModel:
    """The unfolded model of ``source`` (a Tensor, a list of Tensors or a Trace)."""
    if isinstance(source, Trace):
        if kind == "backward":
            return name_nodes(from_trace.backward_model(source, which, step))
        return from_trace.forward_model(source, which, step)
    roots = [source] if isinstance(source, Tensor) else list(source)
    if not roots or not all(isinstance(t, Tensor) for t in roots):
        raise TypeError(
            f"draw() takes a Tensor, a list of Tensors or a Trace, not {type(source).__name__}"
        )
    if kind == "backward":
        return name_nodes(live.backward_model(roots))
    return live.forward_model(roots)


_NODE_G = re.compile(r'<g id="([^"]*)" class="(node|edge)([^"]*)"')


def ensure_ids_and_classes(svg: str, model: GraphModel) -> str:
    """Make sure each vertex's ``<g>`` carries our classes, whatever Graphviz wrote.

    Graphviz 2.40+ copies a node's ``class`` attribute into the SVG itself; older
    system ``dot`` programs drop it. Either way the result is ``<g id="n5" class="node
    backward active">``.
    """
    wanted = {v.id: [v.kind, *v.classes] for v in model.vertices.values()}

    def fix(match: re.Match) -> str:
        vid, what, rest = match.group(1), match.group(2), match.group(3)
        classes = rest.split()
        for cls in wanted.get(vid, []) if what == "node" else []:
            if cls not in classes:
                classes.append(cls)
        return f'<g id="{vid}" class="{" ".join([what, *classes])}"'

    return _NODE_G.sub(fix, svg)
