"""Check a learner's backward operators, TVM style: average pooling's and ``take``'s.

Exercises of the convolution-and-pooling lesson. The learner writes, with numpy or
tensor ops, what ``wb.ops.grad`` computes::

    def avg_pool2d_backward(output_grad, data, pool_size):   # x̄ of avg_pool2d(x, k),
        ...                                                   # windows k × k, stride k

    def take_backward(output_grad, x, indices):               # x̄ of x.take(indices)
        ...

    check_avg_pool_backward(avg_pool2d_backward)
    check_take_backward(take_backward)

Each is compared with the workbench's backward operator and with finite differences
of the forward op, on a few shapes chosen to catch the usual slips: a window size
other than 2, an image whose size is not a multiple of the window, an index taken
twice.

A wrong answer is named where the check can tell the cause: each ``pool_*`` and
``take_*`` function below recognises one mistake learners make (the division by k²
forgotten, ȳ routed to the maximum, an index that kept only its last gradient...) by
computing what that mistake gives and comparing. Where none fits, the message shows
expected against got and names no cause.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..core.tensor import Tensor
from ..nn import functional as F
from ..ops import grad as grad_ops
from .diagnose import Finding, as_array, compare, is_close, shape_text
from .guard import checker
from .report import Passed, call_learner, fail
from .rules import FD_ATOL, FD_RTOL, finite_differences


def check_against(what: str, expected, numeric, got, context: str, advise: Callable) -> None:
    """``got`` against the backward operator's answer; finite differences may excuse it.

    An answer that matches neither fails with the finding against the exact answer (the
    heat map then shows exact values, not finite differences' noise), and the advice
    ``advise(finding, got)`` gives: a named mistake, or none.
    """
    if got is not None and not isinstance(got, (Tensor, np.ndarray)):
        fail(f"{context}, {what} is a {type(got).__name__}: return a Tensor or a numpy array.")
    finding = compare(what, expected, got)
    if finding is None:
        return
    if compare(what, numeric, got, rtol=FD_RTOL, atol=FD_ATOL) is None:
        return  # right to the accuracy of finite differences
    fail(finding.sentences(context, advise(finding, as_array(got))), finding)


def first_advice(
    finding: Finding, got: np.ndarray, case, shape_diagnoses: list, value_diagnoses: list
) -> str | None:
    """The advice of the first diagnosis ``diagnose(finding, got, case)`` that recognises
    ``got``: one of ``shape_diagnoses`` for an answer of the wrong shape, else one of
    ``value_diagnoses``. When none does: for values the finding's own advice (None); for a
    shape the advice on x's shape, as the generic one would name a wrong cause here."""
    wrong_shape = finding.kind == "shape"
    for diagnose in shape_diagnoses if wrong_shape else value_diagnoses:
        advice = diagnose(finding, got, case)
        if advice is not None:
            return advice
    return shape_advice(case.x.shape) if wrong_shape else None


# ------------------------------------------------------------- average pooling
POOL_CASES = (((1, 1, 4, 4), 2), ((2, 3, 6, 6), 3), ((1, 2, 5, 5), 2))


@dataclass
class PoolCase:
    """One input of the pooling check: x, its windows k × k, the ȳ it receives."""

    x: np.ndarray
    k: int
    upstream: np.ndarray

    def spread(self, share: np.ndarray, k: int | None = None) -> np.ndarray:
        """``share`` (one value per window) copied to every input of its window; zeros
        where no window reaches. ``k`` another window size than the case's (a mistake's)."""
        k = self.k if k is None else k
        x_bar = np.zeros(self.x.shape)
        oh, ow = share.shape[-2:]
        x_bar[..., : oh * k, : ow * k] = share.repeat(k, axis=-2).repeat(k, axis=-1)
        return x_bar

    def routed_to_max(self) -> np.ndarray:
        """Each window's whole ȳ sent to its first maximum: max pooling's x̄."""
        k = self.k
        routed = grad_ops.max_pool2d_backward(
            Tensor(self.upstream), Tensor(self.x), pool_size=k, strides=k
        )
        return routed.numpy()


@checker
def check_avg_pool_backward(avg_pool2d_backward: Callable) -> Passed:
    """Check ``avg_pool2d_backward(output_grad, data, pool_size)`` for windows of
    ``pool_size × pool_size`` that do not overlap (stride = pool_size, no padding)."""
    rng = np.random.default_rng(0)
    for shape, k in POOL_CASES:
        check_pool_case(avg_pool2d_backward, shape, k, rng)
    return Passed(
        "Your average pooling backward is right.",
        "On windows of 2 and 3, and on an image that windows do not cover, it matches "
        "avg_pool2d_backward and finite differences. You just proved that each window "
        "shares its ȳ equally, ȳ / k², among its k² inputs, and that an input outside "
        "every window gets 0.",
    )


def check_pool_case(avg_pool2d_backward: Callable, shape: tuple, k: int, rng) -> None:
    x = Tensor(rng.standard_normal(shape), requires_grad=True)
    upstream = Tensor(rng.standard_normal(F.avg_pool2d(x, k).shape))
    context = f"With x of shape {shape_text(shape)} and {k} × {k} windows"
    got = call_learner(avg_pool2d_backward, (upstream.clone(), x.detach().clone(), k), context)
    expected = grad_ops.avg_pool2d_backward(upstream, x.detach(), pool_size=k, strides=k)
    numeric = finite_differences(lambda t: F.avg_pool2d(t, k), [x], [upstream.numpy()])[0]
    case = PoolCase(x.detach().numpy(), k, upstream.numpy())
    check_against("your x̄", expected, numeric, got, context, partial(pool_advice, case=case))


def pool_advice(finding: Finding, got: np.ndarray, case: PoolCase) -> str | None:
    """What the pooling answer's mistake is, when one of the known ones fits."""
    shape_diagnoses = [pool_uncovered_edge, pool_shape_of_upstream]
    value_diagnoses = [
        pool_not_divided,
        pool_divided_by_k,
        pool_local_derivative_alone,
        pool_routed_to_max,
        pool_fixed_window,
        pool_transposed,
    ]
    return first_advice(finding, got, case, shape_diagnoses, value_diagnoses)


def pool_not_divided(finding: Finding, got: np.ndarray, case: PoolCase) -> str | None:
    """ȳ copied to its window whole: the average's 1/k² forgotten."""
    k = case.k
    if finding.kind == "factor" and np.isclose(abs(finding.details["factor"]), k * k):
        return f"every window averages {k * k} inputs: divide its ȳ by k · k = {k * k}"
    return None


def pool_divided_by_k(finding: Finding, got: np.ndarray, case: PoolCase) -> str | None:
    """ȳ / k where ȳ / k² was due: the window's side, not its number of inputs."""
    k = case.k
    if finding.kind == "factor" and np.isclose(abs(finding.details["factor"]), k):
        return f"divide by the number of inputs in a window, k · k = {k * k}, not by k"
    return None


def pool_local_derivative_alone(finding: Finding, got: np.ndarray, case: PoolCase) -> str | None:
    """1/k² in every window, whatever ȳ: ∂y/∂x without the chain rule's ȳ."""
    if not is_close(case.spread(np.ones_like(case.upstream) / case.k**2), got):
        return None
    return (
        f"every input of a window got 1/{case.k * case.k} whatever ȳ: that is the local "
        "derivative alone. Multiply it by the window's ȳ (output_grad)"
    )


def pool_routed_to_max(finding: Finding, got: np.ndarray, case: PoolCase) -> str | None:
    """Each window's whole ȳ at its largest input: max pooling's gradient."""
    if not is_close(case.routed_to_max(), got):
        return None
    return (
        "each window's whole ȳ went to its largest input, as max pooling's gradient does: "
        f"average pooling shares it, ȳ / {case.k * case.k} to each input of the window"
    )


def pool_fixed_window(finding: Finding, got: np.ndarray, case: PoolCase) -> str | None:
    """Windows of 2 written in, where the case's windows are 3."""
    if case.k == 2 or not is_close(case.spread(case.upstream / 4, k=2), got):
        return None
    return f"your x̄ is what 2 × 2 windows would give: the window here is {case.k} × {case.k}"


def pool_transposed(finding: Finding, got: np.ndarray, case: PoolCase) -> str | None:
    """Rows and columns swapped: ȳ[..., j, i] where ȳ[..., i, j] was due."""
    expected = case.spread(case.upstream / case.k**2)
    if not is_close(np.swapaxes(expected, -1, -2), got):
        return None
    return (
        "it is the expected x̄ with rows and columns swapped (transposed): ȳ[..., i, j] "
        "belongs to the window of rows i·k to i·k + k − 1 and columns j·k to j·k + k − 1"
    )


def pool_uncovered_edge(finding: Finding, got: np.ndarray, case: PoolCase) -> str | None:
    """Only the rows and columns windows cover: ȳ spread, but not into zeros shaped like x."""
    oh, ow = case.upstream.shape[-2:]
    if got.shape != case.x.shape[:-2] + (oh * case.k, ow * case.k):
        return None
    return (
        f"start from zeros shaped like data, {shape_text(case.x.shape)}, and fill the windows: "
        "rows and columns that no window covers keep 0"
    )


def pool_shape_of_upstream(finding: Finding, got: np.ndarray, case: PoolCase) -> str | None:
    """One value per window returned: ȳ's shape (the pooled output's), not x's."""
    if got.shape != case.upstream.shape:
        return None
    return (
        "that has the shape of ȳ, the pooled output: x̄ has the shape of x, "
        f"{shape_text(case.x.shape)}, each window's share copied to its k · k inputs"
    )


def shape_advice(shape: tuple) -> str:
    """A wrong shape whose cause the check cannot tell: the shape x̄ must have."""
    return f"give x̄ the shape of x, {shape_text(shape)}: one value for each element of x"


# ------------------------------------------------------------------------ take
TAKE_CASES = (
    ((5,), [0, 3, 3, 1]),
    ((2, 3), [[5, 0], [5, 5]]),
    ((4,), [2, 0, 2, 2, 1]),
)


@dataclass
class TakeCase:
    """One input of the take check: x, the indices taken, the ȳ they receive."""

    x: np.ndarray
    indices: np.ndarray
    upstream: np.ndarray

    def scatter(self, values: np.ndarray, add: bool = True) -> np.ndarray:
        """``values`` (one per index) put at their indices of a flat zero x̄, added or
        (``add=False``) assigned, where the last write wins; shaped like x."""
        flat = np.zeros(self.x.size)
        if add:
            np.add.at(flat, self.indices.reshape(-1), values.reshape(-1))
        else:
            flat[self.indices.reshape(-1)] = values.reshape(-1)
        return flat.reshape(self.x.shape)

    def repeated(self) -> list[int]:
        """The indices taken more than once."""
        flat = self.indices.reshape(-1)
        return sorted({int(i) for i in flat if (flat == i).sum() > 1})


# Shaped as check_avg_pool_backward: each runs its own cases and says its own Passed.
@checker
def check_take_backward(take_backward: Callable) -> Passed:
    """Check ``take_backward(output_grad, x, indices)``: the gradient of ``x.take(indices)``
    (elements of the flattened ``x``), where an index may be taken more than once."""
    rng = np.random.default_rng(1)
    for shape, indices in TAKE_CASES:
        check_take_case(take_backward, shape, indices, rng)
    return Passed(
        "Your take backward is right.",
        "On three shapes, with indices taken two and three times, it matches take_backward "
        "and finite differences. You just proved that an element read k times collects the "
        "sum of its k gradients: a scatter-add, never an assignment.",
    )


def check_take_case(take_backward: Callable, shape: tuple, indices: list, rng) -> None:
    x = Tensor(rng.standard_normal(shape), requires_grad=True)
    index = Tensor(np.asarray(indices))
    upstream = Tensor(rng.standard_normal(np.shape(indices)))
    context = f"With x of shape {shape_text(shape)} and indices {indices}"
    args = (upstream.clone(), x.detach().clone(), Tensor(np.asarray(indices)))
    got = call_learner(take_backward, args, context)
    expected = grad_ops.take_backward(upstream, x.detach(), index)
    numeric = finite_differences(lambda t: t.take(index), [x], [upstream.numpy()])[0]
    case = TakeCase(x.detach().numpy(), np.asarray(indices), upstream.numpy())
    check_against("your x̄", expected, numeric, got, context, partial(take_advice, case=case))


def take_advice(finding: Finding, got: np.ndarray, case: TakeCase) -> str | None:
    """What the take answer's mistake is, when one of the known ones fits."""
    shape_diagnoses = [take_left_flat, take_shape_of_upstream]
    value_diagnoses = [take_overwrote, take_local_derivative_alone, take_forward_values]
    return first_advice(finding, got, case, shape_diagnoses, value_diagnoses)


def take_overwrote(finding: Finding, got: np.ndarray, case: TakeCase) -> str | None:
    """A repeated index kept its last gradient: fancy-index assignment, ``=`` or ``+=``."""
    if not is_close(case.scatter(case.upstream, add=False), got):
        return None
    repeated = ", ".join(map(str, case.repeated()))
    return (
        f"an index taken more than once ({repeated}) kept only its last gradient: with a "
        "repeated index, x̄[i] = ȳ and x̄[i] += ȳ both keep one value. Add each instead, with "
        "np.add.at(x̄, i, ȳ)"
    )


def take_local_derivative_alone(finding: Finding, got: np.ndarray, case: TakeCase) -> str | None:
    """How often each element was taken: ∂y/∂x without ȳ."""
    if not is_close(case.scatter(np.ones(case.indices.shape)), got):
        return None
    return (
        "your x̄ counts how often each element was taken: that is the local derivative "
        "alone. Add ȳ (output_grad) at each index, not 1"
    )


def take_forward_values(finding: Finding, got: np.ndarray, case: TakeCase) -> str | None:
    """The taken values of x scattered back: the forward output in place of ȳ."""
    taken = case.x.reshape(-1)[case.indices.reshape(-1)]
    if not is_close(case.scatter(taken), got):
        return None
    return (
        "you added the values taken from x (the forward output) at the indices: the gradient "
        "carries ȳ (output_grad), the first argument"
    )


def take_left_flat(finding: Finding, got: np.ndarray, case: TakeCase) -> str | None:
    """x̄ built on the flattened x and not reshaped back."""
    if got.ndim != 1 or got.size != case.x.size:
        return None
    right = is_close(case.scatter(case.upstream).reshape(-1), got)
    values = " (reshaped, its values are right)" if right else ""
    return f"it is still flat: reshape it to x's shape, {shape_text(case.x.shape)}{values}"


def take_shape_of_upstream(finding: Finding, got: np.ndarray, case: TakeCase) -> str | None:
    """One value per index returned: ȳ's shape, not x's."""
    if got.shape != case.upstream.shape:
        return None
    return (
        "that has the shape of ȳ (one value per index): x̄ has the shape of x, "
        f"{shape_text(case.x.shape)}, zeros where nothing was taken"
    )
