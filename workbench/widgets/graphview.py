"""A graph you can click: DOT laid out in the browser, highlights moved in the browser.

The kernel sends DOT text (from ``wb.viz``); the page lays it out with Graphviz
compiled to WebAssembly (:mod:`.graphviz_asset`), in a Web Worker, so neither the
kernel nor the page waits on a big graph: the picture says "laying out…" until the
SVG comes back, and a layout still running after ``layout_limit_s`` seconds
(``LAYOUT_LIMIT_S``) is stopped with a message. Drawing the SVG is the page's own
work, seconds for thousands of vertices: past ``draw_limit`` vertices
(``DRAW_LIMIT``) the picture waits for a click.

The SVG's ``<g>`` elements carry the stable node ids (``n5``) and the classes written
in the DOT. Moving the highlight never lays the graph out again: it only toggles CSS
classes on those ``<g>`` elements.

- ``step`` and ``step_nodes`` pick the ``active`` node in the browser itself, so a
  Play widget linked to ``step`` (jslink) animates the graph without the kernel.
- ``classes`` adds extra marks (``breakpoint``, ``recomputed``, ``new``) by node id.
- Clicking a node sets ``selected`` to its id; Python observes that to inspect it.
"""

from __future__ import annotations

from dataclasses import dataclass

import anywidget
import ipywidgets as widgets
import traitlets

from .closing import close_held
from .graphviz_asset import GraphvizAsset, shared_asset

LAYOUT_LIMIT_S = 60  # a layout still running after this is stopped, with a message
DRAW_LIMIT = 600  # vertices the page draws without asking (wb.viz folds to 150 by default)

# The Web Worker's own code, run after the Graphviz script (which defines ``self.Viz``):
# DOT text in, ``{svg, ms}`` or ``{error}`` out. (No backquotes: it is pasted into _ESM.)
WORKER_JS = r"""
let graphviz = null;
self.onmessage = async (event) => {
  const started = performance.now();
  try {
    graphviz = graphviz || await Viz.instance();
    const result = graphviz.render(event.data, { format: "svg" });
    if (result.status !== "success") {
      const errors = result.errors.filter((e) => e.level === "error").map((e) => e.message);
      throw new Error(errors.join("; ") || "Graphviz could not lay this graph out");
    }
    self.postMessage({ svg: result.output, ms: performance.now() - started });
  } catch (err) {
    graphviz = null; // after a crash, start Graphviz afresh for the next graph
    self.postMessage({ error: String((err && err.message) || err) });
  }
};
"""

_ESM = r"""
const WORKER = `__WORKER_JS__`;

// One worker per page and Graphviz version, shared by every picture; one layout at a time.
class Layouts {
  constructor(source) {
    const script = new Blob([source, WORKER], { type: "text/javascript" });
    this.url = URL.createObjectURL(script);
    this.worker = null;
    this.tail = Promise.resolve();
    this.done = new Map(); // DOT text -> { svg, ms }: a view shown again is not laid out again
  }

  layout(dot, limitMs) {
    const run = () => this.done.get(dot) || this.run(dot, limitMs);
    const job = this.tail.then(run, run);
    this.tail = job.catch(() => {});
    return job;
  }

  run(dot, limitMs) {
    return new Promise((resolve, reject) => {
      const worker = (this.worker ||= new Worker(this.url));
      const stop = (error) => {
        clearTimeout(timer);
        worker.terminate(); // the next layout starts a fresh worker
        this.worker = null;
        reject(error);
      };
      const timer = setTimeout(() => {
        const seconds = limitMs / 1000;
        stop(new Error(`it took longer than ${seconds} s, so it was stopped. ` +
          "Fold the graph more: wb.viz.draw(..., fold_limit=50)."));
      }, limitMs);
      worker.onmessage = ({ data }) => {
        clearTimeout(timer);
        if (data.error) return reject(new Error(data.error));
        this.remember(dot, data);
        resolve(data);
      };
      worker.onerror = (event) => {
        event.preventDefault();
        stop(new Error(event.message || "the layout worker failed to start"));
      };
      worker.postMessage(dot);
    });
  }

  remember(dot, result) {
    this.done.set(dot, result);
    if (this.done.size > 32) this.done.delete(this.done.keys().next().value);
  }
}

const SHARED = (globalThis.__workbenchGraphviz ||= new Map()); // version -> Layouts

async function layoutsFor(model) {
  const ref = model.get("_graphviz");
  if (!ref) throw new Error("the kernel sent no Graphviz script");
  const id = String(ref).replace(/^IPY_MODEL_/, "");
  const asset = await model.widget_manager.get_model(id);
  const version = asset.get("version");
  if (!SHARED.has(version)) SHARED.set(version, new Layouts(asset.get("source")));
  return SHARED.get(version);
}

function nodeOf(target) {
  const g = target.closest("g.node");
  return g && g.id ? g.id : null;
}

function render({ model, el }) {
  const status = document.createElement("div");
  status.className = "wb-graph-status";
  const box = document.createElement("div");
  box.className = "wb-graph";
  el.append(status, box);
  let ticket = 0; // the latest paint; an older layout arriving late is dropped

  function at(id) {
    return box.querySelector(`g[id="${CSS.escape(id)}"]`);
  }

  function mark() {
    for (const g of box.querySelectorAll("g.node")) g.setAttribute("class", g.dataset.base);
    const extra = model.get("classes") || {};
    for (const [id, names] of Object.entries(extra)) {
      const g = at(id);
      if (g) for (const name of names.split(" ").filter(Boolean)) g.classList.add(name);
    }
    const selected = model.get("selected");
    if (selected) at(selected)?.classList.add("selected");
    const order = model.get("step_nodes") || [];
    const step = model.get("step");
    for (const id of order.slice(0, Math.max(step, 0))) at(id)?.classList.add("done");
    const active = order[step];
    if (active) {
      at(active)?.classList.remove("done");
      at(active)?.classList.add("active");
    }
    box.dataset.active = active || "";
  }

  function say(text, state) {
    status.textContent = text;
    status.hidden = !text;
    box.dataset.layout = state;
  }

  function show(svg) {
    const started = performance.now();
    box.innerHTML = svg;
    for (const g of box.querySelectorAll("g.node")) g.dataset.base = g.getAttribute("class");
    say("", "done");
    mark();
    box.dataset.insertMs = Math.round(performance.now() - started);
  }

  // A picture with thousands of vertices takes the page seconds to draw, wherever it was
  // laid out: past ``draw_limit`` vertices it waits for the learner to ask for it.
  function holdBack(svg, count) {
    box.replaceChildren();
    say(`This graph has ${count} vertices: drawing them all pauses the page for a few ` +
      "seconds (fold it: wb.viz.draw(..., fold_limit=150)). ", "held");
    const button = document.createElement("button");
    button.className = "wb-graph-draw-all";
    button.textContent = `Draw all ${count} vertices`;
    button.addEventListener("click", () => show(svg));
    status.append(button);
  }

  async function paint() {
    const mine = ++ticket;
    const dot = model.get("dot");
    if (!dot) {
      box.replaceChildren();
      return say("", "empty");
    }
    say("laying out…", "pending");
    try {
      const limitMs = model.get("layout_limit_s") * 1000;
      const { svg, ms } = await (await layoutsFor(model)).layout(dot, limitMs);
      if (mine !== ticket) return;
      box.dataset.layoutMs = Math.round(ms);
      const count = (svg.match(/<g id="[^"]*" class="node/g) || []).length;
      const limit = model.get("draw_limit");
      if (limit > 0 && count > limit) return holdBack(svg, count);
      show(svg);
    } catch (err) {
      if (mine !== ticket) return;
      box.replaceChildren();
      say(`Could not lay the graph out in the browser: ${err.message || err}`, "failed");
    }
  }

  box.addEventListener("click", (event) => {
    const id = nodeOf(event.target);
    if (!id) return;
    model.set("selected", id);
    model.save_changes();
    mark();
  });
  model.on("change:dot", paint);
  for (const name of ["step", "step_nodes", "classes", "selected"]) {
    model.on(`change:${name}`, mark);
  }
  paint();
  return () => {
    ticket += 1;
  };
}

export default { render };
""".replace("__WORKER_JS__", WORKER_JS)

_CSS = """
.wb-graph { overflow: auto; max-height: 800px; }
.wb-graph svg { max-width: 100%; height: auto; }
/* Graphviz sized the labels with Helvetica's widths: Arial and Liberation Sans share them. */
.wb-graph svg text { font-family: Helvetica, Arial, "Liberation Sans", sans-serif; }
.wb-graph-status { color: #666; font-style: italic; padding: 2px 0; }
.wb-graph-status button { font-style: normal; margin-left: 4px; }
.wb-graph[data-layout="pending"] svg { opacity: 0.5; }
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
    """A graph to lay out: its DOT text and, per vertex, the engine node ids it stands for.

    All of it comes from ``wb.viz``'s model; nothing here runs Graphviz.
    """

    dot: str
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
    """The picture of ``target`` (a Tensor or a Trace) from ``wb.viz``'s model: DOT, no layout."""
    from .. import viz

    graph = viz.draw(target, kind=kind)
    vertices = graph.model.vertices.values()
    members = {v.id: tuple(v.members) for v in vertices}
    return Picture(graph.dot, members, {v.id: v.kind for v in vertices}, list(graph.order))


class GraphView(anywidget.AnyWidget):
    """A graph given as DOT text, laid out in the browser; its nodes light up and click."""

    _esm = _ESM
    _css = _CSS

    dot = traitlets.Unicode("").tag(sync=True)
    step_nodes = traitlets.List(traitlets.Unicode()).tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)
    classes = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    # Seconds the page's Graphviz may take; then the worker is stopped, with a message.
    layout_limit_s = traitlets.Float(LAYOUT_LIMIT_S).tag(sync=True)
    # More vertices than this wait for a click before the page draws them (0: no limit).
    draw_limit = traitlets.Int(DRAW_LIMIT).tag(sync=True)
    # The Graphviz script, shared by every picture (sent to the page once per kernel).
    _graphviz = traitlets.Instance(GraphvizAsset, allow_none=True).tag(
        sync=True, **widgets.widget_serialization
    )

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("_graphviz", shared_asset())
        super().__init__(**kwargs)

    @property
    def active(self) -> str:
        """The id of the node highlighted as ``active`` (the browser computes the same)."""
        nodes = self.step_nodes
        return nodes[self.step] if 0 <= self.step < len(nodes) else ""

    def close(self) -> None:
        """Close the picture and its Layout (ipywidgets' ``close()`` leaves the Layout open).

        The shared Graphviz script stays open for the other pictures.
        """
        close_held(self)
        super().close()
