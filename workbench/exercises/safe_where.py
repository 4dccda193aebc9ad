"""Check a learner's safe ``where`` (lesson 8): √x where x > 0, else 0, whose value AND
gradient are finite and right everywhere.

``wb.where(x > 0, x.sqrt(), 0)`` has the right value but a NaN gradient at every x ≤ 0:
the untaken branch ``x.sqrt()`` still ran there, and backward still goes through it.
where sends it ȳ = 0, and sqrt's rule makes 0 / (2√x) of it: 0 / 0 at x = 0, 0 / NaN
below. Zero times an infinity or a NaN is NaN, so no where after the unsafe op can
clean it up. The fix sanitizes the input *before* the op (the "double where")::

    safe = wb.where(x > 0, x, 1)          # a harmless value where the branch is not taken
    y = wb.where(x > 0, safe.sqrt(), 0)   # the branch taken decides the value

:func:`check_safe_sqrt` runs the learner's function on points that include 0 and
negative numbers, compares the value and the gradient (ȳ = 1) with the analytic ones
(1 / (2√x) for x > 0, 0 for x ≤ 0: the branch taken at x decides) and names the
mistakes learners make: the NaN of the untaken branch, a clamp (or ``x >= 0``) that
lets sqrt's infinite slope through at the boundary x = 0, the placeholder's value
leaking into the result.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..core.tensor import Tensor
from .diagnose import Finding, compare, number
from .guard import checker
from .report import Passed, call_learner, fail, fail_on

POINTS = np.array([-2.0, -0.5, 0.0, 0.04, 0.25, 1.0, 4.0])  # 0, negatives, and x > 0
WHAT = "function safe_sqrt"


def expected_value(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, np.sqrt(np.where(x > 0, x, 1.0)), 0.0)


def expected_gradient(x: np.ndarray) -> np.ndarray:
    """1 / (2√x) where x > 0; 0 where x ≤ 0, the slope of the 0 branch taken there."""
    return np.where(x > 0, 0.5 / np.sqrt(np.where(x > 0, x, 1.0)), 0.0)


@checker
def check_safe_sqrt(function: Callable) -> Passed:
    """Check ``function(x)``: √x where x > 0, else 0, with a finite, right gradient."""
    x = Tensor(POINTS.copy(), requires_grad=True)
    context = f"At x = {points_text(POINTS)}"
    y = call_learner(function, (x,), context, WHAT)
    if not isinstance(y, Tensor) or y.shape != x.shape:
        fail(
            f"{context}, your function returned {what_it_is(y)}. Return a tensor of x's "
            f"shape {tuple(x.shape)}, made from x with tensor operations (wb.where, .sqrt())."
        )
    if not y.requires_grad:
        fail(
            f"{context}, your result does not depend on x through the graph (it needs no "
            "gradient): build it from x with tensor operations, not from numpy or .detach()."
        )
    value = y.detach().numpy()
    fail_on(value_finding(value), context)
    y.backward(Tensor(np.ones(POINTS.shape)))  # ȳ = 1 at every point: x.grad is f′(x)
    got = None if x.grad is None else x.grad.numpy()
    fail_on(gradient_finding(got), context)
    return Passed(
        "Your safe √x is right.",
        "At 0, at negative numbers and above 0 its value and its gradient are finite and "
        "right: the branch not taken got a harmless input, so backward through it gives 0, "
        "not 0 · ∞ = NaN.",
    )


def value_finding(got: np.ndarray) -> Finding | None:
    """A wrong value; at x ≤ 0, said as the 0 branch not taken (a NaN, or the placeholder)."""
    expected = expected_value(POINTS)
    wrong = ~np.isclose(got, expected, rtol=1e-7, atol=1e-9)
    if not wrong.any():
        return None
    what = "your value"
    if (POINTS[wrong] <= 0).all():
        observation = (
            f"{what} is {values_text(got[wrong])} at x = {points_text(POINTS[wrong])}, "
            "where 0 was expected"
        )
        advice = (
            "for x ≤ 0 the result must be 0: choose it with the outer wb.where(x > 0, ..., 0). "
            "The placeholder that keeps sqrt away from x ≤ 0 must not reach the result"
        )
        return Finding("value_at_zero", what, observation, advice, expected, got, wrong)
    return compare(what, expected, got)


def gradient_finding(got: np.ndarray | None) -> Finding | None:
    """A wrong x.grad: the NaN of the untaken branch, an infinity at the boundary, or
    what :func:`compare` finds."""
    expected = expected_gradient(POINTS)
    if got is None or got.shape != expected.shape:
        return compare("your gradient", expected, got)
    return (
        untaken_branch_finding(got, expected)
        or boundary_finding(got, expected)
        or compare("your gradient", expected, got)
    )


def untaken_branch_finding(got: np.ndarray, expected: np.ndarray) -> Finding | None:
    """NaN only where x ≤ 0: backward went through the sqrt of the branch not taken."""
    nan = np.isnan(got)
    if not (nan.any() and (POINTS[nan] <= 0).all()):
        return None
    observation = (
        f"your gradient is NaN at x = {points_text(POINTS[nan])}, where wb.where takes "
        "its 0 branch: the untaken branch sqrt(x) still ran there, and backward "
        "still goes through it: 0 (what where sends it) times sqrt's slope "
        "1 / (2√x), infinite at 0 and NaN below, is NaN"
    )
    advice = (
        "keep the unsafe op away from those x before it runs: give it a harmless "
        "input there, safe = wb.where(x > 0, x, 1), and take safe.sqrt()"
    )
    return Finding("untaken_branch", "your gradient", observation, advice, expected, got, nan)


def boundary_finding(got: np.ndarray, expected: np.ndarray) -> Finding | None:
    """An infinity only at x = 0: sqrt's slope there got through a clamp or a test x >= 0."""
    infinite = np.isinf(got)
    if not (infinite.any() and (POINTS[infinite] == 0).all()):
        return None
    advice = (
        "at x = 0 the 0 branch is taken: test x > 0, and give sqrt a harmless input "
        "there (safe = wb.where(x > 0, x, 1))"
    )
    observation = (
        f"your gradient is {number(got[infinite][0])} at the boundary x = 0, where 0 was "
        "expected: sqrt's infinite slope at 0 got through (a clamp(min=0) passes "
        "the gradient at its boundary, and so does a test x >= 0)"
    )
    return Finding("boundary", "your gradient", observation, advice, expected, got, infinite)


def points_text(points: np.ndarray) -> str:
    return ", ".join(f"{p:g}" for p in points)


def values_text(values: np.ndarray) -> str:
    return ", ".join(number(v) for v in values)


def what_it_is(value) -> str:
    if isinstance(value, Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    return "None" if value is None else f"a value of type {type(value).__name__}"
