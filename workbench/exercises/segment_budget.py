"""Check a learner's memory measurement and checkpointing plan, with ``saved_memory()``.

Two exercises of the checkpointing lesson::

    def peak_saved(layers, x, segments):       # bytes saved for backward, at the peak,
        ...                                     # by one checkpointed forward and backward

    def segments_for(budget, layers, x):       # the fewest segments whose peak fits
        ...                                     # the budget (None when none fits)

    check_peak_measure(peak_saved)
    check_segments(segments_for)

Both run on a tanh network of their own, ``h = tanh(h @ W)`` (:func:`tanh_layers`),
and measure it the same way (:func:`measured_peak`): the peak of
``wb.autograd.saved_memory()`` during one ``checkpoint_sequential`` forward and
backward, above what was held before it started.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from ..autograd.memory import reset_peak_saved_memory, saved_memory
from ..tensor import Tensor
from ..utils.checkpoint import checkpoint_sequential
from .report import Passed, call_learner, fail


def tanh_layers(depth: int, width: int, seed: int = 0) -> list:
    """``depth`` layers ``h ↦ tanh(h @ W)``, each with its own weight ``W`` (a leaf)."""
    rng = np.random.default_rng(seed)
    weights = [
        Tensor(rng.standard_normal((width, width)) * 0.3, requires_grad=True) for _ in range(depth)
    ]
    return [lambda h, w=w: (h @ w).tanh() for w in weights]


def network(depth: int = 12, width: int = 16, batch: int = 32, seed: int = 0) -> tuple:
    """The layers and an input batch (which needs no gradient) of a test network."""
    x = Tensor(np.random.default_rng(seed + 1).standard_normal((batch, width)))
    return tanh_layers(depth, width, seed), x


def measured_peak(layers: list, x: Tensor, segments: int) -> int:
    """The checker's own measurement: peak saved bytes of one step, above the start."""
    start = saved_memory().current
    reset_peak_saved_memory()
    checkpoint_sequential(layers, segments, x, use_reentrant=False).sum().backward()
    return saved_memory().peak - start


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


# ----------------------------------------------------------- measuring the peak
def check_peak_measure(peak_saved: Callable[[list, Tensor, int], int]) -> Passed:
    """Check ``peak_saved(layers, x, segments)``: the peak saved bytes of one step.

    It runs while another graph holds memory (so the bytes held before the step must
    be subtracted), and after a bigger step (so the peak must be reset first).
    """
    layers, x = network()
    # another graph, alive during every measurement: its bytes are not the step's
    held = (network(depth=2, seed=5)[1] * Tensor(np.ones(16), requires_grad=True)).tanh()
    for segments in (1, 3, 6, 12, 2):
        context = f"With {segments} segments of a {len(layers)}-layer network"
        with steady_memory():
            got = call_learner(peak_saved, (layers, x, segments), context)
            expected = measured_peak(layers, x, segments)
        if got != expected:
            fail(f"{context}, {peak_advice(got, expected)}")
    del held
    return Passed(
        "Your measurement is right.",
        "It matches the engine's counters on five segment counts, while another graph held "
        "memory. You just proved you can read saved_memory(): reset the peak, run the step, "
        "subtract what was held before.",
    )


def peak_advice(got, expected: int) -> str:
    """What a wrong measurement probably did."""
    if not isinstance(got, (int, np.integer)):
        return f"your function returned a {type(got).__name__}: return the bytes, an int"
    start = saved_memory().current
    if got == expected + start:
        return (
            f"you measured {kib(got)}, which counts the {kib(start)} another graph already "
            f"held; the step itself saved at most {kib(expected)}. Subtract "
            "saved_memory().current taken before the step"
        )
    if got == 0 or got == start:
        return (
            f"you measured {kib(got)}, what is held once backward has freed the graph, where "
            f"the peak was {kib(expected)}: read saved_memory().peak, not .current"
        )
    if got > expected:
        return (
            f"you measured {kib(got)} where the step's peak was {kib(expected)}: an earlier, "
            "bigger peak is still counted. Call wb.autograd.reset_peak_saved_memory() "
            "before the step"
        )
    return f"you measured {kib(got)} where the step's peak was {kib(expected)}"


# ----------------------------------------------------------- choosing segments
def check_segments(segments_for: Callable[[int, list, Tensor], int | None]) -> Passed:
    """Check ``segments_for(budget, layers, x)``: the fewest segments that fit ``budget``.

    The fewest segments means the fewest recomputations (``checkpoint_sequential``
    recomputes all segments but the last). A budget no segment count fits wants None.
    """
    layers, x = network()
    with steady_memory():
        peaks = {s: measured_peak(layers, x, s) for s in range(1, len(layers) + 1)}
    least = min(peaks.values())
    budgets = sorted({peaks[1], (least + peaks[1]) // 2, peaks[3], least, least - 1}, reverse=True)
    for budget in budgets:
        context = f"With a budget of {kib(budget)} for a {len(layers)}-layer network"
        with steady_memory():
            got = call_learner(segments_for, (budget, layers, x), context)
        fits = [s for s, peak in peaks.items() if peak <= budget]
        expected = fits[0] if fits else None
        if got != expected:
            fail(f"{context}, {segments_advice(got, expected, peaks, budget)}")
    best = min(peaks, key=peaks.get)
    return Passed(
        "Your plan is right.",
        f"On {len(budgets)} budgets it picks the fewest segments whose measured peak fits, and "
        f"None when nothing fits. You just proved that the least memory ({kib(least)}, at "
        f"{best} segments for {len(layers)} layers, about √{len(layers)}) is not at the most "
        "segments, and that every segment more costs one more recomputation.",
    )


def segments_advice(got, expected: int | None, peaks: dict, budget: int) -> str:
    if expected is None:
        least = min(peaks.values())
        return (
            f"no segment count fits (the least peak is {kib(least)}, at "
            f"{min(peaks, key=peaks.get)} segments), but you returned {got!r}: return None"
        )
    if got is None:
        return (
            f"you returned None, but {expected} segments fit (peak {kib(peaks[expected])}): "
            "try every segment count from 1 up"
        )
    if not isinstance(got, (int, np.integer)) or got not in peaks:
        return f"you returned {got!r}: return a whole number of segments from 1 to {len(peaks)}"
    if peaks[got] > budget:
        return (
            f"you chose {got} segments, whose peak is {kib(peaks[got])}: over the budget. "
            f"{expected} segments fit (peak {kib(peaks[expected])})"
        )
    return (
        f"you chose {got} segments, which fit (peak {kib(peaks[got])}), but {expected} fit too "
        f"(peak {kib(peaks[expected])}) and recompute {got - expected} segments fewer: "
        "return the fewest segments that fit"
    )
