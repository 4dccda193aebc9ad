"""Check a learner's per-example gradient clipping (lesson 12, DP-SGD's first step).

::

    def clip_per_example(grads, max_norm):    # grads: (N, P), one example's gradient a row
        ...                                   # each row scaled by min(1, max_norm / ‖row‖)

    check_clip_per_example(clip_per_example)

Each row gᵢ must come back as gᵢ · min(1, C / ‖gᵢ‖), C = max_norm: a row longer than C
shrinks to length C, a shorter one stays as it is, its direction kept; a row of zeros
stays zeros (its norm is 0, and 0 / 0 must not become NaN). The check runs on three
batches (one with a zero row) and names the usual slips (:data:`SLIPS`): the batch
clipped as a whole, every row stretched to length C, elements clamped one by one, the
norms taken down the columns, the squared norm, the average returned.

And the norm that spots an outlier::

    def example_norms(per_example_grads):     # a tuple of tensors, each (N, ...)
        ...                                   # (N,): each example's whole gradient's norm

    check_example_norms(example_norms)

An example's gradient is all of its parameters' gradients together: its norm is the
square root of the sum of their squares, over every tensor of the tuple.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.tensor import Tensor
from .diagnose import Finding, compare, is_close, shape_text, wrong_values
from .guard import checker
from .report import Passed, call_learner, fail_on
from .rules import as_result

REAL = "the gradients are real"  # why a complex answer is wrong

RTOL, ATOL = 1e-5, 1e-9  # a learner may add 1e-6 (or 1e-12) to a norm, as libraries do


def batches() -> list:
    """(grads, max_norm): rows longer and shorter than max_norm; one batch with a zero row."""
    rng = np.random.default_rng(12)

    def rows(norms, width):
        directions = rng.standard_normal((len(norms), width))
        directions /= np.linalg.norm(directions, axis=1, keepdims=True)
        return directions * np.asarray(norms, dtype=np.float64)[:, None]

    return [
        (rows([0.5, 2.0, 3.0, 1.2], 3), 1.5),
        (rows([4.0, 0.0, 1.0], 5), 2.5),
        (rows([0.3, 0.7, 0.05, 2.0, 0.2], 2), 0.1),
    ]


def clipped(grads: np.ndarray, max_norm: float) -> np.ndarray:
    """The reference: each row times min(1, C / ‖row‖); a zero row stays zero."""
    norms = np.linalg.norm(grads, axis=1, keepdims=True)
    scale = np.minimum(1.0, max_norm / np.maximum(norms, 1e-300))
    return grads * scale


@checker
def check_clip_per_example(clip: Callable[[Tensor, float], Tensor]) -> Passed:
    """Check ``clip(grads, max_norm)``: every row of ``grads`` clipped to norm max_norm."""
    for grads, max_norm in batches():
        context = (
            f"With grads of shape {shape_text(grads.shape)} (row norms "
            f"{norms_text(grads)}) and max_norm={max_norm}"
        )
        got = call_learner(
            clip, (Tensor(grads.copy()), max_norm), context, "function clip_per_example"
        )
        got = as_result(got, context, "the clipped gradients", REAL)
        expected = clipped(grads, max_norm)
        fail_on(clip_finding(grads, max_norm, expected, got), context)
    return Passed(
        "Your per-example clipping is right.",
        "On three batches every row longer than max_norm came back with norm max_norm and "
        "its direction kept, every shorter row came back as it was, and a zero row stayed "
        "zero. You just bounded how far any one example can move the average gradient: by "
        "at most max_norm / N.",
    )


def norms_text(grads: np.ndarray) -> str:
    return ", ".join(f"{n:.3g}" for n in np.linalg.norm(grads, axis=1))


def clip_finding(grads, max_norm, expected, got) -> Finding | None:
    """None if ``got`` is right; else its shape, a NaN at a zero row, a known slip, or
    expected against got."""
    what = "your clipped gradients"
    if got.shape != expected.shape:
        return shape_finding(what, grads, max_norm, expected, got)
    if is_close(expected, got, RTOL, ATOL):
        return None
    zero_rows = np.all(grads == 0, axis=1)
    if np.isnan(got[zero_rows]).any():
        (row,) = np.flatnonzero(zero_rows & np.isnan(got).any(axis=1))[:1]
        return Finding(
            "zero_row",
            what,
            f"{what} have NaN in row {row}, where grads is all zeros: its norm is 0, and "
            "max_norm / 0 times 0 is NaN",
            "a zero gradient needs no clipping: divide by the norm plus a tiny number "
            "(1e-12), or by the norm clamped to at least that",
            expected=expected,
            got=got,
            wrong=~np.isclose(got, expected, rtol=RTOL, atol=ATOL),
        )
    for slip in SLIPS:
        with np.errstate(all="ignore"):
            slipped = slip.made(grads, max_norm)
        if is_close(slipped, got, RTOL, ATOL) and not is_close(expected, slipped, RTOL, ATOL):
            observation = f"{what} {slip.observation}"
            return wrong_values(
                slip.kind, what, observation, slip.advice, expected, got, RTOL, ATOL
            )
    return compare(what, expected, got, rtol=RTOL, atol=ATOL)


def shape_finding(what, grads, max_norm, expected, got) -> Finding:
    observation = (
        f"{what} have shape {shape_text(got.shape)} where {shape_text(expected.shape)} was expected"
    )
    if got.shape == expected.shape[1:] and is_close(expected.mean(0), got, RTOL, ATOL):
        advice = (
            "that is the average of the clipped rows: return every example's clipped "
            "gradient, one row each; the lesson averages them after"
        )
    elif got.shape == expected.shape[1:]:
        advice = (
            "that is one gradient for the whole batch: clip each example's row on its own "
            "and return them all, one row each"
        )
    elif got.shape == (len(grads),) or got.shape == (len(grads), 1):
        advice = (
            "that is one number per example (a norm, or a scale): multiply each row by its "
            "scale and return the rows"
        )
    else:
        advice = "return one clipped row per example: the shape of grads"
    details = {"expected_shape": expected.shape, "got_shape": got.shape}
    return Finding("shape", what, observation, advice, details=details)


# ----------------------------------------------------------------- known slips
@dataclass(frozen=True)
class Slip:
    kind: str
    made: Callable[[np.ndarray, float], np.ndarray]
    observation: str
    advice: str


def row_norms(grads: np.ndarray) -> np.ndarray:
    return np.linalg.norm(grads, axis=1, keepdims=True)


SLIPS = (
    Slip(
        "whole_batch",
        lambda g, c: g * min(1.0, c / np.linalg.norm(g)),
        "are the batch clipped as a whole: all the rows were scaled by one number, so "
        "that the norm of all of grads is max_norm",
        "clip each row by its own norm (dim=1): each example's influence must be bounded "
        "on its own, whatever the others do",
    ),
    Slip(
        "stretched",
        lambda g, c: g * c / row_norms(g),
        "have every row at norm max_norm: rows that were shorter were stretched up to it",
        "scale by min(1, max_norm / ‖gᵢ‖), so that a row already shorter than max_norm "
        "stays as it is",
    ),
    Slip(
        "max_for_min",
        lambda g, c: g * np.maximum(1.0, c / row_norms(g)),
        "stretch the short rows and leave the long ones: the scale is max(1, max_norm / ‖gᵢ‖)",
        "take the min: a row longer than max_norm must shrink, a shorter one stay",
    ),
    Slip(
        "unit_rows",
        lambda g, c: g / row_norms(g),
        "have every row at norm 1: each row was divided by its norm, and max_norm left out",
        "scale by min(1, max_norm / ‖gᵢ‖)",
    ),
    Slip(
        "elements_clamped",
        lambda g, c: np.clip(g, -c, c),
        "are grads with each element clamped to [−max_norm, max_norm]",
        "clip the norm of each row: multiply the whole row by one number, so that its "
        "direction stays",
    ),
    Slip(
        "columns",
        lambda g, c: g * np.minimum(1.0, c / np.linalg.norm(g, axis=0, keepdims=True)),
        "are clipped by the norms of the columns (dim=0), taken across examples",
        "take each row's norm: an example is a row, so the norm runs along dim=1 "
        "(keepdim=True keeps it a column that broadcasts over the row)",
    ),
    Slip(
        "squared_norm",
        lambda g, c: g * np.minimum(1.0, c / row_norms(g) ** 2),
        "are scaled by min(1, max_norm / ‖gᵢ‖²): the squared norm, without its square root",
        "the norm is the square root of (gᵢ · gᵢ).sum()",
    ),
)


# ------------------------------------------------------------ the outlier's norm
def gradient_tuples() -> list:
    """Per-example gradients as vmap(grad(loss)) gives them: a tuple, each (N, ...)."""
    rng = np.random.default_rng(21)
    return [
        (rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 3)), rng.standard_normal((4,))),
        (rng.standard_normal((3, 5)), 10 * rng.standard_normal((3, 2, 2))),
    ]


def whole_norms(grads: tuple) -> np.ndarray:
    count = len(grads[0])
    return np.sqrt(sum((g.reshape(count, -1) ** 2).sum(1) for g in grads))


@checker
def check_example_norms(example_norms: Callable[[tuple], Tensor]) -> Passed:
    """Check ``example_norms(per_example_grads)``: one norm per example, of all its
    parameters' gradients together."""
    for grads in gradient_tuples():
        shapes = ", ".join(shape_text(g.shape) for g in grads)
        context = f"With per-example gradients of shapes {shapes}"
        given = tuple(Tensor(g.copy()) for g in grads)
        got = call_learner(example_norms, (given,), context, "function example_norms")
        got = as_result(got, context, "one norm per example", REAL)
        expected = whole_norms(grads)
        fail_on(norms_finding(grads, expected, got), context)
    return Passed(
        "Your per-example norms are right.",
        "On two batches each number is the norm of one example's whole gradient, every "
        "parameter's part squared and summed before the square root: the length of the "
        "step that example alone asks for.",
    )


def norms_finding(grads: tuple, expected: np.ndarray, got: np.ndarray) -> Finding | None:
    what = "your norms"
    if got.shape != expected.shape:
        advice = (
            "return one number per example: flatten each tensor to (N, -1), sum the squares "
            "along dim 1, add the tensors' sums, then take the square root"
        )
        if got.shape == grads[0].shape[1:]:
            advice = (
                "that is the shape of one parameter: the norm ran across the examples (dim 0); "
                + advice
            )
        observation = (
            f"{what} have shape {shape_text(got.shape)} where {shape_text(expected.shape)} "
            "was expected"
        )
        details = {"expected_shape": expected.shape, "got_shape": got.shape}
        return Finding("shape", what, observation, advice, details=details)
    if is_close(expected, got, RTOL, ATOL):
        return None
    for slip in NORM_SLIPS:
        slipped = slip.made(grads)
        if is_close(slipped, got, RTOL, ATOL) and not is_close(expected, slipped, RTOL, ATOL):
            observation = f"{what} {slip.observation}"
            return wrong_values(
                slip.kind, what, observation, slip.advice, expected, got, RTOL, ATOL
            )
    return compare(what, expected, got, rtol=RTOL, atol=ATOL)


def flat_squares(grads: tuple) -> list:
    count = len(grads[0])
    return [(g.reshape(count, -1) ** 2).sum(1) for g in grads]


NORM_SLIPS = (
    Slip(
        "first_tensor_only",
        lambda grads: np.sqrt(flat_squares(grads)[0]),
        "are the norms of the first tensor of the tuple alone",
        "an example's gradient is every parameter's part: add the squares of all the "
        "tensors before the square root",
    ),
    Slip(
        "sum_of_norms",
        lambda grads: sum(np.sqrt(s) for s in flat_squares(grads)),
        "are each tensor's norm, added up: a sum of norms is not the norm of the whole",
        "add the squares of all the tensors first, then take one square root",
    ),
    Slip(
        "squared",
        lambda grads: sum(flat_squares(grads)),
        "are the squared norms: the square root is missing",
        "take the square root of the sum of squares",
    ),
    Slip(
        "largest_part",
        lambda grads: np.max(np.sqrt(np.stack(flat_squares(grads))), axis=0),
        "are the largest of each example's per-tensor norms, not the norm of the whole",
        "add the squares of all the tensors, then take one square root",
    ),
)
