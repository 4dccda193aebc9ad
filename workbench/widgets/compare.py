"""CompareStepper: two backward passes side by side, in lockstep, and where they part.

Each side is a loss (run live by the engine), a saved Trace, or a PyTorch loss (run
by PyTorch and recorded with ``wb.from_torch``). Both passes run to the end, then
step k of one is matched with step k of the other: the engine runs nodes in
PyTorch's order, so the same graph gives the same order. Two steps match when they
run the same op (``MulBackward0`` and ``MulBackward0``; a custom Function's node,
which has no built-in op, stands in for any op) with as many inputs taking a
gradient. The first step where the ops differ, or where a gradient sent differs, is
:attr:`CompareStepper.first_difference`, said in the exercise checkers' words
(:func:`~workbench.exercises.diagnose.compare`): "Every element of b's gradient for
x is 2 times a's."
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from ..exercises.diagnose import Finding, compare, shape_text
from .closing import ClosingBox
from .panel import STYLE, message_html
from .stepper import BackwardStepper
from .steps import GradFlow, StepRecord
from .verdicts import edge_name

KEPT_IN_FULL = 1_000_000  # a PyTorch pass is recorded with arrays this big kept whole
FLOAT32_RTOL = 1e-4  # two float32 passes agree to rounding, not to the last bit
FLOAT32_ATOL = 1e-6


@dataclass(frozen=True)
class Difference:
    """The first step where two passes part.

    ``node`` is a's node there, named as the picture draws it (``MulBackward0``);
    ``node_b`` b's; ``finding`` the checkers' diagnosis of a gradient (None when the
    graphs themselves differ).
    """

    step: int
    node: str
    node_b: str
    diagnosis: str
    finding: Finding | None = None


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


def difference_between(a: list[StepRecord], b: list[StepRecord]) -> Difference | None:
    """The first step (from 1) where ``a`` and ``b`` part, or None when they agree."""
    for ra, rb in zip(a, b):
        found = step_difference(ra, rb)
        if found is not None:
            return found
    if len(a) == len(b) and summaries_only(a, b):
        first = summaries_only(a, b)[0]
        return Difference(
            first.step,
            first.name,
            b[first.index].name,
            f"At step {first.step} ({first.name}) a saved Trace kept only a summary of a "
            "gradient, not its values, so the passes cannot be compared there: record it "
            "with wb.trace(small=...) large enough to keep them.",
        )
    if len(a) != len(b):
        step = min(len(a), len(b)) + 1
        longer, more = ("a", a) if len(a) > len(b) else ("b", b)
        return Difference(
            step,
            more[step - 1].name if longer == "a" else "",
            more[step - 1].name if longer == "b" else "",
            f"a runs {len(a)} steps and b {len(b)}: after step {step - 1} only {longer} "
            f"goes on, with {more[step - 1].name}.",
        )
    return None


def summaries_only(a: list[StepRecord], b: list[StepRecord]) -> list[StepRecord]:
    """a's steps where either side has a gradient kept only as a summary (a string)."""
    return [
        ra
        for ra, rb in zip(a, b)
        if any(isinstance(v, str) for r in (ra, rb) for v in (*r.grads_in, *flow_values(r)))
    ]


def flow_values(record: StepRecord) -> list:
    return [flow.value for flow in record.grads_out]


def step_difference(a: StepRecord, b: StepRecord) -> Difference | None:
    """Where step ``a.step`` of the two passes differs: its op, its edges, or a gradient."""
    if not same_op(a, b) or len(edges(a)) != len(edges(b)):
        return Difference(
            a.step,
            a.name,
            b.name,
            f"At step {a.step}, a runs {a.name} ({inputs_text(a)}) and b runs {b.name} "
            f"({inputs_text(b)}): the two graphs differ here (another op, or the same ops "
            "in another order).",
        )
    pairs = [("gradient that reached it", ga, gb) for ga, gb in zip(a.grads_in, b.grads_in)]
    pairs += [
        (f"gradient for {edge_name(i, fa)}", fa.value, fb.value)
        for (i, fa), (_, fb) in zip(edges(a), edges(b))
    ]
    for what, va, vb in pairs:
        if isinstance(va, str) or isinstance(vb, str):
            continue  # a trace kept only a summary: said once no other difference is found
        rtol, atol = tolerances(va, vb)
        finding = compare(f"b's {what}", va, vb, rtol=rtol, atol=atol)
        if finding is not None:
            return Difference(a.step, a.name, b.name, sentence(a, finding), finding)
    return None


def inputs_text(record: StepRecord) -> str:
    count = len(edges(record))
    return f"{count} input" + ("" if count == 1 else "s") + " taking a gradient"


def sentence(record: StepRecord, finding: Finding) -> str:
    """The checkers' finding, with a as the reference: "... is 2 times a's"."""
    if finding.kind == "sign":
        observation = f"{finding.what} is minus a's: every element has the other sign"
    elif finding.kind == "shape":
        expected, got = finding.details["expected_shape"], finding.details["got_shape"]
        observation = (
            f"{finding.what} has shape {shape_text(got)} where a's has {shape_text(expected)}"
        )
    else:
        observation = (
            finding.observation.replace("the expected value", "a's")
            .replace("was expected", "is a's")
            .replace("were expected", "are a's")
        )
    found = Finding(finding.kind, finding.what, observation, finding.advice)
    return found.sentences(f"At step {record.step} ({record.name})")


def as_target(side):
    """A loss or Trace as it is; a PyTorch loss recorded first with ``wb.from_torch``."""
    if type(side).__module__.split(".")[0] == "torch":
        from ..torch_replay import from_torch

        return from_torch(side, small=KEPT_IN_FULL)
    return side


class CompareStepper(ClosingBox):
    """Two backward passes, ``a`` and ``b``, stepped together and side by side.

    ``a`` and ``b`` are each a loss Tensor, a saved Trace, or a PyTorch loss (``b =
    torch_loss`` runs PyTorch's backward and replays it). :attr:`first_difference` is
    None when the passes agree, else a :class:`Difference`; :meth:`run_to_difference`
    shows it. Steps are numbered from 1, as in :class:`BackwardStepper`: ``go(k)`` shows
    step k of both.
    """

    def __init__(self, a, b) -> None:
        super().__init__()
        self.message = widgets.HTML()
        self.sides: list[BackwardStepper] = []
        self.first_difference: Difference | None = None
        self.error: str | None = None
        self._syncing = False
        self._build_controls()
        try:
            self.sides = [BackwardStepper(as_target(a)), BackwardStepper(as_target(b))]
            failed = [s.error for s in self.sides if s.error]
            if failed:
                raise ValueError(failed[0])
            records = [self._all_records(side) for side in self.sides]
            self.first_difference = difference_between(*records)
        except Exception as err:  # a UI boundary: the reason, never a traceback
            self._fail(err)
            return
        self.columns.children = [self._column("a", self.sides[0]), self._column("b", self.sides[1])]
        self._observe(self.slider, self._on_slider)
        self._show()

    # ----------------------------------------------------------- layout
    def _build_controls(self) -> None:
        self.prev_button = widgets.Button(description="◀ Prev")
        self.next_button = widgets.Button(description="Next ▶")
        self.reset_button = widgets.Button(description="⟲ Reset")
        self.difference_button = widgets.Button(description="Run to difference ▶▶")
        self.slider = widgets.IntSlider(min=1, max=1, description="step")
        self._on_click(self.prev_button, lambda _: self.go(self.step - 1))
        self._on_click(self.next_button, lambda _: self.go(self.step + 1))
        self._on_click(self.reset_button, lambda _: self.go(1))
        self._on_click(self.difference_button, lambda _: self.run_to_difference())
        self.columns = widgets.HBox(layout=widgets.Layout(width="100%"))
        buttons = [self.prev_button, self.next_button, self.reset_button]
        row = widgets.HBox([*buttons, self.difference_button, self.slider])
        row.layout.flex_flow = "row wrap"
        self.children = [widgets.HTML(STYLE), self.message, row, self.columns]

    def _column(self, name: str, side: BackwardStepper) -> widgets.VBox:
        """One pass: its picture above its panel, half the width, nothing over the other."""
        side.graph.layout.width = side.panel.layout.width = "100%"
        title = widgets.HTML(f"<div class='wb-title'>{name}</div>")
        column = widgets.VBox([title, side.graph, side.panel])
        column.layout = widgets.Layout(width="50%", min_width="0", overflow="auto")
        column.add_class(f"wb-compare-{name}")
        return column

    def _fail(self, err: Exception) -> None:
        self.error = str(err)
        self.message.value = message_html(self.error)
        for control in (self.prev_button, self.next_button, self.difference_button, self.slider):
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
        """The step on show in both passes (from 1)."""
        return self.sides[0].step if self.sides else 0

    @property
    def total(self) -> int:
        """The longer pass's number of steps."""
        return max((side.total for side in self.sides), default=0)

    def go(self, step: int) -> bool:
        """Show step ``step`` of both passes (a shorter pass stays at its last step)."""
        if not self.sides or not 1 <= step <= self.total:
            return False
        for side in self.sides:
            side.go(min(step, side.total))
        self._show()
        return True

    def _on_slider(self, change) -> None:
        if not self._syncing:
            self.go(change["new"])

    def next(self) -> bool:
        return self.go(self.step + 1)

    def prev(self) -> bool:
        return self.go(self.step - 1)

    def run_to_difference(self) -> bool:
        """Show the first step where the passes part; False (and no move) when they agree."""
        if self.first_difference is None:
            self._show("The two passes agree at every step: no difference to run to.")
            return False
        return self.go(self.first_difference.step)

    def _show(self, note: str = "") -> None:
        self.slider.max = max(self.total, 1)
        self._syncing = True  # set here, the slider must not move the steppers again
        try:
            self.slider.value = self.step
        finally:
            self._syncing = False
        self.prev_button.disabled = self.step <= 1
        self.next_button.disabled = self.step >= self.total
        self.message.value = f"<div class='wb-compare-note'>{html.escape(self._said(note))}</div>"

    def _said(self, note: str) -> str:
        difference = self.first_difference
        if note:
            return note
        if difference is None:
            return f"The two passes agree at all {self.total} steps."
        if self.step == difference.step:
            return difference.diagnosis
        where = "ahead" if self.step < difference.step else "behind"
        return (
            f"They agree up to step {difference.step - 1}; the first difference is {where}, "
            f"at step {difference.step} (Run to difference)."
        )
