"""Misconception catalogue of lesson 12's batching rule: sum's rule, ``(vals, dims) ->
(out, out_dim)``, as Autodidax writes batching rules.

Each mistake is a learner's wrong rule, written as learners write it; the check the
lesson uses must name it. Each right answer is written another way than the lesson's
solution (Autodidax's rule, which leaves the batch dim where it is and says where it
went, among them). The last tests hold the check's reference to ``torch.vmap`` and the
lesson to the check.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from catalogue import Catalogue, Mistake, Right, exercise_setup, not_yet

from workbench.exercises import ExerciseError, NotAnswered
from workbench.exercises.sum_batching import CASES, check_sum_batching_rule, reference

LESSONS = Path(__file__).resolve().parent.parent / "lessons"


def batch_first(x, bdim):
    """As the lesson's helper: x with its dim ``bdim`` moved to the front."""
    return x.permute(bdim, *(d for d in range(x.ndim) if d != bdim))


def sum_batch_rule(vals, dims, dim, keepdim):
    (x,), (bdim,) = vals, dims
    if bdim is None:
        return x.sum(dim, keepdim=keepdim), None
    example_dim = dim % (x.ndim - 1)
    return batch_first(x, bdim).sum(example_dim + 1, keepdim=keepdim), 0


def autodidax_rule(vals, dims, dim, keepdim):
    """The batch dim stays where it is; out_dim says where it went."""
    (x,), (bdim,) = vals, dims
    if bdim is None:
        return x.sum(dim, keepdim=keepdim), None
    dim = dim % (x.ndim - 1)
    physical = dim + (dim >= bdim)
    out_dim = bdim - 1 if physical < bdim and not keepdim else bdim
    return x.sum(physical, keepdim=keepdim), out_dim


def batch_last_rule(vals, dims, dim, keepdim):
    """The batch dim moved to the end, negative dims left negative: -1 is then -2."""
    (x,), (bdim,) = vals, dims
    if bdim is None:
        return x.sum(dim, keepdim=keepdim), None
    last = x.permute(*(d for d in range(x.ndim) if d != bdim), bdim)
    physical = dim - 1 if dim < 0 else dim
    out = last.sum(physical, keepdim=keepdim)
    return out, out.ndim - 1


def batch_last_minus_one(vals, dims, dim, keepdim):
    """The batch dim moved last, and out_dim counted from the end."""
    (x,), (bdim,) = vals, dims
    if bdim is None:
        return x.sum(dim, keepdim=keepdim), None
    last = x.permute(*(d for d in range(x.ndim) if d != bdim), bdim)
    return last.sum(dim % (x.ndim - 1), keepdim=keepdim), -1


def only_batched(rule):
    """``rule`` for a batched x; an unbatched one handled as if batched at 0."""

    def wrapped(vals, dims, dim, keepdim):
        return rule(vals, (0 if dims[0] is None else dims[0],), dim, keepdim)

    return wrapped


def not_shifted(vals, dims, dim, keepdim):
    (x,), (bdim,) = vals, dims
    if bdim is None:
        return x.sum(dim, keepdim=keepdim), None
    return batch_first(x, bdim).sum(dim, keepdim=keepdim), 0


def negative_shifted(vals, dims, dim, keepdim):
    (x,), (bdim,) = vals, dims
    if bdim is None:
        return x.sum(dim, keepdim=keepdim), None
    return batch_first(x, bdim).sum(dim + 1, keepdim=keepdim), 0


def out_dim_unchanged(vals, dims, dim, keepdim):
    (x,), (bdim,) = vals, dims
    if bdim is None:
        return x.sum(dim, keepdim=keepdim), None
    dim = dim % (x.ndim - 1)
    return x.sum(dim + (dim >= bdim), keepdim=keepdim), bdim


def shifted_anyway(vals, dims, dim, keepdim):
    (x,), (bdim,) = vals, dims
    if bdim is None:
        return x.sum(dim, keepdim=keepdim), None
    return x.sum(dim % (x.ndim - 1) + 1, keepdim=keepdim), 0


def normalised_first(vals, dims, dim, keepdim):
    """dim made non-negative for a batched x before asking whether x is batched."""
    (x,), (bdim,) = vals, dims
    dim = dim % (x.ndim - 1)
    if bdim is None:
        return x.sum(dim, keepdim=keepdim), None
    return batch_first(x, bdim).sum(dim + 1, keepdim=keepdim), 0


def unbatched_says_zero(vals, dims, dim, keepdim):
    (x,), (bdim,) = vals, dims
    if bdim is None:
        return x.sum(dim, keepdim=keepdim), 0
    return sum_batch_rule(vals, dims, dim, keepdim)


BATCHING_RULE = Catalogue(
    exercise="12-batching-rule",
    check=check_sum_batching_rule,
    mistakes=[
        Mistake(
            "the reduced dim not shifted past the batch dim",
            not_shifted,
            [
                "summed each example over its dim 0, where dim=1 asks for its dim 1",
                "Shift the reduced dim past the batch dim",
            ],
            kind="not_shifted",
        ),
        Mistake(
            "the batch dim summed (-1 + 1 = 0)",
            negative_shifted,
            ["summed over the batch dim", "-1 + 1 is not the dim you want"],
            kind="summed_batch",
        ),
        Mistake(
            "the batch dim summed outright",
            lambda vals, dims, dim, keepdim: (vals[0].sum(dims[0] or 0), 0),
            ["summed over the batch dim", "sum the example's dim 1"],
            kind="summed_batch",
        ),
        Mistake(
            "out_dim left where the batch dim was",
            out_dim_unchanged,
            ["batch dim at position 1, but your rule returned out_dim=2"],
            kind="wrong_out_dim",
        ),
        Mistake(
            "out_dim counted from the end",
            batch_last_minus_one,
            ["out_dim=-1 counts from the end", "return 1"],
            kind="wrong_out_dim",
        ),
        Mistake(
            "out_dim None for a batched x",
            lambda vals, dims, dim, keepdim: (sum_batch_rule(vals, dims, dim, keepdim)[0], None),
            ["returned out_dim None, but x is batched"],
            kind="wrong_out_dim",
        ),
        Mistake(
            "every dim shifted, the batch dim left in place",
            shifted_anyway,
            ["batched at dim 2", "an example's dim before it keeps its place"],
            kind="shifted_before_batch",
        ),
        Mistake(
            "keepdim dropped",
            lambda vals, dims, dim, keepdim: sum_batch_rule(vals, dims, dim, False),
            ["keepdim=True was ignored"],
            kind="keepdim",
        ),
        Mistake(
            "an unbatched x taken as batched (an error)",
            lambda vals, dims, dim, keepdim: (
                batch_first(vals[0], dims[0]).sum(dim % (vals[0].ndim - 1) + 1, keepdim=keepdim),
                0,
            ),
            ["not batched, dims=(None,)", "raised an error", "return out_dim None"],
            kind="unbatched",
        ),
        Mistake(
            "an unbatched x counted as one with a batch dim",
            normalised_first,
            ["not batched", "summed dim 0 of x, where dim=1 asks for dim 1", "out_dim None"],
            kind="unbatched",
        ),
        Mistake(
            "an unbatched x given out_dim 0",
            unbatched_says_zero,
            ["returned out_dim=0, but x has no batch dim"],
            kind="unbatched",
        ),
        Mistake(
            "a rule that returns out alone",
            lambda vals, dims, dim, keepdim: sum_batch_rule(vals, dims, dim, keepdim)[0],
            ["returned a Tensor alone", "return out, out_dim"],
        ),
    ],
    rights=[
        Right("the solution", sum_batch_rule),
        Right("Autodidax's: the batch dim left in place", autodidax_rule),
        Right("the batch dim moved last", batch_last_rule),
        Right(
            "numpy inside",
            lambda vals, dims, dim, keepdim: (
                (vals[0].numpy().sum(dim, keepdims=keepdim), None)
                if dims[0] is None
                else (
                    np.moveaxis(vals[0].numpy(), dims[0], 0).sum(
                        dim % (vals[0].ndim - 1) + 1, keepdims=keepdim
                    ),
                    0,
                )
            ),
        ),
    ],
)

CATALOGUES = [BATCHING_RULE]


def test_an_unanswered_rule_is_not_answered_yet():
    with pytest.raises(NotAnswered):
        check_sum_batching_rule(not_yet)


def test_the_lesson_checks_with_the_catalogues_check():
    notebook = json.loads((LESSONS / "12_per_example_gradients.ipynb").read_text(encoding="utf-8"))
    assert "check_sum_batching_rule," in exercise_setup(notebook, "12-batching-rule")


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_checks_reference_is_torch_vmap_of_the_sum(case):
    """The check's expected sums (wb.func.vmap, confirmed by a loop) against torch.vmap."""
    x = case.physical(np.random.default_rng(0))
    if case.bdim is None:
        theirs = torch.tensor(x).sum(case.dim, keepdim=case.keepdim)
    else:
        one_sum = lambda e: e.sum(case.dim, keepdim=case.keepdim)  # noqa: E731
        theirs = torch.vmap(one_sum, in_dims=case.bdim)(torch.tensor(x))
    np.testing.assert_allclose(reference(x, case), theirs.numpy(), rtol=1e-12)


def test_a_rule_right_on_batched_inputs_alone_is_not_passed():
    """The check's cases reach an unbatched x: a rule that breaks only there fails."""
    with pytest.raises(ExerciseError, match="not batched"):
        check_sum_batching_rule(only_batched(sum_batch_rule))
