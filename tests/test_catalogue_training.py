"""Misconception catalogues of lesson 9's exploding gradients and BatchNorm: global-norm
clipping, and BatchNorm's backward by hand.

Each mistake is one learners make, run through the check the lesson runs; the check must
name it (``says``) and never give it a cause it does not have (``never``). Each right
answer is written another way and must pass. And the checks' references are PyTorch's:
``clip_grad_norm_`` and training-mode ``batch_norm`` give what PyTorch 2 gives on every
case the checks run.
"""

from __future__ import annotations

import numpy as np
import pytest
from catalogue import Catalogue, Mistake, Right, not_yet

import workbench as wb
from workbench.exercises import NotAnswered
from workbench.exercises.batchnorm_backward import (
    EPS,
    batches,
    check_batchnorm_backward,
    engine_x_bar,
)
from workbench.exercises.global_clipping import CASES, check_clip_global_norm, clipped_by_the_engine
from workbench.nn import functional as F

EXPECTED_GOT = "was expected"  # the words of a message that shows expected against got


# ---------------------------------------------------------------- global-norm clipping
def total_norm(params) -> float:
    return float(np.sqrt(sum((p.grad**2).sum().item() for p in params)))


def clip_right(params, max_norm):
    total = wb.stack([p.grad.norm() for p in params]).norm()
    scale = min(1.0, max_norm / (total.item() + 1e-6))
    with wb.no_grad():
        for p in params:
            p.grad.mul_(scale)
    return total


def clip_clamped_tensor(params, max_norm):
    """PyTorch's own lines: the scale a tensor, clamped; no 1e-6 in a float."""
    total = wb.stack([p.grad.norm(2) for p in params]).norm(2)
    scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for p in params:
        p.grad.mul_(scale)
    return total


def clip_with_an_if(params, max_norm):
    """Only too-long gradients touched; p.grad rebound, the norm returned as a float."""
    total = total_norm(params)
    if total > max_norm:
        for p in params:
            p.grad = p.grad * (max_norm / total)
    return total


def clip_by_the_engine(params, max_norm):
    return wb.nn.utils.clip_grad_norm_(params, max_norm)


def clip_each_on_its_own(params, max_norm):
    total = total_norm(params)
    for p in params:
        p.grad.mul_(min(1.0, max_norm / (p.grad.norm().item() + 1e-6)))
    return total


def clip_not_clamped(params, max_norm):
    total = total_norm(params)
    for p in params:
        p.grad.mul_(max_norm / (total + 1e-6))
    return total


def clip_returns_after(params, max_norm):
    clip_right(params, max_norm)
    return total_norm(params)


def clip_new_tensors(params, max_norm):
    scale = min(1.0, max_norm / (total_norm(params) + 1e-6))
    return [p.grad * scale for p in params]


def clip_into_a_local(params, max_norm):
    total = total_norm(params)
    for p in params:
        g = p.grad
        g = g * min(1.0, max_norm / (total + 1e-6))  # noqa: F841 (the slip: p.grad unchanged)
    return total


def sum_of_norms(params) -> float:
    return sum(p.grad.norm().item() for p in params)


def clip_sum_of_norms(params, max_norm):
    total = sum_of_norms(params)
    for p in params:
        p.grad.mul_(min(1.0, max_norm / (total + 1e-6)))
    return total


def clip_sum_of_norms_true_total(params, max_norm):
    """The sum of norms for the scale, the right total returned: the gradients show it."""
    total, summed = total_norm(params), sum_of_norms(params)
    for p in params:
        p.grad.mul_(min(1.0, max_norm / (summed + 1e-6)))
    return total


def clip_squared_norm(params, max_norm):
    total = sum((p.grad**2).sum().item() for p in params)
    for p in params:
        p.grad.mul_(min(1.0, max_norm / (total + 1e-6)))
    return total


def clip_squared_scale_true_total(params, max_norm):
    total = total_norm(params)
    for p in params:
        p.grad.mul_(min(1.0, max_norm / (total**2 + 1e-6)))
    return total


def clip_returns_nothing(params, max_norm):
    clip_right(params, max_norm)


def clip_half_way(params, max_norm):
    """Scaled to twice max_norm: one factor off, as the check says."""
    total = total_norm(params)
    for p in params:
        p.grad.mul_(min(1.0, 2 * max_norm / total))
    return total


CLIP = Catalogue(
    exercise="09-training-clip",
    check=check_clip_global_norm,
    mistakes=[
        Mistake(
            "each parameter clipped by its own norm",
            clip_each_on_its_own,
            says=["are each clipped by its own norm", "scale every p.grad by the same factor"],
            kind="per_tensor",
        ),
        Mistake(
            "the clamp at 1 forgotten: short gradients scaled up",
            clip_not_clamped,
            says=["total 0.3742", "scaled up to norm max_norm", "min(1, max_norm / (total"],
            kind="not_clamped",
        ),
        Mistake(
            "the norm after clipping returned",
            clip_returns_after,
            says=["is the norm after clipping", "3.64 was expected", "before you scaled them"],
            kind="norm_after",
        ),
        Mistake(
            "not in place: new tensors returned, p.grad unchanged",
            clip_new_tensors,
            says=["returned 3 tensors, new ones", "scale each p.grad where it is"],
            kind="returned_tensors",
        ),
        Mistake(
            "not in place: the scaled gradient kept in a local name",
            clip_into_a_local,
            says=["every p.grad is as it was", "above max_norm", "p.grad.mul_(scale)"],
            kind="unchanged",
        ),
        Mistake(
            "the sum of the norms for the total",
            clip_sum_of_norms,
            says=["is the sum of the parameters' norms", "2-norm of the parameters' norms"],
            kind="sum_of_norms",
        ),
        Mistake(
            "the sum of the norms for the scale alone",
            clip_sum_of_norms_true_total,
            says=["with the sum of the parameters' norms as the total"],
            kind="sum_of_norms",
        ),
        Mistake(
            "the squared norm for the total",
            clip_squared_norm,
            says=["is the squared norm: the square root is missing"],
            kind="squared_norm",
        ),
        Mistake(
            "the squared norm for the scale alone",
            clip_squared_scale_true_total,
            says=["with the squared total norm"],
            kind="squared_norm",
        ),
        Mistake(
            "nothing returned",
            clip_returns_nothing,
            says=["your function returned None", "Return the total norm before clipping"],
            kind="missing",
        ),
        Mistake(
            "clipped to twice max_norm",
            clip_half_way,
            says=["params[0].grad is 2 times the expected value"],
            never=["in place", "own norm", "squared", "sum of"],
            kind="factor",
        ),
    ],
    rights=[
        Right("a float scale, mul_ under no_grad (the lesson's)", clip_right),
        Right("PyTorch's lines: a tensor scale clamped at 1", clip_clamped_tensor),
        Right("only when too long, p.grad rebound, a float returned", clip_with_an_if),
        Right("the engine's clip_grad_norm_", clip_by_the_engine),
    ],
)


# ---------------------------------------------------------------- BatchNorm's backward
def biased_stats(x):
    mean = x.mean(0)
    return mean, ((x - mean) ** 2).mean(0)


def bn_right(x, gamma, y_bar, eps):
    mean, var = biased_stats(x)
    sigma = (var + eps).sqrt()
    x_hat = (x - mean) / sigma
    return gamma / sigma * (y_bar - y_bar.mean(0) - x_hat * (y_bar * x_hat).mean(0))


def bn_by_sums(x, gamma, y_bar, eps):
    """numpy, with sums and N written out, as CS231n's notes write it."""
    x, gamma, y_bar = x.numpy(), gamma.numpy(), y_bar.numpy()
    n = x.shape[0]
    x_hat = (x - x.mean(0)) / np.sqrt(x.var(0) + eps)
    g = y_bar * gamma
    return (n * g - g.sum(0) - x_hat * (g * x_hat).sum(0)) / (n * np.sqrt(x.var(0) + eps))


def bn_through_the_jacobian(x, gamma, y_bar, eps):
    """Each column's Jacobian matrix ([i = j] − 1/N − x̂ᵢ x̂ⱼ / N) / σ, applied to γ ȳ."""
    x, gamma, y_bar = x.numpy(), gamma.numpy(), y_bar.numpy()
    n = x.shape[0]
    x_bar = np.empty_like(x)
    for c in range(x.shape[1]):
        sigma = np.sqrt(x[:, c].var() + eps)
        x_hat = (x[:, c] - x[:, c].mean()) / sigma
        jacobian = (np.eye(n) - 1 / n - np.outer(x_hat, x_hat) / n) / sigma
        x_bar[:, c] = jacobian.T @ (gamma[c] * y_bar[:, c])
    return wb.tensor(x_bar)


def bn_by_the_engine(x, gamma, y_bar, eps):
    x = x.detach().requires_grad_()
    y = F.batch_norm(x, None, None, weight=gamma, training=True, eps=eps)
    return wb.autograd.grad(y, x, y_bar)[0]


def bn_uncoupled(x, gamma, y_bar, eps):
    return gamma * y_bar / (biased_stats(x)[1] + eps).sqrt()


def bn_terms(x, gamma, y_bar, eps, mean_term=1.0, xhat_term=1.0, var=None):
    mean, biased = biased_stats(x)
    sigma = ((biased if var is None else var) + eps).sqrt()
    x_hat = (x - mean) / sigma
    return (
        gamma
        / sigma
        * (y_bar - mean_term * y_bar.mean(0) - xhat_term * x_hat * (y_bar * x_hat).mean(0))
    )


def bn_no_mean_term(x, gamma, y_bar, eps):
    return bn_terms(x, gamma, y_bar, eps, mean_term=0.0)


def bn_no_xhat_term(x, gamma, y_bar, eps):
    return bn_terms(x, gamma, y_bar, eps, xhat_term=0.0)


def bn_plus_xhat_term(x, gamma, y_bar, eps):
    return bn_terms(x, gamma, y_bar, eps, xhat_term=-1.0)


def bn_unbiased(x, gamma, y_bar, eps):
    return bn_terms(x, gamma, y_bar, eps, var=x.var(0))  # var's default: divided by N − 1


def bn_wrong_sign(x, gamma, y_bar, eps):
    return -bn_right(x, gamma, y_bar, eps)


def bn_no_gamma(x, gamma, y_bar, eps):
    return bn_right(x, wb.ones_like(gamma), y_bar, eps)


def bn_no_eps(x, gamma, y_bar, eps):
    return bn_right(x, gamma, y_bar, 0.0)


def bn_over_features(x, gamma, y_bar, eps):
    mean = x.mean(1, keepdim=True)
    sigma = (((x - mean) ** 2).mean(1, keepdim=True) + eps).sqrt()
    x_hat = (x - mean) / sigma
    return (
        gamma
        / sigma
        * (y_bar - y_bar.mean(1, keepdim=True) - x_hat * (y_bar * x_hat).mean(1, keepdim=True))
    )


def bn_halved_x_hat_term(x, gamma, y_bar, eps):
    """Half the variance path: no cause the check can know."""
    return bn_terms(x, gamma, y_bar, eps, xhat_term=0.5)


def bn_transposed(x, gamma, y_bar, eps):
    return bn_right(x, gamma, y_bar, eps).T


BATCHNORM = Catalogue(
    exercise="09-training-batchnorm",
    check=check_batchnorm_backward,
    mistakes=[
        Mistake(
            "the coupling ignored: γ ȳ / σ",
            bn_uncoupled,
            says=["is γ · ȳ / sqrt(var + eps)", "as if it were alone"],
            kind="coupling_ignored",
        ),
        Mistake(
            "the mean(ȳ) term forgotten",
            bn_no_mean_term,
            says=["lacks the − mean(ȳ) term"],
            kind="mean_term_missing",
        ),
        Mistake(
            "the x̂ · mean(ȳ x̂) term forgotten",
            bn_no_xhat_term,
            says=["lacks the − x̂ · mean(ȳ · x̂) term"],
            kind="xhat_term_missing",
        ),
        Mistake(
            "the x̂ term added",
            bn_plus_xhat_term,
            says=["adds x̂ · mean(ȳ · x̂) where it should subtract it"],
            kind="xhat_term_sign",
        ),
        Mistake(
            "the unbiased variance",
            bn_unbiased,
            says=["uses the unbiased variance", "x.var(0, unbiased=False)"],
            kind="unbiased_variance",
        ),
        Mistake("a sign", bn_wrong_sign, says=["wrong sign"], kind="sign"),
        Mistake(
            "γ forgotten",
            bn_no_gamma,
            says=["lacks γ", "multiply by γ"],
            kind="gamma_left_out",
        ),
        Mistake(
            "eps forgotten",
            bn_no_eps,
            says=["eps is left out"],
            kind="eps_left_out",
        ),
        Mistake(
            "the statistics over the features (layer norm's)",
            bn_over_features,
            says=["along dim 1, over the features"],
            kind="over_features",
        ),
        Mistake(
            "transposed",
            bn_transposed,
            says=["has shape (3, 6) where (6, 3)"],
            kind="shape",
        ),
        Mistake(
            "half the variance path: no cause the check can know",
            bn_halved_x_hat_term,
            says=["your x̄ is wrong at", EXPECTED_GOT],
            kind="elements",
        ),
    ],
    rights=[
        Right("tensor ops, means over dim 0 (the lesson's)", bn_right),
        Right("numpy, sums and N written out", bn_by_sums),
        Right("each column's Jacobian applied to γ ȳ", bn_through_the_jacobian),
        Right("the engine's own gradient", bn_by_the_engine),
    ],
)

CATALOGUES = [CLIP, BATCHNORM]


# ------------------------------------------------------ the references are PyTorch's
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"max_norm={c.max_norm}")
def test_the_clipping_reference_is_pytorchs(case):
    torch = pytest.importorskip("torch")
    grads = case.grads()
    expected, total = clipped_by_the_engine(grads, case.max_norm)
    params = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = torch.tensor(g.copy())
    torch_total = torch.nn.utils.clip_grad_norm_(params, case.max_norm)
    assert np.isclose(torch_total.item(), total, rtol=1e-12)
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.grad.numpy(), e, rtol=1e-12, atol=1e-15)


def test_the_batchnorm_reference_is_pytorchs():
    torch = pytest.importorskip("torch")
    for x, gamma, y_bar in batches():
        inputs = torch.tensor(x, requires_grad=True)
        y = torch.nn.functional.batch_norm(
            inputs, None, None, weight=torch.tensor(gamma), training=True, eps=EPS
        )
        (x_bar,) = torch.autograd.grad(y, inputs, torch.tensor(y_bar))
        np.testing.assert_allclose(engine_x_bar(x, gamma, y_bar), x_bar.numpy(), atol=1e-12)


@pytest.mark.parametrize("check", [check_clip_global_norm, check_batchnorm_backward])
def test_an_unanswered_exercise_is_not_answered_yet(check):
    with pytest.raises(NotAnswered):
        check(not_yet)
