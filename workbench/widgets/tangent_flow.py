"""ForwardStepper: watch tangents flow forward, one op at a time.

``ForwardStepper(f, primals, tangents)`` takes ``torch.func.jvp``'s arguments. It runs
``f`` once, for real, inside a dual level: each input is ``make_dual(primal, tangent)``
and every op's tangent comes from its JVP rule as the op runs. Nothing is recomputed
for the picture: as each op is published (``OpRecorded``), its output has just been given
its tangent by the engine, and the stepper keeps a copy of both, primal and tangent.

Step k lights the k-th op in the order the ops ran (creation order: forward mode needs
no reverse walk) on the forward picture the BackwardStepper draws, and the panel shows
the op's JVP formula, its primal value y and its tangent ẏ.

The moves are the BackwardStepper's own :class:`~.steps.StepCursor` over the finished
list of records: Prev, Next, Reset, the slider and Play are lookups, never a re-run.
"""

from __future__ import annotations

import html
import inspect
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from ..core import events
from ..core.tensor import Tensor
from ..record import forward_ad
from ..viz.model import ordinal
from .closing import ClosingBox
from .controls import StepBar
from .graphview import GraphView, Picture, picture_of
from .panel import STYLE, format_array, jvp_line, message_html, picture_and_panel
from .steps import RecordedSteps, StepCursor
from .time_travel import to_array


@dataclass(frozen=True)
class TangentStep:
    """One op of a forward-mode pass: its output's value and tangent, as copies."""

    index: int
    node: str  # the op's id on the picture (its graph node's id)
    op: str
    formula: str  # the op's JVP line, e.g. "JVP: ẏ = ẋ · y · (1 − y)"
    primal: np.ndarray
    tangent: np.ndarray | None  # None: the op has no derivative (a comparison, argmax)

    @property
    def step(self) -> int:
        return self.index + 1


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _check_inputs(primals: tuple, tangents: tuple) -> None:
    if len(primals) != len(tangents):
        raise RuntimeError(
            f"ForwardStepper: expected primals and tangents to have the same length, "
            f"got {len(primals)} primals and {len(tangents)} tangents"
        )
    for i, (p, t) in enumerate(zip(primals, tangents)):
        if not isinstance(p, Tensor) or not isinstance(t, Tensor):
            raise TypeError(f"ForwardStepper: primal and tangent {i} must be Tensors")


def run_forward(f: Callable, primals, tangents) -> tuple[list[TangentStep], Tensor, list]:
    """Run ``f`` on dual inputs and record each op's primal and tangent as it runs.

    The inputs are copies that require grad, so the ops also record the graph the
    picture is drawn from; the tangents are the forward-mode pass's own. Returns the
    records, the output (with its graph) and those input copies.
    """
    primals, tangents = _as_tuple(primals), _as_tuple(tangents)
    _check_inputs(primals, tangents)
    steps: list[TangentStep] = []

    def heard(event: events.OpRecorded) -> None:
        if forward_ad.current_level() is not own or event.node is None:
            return  # (a JVP rule's own ops run outside the level)
        steps.append(_step(len(steps), event, _tangent_of(own, event.output)))

    with forward_ad.dual_level():
        own = forward_ad.current_level()
        inputs = [p.detach().requires_grad_(True) for p in primals]
        for x, name in zip(inputs, input_names(f, primals)):
            x.name = name
        duals = [forward_ad.make_dual(x, t) for x, t in zip(inputs, tangents)]
        with events.subscribe(heard, "op_recorded"):
            out = f(*duals)
    if not isinstance(out, Tensor):
        raise TypeError(f"ForwardStepper: f must return a Tensor, not {type(out).__name__}")
    return steps, out, inputs


def input_names(f: Callable, primals: tuple) -> list[str]:
    """What the pictures call each input: the primal's own name, else the name ``f``
    gives its argument (``x`` in ``lambda x: ...``), else ``primals[0]``: the learner
    wrote each of them, never an id like ``t20``."""
    try:
        arguments = [
            p.name
            for p in inspect.signature(f).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):  # a builtin or a callable with no signature
        arguments = []
    return [
        p.name or (arguments[i] if i < len(arguments) else f"primals[{i}]")
        for i, p in enumerate(primals)
    ]


def _tangent_of(level, output_id: str) -> np.ndarray | None:
    """The tangent the engine attached to op output ``output_id`` just now (the last dual
    of the level), or None when the op gave it none."""
    if not level.duals:
        return None
    latest = level.duals[-1]()
    if latest is None or latest.uid != output_id:
        return None
    return to_array(forward_ad.tangent_of(latest, level))


def _step(index: int, event: events.OpRecorded, tangent) -> TangentStep:
    return TangentStep(
        index=index,
        node=event.node,
        op=event.op,
        formula=jvp_line(event.op) or "(no JVP formula)",
        primal=to_array(event.value),
        tangent=tangent,
    )


def op_names(records: list[TangentStep]) -> dict:
    """Node id -> the op as a learner tells it apart: ``exp`` where it ran once, else
    ``add (the fourth add)``, in the order the ops ran. Never the node id, which the
    picture does not show."""
    total = Counter(r.op for r in records)
    seen: Counter = Counter()
    names = {}
    for r in records:
        seen[r.op] += 1
        names[r.node] = f"{r.op} (the {ordinal(seen[r.op])} {r.op})" if total[r.op] > 1 else r.op
    return names


def tangent_html(step: TangentStep, total: int, note: str = "", name: str = "") -> str:
    """The panel: which op (``name``, as :func:`op_names` gives it), its JVP formula, its
    value y and its tangent ẏ."""
    tangent = "no tangent: no derivative" if step.tangent is None else format_array(step.tangent)
    rows = [
        ("JVP rule", html.escape(step.formula)),
        ("y (primal)", f"<pre class='wb-array'>{html.escape(format_array(step.primal))}</pre>"),
        ("ẏ (tangent)", f"<pre class='wb-array wb-tangent'>{html.escape(tangent)}</pre>"),
    ]
    body = "".join(f"<tr><th>{label}</th><td>{cell}</td></tr>" for label, cell in rows)
    title = f"Step {step.step} of {total}: {html.escape(name or step.op)}"
    extra = f"<p class='wb-note'>{html.escape(note)}</p>" if note else ""
    head = f"<div class='wb-step wb-tangent-step' data-node='{step.node}'>"
    table = f"<table class='wb-table'>{body}</table>"
    return f"{head}<div class='wb-title'>{title}</div>{table}{extra}</div>"


def _forward_picture(out: Tensor) -> Picture:
    from .. import viz
    from ..viz.model import without_grads

    model = viz.build_model(out, "forward")
    return picture_of(viz.Graph(viz.fold(without_grads(model), viz.FOLD_LIMIT)))


class ForwardStepper(ClosingBox):
    """Step through a forward-mode pass of ``f`` at ``primals`` along ``tangents``.

    Takes ``torch.func.jvp``'s arguments: ``ForwardStepper(f, (x,), (v,))``; a single
    Tensor may stand for a tuple of one. ``stepper.step`` is the panel's "Step k of N";
    :meth:`next`, :meth:`prev`, :meth:`reset`, :meth:`stop` and :meth:`go` are the buttons'
    moves; Play moves the slider. The everyday row is Prev, Next, Play and the step
    slider ("step k of n"); Reset, Stop and Play's speed wait behind "More ▾" (the
    controls every stepper shares: :class:`~.controls.StepBar`).
    ``output`` and ``output_tangent`` are what ``jvp`` returns; ``result`` is the output
    with its graph (the inputs, ``inputs``, are copies that require grad), from which
    :class:`~.two_modes.TwoModes` steps the reverse pass of the same program.
    """

    def __init__(self, f: Callable, primals, tangents, *, interval_ms: int = 800) -> None:
        super().__init__()
        self.records, out, self.inputs = run_forward(f, primals, tangents)
        if not self.records:
            raise ValueError("ForwardStepper: f ran no op on its inputs: nothing to step through")
        self.output = out.detach()
        self.result = out  # the output with its graph: a reverse pass of the same program
        last = self.records[-1]
        self.output_tangent = None if last.tangent is None else last.tangent
        self.cursor = StepCursor(RecordedSteps(self.records, ()))
        self.names = op_names(self.records)  # node id -> "add (the fourth add)"
        self.picture = _forward_picture(out)
        self.graph = GraphView()
        self.graph.add_class("wb-forward-graph")
        self.panel = widgets.HTML()
        self.panel.add_class("wb-panel")
        self.message = widgets.HTML()
        self._build_controls(interval_ms)
        self.graph.step_nodes = ["", *(self.picture.vertex_of(r.node) for r in self.records)]
        self.graph.dot = self.picture.dot
        self._show()

    def _build_controls(self, interval_ms: int) -> None:
        """The steppers' everyday row (Prev, Next, Play, "step k of n"); Reset, Stop and
        Play's speed behind "More ▾"."""
        self.controls = StepBar(self, interval_ms, self.graph)
        self.controls.name_on(self)
        self.children = [
            widgets.HTML(STYLE),
            self.message,
            *self.controls.rows(),
            picture_and_panel(self.graph, self.panel),
        ]

    @property
    def step(self) -> int:
        """The number of the step on show, from 1."""
        return self.cursor.position + 1

    @property
    def total(self) -> int:
        return len(self.records)

    @property
    def record(self) -> TangentStep:
        return self.cursor.record

    def next(self) -> bool:
        return self._move(self.cursor.next)

    def prev(self) -> bool:
        return self._move(self.cursor.prev)

    def reset(self) -> None:
        self._move(self.cursor.reset)

    def stop(self) -> None:
        """Stop playing and stay at the step on show."""
        self.play.playing = False

    def go(self, step: int) -> bool:
        """Show step ``step`` (from 1); False, and no move, when there is no such step."""
        return self._move(lambda: self.cursor.go(step - 1))

    def _on_slider(self, change: dict) -> None:
        """The slider moved (or Play moved it, in the browser): show its step."""
        if self.cursor is not None and change["new"] != self.step:
            self.go(change["new"])

    def _move(self, action) -> bool:
        moved = action()
        self._show()
        return bool(moved)

    def _show(self) -> None:
        note = self.cursor.note.replace("backward pass", "forward pass")
        name = self.names.get(self.record.node, "")
        self.panel.value = tangent_html(self.record, self.total, note, name)
        self.message.value = message_html(note) if note else ""
        self.controls.count(self.step, self.total)
        self.graph.step = self.step
        self.next_button.disabled = self.step == self.total
        self.prev_button.disabled = self.step == 1

    def _let_go(self) -> None:
        self.records = []
        self.cursor = None
        self.result = None
        self.inputs = []
