"""HTML for the stepper's panels: the active step and the inspected node.

Plain functions from records to strings, so the text a learner reads is easy to
test and costs little to rebuild on every click.
"""

from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np

from ..ops.registry import OPS
from ..viz.labels import array_text
from .steps import CollapseInfo, GradFlow, NodeInfo, StepRecord


def format_array(value: np.ndarray | str | None) -> str:
    """A short, readable rendering of an array: 4 decimals, long arrays abbreviated,
    complex numbers as ``3+4j``; the dtype named where PyTorch's repr names it (not
    float32, int64 or bool).

    A string is a trace's description of an array it did not keep, shown as is.
    """
    if value is None:
        return "None"
    if isinstance(value, str):
        return value
    value = np.asarray(value)
    text = array_text(value, threshold=40, edgeitems=2)
    dtype = "" if value.dtype in _UNNAMED_DTYPES else f" {value.dtype}"
    if value.ndim == 0:
        return text + dtype
    return f"{text}  shape {tuple(value.shape)}{dtype}"


_UNNAMED_DTYPES = (np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_))


def _code(value: np.ndarray | None) -> str:
    return f"<pre class='wb-array'>{html.escape(format_array(value))}</pre>"


def _formula(text: str) -> str:
    lines = text.splitlines() or ["(no rule text)"]
    return "<br>".join(html.escape(line) for line in lines)


def jvp_line(op_name: str | None) -> str:
    """The op's JVP formula (``ẏ = ...``), beside the gradient rule: the same op, the
    tangent pushed forward instead of the gradient pulled back."""
    op = OPS.get(op_name) if op_name else None
    if op is None:
        return ""
    return "\n".join(ln for ln in op.jvp_formula.splitlines() if ln.startswith("JVP"))


def _row(label: str, body: str) -> str:
    return f"<tr><th>{label}</th><td>{body}</td></tr>"


HIDDEN = "<i>? predict it, or press Show me</i>"


def _flow_row(
    i: int, flow: GradFlow, collapses: tuple[CollapseInfo, ...], hidden: bool, names: dict
) -> str:
    label = f"→ input {i}: {html.escape(names.get(flow.target) or flow.label)}"
    if hidden:
        return _row(label, HIDDEN)
    summed = [c for c in collapses if c.input_index == i]
    note = "".join(f"<div class='wb-collapse'>{collapse_text(c)}</div>" for c in summed)
    return _row(label, _code(flow.value) + note)


def collapse_text(c: CollapseInfo) -> str:
    """One sentence about a collapse-sum, e.g. 'collapse-sum (2, 3) → (3,): summed axes (0,)'."""
    return f"collapse-sum {c.from_shape} → {c.to_shape}: summed axes {c.axes}"


def step_html(
    record: StepRecord,
    total: int,
    note: str = "",
    hidden: bool = False,
    names: dict | None = None,
) -> str:
    """The panel of the active step: op, rule, gradient in, gradients out, leaf update.

    Steps are counted from 1: "Step 1 of 7" is the root's, "Step 7 of 7" the last.
    ``hidden``: the step's result is still to be predicted (what it sends, a leaf's
    ``.grad`` after it); the node and the gradient that reached it are shown.
    ``names``: node id -> the name the picture labels it with, used for every node named.
    """
    names = names or {}
    name = names.get(record.node)
    shown = (
        f"<b>{html.escape(name)}</b>"
        if name
        else f"<b>{html.escape(record.name)}</b> {record.node}"
    )
    title = f"Step {record.step} of {total}: {shown}"
    rows = [_row("op", html.escape(record.op or record.name))]
    rows.append(_row("rule", _formula(record.formula)))
    forward_mode = jvp_line(record.op)
    if forward_mode:
        rows.append(_row("forward mode", _formula(forward_mode)))
    # ȳ reaches an op's node (the gradient at its output y); a leaf's node gets x̄, the
    # gradient of the leaf itself, as its rule "x.grad += x̄" says.
    symbol = "x̄" if record.leaf is not None else "ȳ"
    for nr, grad in enumerate(record.grads_in):
        label = f"incoming gradient {symbol}" if len(record.grads_in) == 1 else f"incoming ȳ[{nr}]"
        rows.append(_row(label, _code(grad)))
    for i, flow in enumerate(record.grads_out):
        rows.append(_flow_row(i, flow, record.collapses, hidden, names))
    for c in record.collapses:
        if c.input_index is None and not hidden:
            rows.append(_row("collapse-sum", collapse_text(c)))
    if record.recomputed:
        nodes = ", ".join(record.recomputed)
        text = f"↻ reran its segment first: {nodes} got their saved values"
        rows.append(_row("checkpoint", text))
    if record.leaf is not None:
        leaf = record.leaf
        rows.append(_row(f"{html.escape(leaf.name)}.grad before", _code(leaf.before)))
        after = HIDDEN if hidden else _code(leaf.after)
        rows.append(_row(f"{html.escape(leaf.name)}.grad after", after))
    message = f"<div class='wb-note'>{html.escape(note)}</div>" if note else ""
    return (
        f"<div class='wb-step' data-node='{record.node}'><div class='wb-title'>{title}</div>"
        f"{message}<table class='wb-table'>{''.join(rows)}</table></div>"
    )


def inspect_html(info: NodeInfo, grad_in: tuple | None, freed: bool) -> str:
    """The inspector: a clicked node's data, the gradient that reached it, its saved tensors."""
    rows = [_row("rule", _formula(info.formula))]
    what = f"value of leaf {html.escape(info.leaf)}" if info.leaf else "forward output"
    rows.append(_row(what, _code(info.data) if info.data is not None else "(not kept)"))
    if grad_in is None:
        rows.append(_row("gradient in", "not reached yet: its step has not run"))
    else:
        rows.extend(_row("gradient in", _code(g)) for g in grad_in)
    for name, value in info.saved.items():
        rows.append(_row(f"saved {html.escape(name)}", _code(value)))
    if freed and info.saved:
        rows.append(_row("saved", "freed after this node's step (pass retain_graph=True to keep)"))
    if info.saved_note:
        rows.append(_row("saved", html.escape(info.saved_note)))
    return (
        f"<div class='wb-inspect' data-node='{info.uid}'><div class='wb-title'>Inspecting "
        f"<b>{html.escape(info.label)}</b></div><table class='wb-table'>{''.join(rows)}</table>"
        "</div>"
    )


def message_html(text: str) -> str:
    """A friendly box for bad input, instead of a traceback."""
    return f"<div class='wb-message'>⚠ {html.escape(text)}</div>"


# A picture beside its panel where the output area has room for both (the picture at
# least PICTURE_PX wide, the panel PANEL_PX), else the panel under the picture: a
# JupyterLab split or the file browser open leaves ~700-850 px, too little for both.
PICTURE_PX, PANEL_PX = 560, 300


def picture_and_panel(graph: widgets.Widget, panel: widgets.Widget) -> widgets.HBox:
    """``graph`` and ``panel`` side by side when they fit, the panel wrapped under else."""
    for box, basis in ((graph, PICTURE_PX), (panel, PANEL_PX)):  # their own Layouts, changed:
        box.layout.flex, box.layout.min_width = f"1 1 {basis}px", "0"  # a new one would leak
    panel.layout.overflow = "auto"
    return widgets.HBox([graph, panel], layout=widgets.Layout(flex_flow="row wrap"))


STYLE = """
<style>
.wb-title { font-weight: 600; margin: 4px 0; }
/* A panel's table is as wide as its panel, never wider: the names column has a fixed
   width (its words wrap), and a value wider than its cell scrolls in its own box. */
.wb-table { width: 100%; table-layout: fixed; border-collapse: collapse; }
.wb-table th {
  text-align: left; vertical-align: top; padding-right: 12px; font-weight: 500; width: 9em;
}
.wb-table td { vertical-align: top; }
.wb-array { margin: 0; padding: 2px 4px; background: #f6f6f6; font-size: 12px; }
/* JupyterLab wraps <pre> (pre-wrap): an array must not break inside a number or "shape":
   it scrolls inside its own box instead (two classes: JupyterLab's own rule has two) */
.wb-panel pre.wb-array, .wb-table pre.wb-array {
  white-space: pre; word-break: normal; overflow-wrap: normal; overflow-x: auto;
}
.wb-collapse { color: #8a4b00; font-size: 12px; }
.wb-note { color: #555; font-style: italic; }
.wb-message { border: 1px solid #d9a400; background: #fff7d6; padding: 8px; }
/* Play's own ■ jumps back to step 1: the stepper's "■ Stop" stays where Play stopped */
.wb-play button:nth-of-type(2) { display: none; }
.wb-question { font-weight: 500; margin: 4px 0; }
.wb-verdict { margin: 4px 0; }
</style>
"""
