"""Check a learner's gradient of the cross-entropy loss with respect to the logits.

An exercise of the training lesson::

    def cross_entropy_grad(logits, labels):   # ∂L/∂z for L = F.cross_entropy(z, labels),
        ...                                   # the mean over the batch

    check_cross_entropy_grad(cross_entropy_grad)

The answer is compared with the engine's gradient of ``F.cross_entropy`` and with
finite differences, on three batches (none square, so that a transposed answer shows
by its shape). The usual slips are named, each by one ``xent_*`` function below that
computes what the slip gives: the mean forgotten, divided by the number of classes,
the one-hot left out, the softmax left out, the softmax taken over the batch, a
one-hot with a column per point. Where none fits, the message shows expected against
got and names no cause.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..autograd.entry_points import grad as autograd_grad
from ..core.tensor import Tensor
from ..nn import functional as F
from .diagnose import Finding, as_array, compare, is_close, shape_text
from .guard import checker
from .report import Passed, call_learner, fail
from .rules import FD_ATOL, FD_RTOL, finite_differences

BATCHES = (((4, 3), [0, 2, 1, 2]), ((2, 5), [4, 0]), ((6, 2), [1, 1, 0, 1, 0, 0]))
WHAT = "your ∂L/∂z"


def softmax(z: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@dataclass
class Batch:
    """One batch of the check: logits z (N, C) and their labels."""

    z: np.ndarray
    labels: list

    @property
    def n(self) -> int:
        return self.z.shape[0]

    @property
    def classes(self) -> int:
        return self.z.shape[1]

    def onehot(self) -> np.ndarray:
        return np.eye(self.classes)[self.labels]


@checker
def check_cross_entropy_grad(cross_entropy_grad: Callable[[Tensor, Tensor], Tensor]) -> Passed:
    """Check ``cross_entropy_grad(logits, labels)`` = ∂ mean cross-entropy / ∂ logits."""
    rng = np.random.default_rng(2)
    for shape, labels in BATCHES:
        check_batch(cross_entropy_grad, Batch(rng.standard_normal(shape) * 2, labels))
    return Passed(
        "Your cross-entropy gradient is right.",
        "On three batches it equals the engine's gradient and finite differences. You just "
        "proved that ∂L/∂z = (softmax(z) − onehot(labels)) / N: each row pushes the right "
        "class up and every other class down, in proportion to its probability.",
    )


def check_batch(cross_entropy_grad: Callable, batch: Batch) -> None:
    z, labels = batch.z, batch.labels
    logits, target = Tensor(z, requires_grad=True), Tensor(np.asarray(labels))
    context = f"With logits of shape {shape_text(z.shape)} and labels {labels}"
    got = call_learner(cross_entropy_grad, (Tensor(z.copy()), Tensor(np.asarray(labels))), context)
    if got is not None and not isinstance(got, (Tensor, np.ndarray)):
        fail(f"{context}, {WHAT} is a {type(got).__name__}: return a Tensor or a numpy array.")
    expected = autograd_grad(F.cross_entropy(logits, target), logits)[0]
    finding = compare(WHAT, expected, got)
    if finding is None:
        return
    numeric = finite_differences(lambda t: F.cross_entropy(t, target), [logits], [1.0])[0]
    if compare(WHAT, numeric, got, rtol=FD_RTOL, atol=FD_ATOL) is None:
        return  # right to the accuracy of finite differences
    fail(finding.sentences(context, cross_entropy_advice(finding, batch, as_array(got))), finding)


def cross_entropy_advice(finding: Finding, batch: Batch, got: np.ndarray) -> str | None:
    """The first known slip that ``got`` is; None when none is (no cause named)."""
    if finding.kind == "shape":
        diagnoses = [xent_transposed, xent_onehot_per_point]
        fallback = f"z̄ has the logits' shape, {shape_text(batch.z.shape)}: one row per point"
    else:
        diagnoses = [
            xent_mean_forgotten,
            xent_divided_by_classes,
            xent_divided_by_every_element,
            xent_onehot_forgotten,
            xent_softmax_forgotten,
            xent_softmax_over_the_batch,
        ]
        fallback = None
    for diagnose in diagnoses:
        advice = diagnose(finding, batch, got)
        if advice is not None:
            return advice
    return fallback


def xent_mean_forgotten(finding: Finding, batch: Batch, got: np.ndarray) -> str | None:
    """N times too large: the gradient of the sum over the batch, not of the mean."""
    if finding.kind == "factor" and np.isclose(finding.details["factor"], batch.n):
        return f"the loss is the mean over the batch: divide by N = {batch.n}"
    return None


def xent_divided_by_classes(finding: Finding, batch: Batch, got: np.ndarray) -> str | None:
    """Divided by C, the number of classes, where N, the number of points, was due."""
    by_classes = batch.n / batch.classes  # the factor: C where N was due
    if finding.kind != "factor" or not np.isclose(finding.details["factor"], by_classes):
        return None
    return (
        f"you divided by C = {batch.classes}, the number of classes: the mean is over the "
        f"N = {batch.n} points, the rows"
    )


def xent_divided_by_every_element(finding: Finding, batch: Batch, got: np.ndarray) -> str | None:
    """Divided by N · C: a mean over every element, where a point's loss sums its classes."""
    if finding.kind != "factor" or not np.isclose(finding.details["factor"], 1 / batch.classes):
        return None
    return (
        f"you divided by N · C = {batch.n * batch.classes}: the mean is over the N = {batch.n} "
        "points only (softmax and one-hot already cover the classes of a point)"
    )


def xent_onehot_forgotten(finding: Finding, batch: Batch, got: np.ndarray) -> str | None:
    """softmax(z) / N alone: the −log p[t] term's part left out."""
    if not is_close(softmax(batch.z, 1) / batch.n, got):
        return None
    return "that is softmax(z) / N alone: subtract the one-hot of the labels"


def xent_softmax_forgotten(finding: Finding, batch: Batch, got: np.ndarray) -> str | None:
    """−onehot / N alone: nll_loss's gradient, with respect to log p, not to z."""
    if not is_close(-batch.onehot() / batch.n, got):
        return None
    return (
        "that is −onehot / N alone, the gradient with respect to the log-probabilities: "
        "going back through log_softmax adds softmax(z) / N"
    )


def xent_softmax_over_the_batch(finding: Finding, batch: Batch, got: np.ndarray) -> str | None:
    """Softmax over axis 0, the points, where each row's classes were due."""
    if not is_close((softmax(batch.z, 0) - batch.onehot()) / batch.n, got):
        return None
    return "take the softmax over each row (the classes, axis 1), not over the batch"


def xent_transposed(finding: Finding, batch: Batch, got: np.ndarray) -> str | None:
    """(C, N) where (N, C) was due."""
    if got.shape != batch.z.shape[::-1]:
        return None
    return (
        f"it is transposed: z̄ has the logits' shape, {shape_text(batch.z.shape)}, one row "
        "per point and one column per class"
    )


def xent_onehot_per_point(finding: Finding, batch: Batch, got: np.ndarray) -> str | None:
    """(N, N): the one-hot made with np.eye(N), a column per point."""
    if got.shape != (batch.n, batch.n):
        return None
    return (
        f"it has a column per point: the one-hot needs one column per class, "
        f"np.eye(C) with C = {batch.classes}"
    )
