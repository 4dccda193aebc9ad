"""BackwardStepper: scrub through a real backward pass, one node at a time.

The graph is laid out once, in the browser. Each step highlights the node that just
ran (class ``active`` on its SVG ``<g>``) and the panel shows what it did: the op, its rule's
Forward/Backward text, the gradient that came in, the gradient sent along each
edge, any collapse-sum and a leaf's ``.grad`` before and after.

In live mode (given the loss) the stepper owns the engine's own step generator,
``make_backward_task(loss).steps()``: clicking Next runs the next node for real.
Records of steps already run are kept, so Prev and the slider are lookups, and every
move puts each ``.grad`` back to its value at the step on show (time travel: the
panel and ``x.grad`` printed in a later cell agree).

Steps are counted from 1 as the learner reads them, "Step k of N", with N known
before the first step (every node of the graph runs once). The picture writes the
gradient that just moved on its edge, lights a collapse-sum when it sums, and fills
a leaf in once its ``.grad`` arrives (see :mod:`.flow_marks`).

A big graph is folded into boxes. Clicking a box opens it (a box of many vertices
opens into a few parts, which open in turn); "Fold again" closes the innermost
opened box holding the selected node. The highlight is always on the innermost
visible box, which says how many of its steps have run.

The "view" switch shows the forward graph beside the backward one, or instead of
it (``BackwardStepper(loss, view="both")`` starts so), linked to it: clicking an
op, its backward node or a tensor it saved lights all of them (class ``linked``),
and while stepping the forward op whose gradient is being computed is lit (see
:mod:`.linked`).
"""

from __future__ import annotations

import html
import time
from dataclasses import replace

import ipywidgets as widgets

from ..core.tensor import Tensor
from ..record.graph import Node
from ..viz.model import without_grads
from .closing import ClosingBox
from .flow_marks import StepMarks
from .graphview import GraphView, Picture, draw_folded, picture_of
from .linked import Links, with_class
from .panel import STYLE, inspect_html, message_html, picture_and_panel, step_html
from .steps import LiveSteps, StepCursor, StepRecord, StepSource
from .trace_steps import is_trace, trace_source
from .verdicts import (
    Verdict,
    check_gradient,
    check_node,
    gradient_question,
    live_graph,
    node_question,
    read_text,
    score_text,
    unreadable,
)

PICKER_SIZE = 40  # the node picker lists at most this many nodes; the filter finds the rest
FASTEST_MS = 25  # the speed slider's quickest Play interval (40 steps a second)
PLAYING_PANEL_S = 0.25  # while Play runs, the panel is redrawn at most this often

PREDICT_KINDS = {False: "", True: "gradient", "gradient": "gradient", "node": "node"}
DEMO_NOTE = "(A demonstration: not in your score.)"

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


def more_tries(left: int) -> str:
    """What a learner reads after a wrong guess with ``left`` tries still to go."""
    tries = "one more try" if left == 1 else f"{left} more tries"
    return f"You have {tries} before the step is shown."


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


def _forward_picture(target) -> Picture | None:
    """The forward graph of a loss or trace; None when there is none to draw.

    A trace replayed from PyTorch has no forward ops of ours: its stepper shows the
    backward graph only.
    """
    from .. import viz

    try:
        model = viz.build_model(target, "forward")
    except ValueError:
        return None
    return picture_of(viz.Graph(viz.fold(without_grads(model), viz.FOLD_LIMIT)))


def _backward_model(target):
    """The unfolded backward picture of a loss or a trace (``wb.viz``'s model); no label
    shows a ``.grad``: the captions show each gradient from the step that delivers it."""
    from .. import viz

    return without_grads(viz.build_model(target, "backward"))


def _wrapping_row(children: list) -> widgets.HBox:
    return widgets.HBox(children, layout=widgets.Layout(flex_flow="row wrap"))


class BackwardStepper(ClosingBox):
    """Step through ``loss.backward()`` (or a saved Trace) node by node.

    Python API, mirrored by the buttons: :meth:`next`, :meth:`prev`, :meth:`reset`,
    :meth:`go`, :meth:`run_to`, :meth:`toggle_breakpoint`, :meth:`continue_`,
    :meth:`inspect`. ``retain_graph=True`` keeps saved tensors after their node ran;
    ``gradient`` is ȳ for a loss that is not one number, as in ``loss.backward(gradient)``.
    ``close()`` closes every part of it and lets go of the loss and its graph.

    Steps are numbered from 1, the same number everywhere: ``stepper.step == k`` is the
    panel's "Step k of N", the slider's k, ``stepper.go(k)``, and ``wb.viz.draw(loss,
    step=k)`` lights the same node. Step 1 is the root's node, shown as soon as the
    stepper is made.

    ``predict=True`` asks before it shows: each step's node and the gradient that reached
    it are shown, and what it sends on (a leaf's ``.grad`` after it) stays hidden until
    :meth:`predict` checks a guess, or :meth:`show_me` gives up on one.
    ``predict="node"`` asks instead which node runs next. No move skips a question:
    Next, the slider and Play stop at the step to predict. ``score`` is ``(right, asked)``.
    A wrong guess gets its diagnosis and, with ``tries=2`` (the default), one more try
    before the step is shown. A guess a lesson's own code makes to show how it works,
    ``predict(answer, demo=True)`` (and ``show_me(demo=True)``), is shown at once and
    never scored.
    """

    def __init__(
        self,
        target,
        *,
        gradient=None,
        retain_graph: bool = False,
        interval_ms: int = 800,
        view: str = "backward",
        predict: bool | str = False,
        tries: int = 2,
    ) -> None:
        super().__init__()
        if predict not in PREDICT_KINDS:
            raise ValueError(
                f"BackwardStepper: predict must be True (the gradients), 'node' (the next "
                f"node) or False, not {predict!r}."
            )
        if type(tries) is not int or tries < 1:
            raise ValueError(
                f"BackwardStepper: tries must be a whole number, 1 or more (the guesses a "
                f"step allows before it is shown), not {tries!r}."
            )
        self.predicting = PREDICT_KINDS[predict]
        self.tries = tries
        self.wrong_tries = 0  # wrong guesses at the step asked now
        self.revealed = 0 if self.predicting == "gradient" else 1  # steps shown in full
        self.right = self.asked = 0
        self.retain_graph = retain_graph
        self.cursor: StepCursor | None = None
        self.picture: Picture | None = None
        self.marks: StepMarks | None = None
        self.opened: list[frozenset] = []  # member sets of the boxes opened, in order
        self._unfolded = None  # the whole picture's model, folded afresh when a box opens
        self.inspected: str | None = None  # the node shown in the inspector
        self.linked: str | None = None  # the node lit in both pictures after a click
        self.flagged: list[str] = []  # nodes outlined as where a comparison found a difference
        self.forward_picture: Picture | None = None  # drawn the first time it is shown
        self._target = target  # a loss or trace, for the forward picture
        self.links: Links | None = None
        self.order: list = []  # node id per step, predicted before step 1, then as run
        self._checked = 0  # how many records are known to have run as predicted
        self.error: str | None = None
        self.names: dict = {}  # node id -> the name the picture shows it by
        self._syncing = False
        self._shown_at = 0.0  # when the panel was last drawn (time.monotonic)
        self.message = widgets.HTML()
        self.graph = GraphView()
        self.graph.add_class("wb-backward-graph")
        self.forward_graph: GraphView | None = None  # made the first time it is shown
        self.panel = widgets.HTML()  # a wide array scrolls inside it, never over the picture
        self.panel.add_class("wb-panel")
        self.graph_row = picture_and_panel(self.graph, self.panel)
        self.inspector = widgets.HTML()
        self.verdict: Verdict | None = None  # the last prediction's
        self._build_controls(interval_ms, view)
        try:
            source = source_for(target, retain_graph, gradient)
            self._unfolded = _backward_model(target)  # before any node runs and frees
            self.names = self._unfolded.names  # node id -> the name its label shows
            self.picture = draw_folded(self._unfolded)
            self.cursor = StepCursor(source)  # runs step 1
            self.graph.dot = self.picture.dot
        except Exception as err:  # a UI boundary: show the reason, never a traceback
            self._fail(err)
            return
        self.links = Links(self.picture, self.forward_picture, source.nodes)
        self.order = self._predicted_order()
        self._new_marks()
        self._fill_node_picker()
        self._observe(self.graph, self._on_select, names="selected")
        self._observe(self.view_switch, lambda change: self._switch_view(change["new"]))
        self._observe(self.play, self._on_play, names="playing")
        self._observe(self.node_filter, lambda change: self._fill_node_picker(change["new"]))
        self._show_order()
        self._switch_view(self.view_switch.value)
        self._show()

    # ----------------------------------------------------------- layout
    def _build_controls(self, interval_ms: int, view: str) -> None:
        self.prev_button = widgets.Button(description="◀ Prev", tooltip="show the previous step")
        self.next_button = widgets.Button(description="Next ▶", tooltip="run the next node")
        self.reset_button = widgets.Button(description="⟲ Reset", tooltip="back to step 1")
        self.over_button = widgets.Button(
            description="Step over ⤼", tooltip="run every step inside the lit folded box"
        )
        self.play = widgets.Play(min=1, max=1, interval=interval_ms, description="play")
        self.play.add_class("wb-play")  # its own ■ (back to step 1) is hidden: see STYLE
        self.stop_button = widgets.Button(
            description="■ Stop", tooltip="stop playing and stay at this step"
        )
        self.speed = widgets.IntSlider(
            value=max(interval_ms, FASTEST_MS),
            min=FASTEST_MS,
            max=2000,
            step=25,
            description="ms/step",
            tooltip="Play's pace in milliseconds a step (the browser adds a little)",
        )
        self.slider = widgets.IntSlider(min=1, max=1, description="step")
        self._keep(widgets.jslink((self.play, "value"), (self.slider, "value")))
        self._keep(widgets.jslink((self.slider, "value"), (self.graph, "step")))
        self.view_switch = widgets.ToggleButtons(
            options=[("backward", "backward"), ("forward", "forward"), ("side by side", "both")],
            value=view,
            description="view",
            style={"button_width": "90px"},
        )
        self._keep(widgets.jslink((self.speed, "value"), (self.play, "interval")))
        self.node_filter = widgets.Text(placeholder="find a node: name or id", description="find")
        self.fold_button = widgets.Button(
            description="Fold again ⟲", tooltip="close the opened box", disabled=True
        )
        self.node_picker = widgets.Dropdown(description="node")
        self.run_to_button = widgets.Button(description="Run to node")
        self.breakpoint_button = widgets.Button(description="Toggle breakpoint")
        self.continue_button = widgets.Button(description="Continue ▶▶")
        self._on_click(self.prev_button, lambda _: self.prev())
        self._on_click(self.next_button, lambda _: self.next())
        self._on_click(self.reset_button, lambda _: self.reset())
        self._on_click(self.over_button, lambda _: self.step_over())
        self._on_click(self.stop_button, lambda _: self.stop())
        self._on_click(self.fold_button, lambda _: self.close_box(self._selected_node()))
        self._on_click(self.run_to_button, lambda _: self.run_to(self.node_picker.value))
        self._on_click(
            self.breakpoint_button, lambda _: self.toggle_breakpoint(self.node_picker.value)
        )
        self._on_click(self.continue_button, lambda _: self.continue_())
        self._observe(self.slider, self._on_slider)
        self.step_count = widgets.HTML()  # "of 7" after the slider's own "step k"
        self.more_button = widgets.ToggleButton(
            description="More ▾", tooltip="step over, reset, speed, find a node, breakpoints, views"
        )
        self.more = widgets.VBox(
            [
                _wrapping_row([self.over_button, self.reset_button, self.stop_button, self.speed]),
                _wrapping_row([self.node_filter, self.node_picker, self.run_to_button]),
                _wrapping_row([self.breakpoint_button, self.continue_button, self.fold_button]),
                self.view_switch,
            ],
            layout=widgets.Layout(display="none"),
        )
        self._observe(self.more_button, lambda change: self._show_more(change["new"]))
        everyday = [self.prev_button, self.next_button, self.play, self.slider, self.step_count]
        self.children = [
            widgets.HTML(STYLE),
            self.message,
            *self._build_quiz(),
            _wrapping_row([*everyday, self.more_button]),
            self.more,
            self.graph_row,
            self.inspector,
        ]

    def _show_more(self, shown: bool) -> None:
        """The everyday controls are Prev, Next, Play and the step slider; the rest wait
        behind "More" (a picture to look at first, eighteen controls later)."""
        self.more.layout.display = "" if shown else "none"
        self.more_button.description = "Less ▴" if shown else "More ▾"

    def _build_quiz(self) -> list:
        """The question box of predict mode: the question, an answer, Check and Show me."""
        if not self.predicting:
            return []
        self.question_text = widgets.HTML()
        self.answer_box = widgets.Text(placeholder="e.g. 0.5, [1, 2], [[1, 2], None]")
        if self.predicting == "node":
            self.answer_box.placeholder = "a node's name, e.g. MulBackward0"
        self.check_button = widgets.Button(description="Check", button_style="primary")
        self.show_me_button = widgets.Button(description="Show me")
        self.verdict_text = widgets.HTML()
        self._on_click(self.check_button, lambda _: self.predict(read_text(self.answer_box.value)))
        self._on_click(self.show_me_button, lambda _: self.show_me())
        answer_row = _wrapping_row([self.answer_box, self.check_button, self.show_me_button])
        box = widgets.VBox([self.question_text, answer_row, self.verdict_text])
        box.add_class("wb-quiz")
        return [box]

    def _predicted_order(self) -> list:
        """Node ids in the order their steps run: as the picture predicts it, then any others."""
        nodes = self.cursor.source.nodes
        ordered = [uid for uid in self.picture.order if uid in nodes]
        placed = set(ordered)
        return ordered + [uid for uid in nodes if uid not in placed]

    def _fill_node_picker(self, query: str = "") -> None:
        """The nodes whose label contains ``query`` (all when empty), in step order.

        At most ``PICKER_SIZE`` are listed: on a 2,000-node graph the filter box finds
        the others. The node picked stays picked while it matches.
        """
        words = query.lower().split()
        found = [uid for uid in self.order if all(w in self._findable(uid) for w in words)]
        shown = found[:PICKER_SIZE]
        keep = self.node_picker.value if self.node_picker.value in shown else None
        self.node_picker.options = [(self._shown_name(uid), uid) for uid in shown]
        if shown:
            self.node_picker.value = keep or shown[0]
        more = len(found) - len(shown)
        self.node_filter.description = f"find (+{more})" if more else "find"

    def _shown_name(self, uid: str) -> str:
        """A node as the picture names it (``TanhBackward0 (the second tanh)``,
        ``AccumulateGrad (b)``); the engine's label where the picture names none."""
        return self.names.get(uid) or self.cursor.source.nodes[uid].label

    def _findable(self, uid: str) -> str:
        """What the filter searches: the shown name, and the engine's label with its id."""
        return f"{self._shown_name(uid)} {self.cursor.source.nodes[uid].label}".lower()

    def _fail(self, err: Exception) -> None:
        self.error = str(err)
        self.message.value = message_html(self.error)
        for control in self._controls():
            control.disabled = True

    def _controls(self) -> list:
        quiz = [self.answer_box, self.check_button, self.show_me_button] if self.predicting else []
        return quiz + [
            self.prev_button,
            self.next_button,
            self.reset_button,
            self.over_button,
            self.play,
            self.stop_button,
            self.slider,
            self.speed,
            self.node_filter,
            self.node_picker,
            self.run_to_button,
            self.breakpoint_button,
            self.continue_button,
            self.fold_button,
        ]

    def _let_go(self) -> None:
        """Drop the cursor: it holds the engine's paused pass, and so the whole graph."""
        self.cursor = None
        self.picture = None
        self.marks = None
        self._unfolded = None
        self._target = None

    # ----------------------------------------------------------- state
    @property
    def step(self) -> int:
        """The number of the step on show, from 1 (the panel's "Step k of N")."""
        return self.cursor.position + 1 if self.cursor else 0

    @property
    def total(self) -> int:
        """N, the number of steps of the pass (every node of the graph runs once)."""
        return self.cursor.source.expected_steps if self.cursor else 0

    @property
    def record(self) -> StepRecord | None:
        return self.cursor.record if self.cursor else None

    @property
    def active(self) -> str:
        """The id of the node that ran at the step on show (its vertex is lit ``active``)."""
        return self.cursor.record.node if self.cursor else ""

    # ----------------------------------------------------------- predict mode
    @property
    def reachable(self) -> int:
        """The furthest step a move may show: in predict mode, the step asked about."""
        if self.predicting == "gradient":
            return self.revealed + 1
        return self.revealed if self.predicting else self.total

    @property
    def hidden(self) -> bool:
        """Whether the step on show still hides its result (predict mode)."""
        return self.predicting == "gradient" and self.step > self.revealed

    @property
    def score(self) -> tuple[int, int]:
        """``(right, asked)``: a Show me counts as asked, and not right."""
        return self.right, self.asked

    @property
    def question(self) -> str:
        """What the stepper asks now ("" when it asks nothing, or the pass is all shown)."""
        if not self.predicting or self.cursor is None or self.revealed >= self.total:
            return ""
        if self.predicting == "node":
            return node_question(self.cursor.source.records[self.revealed - 1], self.names)
        record = self._record_at(self.revealed + 1)
        return gradient_question(record, self.names) if record is not None else ""

    def predict(self, answer, *, demo: bool = False) -> Verdict:
        """Check a guess about the step asked.

        ``answer``: the gradient sent to each input (a number, an array or a Tensor; a
        list of them, one per input, for a node with several) or, with
        ``predict="node"``, the next node's name, id, Node or Tensor.

        A right guess shows the step. A wrong one gets its diagnosis, and one more try
        while the learner has tries left (``tries``); the last wrong one shows the step.
        An answer that cannot be read leaves all as it was. ``demo=True`` marks a
        lesson's own demonstration: the step is shown at once, the score is untouched.
        """
        record = self._asked_record()
        if isinstance(record, Verdict):
            return self._say(record)
        step = self.revealed + 1
        if self.predicting == "gradient":
            verdict = check_gradient(record, answer, self.names)
        else:
            verdict = self._check_node(answer, step)
        if not verdict.counted:
            return self._say(verdict)
        if demo:
            self._reveal(step)
            return self._say(replace(verdict, message=f"{DEMO_NOTE} {verdict.message}", demo=True))
        if not verdict.right:
            self.wrong_tries += 1
            tries_left = self.tries - self.wrong_tries
            if tries_left > 0:
                said = f"{verdict.message} {more_tries(tries_left)}"
                return self._say(replace(verdict, message=said, tries_left=tries_left))
            verdict = replace(verdict, message=f"{verdict.message} Step {step} is shown now.")
        self.asked += 1
        self.right += verdict.right
        self._reveal(step)
        return self._say(verdict)

    def show_me(self, *, demo: bool = False) -> Verdict:
        """Reveal the step asked without a guess (counted as asked, not right, unless it is
        a lesson's demonstration: ``demo=True``)."""
        record = self._asked_record()
        if isinstance(record, Verdict):
            return self._say(record)
        self.asked += not demo
        self._reveal(self.revealed + 1)
        said = f"Shown: step {record.step} is in the panel."
        if demo:
            return self._say(Verdict(False, f"{DEMO_NOTE} {said}", counted=False, demo=True))
        return self._say(Verdict(False, said))

    def _asked_record(self) -> StepRecord | Verdict:
        """The record of the step asked about, or a verdict saying why there is none."""
        if not self.predicting:
            return unreadable("This stepper asks nothing: make it with predict=True.")
        if self.cursor is None:
            return unreadable(self.error or "This stepper is closed.")
        record = self._record_at(self.revealed + 1)
        if record is None:
            return unreadable("The backward pass is done: every step is shown.")
        return record

    def _record_at(self, step: int) -> StepRecord | None:
        """Step ``step``'s record, running the engine to it if need be (what is shown stays)."""
        source = self.cursor.source
        loaded = source.load(step - 1)
        source.show(self._grads_at)  # loading ran ahead: .grad back to the step on show
        return source.records[step - 1] if loaded else None

    def _check_node(self, guess, step: int) -> Verdict:
        if isinstance(guess, (Node, Tensor)):
            try:
                guess = self.node_id(guess)
            except ValueError as err:
                return unreadable(f"{err}.")
        source = self.cursor.source
        source.load_all()  # the whole order, to say which rule a wrong guess breaks
        source.show(self._grads_at)
        graph = live_graph(source.task.root_nodes) if isinstance(source, LiveSteps) else None
        return check_node(guess, source.records, step, graph, self.names)

    def _reveal(self, step: int) -> None:
        self.wrong_tries = 0  # the next question starts with every try
        self.revealed = max(self.revealed, step)
        self.cursor.go(step - 1)
        self.cursor.note = ""

    def _say(self, verdict: Verdict) -> Verdict:
        self.verdict = verdict
        if self.cursor is not None:
            self._show()
        return verdict

    @property
    def _grads_at(self) -> int:
        """The step index whose ``.grad`` values the tensors hold: a hidden step's result
        is not shown in ``x.grad`` either, so they hold the step before it."""
        return self.cursor.position - 1 if self.hidden else self.cursor.position

    def _stop_at_question(self) -> None:
        """A move went past the step asked about: stay there, and say why."""
        self.cursor.go(self.reachable - 1)
        self.cursor.note = f"Step {self.revealed + 1} first: predict it, or press Show me."

    def _unrevealed(self, captions: dict) -> dict:
        """The picture's captions less what the hidden step sent (its edges, a leaf's .grad)."""
        record = self.cursor.record
        tail = self.picture.vertex_of(record.node)
        sent = (f"{tail}->", f"{record.node}.sum")
        kept = {key: text for key, text in captions.items() if not key.startswith(sent)}
        if record.leaf is not None:
            kept.pop(record.node, None)
        return kept

    def _show_question(self) -> None:
        if not self.predicting:
            return
        question = self.question or "Every step is shown."
        asked = f"<b>Predict:</b> {html.escape(question)}"  # (an emoji drew as a box)
        self.question_text.value = f"<div class='wb-question'>{asked}</div>"
        said = self.verdict.message if self.verdict else ""
        mark = "" if self.verdict is None else ("✔ " if self.verdict.right else "✘ ")
        self.verdict_text.value = (
            f"<div class='wb-verdict'>{mark}{html.escape(said)} "
            f"<i>({score_text(*self.score)})</i></div>"
        )
        waiting = bool(self.question)
        self.check_button.disabled = self.show_me_button.disabled = not waiting

    # ----------------------------------------------------------- moves
    def next(self) -> bool:
        """Run (or show again) the next node; False at the end of the pass."""
        return self._move(lambda c: c.next())

    def prev(self) -> bool:
        """Show the previous step; False at step 1."""
        return self._move(lambda c: c.prev())

    def reset(self) -> None:
        """Show the first step again; every ``.grad`` goes back to its value then."""
        self._move(lambda c: c.reset())

    def stop(self) -> None:
        """Stop Play and stay at the step it reached (ipywidgets' own ■ goes back to step 1)."""
        self.play.playing = False

    def step_over(self) -> bool:
        """Run every step inside the folded box that is lit; stop at the first step after it.

        On a vertex of its own this is :meth:`next`.
        """
        if self.cursor is None:
            return False
        box = self.picture.vertex_of(self.active)
        return self._move(lambda c: c.run_until(lambda r: self.picture.vertex_of(r.node) != box))

    def go(self, step: int) -> bool:
        """Show step ``step`` (from 1), running the engine up to it in live mode.

        False, and no move, when the pass has no such step.
        """
        if step < 1:
            return False
        return self._move(lambda c: c.go(step - 1))

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
        self._show()
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
        if self.step > self.reachable:
            self._stop_at_question()
            result = False
        self._show()
        return bool(result) if result is not None else True

    def _on_slider(self, change) -> None:
        if self._syncing or self.cursor is None:
            return
        if not self.cursor.go(change["new"] - 1):
            self.cursor.note = "The backward pass ended before that step."
        if self.step > self.reachable:
            self._stop_at_question()
        if self.play.playing and time.monotonic() - self._shown_at < PLAYING_PANEL_S:
            return  # .grad is rewound; the panel follows a few times a second while playing
        # The browser already moved the pictures (jslink): setting their step here too
        # would race Play, sending a picture back to a step it has left.
        self._show(pictures=self.slider.value != self.cursor.position + 1)

    def _on_play(self, change) -> None:
        """Play stopped: draw the panel of the step it stopped at."""
        if not change["new"] and self.cursor is not None:
            self._show(pictures=False)

    # ----------------------------------------------------------- display
    def _show_order(self) -> None:
        """Send the lit vertex of every step to the browser (slot 0 unused: steps count from 1).

        Sent once, and again only if a step ran another node than predicted, so Play
        can move the highlight in the browser without the kernel.
        """
        self.graph.step_nodes = ["", *(self.picture.vertex_of(uid) for uid in self.order)]
        if self.forward_graph is not None:
            lit = (self.forward_picture.vertex_of(uid) for uid in self.order)
            self.forward_graph.step_nodes = ["", *lit]

    def _check_order(self) -> None:
        records = self.cursor.source.records
        order = self.order
        if all(r.index < len(order) and order[r.index] == r.node for r in records[self._checked :]):
            self._checked = len(records)
            return
        ran = [r.node for r in records]
        if self.order[: len(ran)] != ran:
            placed = set(ran)
            self.order = ran + [uid for uid in self.order if uid not in placed]
            self._new_marks()
            self._show_order()
        self._checked = len(records)

    def _show(self, pictures: bool = True) -> None:
        self._shown_at = time.monotonic()
        cursor = self.cursor
        source = cursor.source
        if self.hidden:
            source.show(self._grads_at)
        total = source.expected_steps
        records = source.records
        self._check_order()
        self._syncing = True
        try:
            self.slider.max = self.play.max = min(total, self.reachable)
            self.step_count.value = f"<span class='wb-step-count'>of {total}</span>"
            self.slider.value = cursor.position + 1
            if pictures:
                self.graph.step = cursor.position + 1
            classes = self.marks.classes(records, cursor.position, cursor.breakpoints)
            if self.linked:
                classes = with_class(classes, self.links.in_backward(self.linked), "linked")
            flagged = [self.picture.vertex_of(uid) for uid in self.flagged]
            classes = with_class(classes, flagged, "differs")
            self.graph.classes = classes
            captions = self.marks.captions(records, cursor.position)
            self.graph.captions = self._unrevealed(captions) if self.hidden else captions
            if self.forward_graph is not None:
                lit = self.links.in_forward(self.linked) if self.linked else []
                self.forward_graph.classes = with_class({}, lit, "linked")
                if pictures:
                    self.forward_graph.step = cursor.position + 1
        finally:
            self._syncing = False
        self.panel.value = step_html(
            cursor.record, total, cursor.note, hidden=self.hidden, names=self.names
        )
        self.next_button.disabled = source.finished and cursor.position == len(records) - 1
        self.next_button.disabled |= self.step >= self.reachable and self.revealed < total
        self._show_question()
        self.prev_button.disabled = cursor.position == 0
        if self.inspected:
            self.inspect(self.inspected)  # its gradient and saved tensors at this step

    def flag(self, nodes: list[str]) -> None:
        """Outline ``nodes`` (ids) in the picture, at every step: where a comparison found
        the first difference (:class:`~.compare.CompareStepper`)."""
        self.flagged = list(nodes)
        self._show(pictures=False)

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
        self.inspected = uid
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
            self._syncing = True  # a selection made here is not a click: it opens no box
            try:
                self.graph.selected = vertex
            finally:
                self._syncing = False

    # ----------------------------------------------------------- folded boxes
    def open_box(self, vertex: str) -> bool:
        """Open a folded box: its vertices are drawn (or, if many, a few parts of them)."""
        if self.picture is None or self.picture.kinds.get(vertex) != "fold":
            return False
        self.opened.append(frozenset(self.picture.members[vertex]))
        self._redraw()
        return True

    def close_box(self, node: str | None = None) -> bool:
        """Fold again the innermost opened box holding ``node`` (default: the last opened).

        Boxes opened inside it close with it.
        """
        if not self.opened:
            return False
        holding = [s for s in self.opened if node in s] if node else []
        closing = min(holding, key=len) if holding else self.opened[-1]
        self.opened = [s for s in self.opened if not s <= closing]
        self._redraw()
        return True

    def _redraw(self) -> None:
        self.picture = draw_folded(self._unfolded, self.opened)
        self.links = Links(self.picture, self.forward_picture, self.cursor.source.nodes)
        self.graph.selected = ""
        self.graph.dot = self.picture.dot
        self.fold_button.disabled = not self.opened
        self._new_marks()
        self._show_order()
        self._show()

    def _new_marks(self) -> None:
        opened = set().union(*self.opened) if self.opened else set()
        inside = {vid for vid, m in self.picture.members.items() if opened.intersection(m)}
        self.marks = StepMarks(self.picture, self.order, opened_vertices=inside)

    def _selected_node(self) -> str | None:
        selected = self.graph.selected
        return self.picture.node_of(selected) if selected and self.picture else None

    def _on_select(self, change) -> None:
        """A click in the picture: open a folded box, or inspect the node a vertex is about."""
        if self._syncing:
            return
        if change["new"] and self.open_box(change["new"]):
            return
        uid = self.picture.node_of(change["new"]) if change["new"] else None
        if uid is not None:
            self.link(uid)

    def _on_forward_select(self, change) -> None:
        """A click in the forward picture: the op (or tensor) names a node; link it."""
        if self._syncing or not change["new"] or self.forward_picture is None:
            return
        uid = self.forward_picture.node_of(change["new"])
        if uid is not None:
            self.link(uid)

    def link(self, node) -> None:
        """Light ``node`` in both pictures: its op, its backward node, the tensors it saved.

        The inspector shows it too.
        """
        if self.cursor is None:
            return
        uid = self.node_id(node)
        self.linked = uid
        if uid in dict(self.node_picker.options).values():
            self.node_picker.value = uid
        self.inspect(uid)
        self._show()

    def _switch_view(self, view: str) -> None:
        """Show the backward graph, the forward graph, or both side by side."""
        if self.cursor is None:
            return
        shown = {"backward": (False, True), "forward": (True, False), "both": (True, True)}[view]
        forward, backward = shown
        if forward and self.forward_picture is None:
            self.forward_picture = _forward_picture(self._target)
            self.links = Links(self.picture, self.forward_picture, self.cursor.source.nodes)
        forward = forward and self.forward_picture is not None
        backward = backward or not forward  # no forward picture: the backward one stays
        if forward:
            self._forward_view()
        if self.forward_graph is not None:  # widths: picture_and_panel's flex, wrapping
            self.forward_graph.layout.display = "" if forward else "none"
        self.graph.layout.display = "" if backward else "none"

    def _forward_view(self) -> GraphView:
        """The forward picture's view, made (and linked to the slider) the first time."""
        if self.forward_graph is None:
            layout = widgets.Layout(flex=self.graph.layout.flex, min_width="0", width="auto")
            view = GraphView(dot=self.forward_picture.dot, layout=layout)
            view.add_class("wb-forward-graph")
            self._keep(widgets.jslink((self.slider, "value"), (view, "step")))
            self._observe(view, self._on_forward_select, names="selected")
            self.forward_graph = view
            self.graph_row.children = [view, self.graph, self.panel]
            self._show_order()
            self._show()
        return self.forward_graph
