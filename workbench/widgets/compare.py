"""CompareStepper: two backward passes side by side, in lockstep, and where they part.

Each side is a loss (run live by the engine), a saved Trace (of the engine, or of a
loop you wrote: :func:`~workbench.exercises.backward_loop.trace_loop`), or a PyTorch
loss (run by PyTorch and recorded with ``wb.from_torch``). Both passes run to the end,
then their nodes are matched by *where they are in the graph*, not by when they ran:
the first nodes (the roots) with each other, then along each matched pair's edges,
input by input. Two nodes match when they run the same op (``MulBackward0`` and
``MulBackward0``; a custom Function's node, which has no built-in op, stands in for any
op) with as many inputs taking a gradient; a leaf's ``AccumulateGrad`` is matched with
the one at the end of the same edge, so with the same leaf.

Why not step k of one with step k of the other? Because the order is not all fixed.
An engine runs any node that is ready (all its gradient has arrived); when several are
ready at once it may pick any of them. PyTorch picks with a heap ordered by sequence
number, and every ``AccumulateGrad`` has the same one (the largest there is), so which
of several ready leaves runs first is the heap's tie-break. The workbench's engine
breaks ties as PyTorch's heap does, so the two agree step for step; but a loop a
learner writes, or another engine, may pick any ready node first, and its pass is
still right: for ``(tanh(a * b) * a + b).sum()``, a loop that runs b's
``AccumulateGrad`` before a's, matched by position, would have a's leaf against b's at
step 6, a "difference" that is not one. Matched by place, they agree.

What is a difference, then, walking a's steps in a's order; the first found is
:attr:`CompareStepper.first_difference`:

- the graphs part: another op, another number of inputs taking a gradient, or an edge
  that leads to a node the other graph reaches another way;
- a node runs before all of its gradient has arrived (a node that sends it one runs
  later), in either pass: no engine may choose that order;
- a node runs in one pass and not in the other, or more times in one;
- a gradient differs: the one that reached the node or one it sent, said in the
  exercise checkers' words (:func:`~workbench.exercises.diagnose.compare`): "Every
  element of b's gradient for x is 2 times a's."

Steps are numbered as in a; in lockstep, step k shows a's step k beside b's step that
runs the same node, which may have another number in b.
"""

from __future__ import annotations

import html
import re
from collections import deque
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from ..exercises.diagnose import Finding, compare, shape_text
from .closing import ClosingBox
from .controls import StepBar
from .panel import STYLE, format_array, message_html
from .stepper import BackwardStepper
from .steps import GradFlow, StepRecord
from .verdicts import edge_name

KEPT_IN_FULL = 1_000_000  # a PyTorch pass is recorded with arrays this big kept whole
FLOAT32_RTOL = 1e-4  # two float32 passes agree to rounding, not to the last bit
FLOAT32_ATOL = 1e-6


@dataclass(frozen=True)
class Difference:
    """The first step where two passes part.

    ``step`` is a's step (the lockstep's number), ``step_b`` b's step running the node in
    the same place, when there is one; ``node`` is a's node there, named as the picture
    draws it (``MulBackward0``); ``node_b`` b's; ``finding`` the checkers' diagnosis of a
    gradient (None when the graphs, or the order, differ), and ``values`` the two
    gradients themselves.
    """

    step: int
    node: str
    node_b: str
    diagnosis: str
    finding: Finding | None = None
    step_b: int | None = None
    values: tuple = ()  # (a's, b's) for a gradient that differs


def op_key(record: StepRecord) -> str:
    """``MulBackward0`` and a custom ``MulBackward`` both read ``mulbackward``."""
    return re.sub(r"\d+$", "", record.name).lower()


def is_custom(record: StepRecord) -> bool:
    """A custom Function's node: it runs no built-in op (a leaf's node is no Function)."""
    return record.op is None and record.leaf is None and record.name != "AccumulateGrad"


def edges(record: StepRecord) -> list[tuple[int, GradFlow]]:
    """``(input index, flow)`` of the inputs that take a gradient.

    An input that takes none (pow's exponent, a constant factor) is an edge to nothing
    in one engine and no edge at all in another: it is left out of the match.
    """
    return [(i, flow) for i, flow in enumerate(record.grads_out) if flow.target is not None]


def by_target(record: StepRecord) -> list[tuple[int, list[GradFlow]]]:
    """The edges that take a gradient grouped by the node they lead to, in order:
    ``x * x`` sends x's gradient along two edges, a custom ``Square`` along one."""
    groups: dict[str, tuple[int, list[GradFlow]]] = {}
    for i, flow in edges(record):
        groups.setdefault(flow.target, (i, []))[1].append(flow)
    return list(groups.values())


def edge_pairs(a: StepRecord, b: StepRecord) -> list | None:
    """``(input index, a's flows, b's flows)`` for the edges of two nodes in one place.

    Edge for edge when both have as many; a custom Function's node against an op that
    reaches the same inputs along more edges (``x * x`` against ``Square``), input for
    input, each input's flows to be summed; None when they cannot be paired.
    """
    ea, eb = edges(a), edges(b)
    if len(ea) == len(eb):
        return [(i, [fa], [fb]) for (i, fa), (_, fb) in zip(ea, eb)]
    ga, gb = by_target(a), by_target(b)
    if (is_custom(a) or is_custom(b)) and len(ga) == len(gb):
        return [(i, fas, fbs) for (i, fas), (_, fbs) in zip(ga, gb)]
    return None


def summed(flows: list[GradFlow]):
    """What the flows bring to one input, together (a summary string stays as it is)."""
    values = [flow.value for flow in flows]
    if len(values) == 1 or any(v is None or isinstance(v, str) for v in values):
        return values[0]
    return sum(values[1:], values[0])


def same_op(a: StepRecord, b: StepRecord) -> bool:
    if op_key(a) == op_key(b):
        return True
    return is_custom(a) or is_custom(b)


def tolerances(*values) -> tuple[float, float]:
    """Float64 passes agree to the checkers' tolerance; a float32 one to its rounding."""
    arrays = [np.asarray(v) for v in values if isinstance(v, np.ndarray)]
    if arrays and all(a.dtype == np.float64 or a.dtype == np.complex128 for a in arrays):
        return 1e-6, 1e-9
    return FLOAT32_RTOL, FLOAT32_ATOL


# ------------------------------------------------------------ one pass
class Pass:
    """One side's steps, and what the match needs of them: where each node runs, and
    which nodes send it a gradient (those with an edge into it that run in this pass)."""

    def __init__(self, name: str, records: list[StepRecord]) -> None:
        self.name = name
        self.records = records
        self.runs: dict[str, list[int]] = {}  # node id -> the positions it runs at
        for position, record in enumerate(records):
            self.runs.setdefault(record.node, []).append(position)
        self.senders: dict[str, list[str]] = {}
        for record in records:
            for _, flow in edges(record):
                senders = self.senders.setdefault(flow.target, [])
                if flow.target in self.runs and record.node not in senders:
                    senders.append(record.node)

    def first(self, node: str) -> StepRecord | None:
        """The node's first run (None: it never runs in this pass)."""
        runs = self.runs.get(node)
        return self.records[runs[0]] if runs else None

    def roots(self) -> list[str]:
        """The nodes no other node of the pass sends a gradient to, as they first run."""
        return [node for node in self.runs if not self.senders.get(node)]

    def too_early(self, position: int) -> str | None:
        """Why the step at ``position`` ran too early (a node that sends it a gradient
        ran later), or None."""
        record = self.records[position]
        for sender_id in self.senders.get(record.node, ()):
            later = self.runs[sender_id][0]
            if later > position:
                sender = self.records[later]
                return (
                    f"{self.name} runs {record.name} before all of its gradient has arrived: "
                    f"{sender.name} {sender.node} sends it a gradient later, at "
                    f"{self.name}'s step {sender.step}. A node runs once every edge into it "
                    "has delivered (its dependency count is 0), on their sum."
                )
        return None


# ------------------------------------------------------------ the match
class PassMatch:
    """Passes ``a`` and ``b`` matched node by node, by place in the graph (see the module).

    ``partner`` maps a's node ids to b's; ``parted`` says, for a node of a, how the two
    graphs part there; ``spelled`` where they are the same place spelled differently
    (``x * x`` against a custom ``Square``). ``names`` are how the messages call the
    passes ("the built-in", "your Exp"; "a" and "b" when nothing better is known).
    """

    def __init__(
        self, a: list[StepRecord], b: list[StepRecord], names: tuple[str, str] = ("a", "b")
    ) -> None:
        self.a, self.b = Pass(names[0], a), Pass(names[1], b)
        self.names = names
        self.partner: dict[str, str] = {}
        self.parted: dict[str, str] = {}
        self.spelled: dict[str, str] = {}
        self._match()

    def _match(self) -> None:
        """The roots in the order they run, then each matched pair's edges, in order."""
        taken: dict[str, str] = {}  # b's node -> a's
        pending = deque(zip(self.a.roots(), self.b.roots()))
        for na, nb in pending:
            self.partner[na], taken[nb] = nb, na
        while pending:
            na, nb = pending.popleft()
            ra, rb = self.a.first(na), self.b.first(nb)
            if ra is None or rb is None:
                continue  # one pass never runs it: said when a's steps are walked
            pairs = edge_pairs(ra, rb) if same_op(ra, rb) else None
            if pairs is None:
                self.parted[na] = other_op(ra, rb, self.names)
                continue
            if len(edges(ra)) != len(edges(rb)):
                self.spelled[na] = spelled_differently(ra, rb, self.names)
            for i, (fa, *_), (fb, *_) in pairs:
                ta, tb = fa.target, fb.target
                if ta in self.partner or tb in taken:
                    if self.partner.get(ta) != tb or taken.get(tb) != ta:
                        self.parted.setdefault(na, crossed(ra, rb, i, fa, fb, self.names))
                    continue
                self.partner[ta], taken[tb] = tb, ta
                pending.append((ta, tb))

    def b_position(self, position: int) -> int | None:
        """Where b runs the node a runs at ``position`` (the same run of it), if it does."""
        node = self.a.records[position].node
        occurrence = self.a.runs[node].index(position)
        runs = self.b.runs.get(self.partner.get(node), [])
        return runs[occurrence] if occurrence < len(runs) else None

    def first_difference(self) -> Difference | None:
        """The first of a's steps where the passes part; then b's steps a has nothing for."""
        for position in range(len(self.a.records)):
            found = self.difference_at(position)
            if found is not None:
                return found
        return self.unmatched_in_b() or self.summaries_only()

    def difference_at(self, position: int) -> Difference | None:
        ra = self.a.records[position]
        nb = self.partner.get(ra.node)
        runs_a, runs_b = self.a.runs[ra.node], self.b.runs.get(nb, [])
        occurrence = runs_a.index(position)
        if occurrence == 0 and ra.node in self.parted:
            return Difference(ra.step, ra.name, self.b.first(nb).name, self.parted[ra.node])
        if nb is None:
            return no_counterpart(ra, self.names)
        if occurrence >= len(runs_b):
            return fewer_runs(ra, occurrence, len(runs_b), self.names)
        rb = self.b.records[runs_b[occurrence]]
        early = self.a.too_early(position) or self.b.too_early(runs_b[occurrence])
        if early is not None:
            said = f"{at(ra, rb, self.names)}: {early}"
            return Difference(ra.step, ra.name, rb.name, said, None, rb.step)
        found = step_difference(ra, rb, self.names)
        if found is None and occurrence == len(runs_a) - 1 and len(runs_b) > len(runs_a):
            steps_b = [self.b.records[q].step for q in runs_b]
            return more_runs(ra, rb, len(runs_a), steps_b, self.names)
        return found

    def unmatched_in_b(self) -> Difference | None:
        """A step of b that runs no node of a's graph (b goes on where a has stopped)."""
        matched = set(self.partner.values())
        for record in self.b.records:
            if record.node not in matched:
                return Difference(
                    min(record.step, len(self.a.records) + 1),
                    "",
                    record.name,
                    f"At its step {record.step} {self.b.name} runs {record.name} {record.node}, "
                    f"which has no counterpart in {self.a.name}: {self.a.name}'s graph has no "
                    "node in that place.",
                    step_b=record.step,
                )
        return None

    def summaries_only(self) -> Difference | None:
        """A matched step where a saved Trace kept only a summary: said, never agreement."""
        for position, ra in enumerate(self.a.records):
            q = self.b_position(position)
            if q is None or not any(has_summary(r) for r in (ra, self.b.records[q])):
                continue
            return Difference(
                ra.step,
                ra.name,
                self.b.records[q].name,
                f"At step {ra.step} ({ra.name}) a saved Trace kept only a summary of a "
                "gradient, not its values, so the passes cannot be compared there: record "
                "it with wb.trace(small=...) large enough to keep them.",
                step_b=self.b.records[q].step,
            )
        return None


def difference_between(
    a: list[StepRecord], b: list[StepRecord], names: tuple[str, str] = ("a", "b")
) -> Difference | None:
    """The first step (from 1, in a's order) where ``a`` and ``b`` part, or None."""
    return PassMatch(a, b, names).first_difference()


def has_summary(record: StepRecord) -> bool:
    """Does the record hold a gradient only as a summary (a string)?"""
    values = (*record.grads_in, *(flow.value for flow in record.grads_out))
    return any(isinstance(v, str) for v in values)


def at(ra: StepRecord, rb: StepRecord | None = None, names: tuple[str, str] = ("a", "b")) -> str:
    """ "At step 7 (TanhBackward0" plus b's step where b runs it at another."""
    said = f"At step {ra.step} ({ra.name}"
    if rb is not None and rb.step != ra.step:
        said += f", {names[1]}'s step {rb.step}"
    return said + ")"


def other_op(ra: StepRecord, rb: StepRecord, names: tuple[str, str]) -> str:
    a, b = names
    return (
        f"At step {ra.step}, {a} runs {ra.name} ({inputs_text(ra)}) and {b} runs {rb.name} "
        f"({inputs_text(rb)}) in its place: the two graphs differ here (another op, or the "
        "same ops in another order)."
    )


def spelled_differently(ra: StepRecord, rb: StepRecord, names: tuple[str, str]) -> str:
    """The same place, spelled differently: said beside the step, never a difference."""
    a, b = names
    return (
        f"Here {a} runs {ra.name} and {b} runs {rb.name}: the same place in the graph, "
        f"spelled differently ({len(edges(ra))} edges taking a gradient against "
        f"{len(edges(rb))}, to the same inputs), so what each input receives is compared "
        "summed over its edges."
    )


def crossed(
    ra: StepRecord, rb: StepRecord, i: int, fa: GradFlow, fb: GradFlow, names: tuple[str, str]
) -> str:
    a, b = names
    return (
        f"{at(ra, rb, names)}, {a} sends the gradient for {edge_name(i, fa)} to {fa.label} "
        f"and {b} sends it to {fb.label}, but elsewhere in the graphs those two nodes are in "
        "different places: one graph shares a node that the other does not, so the two "
        "graphs differ here."
    )


def no_counterpart(ra: StepRecord, names: tuple[str, str]) -> Difference:
    a, b = names
    return Difference(
        ra.step,
        ra.name,
        "",
        f"At step {ra.step} {a} runs {ra.name} {ra.node}, which has no counterpart in {b}: "
        "the graphs parted above it.",
    )


def fewer_runs(ra: StepRecord, occurrence: int, runs_b: int, names: tuple[str, str]) -> Difference:
    a, b = names
    if runs_b == 0:
        said = (
            f"At step {ra.step} {a} runs {ra.name} {ra.node}; {b} never runs the node in its "
            f"place: no gradient reached it in {b}, or {b} stopped before it."
        )
    else:
        said = (
            f"At step {ra.step} {a} runs {ra.name} {ra.node} again ({occurrence + 1} runs so "
            f"far); {b} runs it {times(runs_b)}. Each node runs once, when all of its "
            "gradient has arrived."
        )
    return Difference(ra.step, ra.name, "", said)


def more_runs(
    ra: StepRecord, rb: StepRecord, runs_a: int, steps_b: list[int], names: tuple[str, str]
) -> Difference:
    a, b = names
    listed = ", ".join(str(s) for s in steps_b)
    return Difference(
        ra.step,
        ra.name,
        rb.name,
        f"{at(ra, rb, names)}: {b} runs {rb.name} {times(len(steps_b))} (its steps {listed}), "
        f"{a} {times(runs_a)}. Each node runs once, when all of its gradient has arrived, on "
        "their sum.",
        step_b=rb.step,
    )


def times(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


def step_difference(
    a: StepRecord, b: StepRecord, names: tuple[str, str] = ("a", "b")
) -> Difference | None:
    """Where the matched steps ``a`` and ``b`` differ: a gradient in, or one sent."""
    pairs = [("gradient that reached it", ga, gb) for ga, gb in zip(a.grads_in, b.grads_in)]
    pairs += [
        (f"gradient for {edge_name(i, fas[0])}", summed(fas), summed(fbs))
        for i, fas, fbs in edge_pairs(a, b) or ()
    ]
    for what, va, vb in pairs:
        if isinstance(va, str) or isinstance(vb, str):
            continue  # a trace kept only a summary: said once no other difference is found
        rtol, atol = tolerances(va, vb)
        finding = compare(f"{names[1]}'s {what}", va, vb, rtol=rtol, atol=atol)
        if finding is not None:
            said = sentence(a, b, finding, names)
            return Difference(a.step, a.name, b.name, said, finding, b.step, (va, vb))
    return None


def inputs_text(record: StepRecord) -> str:
    count = len(edges(record))
    return f"{count} input" + ("" if count == 1 else "s") + " taking a gradient"


def sentence(
    record: StepRecord, other: StepRecord, finding: Finding, names: tuple[str, str] = ("a", "b")
) -> str:
    """The checkers' finding, with a as the reference: "... is 2 times a's"."""
    theirs = f"{names[0]}'s"
    if finding.kind == "sign":
        observation = f"{finding.what} is minus {theirs}: every element has the other sign"
    elif finding.kind == "shape":
        expected, got = finding.details["expected_shape"], finding.details["got_shape"]
        observation = (
            f"{finding.what} has shape {shape_text(got)} where {theirs} has {shape_text(expected)}"
        )
    else:
        observation = (
            finding.observation.replace("the expected value", theirs)
            .replace("was expected", f"is {theirs}")
            .replace("were expected", f"are {theirs}")
        )
    found = Finding(finding.kind, finding.what, observation, finding.advice)
    return found.sentences(at(record, other, names))


def side_name(side, records: list[StepRecord]) -> str:
    """What a side is, when it can be told: "PyTorch" for a torch loss, "your Exp" for a
    pass through a custom Function; "" when it is a plain workbench pass."""
    if type(side).__module__.split(".")[0] == "torch":
        return "PyTorch"
    custom = next((r.name for r in records if is_custom(r)), None)
    return f"your {custom.removesuffix('Backward')}" if custom else ""


def side_names(a, b, records: list[list[StepRecord]]) -> tuple[str, str]:
    """How the messages and the column titles call the two passes: by what they are
    ("the built-in" against "your Tanh", "the workbench" against "PyTorch"), else a, b."""
    known = side_name(a, records[0]), side_name(b, records[1])
    if known[0] == known[1]:  # both plain, or both alike: nothing tells them apart
        return ("a", "b")
    plain = "the workbench" if "PyTorch" in known else "the built-in"
    return (known[0] or plain, known[1] or plain)


def as_target(side):
    """A loss or Trace as it is; a PyTorch loss recorded first with ``wb.from_torch``."""
    if type(side).__module__.split(".")[0] == "torch":
        from ..trace.torch_replay import from_torch

        return from_torch(side, small=KEPT_IN_FULL)
    return side


class CompareStepper(ClosingBox):
    """Two backward passes, ``a`` and ``b``, stepped together and side by side.

    ``a`` and ``b`` are each a loss Tensor, a saved Trace, or a PyTorch loss (``b =
    torch_loss`` runs PyTorch's backward and replays it). ``names`` says what each is, in
    the titles and the messages ("the engine", "your loop"); by default a side is called
    by what it is when that can be told ("PyTorch", "your Exp" for a custom Function's
    pass, "the built-in" or "the workbench" for the other), else "a" and "b".
    :attr:`first_difference` is None when the passes agree, else a :class:`Difference`;
    :meth:`run_to_difference` shows it. Steps are numbered from 1, as in
    :class:`BackwardStepper`: ``go(k)`` shows a's step k, and beside it b's step that runs
    the same node (the same run of it); past what a has, b's step k. The everyday row is
    every stepper's (Prev, Next, Play, the slider's "step k of n") with Run to
    difference; Reset, Stop and Play's speed wait behind "More ▾".
    """

    def __init__(self, a, b, names: tuple[str, str] | None = None) -> None:
        super().__init__()
        self.names = names or ("a", "b")
        self.message = widgets.HTML()
        self.sides: list[BackwardStepper] = []
        self.first_difference: Difference | None = None
        self.match: PassMatch | None = None
        self.error: str | None = None
        self._syncing = False
        self.position = 1  # the lockstep's step: see step
        self._build_controls()
        try:
            self.sides = [BackwardStepper(as_target(a)), BackwardStepper(as_target(b))]
            failed = [s.error for s in self.sides if s.error]
            if failed:
                raise ValueError(failed[0])
            records = [self._all_records(side) for side in self.sides]
            self.names = names or side_names(a, b, records)
            self.match = PassMatch(*records, names=self.names)
            self.first_difference = self.match.first_difference()
        except Exception as err:  # a UI boundary: the reason, never a traceback
            self._fail(err)
            return
        self._flag_the_difference()
        self.columns.children = [
            self._column(side, self.sides[k], self.names[k]) for k, side in enumerate("ab")
        ]
        self._show()

    # ----------------------------------------------------------- layout
    def _build_controls(self) -> None:
        """The steppers' everyday row, and "Run to difference", what a comparison is for;
        Reset, Stop and Play's speed behind "More ▾"."""
        self.controls = StepBar(self, interval_ms=800)
        self.controls.name_on(self)
        self.difference_button = widgets.Button(description="Run to difference ▶▶")
        self.difference_button.layout.width = "auto"  # its whole label, not "Run to differe…"
        self._on_click(self.difference_button, lambda _: self.run_to_difference())
        self.columns = widgets.HBox(layout=widgets.Layout(width="100%"))
        self.values = widgets.HTML()  # the differing gradients, above the pictures
        rows = self.controls.rows(self.difference_button)
        self.children = [widgets.HTML(STYLE), self.message, self.values, *rows, self.columns]

    def _flag_the_difference(self) -> None:
        """Outline the node where the passes first part, in both pictures."""
        difference = self.first_difference
        if difference is None:
            return
        a, b = self.sides
        if difference.step <= a.total and difference.node:
            a.flag([a.cursor.source.records[difference.step - 1].node])
        if difference.step_b is not None:
            b.flag([b.cursor.source.records[difference.step_b - 1].node])

    def _column(self, name: str, side: BackwardStepper, said: str) -> widgets.VBox:
        """One pass: its picture above its panel, half the width, nothing over the other."""
        side.graph.layout.width = side.panel.layout.width = "100%"
        heading = said[:1].upper() + said[1:]
        title = widgets.HTML(f"<div class='wb-title'>{html.escape(heading)}</div>")
        column = widgets.VBox([title, side.graph, side.panel])
        column.layout = widgets.Layout(width="50%", min_width="0", overflow="auto")
        column.add_class(f"wb-compare-{name}")
        return column

    def _fail(self, err: Exception) -> None:
        self.error = str(err)
        self.position = 0  # no step on show
        self.message.value = message_html(self.error)
        for control in [*self.controls.all(), self.difference_button]:
            control.disabled = True

    def _let_go(self) -> None:
        for side in self.sides:
            side.close()
        self.sides = []

    @staticmethod
    def _all_records(side: BackwardStepper) -> list[StepRecord]:
        """Every step of a side's pass (a live one runs to its end; what it shows stays)."""
        source = side.cursor.source
        source.load_all()
        source.show(side.cursor.position)
        return source.records

    # ----------------------------------------------------------- moves
    @property
    def step(self) -> int:
        """The lockstep's step on show (from 1): a's step, and past the end of a shorter
        a, b's (a stays at its last step)."""
        return self.position if self.sides else 0

    @property
    def total(self) -> int:
        """The longer pass's number of steps."""
        return max((side.total for side in self.sides), default=0)

    def go(self, step: int) -> bool:
        """Show a's step ``step`` and b's step running the same node (a shorter pass stays
        at its last step)."""
        if not self.sides or not 1 <= step <= self.total:
            return False
        a, b = self.sides
        a.go(min(step, a.total))
        b.go(self.step_b(step))
        self.position = step
        self._show()
        return True

    def step_b(self, step: int) -> int:
        """b's step beside a's step ``step``: the one running the same node, else ``step``."""
        b_total = self.sides[1].total
        if step <= self.sides[0].total and self.match is not None:
            position = self.match.b_position(step - 1)
            if position is not None:
                return position + 1
        return min(step, b_total)

    def _on_slider(self, change) -> None:
        if not self._syncing:
            self.go(change["new"])

    def next(self) -> bool:
        return self.go(self.step + 1)

    def prev(self) -> bool:
        return self.go(self.step - 1)

    def reset(self) -> None:
        """Show step 1 of both passes again."""
        self.go(1)

    def stop(self) -> None:
        """Stop Play and stay at the step it reached."""
        self.play.playing = False

    def run_to_difference(self) -> bool:
        """Show the first step where the passes part; False (and no move) when they agree."""
        if self.first_difference is None:
            self._show("The two passes agree at every step: no difference to run to.")
            return False
        return self.go(self.first_difference.step)

    def _show(self, note: str = "") -> None:
        self._syncing = True  # set here, the slider must not move the steppers again
        try:
            self.controls.count(self.step, self.total)
        finally:
            self._syncing = False
        self.prev_button.disabled = self.step <= 1
        self.next_button.disabled = self.step >= self.total
        self.message.value = f"<div class='wb-compare-note'>{html.escape(self._said(note))}</div>"
        self.values.value = self._values_html()

    def _values_html(self) -> str:
        """At the first difference, the two gradients side by side, above the pictures."""
        difference = self.first_difference
        if difference is None or not difference.values or self.step != difference.step:
            return ""
        what = html.escape(difference.finding.what if difference.finding else "gradient")
        cells = "".join(
            f"<td><b>{html.escape(name)}</b></td><td><pre>{html.escape(format_array(v))}</pre></td>"
            for name, v in zip(self.names, difference.values)
        )
        return f"<table class='wb-compare-values'><caption>{what}</caption><tr>{cells}</tr></table>"

    def _said(self, note: str) -> str:
        if note:
            return note
        return self._difference_note(self.first_difference) + self._ended_note()

    def _difference_note(self, difference: Difference | None) -> str:
        if difference is None:
            agree = f"The two passes agree at all {self.total} steps."
            return f"{agree}{self._order_note()}{self._spelling_note()}"
        if self.step == difference.step:
            return difference.diagnosis + self._spelling_note()
        where = "ahead" if self.step < difference.step else "behind"
        return (
            f"They agree up to step {difference.step - 1}; the first difference is {where}, "
            f"at step {difference.step} (Run to difference).{self._order_note()}"
            f"{self._spelling_note()}"
        )

    def _ended_note(self) -> str:
        """Past the end of a shorter a: why its picture stays at its last step."""
        a = self.sides[0]
        if self.step <= a.total:
            return ""
        return (
            f" {self.names[0]}'s pass has {a.total} steps: it stays at its last while "
            f"{self.names[1]}'s goes on."
        )

    def _spelling_note(self) -> str:
        """Where the node on show is spelled differently in the two passes: said."""
        note = self.match.spelled.get(self.sides[0].record.node) if self.match else None
        return f" {note}" if note else ""

    def _order_note(self) -> str:
        """Where b runs the node on show at another step: why that is no difference."""
        a, b = self.sides
        same_node = (
            self.match is not None and self.match.partner.get(a.record.node) == b.record.node
        )
        if a.step == b.step or not same_node:
            return ""
        return (
            f" {self.names[1]} runs this node at its step {b.step}: of the nodes ready at the "
            "same time, an engine may run any first, so the steps are matched by place in "
            "the graph."
        )
