"""Check a learner's backward of batch normalization in training mode (lesson 9).

::

    def batchnorm_backward(x, gamma, y_bar, eps):   # x, y_bar: (N, C); gamma: (C,)
        ...   # x̄ for y = γ · x̂ + β, x̂ = (x − mean) / sqrt(var + eps), the mean and the
              # (biased) variance of each column over the batch, dim 0

    check_batchnorm_backward(batchnorm_backward)

The answer is x̄ = γ / sqrt(var + eps) · (ȳ − mean(ȳ) − x̂ · mean(ȳ · x̂)), the means over
the batch. It is compared with the engine's gradient of ``F.batch_norm(..., training=True)``
(``ops/nn.py``, ``batch_norm_grad``) and with finite differences, on three batches (none
square, so that a mean over the wrong dim shows). The usual slips are named
(:data:`SLIPS`): each example treated as if alone (the coupling ignored), the mean(ȳ)
term or the x̂ · mean(ȳ · x̂) term left out, the second term's sign flipped, the unbiased
variance, eps left out, γ left out, the statistics taken over the features (layer
norm's). Where none fits, the message shows expected against got and names no cause.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..autograd.entry_points import grad as autograd_grad
from ..core.tensor import Tensor
from ..nn import functional as F
from .diagnose import compare, is_close, shape_text, wrong_values
from .guard import checker
from .per_example import Slip
from .report import Passed, call_learner, fail
from .rules import FD_ATOL, FD_RTOL, as_result, finite_differences

WHAT = "your x̄"
EPS = 0.01  # large enough that leaving it out shows


def batches() -> list:
    """(x, gamma, y_bar): columns of different means and spreads, γ different per column."""
    rng = np.random.default_rng(9)
    shapes = ((6, 3), (4, 2), (5, 1))
    found = []
    for n, c in shapes:
        x = rng.standard_normal((n, c)) * rng.uniform(0.3, 2.0, c) + rng.uniform(-1, 1, c)
        gamma = rng.uniform(0.5, 2.0, c) * rng.choice([-1, 1], c)
        found.append((x, gamma, rng.standard_normal((n, c))))
    return found


def normalized(x: np.ndarray, eps: float, axis: int = 0, ddof: int = 0) -> tuple:
    """(x̂, sqrt(var + eps)) with the statistics over ``axis``."""
    sigma = np.sqrt(x.var(axis=axis, ddof=ddof, keepdims=True) + eps)
    return (x - x.mean(axis=axis, keepdims=True)) / sigma, sigma


def x_bar(x, gamma, y_bar, eps, *, axis=0, ddof=0, mean_term=1.0, xhat_term=1.0):
    """γ / σ · (ȳ − mean(ȳ) − x̂ · mean(ȳ · x̂)); the keywords make the slips."""
    x_hat, sigma = normalized(x, eps, axis, ddof)
    mean_y_bar = y_bar.mean(axis=axis, keepdims=True)
    mean_product = (y_bar * x_hat).mean(axis=axis, keepdims=True)
    return gamma / sigma * (y_bar - mean_term * mean_y_bar - xhat_term * x_hat * mean_product)


@checker
def check_batchnorm_backward(batchnorm_backward: Callable) -> Passed:
    """Check ``batchnorm_backward(x, gamma, y_bar, eps)`` = x̄ of training-mode batch norm."""
    for x, gamma, y_bar in batches():
        check_batch(batchnorm_backward, x, gamma, y_bar)
    return Passed(
        "Your batch norm backward is right.",
        "On three batches it equals the engine's x̄ and finite differences. You just "
        "proved that each example's x̄ depends on the whole batch: through the mean, every "
        "example gets −mean(ȳ); through the variance, −x̂ · mean(ȳ · x̂). Only the first "
        "term, ȳ, is the example's own.",
    )


def engine_x_bar(x: np.ndarray, gamma: np.ndarray, y_bar: np.ndarray) -> np.ndarray:
    inputs = Tensor(x, requires_grad=True)
    y = F.batch_norm(inputs, None, None, weight=Tensor(gamma), training=True, eps=EPS)
    return autograd_grad(y, inputs, Tensor(y_bar))[0].numpy()


def check_batch(batchnorm_backward: Callable, x, gamma, y_bar) -> None:
    context = f"With x of shape {shape_text(x.shape)}, γ = {np.round(gamma, 3).tolist()}"
    args = (Tensor(x.copy()), Tensor(gamma.copy()), Tensor(y_bar.copy()), EPS)
    got = call_learner(batchnorm_backward, args, context, "function batchnorm_backward")
    got = as_result(got, context, "x̄, one number per element of x", "x and ȳ are real")
    expected = engine_x_bar(x, gamma, y_bar)
    finding = compare(WHAT, expected, got)
    if finding is None:
        return
    numeric = finite_differences(
        lambda t: F.batch_norm(t, None, None, weight=Tensor(gamma), training=True, eps=EPS),
        [Tensor(x, requires_grad=True)],
        [y_bar],
    )[0]
    if compare(WHAT, numeric, got, rtol=FD_RTOL, atol=FD_ATOL) is None:
        return  # right to the accuracy of finite differences
    if finding.kind not in ("shape", "not_finite"):
        for slip in SLIPS:
            slipped = slip.made(x, gamma, y_bar)
            if is_close(slipped, got) and not is_close(slipped, expected):
                observation = f"{WHAT} {slip.observation}"
                finding = wrong_values(
                    slip.kind, WHAT, observation, slip.advice, expected, got, 1e-6, 1e-9
                )
                break
    fail(finding.sentences(context), finding)


SLIPS = (
    Slip(
        "coupling_ignored",
        lambda x, gamma, y_bar: y_bar * gamma / normalized(x, EPS)[1],
        "is γ · ȳ / sqrt(var + eps): each example treated as if it were alone",
        "the mean and the variance are computed from every example, so each x moves every "
        "output: subtract mean(ȳ) and x̂ · mean(ȳ · x̂) from ȳ before scaling",
    ),
    Slip(
        "mean_term_missing",
        lambda x, gamma, y_bar: x_bar(x, gamma, y_bar, EPS, mean_term=0.0),
        "lacks the − mean(ȳ) term, the path through the mean",
        "every x moves the mean, and the mean moves every output: subtract mean(ȳ) over "
        "the batch (dim 0)",
    ),
    Slip(
        "xhat_term_missing",
        lambda x, gamma, y_bar: x_bar(x, gamma, y_bar, EPS, xhat_term=0.0),
        "lacks the − x̂ · mean(ȳ · x̂) term, the path through the variance",
        "every x moves the variance too: subtract x̂ · mean(ȳ · x̂), the mean over the batch",
    ),
    Slip(
        "xhat_term_sign",
        lambda x, gamma, y_bar: x_bar(x, gamma, y_bar, EPS, xhat_term=-1.0),
        "adds x̂ · mean(ȳ · x̂) where it should subtract it: a sign",
        "a larger x raises the variance, and that lowers every |x̂|: the term is subtracted",
    ),
    Slip(
        "unbiased_variance",
        lambda x, gamma, y_bar: x_bar(x, gamma, y_bar, EPS, ddof=1),
        "uses the unbiased variance (divided by N − 1)",
        "batch norm normalizes with the biased variance, the mean of (x − mean)², divided "
        "by N: x.var(0, unbiased=False)",
    ),
    Slip(
        "eps_left_out",
        lambda x, gamma, y_bar: x_bar(x, gamma, y_bar, 0.0),
        "divides by sqrt(var): eps is left out",
        "the forward divided by sqrt(var + eps), and so does its gradient",
    ),
    Slip(
        "gamma_left_out",
        lambda x, gamma, y_bar: x_bar(x, np.ones_like(gamma), y_bar, EPS),
        "lacks γ: it is x̄ for γ = 1",
        "the forward is y = γ · x̂ + β, so the gradient reaching x̂ is γ · ȳ: multiply by γ "
        "(one per column)",
    ),
    Slip(
        "over_features",
        lambda x, gamma, y_bar: x_bar(x, gamma, y_bar, EPS, axis=1),
        "takes the means and the variance along dim 1, over the features (layer norm's)",
        "batch norm normalizes each feature over the batch: mean(0, keepdim=True)",
    ),
)
