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
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..nn import functional as F
from ..ops import grad as grad_ops
from ..tensor import Tensor
from .diagnose import Finding, as_array, compare, is_close, shape_text
from .report import Passed, call_learner, fail
from .rules import FD_ATOL, FD_RTOL, finite_differences


def check_against(what: str, expected, numeric, got, context: str, advise: Callable) -> None:
    """``got`` against the backward operator's answer, then finite differences."""
    if got is not None and not isinstance(got, (Tensor, np.ndarray)):
        fail(f"{context}, {what} is a {type(got).__name__}: return a Tensor or a numpy array")
    finding = compare(what, expected, got)
    if finding is None:
        finding = compare(what, numeric, got, rtol=FD_RTOL, atol=FD_ATOL)
    if finding is not None:
        fail(finding.sentences(context, advise(finding, as_array(got))), finding)


# ------------------------------------------------------------- average pooling
POOL_CASES = (((1, 1, 4, 4), 2), ((2, 3, 6, 6), 3), ((1, 2, 5, 5), 2))


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

    def advise(finding: Finding, answer: np.ndarray) -> str | None:
        return pool_advice(finding, answer, k, shape)

    check_against("your x̄", expected, numeric, got, context, advise)


def pool_advice(finding: Finding, got: np.ndarray, k: int, shape: tuple) -> str | None:
    if finding.kind == "factor" and np.isclose(abs(finding.details["factor"]), k * k):
        return f"every window averages {k * k} inputs: divide its ȳ by k · k = {k * k}"
    if finding.kind == "factor" and np.isclose(abs(finding.details["factor"]), k):
        return f"divide by the number of inputs in a window, k · k = {k * k}, not by k"
    if finding.kind == "shape" and got.shape[:-2] == shape[:-2]:
        return (
            f"x̄ has the shape of x, {shape_text(shape)}: start from zeros shaped like data and "
            "fill the windows (rows and columns that no window covers keep 0)"
        )
    return None


# ------------------------------------------------------------------------ take
TAKE_CASES = (
    ((5,), [0, 3, 3, 1]),
    ((2, 3), [[5, 0], [5, 5]]),
    ((4,), [2, 0, 2, 2, 1]),
)


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

    def advise(finding: Finding, answer: np.ndarray) -> str | None:
        return take_advice(finding, answer, upstream.numpy(), np.asarray(indices), shape)

    check_against("your x̄", expected, numeric, got, context, advise)


def take_advice(finding: Finding, got, upstream, indices, shape: tuple) -> str | None:
    overwritten = np.zeros(int(np.prod(shape)))
    overwritten[indices.reshape(-1)] = upstream.reshape(-1)  # the last write wins
    if got.shape == shape and is_close(overwritten.reshape(shape), got):
        repeated = sorted({int(i) for i in indices.reshape(-1) if (indices == i).sum() > 1})
        return (
            f"an index taken more than once ({', '.join(map(str, repeated))}) kept only its "
            "last gradient: x̄[i] = ȳ overwrites. Add instead, with np.add.at(x̄, i, ȳ)"
        )
    if finding.kind == "shape" and got.shape == np.shape(indices):
        return "that has the shape of ȳ: x̄ has the shape of x, zeros where nothing was taken"
    return None
