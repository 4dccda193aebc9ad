"""Check a learner's gradient-descent step: SGD with momentum, against ``wb.optim.SGD``.

The learner writes one step, PyTorch's formulation (``b`` is the velocity, kept in
``state`` from one call to the next)::

    def sgd_step(params, state, lr, momentum):
        with wb.no_grad():                        # the update is not part of any graph
            for i, p in enumerate(params):
                b = state.get(i)
                b = p.grad.clone() if b is None else momentum * b + p.grad  # b ← μ·b + g
                state[i] = b
                p -= lr * b                                                  # p ← p − lr·b

:func:`check_optimizer_step` trains a small model for a few steps twice — once with
the learner's step, once with ``wb.optim.SGD(params, lr, momentum)`` — and compares
the parameters after every step. It calls the step as a training loop calls
``optimizer.step()``: with autograd recording, so the step must turn it off itself
(a step without ``no_grad`` is named), and with the gradients zeroed *in place*
between steps, as ``optimizer.zero_grad(set_to_none=False)`` does (so a velocity that
is ``p.grad`` itself, not a copy, shows). Known wrong versions (no momentum, a damped
velocity, the velocity used before it is updated, a velocity aliasing ``p.grad``, lr
applied twice) are recognised by running each and comparing; where none fits, the
message shows the change expected against the change made and names no cause.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import wraps

import numpy as np

from ..core.tensor import Tensor
from ..optim import SGD
from ..record.grad_mode import no_grad
from .diagnose import Finding, compare
from .guard import checker, modes_kept
from .report import (
    PASSED_ON,
    ExerciseError,
    Passed,
    fail,
    learner_error,
    learners_frame,
    show_in_notebook,
)

Step = Callable[[list, dict, float, float], None]

# The engine's refusal to change a leaf that requires grad while autograd records.
RECORDING = re.compile(r"leaf Variable that requires grad is being used in an in-place operation")


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
    """The parameters (as arrays, by name) after each of ``steps`` training steps.

    Each step as a training loop runs it: the gradients zeroed in place (after the
    first), the loss's backward, then the step, called with autograd recording.
    """
    params, loss = model()
    step = make_step(list(params.values()))
    history = []
    for _ in range(steps):
        zero_in_place(params.values())
        loss().backward()
        with modes_kept():
            step()
        history.append({name: p.detach().numpy().copy() for name, p in params.items()})
    return history


def zero_in_place(params) -> None:
    """``optimizer.zero_grad(set_to_none=False)``: each gradient zeroed, the tensor kept."""
    with no_grad():
        for p in params:
            if p.grad is not None:
                p.grad.zero_()


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
def each_parameter(update: Callable) -> Step:
    """A step that runs ``update(i, p, state, lr, momentum)`` on each parameter, under
    ``no_grad`` as a step must: the loop every wrong step below shares, so that each
    shows only its own mistake, written as a learner would write it."""

    @wraps(update)
    def step(params: list, state: dict, lr: float, momentum: float) -> None:
        with no_grad():
            for i, p in enumerate(params):
                update(i, p, state, lr, momentum)

    return step


@each_parameter
def no_momentum(i, p, state, lr, momentum):
    p -= lr * p.grad


@each_parameter
def zero_started_average(i, p, state, lr, momentum):
    b = state.get(i, 0 * p.grad)
    state[i] = b = momentum * b + (1 - momentum) * p.grad
    p -= lr * b


@each_parameter
def stale_velocity(i, p, state, lr, momentum):
    b = state.get(i, 0 * p.grad)
    p -= lr * b
    state[i] = momentum * b + p.grad


@each_parameter
def stale_velocity_from_the_gradient(i, p, state, lr, momentum):
    b = state.get(i)
    b = p.grad.clone() if b is None else b
    p -= lr * b
    state[i] = momentum * b + p.grad


@each_parameter
def aliased_velocity(i, p, state, lr, momentum):
    b = state.get(i)
    b = p.grad if b is None else momentum * b + p.grad
    state[i] = b
    p -= lr * b


@each_parameter
def aliased_velocity_updated_in_place(i, p, state, lr, momentum):
    b = state.get(i)
    if b is None:
        state[i] = b = p.grad
    else:
        b.mul_(momentum).add_(p.grad)
    p -= lr * b


@each_parameter
def lr_twice(i, p, state, lr, momentum):
    state[i] = b = momentum * state.get(i, 0 * p.grad) + lr * p.grad
    p -= lr * b


KNOWN_MISTAKES = (
    (
        (no_momentum,),
        "Your steps match plain SGD without momentum: the velocity is not kept from one "
        "step to the next, or not used. Keep it in state: b ← momentum · b + g, then "
        "p ← p − lr · b",
    ),
    (
        (zero_started_average,),
        "Your velocity is an average, b ← μ · b + (1 − μ) · g: SGD with momentum adds the "
        "whole gradient, b ← μ · b + g (and starts from b = g)",
    ),
    (
        (stale_velocity, stale_velocity_from_the_gradient),
        "You move p with the velocity of the step before: update b first "
        "(b ← μ · b + g), then p ← p − lr · b",
    ),
    (
        (aliased_velocity, aliased_velocity_updated_in_place),
        "Your velocity is p.grad itself, not a copy: the next step zeroes the gradients in "
        "place (as optimizer.zero_grad(set_to_none=False) does) and backward adds the new "
        "gradient into them, so your velocity changes with them. Start it from a copy, "
        "p.grad.clone()",
    ),
    (
        (lr_twice,),
        "Your steps apply lr twice, once in the velocity and once in the step: keep "
        "b ← μ · b + g, and multiply by lr only in p ← p − lr · b",
    ),
)


@checker
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
        "b ← μ · b + g (started at b = g), the step p ← p − lr · b, and an update made "
        "outside the graph: momentum, as optimizer.step() does it.",
    )


def run_learner(learner_step: Step, lr: float, momentum: float, steps: int) -> list:
    try:
        return trajectory(with_step(learner_step, lr, momentum), steps)
    except PASSED_ON:  # the checker's own stops and messages go through as they are
        raise
    except Exception as err:
        name = getattr(learner_step, "__name__", "step")
        if RECORDING.search(str(err)):
            raise recording_error(err, learner_step, name) from None
        raise learner_error(err, learner_step, f"step {name}") from None


def recording_error(err: BaseException, learner_step: Step, name: str) -> ExerciseError:
    """The update ran with autograd recording: the engine refused to change a parameter."""
    frame = learners_frame(err, learner_step)
    where = f" on line {frame.lineno} (`{frame.line.strip()}`)" if frame and frame.line else ""
    message = (
        f"Your step {name} changed a parameter in place while autograd was recording"
        f"{where}, and autograd refuses: a parameter is a leaf that requires grad. Make the "
        "update under `with wb.no_grad():`, as optimizer.step() does: it is not part of "
        "any graph."
    )
    show_in_notebook()
    return ExerciseError(message)


def explain(k: int, name: str, expected: list, got: list, lr: float, momentum: float) -> None:
    """Fail at step ``k`` (0-based) for parameter ``name``, with the best diagnosis."""
    start = model()[0][name].detach().numpy() if k == 0 else expected[k - 1][name]
    what = f"the change your step made to {name}"
    finding = compare(what, expected[k][name] - start, got[k][name] - start)
    context = f"At step {k + 1}"
    for mistakes, diagnosis in KNOWN_MISTAKES:
        for mistake in mistakes:
            if same_trajectory(trajectory(with_step(mistake, lr, momentum), len(got)), got):
                fail(finding.sentences(context, diagnosis), finding, input=name)
    fail(finding.sentences(context, step_advice(finding, got, lr)), finding, input=name)


def step_advice(finding: Finding, got: list, lr: float) -> str | None:
    """Advice for a step no known mistake explains: only what the change itself shows."""
    if never_moved(got):
        return (
            "your step left every parameter as it was: change each in place (p -= lr * b, "
            "under no_grad); p = p - lr * b makes a new tensor and leaves the parameter unchanged"
        )
    if finding.kind == "sign":
        return "step against the gradient: p ← p − lr · b"
    if finding.kind == "factor" and np.isclose(abs(finding.details["factor"]), 1 / lr):
        return f"your change is 1/lr = {1 / lr:g} times too large: p ← p − lr · b"
    if finding.kind in ("zeros", "not_finite", "shape"):
        return ""  # the observation says it all; the generic advice would name a wrong cause
    return None


def never_moved(got: list) -> bool:
    """No parameter changed at any step."""
    params = model()[0]
    return all(
        np.array_equal(after[name], params[name].detach().numpy())
        for after in got
        for name in after
    )


def same_trajectory(a: list, b: list) -> bool:
    return all(
        np.allclose(a[k][name], b[k][name], rtol=1e-6, atol=1e-9)
        for k in range(len(a))
        for name in a[k]
    )
