"""A ``Value``'s backward pass, recorded with ``trace_values`` and compared node by node.

``trace_values(build)`` records a Value graph and its pass as a Trace of the engine's
kinds; ``CompareStepper`` sets it beside the engine's pass on scalar tensors. A right
Value agrees at every step; each planted mistake is found at the node it broke.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_catalogue_engine import RIGHT_VALUE, value_class

import workbench as wb
from workbench.exercises.value_recorder import ScalarValue
from workbench.exercises.value_trace import parents_first, trace_values
from workbench.widgets import CompareStepper

NAMES = ("the engine", "your Value")
WEIGHTS = {"w1": 0.3, "w2": -0.7, "b": 0.2}


def neuron_loss(w1, w2, b, point=(1.0, -1.0), target=1.0):
    """One tanh unit on one point, its squared error: y is used twice, the x's are numbers.
    ``y + (-target)`` is what a Value's ``y - target`` records, written so for the engine."""
    x1, x2 = point
    y = (w1 * x1 + w2 * x2 + b).tanh()
    return (y + (-target)) * (y + (-target))


def diamond(a, b):
    """h = a · b is used by tanh and by the product: a node's closure must wait for both."""
    h = a * b
    return (h.tanh() + h) * h, h


def engine_leaves(numbers: dict) -> dict:
    return {
        name: wb.tensor(x, dtype=wb.float64, requires_grad=True, name=name)
        for name, x in numbers.items()
    }


def value_leaves(Value, numbers: dict) -> dict:
    return {name: Value(x) for name, x in numbers.items()}


def compared(Value, expression=neuron_loss, numbers=WEIGHTS) -> CompareStepper:
    def build():
        leaves = value_leaves(Value, numbers)
        return expression(*leaves.values()), leaves

    engine_root = expression(*engine_leaves(numbers).values())
    return CompareStepper(engine_root, trace_values(build), names=NAMES)


def records(stepper: CompareStepper) -> tuple:
    return tuple(side.cursor.source.records for side in stepper.sides)


@pytest.mark.parametrize("Value", [ScalarValue, RIGHT_VALUE], ids=["ScalarValue", "micrograd"])
def test_a_right_value_agrees_with_the_engine_at_every_step(Value):
    stepper = compared(Value)
    assert stepper.error is None and stepper.first_difference is None, stepper.first_difference
    engine, yours = records(stepper)
    assert len(engine) == len(yours) == 11  # 8 ops and 3 weights; the numbers take none
    assert sorted(r.name for r in yours) == sorted(r.name for r in engine)
    leaves = {r.leaf.name: float(r.leaf.after) for r in yours if r.leaf}
    assert set(leaves) == set(WEIGHTS)
    stepper.close()


def test_the_recorded_grads_are_the_values_own():
    leaves = value_leaves(ScalarValue, WEIGHTS)
    recorded = trace_values(lambda: (neuron_loss(*leaves.values()), leaves))
    accumulated = {r["tensor"]: r["after"]["values"] for r in recorded.of_kind("grad_accumulated")}
    names = {
        tid: name
        for r in recorded.of_kind("op_recorded")
        for tid, name in zip(r["inputs"], r["input_names"])
        if name
    }
    assert {names[tid]: grad for tid, grad in accumulated.items()} == {
        name: leaf.grad for name, leaf in leaves.items()
    }


def test_the_closures_are_given_back_after_the_pass():
    leaves = value_leaves(ScalarValue, WEIGHTS)
    root = neuron_loss(*leaves.values())
    closure = root._backward
    trace_values(lambda: (root, leaves))
    assert root._backward is closure


def test_numbers_are_edges_to_nothing_as_in_the_engine():
    """3 * a + 2: the wrapped 3 and 2 take no gradient, and no node runs for them."""

    def expression(a):
        return 3 * a + 2

    recorded = trace_values(lambda: (lambda a: (expression(a), {"a": a}))(ScalarValue(0.5)))
    ops = recorded.of_kind("op_recorded")
    assert [r["op"] for r in ops] == ["mul", "add"]
    assert ops[0]["inputs"][1] is None and ops[0]["attrs"] == {"input1": 3.0}
    assert ops[1]["next_nodes"][1] is None and ops[1]["attrs"] == {"input1": 2.0}
    assert [r["name"] for r in recorded.of_kind("node_step")] == [
        "AddBackward0",
        "MulBackward0",
        "AccumulateGrad",
    ]
    stepper = compared(ScalarValue, expression, {"a": 0.5})
    assert stepper.first_difference is None, stepper.first_difference
    stepper.close()


def test_without_names_every_leaf_is_a_weight():
    a, b = ScalarValue(2.0), ScalarValue(-3.0)
    recorded = trace_values(lambda: a * b)
    steps = recorded.of_kind("node_step")
    assert [r["name"] for r in steps].count("AccumulateGrad") == 2
    assert steps[0]["grads_out"][0]["values"] == -3.0  # ∂(a·b)/∂a = b
    assert steps[0]["grads_out"][1]["values"] == 2.0


def test_a_value_used_twice_by_one_node_is_compared_summed():
    """a · a: the closure adds both parts into a.grad at once, recorded on one edge."""
    stepper = compared(ScalarValue, lambda a: (a * a).tanh(), {"a": 0.5})
    assert stepper.first_difference is None, stepper.first_difference
    assert any("spelled differently" in note for note in stepper.match.spelled.values())
    stepper.close()


def test_tanh_s_slope_1_minus_y_is_found_at_tanh():
    stepper = compared(value_class(tanh_slope="1 - y"))
    found = stepper.first_difference
    assert (found.node, found.node_b) == ("TanhBackward0", "TanhBackward0")
    assert "your Value's gradient for input 0" in found.diagnosis
    engine, yours = found.values
    y = math.tanh(0.3 * 1.0 - 0.7 * -1.0 + 0.2)
    assert np.isclose(yours / engine, (1 - y) / (1 - y**2))
    stepper.close()


def test_assigning_in_add_is_found_at_the_add_that_replaced_a_part():
    """y is used by two adds; the second to run sets y.grad with =, and so sends nothing."""
    stepper = compared(value_class(assign={"+"}))
    found = stepper.first_difference
    assert found.node == "AddBackward0" and found.finding is not None
    engine, yours = found.values
    assert yours == 0 and engine != 0
    stepper.close()


def test_a_product_using_its_own_data_is_found_at_the_product():
    """Not the loss's product, whose two factors are equal, but a weight's: w · x sends
    w · ȳ to w, where the engine sends x · ȳ."""
    stepper = compared(value_class(mul="own"))
    found = stepper.first_difference
    assert found.node == "MulBackward0" and found.step > 1
    assert "your Value's gradient for w" in found.diagnosis  # the edge, named by its weight
    engine, yours = found.values
    assert any(np.isclose(yours / engine, w / x) for w, x in [(0.3, 1.0), (-0.7, -1.0)])
    stepper.close()


def test_a_closure_run_before_all_its_gradient_arrived_is_found_there():
    """Breadth first from the root, h's product runs before tanh, which also uses h."""
    stepper = compared(
        value_class(order="breadth first"),
        lambda a, b: diamond(a, b)[0],
        {"a": 0.7, "b": -0.4},
    )
    found = stepper.first_difference
    assert found.node == "MulBackward0" and found.finding is None
    assert "your Value runs MulBackward0 before all of its gradient has arrived" in (
        found.diagnosis
    )
    stepper.close()


def test_a_missing_seed_is_found_at_the_first_step():
    stepper = compared(value_class(seed=False))
    found = stepper.first_difference
    assert found.step == 1 and "gradient that reached it" in found.diagnosis
    stepper.close()


class PowerValue(RIGHT_VALUE):
    """micrograd's power of a number, recorded as "**2"."""

    def __pow__(self, k):
        out = type(self)(self.data**k, (self,), f"**{k}")

        def _backward():
            self.grad += k * self.data ** (k - 1) * out.grad

        out._backward = _backward
        return out


def test_micrograd_s_power_is_the_engine_s_pow():
    stepper = compared(PowerValue, lambda a, b: (a * b) ** 2.0, {"a": 0.5, "b": -1.5})
    assert stepper.first_difference is None, stepper.first_difference
    assert records(stepper)[1][0].name == "PowBackward0"
    stepper.close()


class LeavesSkipped(RIGHT_VALUE):
    """Runs only the closures of Values made by an op: a leaf's does nothing anyway."""

    def backward(self):
        self.grad = 1.0
        for node in reversed(parents_first(self)):
            if node._prev:
                node._backward()


def test_a_weight_whose_closure_never_runs_gets_its_step_at_the_end():
    stepper = compared(LeavesSkipped)
    assert stepper.first_difference is None, stepper.first_difference
    yours = records(stepper)[1]
    assert [r.name for r in yours[-3:]] == ["AccumulateGrad"] * 3
    stepper.close()


def test_a_cycle_is_refused():
    a = ScalarValue(1.0)
    b = a * 2
    a._prev = (b,)
    with pytest.raises(ValueError, match="cycle"):
        trace_values(lambda: b)


@pytest.mark.parametrize(
    "built, kind",
    [(lambda: 1.5, "float"), (lambda: wb.tensor(1.0, requires_grad=True), "Tensor")],
    ids=["a number", "a tensor"],
)
def test_build_returning_no_value_is_a_type_error(built, kind):
    with pytest.raises(TypeError, match=f"must return the root Value .* it returned a {kind}"):
        trace_values(built)
