"""Pictures of the graphs: ``wb.viz.draw(loss, kind="backward", step=None)``.

Loaded lazily (``import workbench`` does not import it). See :mod:`workbench.viz.graph`
for the API: in a notebook a drawing is laid out in the browser (WebAssembly
Graphviz); :mod:`workbench.viz.renderers` is the static export (``.svg()``, ``.png()``,
``workbench render``) with a native Graphviz in a child process.
"""

from .fold import FOLD_LIMIT, fold
from .graph import Graph, build_model, draw
from .model import Edge, GraphModel, Vertex
from .renderers import RendererMissing, RenderError, RenderTimeout, render, which_renderer

__all__ = [
    "FOLD_LIMIT",
    "Edge",
    "Graph",
    "GraphModel",
    "RenderError",
    "RenderTimeout",
    "RendererMissing",
    "Vertex",
    "build_model",
    "draw",
    "fold",
    "render",
    "which_renderer",
]
