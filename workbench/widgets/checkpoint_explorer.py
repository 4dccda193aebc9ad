"""CheckpointExplorer: choose how many segments to checkpoint, see what it saves and costs.

For the chosen segment count the explorer runs one training step of a tanh MLP
twice, plainly and with ``checkpoint_sequential(..., use_reentrant=False)``, and
shows what the engine reported: the saved-tensor memory timeline of both runs (from
its events, via :func:`workbench.viz.memory.watch_memory`), both peaks and their
ratio, the recomputations, and the backward graph with the recomputed nodes marked.
Nothing shown is predicted by a formula here; every number is measured.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from ..core import factories
from ..core.tensor import Tensor
from ..record.graph import AccumulateGrad, walk
from ..utils.checkpoint import checkpoint_sequential
from ..viz.memory import MemoryTimeline, plot_memory, watch_memory
from ..viz.model import RECOMPUTED
from .closing import ClosingBox
from .graphview import GraphView
from .panel import STYLE, message_html
from .plots import figure_png, new_figure

MAX_LAYERS = 64
MAX_WIDTH = 512
MAX_BATCH = 1024


# ---------------------------------------------------------------------- model
class TanhLayer:
    """``h ↦ tanh(h @ W + b)``; labels the nodes it records with its segment and name.

    The label goes where a name scope would put it (``node.metadata["scope"]``):
    ``("segment 2: layers 4–7, checkpointed", "layer 5")``, so ``wb.viz`` can fold the
    graph into one box per segment (or per layer) and the graph fits its box.
    """

    def __init__(self, name: str, weight: Tensor, bias: Tensor) -> None:
        self.name = name
        self.segment = "segment 1"  # set by run_step, as checkpoint_sequential cuts the layers
        self.weight = weight
        self.bias = bias
        weight.name, bias.name = f"{name}.weight", f"{name}.bias"

    def __call__(self, h: Tensor) -> Tensor:
        out = (h @ self.weight + self.bias).tanh()
        _label_nodes(out, h, (self.segment, self.name))
        return out


def _label_nodes(out: Tensor, h: Tensor, scope: tuple) -> None:
    """Put ``scope`` on every node between ``h`` and ``out``."""
    for node in walk([out.grad_fn], stop=lambda n: n is h.grad_fn or isinstance(n, AccumulateGrad)):
        node.metadata["scope"] = scope


class TanhMLP:
    """``layers`` tanh layers of ``width`` units, float32, and a batch of inputs.

    Parameters come from a seeded numpy generator: building one never moves the
    notebook's own ``wb.manual_seed`` stream.
    """

    def __init__(self, layers: int, width: int, batch: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        scale = 1.0 / np.sqrt(width)
        self.layers = [
            TanhLayer(
                f"layer {i}",
                _parameter(rng.standard_normal((width, width)) * scale),
                _parameter(np.zeros(width)),
            )
            for i in range(layers)
        ]
        self.x = factories.tensor(rng.standard_normal((batch, width)).astype(np.float32))
        self.x.name = "x"

    def parameters(self) -> list[Tensor]:
        return [p for layer in self.layers for p in (layer.weight, layer.bias)]


def _parameter(values: np.ndarray) -> Tensor:
    return factories.tensor(values.astype(np.float32), requires_grad=True)


# ------------------------------------------------------------------ measuring
@dataclass
class StepRun:
    """One forward + backward: its memory timeline and the parameter gradients."""

    memory: MemoryTimeline
    grads: list  # numpy arrays, in the order of TanhMLP.parameters()


def run_step(mlp: TanhMLP, segments: int) -> tuple[StepRun, Tensor]:
    """``loss = mean(mlp(x)²)`` with ``checkpoint_sequential`` in ``segments``, then backward.

    ``segments=1`` checkpoints nothing (the last segment always runs plainly), so it
    is the plain run. Returns the loss too: its graph, freed but still drawable.
    """
    for p in mlp.parameters():
        p.grad = None
    for i, layer in enumerate(mlp.layers):
        layer.segment = segment_name(i, len(mlp.layers), segments)
    with watch_memory() as memory:
        out = checkpoint_sequential(mlp.layers, segments, mlp.x, use_reentrant=False)
        loss = out.pow(2).mean()
        loss.backward()
    loss.name = "loss"
    grads = [p.grad.numpy().copy() for p in mlp.parameters()]
    return StepRun(memory, grads), loss


@dataclass
class CheckpointComparison:
    """The plain and the checkpointed run of one step, and the checkpointed graph."""

    segments: int
    layers: int
    plain: StepRun
    checkpointed: StepRun
    dot: str  # the checkpointed run's backward graph (laid out in the browser)
    recomputed_vertices: tuple  # ids of the vertices marked recomputed

    @property
    def ratio(self) -> float:
        """Checkpointed peak / plain peak (1.0: no memory saved)."""
        return self.checkpointed.memory.peak_bytes / self.plain.memory.peak_bytes

    @property
    def recomputes(self) -> int:
        """How many segments were rerun in backward (``CheckpointRecompute`` begin events)."""
        return len(self.checkpointed.memory.recomputes)

    @property
    def recomputed_nodes(self) -> int:
        return self.checkpointed.memory.recomputed_nodes

    @property
    def grads_equal(self) -> bool:
        pairs = zip(self.plain.grads, self.checkpointed.grads)
        return all(np.array_equal(a, b) for a, b in pairs)

    def timelines(self) -> dict:
        """The two memory timelines by name, as :func:`~workbench.viz.memory.plot_memory` takes."""
        return {"plain": self.plain.memory, "checkpointed": self.checkpointed.memory}


def compare_checkpointing(mlp: TanhMLP, segments: int) -> CheckpointComparison:
    """Run the step plainly and in ``segments`` checkpointed segments; draw the latter."""
    plain, _ = run_step(mlp, 1)
    checkpointed, loss = run_step(mlp, segments)
    dot, marked = _draw(loss, segments)
    return CheckpointComparison(segments, len(mlp.layers), plain, checkpointed, dot, marked)


def segment_name(layer: int, layers: int, segments: int) -> str:
    """The segment ``checkpoint_sequential`` puts layer ``layer`` in (the last takes the rest)."""
    if segments == 1:
        return f"all {layers} layers: nothing checkpointed"
    size = layers // segments
    index = min(layer // size, segments - 1)
    first = index * size
    if index == segments - 1:
        return f"segment {index + 1}: layers {first}–{layers - 1}, run plainly"
    return f"segment {index + 1}: layers {first}–{first + size - 1}, checkpointed"


def _draw(loss: Tensor, segments: int) -> tuple[str, tuple]:
    """The backward graph, one box per segment; the ids of the vertices marked recomputed.

    Folding stops at ``segments + 8`` vertices: each segment's layers become one box
    (green where recomputed, framed as its checkpoint segment), which leaves the
    segments and the loss's few nodes, so the graph fits its box.
    """
    from .. import viz

    graph = viz.draw(loss, fold_limit=segments + 8)
    marked = tuple(v.id for v in graph.model.vertices.values() if RECOMPUTED in v.classes)
    return graph.dot, marked


def check_settings(segments: int, layers: int, width: int, batch: int) -> None:
    """Raise ValueError, saying what to change, for settings the explorer cannot run."""
    for name, value, most in (
        ("layers", layers, MAX_LAYERS),
        ("width", width, MAX_WIDTH),
        ("batch", batch, MAX_BATCH),
    ):
        if not isinstance(value, (int, np.integer)) or not 1 <= value <= most:
            raise ValueError(f"{name} = {value!r}: choose a whole number from 1 to {most}")
    if not isinstance(segments, (int, np.integer)) or not 1 <= segments <= layers:
        raise ValueError(
            f"segments = {segments!r}: choose from 1 to {layers} (one segment per layer at most)"
        )


# -------------------------------------------------------------------- widget
class CheckpointExplorer(ClosingBox):
    """A slider for the number of segments: memory timeline, peaks, recomputations, graph.

    The default batch (256) makes one layer's activations (64 KiB) four times a weight
    matrix: checkpointing saves activations only, so with a small batch the weights,
    kept by both runs, would hide most of the difference.
    """

    def __init__(
        self, segments: int = 4, layers: int = 16, width: int = 64, batch: int = 256, seed: int = 0
    ) -> None:
        super().__init__()
        self.width, self.batch, self.seed = width, batch, seed
        self.mlp: TanhMLP | None = None
        self.result: CheckpointComparison | None = None
        self.error: str | None = None
        self.sweep: dict = {}  # segments -> checkpointed peak bytes, for the right-hand plot
        top = max(1, min(layers, MAX_LAYERS)) if isinstance(layers, int) else 1
        self.slider = widgets.IntSlider(
            value=min(max(segments, 1), top) if isinstance(segments, int) else 1,
            min=1,
            max=top,
            description="segments",
            continuous_update=False,
        )
        self.layers_box = widgets.IntText(
            value=layers if isinstance(layers, int) else 0, description="layers"
        )
        self.readout = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.graph = GraphView()
        self._refitting = False
        self._observe(self.slider, lambda _: self._refitting or self.update())
        self._observe(self.layers_box, lambda _: self._new_model())
        controls = widgets.HBox([self.slider, self.layers_box])
        self.children = [widgets.HTML(STYLE), controls, self.readout, self.image, self.graph]
        self.show(segments, layers)

    def update(self) -> None:
        """Rerun both steps at the slider's segment count and redraw."""
        self.show(self.slider.value, self.layers_box.value)

    def show(self, segments: int, layers: int) -> None:
        """Measure and draw ``segments`` of a ``layers``-layer MLP; bad input shows a message."""
        try:
            check_settings(segments, layers, self.width, self.batch)
            if self.mlp is None or len(self.mlp.layers) != layers:
                self.mlp = TanhMLP(layers, self.width, self.batch, self.seed)
                self.sweep = {}
            self.result = compare_checkpointing(self.mlp, segments)
            self._fill_sweep()
        except (ValueError, RuntimeError) as err:
            self._show_message(str(err))
            return
        self.error = None
        self.readout.value = comparison_html(self.result)
        self.image.value = figure_png(comparison_figure(self.result, self.sweep))
        self.graph.dot = self.result.dot
        self.graph.classes = {vid: RECOMPUTED for vid in self.result.recomputed_vertices}

    def _new_model(self) -> None:
        """The layers box changed: fit the slider to the new depth, then rerun."""
        layers = self.layers_box.value
        if 1 <= layers <= MAX_LAYERS and layers != self.slider.max:
            self._refitting = True  # a value clamped by the new max must not rerun the step
            try:
                self.slider.max = layers
            finally:
                self._refitting = False
        self.show(self.slider.value, layers)

    def _fill_sweep(self) -> None:
        """The checkpointed peak at every segment count (measured once per model)."""
        if self.sweep:
            return
        for segments in range(1, len(self.mlp.layers) + 1):
            run, _ = run_step(self.mlp, segments)
            self.sweep[segments] = run.memory.peak_bytes

    def _let_go(self) -> None:
        """Drop the model (its parameters and their gradients) and the measurements."""
        self.mlp = None
        self.result = None
        self.sweep = {}

    def _show_message(self, text: str) -> None:
        self.error = text
        self.result = None
        self.readout.value = message_html(text)
        self.image.value = b""
        self.graph.dot = ""
        self.graph.classes = {}


# ------------------------------------------------------------------- drawing
def _kib(nbytes: int) -> str:
    return f"{nbytes / 1024:,.0f} KiB"


def segments_text(segments: int, layers: int) -> str:
    """How ``checkpoint_sequential`` cuts ``layers`` layers into ``segments`` segments."""
    if segments == 1:
        return f"1 segment: all {layers} layers run plainly, nothing is checkpointed"
    size = layers // segments
    last = layers - size * (segments - 1)
    return (
        f"{segments - 1} checkpointed segment(s) of {size} layer(s), "
        f"then the last {last} layer(s) run plainly"
    )


def comparison_html(result: CheckpointComparison) -> str:
    """The table beside the plots: peaks, ratio, recomputations, gradient check."""
    plain = result.plain.memory.peak_bytes
    ckpt = result.checkpointed.memory.peak_bytes
    rows = [
        ("segments", segments_text(result.segments, result.layers)),
        ("peak saved, plain", _kib(plain)),
        ("peak saved, checkpointed", f"{_kib(ckpt)} ({result.ratio:.0%} of plain)"),
        (
            "recomputed in backward",
            f"{result.recomputes} segment rerun(s), {result.recomputed_nodes} node(s) "
            "got their saved values back",
        ),
        ("gradients", "identical" if result.grads_equal else "DIFFERENT (this is a bug)"),
    ]
    body = "".join(f"<tr><th>{k}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    note = _note(result)
    note_html = f"<div class='wb-note'>{html.escape(note)}</div>" if note else ""
    return f"<table class='wb-table'>{body}</table>{note_html}"


def _note(result: CheckpointComparison) -> str:
    """A sentence on why a run saved nothing, when it did not."""
    if result.segments > 1 and result.ratio >= 1 and result.layers // result.segments == 1:
        return (
            "No memory saved: a one-layer segment keeps its input, and that is all a tanh "
            "layer keeps anyway; the recomputation is pure cost. Try fewer segments."
        )
    return ""


def comparison_figure(result: CheckpointComparison, sweep: dict):
    """Left: both memory timelines. Right: the checkpointed peak for every segment count."""
    fig = new_figure(9.0, 3.4)
    left, right = fig.subplots(1, 2, width_ratios=[2, 1])
    plot_memory(left, result.timelines())
    left.set_title(f"Saved-tensor memory, {result.segments} segment(s)", fontsize=10)
    left.xaxis.label.set_fontsize(8)
    counts = sorted(sweep)
    colors = ["C3" if s == result.segments else "C1" for s in counts]
    right.bar(counts, [sweep[s] / 1024 for s in counts], color=colors)
    right.axhline(result.plain.memory.peak_bytes / 1024, color="C0", linestyle="--")
    right.set_xlabel("segments (dashed: plain peak)", fontsize=8)
    right.set_ylabel("peak (KiB)")
    right.set_title("Checkpointed peak by segments", fontsize=10)
    return fig
