"""Samples for the compositions in workbench.nn.functional: losses, linear, embedding."""

from __future__ import annotations

import numpy as np

from tests.samples import Sample
from workbench.nn import functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

CLASS_TARGETS = np.array([2, 0, 1, 2])
WEIGHTS = np.array([1.0, 2.0, 3.0])
IDS = np.array([[1, 3, 1], [0, 2, 3]])  # row 1 is used twice: its gradient accumulates
rng = np.random.default_rng(11)
PROBS = rng.uniform(0.05, 0.95, size=(3, 4))
LABELS = (rng.uniform(size=(3, 4)) > 0.5).astype(np.float64)
SOFT_TARGETS = rng.dirichlet(np.ones(3), size=4)


def _torch_l1(diff):
    """torch's l1_loss, with |d| written d · sign(d): torch's abs has a ZeroTensor second
    derivative, which the registry test cannot turn into numpy."""
    return (diff * diff.sign().detach()).mean()


def _s(name, ops, ours, theirs, inputs, **kw):
    return Sample(name, ops, ours, inputs, theirs, **kw)


def _ce(name, inputs, grad=None, **kw):
    # Class-index targets go through nll_loss; probability targets are a weighted sum.
    soft = name.startswith("probabilities")
    return _s(
        f"cross_entropy:{name}",
        ("log_softmax",) if soft else ("log_softmax", "nll_loss"),
        lambda x, t, *w: F.cross_entropy(x, t, *w, **kw),
        lambda x, t, *w: TF.cross_entropy(x, t, *w, **kw),
        inputs,
        grad=grad,
    )


SAMPLES = [
    _ce("mean", ((4, 3), CLASS_TARGETS), grad=(True, False)),
    _ce("weighted_ignore", ((4, 3), CLASS_TARGETS, WEIGHTS), (True, False, False), ignore_index=0),
    _ce(
        "sum_smoothing",
        ((4, 3), CLASS_TARGETS),
        (True, False),
        reduction="sum",
        label_smoothing=0.2,
    ),
    _ce(
        "weighted_smoothing_ignore",
        ((4, 3), CLASS_TARGETS, WEIGHTS),
        (True, False, False),
        ignore_index=1,
        label_smoothing=0.1,
    ),
    _ce(
        "none_smoothing",
        ((4, 3), CLASS_TARGETS),
        (True, False),
        reduction="none",
        label_smoothing=0.3,
    ),
    _ce("probabilities", ((4, 3), SOFT_TARGETS)),
    _ce(
        "probabilities_weighted_smoothing",
        ((4, 3), SOFT_TARGETS, WEIGHTS),
        (True, True, False),
        label_smoothing=0.2,
    ),
    _ce("spatial", ((2, 3, 2, 2), np.array([[[0, 1], [2, 2]], [[1, 1], [0, 2]]])), (True, False)),
    _ce("unbatched", ((3,), np.array(1)), (True, False)),
    _s(
        "mse_loss",
        ("mse_loss",),
        F.mse_loss,
        TF.mse_loss if TF else None,
        ((3, 4), (3, 4)),
    ),
    _s(
        "mse_loss:sum",
        ("mse_loss",),
        lambda a, b: F.mse_loss(a, b, reduction="sum"),
        lambda a, b: TF.mse_loss(a, b, reduction="sum"),
        ((3, 4), (3, 4)),
    ),
    _s("l1_loss", ("abs",), F.l1_loss, lambda a, b: _torch_l1(a - b), ((3, 4), (3, 4))),
    _s(
        "binary_cross_entropy",
        ("binary_cross_entropy",),
        F.binary_cross_entropy,
        TF.binary_cross_entropy if TF else None,
        (PROBS, LABELS),
        grad=(True, False),
    ),
    _s(
        "binary_cross_entropy:weight_soft_target",
        ("binary_cross_entropy",),
        lambda x, t, w: F.binary_cross_entropy(x, t, w, reduction="sum"),
        lambda x, t, w: TF.binary_cross_entropy(x, t, w, reduction="sum"),
        (PROBS, PROBS[::-1].copy(), (4,)),
        grad=(True, True, False),
    ),
    _s(
        "bce_with_logits",
        ("binary_cross_entropy_with_logits",),
        F.binary_cross_entropy_with_logits,
        TF.binary_cross_entropy_with_logits if TF else None,
        ((3, 4), LABELS),
        grad=(True, False),
        low=-4,
        high=4,
    ),
    _s(
        "bce_with_logits:pos_weight",
        ("binary_cross_entropy_with_logits", "softplus"),
        lambda x, t, p: F.binary_cross_entropy_with_logits(x, t, pos_weight=p, reduction="none"),
        lambda x, t, p: TF.binary_cross_entropy_with_logits(x, t, pos_weight=p, reduction="none"),
        ((3, 4), PROBS, (4,)),
        grad=(True, True, False),
        low=0.5,
        high=2,
    ),
    _s(
        "linear",
        ("matmul", "add"),
        F.linear,
        TF.linear if TF else None,
        ((2, 3, 4), (5, 4), (5,)),
    ),
    _s(
        "embedding",
        ("embedding",),
        lambda i, w: F.embedding(i, w),
        lambda i, w: TF.embedding(i, w),
        (IDS, (4, 3)),
    ),
]
