"""The exercise checker: each diagnosis, check_rule, trying_rule, check_function, hints.

Every promised diagnosis is produced here by a specific wrong answer, and every check
passes a right answer; the backward loop and optimizer checks are in
test_exercises_loops.py, the notebook display in test_exercises_notebook.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.exercises import (
    Exercise,
    ExerciseError,
    Hints,
    Passed,
    check_function,
    check_rule,
    compare,
    rules,
    trying_rule,
)
from workbench.exercises import diagnose as D
from workbench.exercises.cases import UNARY, default_cases
from workbench.ops import OPS, collapse_sum_like


def raises(call, *args, **kwargs) -> ExerciseError:
    with pytest.raises(ExerciseError) as info:
        call(*args, **kwargs)
    return info.value


# ------------------------------------------------------------------ diagnoses
def test_a_right_answer_has_no_finding():
    expected = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert compare("x̄", expected, expected + 1e-12) is None
    assert compare("x̄", wb.tensor(expected), wb.tensor(expected)) is None


def test_shape_not_summed_back_names_collapse_sum_like_and_the_axes():
    finding = compare("your gradient for y", np.full(3, 2.0), np.ones((2, 3)))
    assert finding.kind == "shape"
    assert "shape (2, 3) where (3,) was expected" in finding.observation
    assert "not summed back" in finding.advice
    assert "axis 0" in finding.advice and "collapse_sum_like(g, y)" in finding.advice
    assert finding.details["axes"] == (0,)
    assert "its values are right" in finding.advice  # the sum of ones over axis 0 is 2


def test_shape_of_a_kept_dimension_names_both_axes():
    finding = D.diagnose_shape("x.grad", np.zeros((1, 3)), np.zeros((4, 2, 3)))
    assert finding.details["axes"] == (0, 1)
    assert "axes 0, 1" in finding.advice
    assert "its values are right" in finding.advice
    finding = D.diagnose_shape("x.grad", np.ones((1, 3)), np.zeros((4, 2, 3)))
    assert "its values are right" not in finding.advice


def test_shape_transposed_and_other_shapes():
    finding = D.diagnose_shape("your gradient for a", np.zeros((2, 3)), np.zeros((3, 2)))
    assert "transposed" in finding.advice
    finding = D.diagnose_shape("your gradient for a", np.zeros(3), np.zeros(4))
    assert "shape (4,) where (3,)" in finding.observation
    assert "the shape of the input" in finding.advice
    assert D.diagnose_shape("a", np.zeros(3), np.zeros(3)) is None


def test_sign_flip():
    expected = np.array([1.0, -2.0, 0.0, 3.0])
    finding = compare("x̄", expected, -expected)
    assert finding.kind == "sign"
    assert "every element of x̄ has the wrong sign" in finding.observation
    assert finding.wrong.tolist() == [True, True, False, True]  # 0 and −0 agree
    assert D.diagnose_sign("x̄", expected, expected * 2) is None


@pytest.mark.parametrize(
    "factor, words",
    [(2.0, "2 times"), (0.5, "half"), (3.0, "3 times"), (1 / 3, "1/3 of"), (1.37, "1.37 times")],
)
def test_uniform_factor(factor, words):
    expected = np.array([[1.0, -2.0], [0.5, 4.0]])
    finding = compare("x̄", expected, factor * expected)
    assert finding.kind == "factor"
    assert f"is {words} the expected value" in finding.observation
    assert finding.details["factor"] == pytest.approx(factor)


def test_factor_of_two_suggests_a_missing_or_extra_two():
    finding = compare("x̄", np.array([1.0, 2.0]), np.array([2.0, 4.0]))
    assert "off by a constant factor of 2" in finding.advice
    assert "a 2 (or a ½)" in finding.advice
    half = compare("x̄", np.array([1.0, 2.0]), np.array([0.5, 1.0]))
    assert "off by a constant factor of 2" in half.advice


def test_negative_factor_names_the_sign_and_the_factor():
    finding = compare("x̄", np.array([1.0, 2.0]), np.array([-2.0, -4.0]))
    assert finding.kind == "factor"
    assert "wrong sign and is 2 times" in finding.observation


def test_a_ratio_that_is_not_uniform_is_not_a_factor():
    expected = np.array([1.0, 2.0, 3.0])
    assert D.diagnose_factor("x̄", expected, np.array([2.0, 4.0, 3.0])) is None
    assert D.uniform_ratio(expected, np.array([2.0, 4.0, 3.0])) is None


def test_a_single_wrong_element_is_named_with_expected_and_got():
    expected = np.arange(6.0).reshape(2, 3)
    got = expected.copy()
    got[1, 2] = 9.5
    finding = compare("your gradient for x", expected, got)
    assert finding.kind == "elements"
    assert "wrong at 1 element" in finding.observation
    assert "at [1, 2] it is 9.5 where 5 was expected" in finding.observation
    assert finding.wrong.sum() == 1 and finding.wrong[1, 2]
    assert finding.details["indices"] == [(1, 2)]


def test_a_few_wrong_elements_are_listed_up_to_a_handful():
    expected = np.arange(1.0, 21.0)
    got = expected.copy()
    got[[2, 5]] += 1.0
    finding = compare("x̄", expected, got)
    assert "wrong at 2 of 20 elements ([2], [5])" in finding.observation
    got[[0, 1, 3, 4, 6, 7]] += 1.0
    finding = compare("x̄", expected, got)
    assert "8 of 20" in finding.observation and "and 3 more" in finding.observation


def test_wrong_zeros_among_right_values_are_called_zeros():
    finding = compare("x̄", np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0]))
    assert finding.kind == "elements" and finding.details["zeros"]
    assert "0 where nonzero values were expected" in finding.advice


def test_all_zeros_where_nonzero_was_expected():
    finding = compare("x̄", np.array([1.0, 2.0]), np.zeros(2))
    assert finding.kind == "zeros"
    assert "all zeros, but nonzero values were expected" in finding.observation
    assert D.diagnose_zeros("x̄", np.zeros(2), np.zeros(2)) is None


def test_none_where_a_gradient_was_expected_and_the_reverse():
    finding = compare("your gradient for y", np.ones((2, 3)), None)
    assert finding.kind == "missing"
    assert "is None, but a gradient was expected" in finding.observation
    assert "shape (2, 3)" in finding.advice
    finding = compare("your gradient for k", None, np.ones(2))
    assert finding.kind == "unexpected"
    assert "should be None" in finding.observation
    assert compare("x̄", None, None) is None


def test_nan_and_infinity_are_named_with_their_places():
    got = np.array([1.0, np.nan, 3.0])
    finding = compare("x̄", np.array([1.0, 2.0, 3.0]), got)
    assert finding.kind == "not_finite"
    assert "NaN (not a number) at [1]" in finding.observation
    finding = compare("x̄", np.ones((2, 2)), np.array([[1.0, 1.0], [np.inf, 1.0]]))
    assert "infinity at [1, 0]" in finding.observation
    assert finding.wrong.tolist() == [[False, False], [True, False]]


def test_a_value_that_is_not_a_tensor():
    finding = compare("x̄", np.ones(2), 1.5)
    assert finding.kind == "not_a_tensor" and "is a float" in finding.observation


def test_forgetting_the_upstream_gradient():
    upstream = np.array([0.5, -2.0, 3.0])
    local = np.array([0.2, 0.25, 0.1])
    finding = compare("x̄", local * upstream, local, upstream=upstream)
    assert finding.kind == "no_upstream"
    assert "multiply it by ȳ" in finding.advice
    assert compare("x̄", local * upstream, local).kind == "elements"  # without ȳ: no diagnosis


def test_sentences_join_context_observation_and_advice():
    finding = compare("x.grad", np.array([1.0, 2.0]), np.array([2.0, 4.0]))
    text = finding.sentences("On the chain graph", "a node ran twice")
    assert text == (
        "On the chain graph, every element of x.grad is 2 times the expected value. "
        "A node ran twice."
    )
    assert finding.sentences().startswith("Every element of x.grad")
    assert compare("x.grad", np.ones(2), None).sentences().startswith("x.grad is None")


# ----------------------------------------------------------------- check_rule
def sigmoid_rule(orig, grad):
    y = orig.out
    return [grad * y * (1 - y)]


def mul_rule(orig, grad):
    x, y = orig.args
    need_x, need_y = orig.needs_input_grad
    return [
        collapse_sum_like(grad * y, x) if need_x else None,
        collapse_sum_like(grad * x, y) if need_y else None,
    ]


def test_a_right_rule_passes_and_says_what_it_proved():
    result = check_rule("sigmoid", sigmoid_rule)
    assert isinstance(result, Passed) and result
    assert "Your rule for sigmoid is right." in repr(result)
    assert "finite differences" in result.proof and "engine's own rule" in result.proof
    assert "x̄ = ȳ · y · (1 − y)" in result.proof
    assert "right" in result._repr_html_() and "right" in result._repr_markdown_()


def test_a_right_binary_rule_passes_on_broadcast_shapes():
    result = check_rule("mul", mul_rule)
    assert "(2, 3) × (3,)" in result.proof and "broadcast" in result.proof


def test_shapes_replace_the_default_shapes():
    result = check_rule("mul", mul_rule, shapes=[((4,), (4,)), ((2, 4), (1, 4))])
    assert "On 3 calls" in result.proof and "(2, 4) × (1, 4)" in result.proof  # + y needs none
    assert "On 1 calls" not in check_rule("sigmoid", sigmoid_rule, shapes=[(7,)]).proof


@pytest.fixture
def engine_rule_allowed(monkeypatch):
    """The checker's cases and finite differences, tried on the engine's own rules: the
    check that refuses a learner's rule calling the engine's is off for these
    (tests/test_exercise_integrity.py tests it)."""
    monkeypatch.setattr(rules, "own_rules", lambda op: [])


@pytest.mark.parametrize(
    "op_name", sorted({*UNARY, "add", "sub", "div", "pow", "maximum", "minimum"}) + ["mul"]
)
def test_the_engine_rule_passes_its_own_check_on_elementwise_ops(op_name, engine_rule_allowed):
    check_rule(op_name, OPS[op_name].gradient)


@pytest.mark.parametrize(
    "op_name",
    ["sum", "mean", "amax", "var", "prod", "logsumexp", "norm", "softmax", "log_softmax"]
    + ["cumsum", "matmul", "linear", "avg_pool2d", "max_pool2d", "conv2d"],
)
def test_the_engine_rule_passes_its_own_check_on_other_ops(op_name, engine_rule_allowed):
    check_rule(op_name, OPS[op_name].gradient)


def test_missing_collapse_sum_is_diagnosed_on_mul_with_a_broadcast_pair():
    def mul_without_sum(orig, grad):
        a, b = orig.args
        return [grad * b, grad * a]

    err = raises(check_rule, "mul", mul_without_sum)
    assert isinstance(err, AssertionError)
    assert err.kind == "shape" and err.input == "b"
    assert str(err) == (
        "With a of shape (2, 3) and b of shape (3,), your gradient for b has shape (2, 3) "
        "where (3,) was expected. The broadcast gradient was not summed back: sum it over "
        "axis 0 with collapse_sum_like(g, b) (summed, its values are right). "
        "(Right on 1 of 5 calls.)"  # the calls without a broadcast: partial credit
    )
    assert err.parts == (1, 5)


def test_a_rule_must_leave_out_gradients_nobody_wants():
    def mul_ignoring_needs(orig, grad):
        a, b = orig.args
        return [collapse_sum_like(grad * b, a), collapse_sum_like(grad * a, b)]

    err = raises(check_rule, "mul", mul_ignoring_needs)
    assert str(err) == (
        "With a of shape (2, 3) and b of shape (2, 3) (b needing no gradient), your rule "
        "mul_ignoring_needs raised an error on line "
        f"{mul_ignoring_needs.__code__.co_firstlineno + 2} "
        "(`return [collapse_sum_like(grad * b, a), collapse_sum_like(grad * a, b)]`): it used "
        "a, which this call did not keep: mul keeps a only for the gradient of b, and "
        "orig.needs_input_grad says it is not wanted here. Compute a gradient only for the "
        "inputs that orig.needs_input_grad marks True, and return None for the others. "
        "(Right on 4 of 5 calls.)"  # every call where both inputs need a gradient
    )


def test_sign_error_is_diagnosed():
    def tanh_rule(orig, grad):
        y = orig.out
        return [grad * (y * y - 1)]

    err = raises(check_rule, "tanh", tanh_rule)
    assert err.kind == "sign" and "every element of your gradient for x has the wrong sign" in str(
        err
    )
    assert err.wrong.all()


def test_factor_of_two_is_diagnosed():
    def square_rule(orig, grad):
        (x,) = orig.args
        return [grad * x]  # forgot the 2 of 2x

    err = raises(check_rule, "square", square_rule)
    assert err.kind == "factor"
    assert "is half the expected value" in str(err) and "factor of 2" in str(err)


def test_a_single_wrong_element_is_diagnosed_with_its_index():
    def sigmoid_with_one_slip(orig, grad):
        y = orig.out
        bump = np.zeros(y.shape)
        bump.flat[-1] = 1.0
        return [grad * y * (1 - y) + wb.tensor(bump)]

    err = raises(check_rule, "sigmoid", sigmoid_with_one_slip)
    assert err.kind == "elements"
    assert "With x of shape (5,), your gradient for x is wrong at 1 element: at [4]" in str(err)
    assert err.wrong.tolist() == [False] * 4 + [True]
    assert err.expected.shape == err.got.shape == (5,)


def test_none_where_a_gradient_was_expected_is_diagnosed():
    def mul_forgets_b(orig, grad):
        a, b = orig.args
        return [collapse_sum_like(grad * b, a), None]

    err = raises(check_rule, "mul", mul_forgets_b)
    assert err.kind == "missing" and err.input == "b"
    assert "your gradient for b is None, but a gradient was expected" in str(err)


def test_nan_is_diagnosed():
    def log_rule(orig, grad):
        (x,) = orig.args
        nan = wb.tensor(np.full(x.shape, np.nan))
        return [grad / x + nan * (x > 1.5)]  # NaN wherever x > 1.5

    err = raises(check_rule, "log", log_rule)
    assert err.kind == "not_finite" and "NaN (not a number) at" in str(err)


def test_forgetting_grad_is_diagnosed():
    def sigmoid_without_grad(orig, grad):
        y = orig.out
        return [y * (1 - y)]

    err = raises(check_rule, "sigmoid", sigmoid_without_grad)
    assert err.kind == "no_upstream" and "Multiply it by ȳ (the grad argument)" in str(err)


def test_what_a_rule_returns_is_checked_first():
    err = raises(check_rule, "sigmoid", lambda orig, grad: grad * orig.out * (1 - orig.out))
    assert "returned a Tensor, not a list" in str(err) and "[x̄]" in str(err)
    err = raises(check_rule, "mul", lambda orig, grad: [grad])
    assert "returned 1 gradient where 2 were expected" in str(err)
    err = raises(check_rule, "sigmoid", lambda orig, grad: [grad.numpy()])
    assert "numpy array, not a Tensor" in str(err)
    err = raises(check_rule, "sigmoid", lambda orig, grad: None)
    assert "returned a NoneType" in str(err)


def test_an_error_in_the_learners_rule_is_one_short_message_on_their_line():
    def sigmoid_typo(orig, grad):
        y = orig.out
        return [grad * y * (1 - yy)]  # noqa: F821

    err = raises(check_rule, "sigmoid", sigmoid_typo)
    message = str(err)
    assert message.startswith(
        "With x of shape (5,), your rule sigmoid_typo raised an error on line "
    )
    assert "(`return [grad * y * (1 - yy)]  # noqa: F821`)" in message
    assert message.endswith("NameError: name 'yy' is not defined.")
    assert err.__cause__ is None and err.__suppress_context__


def test_an_engine_error_inside_the_learners_rule_names_their_line_not_ours():
    def mul_with_bad_shapes(orig, grad):
        x, y = orig.args
        return [grad.sum(dim=1) * y, grad * x]

    err = raises(check_rule, "mul", mul_with_bad_shapes, shapes=[((2, 3), (2, 3))])
    assert err.kind == "raised OpError"  # the class report counts it by that, not its text
    assert "raised an error on line" in str(err) and "grad.sum(dim=1) * y" in str(err)
    assert "workbench/" not in str(err)


def test_an_op_without_default_inputs_asks_for_shapes():
    with pytest.raises(ValueError, match="pass shapes="):
        check_rule("reshape", OPS["reshape"].gradient)
    assert len(default_cases("sigmoid")) == 3


# ---------------------------------------------------------------- trying_rule
def test_trying_rule_runs_the_learners_rule_in_backward_and_restores_it():
    original, formula = OPS["sigmoid"].gradient, OPS["sigmoid"].formula
    calls = []

    def noisy_rule(orig, grad):
        calls.append(orig.name())
        y = orig.out
        return [3 * grad * y * (1 - y)]

    x = wb.tensor([0.0, 1.0], dtype=wb.float64, requires_grad=True)
    with trying_rule("sigmoid", noisy_rule) as op:
        assert op.formula == formula  # the formula shown stays
        x.sigmoid().sum().backward()
        (g,) = wb.autograd.grad(x.sigmoid().sum(), x)
    assert calls == ["SigmoidBackward0", "SigmoidBackward0"]
    y = 1 / (1 + np.exp(-x.detach().numpy()))
    np.testing.assert_allclose(x.grad.numpy(), 3 * y * (1 - y))
    np.testing.assert_allclose(g.numpy(), 3 * y * (1 - y))
    assert OPS["sigmoid"].gradient is original
    x.grad = None
    x.sigmoid().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y * (1 - y))


def test_trying_rule_runs_in_the_steppers_road():
    x = wb.tensor([0.5], dtype=wb.float64, requires_grad=True)
    loss = x.tanh().sum()
    with trying_rule("tanh", lambda orig, grad: [10 * grad]):
        task = wb.autograd.make_backward_task(loss)
        names = [step.node.name() for step in task.steps()]
    assert "TanhBackward0" in names
    np.testing.assert_allclose(x.grad.numpy(), [10.0])


def test_trying_rule_restores_the_rule_after_an_error():
    original = OPS["exp"].gradient
    with pytest.raises(ZeroDivisionError):
        with trying_rule("exp", lambda orig, grad: [grad]):
            assert OPS["exp"].gradient is not original
            raise ZeroDivisionError
    assert OPS["exp"].gradient is original


def test_nested_trying_rule_restores_each_level():
    original = OPS["exp"].gradient
    with trying_rule("exp", lambda orig, grad: [grad]):
        outer = OPS["exp"].gradient
        with trying_rule("exp", lambda orig, grad: [2 * grad]):
            assert OPS["exp"].gradient not in (outer, original)
        assert OPS["exp"].gradient is outer
    assert OPS["exp"].gradient is original


def test_check_rule_compares_with_the_registered_rule_even_inside_trying_rule():
    with trying_rule("sigmoid", lambda orig, grad: [grad]):
        check_rule("sigmoid", sigmoid_rule)
        with pytest.raises(ExerciseError):
            check_rule("sigmoid", lambda orig, grad: [grad])


def test_a_wrong_shape_in_the_engine_is_a_short_exercise_error():
    def mul_without_sum(orig, grad):
        x, y = orig.args
        return [grad * y, grad * x]

    x = wb.tensor(np.ones((2, 3)), requires_grad=True)
    y = wb.tensor(np.ones(3), requires_grad=True)
    with trying_rule("mul", mul_without_sum):
        err = raises(lambda: (x * y).sum().backward())
    assert str(err).startswith("In backward, at MulBackward0, your gradient for b has shape")
    assert "collapse_sum_like(g, b)" in str(err)
    assert "its values are right" not in str(err)  # only the shape is known there


def test_an_error_in_a_tried_rule_names_the_learners_line():
    def broken(orig, grad):
        return [grad * undefined_name]  # noqa: F821

    x = wb.tensor([1.0], requires_grad=True)
    with trying_rule("exp", broken):
        err = raises(lambda: x.exp().sum().backward())
    assert "Your rule broken raised an error on line" in str(err)
    assert "NameError" in str(err)


def test_an_input_the_node_does_not_keep_is_named_in_a_tried_rule_too():
    """In the engine, as in the check: x · x on sigmoid's unkept x is no TypeError."""

    def from_the_input(orig, grad):
        x = orig.args[0]
        return [grad * (1 - x * x)]

    x = wb.tensor([1.0], requires_grad=True)
    with trying_rule("tanh", from_the_input):
        err = raises(lambda: x.tanh().sum().backward())
    assert "the node keeps its output y = orig.out, not x" in str(err)
    assert "TypeError" not in str(err) and "needs_input_grad" not in str(err)


def test_an_input_no_gradient_needs_is_named_as_such():
    """add keeps neither input: a rule that reads one is told that add needs no values,
    not that a gradient was unwanted (add keeps nothing, for any gradient)."""
    err = raises(check_rule, "add", lambda orig, grad: [grad * orig.args[1], grad])
    assert "add's gradients do not need the values of b" in str(err)
    assert "needs_input_grad" not in str(err)


def test_a_learners_error_that_is_not_about_unkept_inputs_is_left_as_it_is():
    def divides_by_zero(orig, grad):
        raise ZeroDivisionError("division by zero")

    err = raises(check_rule, "sigmoid", divides_by_zero)
    assert "ZeroDivisionError: division by zero." in str(err)


def test_the_shape_advice_never_names_a_number_as_the_input():
    finding = compare(
        "your sum of a (2, 3) gradient back to (2, 1)", np.ones((2, 1)), np.ones((2, 3))
    )
    assert "collapse_sum_like(g, the input it belongs to)" in finding.advice
    assert "1))" not in finding.advice
    assert D.input_name("your gradient for b") == "b" and D.input_name("back to (3,)") is None


def test_the_proof_lists_each_call_and_the_rule_it_computes():
    def mul_rule(orig, grad):
        a, b = orig.args
        need_a, need_b = orig.needs_input_grad
        a_bar = collapse_sum_like(grad * b, a) if need_a else None
        return [a_bar, collapse_sum_like(grad * a, b) if need_b else None]

    proof = check_rule("mul", mul_rule).proof
    assert "(2, 3) × (3,)" in proof and "(2, 3) × (2, 3) with b needing no gradient" in proof
    assert "ā = collapse_sum_like(ȳ · b, a)" in proof


# ------------------------------------------------------------- check_function
class Exp(wb.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


class MulAdd(wb.autograd.Function):
    """z = x · w + k, with k a Python number."""

    @staticmethod
    def forward(ctx, x, w, k):
        ctx.save_for_backward(x, w)
        return x * w + k

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return collapse_sum_like(grad * w, x), collapse_sum_like(grad * x, w), None


def test_a_right_function_passes():
    result = check_function(Exp, [0.5, -1.0, 2.0], reference=wb.exp)
    assert "Your Function Exp is right." in repr(result)
    assert "x of shape (3,)" in result.proof and "gradient of exp" in result.proof
    check_function(MulAdd, np.ones((2, 3)), [1.0, 2.0, 3.0], 4.0)


def test_a_wrong_element_in_a_function_is_pointed_at():
    class ExpSlip(Exp):
        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y * wb.tensor([1.0, 1.0, 3.0], dtype=wb.float64)

    err = raises(check_function, ExpSlip, [0.5, -1.0, 2.0], reference=wb.exp)
    assert err.kind == "elements" and err.wrong.tolist() == [False, False, True]
    assert "your gradient for x is wrong at 1 element: at [2]" in str(err)


def test_a_wrong_forward_is_caught_against_the_reference():
    class ExpOff(Exp):
        @staticmethod
        def forward(ctx, x):
            y = 2 * x.exp()
            ctx.save_for_backward(y)
            return y

    err = raises(check_function, ExpOff, [0.5, -1.0], reference=wb.exp)
    assert "the output of your forward is 2 times the expected value" in str(err)


def test_function_diagnoses_none_an_unexpected_gradient_and_the_sign():
    class MulAddNone(MulAdd):
        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            return grad * w, None, None

    err = raises(check_function, MulAddNone, [1.0, 2.0], [3.0, 4.0], 1.0)
    assert err.kind == "missing" and "your gradient for w is None" in str(err)
    assert err.input == "w"

    class MulAddK(MulAdd):
        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            return grad * w, grad * x, grad.sum()

    err = raises(check_function, MulAddK, [1.0, 2.0], [3.0, 4.0], 1.0)
    assert err.kind == "unexpected" and "your gradient for k should be None" in str(err)

    class ExpNeg(Exp):
        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return -grad * y

    assert raises(check_function, ExpNeg, [0.5, 1.0]).kind == "sign"


def test_function_shapes_follow_the_engine():
    """A Function may return a broadcastable gradient (PyTorch and the engine sum it); any
    other shape is diagnosed."""

    class MulUnsummed(MulAdd):
        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            return grad * w, grad * x, None

    check_function(MulUnsummed, np.ones((2, 3)), [1.0, 2.0, 3.0], 0.0)

    class MulTransposed(MulAdd):
        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            return (grad * w).T, grad * x, None

    err = raises(check_function, MulTransposed, np.ones((2, 3)), np.ones((2, 3)), 0.0)
    assert err.kind == "shape" and "transposed" in str(err)


def test_an_error_in_a_functions_backward_names_the_line():
    class ExpTypo(Exp):
        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensor
            return grad * y

    err = raises(check_function, ExpTypo, [1.0])
    assert "With x of shape (1,), your Function ExpTypo's backward raised an error on line" in str(
        err
    )
    assert "ctx.saved_tensor" in str(err) and "AttributeError" in str(err)


# ---------------------------------------------------------------------- hints
def test_hints_reveal_in_order_and_the_solution_only_after_an_attempt():
    hints = Hints(["nudge text", "middle text", "strong text"], solution="the code")
    first, second, third = hints.next(), hints.next(), hints.next()
    assert [first.text, second.text, third.text] == ["nudge text", "middle text", "strong text"]
    assert first.title == "Hint 1 of 3 (a nudge)"
    assert third.title == "Hint 3 of 3 (a stronger hint)"
    assert "the code" not in repr(hints.next())  # no attempt yet: not the solution
    assert "the code" not in repr(hints.reveal_solution())
    assert not hints.solution_open
    hints.record_attempt()
    solution = hints.next()
    assert solution.text == "the code" and solution.code
    assert "```python\nthe code\n```" in solution._repr_markdown_()


def test_an_exercise_counts_attempts_right_or_wrong():
    exercise = Exercise(
        "sigmoid rule",
        lambda rule: check_rule("sigmoid", rule),
        hints=["Which tensor does the rule need?"],
        solution="return [grad * y * (1 - y)]",
    )
    assert "Not yet" in repr(exercise.reveal_solution())
    assert exercise.hint().text == "Which tensor does the rule need?"
    with pytest.raises(ExerciseError):
        exercise.check(lambda orig, grad: [grad])
    assert exercise.attempts == 1
    assert exercise.reveal_solution().text == "return [grad * y * (1 - y)]"
    assert exercise.check(sigmoid_rule)
    assert exercise.attempts == 2


def test_the_hint_button_shows_one_level_per_click():
    pytest.importorskip("ipywidgets")
    hints = Hints(["first", "second"], solution="code")
    box = hints.button()
    note, button, shown = box.children
    assert type(note).__name__ == "ConnectionNote"  # says so on the button once the kernel is gone
    assert button.description == "Show hint 1 of 2"
    button.click()
    assert "first" in shown.value and "second" not in shown.value
    assert button.description == "Show hint 2 of 2"
    button.click()
    assert button.description == "Show the solution"
    button.click()
    assert "Not yet" in shown.value and "code" not in shown.value
    hints.record_attempt()
    button.click()
    assert "<pre>code</pre>" in shown.value


def test_importing_the_checker_loads_no_widgets():
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, workbench.exercises\n"
        "print([m for m in ('ipywidgets', 'IPython', 'matplotlib', 'graphviz',\n"
        "    'pygraphviz', 'workbench.viz') if m in sys.modules])"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_checker_is_reached_lazily_from_workbench():
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, workbench as wb\n"
        "print('workbench.exercises' in sys.modules)\n"
        "print(wb.exercises.check_rule.__module__)"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert out.stdout.split() == ["False", "workbench.exercises.rules"], out.stderr


# ------------------------------------------------------------------ notebooks
class FakeShell:
    def __init__(self, custom_exceptions=()):
        self.custom_exceptions = custom_exceptions
        self.shown = []

    def set_custom_exc(self, exceptions, handler):
        self.custom_exceptions = exceptions
        self.handler = handler

    def _showtraceback(self, etype, value, stb):
        self.shown.append(stb)


def test_the_notebook_handler_is_installed_once_and_never_over_another(monkeypatch):
    from workbench.exercises import report

    shell = FakeShell()
    monkeypatch.setattr(report, "running_ipython", lambda: shell)
    report.show_in_notebook()
    assert shell.custom_exceptions == report.HANDLED and shell.handler is report.notebook_handler
    other = FakeShell(custom_exceptions=(KeyError,))
    monkeypatch.setattr(report, "running_ipython", lambda: other)
    report.show_in_notebook()
    assert other.custom_exceptions == (KeyError,)  # someone else's handler stays


def test_the_notebook_handler_shows_the_message_then_a_one_line_error(capsys):
    from workbench.exercises import report

    shell = FakeShell()
    err = ExerciseError("Your gradient for x is wrong.")
    assert report.notebook_handler(shell, ExerciseError, err, None) == []
    assert capsys.readouterr().out.strip() == "Your gradient for x is wrong."  # displayed
    assert shell.shown == [[f"ExerciseError: {report.SEE_ABOVE}"]]  # no traceback


def test_a_transposed_gradient_is_a_wrong_shape_that_names_the_transpose():
    def matmul_rule(orig, grad):
        a, b = orig.args
        return [(grad @ b.mT).mT, a.mT @ grad]  # a's gradient, transposed

    err = raises(check_rule, "matmul", matmul_rule, [((2, 3), (3, 4))])
    assert err.kind == "shape" and err.input == "a"
    assert "has shape (3, 2) where (2, 3) was expected" in str(err)
    assert "transposed" in str(err)
