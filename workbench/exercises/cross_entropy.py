"""Check a learner's gradient of the cross-entropy loss with respect to the logits.

An exercise of the training lesson::

    def cross_entropy_grad(logits, labels):   # ∂L/∂z for L = F.cross_entropy(z, labels),
        ...                                   # the mean over the batch

    check_cross_entropy_grad(cross_entropy_grad)

The answer is compared with the engine's gradient of ``F.cross_entropy`` and with
finite differences, on three batches; the usual slips (the mean forgotten, the
one-hot left out, the softmax taken over the batch) are named.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..autograd.engine import grad as autograd_grad
from ..nn import functional as F
from ..tensor import Tensor
from .diagnose import Finding, as_array, compare, is_close, shape_text
from .report import Passed, call_learner, fail
from .rules import FD_ATOL, FD_RTOL, finite_differences

BATCHES = (((4, 3), [0, 2, 1, 2]), ((2, 5), [4, 0]), ((6, 2), [1, 1, 0, 1, 0, 0]))


def softmax(z: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def check_cross_entropy_grad(cross_entropy_grad: Callable[[Tensor, Tensor], Tensor]) -> Passed:
    """Check ``cross_entropy_grad(logits, labels)`` = ∂ mean cross-entropy / ∂ logits."""
    rng = np.random.default_rng(2)
    for shape, labels in BATCHES:
        check_batch(cross_entropy_grad, rng.standard_normal(shape) * 2, labels)
    return Passed(
        "Your cross-entropy gradient is right.",
        "On three batches it equals the engine's gradient and finite differences. You just "
        "proved that ∂L/∂z = (softmax(z) − onehot(labels)) / N: each row pushes the right "
        "class up and every other class down, in proportion to its probability.",
    )


def check_batch(cross_entropy_grad: Callable, z: np.ndarray, labels: list) -> None:
    logits, target = Tensor(z, requires_grad=True), Tensor(np.asarray(labels))
    context = f"With logits of shape {shape_text(z.shape)} and labels {labels}"
    got = call_learner(cross_entropy_grad, (Tensor(z.copy()), Tensor(np.asarray(labels))), context)
    expected = autograd_grad(F.cross_entropy(logits, target), logits)[0]
    numeric = finite_differences(lambda t: F.cross_entropy(t, target), [logits], [1.0])[0]
    finding = compare("your ∂L/∂z", expected, got)
    if finding is None:
        finding = compare("your ∂L/∂z", numeric, got, rtol=FD_RTOL, atol=FD_ATOL)
    if finding is not None:
        fail(finding.sentences(context, cross_entropy_advice(finding, z, labels, got)), finding)


def cross_entropy_advice(finding: Finding, z: np.ndarray, labels: list, got) -> str | None:
    n = z.shape[0]
    onehot = np.eye(z.shape[1])[labels]
    got = as_array(got)
    if finding.kind == "factor" and np.isclose(finding.details["factor"], n):
        return f"the loss is the mean over the batch: divide by N = {n}"
    if got.shape == z.shape and is_close(softmax(z, 1) / n, got):
        return "that is softmax(z) / N alone: subtract the one-hot of the labels"
    if got.shape == z.shape and is_close((softmax(z, 0) - onehot) / n, got):
        return "take the softmax over each row (the classes, axis 1), not over the batch"
    return None
