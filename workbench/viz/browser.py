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
- ``captions`` writes short texts on the picture, by vertex id in a node's box, by
  ``"tail->head"`` under an edge's label (that edge also gets the class ``flowing``),
  each in the blank slot the DOT kept for it (:mod:`.captions`): laid out with the
  graph, so a caption covers no other text or line and nothing moves when it changes.
- ``zoom`` scales the picture from its natural size (1.0: Graphviz's own sizes, so
  text is at least 11 px); the box scrolls, and its buttons zoom in, out and to fit.
  No zoom makes text smaller than 11 px on screen (``READABLE_PX``): past that, "fit"
  and "−" stop shrinking and the box scrolls instead.
- The lit (``active``) node is kept in view with its caption (a leaf's ``.grad``):
  when a step lights a node outside the box's visible part, its caption arrives, or
  the box is resized (the window, the file browser opened), the box scrolls (only the
  box, never the page) to centre it.
"""

from __future__ import annotations

import anywidget
import ipywidgets as widgets
import traitlets

from .dot import SLOT_PREFIX
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

// ---- captions: texts on edges and in boxes (the `captions` trait), each written in the
// blank slot its DOT kept for it (workbench.viz.captions): Graphviz laid the graph out
// around the slots, so a caption covers no other text or line, and nothing drawn moves
// when it changes. A caption with no slot is not written.
const SVG_NS = "http://www.w3.org/2000/svg";
const SLOT = 'g[id^="a___SLOT_PREFIX__"]'; // how Graphviz writes a slot: an anchor's group
const BASELINE = 10.5; // picture units from a slot's top to its caption's baseline (11 px)

function edgesByTitle(box) {
  const edges = {};
  for (const g of box.querySelectorAll("g.edge")) {
    const title = g.querySelector("title");
    if (title) edges[title.textContent] = g;
  }
  return edges;
}

// Where Graphviz put each slot, kept on its node's or edge's <g> as "x y width height";
// the slot's own (invisible) box is taken out, so no style or test ever meets it. Read
// from its points, not its drawn box: a hidden picture has no drawn boxes yet.
function takeSlots(box) {
  for (const slot of box.querySelectorAll(SLOT)) {
    const owner = slot.parentElement.closest("g.node, g.edge");
    const polygon = slot.querySelector("polygon");
    if (owner && polygon) {
      const points = polygon.getAttribute("points").trim().split(/\s+/)
        .map((p) => p.split(",").map(Number));
      const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
      const x = Math.min(...xs), y = Math.min(...ys);
      owner.dataset.slot = [x, y, Math.max(...xs) - x, Math.max(...ys) - y].join(" ");
    }
    slot.remove();
  }
}

// Under an edge's label the caption starts where the label does (beside the edge's
// line); in a box it is centred, as the box's lines are.
function writeCaption(g, text) {
  const [x, y, width] = g.dataset.slot.split(" ").map(Number);
  const underLabel = g.classList.contains("edge");
  const t = document.createElementNS(SVG_NS, "text");
  t.setAttribute("class", "wb-caption");
  t.setAttribute("x", underLabel ? x : x + width / 2);
  t.setAttribute("y", y + BASELINE);
  t.setAttribute("text-anchor", underLabel ? "start" : "middle");
  t.textContent = text;
  g.appendChild(t);
}

function caption(box, captions) {
  for (const t of box.querySelectorAll(".wb-caption")) t.remove();
  for (const g of box.querySelectorAll("g.edge.flowing")) g.classList.remove("flowing");
  const edges = edgesByTitle(box);
  for (const [key, text] of Object.entries(captions || {})) {
    const edge = edges[key];
    const g = edge || box.querySelector(`g.node[id="${CSS.escape(key)}"]`);
    if (!g) continue;
    if (edge) edge.classList.add("flowing");
    if (text && g.dataset.slot) writeCaption(g, text);
  }
  follow(box, box.querySelector("g.node.active")); // the lit node's new caption in view too
}

// ---- labels: every line of a node's label inside its box. Graphviz sizes a box by its own
// guess of the text's width; the page's font can be wider. A line too wide is cut short
// with "…", and keeps its whole text on hover (an SVG <title>). Captions are not labels.
const LABEL_PAD = 2; // SVG units kept free between a line and its box's sides

function fitLabels(box) {
  const nodes = box.querySelectorAll("g.node");
  for (const g of nodes) {
    const shape = g.querySelector("polygon, ellipse, path");
    if (!shape) continue;
    const room = shape.getBBox();
    if (!room.width) return; // not laid out on the page yet (a hidden view): fit it later
    for (const t of g.querySelectorAll("text:not(.wb-caption)")) fitLine(t, room);
  }
  if (nodes.length) box.dataset.labelsFit = "yes";
}

function fits(t, room) {
  const b = t.getBBox();
  return b.x >= room.x + LABEL_PAD && b.x + b.width <= room.x + room.width - LABEL_PAD;
}

function fitLine(t, room) {
  if (t.dataset.full !== undefined || fits(t, room)) return;
  const full = t.textContent;
  const chars = Array.from(full); // code points: "x̄" is two, its mark must stay on it
  let low = 0, high = chars.length; // the longest start that fits, with "…" after it
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    t.textContent = chars.slice(0, mid).join("") + "…";
    if (fits(t, room)) low = mid; else high = mid - 1;
  }
  let keep = low;
  // never between a letter and its mark
  while (keep > 0 && /\p{M}/u.test(chars[keep] || "")) keep -= 1;
  t.textContent = chars.slice(0, keep).join("") + "…";
  t.dataset.full = full;
  const hover = document.createElementNS(SVG_NS, "title");
  hover.textContent = full;
  t.appendChild(hover);
}

// ---- zoom: natural size by default (readable text), buttons to change it
const READABLE_PX = 11; // no zoom draws text smaller than this on screen

function naturalSize(svg) {
  const w = parseFloat(svg.getAttribute("width"));
  const h = parseFloat(svg.getAttribute("height"));
  const unit = (svg.getAttribute("width") || "").endsWith("pt") ? 4 / 3 : 1;
  return [w * unit, h * unit];
}

// The smallest zoom at which every text (captions, 11 px in SVG units, included) is
// READABLE_PX on screen: Graphviz writes font sizes in the SVG's own units.
function readableZoom(svg) {
  const units = svg.viewBox.baseVal;
  const pxPerUnit = units && units.width ? svg.dataset.naturalWidth / units.width : 1;
  let smallest = READABLE_PX;
  for (const t of svg.querySelectorAll("text")) {
    const size = parseFloat(getComputedStyle(t).fontSize);
    if (size > 0) smallest = Math.min(smallest, size);
  }
  return READABLE_PX / (smallest * pxPerUnit);
}

function applyZoom(box, zoom) {
  const svg = box.querySelector("svg");
  if (!svg) return;
  if (!svg.dataset.naturalWidth) {
    const [w, h] = naturalSize(svg);
    svg.dataset.naturalWidth = w;
    svg.dataset.naturalHeight = h;
    svg.dataset.readableZoom = readableZoom(svg);
  }
  const shown = Math.max(zoom, parseFloat(svg.dataset.readableZoom));
  box.dataset.zoom = shown;
  sizeTo(svg, shown);
}

function sizeTo(svg, zoom) {
  svg.style.width = `${svg.dataset.naturalWidth * zoom}px`;
  svg.style.height = `${svg.dataset.naturalHeight * zoom}px`;
}

// ---- follow: the lit node stays in the box's visible part (the box scrolls, not the page),
// its shape and the captions written under it (a leaf's ".grad") together
function follow(box, g) {
  if (!g) return;
  const seen = box.getBoundingClientRect();
  if (!seen.width || !seen.height) return; // not on the page (a hidden view)
  const parts = [g.querySelector("polygon, ellipse, path") || g,
    ...g.querySelectorAll(".wb-caption")].map((e) => e.getBoundingClientRect());
  const lit = {
    left: Math.min(...parts.map((r) => r.left)), right: Math.max(...parts.map((r) => r.right)),
    top: Math.min(...parts.map((r) => r.top)), bottom: Math.max(...parts.map((r) => r.bottom)),
  };
  // the visible part: inside the box's border, less its scrollbars
  const left = seen.left + box.clientLeft, top = seen.top + box.clientTop;
  const right = left + box.clientWidth, bottom = top + box.clientHeight;
  const inside = lit.left >= left && lit.right <= right && lit.top >= top &&
    lit.bottom <= bottom;
  if (inside) return;
  box.scrollLeft += (lit.left + lit.right) / 2 - (left + right) / 2;
  box.scrollTop += (lit.top + lit.bottom) / 2 - (top + bottom) / 2;
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
  const status = document.createElement("div");
  status.className = "wb-graph-status";
  const box = document.createElement("div");
  box.className = "wb-graph";
  el.append(zoomBar(model, box), status, box);
  let ticket = 0; // the latest paint; an older layout arriving late is dropped

  function at(id) {
    return box.querySelector(`g[id="${CSS.escape(id)}"]`);
  }

  function mark() {
    const byId = {}; // one lookup table per mark: step_nodes may list thousands of steps
    for (const g of box.querySelectorAll("g.node")) {
      g.setAttribute("class", g.dataset.base);
      byId[g.id] = g;
    }
    const extra = model.get("classes") || {};
    for (const [id, names] of Object.entries(extra)) {
      const g = byId[id];
      if (g) for (const name of names.split(" ").filter(Boolean)) g.classList.add(name);
    }
    const selected = model.get("selected");
    if (selected) byId[selected]?.classList.add("selected");
    const order = model.get("step_nodes") || [];
    const step = model.get("step");
    for (const id of new Set(order.slice(0, Math.max(step, 0)))) byId[id]?.classList.add("done");
    const active = order[step];
    if (active) {
      byId[active]?.classList.remove("done");
      byId[active]?.classList.add("active");
    }
    box.dataset.active = active || "";
    if (box.dataset.labelsFit !== "yes") fitLabels(box); // shown at last: fit it now
    if (active) follow(box, byId[active]);
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
    takeSlots(box);
    say("", "done");
    delete box.dataset.labelsFit;
    fitLabels(box);
    applyZoom(box, model.get("zoom"));
    mark();
    caption(box, model.get("captions"));
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
  model.on("change:captions", () => caption(box, model.get("captions")));
  model.on("change:zoom", () => applyZoom(box, model.get("zoom")));
  // The box's width changes with the window, the file browser, a view shown: the lit
  // node is brought back into view then too, not only at the next step.
  const resized = new ResizeObserver(() => {
    if (box.dataset.layout === "done" && box.getClientRects().length) mark();
  });
  resized.observe(box);
  paint();
  return () => {
    ticket += 1;
    resized.disconnect();
  };
}

export default { render };
""".replace("__WORKER_JS__", WORKER_JS).replace("__SLOT_PREFIX__", SLOT_PREFIX)

_CSS = """
.wb-graph {
  overflow: auto; max-height: 800px; max-width: 100%; border: 1px solid #e0e0e0;
  box-sizing: border-box;
}
.wb-graph svg { max-width: none; }
/* Graphviz sized the labels with Helvetica's widths: Arial and Liberation Sans share them. */
.wb-graph svg text { font-family: Helvetica, Arial, "Liberation Sans", sans-serif; }
.wb-graph-status { color: #666; font-style: italic; padding: 2px 0; }
.wb-graph-status button { font-style: normal; margin-left: 4px; }
.wb-graph[data-layout="pending"] svg { opacity: 0.5; }
.wb-zoom button { font-size: 12px; min-width: 2.2em; margin-right: 2px; }
.wb-graph .wb-caption {
  font: 11px Helvetica, Arial, sans-serif; fill: #b23c17;
  paint-order: stroke; stroke: #ffffff; stroke-width: 3px;  /* a halo: readable over lines */
}
.wb-graph g.edge.flowing path { stroke: #d62728; stroke-width: 2.5px; }
.wb-graph g.edge.flowing polygon { fill: #d62728; stroke: #d62728; }
.wb-graph g.node.collapse-active :is(path, polygon, ellipse) {
  fill: #f06fd0; stroke: #8a1c74; stroke-width: 3px;
}
.wb-graph g.node.has-grad :is(path, polygon, ellipse) { fill: #9fd89a; }
.wb-graph g.node.grad-filled :is(path, polygon, ellipse) { stroke: #2e7d32; stroke-width: 3px; }
.wb-graph g.node.linked :is(path, polygon, ellipse) { stroke: #1f77b4; stroke-width: 3px; }
.wb-graph g.node.opened :is(path, polygon, ellipse) { stroke-dasharray: 5 2; }
.wb-graph g.node.fold { cursor: zoom-in; }
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
/* Where a CompareStepper found the first difference: outlined in both pictures. */
.wb-graph g.node.differs :is(path, polygon, ellipse) {
  stroke: #d62728; stroke-width: 4px; stroke-dasharray: 7 3;
}
"""


class GraphView(anywidget.AnyWidget):
    """A graph given as DOT text, laid out in the browser; its nodes light up and click."""

    _esm = _ESM
    _css = _CSS

    dot = traitlets.Unicode("").tag(sync=True)
    step_nodes = traitlets.List(traitlets.Unicode()).tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)
    classes = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    captions = traitlets.Dict().tag(sync=True)
    zoom = traitlets.Float(1.0).tag(sync=True)
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
        self.layout.close()
        super().close()
