"""An SVG graph you can click: the picture laid out once, highlights moved in the browser.

The SVG comes from ``wb.viz`` (Graphviz), whose ``<g>`` elements carry the stable
node ids (``n5``). This widget never re-lays the graph out to move the highlight:
it only toggles CSS classes on those ``<g>`` elements.

- ``step`` and ``step_nodes`` pick the ``active`` node in the browser itself, so a
  Play widget linked to ``step`` (jslink) animates the graph without the kernel.
- ``classes`` adds extra marks (``breakpoint``, ``recomputed``, ``new``) by node id.
- Clicking a node sets ``selected`` to its id; Python observes that to inspect it.
- ``captions`` writes short texts on the picture: by vertex id beside a node, by
  ``"tail->head"`` at the middle of an edge (which also gets the class ``flowing``).
- ``zoom`` scales the picture from its natural size (1.0: Graphviz's own sizes, so
  text is at least 11 px); the box scrolls, and its buttons zoom in, out and to fit.
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

// ---- captions: texts on edges and beside nodes (the `captions` trait)
const SVG_NS = "http://www.w3.org/2000/svg";

function edgesByTitle(box) {
  const edges = {};
  for (const g of box.querySelectorAll("g.edge")) {
    const title = g.querySelector("title");
    if (title) edges[title.textContent] = g;
  }
  return edges;
}

function placeCaption(g, text, isEdge) {
  const t = document.createElementNS(SVG_NS, "text");
  t.setAttribute("class", "wb-caption");
  t.textContent = text;
  const path = isEdge ? g.querySelector("path") : null;
  if (path) {
    const p = path.getPointAtLength(path.getTotalLength() / 2);
    t.setAttribute("x", p.x + 6);
    t.setAttribute("y", p.y + 4);
  } else {
    const b = g.getBBox();
    t.setAttribute("x", b.x + b.width + 4);
    t.setAttribute("y", b.y + b.height / 2 + 4);
  }
  g.appendChild(t);
}

function caption(box, captions) {
  for (const t of box.querySelectorAll(".wb-caption")) t.remove();
  for (const g of box.querySelectorAll("g.edge.flowing")) g.classList.remove("flowing");
  const edges = edgesByTitle(box);
  for (const [key, text] of Object.entries(captions || {})) {
    const edge = edges[key];
    const g = edge || box.querySelector(`g.node[id="${key}"]`);
    if (!g) continue;
    if (edge) edge.classList.add("flowing");
    placeCaption(g, text, Boolean(edge));
  }
}

// ---- zoom: natural size by default (readable text), buttons to change it
function naturalSize(svg) {
  const w = parseFloat(svg.getAttribute("width"));
  const h = parseFloat(svg.getAttribute("height"));
  const unit = (svg.getAttribute("width") || "").endsWith("pt") ? 4 / 3 : 1;
  return [w * unit, h * unit];
}

function applyZoom(box, zoom) {
  const svg = box.querySelector("svg");
  if (!svg) return;
  if (!svg.dataset.naturalWidth) {
    const [w, h] = naturalSize(svg);
    svg.dataset.naturalWidth = w;
    svg.dataset.naturalHeight = h;
  }
  svg.style.width = `${svg.dataset.naturalWidth * zoom}px`;
  svg.style.height = `${svg.dataset.naturalHeight * zoom}px`;
}

function zoomBar(model, box) {
  const bar = document.createElement("div");
  bar.className = "wb-zoom";
  const buttons = [
    ["−", "zoom out", (z) => z / 1.25],
    ["100%", "natural size", () => 1],
    ["+", "zoom in", (z) => z * 1.25],
    ["fit", "fit the box", () => {
      const svg = box.querySelector("svg");
      const w = svg ? parseFloat(svg.dataset.naturalWidth) : 0;
      return w ? Math.min(1, (box.clientWidth - 8) / w) : 1;
    }],
  ];
  for (const [label, title, next] of buttons) {
    const b = document.createElement("button");
    b.textContent = label;
    b.title = title;
    b.addEventListener("click", () => {
      model.set("zoom", next(model.get("zoom")));
      model.save_changes();
    });
    bar.appendChild(b);
  }
  return bar;
}

function render({ model, el }) {
  el.appendChild(zoomBar(model, el));
  const box = document.createElement("div");
  box.className = "wb-graph";
  el.appendChild(box);
  let extraClasses = [];  // [element, class] added from `classes`, removed on the next mark

  function mark() {
    for (const g of box.querySelectorAll("g.node")) {
      g.classList.remove("active", "selected", "breakpoint", "new", "done");
    }
    for (const [g, name] of extraClasses) g.classList.remove(name);
    extraClasses = [];
    const byId = {};
    for (const g of box.querySelectorAll("g.node")) byId[g.id] = g;
    const extra = model.get("classes") || {};
    for (const [id, names] of Object.entries(extra)) {
      const g = byId[id];
      if (!g) continue;
      for (const name of names.split(" ").filter(Boolean)) {
        if (!g.classList.contains(name)) extraClasses.push([g, name]);
        g.classList.add(name);
      }
    }
    const selected = model.get("selected");
    if (selected) byId[selected]?.classList.add("selected");
    const order = model.get("step_nodes") || [];
    const step = model.get("step");
    for (const id of new Set(order.slice(0, Math.max(step, 0)))) {
      byId[id]?.classList.add("done");
    }
    const active = order[step];
    if (active) {
      const g = byId[active];
      g?.classList.remove("done");
      g?.classList.add("active");
    }
    box.dataset.active = active || "";
  }

  function paint() {
    box.innerHTML = model.get("svg");
    applyZoom(box, model.get("zoom"));
    mark();
    caption(box, model.get("captions"));
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
  model.on("change:captions", () => caption(box, model.get("captions")));
  model.on("change:zoom", () => applyZoom(box, model.get("zoom")));
  paint();
}

export default { render };
"""

_CSS = """
.wb-graph { overflow: auto; max-height: 800px; border: 1px solid #e0e0e0; }
.wb-graph svg { max-width: none; }
.wb-zoom button { font-size: 12px; min-width: 2.2em; margin-right: 2px; }
.wb-graph .wb-caption { font: 10px Helvetica, Arial, sans-serif; fill: #b23c17; }
.wb-graph g.edge.flowing path { stroke: #d62728; stroke-width: 2.5px; }
.wb-graph g.edge.flowing polygon { fill: #d62728; stroke: #d62728; }
.wb-graph g.node.collapse-active :is(path, polygon, ellipse) {
  fill: #f06fd0; stroke: #8a1c74; stroke-width: 3px;
}
.wb-graph g.node.has-grad :is(path, polygon, ellipse) { fill: #9fd89a; }
.wb-graph g.node.grad-filled :is(path, polygon, ellipse) { stroke: #2e7d32; stroke-width: 3px; }
.wb-graph g.node.linked :is(path, polygon, ellipse) { stroke: #1f77b4; stroke-width: 3px; }
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
    captions = traitlets.Dict().tag(sync=True)
    zoom = traitlets.Float(1.0).tag(sync=True)

    @property
    def active(self) -> str:
        """The id of the node highlighted as ``active`` (the browser computes the same)."""
        nodes = self.step_nodes
        return nodes[self.step] if 0 <= self.step < len(nodes) else ""

    def close(self) -> None:
        """Close the picture and its Layout (ipywidgets' ``close()`` leaves the Layout open)."""
        close_held(self)
        super().close()
