"""Check a learner's rule for ``linear`` (lesson 2): the gradients of ``y = x Wᵀ + b``,
found by matching shapes.

For a batch x of shape (N, in), W of shape (out, in) and b of shape (out,), y and ȳ
have shape (N, out). Each gradient has its input's shape, and there is one way to get
it from ȳ and the other input with one matmul::

    x̄ (N, in)  = ȳ (N, out) @ W (out, in)
    W̄ (out, in) = ȳᵀ (out, N) @ x (N, in)
    b̄ (out,)    = ȳ summed over the batch axis 0 (b was broadcast over the rows)

:func:`check_linear_rule` first looks at the shapes of what the rule returns, and at
a product whose shapes do not chain, and names the mistakes learners make there (the
transposes swapped, W̄ as xᵀ ȳ, b̄ not summed or summed over the wrong axis); then
:func:`~workbench.exercises.rules.check_rule` compares the values with the engine's
rule and with finite differences. The cases' sizes N, in and out all differ, so that
every shape names one tensor.
"""

from __future__ import annotations

import re

import numpy as np

from ..core.tensor import Tensor
from ..nn import functional as F
from ..record.grad_mode import no_grad
from .diagnose import Finding, shape_text
from .guard import checker, modes_kept
from .report import PASSED_ON, Passed, fail, learner_error
from .rules import Rule, check_rule

LINEAR_SHAPES = [((2, 3), (4, 3), (4,)), ((5, 2), (3, 2), (3,))]  # (x, W, b): N, in, out differ
UNMATCHED = re.compile(r"\((\d+(?:x\d+)*) and (\d+(?:x\d+)*)\)")  # "(2x4 and 3x4)"


@checker
def check_linear_rule(rule: Rule) -> Passed:
    """Check ``rule(orig, grad) -> [x̄, W̄, b̄]`` as the gradient rule of ``F.linear``."""
    rng = np.random.default_rng(0)
    for shapes in LINEAR_SHAPES:
        x, weight, bias = (Tensor(rng.standard_normal(s), requires_grad=True) for s in shapes)
        node = F.linear(x, weight, bias).grad_fn
        grad = Tensor(rng.standard_normal((shapes[0][0], shapes[1][0])))
        look_at_shapes(rule, node, grad, shapes)
    return check_rule("linear", rule, shapes=LINEAR_SHAPES)


def look_at_shapes(rule: Rule, node, grad: Tensor, shapes: tuple) -> None:
    """Fail on a product whose shapes do not chain, or a gradient of a wrong shape, with
    the linear layer's own words. Any other error is left to check_rule to report."""
    context = "With " + " and ".join(
        f"{name} of shape {shape_text(s)}" for name, s in zip(("x", "weight", "bias"), shapes)
    )
    try:
        with no_grad(), modes_kept():
            got = rule(node, grad)
    except PASSED_ON:
        raise
    except RuntimeError as err:
        story = unmatched_product(str(err), shapes)
        if story is None:
            return
        name = getattr(rule, "__name__", "<lambda>")
        what = "rule" if name == "<lambda>" else f"rule {name}"
        said = learner_error(err, rule, what, context).message
        fail(f"{said} {story}", Finding("unmatched_shapes", f"your {what}", story))
    except Exception:
        return
    if not isinstance(got, (list, tuple)) or len(got) != 3:
        return
    for name, gradient in zip(("x", "weight", "bias"), got):
        if isinstance(gradient, Tensor):
            finding = shape_finding(name, tuple(gradient.shape), shapes)
            if finding is not None:
                fail(finding.sentences(context), finding, input=name)


def operands(shapes: tuple) -> dict:
    """What each 2-D shape is, among ȳ, x, W and their transposes."""
    (n, inner), (out, _), _ = shapes
    return {
        (n, out): "ȳ",
        (out, n): "ȳᵀ",
        (n, inner): "x",
        (inner, n): "xᵀ",
        (out, inner): "W",
        (inner, out): "Wᵀ",
    }


def unmatched_product(message: str, shapes: tuple) -> str | None:
    """The shape story of a matmul whose inner sizes differ (``(2x4 and 3x4)`` in the
    engine's message), when both factors are among ȳ, x, W and their transposes."""
    found = UNMATCHED.search(message)
    if found is None:
        return None
    left, right = (tuple(int(s) for s in part.split("x")) for part in found.groups())
    names = operands(shapes)
    if left not in names or right not in names:
        return None
    (n, inner), (out, _), _ = shapes
    if right[-1] == left[0]:
        slip = "the factors are in the wrong order"
    else:
        slip = "a transpose is on the wrong factor (the transposes are swapped)"
    return (
        f"It multiplies {names[left]} {shape_text(left)} by {names[right]} "
        f"{shape_text(right)}: the inner sizes {left[-1]} and {right[0]} differ, so {slip}. "
        f"Match the shapes: (a, k) @ (k, b) is (a, b); x̄ must have x's shape "
        f"{shape_text((n, inner))} and W̄ W's shape {shape_text((out, inner))}, from ȳ "
        f"{shape_text((n, out))} and one other input, transposed where its sizes ask for it."
    )


def shape_finding(name: str, got: tuple, shapes: tuple) -> Finding | None:
    """The linear layer's diagnosis of a gradient of the wrong shape (None if it is right)."""
    (n, inner), (out, _), bias_shape = shapes
    expected = dict(zip(("x", "weight", "bias"), shapes))[name]
    if got == expected:
        return None
    what = f"your gradient for {name}"
    observation = f"{what} has shape {shape_text(got)} where {shape_text(expected)} was expected"
    details = {"expected_shape": expected, "got_shape": got}
    if name == "weight" and got == (inner, out):
        observation = (
            f"{what} has shape {shape_text(got)}, (in, out), where W's own shape "
            f"{shape_text(expected)}, (out, in), was expected"
        )
        advice = (
            "it is W̄ transposed, as xᵀ ȳ gives it. Match the shapes: (out, in) = "
            f"(out, N) @ (N, in), so the transpose belongs on ȳ: {shape_text((out, n))} "
            f"@ {shape_text((n, inner))}"
        )
        return Finding("transposed", what, observation, advice, details=details)
    if name == "bias" and got == (n, out):
        advice = (
            f"it is not summed over the batch: b was added to each of the {n} rows, so b̄ "
            "is ȳ summed over the batch axis 0 (collapse_sum_like(grad, b) does it)"
        )
        return Finding("not_summed", what, observation, advice, details=details)
    if name == "bias" and got == (n,):
        observation += ": ȳ was summed over the wrong axis"
        advice = (
            "axis 1 holds the output features, one per element of b, and must stay; sum "
            "over the batch axis 0, where b was broadcast"
        )
        return Finding("wrong_axis", what, observation, advice, details=details)
    if name == "bias" and got == ():
        observation += ": ȳ was summed over every axis, into one number"
        advice = (
            "keep one entry per output feature (axis 1) in b̄: sum over the batch axis 0 "
            "only, where b was broadcast"
        )
        return Finding("summed_all", what, observation, advice, details=details)
    if name == "x" and got == (inner, n):
        advice = (
            "it is x̄ transposed: check the order of the factors in your matmul. Match "
            f"the shapes: (N, in) = (N, out) @ (out, in), {shape_text((n, inner))}"
        )
        return Finding("transposed", what, observation, advice, details=details)
    advice = "a gradient always has the shape of the input it belongs to"
    return Finding("shape", what, observation, advice, details=details)
