"""Check a learner's global-norm gradient clipping (lesson 9, exploding gradients).

::

    def clip_global_norm(params, max_norm):   # params: a list, each with its .grad
        ...   # total = the 2-norm of all the gradients together; every p.grad scaled, in
              # place, by the one factor min(1, max_norm / (total + 1e-6)); return total

    check_clip_global_norm(clip_global_norm)

It must do what ``wb.nn.utils.clip_grad_norm_`` does, and PyTorch's
``torch.nn.utils.clip_grad_norm_`` (``tests/test_catalogue_training.py`` checks that the
two agree on these cases): the total norm is the 2-norm of the per-parameter norms, the
scale ``max_norm / (total + 1e-6)`` is clamped at 1, so that a gradient already short
enough is left as it is, and one scale for every parameter keeps the direction of the
whole step. The check runs three sets of gradients, the one below ``max_norm`` first,
and names the usual slips (:data:`CLIP_SLIPS`, :func:`norm_finding`): each parameter
clipped by its own norm, the clamp at 1 forgotten, the sum of the norms or the squared
norm for the total, ``p.grad`` left as it was (new tensors returned instead), the norm
after clipping returned. Where none fits, the message shows expected against got and
names no cause.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.tensor import Tensor
from ..nn.utils import clip_grad_norm_
from .diagnose import Finding, compare, got_where_expected, is_close, number, wrong_values
from .guard import checker
from .per_example import Slip
from .report import Passed, call_learner, fail_on
from .rules import as_result

RTOL, ATOL = 1e-5, 1e-9  # the 1e-6 added to the total may be left out, or written 1e-12
EPS = 1e-6  # PyTorch's: max_norm / (total + 1e-6)


@dataclass(frozen=True)
class Case:
    """Gradients of the given shapes and norms (a seeded direction each), and max_norm."""

    shapes: tuple
    norms: tuple
    max_norm: float

    def grads(self) -> list[np.ndarray]:
        rng = np.random.default_rng(len(self.shapes))
        grads = []
        for shape, norm in zip(self.shapes, self.norms):
            g = rng.standard_normal(shape)
            grads.append(g * (norm / np.linalg.norm(g)))
        return grads

    @property
    def total(self) -> float:
        return float(np.sqrt(np.sum(np.square(self.norms))))

    def context(self) -> str:
        norms = ", ".join(number(n) for n in self.norms)
        return (
            f"With {len(self.shapes)} gradients of norms {norms} (total {number(self.total)}) "
            f"and max_norm={number(self.max_norm)}"
        )


# Below max_norm first: a scale that is not clamped at 1 shows there, and only there.
CASES = (
    Case(((3, 2), (2,), (4,)), (0.3, 0.2, 0.1), 2.0),
    Case(((3, 2), (2,), (4,)), (3.0, 0.5, 2.0), 1.0),
    Case(((2, 2), (5,)), (5.0, 12.0), 6.5),
)


def parameters(grads: list[np.ndarray]) -> list[Tensor]:
    """Fresh float64 parameters holding ``grads`` in their ``.grad``."""
    params = []
    for g in grads:
        p = Tensor(np.ones_like(g), requires_grad=True)
        p.grad = Tensor(g.copy())
        params.append(p)
    return params


def clipped_by_the_engine(grads: list[np.ndarray], max_norm: float) -> tuple[list, float]:
    """``wb.nn.utils.clip_grad_norm_`` on copies: the clipped gradients and the total norm."""
    params = parameters(grads)
    total = clip_grad_norm_(params, max_norm)
    return [p.grad.numpy() for p in params], float(total.item())


@checker
def check_clip_global_norm(clip_global_norm: Callable[[list, float], object]) -> Passed:
    """Check ``clip_global_norm(params, max_norm)`` against ``wb.nn.utils.clip_grad_norm_``:
    every ``p.grad`` scaled in place by one factor, the total norm before clipping returned."""
    for case in CASES:
        check_case(clip_global_norm, case)
    return Passed(
        "Your global-norm clipping is right.",
        "Below max_norm it left every gradient as it was; above, it scaled all of them by "
        "one factor, so that their norm together is max_norm and the step keeps its "
        "direction; and it returned the norm they had before, as clip_grad_norm_ does. "
        "However large a gradient explodes, the step lr · g is now at most lr · max_norm long.",
    )


def check_case(clip_global_norm: Callable, case: Case) -> None:
    before = case.grads()
    params = parameters(before)
    context = case.context()
    returned = call_learner(
        clip_global_norm, (params, case.max_norm), context, "function clip_global_norm"
    )
    expected, total = clipped_by_the_engine(before, case.max_norm)
    got = [None if p.grad is None else p.grad.detach().numpy() for p in params]
    fail_on(grads_finding(case, before, expected, got, returned), context)
    fail_on(norm_finding(case, before, expected, total, returned), context)


def grads_finding(case: Case, before, expected, got, returned) -> Finding | None:
    """None if every ``p.grad`` is as clip_grad_norm_ leaves it; else what is wrong."""
    if all(g is not None and g.shape == e.shape for g, e in zip(got, expected)):
        if all(is_close(e, g, RTOL, ATOL) for e, g in zip(expected, got)):
            return None
        if all(np.array_equal(g, b) for g, b in zip(got, before)):
            return unchanged(case, expected, got, returned)
        for slip in CLIP_SLIPS:
            slipped = slip.made(before, case.max_norm)
            if all_close(slipped, got) and not all_close(slipped, expected):
                what = "your clipped gradients"
                observation = f"{what} {slip.observation}"
                return wrong_values(
                    slip.kind, what, observation, slip.advice, flat(expected), flat(got), RTOL, ATOL
                )
    for index, (e, g) in enumerate(zip(expected, got)):
        finding = compare(f"params[{index}].grad", e, g, rtol=RTOL, atol=ATOL)
        if finding is not None:
            if finding.kind == "missing":
                finding.advice = "scale p.grad where it is; never set it to None"
            return finding
    return None


def flat(arrays: list) -> np.ndarray:
    """Every gradient's elements in one vector: the gradients as the step sees them."""
    return np.concatenate([a.ravel() for a in arrays])


def all_close(a: list, b: list) -> bool:
    return all(is_close(x, y, RTOL, ATOL) for x, y in zip(a, b))


def unchanged(case: Case, expected, got, returned) -> Finding:
    """Every p.grad as it was, where the total norm is above max_norm."""
    what = "p.grad"
    observation = (
        f"every p.grad is as it was, where their total norm {number(case.total)} is above "
        f"max_norm: nothing was scaled in place"
    )
    if isinstance(returned, (list, tuple)):
        advice = (
            "you returned new tensors, and the parameters kept their old gradients: the "
            "optimizer reads p.grad, so scale it where it is (p.grad.mul_(scale), or "
            "p.grad *= scale) and return the total norm"
        )
    else:
        advice = (
            "the optimizer reads p.grad: scale each one where it is (p.grad.mul_(scale), or "
            "p.grad *= scale); g = p.grad * scale makes a new tensor and leaves p.grad as it was"
        )
    return wrong_values(
        "unchanged", what, observation, advice, flat(expected), flat(got), RTOL, ATOL
    )


def norm_finding(case: Case, before, expected, total: float, returned) -> Finding | None:
    """None if ``returned`` is the total norm before clipping; else what it is instead."""
    what = "the norm your function returned"
    if returned is None:
        return Finding(
            "missing",
            what,
            "your function returned None",
            f"return the total norm before clipping ({number(total)} here), as clip_grad_norm_ "
            "does: a training loop logs it to see the gradients explode",
        )
    if isinstance(returned, (list, tuple)) and any(isinstance(r, Tensor) for r in returned):
        return Finding(
            "returned_tensors",
            what,
            f"your function returned {len(returned)} tensors, new ones, where the total norm "
            "was expected",
            "the optimizer reads p.grad, not what you return: scale each p.grad where it is "
            "(p.grad.mul_(scale)) and return the total norm before clipping",
        )
    got = as_result(returned, case.context(), "the total norm, one number", "norms are real")
    if got.size != 1:
        return Finding(
            "shape",
            what,
            f"your function returned {got.size} numbers",
            "return one number, the total norm of all the gradients together before clipping",
        )
    value = float(got.reshape(()))
    if np.isclose(value, total, rtol=RTOL, atol=ATOL):
        return None
    norms = np.array([np.linalg.norm(g) for g in before])
    after = float(np.sqrt(sum(np.sum(e**2) for e in expected)))
    for kind, wrong, observation, advice in (
        (
            "norm_after",
            after,
            "is the norm after clipping",
            "return the total norm the gradients had before you scaled them",
        ),
        (
            "squared_norm",
            total**2,
            "is the squared norm: the square root is missing",
            "the norm is the square root of the sum of every gradient's squares",
        ),
        (
            "sum_of_norms",
            norms.sum(),
            "is the sum of the parameters' norms",
            "the total is the 2-norm of the parameters' norms: the square root of the sum of "
            "their squares",
        ),
    ):
        if np.isclose(value, wrong, rtol=RTOL, atol=ATOL):
            return Finding(
                kind,
                what,
                f"{what}, {number(value)}, {observation}; {number(total)} was expected",
                advice,
            )
    return Finding("elements", what, f"{what} is {got_where_expected(value, total)}")


# ----------------------------------------------------------------- known slips
def scaled(grads: list, scale: float) -> list:
    return [g * scale for g in grads]


def norms_of(grads: list) -> np.ndarray:
    return np.array([np.linalg.norm(g) for g in grads])


def total_of(grads: list) -> float:
    return float(np.linalg.norm(norms_of(grads)))


CLIP_SLIPS = (
    Slip(
        "per_tensor",
        lambda gs, c: [g * min(1.0, c / (np.linalg.norm(g) + EPS)) for g in gs],
        "are each clipped by its own norm: every parameter got its own scale",
        "take one total norm of all the gradients together, and scale every p.grad by the "
        "same factor: then the step keeps its direction",
    ),
    Slip(
        "not_clamped",
        lambda gs, c: scaled(gs, c / (total_of(gs) + EPS)),
        "were scaled up to norm max_norm: the scale max_norm / total is above 1 here, and "
        "nothing clamped it",
        "clip only gradients that are too long: the scale is min(1, max_norm / (total + 1e-6))",
    ),
    Slip(
        "sum_of_norms",
        lambda gs, c: scaled(gs, min(1.0, c / (norms_of(gs).sum() + EPS))),
        "were scaled with the sum of the parameters' norms as the total",
        "the total is the 2-norm of the parameters' norms: the square root of the sum of "
        "their squares",
    ),
    Slip(
        "squared_norm",
        lambda gs, c: scaled(gs, min(1.0, c / (total_of(gs) ** 2 + EPS))),
        "were scaled with the squared total norm, the square root missing",
        "the norm is the square root of the sum of every gradient's squares",
    ),
)
