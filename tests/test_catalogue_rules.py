"""Misconception catalogues of the gradient-rule exercises (lessons 1, 2 and 10).

Each mistake is a learner's wrong answer, written as learners write it; the check the
lesson uses must name it (and never the wrong cause it was once given). Each right
answer is written another way than the lesson's solution, and must pass.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from catalogue import Catalogue, Mistake, Right, exercise_setup

import workbench as wb
from workbench.exercises import check_rule
from workbench.exercises.linear_rule import check_linear_rule
from workbench.exercises.rules import check_collapse_sum
from workbench.ops import collapse_sum_like
from workbench.teaching import course

LESSONS = Path(__file__).resolve().parent.parent / "lessons"

# What a learner reads when the input is used where the node keeps its output: never
# the needs_input_grad cause it was once given, never Python's TypeError about TensorMeta.
KEEPS_THE_OUTPUT = ["the node keeps its output y = orig.out, not x", "Write the rule with y"]
NOT_THE_NEEDS_CAUSE = ["needs_input_grad", "not wanted", "TypeError", "TensorMeta"]


# ----------------------------------------------------------------- lesson 1: sigmoid
def sigmoid_solution(orig, grad):
    y = orig.out
    return [grad * y * (1 - y)]


def sigmoid_of_the_input(orig, grad):
    x = orig.args[0]
    s = wb.sigmoid(x)
    return [grad * s * (1 - s)]


def sigmoid_method_on_the_input(orig, grad):
    x = orig.args[0]
    return [grad * x.sigmoid() * (1 - x.sigmoid())]


def sigmoid_formula_with_x(orig, grad):
    x = orig.args[0]
    return [grad * x * (1 - x)]


def sigmoid_written_out_with_x(orig, grad):
    x = orig.args[0]
    s = 1 / (1 + wb.exp(-x))
    return [grad * s * (1 - s)]


def sigmoid_of_the_output(orig, grad):
    y = orig.out
    s = y.sigmoid()
    return [grad * s * (1 - s)]


def sigmoid_without_upstream(orig, grad):
    y = orig.out
    return [y * (1 - y)]


def sigmoid_sign(orig, grad):
    y = orig.out
    return [grad * y * (y - 1)]


def sigmoid_halved(orig, grad):
    y = orig.out
    return [grad * y * (1 - y) / 2]


def sigmoid_one_factor(orig, grad):
    y = orig.out
    return [grad * (1 - y)]


def sigmoid_upstream_only(orig, grad):
    return [grad]


def sigmoid_not_a_list(orig, grad):
    y = orig.out
    return grad * y * (1 - y)


def sigmoid_numpy_array(orig, grad):
    y = orig.out.detach().numpy()
    return [grad.numpy() * y * (1 - y)]


SIGMOID = Catalogue(
    exercise="01-sigmoid-rule",
    check=lambda rule: check_rule("sigmoid", rule),
    mistakes=[
        Mistake(
            "σ(x) from orig.args[0]", sigmoid_of_the_input, KEEPS_THE_OUTPUT, NOT_THE_NEEDS_CAUSE
        ),
        Mistake(
            "x.sigmoid() on the input",
            sigmoid_method_on_the_input,
            KEEPS_THE_OUTPUT,
            NOT_THE_NEEDS_CAUSE,
        ),
        Mistake(
            "x where y belongs: ȳ·x·(1−x)",
            sigmoid_formula_with_x,
            KEEPS_THE_OUTPUT,
            NOT_THE_NEEDS_CAUSE,
        ),
        Mistake(
            "1/(1+e^(−x)) from the input",
            sigmoid_written_out_with_x,
            KEEPS_THE_OUTPUT,
            NOT_THE_NEEDS_CAUSE,
        ),
        Mistake(
            "y.sigmoid() where y is already the output",
            sigmoid_of_the_output,
            ["at sigmoid(y), not at y", "orig.out is already the output y = sigmoid(x)"],
            kind="applied_again",
        ),
        Mistake(
            "ȳ forgotten",
            sigmoid_without_upstream,
            ["the local derivative alone", "Multiply it by ȳ"],
            kind="no_upstream",
        ),
        Mistake(
            "ȳ passed on without the slope",
            sigmoid_upstream_only,
            ["is ȳ itself, passed on unchanged", "local derivative ∂y/∂x"],
            kind="upstream_only",
        ),
        Mistake("a sign: y − 1 for 1 − y", sigmoid_sign, ["wrong sign"], kind="sign"),
        Mistake(
            "a factor: halved",
            sigmoid_halved,
            ["half the expected value", "factor of 2"],
            kind="factor",
        ),
        Mistake(
            "the factor y left out",
            sigmoid_one_factor,
            ["is wrong at all 5 elements", "was expected"],
            kind="elements",
        ),
        Mistake(
            "a Tensor, not a list", sigmoid_not_a_list, ["returned a Tensor, not a list", "[x̄]"]
        ),
        Mistake("a numpy array", sigmoid_numpy_array, ["is a numpy array, not a Tensor"]),
    ],
    rights=[
        Right("the solution", sigmoid_solution),
        Right("factors in another order", lambda orig, grad: [(1 - orig.out) * orig.out * grad]),
        Right("y − y², a tuple", lambda orig, grad: (grad * (orig.out - orig.out * orig.out),)),
        Right("wb.mul", lambda orig, grad: [wb.mul(grad, wb.mul(orig.out, 1 - orig.out))]),
        Right(
            "the slope by numpy, made a tensor",
            lambda orig, grad: [
                grad * wb.tensor(orig.out.detach().numpy() * (1 - orig.out.detach().numpy()))
            ],
        ),
    ],
)


# -------------------------------------------------------------------- lesson 1: tanh
def tanh_solution(orig, grad):
    y = orig.out
    return [grad * (1 - y * y)]


def tanh_input_squared(orig, grad):
    x = orig.args[0]
    return [grad * (1 - x * x)]


def tanh_of_the_input(orig, grad):
    x = orig.args[0]
    return [grad * (1 - wb.tanh(x) ** 2)]


def tanh_of_the_output(orig, grad):
    y = orig.out
    return [grad * (1 - y.tanh() ** 2)]


def tanh_slope_forgotten(orig, grad):
    return [grad]


def tanh_without_upstream(orig, grad):
    y = orig.out
    return [1 - y * y]


def tanh_sign(orig, grad):
    y = orig.out
    return [grad * (y * y - 1)]


def tanh_doubled(orig, grad):
    y = orig.out
    return [2 * grad * (1 - y * y)]


def tanh_not_squared(orig, grad):
    y = orig.out
    return [grad * (1 - y)]


TANH = Catalogue(
    exercise="01-tanh-rule",
    check=lambda rule: check_rule("tanh", rule),
    mistakes=[
        Mistake(
            "x·x from orig.args[0] (a TypeError once)",
            tanh_input_squared,
            KEEPS_THE_OUTPUT,
            NOT_THE_NEEDS_CAUSE,
        ),
        Mistake(
            "wb.tanh(x) from orig.args[0]", tanh_of_the_input, KEEPS_THE_OUTPUT, NOT_THE_NEEDS_CAUSE
        ),
        Mistake(
            "y.tanh() where y is already the output",
            tanh_of_the_output,
            ["at tanh(y), not at y", "without applying tanh to it again"],
            kind="applied_again",
        ),
        Mistake(
            "tanh's slope forgotten in the chain",
            tanh_slope_forgotten,
            ["is ȳ itself, passed on unchanged", "multiplies ȳ by the local derivative"],
            kind="upstream_only",
        ),
        Mistake(
            "ȳ forgotten", tanh_without_upstream, ["the local derivative alone"], kind="no_upstream"
        ),
        Mistake("a sign: y² − 1", tanh_sign, ["wrong sign"], kind="sign"),
        Mistake("a factor: doubled", tanh_doubled, ["2 times the expected value"], kind="factor"),
        Mistake("1 − y, not squared", tanh_not_squared, ["was expected"], kind="elements"),
    ],
    rights=[
        Right("the solution", tanh_solution),
        Right("ȳ − ȳ·y²", lambda orig, grad: [grad - grad * orig.out**2]),
        Right("(1 + y)(1 − y)", lambda orig, grad: [grad * (1 + orig.out) * (1 - orig.out)]),
        Right("square()", lambda orig, grad: [(1 - orig.out.square()) * grad]),
    ],
)


# --------------------------------------------------------------------- lesson 2: mul
def mul_solution(orig, grad):
    a, b = orig.args
    need_a, need_b = orig.needs_input_grad
    a_bar = collapse_sum_like(grad * b, a) if need_a else None
    b_bar = collapse_sum_like(grad * a, b) if need_b else None
    return [a_bar, b_bar]


def mul_b_first_in_ifs(orig, grad):
    a, b = orig.args
    b_bar = a_bar = None
    if orig.needs_input_grad[1]:
        b_bar = collapse_sum_like(a * grad, b)
    if orig.needs_input_grad[0]:
        a_bar = collapse_sum_like(b * grad, a)
    return a_bar, b_bar


def mul_operands_swapped(orig, grad):
    a, b = orig.args
    need_a, need_b = orig.needs_input_grad
    a_bar = collapse_sum_like(grad * a, a) if need_a else None
    b_bar = collapse_sum_like(grad * b, b) if need_b else None
    return [a_bar, b_bar]


def mul_list_swapped(orig, grad):
    a, b = orig.args
    need_a, need_b = orig.needs_input_grad
    a_bar = collapse_sum_like(grad * b, a) if need_a else None
    b_bar = collapse_sum_like(grad * a, b) if need_b else None
    return [b_bar, a_bar]


def mul_not_summed_back(orig, grad):
    a, b = orig.args
    need_a, need_b = orig.needs_input_grad
    return [grad * b if need_a else None, grad * a if need_b else None]


def mul_summed_to_the_other_shape(orig, grad):
    a, b = orig.args
    need_a, need_b = orig.needs_input_grad
    a_bar = collapse_sum_like(grad * b, b) if need_a else None
    b_bar = collapse_sum_like(grad * a, a) if need_b else None
    return [a_bar, b_bar]


def mul_without_upstream(orig, grad):
    a, b = orig.args
    need_a, need_b = orig.needs_input_grad
    a_bar = collapse_sum_like(b, a) if need_a else None
    b_bar = collapse_sum_like(a, b) if need_b else None
    return [a_bar, b_bar]


def mul_ignoring_needs(orig, grad):
    a, b = orig.args
    return [collapse_sum_like(grad * b, a), collapse_sum_like(grad * a, b)]


def mul_sign(orig, grad):
    a, b = orig.args
    need_a, need_b = orig.needs_input_grad
    a_bar = collapse_sum_like(-grad * b, a) if need_a else None
    b_bar = collapse_sum_like(-grad * a, b) if need_b else None
    return [a_bar, b_bar]


def mul_from_the_output(orig, grad):
    a, b = orig.args
    return [collapse_sum_like(grad * orig.out / a, a), collapse_sum_like(grad * a, b)]


def mul_one_gradient(orig, grad):
    a, b = orig.args
    return [collapse_sum_like(grad * b, a)]


MUL = Catalogue(
    exercise="02-mul-rule",
    check=lambda rule: check_rule("mul", rule),
    mistakes=[
        Mistake(
            "ā and b̄ swapped (ā = ȳ·a)",
            mul_operands_swapped,
            [
                "your gradient for a is the gradient that b should get",
                "check which input each one uses",
            ],
            kind="swapped",
        ),
        Mistake(
            "the list in the wrong order [b̄, ā]",
            mul_list_swapped,
            ["your gradient for a is the gradient that b should get", "in the order of the inputs"],
            kind="swapped",
        ),
        Mistake(
            "a broadcast not summed back",
            mul_not_summed_back,
            [
                "your gradient for b has shape (2, 3) where (3,) was expected",
                "not summed back",
                "collapse_sum_like(g, b)",
            ],
            kind="shape",
        ),
        Mistake(
            "summed back to the other input's shape",
            mul_summed_to_the_other_shape,
            [
                "your gradient for a has shape (3,) where (2, 3) was expected",
                "the shape of the input it belongs to",
            ],
            ["summed back"],
            kind="shape",
        ),
        Mistake(
            "ȳ forgotten", mul_without_upstream, ["the local derivative alone"], kind="no_upstream"
        ),
        Mistake(
            "needs_input_grad ignored",
            mul_ignoring_needs,
            [
                "mul keeps a only for the gradient of b",
                "orig.needs_input_grad",
                "return None for the others",
            ],
        ),
        Mistake("a sign", mul_sign, ["wrong sign"], kind="sign"),
        Mistake(
            "orig.out, which mul does not keep",
            mul_from_the_output,
            [
                "it used orig.out, which mul's node does not keep",
                "Write the rule with orig.args[0] and orig.args[1]",
            ],
            ["add 'out' to saves=", "register_op"],
        ),
        Mistake(
            "one gradient for two inputs",
            mul_one_gradient,
            ["returned 1 gradient where 2 were expected"],
        ),
    ],
    rights=[
        Right("the solution", mul_solution),
        Right("b̄ first, in if statements, a tuple", mul_b_first_in_ifs),
        Right(
            "wb.mul and orig.args by index",
            lambda orig, grad: [
                collapse_sum_like(wb.mul(orig.args[1], grad), orig.args[0])
                if orig.needs_input_grad[0]
                else None,
                collapse_sum_like(wb.mul(orig.args[0], grad), orig.args[1])
                if orig.needs_input_grad[1]
                else None,
            ],
        ),
    ],
)


# ------------------------------------------------- lesson 2: collapse_sum_like by hand
def collapse_solution(g, shape):
    g = np.asarray(g)
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead)))
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g


def collapse_nothing(g, shape):
    return g


def collapse_leading_only(g, shape):
    return g.sum(axis=tuple(range(g.ndim - len(shape))))


def collapse_without_keepdims(g, shape):
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    for axis in reversed(range(len(shape))):
        if shape[axis] == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis)
    return g


def collapse_trailing(g, shape):
    g = g.sum(axis=tuple(range(len(shape), g.ndim)))
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g


def collapse_everything(g, shape):
    return g.sum()


def collapse_mean(g, shape):
    g = g.mean(axis=tuple(range(g.ndim - len(shape))))
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.mean(axis=axis, keepdims=True)
    return g


def collapse_one_leading_axis(g, shape):
    if g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g


def collapse_leading_kept(g, shape):
    g = g.sum(axis=tuple(range(g.ndim - len(shape))), keepdims=True)
    return g


def collapse_no_return(g, shape):
    collapse_solution(g, shape)


def collapse_first_slice(g, shape):
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = np.take(g, [0], axis=axis)  # one element kept, not the sum of them all
    return g


def collapse_in_one_call(g, shape):
    lead = g.ndim - len(shape)
    ones = [lead + i for i, size in enumerate(shape) if size == 1]
    return g.sum(axis=tuple(range(lead)) + tuple(ones), keepdims=True).reshape(shape)


def collapse_while_loop(g, shape):
    while g.ndim > len(shape):
        g = np.add.reduce(g, axis=0)
    axes = tuple(i for i, size in enumerate(shape) if size == 1)
    return g.sum(axis=axes, keepdims=True)


COLLAPSE = Catalogue(
    exercise="02-collapse-sum",
    check=check_collapse_sum,
    mistakes=[
        Mistake(
            "nothing summed",
            collapse_nothing,
            ["g itself, of shape (2, 3): nothing was summed", "Sum over axis 0"],
            ["collapse_sum_like(g, 1))", "collapse_sum_like"],
            kind="nothing_summed",
        ),
        Mistake(
            "step 2 left out: the size-1 axes",
            collapse_leading_only,
            ["shape=(2, 1)", "nothing was summed", "over axis 1 with keepdims=True"],
            ["collapse_sum_like(g, 1))", "collapse_sum_like"],
            kind="nothing_summed",
        ),
        Mistake(
            "keepdims left out",
            collapse_without_keepdims,
            ["shape (2,) where (2, 1) was expected", "are gone", "keepdims=True"],
            ["collapse_sum_like"],
            kind="keepdims_left_out",
        ),
        Mistake(
            "the trailing axes summed",
            collapse_trailing,
            ["the trailing axes of g are summed, not the leading ones", "in front"],
            kind="trailing_axes_summed",
        ),
        Mistake(
            "everything summed",
            collapse_everything,
            ["one number, the sum of all of g"],
            kind="everything_summed",
        ),
        Mistake(
            "a mean for the sum",
            collapse_mean,
            ["the mean over the broadcast axes"],
            ["factor"],
            kind="mean_in_place_of_sum",
        ),
        Mistake(
            "one leading axis of two summed",
            collapse_one_leading_axis,
            ["only the first of the leading axes is summed", "axes 0, 1"],
            kind="one_leading_axis_summed",
        ),
        Mistake(
            "keepdims on the leading axes",
            collapse_leading_kept,
            ["shape (1, 3) where (3,) was expected", "still there, with size 1"],
            kind="leading_axes_kept",
        ),
        Mistake("no return", collapse_no_return, ["returned None", "Return the summed array"]),
        Mistake(
            "one element taken, not summed",
            collapse_first_slice,
            ["shape=(2, 1)", "is wrong at all 2 elements", "was expected"],
            kind="elements",
        ),
    ],
    rights=[
        Right("the solution", collapse_solution),
        Right("one sum with keepdims, then reshape", collapse_in_one_call),
        Right("np.add.reduce in a while loop", collapse_while_loop),
        Right("a list of lists", lambda g, shape: collapse_solution(g, shape).tolist()),
    ],
)


# ------------------------------------------------------ lesson 2: linear, by shapes
def linear_solution(orig, grad):
    x, W, b = orig.args
    return [grad @ W, grad.T @ x, collapse_sum_like(grad, b)]


def linear_written_out(orig, grad):
    x, W, b = orig.args
    x_bar = wb.matmul(grad, W)
    W_bar = wb.matmul(x.T, grad).T  # (xᵀ ȳ)ᵀ = ȳᵀ x
    return (x_bar, W_bar, grad.sum(dim=0))


def linear_by_outer_products(orig, grad):
    x, W, b = orig.args
    W_bar = (grad.unsqueeze(-1) * x.unsqueeze(-2)).sum(dim=0)  # Σ over rows of ȳᵢ xᵢᵀ
    return [(grad.unsqueeze(-1) * W).sum(dim=1), W_bar, grad.sum(0)]


def linear_transposes_swapped(orig, grad):
    x, W, b = orig.args
    return [grad @ W.T, x.T @ grad.T, collapse_sum_like(grad, b)]


def linear_weight_as_xt_ybar(orig, grad):
    x, W, b = orig.args
    return [grad @ W, x.T @ grad, collapse_sum_like(grad, b)]


def linear_bias_not_summed(orig, grad):
    x, W, b = orig.args
    return [grad @ W, grad.T @ x, grad]


def linear_bias_wrong_axis(orig, grad):
    x, W, b = orig.args
    return [grad @ W, grad.T @ x, grad.sum(dim=1)]


def linear_bias_summed_whole(orig, grad):
    x, W, b = orig.args
    return [grad @ W, grad.T @ x, grad.sum()]


def linear_factors_reversed(orig, grad):
    x, W, b = orig.args
    return [W @ grad, grad.T @ x, grad.sum(0)]


def linear_bias_mean(orig, grad):
    x, W, b = orig.args
    return [grad @ W, grad.T @ x, grad.mean(0)]


LINEAR = Catalogue(
    exercise="02-linear-rule",
    check=check_linear_rule,
    mistakes=[
        Mistake(
            "the transposes swapped: ȳ Wᵀ",
            linear_transposes_swapped,
            [
                "It multiplies ȳ (2, 4) by Wᵀ (3, 4)",
                "the inner sizes 4 and 3 differ",
                "the transposes are swapped",
                "x̄ must have x's shape (2, 3)",
            ],
            kind="unmatched_shapes",
        ),
        Mistake(
            "W̄ as xᵀ ȳ",
            linear_weight_as_xt_ybar,
            ["has shape (3, 4), (in, out)", "(4, 3), (out, in), was expected", "transposed"],
            kind="transposed",
        ),
        Mistake(
            "b̄ not summed over the batch",
            linear_bias_not_summed,
            ["shape (2, 4) where (4,) was expected", "not summed over the batch", "axis 0"],
            kind="not_summed",
        ),
        Mistake(
            "b̄ summed over the wrong axis",
            linear_bias_wrong_axis,
            ["shape (2,) where (4,) was expected", "the wrong axis", "batch axis 0"],
            kind="wrong_axis",
        ),
        Mistake(
            "b̄ summed into one number",
            linear_bias_summed_whole,
            ["shape () where (4,) was expected", "summed over every axis"],
            kind="summed_all",
        ),
        Mistake(
            "W ȳ: the factors in the wrong order",
            linear_factors_reversed,
            ["It multiplies W (4, 3) by ȳ (2, 4)", "the factors are in the wrong order"],
            ["swapped"],
            kind="unmatched_shapes",
        ),
        Mistake(
            "b̄ a mean over the batch",
            linear_bias_mean,
            ["your gradient for bias is half the expected value"],
            kind="factor",
        ),
    ],
    rights=[
        Right("the solution", linear_solution),
        Right("wb.matmul, (xᵀ ȳ)ᵀ, a tuple", linear_written_out),
        Right("outer products summed over the rows", linear_by_outer_products),
    ],
)


# ------------------------------------------------------- lesson 10: exp, complex
KEEPS_THE_OUTPUT_Z = ["the node keeps its output y = orig.out, not z", "Write the rule with y"]


def exp_solution(orig, grad):
    return [grad * wb.conj(orig.out)]


def exp_input_again(orig, grad):
    z = orig.args[0]
    return [grad * wb.conj(z.exp())]


EXP = Catalogue(
    exercise="complex-autodiff-exp-rule",
    check=lambda rule: check_rule("exp", rule, complex_values=True),
    mistakes=[
        Mistake(
            "the conjugate missing",
            lambda orig, grad: [grad * orig.out],
            ["your gradient for z is ȳ times the derivative, not ȳ times its conjugate", "wb.conj"],
            kind="conjugate",
        ),
        Mistake(
            "ȳ conjugated, not the derivative",
            lambda orig, grad: [wb.conj(grad) * orig.out],
            ["complex conjugate of the expected value", "check each conj in your rule"],
            ["wrap the derivative", "upside down"],  # exp's derivative has no modulus 1
            kind="conjugate",
        ),
        Mistake(
            "the whole product conjugated",
            lambda orig, grad: [wb.conj(grad * wb.conj(orig.out))],
            ["complex conjugate of the expected value"],
            ["wrap the derivative"],
            kind="conjugate",
        ),
        Mistake(
            "ȳ and the derivative both conjugated",
            lambda orig, grad: [wb.conj(grad) * wb.conj(orig.out)],
            ["your gradient for z is wrong at all 5 elements", "was expected"],
            kind="elements",
        ),
        Mistake(
            "ȳ forgotten",
            lambda orig, grad: [wb.conj(orig.out)],
            ["the local derivative alone"],
            kind="no_upstream",
        ),
        Mistake(
            "exp(z) from orig.args[0]", exp_input_again, KEEPS_THE_OUTPUT_Z, NOT_THE_NEEDS_CAUSE
        ),
        Mistake(
            "exp applied to the output again",
            lambda orig, grad: [grad * wb.conj(orig.out.exp())],
            ["at exp(y), not at y", "y = exp(z)"],
            kind="applied_again",
        ),
        Mistake(
            "a sign", lambda orig, grad: [-grad * wb.conj(orig.out)], ["wrong sign"], kind="sign"
        ),
    ],
    rights=[
        Right("the solution", exp_solution),
        Right("the method .conj()", lambda orig, grad: [orig.out.conj() * grad]),
        Right("conj of conj(ȳ)·y", lambda orig, grad: [wb.conj(wb.conj(grad) * orig.out)]),
    ],
)


# ------------------------------------------------------- lesson 10: abs, complex
def abs_solution(orig, grad):
    (z,) = orig.args
    return [grad * z / z.abs()]


def abs_with_a_conjugate(orig, grad):
    (z,) = orig.args
    return [grad * wb.conj(z) / z.abs()]


def abs_divided_by_z(orig, grad):
    (z,) = orig.args
    return [grad * z.abs() / z]


def abs_real_part_only(orig, grad):
    (z,) = orig.args
    return [grad * z.real / z.abs()]


def abs_from_the_output(orig, grad):
    (z,) = orig.args
    return [grad * z / orig.out]


def abs_real_rule(orig, grad):
    (z,) = orig.args
    return [grad * z.real.sign()]


def abs_of_the_square(orig, grad):
    (z,) = orig.args
    return [grad * 2 * z]


def abs_halved(orig, grad):
    (z,) = orig.args
    return [grad * z / (2 * z.abs())]


ABS = Catalogue(
    exercise="complex-autodiff-abs-rule",
    check=lambda rule: check_rule("abs", rule, complex_values=True),
    mistakes=[
        Mistake(
            "a conjugate added",
            abs_with_a_conjugate,
            ["your gradient for z is the complex conjugate of the expected value", "one too many"],
            ["wrap the derivative in wb.conj"],
            kind="conjugate",
        ),
        Mistake(
            "|z| / z: the ratio upside down",
            abs_divided_by_z,
            [
                "complex conjugate of the expected value",
                "a ratio is upside down (|z| / z where z / |z| is meant)",
            ],
            ["wrap the derivative in wb.conj"],
            kind="conjugate",
        ),
        Mistake(
            "the real part alone",
            abs_real_part_only,
            ["right real parts but no imaginary part", "∂L/∂(Im z)"],
            kind="real_part_only",
        ),
        Mistake(
            "ȳ forgotten",
            lambda orig, grad: [orig.args[0] / orig.args[0].abs()],
            ["the local derivative alone"],
            kind="no_upstream",
        ),
        Mistake(
            "orig.out, which abs does not keep",
            abs_from_the_output,
            [
                "it used orig.out, which abs's node does not keep",
                "Write the rule with orig.args[0]",
            ],
            ["add 'out' to saves=", "register_op"],
        ),
        Mistake(
            "a sign", lambda orig, grad: [-abs_solution(orig, grad)[0]], ["wrong sign"], kind="sign"
        ),
        Mistake(
            "a factor: ½ from the square root",
            abs_halved,
            ["half the expected value"],
            kind="factor",
        ),
        Mistake("the real rule ȳ·sign(x)", abs_real_rule, ["was expected"], kind="elements"),
        Mistake("the rule of |z|²", abs_of_the_square, ["was expected"], kind="elements"),
    ],
    rights=[
        Right("the solution", abs_solution),
        Right("wb.sgn", lambda orig, grad: [grad * wb.sgn(orig.args[0])]),
        Right(
            "|z| from its parts",
            lambda orig, grad: [
                orig.args[0] * (grad / wb.sqrt(orig.args[0].real ** 2 + orig.args[0].imag ** 2))
            ],
        ),
    ],
)


CATALOGUES = [SIGMOID, TANH, MUL, COLLAPSE, LINEAR, EXP, ABS]

# The check each exercise's setup cell calls, as the catalogue above calls it.
LESSON_CHECKS = {
    "01-sigmoid-rule": ("01_sigmoid_gradient.ipynb", 'lambda rule: check_rule("sigmoid", rule)'),
    "01-tanh-rule": ("01_sigmoid_gradient.ipynb", 'lambda rule: check_rule("tanh", rule)'),
    "02-mul-rule": ("02_mul_and_broadcasting.ipynb", 'lambda rule: check_rule("mul", rule)'),
    "02-collapse-sum": ("02_mul_and_broadcasting.ipynb", "check_collapse_sum,"),
    "02-linear-rule": ("02_mul_and_broadcasting.ipynb", "check_linear_rule,"),
    "complex-autodiff-exp-rule": (
        "10_complex_autodiff.ipynb",
        'lambda rule: check_rule("exp", rule, complex_values=True)',
    ),
    "complex-autodiff-abs-rule": (
        "10_complex_autodiff.ipynb",
        'lambda rule: check_rule("abs", rule, complex_values=True)',
    ),
}


def test_every_exercise_of_the_three_lessons_has_its_catalogue():
    assert {c.exercise for c in CATALOGUES} == set(LESSON_CHECKS)
    for catalogue in CATALOGUES:
        assert len(catalogue.rights) >= 2 and catalogue.mistakes, catalogue.exercise


@pytest.mark.parametrize("exercise", sorted(LESSON_CHECKS))
def test_the_lesson_checks_with_the_catalogues_check(exercise):
    """The catalogue runs the answers through the check the lesson's exercise uses."""
    name, call = LESSON_CHECKS[exercise]
    notebook = json.loads((LESSONS / name).read_text(encoding="utf-8"))
    assert call in exercise_setup(notebook, exercise)
    defined = [c for c in notebook["cells"] if "def check_" in course.cell_text(c)]
    assert defined == [], f"{name} defines a check of its own: move it into the library"
