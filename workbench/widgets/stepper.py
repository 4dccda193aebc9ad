"""BackwardStepper: scrub through a real backward pass, one node at a time.

The graph is laid out once, in the browser. Each step highlights the node that just
ran (class ``active`` on its SVG ``<g>``) and the panel shows what it did: the op, its rule's
Forward/Backward text, the gradient that came in, the gradient sent along each
edge, any collapse-sum and a leaf's ``.grad`` before and after.

In live mode (given the loss) the stepper owns the engine's own step generator,
``make_backward_task(loss).steps()``: clicking Next runs the next node for real.
Records of steps already run are kept, so Prev and the slider are lookups.
"""

from __future__ import annotations

import ipywidgets as widgets

from ..autograd.graph import Node
from ..tensor import Tensor
from .closing import ClosingBox
from .graphview import GraphView, Picture, draw
from .panel import STYLE, inspect_html, message_html, step_html
from .steps import LiveSteps, StepCursor, StepRecord, StepSource
from .trace_steps import is_trace, trace_source

NO_GRAPH = (
    "This tensor has no backward graph, so there is nothing to step through: it does not "
    "require grad. Make the inputs with requires_grad=True (outside no_grad()), compute "
    "the loss from them, and pass the loss."
)


NOT_SCALAR = (
    "grad can be implicitly created only for scalar outputs: this tensor has shape {shape}. "
    "Reduce it to one number first, e.g. BackwardStepper(y.sum()), or pass a gradient of "
    "its shape, as y.backward(gradient) takes one: BackwardStepper(y, gradient=wb.ones_like(y))."
)


def source_for(target, retain_graph: bool = False, gradient=None) -> StepSource:
    """The steps of a loss tensor (live) or of a saved trace (recorded)."""
    if isinstance(target, Tensor):
        if not target.requires_grad:
            raise ValueError(NO_GRAPH)
        if gradient is None and target.numel() != 1:
            raise RuntimeError(NOT_SCALAR.format(shape=tuple(target.shape)))
        return LiveSteps(target, retain_graph=retain_graph, gradient=gradient)
    if is_trace(target):
        return trace_source(target)
    raise TypeError(
        f"BackwardStepper needs a loss Tensor or a saved Trace, not {type(target).__name__}."
    )


class BackwardStepper(ClosingBox):
    """Step through ``loss.backward()`` (or a saved Trace) node by node.

    Python API, mirrored by the buttons: :meth:`next`, :meth:`prev`, :meth:`reset`,
    :meth:`go`, :meth:`run_to`, :meth:`toggle_breakpoint`, :meth:`continue_`,
    :meth:`inspect`. ``retain_graph=True`` keeps saved tensors after their node ran;
    ``gradient`` is ȳ for a loss that is not one number, as in ``loss.backward(gradient)``.
    ``close()`` closes every part of it and lets go of the loss and its graph.
    """

    def __init__(
        self, target, *, gradient=None, retain_graph: bool = False, interval_ms: int = 800
    ) -> None:
        super().__init__()
        self.retain_graph = retain_graph
        self.cursor: StepCursor | None = None
        self.picture: Picture | None = None
        self.error: str | None = None
        self._syncing = False
        self.message = widgets.HTML()
        self.graph = GraphView(layout=widgets.Layout(width="58%"))
        self.panel = widgets.HTML(layout=widgets.Layout(width="42%"))
        self.inspector = widgets.HTML()
        self._build_controls(interval_ms)
        try:
            source = source_for(target, retain_graph, gradient)
            self.picture = draw(target, kind="backward")  # before any node runs and frees
            self.cursor = StepCursor(source)  # runs step 0
            self.graph.dot = self.picture.dot
        except Exception as err:  # a UI boundary: show the reason, never a traceback
            self._fail(err)
            return
        self._fill_node_picker()
        self._observe(self.graph, self._on_select, names="selected")
        self._show()

    # ----------------------------------------------------------- layout
    def _build_controls(self, interval_ms: int) -> None:
        self.prev_button = widgets.Button(description="◀ Prev", tooltip="show the previous step")
        self.next_button = widgets.Button(description="Next ▶", tooltip="run the next node")
        self.reset_button = widgets.Button(description="⟲ Reset", tooltip="back to step 0")
        self.play = widgets.Play(min=0, max=0, interval=interval_ms, description="play")
        self.slider = widgets.IntSlider(min=0, max=0, description="step")
        self._keep(widgets.jslink((self.play, "value"), (self.slider, "value")))
        self._keep(widgets.jslink((self.slider, "value"), (self.graph, "step")))
        self.node_picker = widgets.Dropdown(description="node")
        self.run_to_button = widgets.Button(description="Run to node")
        self.breakpoint_button = widgets.Button(description="Toggle breakpoint")
        self.continue_button = widgets.Button(description="Continue ▶▶")
        self._on_click(self.prev_button, lambda _: self.prev())
        self._on_click(self.next_button, lambda _: self.next())
        self._on_click(self.reset_button, lambda _: self.reset())
        self._on_click(self.run_to_button, lambda _: self.run_to(self.node_picker.value))
        self._on_click(
            self.breakpoint_button, lambda _: self.toggle_breakpoint(self.node_picker.value)
        )
        self._on_click(self.continue_button, lambda _: self.continue_())
        self._observe(self.slider, self._on_slider)
        row1 = [self.prev_button, self.next_button, self.reset_button, self.play, self.slider]
        row2 = [self.node_picker, self.run_to_button, self.breakpoint_button]
        self.children = [
            widgets.HTML(STYLE),
            self.message,
            widgets.HBox(row1),
            widgets.HBox([*row2, self.continue_button]),
            widgets.HBox([self.graph, self.panel]),
            self.inspector,
        ]

    def _fill_node_picker(self) -> None:
        """All nodes, in the order their steps run; the first one picked."""
        nodes = self.cursor.source.nodes
        ordered = [uid for uid in self.picture.order if uid in nodes]
        ordered += [uid for uid in nodes if uid not in ordered]
        self.node_picker.options = [(nodes[uid].label, uid) for uid in ordered]
        self.node_picker.value = ordered[0]

    def _fail(self, err: Exception) -> None:
        self.error = str(err)
        self.message.value = message_html(self.error)
        for control in self._controls():
            control.disabled = True

    def _controls(self) -> list:
        return [
            self.prev_button,
            self.next_button,
            self.reset_button,
            self.play,
            self.slider,
            self.node_picker,
            self.run_to_button,
            self.breakpoint_button,
            self.continue_button,
        ]

    def _let_go(self) -> None:
        """Drop the cursor: it holds the engine's paused pass, and so the whole graph."""
        self.cursor = None
        self.picture = None

    # ----------------------------------------------------------- state
    @property
    def step(self) -> int:
        """The index of the step on show."""
        return self.cursor.position if self.cursor else 0

    @property
    def record(self) -> StepRecord | None:
        return self.cursor.record if self.cursor else None

    @property
    def active(self) -> str:
        """The id of the node that ran at the step on show (its vertex is lit ``active``)."""
        return self.cursor.record.node if self.cursor else ""

    # ----------------------------------------------------------- moves
    def next(self) -> bool:
        """Run (or show again) the next node; False at the end of the pass."""
        return self._move(lambda c: c.next())

    def prev(self) -> bool:
        """Show the previous step; False at step 0."""
        return self._move(lambda c: c.prev())

    def reset(self) -> None:
        """Show step 0 again (nodes already run stay run: .grad keeps its values)."""
        self._move(lambda c: c.reset())

    def go(self, index: int) -> bool:
        """Show step ``index``, running the engine up to it in live mode."""
        return self._move(lambda c: c.go(index))

    def run_to(self, node) -> bool:
        """Run until ``node`` (an id like ``"n4"``, a Node, or a Tensor) has run."""
        return self._move(lambda c: c.run_to(self.node_id(node)))

    def continue_(self) -> bool:
        """Run to the next breakpoint, or to the end."""
        return self._move(lambda c: c.continue_())

    def toggle_breakpoint(self, node) -> bool:
        """Set or clear a breakpoint on ``node``; True when it is now set."""
        if self.cursor is None:
            return False
        is_set = self.cursor.toggle_breakpoint(self.node_id(node))
        marks = sorted(self.cursor.breakpoints)
        self.graph.classes = {self.picture.vertex_of(uid): "breakpoint" for uid in marks}
        return is_set

    def _move(self, action) -> bool:
        if self.cursor is None:
            return False
        try:
            result = action(self.cursor)
        except Exception as err:  # e.g. a graph already freed by an earlier backward
            self.message.value = message_html(f"{type(err).__name__}: {err}")
            self.cursor.source.finished = True
            return False
        self._show()
        return bool(result) if result is not None else True

    def _on_slider(self, change) -> None:
        if self._syncing or self.cursor is None:
            return
        if not self.cursor.go(change["new"]):
            self.cursor.note = "The backward pass ended before that step."
        self._show()

    # ----------------------------------------------------------- display
    def _show(self) -> None:
        cursor = self.cursor
        source = cursor.source
        last = max(cursor.last, cursor.position)
        self._syncing = True
        try:
            self.slider.max = self.play.max = last
            self.slider.value = cursor.position
            self.graph.step_nodes = [self.picture.vertex_of(r.node) for r in source.records]
            self.graph.step = cursor.position
        finally:
            self._syncing = False
        self.panel.value = step_html(cursor.record, last + 1, source.finished, cursor.note)
        self.next_button.disabled = source.finished and cursor.position == last
        self.prev_button.disabled = cursor.position == 0
        if self.graph.selected:
            self._on_select({"new": self.graph.selected})

    # ----------------------------------------------------------- inspecting
    def node_id(self, node) -> str:
        """The stable id of a node given as an id, a Node or a Tensor."""
        if isinstance(node, Node):
            return node.uid
        if isinstance(node, Tensor):
            if node.grad_fn is not None:
                return node.grad_fn.uid
            acc = node._grad_acc() if node._grad_acc is not None else None
            if acc is None:
                raise ValueError(f"tensor {node.name or node.uid} is not part of this graph")
            return acc.uid
        return str(node)

    def inspect(self, node) -> None:
        """Show a node's data, the gradient that reached it and its saved tensors."""
        if self.cursor is None:
            return
        uid = self.node_id(node)
        info = self.cursor.source.nodes.get(uid)
        if info is None:
            self.inspector.value = message_html(f"{uid} is not a node of this backward graph.")
            return
        ran = {r.node: r for r in self.cursor.source.records[: self.step + 1]}
        record = ran.get(uid)
        grads = record.grads_in if record is not None else None
        freed = record is not None and isinstance(self.cursor.source, LiveSteps)
        freed = freed and not self.retain_graph
        self.inspector.value = inspect_html(info, grads, freed)
        vertex = self.picture.vertex_of(uid)
        if self.graph.selected != vertex and self.picture.node_of(self.graph.selected) != uid:
            self.graph.selected = vertex

    def _on_select(self, change) -> None:
        """A click in the picture: inspect the node the vertex is about."""
        uid = self.picture.node_of(change["new"]) if change["new"] else None
        if uid is None:
            return
        if uid in dict(self.node_picker.options).values():
            self.node_picker.value = uid
        self.inspect(uid)
