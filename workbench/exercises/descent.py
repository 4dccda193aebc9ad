"""Check a learner's gradient-descent step: SGD with momentum, against ``wb.optim.SGD``.

The learner writes one step, PyTorch's formulation (``b`` is the velocity, kept in
``state`` from one call to the next)::

    def sgd_step(params, state, lr, momentum):
        for i, p in enumerate(params):
            b = state.get(i)
            b = p.grad.clone() if b is None else momentum * b + p.grad  # b ← μ·b + g
            state[i] = b
            p -= lr * b                                                  # p ← p − lr·b

:func:`check_optimizer_step` trains a small model for a few steps twice — once with
the learner's step, once with ``wb.optim.SGD(params, lr, momentum)`` — and compares
the parameters after every step. The step runs under ``no_grad``, as
``optimizer.step()`` does. Known wrong versions (no momentum, a damped velocity, the
velocity used before it is updated) are recognised and named.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..autograd.grad_mode import no_grad
from ..optim import SGD
from ..tensor import Tensor
from .diagnose import compare
from .report import PASSED_ON, Passed, fail, learner_error

Step = Callable[[list, dict, float, float], None]

ADVICE = {  # what to do, by kind of finding, for a step's change to a parameter
    "zeros": "change the tensor in place (p -= lr * b, under no_grad): p = p - lr * b only "
    "makes a new tensor and leaves the parameter as it was",
    "sign": "step against the gradient: p ← p − lr · b",
    "factor": "check where lr multiplies: p ← p − lr · b, with lr applied once",
}


def model() -> tuple:
    """Parameters ``w`` (2, 3) and ``b`` (3,) of ``tanh(x @ w + b)``, and its loss."""
    rng = np.random.default_rng(1)
    x, target = rng.standard_normal((4, 2)), rng.standard_normal((4, 3))
    params = {
        "w": Tensor(rng.standard_normal((2, 3)), requires_grad=True),
        "b": Tensor(rng.standard_normal(3), requires_grad=True),
    }

    def loss() -> Tensor:
        prediction = (Tensor(x) @ params["w"] + params["b"]).tanh()
        return ((prediction - Tensor(target)) ** 2).mean()

    return params, loss


def trajectory(make_step: Callable[[list], Callable[[], None]], steps: int) -> list:
    """The parameters (as arrays, by name) after each of ``steps`` training steps."""
    params, loss = model()
    step = make_step(list(params.values()))
    history = []
    for _ in range(steps):
        for p in params.values():
            p.grad = None
        loss().backward()
        with no_grad():
            step()
        history.append({name: p.detach().numpy().copy() for name, p in params.items()})
    return history


def with_sgd(**settings) -> Callable:
    def make_step(params: list) -> Callable[[], None]:
        return SGD(params, **settings).step

    return make_step


def with_step(step: Step, lr: float, momentum: float) -> Callable:
    """The learner's step (or a known wrong one), with its own ``state`` dict."""

    def make_step(params: list) -> Callable[[], None]:
        state: dict = {}
        return lambda: step(params, state, lr, momentum)

    return make_step


# -------------------------------------------- known wrong steps, and what they miss
def no_momentum(params, state, lr, momentum):
    for p in params:
        p -= lr * p.grad


def zero_started_average(params, state, lr, momentum):
    for i, p in enumerate(params):
        b = state.get(i, 0 * p.grad)
        state[i] = b = momentum * b + (1 - momentum) * p.grad
        p -= lr * b


def stale_velocity(params, state, lr, momentum):
    for i, p in enumerate(params):
        b = state.get(i, 0 * p.grad)
        p -= lr * b
        state[i] = momentum * b + p.grad


KNOWN_MISTAKES = (
    (
        no_momentum,
        "Your steps match plain SGD without momentum: the velocity is not kept from one "
        "step to the next, or not used. Keep it in state: b ← momentum · b + g, then "
        "p ← p − lr · b",
    ),
    (
        zero_started_average,
        "Your velocity is an average, b ← μ · b + (1 − μ) · g: SGD with momentum adds the "
        "whole gradient, b ← μ · b + g (and starts from b = g)",
    ),
    (
        stale_velocity,
        "You move p with the velocity of the step before: update b first "
        "(b ← μ · b + g), then p ← p − lr · b",
    ),
)


def check_optimizer_step(
    learner_step: Step, lr: float = 0.05, momentum: float = 0.9, steps: int = 4
) -> Passed:
    """Check ``learner_step(params, state, lr, momentum)`` against ``wb.optim.SGD``.

    ``state`` is a dict kept between the calls (the velocity lives there). After every
    one of ``steps`` steps each parameter must equal SGD's; otherwise
    :class:`ExerciseError` names the first step and parameter that differ, the
    elements, and the mistake when it is a known one.
    """
    expected = trajectory(with_sgd(lr=lr, momentum=momentum), steps)
    got = run_learner(learner_step, lr, momentum, steps)
    for k in range(steps):
        for name in expected[k]:
            if not np.allclose(got[k][name], expected[k][name], rtol=1e-6, atol=1e-9):
                explain(k, name, expected, got, lr, momentum)
    return Passed(
        "Your SGD step is right.",
        f"Over {steps} steps it moves every parameter exactly as "
        f"wb.optim.SGD(lr={lr}, momentum={momentum}) does. You just proved your velocity "
        "b ← μ · b + g (started at b = g) and the step p ← p − lr · b: momentum.",
    )


def run_learner(learner_step: Step, lr: float, momentum: float, steps: int) -> list:
    try:
        return trajectory(with_step(learner_step, lr, momentum), steps)
    except PASSED_ON:  # the checker's own stops and messages go through as they are
        raise
    except Exception as err:
        name = getattr(learner_step, "__name__", "step")
        raise learner_error(err, learner_step, f"step {name}") from None


def explain(k: int, name: str, expected: list, got: list, lr: float, momentum: float) -> None:
    """Fail at step ``k`` (0-based) for parameter ``name``, with the best diagnosis."""
    start = model()[0][name].detach().numpy() if k == 0 else expected[k - 1][name]
    what = f"the change your step made to {name}"
    finding = compare(what, expected[k][name] - start, got[k][name] - start)
    context = f"At step {k + 1}"
    for mistake, diagnosis in KNOWN_MISTAKES:
        if same_trajectory(trajectory(with_step(mistake, lr, momentum), len(got)), got):
            fail(finding.sentences(context, diagnosis), finding, input=name)
    fail(finding.sentences(context, ADVICE.get(finding.kind)), finding, input=name)


def same_trajectory(a: list, b: list) -> bool:
    return all(
        np.allclose(a[k][name], b[k][name], rtol=1e-6, atol=1e-9)
        for k in range(len(a))
        for name in a[k]
    )
