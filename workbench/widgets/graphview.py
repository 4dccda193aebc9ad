"""An SVG graph you can click: the picture laid out once, highlights moved in the browser.

The SVG comes from ``wb.viz`` (Graphviz), whose ``<g>`` elements carry the stable
node ids (``n5``). This widget never re-lays the graph out to move the highlight:
it only toggles CSS classes on those ``<g>`` elements.

- ``step`` and ``step_nodes`` pick the ``active`` node in the browser itself, so a
  Play widget linked to ``step`` (jslink) animates the graph without the kernel.
- ``classes`` adds extra marks (``breakpoint``, ``recomputed``, ``new``) by node id.
- Clicking a node sets ``selected`` to its id; Python observes that to inspect it.
"""

from __future__ import annotations

from dataclasses import dataclass

import anywidget
import traitlets

from .closing import close_held

_ESM = r"""
function nodeOf(target) {
  const g = target.closest("g.node");
  return g && g.id ? g.id : null;
}

function render({ model, el }) {
  const box = document.createElement("div");
  box.className = "wb-graph";
  el.appendChild(box);

  function mark() {
    for (const g of box.querySelectorAll("g.node")) {
      g.classList.remove("active", "selected", "breakpoint", "recomputed", "new");
    }
    const extra = model.get("classes") || {};
    for (const [id, names] of Object.entries(extra)) {
      const g = box.querySelector(`g[id="${id}"]`);
      if (g) for (const name of names.split(" ").filter(Boolean)) g.classList.add(name);
    }
    const selected = model.get("selected");
    if (selected) box.querySelector(`g[id="${selected}"]`)?.classList.add("selected");
    const order = model.get("step_nodes") || [];
    const step = model.get("step");
    for (const id of order.slice(0, Math.max(step, 0))) {
      box.querySelector(`g[id="${id}"]`)?.classList.add("done");
    }
    const active = order[step];
    if (active) {
      const g = box.querySelector(`g[id="${active}"]`);
      g?.classList.remove("done");
      g?.classList.add("active");
    }
    box.dataset.active = active || "";
  }

  function paint() {
    box.innerHTML = model.get("svg");
    mark();
  }

  box.addEventListener("click", (event) => {
    const id = nodeOf(event.target);
    if (!id) return;
    model.set("selected", id);
    model.save_changes();
    mark();
  });
  model.on("change:svg", paint);
  for (const name of ["step", "step_nodes", "classes", "selected"]) {
    model.on(`change:${name}`, mark);
  }
  paint();
}

export default { render };
"""

_CSS = """
.wb-graph { overflow: auto; max-height: 800px; }
.wb-graph svg { max-width: 100%; height: auto; }
.wb-graph g.node { cursor: pointer; }
.wb-graph g.node.done :is(path, polygon, ellipse) { fill: #ececec; }
.wb-graph g.node.recomputed :is(path, polygon, ellipse) { fill: #d7f0d0; }
.wb-graph g.node.new :is(path, polygon, ellipse) { fill: #fff1b8; stroke: #2ca02c; }
.wb-graph g.node.breakpoint :is(path, polygon, ellipse) {
  stroke: #9467bd; stroke-width: 2.5px; stroke-dasharray: 5 2;
}
.wb-graph g.node.selected :is(path, polygon, ellipse) { stroke: #1f77b4; stroke-width: 3px; }
.wb-graph g.node.active :is(path, polygon, ellipse) {
  fill: #ffd54f; stroke: #d62728; stroke-width: 3px;
}
"""


@dataclass
class Picture:
    """A laid-out graph: its SVG and, per SVG vertex, the engine node ids it stands for."""

    svg: str
    members: dict  # vertex id -> tuple of node ids (a folded box stands for many)
    kinds: dict  # vertex id -> what it draws: backward, accumulate, saved, fold, ...
    order: list  # backward node ids in the order their steps run (as wb.viz predicts it)

    def vertex_of(self, node_id: str) -> str:
        """The vertex that lights up for ``node_id``: its own, else the box it was folded into."""
        if node_id in self.members:
            return node_id
        for vid, members in self.members.items():
            if node_id in members and self.kinds[vid] not in ("saved", "collapse", "root"):
                return vid
        return node_id

    def node_of(self, vertex_id: str) -> str | None:
        """The engine node a clicked vertex is about (a saved tensor: the node that saved it)."""
        members = self.members.get(vertex_id, ())
        if vertex_id in members:
            return vertex_id
        return members[0] if members else None


def draw(target, kind: str = "backward") -> Picture:
    """Lay ``target`` (a Tensor or a Trace) out once with ``wb.viz`` (Graphviz)."""
    from .. import viz

    graph = viz.draw(target, kind=kind)
    vertices = graph.model.vertices.values()
    members = {v.id: tuple(v.members) for v in vertices}
    return Picture(graph.svg(), members, {v.id: v.kind for v in vertices}, list(graph.order))


class GraphView(anywidget.AnyWidget):
    """An SVG of a graph whose nodes can be highlighted and clicked."""

    _esm = _ESM
    _css = _CSS

    svg = traitlets.Unicode("").tag(sync=True)
    step_nodes = traitlets.List(traitlets.Unicode()).tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)
    classes = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)

    @property
    def active(self) -> str:
        """The id of the node highlighted as ``active`` (the browser computes the same)."""
        nodes = self.step_nodes
        return nodes[self.step] if 0 <= self.step < len(nodes) else ""

    def close(self) -> None:
        """Close the picture and its Layout (ipywidgets' ``close()`` leaves the Layout open)."""
        close_held(self)
        super().close()
