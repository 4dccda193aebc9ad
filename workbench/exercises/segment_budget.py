"""Check a learner's memory measurement and checkpointing plan, with ``saved_memory()``.

Two exercises of the checkpointing lesson::

    def peak_saved(layers, x, segments):       # bytes saved for backward, at the peak,
        ...                                     # by one checkpointed forward and backward

    def segments_for(budget, layers, x):       # the fewest segments whose peak fits
        ...                                     # the budget (None when none fits)

    check_peak_measure(peak_saved)
    check_segments(segments_for)

Both run on tanh networks of their own, ``h = tanh(h @ W)`` (:func:`tanh_layers`),
and measure them the same way (:func:`measured_peak`): the peak of
``wb.autograd.saved_memory()`` during one ``checkpoint_sequential`` forward and
backward, above what was held before it started.

A wrong measurement is diagnosed by comparing it with the numbers each usual mistake
gives, which the checker measures too: the peak with what another graph held, an
earlier and bigger peak left by the checker before each call, what is held once the
graph is freed, the peak of the forward pass alone, the same number for every segment
count, the peak in KiB. A number that matches none of them is shown against the
expected one, with no cause named.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from ..core.tensor import Tensor
from ..record.memory import reset_peak_saved_memory, saved_memory
from ..utils.checkpoint import checkpoint_sequential
from .answers import short
from .diagnose import Finding
from .guard import checker
from .report import Passed, call_learner, fail

PEAK_COUNTS = (1, 3, 6, 12, 2)  # segment counts of the 12-layer network, in the order tried
FUNNEL_WIDTHS = (64, 64, 64, 64, 16, 16, 16, 16, 16)  # wide layers first: the peak comes late
FUNNEL_SEGMENTS = 2


def tanh_layers(depth: int, width: int, seed: int = 0, widths: tuple | None = None) -> list:
    """``depth`` layers ``h ↦ tanh(h @ W)``, each with its own weight ``W`` (a leaf).

    ``widths`` (``depth + 1`` numbers) gives each layer its own input and output width.
    """
    rng = np.random.default_rng(seed)
    widths = widths or (width,) * (depth + 1)
    weights = [
        Tensor(rng.standard_normal((a, b)) * 0.3, requires_grad=True)
        for a, b in zip(widths, widths[1:])
    ]
    return [lambda h, w=w: (h @ w).tanh() for w in weights]


def network(depth: int = 12, width: int = 16, batch: int = 32, seed: int = 0) -> tuple:
    """The layers and an input batch (which needs no gradient) of a test network."""
    x = Tensor(np.random.default_rng(seed + 1).standard_normal((batch, width)))
    return tanh_layers(depth, width, seed), x


def funnel_network(batch: int = 32, seed: int = 0) -> tuple:
    """A network whose first layers are wide and last ones narrow (:data:`FUNNEL_WIDTHS`).

    Cut in two segments, its peak comes in backward, when the wide first segment is
    recomputed, not at the end of the forward pass: a measurement of the forward pass
    alone is short here.
    """
    widths = FUNNEL_WIDTHS
    x = Tensor(np.random.default_rng(seed + 1).standard_normal((batch, widths[0])))
    return tanh_layers(len(widths) - 1, widths[0], seed, widths), x


def measured_peak(layers: list, x: Tensor, segments: int, backward: bool = True) -> int:
    """The checker's own measurement: peak saved bytes of one step, above the start
    (of the forward pass alone, with ``backward=False``)."""
    start = saved_memory().current
    reset_peak_saved_memory()
    loss = checkpoint_sequential(layers, segments, x, use_reentrant=False).sum()
    if backward:
        loss.backward()
    return saved_memory().peak - start


def leave_a_bigger_peak(layers: list, x: Tensor) -> int:
    """Run a forward pass on a batch four times as big, then drop it: the engine's peak
    counter is left higher than any step of ``layers`` reaches. Returns that peak."""
    bigger = Tensor(np.concatenate([x.numpy()] * 4))
    reset_peak_saved_memory()
    h = bigger
    for layer in layers:
        h = layer(h)
    del h  # the graph goes; the peak it made stays on the counter
    return saved_memory().peak


@contextmanager
def steady_memory() -> Iterator[None]:
    """No garbage collection inside the block, so no old graph is freed in the middle of a
    measurement (the learner's and the checker's then see the same bytes)."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def kib(nbytes) -> str:
    return f"{nbytes / 1024:g} KiB"


def segments_text(count: int) -> str:
    return f"{count} segment" if count == 1 else f"{count} segments"


def segments_fit(count: int) -> str:
    """``1 segment fits``, ``3 segments fit``."""
    return f"{segments_text(count)} {'fits' if count == 1 else 'fit'}"


# ----------------------------------------------------------- measuring the peak
class Measurement:
    """One call of the learner's ``peak_saved``: what it returned, and the numbers each
    usual mistake would have given (all in bytes)."""

    def __init__(self, peak_saved: Callable, layers: list, x: Tensor, segments: int) -> None:
        self.segments = segments
        self.context = f"With {segments_text(segments)} of a {len(layers)}-layer network"
        with steady_memory():
            self.expected = measured_peak(layers, x, segments)
            self.forward_only = measured_peak(layers, x, segments, backward=False)
            self.stale = leave_a_bigger_peak(layers, x)
            self.start = saved_memory().current
            self.got = call_learner(peak_saved, (layers, x, segments), self.context)

    @property
    def right(self) -> bool:
        return is_number(self.got) and self.got == self.expected


@checker
def check_peak_measure(peak_saved: Callable[[list, Tensor, int], int]) -> Passed:
    """Check ``peak_saved(layers, x, segments)``: the peak saved bytes of one step.

    It runs while another graph holds memory (so the bytes held before the step must
    be subtracted), each time after a bigger step left its peak on the counter (so the
    peak must be reset first), on five segment counts of a 12-layer network and on a
    network whose peak comes in backward (so the step must include backward).
    """
    layers, x = network()
    # another graph, alive during every measurement: its bytes are not the step's
    held = (network(depth=2, seed=5)[1] * Tensor(np.ones(16), requires_grad=True)).tanh()
    runs = [Measurement(peak_saved, layers, x, s) for s in PEAK_COUNTS]
    for run in runs:
        if not run.right:
            fail(*peak_advice(run, runs))
    funnel, wide_x = funnel_network()
    run = Measurement(peak_saved, funnel, wide_x, FUNNEL_SEGMENTS)
    run.context = f"On a {len(funnel)}-layer network whose first layers are wide, in 2 segments"
    if not run.right:
        fail(*peak_advice(run, [run]))
    del held
    return Passed(
        "Your measurement is right.",
        "It matches the engine's counters on six steps, while another graph held memory and "
        "after a bigger peak. You just proved you can read saved_memory(): reset the peak, "
        "run the whole step, subtract what was held before.",
    )


def is_whole(value) -> bool:
    """A whole number a byte or segment count can be (not True, not 10**400)."""
    whole = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    return whole and abs(int(value)) < 2**63


def is_number(value) -> bool:
    """An int or a float (a byte count written 75776.0 is still that count)."""
    return is_whole(value) or isinstance(value, (float, np.floating))


def peak_advice(run: Measurement, runs: list) -> tuple:
    """``(message, finding)`` for a wrong measurement: the first diagnosis that fits."""
    diagnoses = (
        not_a_number,
        stale_peak,
        held_bytes_counted,
        same_for_every_count,
        in_kib,
        forward_alone,
    )
    for diagnose in diagnoses:
        advice = diagnose(run, runs)
        if advice is not None:
            return f"{run.context}, {advice}.", None
    observation = f"you measured {kib(run.got)} where the step's peak was {kib(run.expected)}"
    finding = Finding("elements", "your measurement", observation)
    return f"{run.context}, {observation}.", finding


def not_a_number(run: Measurement, runs: list) -> str | None:
    """Something other than a number of bytes."""
    if is_number(run.got):
        return None
    return f"your function returned a {type(run.got).__name__}: return the bytes, an int"


def stale_peak(run: Measurement, runs: list) -> str | None:
    """The peak was not reset: an earlier, bigger step's peak is what was read."""
    if run.got not in (run.stale - run.start, run.stale):
        return None
    also = "" if run.got == run.stale - run.start else ", and subtract what was held before it"
    return (
        f"you measured {kib(run.got)} where the step's peak was {kib(run.expected)}: an earlier, "
        "bigger peak (the check ran a bigger step just before) is still counted. Call "
        f"wb.autograd.reset_peak_saved_memory() before the step{also}"
    )


def held_bytes_counted(run: Measurement, runs: list) -> str | None:
    """Bytes held outside the step's peak were measured: another graph's, held before the
    step and counted as the step's, or the graph's own once backward had freed it."""
    if run.start != 0 and run.got == run.expected + run.start:
        return (
            f"you measured {kib(run.got)}, which counts the {kib(run.start)} another graph "
            f"already held; the step itself saved at most {kib(run.expected)}. Subtract "
            "saved_memory().current taken before the step"
        )
    if run.got in (0, run.start) and run.expected != 0:
        return (
            f"you measured {kib(run.got)}: that is what is still held once backward has freed "
            f"the graph, and the step's peak came before, at {kib(run.expected)}. Read "
            "saved_memory().peak after the step, with the peak reset before the step (not after)"
        )
    return None


def same_for_every_count(run: Measurement, runs: list) -> str | None:
    """One number for every segment count: the segment count is not used."""
    answers = {r.got for r in runs}
    if len(runs) < 2 or len(answers) != 1 or len({r.expected for r in runs}) == 1:
        return None
    counts = ", ".join(str(r.segments) for r in runs[:-1]) + f" and {runs[-1].segments}"
    return (
        f"your function gives {kib(run.got)} for {counts} segments alike, where the peaks "
        f"differ (with {segments_text(run.segments)} it is {kib(run.expected)}): pass segments "
        "on to checkpoint_sequential"
    )


def in_kib(run: Measurement, runs: list) -> str | None:
    """The peak in KiB (divided by 1024), where bytes were asked for."""
    if run.expected < 1024 or abs(run.got - run.expected / 1024) > 1:
        return None
    return f"you returned {run.got!r}: that is the peak in KiB. Return bytes, not KiB"


def forward_alone(run: Measurement, runs: list) -> str | None:
    """The forward pass measured without its backward."""
    if run.forward_only == run.expected or run.got != run.forward_only:
        return None
    return (
        f"you measured {kib(run.got)}, the peak of the forward pass alone; here the peak comes "
        f"in backward ({kib(run.expected)}), when the wide first segment is recomputed. Measure "
        "the whole step: forward, then .sum().backward()"
    )


# ----------------------------------------------------------- choosing segments
@checker
def check_segments(segments_for: Callable[[int, list, Tensor], int | None]) -> Passed:
    """Check ``segments_for(budget, layers, x)``: the fewest segments that fit ``budget``.

    Budgets include one that no count fits (it wants None) and two that equal a
    measured peak exactly (a peak equal to the budget fits). The learner's plan runs on
    every budget before the first wrong answer is diagnosed, so that a diagnosis can
    rest on all of them.
    """
    layers, x = network()
    with steady_memory():
        peaks = {s: measured_peak(layers, x, s) for s in range(1, len(layers) + 1)}
    least = min(peaks.values())
    budgets = sorted({peaks[1], (least + peaks[1]) // 2, peaks[3], least, least - 1}, reverse=True)
    answers = {}
    for budget in budgets:
        with steady_memory():
            context = budget_text(budget, len(layers))
            answers[budget] = call_learner(segments_for, (budget, layers, x), context)
    for budget, got in answers.items():
        expected = fewest_that_fit(peaks, budget)
        if not (got is None or is_whole(got)) or got != expected:
            advice = segments_advice(got, expected, peaks, budget, answers)
            fail(f"{budget_text(budget, len(layers))}, {advice}.")
    best = min(peaks, key=peaks.get)
    return Passed(
        "Your plan is right.",
        f"On {len(budgets)} budgets it picks the fewest segments whose measured peak fits, and "
        f"None when nothing fits. You just proved that the least memory ({kib(least)}, at "
        f"{best} segments for {len(layers)} layers, about √{len(layers)}) is not at the most "
        "segments, and that a budget is met by measuring, not by a formula.",
    )


def budget_text(budget: int, depth: int) -> str:
    return f"With a budget of {kib(budget)} for a {depth}-layer network"


def fewest_that_fit(peaks: dict, budget: int, fits=lambda peak, budget: peak <= budget):
    """The fewest segments whose peak fits the budget, or None."""
    return next((s for s, peak in sorted(peaks.items()) if fits(peak, budget)), None)


def strictly_under(peaks: dict, answers: dict) -> bool:
    """Every answer is the fewest segments whose peak is *below* the budget (``<``), and
    that differs from the right plan somewhere: a peak equal to the budget was refused."""
    strict = {b: fewest_that_fit(peaks, b, lambda peak, budget: peak < budget) for b in answers}
    right = {b: fewest_that_fit(peaks, b) for b in answers}
    return strict != right and answers == strict


def segments_advice(got, expected: int | None, peaks: dict, budget: int, answers: dict) -> str:
    """What a wrong plan did, in the order: None wanted, not a count, a strict comparison
    (on every budget), None given, over the budget, more segments than needed."""
    if expected is None:
        least = min(peaks.values())
        return (
            f"no segment count fits (the least peak is {kib(least)}, at "
            f"{min(peaks, key=peaks.get)} segments), but you returned {short(got)}: return None"
        )
    if got is not None and (not is_whole(got) or got not in peaks):
        return (
            f"you returned {short(got)}: return a whole number of segments from 1 to {len(peaks)}"
        )
    if peaks[expected] == budget and strictly_under(peaks, answers):
        return (
            f"with {segments_text(expected)} the peak is {kib(peaks[expected])}, exactly the "
            "budget, and a peak equal to the budget fits: compare with <=, not <"
        )
    if got is None:
        return (
            f"you returned None, but {segments_fit(expected)}: with {segments_text(expected)} "
            f"the peak, {kib(peaks[expected])}, is within the budget"
        )
    if peaks[got] > budget:
        return (
            f"you chose {got} segments, whose peak is {kib(peaks[got])}: over the budget. "
            f"{segments_fit(expected)} (peak {kib(peaks[expected])})"
        )
    plainly = " (nothing checkpointed)" if expected == 1 else ""
    return (
        f"you chose {got} segments, which fit (peak {kib(peaks[got])}), but "
        f"{segments_text(expected)}{plainly} {'fits' if expected == 1 else 'fit'} too (peak "
        f"{kib(peaks[expected])}), with {got - expected} fewer "
        f"{'segment' if got - expected == 1 else 'segments'} rerun in backward: return the "
        "fewest segments that fit"
    )
