"""One notation: ȳ is the gradient arriving at an op's output y; x̄ (ā, b̄, ...) the one its
rule sends to an input. A rule that named an *input* y would make ȳ mean two things, as
mul's once did (z = x · y, with ȳ the second input's gradient)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import workbench as wb
from workbench.ops import OPS

FORMULAS = {name: op.formula for name, op in OPS.items() if op.formula}


def sent_gradients(formula: str) -> list[str]:
    """The symbols on the left of each ``=`` in the Backward line: what the rule sends."""
    line = next((ln for ln in formula.splitlines() if ln.startswith("Backward:")), "")
    body = line.removeprefix("Backward:")
    return [m.group(1) for m in re.finditer(r"(?:^|,)\s*([^\s,=]+)\s*=", body)]


@pytest.mark.parametrize("name", sorted(FORMULAS))
def test_no_rule_sends_y_bar_to_an_input(name):
    assert "ȳ" not in sent_gradients(FORMULAS[name]), FORMULAS[name]


@pytest.mark.parametrize("name", sorted(n for n, op in OPS.items() if op.differentiable))
def test_no_differentiable_op_names_an_input_y(name):
    if name.endswith("_backward"):  # a backward op's input y *is* the forward output
        return
    assert "y" not in OPS[name].input_names


def test_the_sent_gradients_are_parsed():
    assert sent_gradients(OPS["mul"].formula) == ["ā", "b̄"]
    assert sent_gradients("Forward: z = x · y\nBackward: x̄ = z̄ · y, ȳ = z̄ · x") == ["x̄", "ȳ"]


def test_binary_rules_call_their_output_y():
    for name in ("add", "sub", "mul", "div", "maximum", "minimum", "where"):
        assert FORMULAS[name].startswith("Forward: y = "), FORMULAS[name]


def test_the_stepper_panel_names_the_incoming_gradient_as_the_rule_does():
    pytest.importorskip("ipywidgets")
    x = wb.tensor([1.0, 2.0], requires_grad=True, name="x")
    stepper = wb.widgets.BackwardStepper(wb.sigmoid(x).sum())
    panels = {stepper.record.name: stepper.panel.value}
    while stepper.next():
        panels[stepper.record.name] = stepper.panel.value
    sigmoid, leaf = panels["SigmoidBackward0"], panels["AccumulateGrad"]
    assert "incoming gradient ȳ" in sigmoid and "x̄ = ȳ · y · (1 − y)" in sigmoid
    assert "incoming gradient x̄" in leaf and "x.grad += x̄" in leaf


RULE_LESSONS = (
    "01_sigmoid_gradient",
    "02_mul_and_broadcasting",
    "10_complex_autodiff",
    "11_forward_or_reverse",
)


@pytest.mark.parametrize("name", RULE_LESSONS)
def test_a_finite_difference_divides_by_2h_in_brackets(name):
    """(f(x + h) − f(x − h)) / (2h): "/ 2h" reads as (… / 2) · h."""
    path = Path(__file__).resolve().parent.parent / "lessons" / f"{name}.ipynb"
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"/ ?2[hε]", text), name


def test_lesson_1_names_the_vector_jacobian_product():
    path = Path(__file__).resolve().parent.parent / "lessons" / "01_sigmoid_gradient.ipynb"
    text = path.read_text(encoding="utf-8")
    assert "vector-Jacobian product" in text and "ȳᵀJ" in text and "/ (2h)" in text
