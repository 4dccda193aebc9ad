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

The widget is composed of parts, each with one job: :mod:`.controls` (the buttons,
the sliders, "More" and the node finder), :mod:`.backward_pictures` (the two pictures,
their folded boxes and what a step lights), :mod:`.quiz` (predict mode's questions,
answers and score) and :mod:`.steps` with :mod:`.time_travel` (the steps and every
``.grad`` at each). This module holds what joins them: the moves, the panel, the
inspector, and the Python API the buttons mirror.
"""

from __future__ import annotations

import time

import ipywidgets as widgets

from ..core.tensor import Tensor
from ..record.graph import Node
from .backward_pictures import StepPictures
from .closing import ClosingBox
from .controls import StepperControls
from .panel import STYLE, inspect_html, message_html, step_html
from .quiz import PredictQuiz
from .steps import LiveSteps, StepCursor, StepRecord, StepSource
from .trace_steps import is_trace, trace_source
from .verdicts import Verdict

PLAYING_PANEL_S = 0.25  # while Play runs, the panel is redrawn at most this often

QUIZ_NAMES = ("question_text", "answer_box", "check_button", "show_me_button", "verdict_text")

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


def _part(part: str, name: str, doc: str | None) -> property:
    """A read-only attribute of the stepper that is one of its part's (``pictures``,
    ``quiz``): the names tests and lessons read stay, the state lives in the part."""
    return property(lambda stepper: getattr(getattr(stepper, part), name), doc=doc)


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
        self.quiz = PredictQuiz(self, predict, tries)  # checks predict and tries first
        self.retain_graph = retain_graph
        self.cursor: StepCursor | None = None
        self.inspected: str | None = None  # the node shown in the inspector
        self.error: str | None = None
        self.names: dict = {}  # node id -> the name the picture shows it by
        self._syncing = False
        self._shown_at = 0.0  # when the panel was last drawn (time.monotonic)
        self.message = widgets.HTML()
        self.pictures = StepPictures(self, target)
        self.graph, self.panel = self.pictures.graph, self.pictures.panel
        self.graph_row = self.pictures.graph_row
        self.inspector = widgets.HTML()
        self.controls = StepperControls(self, interval_ms, view)
        self._name_parts()
        self.children = [
            widgets.HTML(STYLE),
            self.message,
            *self.quiz.build(),
            *self.controls.rows(),
            self.graph_row,
            self.inspector,
        ]
        self._name_quiz_parts()
        try:
            source = source_for(target, retain_graph, gradient)
            self.names = self.pictures.draw()  # node id -> the name its label shows
            self.cursor = StepCursor(source)  # runs step 1
            self.graph.dot = self.picture.dot
        except Exception as err:  # a UI boundary: show the reason, never a traceback
            self._fail(err)
            return
        self.pictures.start(source.nodes)
        self.controls.fill_node_picker()
        self._observe(self.graph, self._on_select, names="selected")
        self._observe(self.view_switch, lambda change: self._switch_view(change["new"]))
        self._observe(self.play, self._on_play, names="playing")
        self._observe(
            self.node_filter, lambda change: self.controls.fill_node_picker(change["new"])
        )
        self.pictures.show_order()
        self._switch_view(self.view_switch.value)
        self._show()

    def _name_parts(self) -> None:
        """The controls by the names the stepper has always given them (tests, lessons)."""
        self.controls.name_on(self)

    def _name_quiz_parts(self) -> None:
        """The question box's widgets by their names, in predict mode."""
        for name in QUIZ_NAMES if self.quiz.predicting else ():
            setattr(self, name, getattr(self.quiz, name))

    def _fail(self, err: Exception) -> None:
        self.error = str(err)
        self.message.value = message_html(self.error)
        for control in self.quiz.controls() + self.controls.all():
            control.disabled = True

    def _let_go(self) -> None:
        """Drop the cursor: it holds the engine's paused pass, and so the whole graph."""
        self.cursor = None
        self.pictures.let_go()

    # ----------------------------------------------------------- the parts' state
    picture = _part("pictures", "picture", "The backward picture as drawn now (boxes folded).")
    forward_picture = _part("pictures", "forward_picture", "The forward picture, once drawn.")
    forward_graph = _part("pictures", "forward_graph", "The forward picture's view, once shown.")
    marks = _part("pictures", "marks", "The step marks of the backward picture.")
    opened = _part("pictures", "opened", "Member sets of the boxes opened, in order.")
    links = _part("pictures", "links", "What lights together in the two pictures.")
    linked = _part("pictures", "linked", "The node lit in both pictures after a click.")
    flagged = _part("pictures", "flagged", "Nodes outlined where a comparison differs.")
    order = _part("pictures", "order", "Node id per step: predicted, then as run.")
    _unfolded = _part("pictures", "unfolded", "The whole picture's model, unfolded.")
    predicting = _part("quiz", "predicting", 'What predict mode asks: "gradient", "node" or "".')
    tries = _part("quiz", "tries", "The guesses a step allows before it is shown.")
    wrong_tries = _part("quiz", "wrong_tries", "Wrong guesses at the step asked now.")
    revealed = _part("quiz", "revealed", "The steps shown in full (predict mode).")
    right = _part("quiz", "right", "Right guesses so far.")
    asked = _part("quiz", "asked", "Steps asked so far (a Show me counts).")
    verdict = _part("quiz", "verdict", "The last prediction's verdict.")
    reachable = _part("quiz", "reachable", PredictQuiz.reachable.__doc__)
    hidden = _part("quiz", "hidden", PredictQuiz.hidden.__doc__)
    score = _part("quiz", "score", PredictQuiz.score.__doc__)
    question = _part("quiz", "question", PredictQuiz.question.__doc__)

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

    @property
    def _grads_at(self) -> int:
        """The step index whose ``.grad`` values the tensors hold: a hidden step's result
        is not shown in ``x.grad`` either, so they hold the step before it."""
        return self.cursor.position - 1 if self.hidden else self.cursor.position

    # ----------------------------------------------------------- predict mode
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
        return self.quiz.predict(answer, demo=demo)

    def show_me(self, *, demo: bool = False) -> Verdict:
        """Reveal the step asked without a guess (counted as asked, not right, unless it is
        a lesson's demonstration: ``demo=True``)."""
        return self.quiz.show_me(demo=demo)

    def _record_at(self, step: int) -> StepRecord | None:
        """Step ``step``'s record, running the engine to it if need be (what is shown stays)."""
        return self.quiz.record_at(step)

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
            self.quiz.stop_at_question()
            result = False
        self._show()
        return bool(result) if result is not None else True

    def _on_slider(self, change) -> None:
        if self._syncing or self.cursor is None:
            return
        if not self.cursor.go(change["new"] - 1):
            self.cursor.note = "The backward pass ended before that step."
        if self.step > self.reachable:
            self.quiz.stop_at_question()
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
    def _show(self, pictures: bool = True) -> None:
        self._shown_at = time.monotonic()
        cursor = self.cursor
        source = cursor.source
        if self.hidden:
            source.show(self._grads_at)
        total = source.expected_steps
        records = source.records
        self.pictures.check_order(records)
        self._syncing = True
        try:
            self.controls.count(cursor.position + 1, total, self.reachable)
            hide = self.quiz.unrevealed if self.hidden else None
            self.pictures.paint(cursor, pictures, hide)
        finally:
            self._syncing = False
        self.panel.value = step_html(
            cursor.record, total, cursor.note, hidden=self.hidden, names=self.names
        )
        self.next_button.disabled = source.finished and cursor.position == len(records) - 1
        self.next_button.disabled |= self.step >= self.reachable and self.revealed < total
        self.quiz.show_question()
        self.prev_button.disabled = cursor.position == 0
        if self.inspected:
            self.inspect(self.inspected)  # its gradient and saved tensors at this step

    def flag(self, nodes: list[str]) -> None:
        """Outline ``nodes`` (ids) in the picture, at every step: where a comparison found
        the first difference (:class:`~.compare.CompareStepper`)."""
        self.pictures.flagged = list(nodes)
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
        if not self.pictures.open_box(vertex):
            return False
        self._redraw()
        return True

    def close_box(self, node: str | None = None) -> bool:
        """Fold again the innermost opened box holding ``node`` (default: the last opened).

        Boxes opened inside it close with it.
        """
        if not self.pictures.close_box(node):
            return False
        self._redraw()
        return True

    def _redraw(self) -> None:
        self.pictures.refold(self.cursor.source.nodes)
        self.fold_button.disabled = not self.opened
        self._show()

    def _selected_node(self) -> str | None:
        return self.pictures.selected_node()

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
        self.pictures.linked = uid
        if uid in dict(self.node_picker.options).values():
            self.node_picker.value = uid
        self.inspect(uid)
        self._show()

    def _switch_view(self, view: str) -> None:
        """Show the backward graph, the forward graph, or both side by side."""
        if self.cursor is None:
            return
        self.pictures.switch_view(view, self.cursor.source.nodes)
