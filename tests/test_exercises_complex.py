"""check_rule with complex inputs: right rules pass, a missing conjugate is named, and the
finite differences move both parts of each input (PyTorch's ∂L/∂x + i·∂L/∂y)."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.exercises import ExerciseError, check_rule, compare
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


def test_the_proof_of_a_complex_rule_shows_the_complex_rule():
    """The rule the learner wrote, ȳ · conj(y), not the real one, ȳ · y; the input is z."""
    exp_proof = check_rule("exp", exp_rule, complex_values=True).proof
    assert "z̄ = ȳ · conj(y)" in exp_proof and "x̄ = ȳ · y" not in exp_proof

    def abs_rule(orig, grad):
        (z,) = orig.args
        return [grad * z / z.abs()]

    abs_proof = check_rule("abs", abs_rule, complex_values=True).proof
    assert "z̄ = ȳ · z / |z|" in abs_proof and "sign" not in abs_proof
    real_proof = check_rule("abs", lambda orig, grad: [grad * orig.args[0].sign()]).proof
    assert "x̄ = ȳ · sign(x)" in real_proof and "complex" not in real_proof


def test_a_conjugate_too_many_with_a_real_upstream_is_not_told_to_add_one():
    """abs's ȳ is real: ȳ · conj(z)/|z| is the conjugate of the right answer. Adding a
    conj (what the old message asked) would make it worse."""
    z = np.array([3 + 4j, -1 + 0.5j])
    upstream = np.array([0.5, -2.0])
    expected = upstream * z / np.abs(z)
    finding = compare("your gradient for z", expected, np.conj(expected), upstream=upstream)
    assert finding.kind == "conjugate" and "complex conjugate of the expected value" in (
        finding.observation
    )
    assert "wrap" not in finding.advice


def test_a_missing_conjugate_needs_a_complex_upstream_to_be_named_as_missing():
    z = np.array([3 + 4j, -1 + 0.5j])
    upstream = np.array([0.5 + 1j, -2.0 + 0.25j])
    expected = upstream * np.conj(np.exp(z))
    missing = compare("your gradient for z", expected, upstream * np.exp(z), upstream=upstream)
    assert "not ȳ times its conjugate" in missing.observation
    flipped = compare("your gradient for z", expected, np.conj(expected), upstream=upstream)
    assert "complex conjugate of the expected value" in flipped.observation


def test_a_gradient_without_its_imaginary_part_is_named():
    def real_part_only(orig, grad):
        (z,) = orig.args
        return [grad * z.real / z.abs()]

    with pytest.raises(ExerciseError, match="no imaginary part") as caught:
        check_rule("abs", real_part_only, complex_values=True)
    assert caught.value.kind == "real_part_only"
