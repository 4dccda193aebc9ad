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

import anywidget
import traitlets

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
    const active = (model.get("step_nodes") || [])[model.get("step")];
    if (active) box.querySelector(`g[id="${active}"]`)?.classList.add("active");
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
.wb-graph { overflow: auto; max-height: 560px; }
.wb-graph svg { max-width: 100%; height: auto; }
.wb-graph g.node { cursor: pointer; }
.wb-graph g.node.active > polygon, .wb-graph g.node.active > ellipse,
.wb-graph g.node.active > path { stroke: #d62728; stroke-width: 3px; fill: #ffe08a; }
.wb-graph g.node.selected > polygon, .wb-graph g.node.selected > ellipse,
.wb-graph g.node.selected > path { stroke: #1f77b4; stroke-width: 3px; }
.wb-graph g.node.breakpoint > polygon, .wb-graph g.node.breakpoint > ellipse,
.wb-graph g.node.breakpoint > path { stroke-dasharray: 4 2; stroke: #9467bd; stroke-width: 2px; }
.wb-graph g.node.recomputed > polygon, .wb-graph g.node.recomputed > ellipse,
.wb-graph g.node.recomputed > path { fill: #d7f0d0; }
.wb-graph g.node.new > polygon, .wb-graph g.node.new > ellipse,
.wb-graph g.node.new > path { fill: #e0ecff; }
"""


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
