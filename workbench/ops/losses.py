"""Losses that PyTorch records as one node: mse_loss, binary_cross_entropy (with logits).

Each is one op here too, reduction included, so that a learner comparing graphs reads
PyTorch's names (``MseLossBackward0``, ``BinaryCrossEntropyWithLogitsBackward0``) where
a composition of ops would show ``MeanBackward0 → MulBackward0 → SubBackward0``. The
rules are written in tensor ops, as every rule: gradients of gradients work.

``reduction`` is ``"mean"`` (ȳ shared by the N elements), ``"sum"`` (ȳ to each) or
``"none"`` (one loss per element, ȳ elementwise); :func:`per_element` turns ȳ into the
gradient of each element's loss.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import backend
from ..core.dtypes import SMALL_FLOAT_CHARS, SMALL_FLOATS, in_float32
from ..core.tensor import Tensor
from ..record.dispatch import apply_op
from ..record.forward_ad import sum_of_terms
from .activations import sigmoid, softplus
from .arithmetic import clamp_min
from .broadcasting import collapse_sum_like
from .registry import register_gradient, register_jvp, register_op
from .unary import log, log1p


def reduce_losses(losses, reduction: str):
    """The kernel's last step: the mean, the sum, or the losses as they are."""
    if reduction == "mean":  # sum / count: an empty mean is NaN without numpy's warning
        return backend.asarray(losses.sum() / losses.size, like=losses)
    if reduction == "sum":
        return backend.asarray(losses.sum(), like=losses)
    return losses


def per_element(grad: Tensor, reduction: str, count: int) -> Tensor:
    """ȳ for each element's loss: ``ȳ / N`` for a mean, ``ȳ`` for a sum or per element."""
    return grad / count if reduction == "mean" else grad


def _loss_jvp(orig, tangents: list, rule) -> Tensor:
    """L̇ = Σ (∂L/∂xᵢ · ẋᵢ + ∂L/∂tᵢ · ṫᵢ): the gradient rule at L̄ = 1 gives each element's
    slopes (a real loss: its JVP and its gradient share them); per element for 'none'."""
    ones = Tensor._make(backend.xp(orig.out._data).ones_like(orig.out._data))
    slopes = rule(orig, ones)
    terms = [s * d for s, d in zip(slopes, tangents) if s is not None and d is not None]
    per_element = sum_of_terms(terms)
    return per_element if orig.attrs["reduction"] == "none" else per_element.sum()


# ----------------------------------------------------------------- mse_loss
@register_op("mse_loss", inputs=("x", "target"), saves=("x", "target"))
def _mse_loss(x, target, reduction):
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_mse_loss.forward, x, target, reduction)
    diff = x - target
    return reduce_losses(diff * diff, reduction)


@register_gradient("mse_loss")
def mse_loss_grad(orig, grad):
    """Forward: L = mean((x − t)²)   (or the sum, or each (x − t)²: reduction)
    Backward: x̄ = ȳ · 2(x − t) / N,  t̄ = −x̄   (N = the element count for a mean, else 1)"""
    x, target = orig.args
    need_x, need_t = orig.needs_input_grad
    diff = x - target
    shared = per_element(grad, orig.attrs["reduction"], diff.numel()) * 2 * diff
    return [
        collapse_sum_like(shared, x) if need_x else None,
        collapse_sum_like(-shared, target) if need_t else None,
    ]


@register_jvp("mse_loss")
def mse_loss_jvp(orig, tangents):
    """Forward: L = mean((x − t)²)
    JVP: L̇ = mean(2 (x − t) · (ẋ − ṫ))"""
    return _loss_jvp(orig, tangents, mse_loss_grad)


def mse_loss_op(input: Tensor, target: Tensor, reduction: str) -> Tensor:
    return apply_op(_mse_loss, (input, target), {"reduction": reduction})


# ------------------------------------------------------- binary_cross_entropy
# PyTorch's floor under x (1 − x) in x̄: 10⁻¹² as a float32, so float64 gradients match too.
_BCE_EPSILON = float(np.float32(1e-12))


@register_op(
    "binary_cross_entropy", inputs=("x", "target", "weight"), saves=("x", "target", "weight")
)
def _binary_cross_entropy(x, target, weight, reduction):
    with np.errstate(divide="ignore"):  # log 0 = −∞, clamped to −100 next
        log_x = np.maximum(np.log(x), -100)
        log_not_x = np.maximum(np.log1p(-x), -100)
    losses = (target - 1) * log_not_x - target * log_x
    if weight is not None:
        losses = losses * weight
    return reduce_losses(losses, reduction).astype(x.dtype, copy=False)


@register_gradient("binary_cross_entropy")
def binary_cross_entropy_grad(orig, grad):
    """Forward: L = mean(−w · (t · max(ln x, −100) + (1 − t) · max(ln(1 − x), −100)))
    Backward: x̄ = ȳ · w · (x − t) / max(x (1 − x), 10⁻¹²) / N,  t̄ = ȳ · w · (ln(1 − x) − ln x) / N

    PyTorch's formulas (N: the element count for a mean, else 1). The clamp of the logs
    does not reach x̄: at x = 0 or 1 the gradient is large, not 0, so a saturated
    prediction still learns. The weight gets no gradient, as in PyTorch.
    """
    x, target, weight = orig.args
    need_x, need_t, _ = orig.needs_input_grad
    g = per_element(grad, orig.attrs["reduction"], x.numel())
    if weight is not None:
        g = g * weight
    return [
        g * (x - target) / clamp_min(x * (1 - x), _BCE_EPSILON) if need_x else None,
        g * (log1p(-x) - log(x)) if need_t else None,
        None,
    ]


@register_jvp("binary_cross_entropy")
def binary_cross_entropy_jvp(orig, tangents):
    """Forward: L = mean(−w · (t · ln x + (1 − t) · ln(1 − x)))
    JVP: L̇ = mean(w · ((x − t) / max(x (1 − x), 10⁻¹²) · ẋ + (ln(1 − x) − ln x) · ṫ))"""
    return _loss_jvp(orig, tangents, binary_cross_entropy_grad)


def binary_cross_entropy_op(input, target, weight, reduction: str) -> Tensor:
    return apply_op(_binary_cross_entropy, (input, target, weight), {"reduction": reduction})


# --------------------------------------------- binary_cross_entropy_with_logits
@register_op(
    "binary_cross_entropy_with_logits",
    inputs=("x", "target", "weight", "pos_weight"),
    saves=("x", "target", "weight", "pos_weight"),
)
def _bce_with_logits(x, target, weight, pos_weight, reduction):
    # −log σ(x) = softplus(−x) = log(1 + e^(−|x|)) + max(−x, 0), stable for any x
    softplus_neg = np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)
    log_weight = 1 if pos_weight is None else (pos_weight - 1) * target + 1
    losses = (1 - target) * x + log_weight * softplus_neg
    if weight is not None:
        losses = losses * weight
    return reduce_losses(losses, reduction).astype(x.dtype, copy=False)


@register_gradient("binary_cross_entropy_with_logits")
def bce_with_logits_grad(orig, grad):
    """Forward: L = mean(w · (p · t · softplus(−x) + (1 − t) · softplus(x)))   (p: pos_weight)
    Backward: x̄ = ȳ · w · (σ(x) · (1 − t + p · t) − p · t) / N,
    t̄ = ȳ · w · ((p − 1) · softplus(−x) − x) / N

    (−ln σ(x) = softplus(−x), −ln(1 − σ(x)) = softplus(x) = softplus(−x) + x; N: the element
    count for a mean, else 1.) With p = 1, x̄ = ȳ · w · (σ(x) − t) / N. Weights get no gradient.
    """
    x, target, weight, pos_weight = orig.args
    need_x, need_t, _, _ = orig.needs_input_grad
    dtype = x.dtype
    if dtype in SMALL_FLOATS:  # float16, bfloat16: computed in float32, rounded once
        x, target, grad = x.float(), target.float(), grad.float()
    g = per_element(grad, orig.attrs["reduction"], x.numel())
    if weight is not None:
        g = g * weight
    p = 1.0 if pos_weight is None else pos_weight
    grad_x = grad_t = None
    if need_x:
        grad_x = g * (sigmoid(x) * (1 - target + p * target) - p * target)
    if need_t:  # p · softplus(−x) − softplus(x) = (p − 1) · softplus(−x) − x: no cancellation
        grad_t = g * ((p - 1) * softplus(-x, 1.0, math.inf) - x)
    return [_cast(grad_x, dtype), _cast(grad_t, dtype), None, None]


@register_jvp("binary_cross_entropy_with_logits")
def bce_with_logits_jvp(orig, tangents):
    """Forward: L = mean(w · (p · t · softplus(−x) + (1 − t) · softplus(x)))
    JVP: L̇ = mean(w · ((σ(x) · (1 − t + p · t) − p · t) · ẋ + ((p − 1) · softplus(−x) − x) · ṫ))"""
    return _loss_jvp(orig, tangents, bce_with_logits_grad)


def _cast(t: Tensor | None, dtype) -> Tensor | None:
    return None if t is None else t.to(dtype)


def bce_with_logits_op(input, target, weight, pos_weight, reduction: str) -> Tensor:
    inputs = (input, target, weight, pos_weight)
    return apply_op(_bce_with_logits, inputs, {"reduction": reduction})
