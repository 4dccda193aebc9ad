"""Check a learner's batching rule for ``sum(x, dim, keepdim)`` (lesson 12).

A batching rule is what vmap runs for an op when an input carries a batch dimension.
It has Autodidax's shape, ``(vals, dims) -> (out, out_dim)``::

    def sum_batch_rule(vals, dims, dim, keepdim):
        (x,), (bdim,) = vals, dims    # x holds every example; its batch dim is at bdim,
        ...                           # or bdim is None: x is not batched
        return out, out_dim           # out holds every example's sum; its batch dim is
                                      # at out_dim (None if out is not batched)

``dim`` and ``keepdim`` are the arguments of the call as *one example* sees it: ``dim``
counts the example's dims and may be negative. :func:`check_sum_batching_rule` runs the
rule on batches with the batch dim first, in the middle and last, on negative dims,
with ``keepdim``, and on an unbatched ``x``; it compares ``out`` (its batch dim moved
to the front by ``out_dim``) with ``wb.func.vmap`` of the sum itself and with a Python
loop over the examples. A wrong answer is named where the mistake is a known one: the
dim not shifted past the batch dim, the batch dim summed, the wrong ``out_dim``,
``keepdim`` lost, an unbatched input treated as batched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.tensor import Tensor
from ..func import vmap
from .diagnose import Finding, compare, is_close, shape_text
from .guard import checker
from .report import ExerciseError, NotAnswered, Passed, call_learner, fail
from .rules import as_result

SIZE = 4  # examples in each batch: no example dim has this size, so dims cannot be confused
WHAT = "rule sum_batch_rule"
REAL = "the sums of real numbers are real"


@dataclass(frozen=True)
class Case:
    """One call of the rule: examples of ``shape``, batched at ``bdim`` (None: unbatched)."""

    shape: tuple
    bdim: int | None
    dim: int
    keepdim: bool = False

    def physical(self, rng: np.random.Generator) -> np.ndarray:
        """The rule's x: the examples stacked along ``bdim`` (one example if unbatched)."""
        examples = rng.standard_normal((SIZE, *self.shape))
        return examples[0] if self.bdim is None else np.moveaxis(examples, 0, self.bdim)

    @property
    def example_dim(self) -> int:
        """``dim`` counted from the front of one example."""
        return self.dim % len(self.shape)

    def text(self, x: np.ndarray) -> str:
        batch = "not batched" if self.bdim is None else f"batched at dim {self.bdim}"
        return (
            f"With x of shape {shape_text(x.shape)} ({batch}, dims=({self.bdim},)), dim={self.dim} "
            f"and keepdim={self.keepdim}"
        )


CASES = (
    Case((3, 5), 0, 1),
    Case((3, 5), 0, 0),
    Case((3, 5), 2, 0),
    Case((3, 5, 2), 1, 2),
    Case((3, 5), 0, -1),
    Case((3, 5), 2, -2),
    Case((3, 5), 1, 1, keepdim=True),
    Case((3, 5), 0, -1, keepdim=True),
    Case((3, 5), None, 1),
    Case((3, 5), None, -1, keepdim=True),
)


# ----------------------------------------------------------------- the check
@checker
def check_sum_batching_rule(rule: Callable) -> Passed:
    """Check ``rule(vals, dims, dim, keepdim) -> (out, out_dim)`` as sum's batching rule."""
    rng = np.random.default_rng(12)
    for case in CASES:
        x = case.physical(rng)
        expected = reference(x, case)
        out, out_dim = run_rule(rule, x, case)
        finding = batching_finding(x, case, expected, out, out_dim)
        if finding is not None:
            fail(finding.sentences(case.text(x)), finding)
    return Passed(
        "Your batching rule for sum is right.",
        f"On {len(CASES)} calls (the batch dim first, in the middle and last, negative dims, "
        "keepdim, an unbatched x) your out, read at your out_dim, held every example's own "
        "sum, as wb.func.vmap of the sum and a Python loop over the examples gave it. That "
        "is all vmap needs from an op: one call on the whole batch, and where the batch "
        "dim went.",
    )


def reference(x: np.ndarray, case: Case) -> np.ndarray:
    """Every example's sum, batch first: by ``wb.func.vmap`` of the sum, and by a loop.

    The two must agree (the check trusts vmap only where the loop confirms it)."""
    if case.bdim is None:
        return x.sum(case.dim, keepdims=case.keepdim)

    def one_sum(example):
        return example.sum(case.dim, keepdim=case.keepdim)

    by_vmap = vmap(one_sum, in_dims=case.bdim)(Tensor(x.copy())).numpy()
    examples = np.moveaxis(x, case.bdim, 0)
    by_loop = np.stack([e.sum(case.dim, keepdims=case.keepdim) for e in examples])
    if not np.allclose(by_vmap, by_loop, rtol=1e-12, atol=1e-12):
        raise RuntimeError(f"wb.func.vmap of sum disagrees with a loop for {case}")
    return by_loop


def run_rule(rule: Callable, x: np.ndarray, case: Case):
    """The learner's ``(out, out_dim)``; an error on an unbatched x gets its diagnosis."""
    context = case.text(x)
    args = ((Tensor(x.copy()),), (case.bdim,), case.dim, case.keepdim)
    try:
        returned = call_learner(rule, args, context, WHAT)
    except NotAnswered:
        raise
    except ExerciseError as err:
        if case.bdim is None:
            fail(f"{err.message} {UNBATCHED_ADVICE}", unbatched_finding("raised"))
        raise
    if not isinstance(returned, (tuple, list)) or len(returned) != 2:
        fail(
            f"{context}, your rule returned {returned_text(returned)}. A batching rule "
            "returns two things, out and out_dim: `return out, out_dim`, out_dim being "
            "where the batch dim is in out (None if out has none)."
        )
    out, out_dim = returned
    if out_dim is not None and (isinstance(out_dim, bool) or not isinstance(out_dim, int)):
        fail(
            f"{context}, your out_dim is {out_dim!r}. out_dim is an int, the position of the "
            "batch dim in out, or None when out has no batch dim."
        )
    return as_result(out, context, "out, every example's sum", REAL), out_dim


def returned_text(returned) -> str:
    if isinstance(returned, (tuple, list)):
        return f"a {type(returned).__name__} of {len(returned)}"
    return "None" if returned is None else f"a {type(returned).__name__} alone"


UNBATCHED_ADVICE = (
    "Here x is not batched (its dims entry is None): every example shares this one x. "
    "Sum it as it is, over dim, and return out_dim None: the result has no batch dim either."
)


def unbatched_finding(observation: str) -> Finding:
    return Finding("unbatched", "your out", observation, UNBATCHED_ADVICE)


# ----------------------------------------------------------------- what is wrong
def batching_finding(x, case: Case, expected, got, out_dim) -> Finding | None:
    """None if ``got`` read at ``out_dim`` is ``expected``; else what is wrong."""
    if case.bdim is None:
        return unbatched_case_finding(x, case, expected, got, out_dim)
    if out_dim is None:
        return Finding(
            "wrong_out_dim",
            "your out_dim",
            "your rule returned out_dim None, but x is batched: out holds one sum per example",
            "return the position of the batch dim in out as out_dim (0 if you put it first)",
        )
    if 0 <= out_dim < got.ndim and is_close(expected, np.moveaxis(got, out_dim, 0)):
        return None
    made = identify(x, case, got)
    if made is not None:
        return slip_finding(case, x, made, out_dim, got)
    if 0 <= out_dim < got.ndim:
        return compare("your out, read at your out_dim", expected, np.moveaxis(got, out_dim, 0))
    return Finding(
        "wrong_out_dim",
        "your out_dim",
        f"your out_dim {out_dim} is not a dim of your out, of shape {shape_text(got.shape)}",
        "out_dim is the position of the batch dim in out, counted from 0",
    )


@dataclass(frozen=True)
class Made:
    """How ``got`` came about: example dim ``summed`` (None: the batch dim) summed, with
    ``kept`` as keepdim, and the batch dim ending at ``batch_at`` in got."""

    summed: int | None
    kept: bool
    batch_at: int | None


def identify(x: np.ndarray, case: Case, got: np.ndarray) -> Made | None:
    """The sum ``got`` is: over which dim of the batch-first x, with which keepdim, and
    where its batch dim ended up; None if it is no sum of x over one dim."""
    first = np.moveaxis(x, case.bdim, 0)
    for kept in (case.keepdim, not case.keepdim):
        summed_batch = first.sum(0, keepdims=kept)
        if kept:
            summed_batch = summed_batch[0]
        if is_close(summed_batch, got):
            return Made(None, kept, None)
        for example_dim in range(first.ndim - 1):
            candidate = first.sum(example_dim + 1, keepdims=kept)
            for position in range(got.ndim):
                if is_close(candidate, np.moveaxis(got, position, 0)):
                    return Made(example_dim, kept, position)
    return None


def slip_finding(case: Case, x: np.ndarray, made: Made, out_dim: int, got) -> Finding:
    right = case.example_dim
    where = right + (right >= case.bdim)
    if made.summed is None:
        advice = (
            f"the sum runs inside each example: sum the example's dim {right}, which in the "
            f"batched x sits at dim {where}"
        )
        if case.dim < 0:
            advice = (
                f"a negative dim ({case.dim}) counts from the end of one example: make it "
                "non-negative first (dim % the example's ndim), then shift it past the batch "
                f"dim; {case.dim} + 1 is not the dim you want"
            )
        return Finding(
            "summed_batch",
            "your out",
            "your rule summed over the batch dim: it added the examples together, and out "
            "has no batch dim left",
            advice,
        )
    if made.summed != right:
        return wrong_dim_finding(case, x, made.summed)
    if made.kept != case.keepdim:
        return Finding(
            "keepdim",
            "your out",
            f"your out has shape {shape_text(got.shape)}: the sums are right, but keepdim="
            f"{case.keepdim} was {'ignored' if case.keepdim else 'taken as True'}",
            "pass keepdim on to the sum, as one example's call asks",
        )
    if out_dim < 0 and out_dim % got.ndim == made.batch_at:
        return Finding(
            "wrong_out_dim",
            "your out_dim",
            f"your out holds the right sums, and your out_dim={out_dim} counts from the end",
            f"dims counts from the front, and so does out_dim: return {made.batch_at}",
        )
    return Finding(
        "wrong_out_dim",
        "your out_dim",
        f"your out holds the right sums, with its batch dim at position {made.batch_at}, "
        f"but your rule returned out_dim={out_dim}",
        "out_dim says where the batch dim is in out: a dim summed away before the batch "
        "dim moves it one place to the left (or move the batch dim to the front first, "
        "and it stays at 0)",
    )


def wrong_dim_finding(case: Case, x: np.ndarray, summed: int) -> Finding:
    """The example's dim ``summed`` was summed, not ``case.example_dim``: why?"""
    right = case.example_dim
    observation = (
        f"your rule summed each example over its dim {summed}, where dim={case.dim} asks for "
        f"its dim {right}"
    )
    if summed in unshifted(case, x.ndim):
        kind = "not_shifted"
        advice = (
            "dim counts the dims of one example; in the batched x the batch dim comes before "
            "that dim, so the example's dim sits one place further on. Shift the reduced dim "
            "past the batch dim"
        )
    elif summed == shifted_anyway(case):
        kind = "shifted_before_batch"
        advice = (
            f"the batch dim is at {case.bdim}: an example's dim before it keeps its place, "
            "only the dims at or after it move one place on (or move the batch dim to the "
            "front first, and shift every dim by one)"
        )
    else:
        kind = "wrong_dim"
        advice = (
            f"the example's dim {right} is at dim {right + (right >= case.bdim)} of the "
            "batched x as given"
        )
    return Finding(kind, "your out", observation, advice)


def unshifted(case: Case, ndim: int) -> set:
    """The example dims summed by ``dim`` used as it is on x, batch dim where it was or
    moved to the front."""
    reached = set()
    physical = case.dim % ndim
    for batch_at in {case.bdim, 0}:
        if physical != batch_at:
            reached.add(physical - (physical > batch_at))
    return reached


def shifted_anyway(case: Case) -> int | None:
    """The example dim summed by ``dim + 1`` on x with its batch dim where it was."""
    physical = case.example_dim + 1
    if physical == case.bdim:
        return None
    return physical - (physical > case.bdim)


def unbatched_case_finding(x, case: Case, expected, got, out_dim) -> Finding | None:
    if out_dim is not None:
        return unbatched_finding(
            f"your rule returned out_dim={out_dim}, but x has no batch dim, so neither has out"
        )
    if is_close(expected, got):
        return None
    for dim in range(x.ndim):
        if dim != case.example_dim and is_close(x.sum(dim, keepdims=case.keepdim), got):
            return unbatched_finding(
                f"your rule summed dim {dim} of x, where dim={case.dim} asks for dim "
                f"{case.example_dim}: x has no batch dim, so its dims are one example's own"
            )
    return compare("your out", expected, got)
