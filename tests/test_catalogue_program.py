"""Misconception catalogue of lesson 13: the backward bindings of a layer, by hand.

Each mistake is a learner's wrong ``layer_backward``, written as learners write it; the
check the lesson uses must name it. Each right answer is written another way than the
lesson's solution, and must pass. The last tests hold the lesson to this check and the
check's reference (the adjoint program of ``wb.program.gradient``) to PyTorch.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from catalogue import Catalogue, Mistake, Right, exercise_setup, not_yet

import workbench as wb
from workbench.exercises import NotAnswered, check_adjoint_by_hand, check_used_twice
from workbench.exercises.backward_bindings import LOSS_CASES, cases, loss_reference, reference

LESSONS = Path(__file__).resolve().parent.parent / "lessons"


def layer_backward(x, w, b, h, h_bar):
    z_bar = h_bar * (1 - h * h)
    return {"z_bar": z_bar, "x_bar": z_bar @ w.T, "w_bar": x.T @ z_bar, "b_bar": z_bar.sum(0)}


def with_(**changes):
    """The right answer with some adjoints replaced: ``changes[name](x, w, b, h, h_bar, z̄)``."""

    def answer(x, w, b, h, h_bar):
        adjoints = layer_backward(x, w, b, h, h_bar)
        z_bar = adjoints["z_bar"]
        for name, made in changes.items():
            adjoints[name] = made(x, w, b, h, h_bar, z_bar)
        return adjoints

    return answer


def in_tensors(x, w, b, h, h_bar):
    """Tensors and the engine's ops: the values are what count, not their type."""
    h_t, h_bar_t = wb.tensor(h), wb.tensor(h_bar)
    z_bar = h_bar_t * (1 - h_t**2)
    return {
        "z_bar": z_bar,
        "x_bar": z_bar @ wb.tensor(w).T,
        "w_bar": wb.tensor(x).T @ z_bar,
        "b_bar": wb.ops.collapse_sum_like(z_bar, wb.tensor(b)),
    }


def with_einsum(x, w, b, h, h_bar):
    z_bar = h_bar - h_bar * np.square(h)
    return dict(
        w_bar=np.einsum("nd,nh->dh", x, z_bar),
        x_bar=np.einsum("nh,dh->nd", z_bar, w),
        b_bar=np.add.reduce(z_bar, axis=0),
        z_bar=z_bar,
    )


ADJOINT = Catalogue(
    exercise="13-adjoint-by-hand",
    check=lambda answer: check_adjoint_by_hand(answer),
    mistakes=[
        Mistake(
            "tanh's derivative as 1 − h",
            with_(z_bar=lambda x, w, b, h, hb, zb: hb * (1 - h)),
            ["h̄ · (1 − h)", "1 − h², not 1 − h"],
            kind="tanh_derivative",
        ),
        Mistake(
            "h̄ left out",
            with_(z_bar=lambda x, w, b, h, hb, zb: 1 - h * h),
            ["your z̄ is the local derivative alone", "Multiply it by h̄"],
            kind="no_upstream",
        ),
        Mistake(
            "w̄ with the transposes swapped",
            with_(w_bar=lambda x, w, b, h, hb, zb: zb.T @ x),
            ["your w̄ has shape (5, 3) where (3, 5)", "transposes swapped", "w̄ = xᵀ @ z̄"],
            kind="transposed",
        ),
        Mistake(
            "x̄ with the transposes swapped",
            with_(x_bar=lambda x, w, b, h, hb, zb: w @ zb.T),
            ["your x̄ has shape (3, 4) where (4, 3)", "transposes swapped", "x̄ = z̄ @ wᵀ"],
            kind="transposed",
        ),
        Mistake(
            "the bias's adjoint not collapse-summed",
            with_(b_bar=lambda x, w, b, h, hb, zb: zb),
            ["your b̄ has shape (4, 5) where (5,)", "summed back over them (axis 0)"],
            kind="not_summed",
        ),
        Mistake(
            "the bias summed along the wrong axis",
            with_(b_bar=lambda x, w, b, h, hb, zb: zb.sum(1)),
            ["your b̄ has shape (4,) where (5,)", "sum over the batch (axis 0)"],
            kind="wrong_axis",
        ),
        Mistake(
            "the bias averaged over the batch",
            with_(b_bar=lambda x, w, b, h, hb, zb: zb.mean(0)),
            ["1/4 of the expected value"],
            kind="factor",
        ),
        Mistake(
            "a tuple returned",
            lambda x, w, b, h, hb: tuple(layer_backward(x, w, b, h, hb).values()),
            ["returned a tuple", 'return a dict with the keys "z_bar"'],
        ),
    ],
    rights=[
        Right("numpy, as in the solution", layer_backward),
        Right("tensors and collapse_sum_like", in_tensors),
        Right("einsum, keys in another order", with_einsum),
    ],
)

USED_TWICE = Catalogue(
    exercise="13-used-twice",
    check=lambda answer: check_used_twice(answer),
    mistakes=[
        Mistake(
            "one use of err only",
            lambda err, loss_bar: err * loss_bar / err.size,
            ["half the right one", "a value used twice collects both adjoints"],
            kind="one_use",
        ),
        Mistake(
            "the mean's 1 / N forgotten",
            lambda err, loss_bar: 2 * err * loss_bar,
            ["N times the right one", "divides L̄ by the 12 averaged elements"],
            kind="mean_not_divided",
        ),
        Mistake(
            "L̄ left out",
            lambda err, loss_bar: 2 * err / err.size,
            ["leaves L̄ out", "Multiply by L̄"],
            kind="no_upstream",
        ),
        Mistake(
            "a number, not an array",
            lambda err, loss_bar: float((2 * err * loss_bar / err.size).sum()),
            ["has shape () where (4, 3) was expected"],
            kind="shape",
        ),
    ],
    rights=[
        Right("as in the solution", lambda err, loss_bar: 2 * err * loss_bar / err.size),
        Right(
            "two contributions added, with tensors",
            lambda err, loss_bar: (
                wb.tensor(err) * (loss_bar / err.size) + (loss_bar / err.size) * wb.tensor(err)
            ),
        ),
        Right(
            "np.mean's size",
            lambda err, loss_bar: np.full_like(err, loss_bar / np.size(err)) * err * 2,
        ),
    ],
)

CATALOGUES = [ADJOINT, USED_TWICE]


def test_the_lesson_checks_with_the_catalogues_check():
    notebook = json.loads((LESSONS / "13_from_tape_to_program.ipynb").read_text(encoding="utf-8"))
    assert "check_adjoint_by_hand," in exercise_setup(notebook, "13-adjoint-by-hand")
    assert "check_used_twice," in exercise_setup(notebook, "13-used-twice")


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda c: c.exercise)
def test_an_unanswered_exercise_is_not_answered_yet(catalogue):
    with pytest.raises(NotAnswered) as caught:
        catalogue.check(not_yet)
    assert str(caught.value).startswith("Not answered yet")


def test_the_used_twice_reference_is_torch_autograd():
    rng = np.random.default_rng(0)
    for shape, loss_bar in LOSS_CASES:
        err = rng.standard_normal(shape)
        t = torch.tensor(err, requires_grad=True)
        (t * t).mean().backward(torch.tensor(loss_bar, dtype=torch.float64))
        np.testing.assert_allclose(loss_reference(err, loss_bar), t.grad.numpy(), rtol=1e-12)


def test_the_checks_reference_is_torch_autograd():
    """The adjoint program's values, which the check trusts, against torch.autograd."""
    for x, w, b, h_bar in cases():
        h, ours = reference(x, w, b, h_bar)
        xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
        z = xt @ wt + bt
        z.retain_grad()
        ht = torch.tanh(z)
        ht.backward(torch.tensor(h_bar))
        np.testing.assert_allclose(h, ht.detach().numpy(), rtol=1e-12)
        for name, t in [("z_bar", z), ("x_bar", xt), ("w_bar", wt), ("b_bar", bt)]:
            np.testing.assert_allclose(ours[name], t.grad.numpy(), rtol=1e-10, atol=1e-12)
