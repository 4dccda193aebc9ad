"""check_rule with complex inputs: right rules pass, a missing conjugate is named, and the
finite differences move both parts of each input (PyTorch's ∂L/∂x + i·∂L/∂y)."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.exercises import ExerciseError, check_rule
from workbench.exercises.rules import central_differences


def exp_rule(orig, grad):
    return [grad * wb.conj(orig.out)]


def test_a_right_complex_rule_passes_and_says_so_in_complex128():
    result = check_rule("exp", exp_rule, complex_values=True)
    assert result and "complex128" in result.proof


def test_a_missing_conjugate_is_named():
    with pytest.raises(ExerciseError, match="not ȳ times its conjugate") as caught:
        check_rule("exp", lambda orig, grad: [grad * orig.out], complex_values=True)
    assert "wb.conj" in str(caught.value)
    assert caught.value.finding.kind == "conjugate"


def test_the_real_rule_still_passes_on_real_inputs():
    assert check_rule("exp", lambda orig, grad: [grad * orig.out])


def test_other_mistakes_keep_their_diagnosis_with_complex_values():
    with pytest.raises(ExerciseError, match="2 times the expected value"):
        check_rule("exp", lambda orig, grad: [2 * grad * wb.conj(orig.out)], complex_values=True)
    with pytest.raises(ExerciseError, match=r"at \[0\] it is -?[\d.]+[+-][\d.]+j where"):
        check_rule("exp", lambda orig, grad: [grad + 0.5j], complex_values=True)


def test_a_real_output_rule_of_a_complex_input():
    def abs_rule(orig, grad):
        (z,) = orig.args
        return [grad * z / z.abs()]

    assert check_rule("abs", abs_rule, complex_values=True)
    with pytest.raises(ExerciseError):  # the real rule, ȳ · sign(x), is not it
        check_rule("abs", lambda orig, grad: [grad * orig.args[0].real.sign()], complex_values=True)


def test_central_differences_give_the_complex_gradient_of_a_real_loss():
    z = np.array([3 + 4j, -1 + 0.5j])
    grad = central_differences(z, lambda: float(np.sum(np.abs(z) ** 2)))  # |z|²: 2z
    np.testing.assert_allclose(grad, 2 * np.array([3 + 4j, -1 + 0.5j]), rtol=1e-6)
