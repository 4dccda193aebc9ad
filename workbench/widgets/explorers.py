"""Explorers used by the lessons: move a slider, see the engine's gradients change.

Every number shown is computed by the engine (``backward()``), never by a
hand-written derivative; the explorers only choose inputs and draw.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from .. import ops
from ..core import checks, events, factories
from ..core.tensor import Tensor, float64
from ..record.grad_mode import no_grad
from .closing import ClosingBox
from .panel import STYLE, format_array, message_html
from .plots import figure_png, new_figure


# --------------------------------------------------------------------- sigmoid
@dataclass(frozen=True)
class SigmoidPoint:
    """σ at one x: its value, the engine's slope, and a finite-difference check."""

    x: float
    value: float
    slope: float  # x.grad after sigmoid(x).backward()
    finite_difference: float  # (σ(x+h) − σ(x−h)) / 2h, forward passes only

    @property
    def error(self) -> float:
        return abs(self.slope - self.finite_difference)


def sigmoid_point(x: float, h: float = 1e-5) -> SigmoidPoint:
    """Differentiate σ at ``x`` with the engine and check it against central differences."""
    t = factories.tensor(x, dtype=float64, requires_grad=True)
    y = ops.sigmoid(t)
    y.backward()
    with no_grad():
        up = ops.sigmoid(factories.tensor(x + h, dtype=float64)).item()
        down = ops.sigmoid(factories.tensor(x - h, dtype=float64)).item()
    return SigmoidPoint(x, y.item(), t.grad.item(), (up - down) / (2 * h))


def sigmoid_curves(xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """σ(xs) and σ'(xs), the slope from one backward of ``sigmoid(xs).sum()``."""
    t = factories.tensor(xs, dtype=float64, requires_grad=True)
    y = ops.sigmoid(t)
    y.sum().backward()
    return y.detach().numpy(), t.grad.numpy()


class SigmoidExplorer(ClosingBox):
    """A slider for x: σ(x), σ'(x) from the engine, the tangent line, a finite-difference check."""

    def __init__(self, x: float = 0.0, span: float = 6.0) -> None:
        super().__init__()
        if not span > 0:
            raise ValueError(f"SigmoidExplorer: span={span!r}: the x axis runs from -span to span")
        self.slider = widgets.FloatSlider(
            value=x, min=-span, max=span, step=0.1, description="x", continuous_update=False
        )
        self.readout = widgets.HTML()
        self.image = widgets.Image(format="png")
        self._xs = np.linspace(-span, span, 241)
        self._curves = sigmoid_curves(self._xs)
        self.point = sigmoid_point(x)
        self._observe(self.slider, lambda _: self.update())
        self.children = [widgets.HTML(STYLE), self.slider, self.readout, self.image]
        self.update()

    def update(self) -> None:
        """Recompute at the slider's x and redraw (one PNG swap: no flicker)."""
        self.point = sigmoid_point(self.slider.value)
        self.readout.value = self._readout_html(self.point)
        self.image.value = figure_png(self._figure(self.point))

    def _readout_html(self, p: SigmoidPoint) -> str:
        rule = p.value * (1 - p.value)
        return (
            "<table class='wb-table'>"
            f"<tr><th>σ(x)</th><td>{p.value:.6f}</td></tr>"
            f"<tr><th>σ'(x) from backward()</th><td>{p.slope:.6f}</td></tr>"
            f"<tr><th>σ(x)·(1 − σ(x))</th><td>{rule:.6f}</td></tr>"
            f"<tr><th>finite difference</th><td>{p.finite_difference:.6f}"
            f" (differs by {p.error:.1e})</td></tr></table>"
        )

    def _figure(self, p: SigmoidPoint):
        values, slopes = self._curves
        fig = new_figure()
        left, right = fig.subplots(1, 2)
        left.plot(self._xs, values, label="σ(x)")
        near = np.abs(self._xs - p.x) <= 2.0
        tangent = p.value + p.slope * (self._xs[near] - p.x)
        left.plot(self._xs[near], tangent, "--", label=f"tangent, slope {p.slope:.3f}")
        left.plot([p.x], [p.value], "o", color="C3")
        left.set_ylim(-0.1, 1.1)
        left.set_title("σ(x) and its tangent")
        left.legend(loc="upper left", fontsize=8)
        right.plot(self._xs, slopes, color="C2", label="σ'(x) = x.grad")
        right.plot([p.x], [p.slope], "o", color="C3")
        right.set_ylim(0, 0.28)
        right.set_title("σ'(x), from the engine")
        right.legend(loc="upper left", fontsize=8)
        return fig


# ------------------------------------------------------------------ broadcast
@dataclass(frozen=True)
class BroadcastInput:
    """One operand: its shape, the gradient before and after collapse-sum, the summed axes."""

    name: str
    shape: tuple
    value: np.ndarray
    grad_before: np.ndarray  # of the broadcast (output) shape
    grad_after: np.ndarray  # .grad: of the input's own shape
    axes: tuple


@dataclass(frozen=True)
class BroadcastResult:
    op: str
    out_shape: tuple
    inputs: tuple[BroadcastInput, ...]


def parse_shape(text: str) -> tuple:
    """``"2, 3"`` or ``"(2, 3)"`` → ``(2, 3)``; ``""`` or ``"()"`` → ``()`` (a scalar)."""
    cleaned = text.strip().strip("()[]").replace("×", ",")
    parts = [p.strip() for p in cleaned.split(",") if p.strip()]
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise ValueError(f"'{text}' is not a shape: write sizes like 2, 3") from None
    if any(s < 1 for s in shape) or math.prod(shape) > 10_000:
        raise ValueError(f"shape {shape}: use positive sizes and at most 10000 elements")
    return shape


def explore_broadcast(a_shape: tuple, b_shape: tuple, op: str = "mul") -> BroadcastResult:
    """Run ``loss = (op(a, b) * weights).sum()`` and collect the engine's collapse-sums.

    ``weights`` are 1, 2, 3, ... so every output position sends a different
    gradient, and the sums are easy to follow by hand.
    """
    a = _numbered(a_shape, "a")
    b = _numbered(b_shape, "b")
    out = ops.mul(a, b) if op == "mul" else ops.add(a, b)
    weights = factories.arange(1, out.numel() + 1, dtype=float64).reshape(out.shape)
    loss = (out * weights).sum()
    with events.collect() as heard:
        loss.backward()
    values = {e.output: e.value for e in heard.events if isinstance(e, events.OpRecorded)}
    inputs_of = {
        e.output: e.inputs[0]
        for e in heard.events
        if isinstance(e, events.OpRecorded) and e.op == "collapse_sum_like"
    }
    summed = {e.output_shape: e for e in heard.events if isinstance(e, events.CollapseSum)}
    results = tuple(_input_result(t, out, summed, values, inputs_of) for t in (a, b))
    return BroadcastResult(op, tuple(out.shape), results)


def _numbered(shape: tuple, name: str) -> Tensor:
    count = math.prod(shape)
    data = np.arange(1, count + 1, dtype=np.float64).reshape(shape)
    return factories.tensor(data, requires_grad=True, name=name)


def _input_result(t: Tensor, out: Tensor, summed: dict, values: dict, inputs_of: dict):
    """What collapse-sum did for input ``t`` (nothing when it was not broadcast)."""
    event = summed.get(tuple(t.shape)) if t.shape != out.shape else None
    if event is None:
        grad = t.grad.numpy()
        return BroadcastInput(t.name, tuple(t.shape), t.detach().numpy(), grad, grad, ())
    before = values.get(inputs_of.get(event.output))
    before = np.asarray(before) if before is not None else np.full(out.shape, np.nan)
    value, grad = t.detach().numpy(), t.grad.numpy()
    return BroadcastInput(t.name, tuple(t.shape), value, before, grad, tuple(event.axes))


class BroadcastExplorer(ClosingBox):
    """Choose two shapes: the broadcast, the gradient before/after collapse-sum, the axes."""

    def __init__(self, a_shape="2, 3", b_shape="3", op: str = "mul") -> None:
        super().__init__()
        checks.one_of("BroadcastExplorer", "op", op, ("mul", "add"))
        self.a_text = widgets.Text(value=_shape_text(a_shape), description="a shape")
        self.b_text = widgets.Text(value=_shape_text(b_shape), description="b shape")
        self.op_picker = widgets.Dropdown(options=["mul", "add"], value=op, description="op")
        self.readout = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.result: BroadcastResult | None = None
        self.error: str | None = None
        for control in (self.a_text, self.b_text, self.op_picker):
            self._observe(control, lambda _: self.update())
        controls = widgets.HBox([self.a_text, self.b_text, self.op_picker])
        self.children = [widgets.HTML(STYLE), controls, self.readout, self.image]
        self.update()

    def update(self) -> None:
        """Re-run the engine for the chosen shapes; a bad shape shows a message."""
        try:
            a_shape = parse_shape(self.a_text.value)
            b_shape = parse_shape(self.b_text.value)
            self.result = explore_broadcast(a_shape, b_shape, self.op_picker.value)
        except (ValueError, RuntimeError) as err:
            self.error = str(err)
            self.result = None
            self.readout.value = message_html(self.error)
            self.image.value = b""
            self.image.layout.display = "none"  # an empty image would show as a broken one
            return
        self.error = None
        self.readout.value = broadcast_html(self.result)
        self.image.value = figure_png(broadcast_figure(self.result))
        self.image.layout.display = None


def _shape_text(shape) -> str:
    return shape if isinstance(shape, str) else ", ".join(str(s) for s in shape)


def broadcast_html(result: BroadcastResult) -> str:
    """The table of shapes, gradients and summed axes."""
    rows = [f"<tr><th>{result.op}(a, b)</th><td>shape {result.out_shape}</td></tr>"]
    for inp in result.inputs:
        if inp.axes:
            what = f"{inp.shape} → {result.out_shape}: collapse-sum over axes {inp.axes}"
        else:
            what = f"{inp.shape}: not broadcast, no sum needed"
        rows.append(f"<tr><th>{inp.name}</th><td>{html.escape(what)}</td></tr>")
        rows.append(
            f"<tr><th>{inp.name}̄ before</th><td><pre class='wb-array'>"
            f"{html.escape(format_array(inp.grad_before))}</pre></td></tr>"
        )
        rows.append(
            f"<tr><th>{inp.name}.grad after</th><td><pre class='wb-array'>"
            f"{html.escape(format_array(inp.grad_after))}</pre></td></tr>"
        )
    return f"<table class='wb-table'>{''.join(rows)}</table>"


MAX_LABELS = 36  # numbers written into a picture, at most
MAX_SLICES = 6  # 2-D slices drawn side by side for an array of more than two dimensions


def _as_grid(array: np.ndarray) -> np.ndarray | None:
    """A 2-D picture of ``array``: a row for 0-D and 1-D, itself for 2-D, and for more
    dimensions its 2-D slices ``[i, :, :]`` side by side, one blank column between them.

    None when there are more slices than :data:`MAX_SLICES`.
    """
    array = np.asarray(array, dtype=np.float64)
    if array.ndim < 2:
        return array.reshape((1, -1))
    if array.ndim == 2:
        return array
    slices = array.reshape((-1,) + array.shape[-2:])
    if len(slices) > MAX_SLICES:
        return None
    gap = np.full((array.shape[-2], 1), np.nan)
    parts = [part for piece in slices for part in (piece, gap)][:-1]
    return np.concatenate(parts, axis=1)


def _slices_note(shape: tuple) -> str:
    """What a picture of an array of ``shape`` shows: its slices, when it has more than 2-D."""
    if len(shape) <= 2:
        return ""
    return "\nslices [i, :, :] left to right" if len(shape) == 3 else "\n2-D slices, left to right"


def broadcast_figure(result: BroadcastResult):
    """Per input: how it is stretched to the output, its gradient before and after the sum.

    Shapes of three or more dimensions are drawn as their 2-D slices side by side.
    """
    wide = len(result.out_shape) > 2
    fig = new_figure(11.0 if wide else 8.0, 1.8 + 1.8 * len(result.inputs))
    axes = fig.subplots(len(result.inputs), 3, squeeze=False)
    for row, inp in zip(axes, result.inputs):
        _stretched(row[0], inp, result.out_shape)
        _grid(
            row[1],
            inp.grad_before,
            f"{inp.name}̄ before collapse-sum (shape {result.out_shape})",
            True,
        )
        title = f"{inp.name}.grad (summed axes {inp.axes})" if inp.axes else f"{inp.name}.grad"
        _grid(row[2], inp.grad_after, title, True)
    return fig


def _copies_mask(shape: tuple, out_shape: tuple) -> np.ndarray:
    """1 where the input's own element sits, 0.35 where broadcasting made a copy."""
    padded = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    index = np.indices(out_shape) if out_shape else np.zeros((0,), dtype=int)
    mask = np.ones(out_shape)
    for axis, (size, target) in enumerate(zip(padded, out_shape)):
        if size == 1 and target > 1:
            mask = np.where(index[axis] == 0, mask, 0.35)
    return mask


def _stretched(ax, inp: BroadcastInput, out_shape: tuple) -> None:
    """The input's values repeated to the output shape; the copies drawn faded."""
    title = f"{inp.name} {inp.shape} → {out_shape}{_slices_note(out_shape)}"
    _grid(ax, _copies_mask(inp.shape, out_shape), title, False)
    grid = _as_grid(np.broadcast_to(inp.value, out_shape))
    if grid is not None and np.isfinite(grid).sum() <= MAX_LABELS:
        for (i, j), v in np.ndenumerate(grid):
            if np.isfinite(v):
                ax.text(j, i, f"{v:g}", ha="center", va="center", fontsize=7)


def _grid(ax, values: np.ndarray, title: str, annotate: bool) -> None:
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    grid = _as_grid(values)
    if grid is None:
        what = f"shape {np.shape(values)}\n(too many 2-D slices to draw: see the table)"
        ax.text(0.5, 0.5, what, ha="center", va="center", transform=ax.transAxes)
        return
    if annotate:
        ax.imshow(grid, cmap="Oranges")  # NaN (the gaps between slices) stays blank
    else:
        ax.imshow(grid, cmap="Blues", vmin=0, vmax=1.6)  # own elements mid blue, copies pale
    if annotate and np.isfinite(grid).sum() <= MAX_LABELS:
        for (i, j), v in np.ndenumerate(grid):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=7)
