"""CompareStepper: two backward passes in lockstep, and the first node where they part.

Real cases: a custom Function with a wrong factor (or sign) against the built-in op,
and a workbench pass against PyTorch's own (a torch loss, or its ``wb.from_torch``
trace), whose gradients the test checks against ``torch.autograd`` directly.
"""

from __future__ import annotations

import html

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.record.graph import LEAVES_FIRST, AccumulateGrad, walk
from workbench.widgets import CompareStepper

X = [0.5, -1.0, 2.0]


def exp_function(scale: float):
    """A learner's Exp whose backward is ``scale`` times the right one (1: right)."""

    class Exp(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return scale * grad * y

    return Exp


def leaf():
    return wb.tensor(X, requires_grad=True, dtype=wb.float64, name="x")


def built_in_and_custom(scale: float) -> CompareStepper:
    x = leaf()
    custom = exp_function(scale)
    return CompareStepper((x.exp() * 3).sum(), (custom.apply(x) * 3).sum())


def test_a_wrong_factor_in_a_custom_function_is_found_at_its_node():
    compared = built_in_and_custom(2.0)
    difference = compared.first_difference
    assert difference is not None and difference.step == 3
    assert difference.node == "ExpBackward0" and difference.node_b == "ExpBackward"
    assert compared.names == ("the built-in", "your Exp")  # said by what they are
    assert "your Exp's gradient for x is 2 times the built-in's" in difference.diagnosis
    assert difference.finding.kind == "factor" and difference.finding.details["factor"] == 2
    assert compared.step == 1 and "first difference is ahead, at step 3" in compared.message.value
    assert compared.run_to_difference() and compared.step == 3
    assert [side.step for side in compared.sides] == [3, 3]
    assert [side.record.name for side in compared.sides] == ["ExpBackward0", "ExpBackward"]
    assert "2 times the built-in&#x27;s" in compared.message.value
    compared.close()


def test_a_sign_is_said_with_a_as_the_reference():
    compared = built_in_and_custom(-1.0)
    assert compared.first_difference.step == 3
    assert (
        "your Exp's gradient for x is minus the built-in's" in compared.first_difference.diagnosis
    )
    compared.close()


def test_a_right_custom_function_agrees_with_the_built_in():
    compared = built_in_and_custom(1.0)
    assert compared.first_difference is None
    assert not compared.run_to_difference() and compared.step == 1
    assert "agree at every step" in compared.message.value
    compared.close()


def torch_program(lib, x, w):
    return (lib.tanh(x) * w).sigmoid().sum()


def test_the_workbench_agrees_with_pytorch_node_by_node():
    x = wb.tensor(X, requires_grad=True, name="x")
    w = wb.tensor([[1.5], [-0.5]], requires_grad=True, name="w")
    tx = torch.tensor(X, requires_grad=True)
    tw = torch.tensor([[1.5], [-0.5]], requires_grad=True)
    compared = CompareStepper(torch_program(wb, x, w), torch_program(torch, tx, tw))
    assert compared.first_difference is None, compared.first_difference
    assert compared.total == 6
    expected = torch.autograd.grad(torch_program(torch, tx, tw), (tx, tw))
    leaves = {r.leaf.name: r.leaf.after for r in compared.sides[0].cursor.source.records if r.leaf}
    np.testing.assert_allclose(leaves["x"], expected[0].numpy(), rtol=1e-6)
    np.testing.assert_allclose(leaves["w"], expected[1].numpy(), rtol=1e-6)
    for k in range(1, 7):
        assert compared.go(k)
        a, b = (side.record for side in compared.sides)
        assert a.name == b.name and a.step == b.step == k
    compared.close()


def test_a_from_torch_trace_with_another_op_is_a_difference_in_the_graph():
    x = wb.tensor(X, requires_grad=True, name="x")
    tx = torch.tensor(X, requires_grad=True)
    trace = wb.from_torch(torch.tanh(tx).mean())
    compared = CompareStepper(wb.tanh(x).sum(), trace)
    difference = compared.first_difference
    assert difference.step == 1 and difference.node == "SumBackward0"
    assert difference.node_b == "MeanBackward0" and difference.finding is None
    assert "the two graphs differ here" in difference.diagnosis
    compared.close()


def test_a_broadcast_gradient_left_unsummed_is_a_shape_difference():
    a = wb.tensor(np.ones((2, 3)), requires_grad=True, name="a")
    b = wb.tensor([1.0, 2.0, 3.0], requires_grad=True, name="b")

    class UnsummedMul(wb.autograd.Function):
        """Its backward forgets to sum b's gradient back (the engine's check catches it
        unless the shapes are made to agree: here b enters already broadcast)."""

        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b, grad * a * 2

    bb = b.expand(2, 3)
    compared = CompareStepper((a * bb).sum(), UnsummedMul.apply(a, bb).sum())
    difference = compared.first_difference
    assert difference.step == 2 and "UnsummedMul's gradient for input 1" in difference.diagnosis
    assert "2 times the built-in's" in difference.diagnosis
    compared.close()


def test_lockstep_moves_and_a_shorter_pass():
    x = leaf()
    compared = CompareStepper((x.exp() * 3).sum(), x.exp().sum())
    assert compared.total == 4
    assert compared.first_difference.step == 2  # a's MulBackward0 where b has ExpBackward0
    assert compared.next() and compared.step == 2
    assert compared.prev() and compared.step == 1 and not compared.prev()
    assert compared.go(4) and [side.step for side in compared.sides] == [4, 3]
    compared.slider.value = 2
    assert [side.step for side in compared.sides] == [2, 2]
    compared.close()


@pytest.mark.parametrize("a, words", [(3.0, "needs a loss Tensor or a saved Trace")])
def test_bad_input_shows_a_message_not_a_traceback(a, words):
    compared = CompareStepper(a, (leaf() * 2).sum())
    assert compared.error is not None and words in compared.message.value
    assert compared.next_button.disabled and compared.step == 0
    compared.close()


def test_close_lets_go_of_both_passes():
    compared = built_in_and_custom(2.0)
    sides = list(compared.sides)
    compared.close()
    assert compared.sides == [] and all(side.cursor is None for side in sides)


def test_a_big_pytorch_gradient_is_compared_in_full():
    values = np.linspace(-1.0, 1.0, 200).reshape(20, 10)
    x = wb.tensor(values, requires_grad=True, name="x")
    tx = torch.tensor(values, requires_grad=True)
    agree = CompareStepper(wb.tanh(x).sum(), torch.tanh(tx).sum())
    assert agree.first_difference is None
    agree.close()
    tx = torch.tensor(values, requires_grad=True)
    differ = CompareStepper(wb.tanh(x).sum(), torch.sin(tx).sum())  # another op, same shape
    assert differ.first_difference.step == 2
    assert "the two graphs differ here" in differ.first_difference.diagnosis
    differ.close()
    tx = torch.tensor(values, requires_grad=True)
    scaled = CompareStepper(wb.tanh(x * 3).sum(), torch.tanh(tx * 3.01).sum())
    assert scaled.first_difference is not None  # 200 values, past a trace's 64 kept in full
    scaled.close()


def test_a_trace_that_kept_only_summaries_says_it_cannot_compare():
    values = np.linspace(-1.0, 1.0, 200).reshape(20, 10)
    with wb.trace() as kept_little:  # arrays over 64 elements: statistics only
        x = wb.tensor(values, requires_grad=True, name="x")
        wb.tanh(x).sum().backward()
    again = wb.tensor(values, requires_grad=True, name="x")
    compared = CompareStepper(wb.tanh(again).sum(), kept_little)
    assert compared.first_difference is not None
    assert "kept only a summary" in compared.first_difference.diagnosis
    compared.close()


# ------------------------------------------------ nodes ready together (ties)
TIE_SHAPES = {"a": (3,), "b": (2, 3), "c": (3,), "d": (2, 1)}
TIE_VALUES = {
    name: np.random.default_rng(7 + i).normal(size=shape)
    for i, (name, shape) in enumerate(TIE_SHAPES.items())
}
TIE_PROGRAMS = {  # each runs some leaves' AccumulateGrads in another order in PyTorch
    "the issue's case": lambda lib, t: (lib.tanh(t["a"] * t["b"]) * t["a"] + t["b"]).sum(),
    "three leaves": lambda lib, t: (t["a"] * t["b"] + t["c"]).sum(),
    "three, used the other way round": lambda lib, t: (t["c"] * t["b"] + t["a"]).sum(),
    "four leaves": lambda lib, t: ((t["a"] * t["b"]) * (t["c"] * t["d"])).sum(),
    "four, used in reverse": lambda lib, t: (t["d"] * t["c"] + t["b"] * t["a"]).sum(),
    "four, reached by paths of other lengths": lambda lib, t: (
        lib.tanh(t["c"] * t["a"]) * t["d"] + t["b"] * t["a"] + t["c"]
    ).sum(),
}


def tie_leaves(lib):
    if lib is torch:
        return {k: torch.tensor(v, requires_grad=True) for k, v in TIE_VALUES.items()}
    return {k: wb.tensor(v, requires_grad=True, name=k) for k, v in TIE_VALUES.items()}


def workbench_and_torch(program) -> tuple:
    """The program on the workbench, its ready leaves run latest-made first, and PyTorch's
    pass of it with the leaves named."""
    leaves = tie_leaves(torch)
    torch_trace = wb.from_torch(program(torch, leaves), names=leaves, small=10**6)
    expected = {k: t.grad.numpy() for k, t in leaves.items() if t.grad is not None}
    return latest_leaf_first(program(wb, tie_leaves(wb))), torch_trace, expected


def latest_leaf_first(loss):
    """Break ties between ready leaves another way than PyTorch's heap (which the engine
    follows): the leaf whose node was made last runs first, so the two passes part."""
    for node in walk([loss.grad_fn]):
        if isinstance(node, AccumulateGrad):
            node._order = LEAVES_FIRST - node._seq
    return loss


def leaf_order(compared: CompareStepper, side: int) -> list:
    return [r.leaf.name for r in compared.sides[side].cursor.source.records if r.leaf]


@pytest.mark.parametrize("program", TIE_PROGRAMS.values(), ids=TIE_PROGRAMS.keys())
def test_leaves_ready_together_are_matched_by_place_not_by_position(program):
    loss, torch_trace, expected = workbench_and_torch(program)
    compared = CompareStepper(loss, torch_trace)
    assert leaf_order(compared, 0) != leaf_order(compared, 1)  # the passes broke a tie apart
    assert compared.first_difference is None, compared.first_difference
    for k in range(1, compared.total + 1):
        assert compared.go(k)
        a, b = (side.record for side in compared.sides)
        assert a.name == b.name and a.step == k
        if a.leaf is not None:  # the same leaf beside it, with PyTorch's own .grad
            assert a.leaf.name == b.leaf.name
            np.testing.assert_allclose(b.leaf.after, expected[a.leaf.name], rtol=1e-6)
            np.testing.assert_allclose(a.leaf.after, b.leaf.after, rtol=1e-6)
    compared.close()


def test_lockstep_shows_the_same_leaf_and_says_where_b_runs_it():
    loss, torch_trace, _ = workbench_and_torch(TIE_PROGRAMS["the issue's case"])
    compared = CompareStepper(loss, torch_trace)
    assert leaf_order(compared, 0) == ["b", "a"] and leaf_order(compared, 1) == ["a", "b"]
    assert compared.go(6)
    assert [side.step for side in compared.sides] == [6, 7]
    assert [side.record.leaf.name for side in compared.sides] == ["b", "b"]
    assert "b runs this node at its step 7" in compared.message.value
    assert "shape" not in compared.message.value
    compared.close()


def wrong_tanh(scale: float):
    class Tanh(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = wb.tanh(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return scale * grad * (1 - y * y)

    return Tanh


def test_a_wrong_custom_function_among_tied_leaves_is_found_at_its_node():
    program = TIE_PROGRAMS["four, reached by paths of other lengths"]
    leaves = tie_leaves(torch)
    reference = program(torch, leaves)
    tanh = wrong_tanh(2.0)
    compared = CompareStepper(reference, program(FunctionTanh(tanh), tie_leaves(wb)))
    difference = compared.first_difference
    torch_order = [r.name for r in compared.sides[0].cursor.source.records]
    assert difference is not None and difference.node == "TanhBackward0"
    assert difference.step == torch_order.index("TanhBackward0") + 1
    assert difference.node_b == "TanhBackward" and difference.finding.kind == "factor"
    assert (
        "your Tanh's gradient" in difference.diagnosis
        and "is 2 times PyTorch's" in difference.diagnosis
    )
    compared.close()


class FunctionTanh:
    """``wb`` with ``tanh`` replaced by a custom Function (the program calls lib.tanh)."""

    def __init__(self, function) -> None:
        self.tanh = function.apply


def test_a_graph_that_shares_a_node_the_other_does_not_differs_at_the_edge():
    x = leaf()
    y = wb.tensor(X, requires_grad=True, dtype=wb.float64, name="y")
    compared = CompareStepper((x * x).sum(), (x * y).sum())  # the same values
    difference = compared.first_difference
    assert difference.step == 2 and difference.node == "MulBackward0"
    assert "one graph shares a node that the other does not" in difference.diagnosis
    compared.close()


def test_past_the_shorter_pass_no_step_is_said_to_run_the_same_node():
    x = leaf()
    compared = CompareStepper((x.exp() * 3).sum(), x.exp().sum())
    assert compared.go(4) and [side.step for side in compared.sides] == [4, 3]
    assert "b runs this node" not in compared.message.value
    compared.close()


def test_next_goes_on_past_the_end_of_a_shorter_first_pass():
    """Lesson 4's comparison (8 steps against the impatient loop's 12) stuck at step 8:
    the widget's step was a's, so Next asked for step 9 again and again."""
    x = leaf()
    compared = CompareStepper(x.exp().sum(), (x.exp() * 3).sum())
    assert (compared.sides[0].total, compared.total) == (3, 4)
    compared.go(3)
    assert compared.next() and compared.step == 4 == compared.slider.value
    assert [side.step for side in compared.sides] == [3, 4]
    assert compared.next_button.disabled and not compared.next()
    assert "a's pass has 3 steps" in html.unescape(compared.message.value)
    assert compared.prev() and compared.step == 3 and [s.step for s in compared.sides] == [3, 3]
    assert "a's pass has 3 steps" not in html.unescape(compared.message.value)
    compared.close()


# ------------------------------------------------ what a learner reads
def square_function(scale: float):
    """A learner's Square, ``scale`` times right: one edge to x where ``x * x`` has two."""

    class Square(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return scale * 2 * grad * x

    return Square


def test_the_same_op_spelled_differently_is_matched_by_place():
    """``x * x`` against a custom Square: MulBackward0 sends x its gradient along two
    edges, Square along one; they stand in one place and their sums agree."""
    x = leaf()
    compared = CompareStepper((x * x).sum(), square_function(1.0).apply(x).sum())
    assert compared.first_difference is None, compared.first_difference
    assert compared.go(2) and [s.record.name for s in compared.sides] == [
        "MulBackward0",
        "SquareBackward",
    ]
    note = compared.message.value
    assert "spelled differently" in note and "summed over its edges" in note
    compared.close()


def test_a_wrong_square_is_found_against_x_times_x():
    x = leaf()
    compared = CompareStepper((x * x).sum(), square_function(2.0).apply(x).sum())
    difference = compared.first_difference
    assert difference is not None and difference.step == 2, difference
    assert "your Square's gradient for x is 2 times the built-in's" in difference.diagnosis
    assert difference.finding.kind == "factor"
    expected = 2 * np.array(X)
    np.testing.assert_allclose(difference.values[0], expected)  # the two edges' sum
    np.testing.assert_allclose(difference.values[1], 2 * expected)
    compared.close()


def test_the_differing_node_is_outlined_in_both_pictures_with_its_values_above():
    compared = built_in_and_custom(2.0)
    a, b = compared.sides
    records_a, records_b = a.cursor.source.records, b.cursor.source.records
    assert a.flagged == [records_a[2].node] and b.flagged == [records_b[2].node]
    vertex = a.picture.vertex_of(records_a[2].node)
    assert "differs" in a.graph.classes[vertex]
    assert not [v for v, c in a.graph.classes.items() if "differs" in c and v != vertex]
    assert compared.values.value == ""  # not at the difference yet
    compared.run_to_difference()
    table = compared.values.value
    assert "The built-in" not in table and "the built-in" in table and "your Exp" in table
    assert "4.9462" in table and "9.8923" in table  # 3·e^0.5 and twice it: a's and b's
    titles = [c.children[0].value for c in compared.columns.children]
    assert "The built-in" in titles[0] and "Your Exp" in titles[1]
    compared.close()


def test_names_can_be_given_and_plain_passes_stay_a_and_b():
    x = leaf()
    plain = CompareStepper((x.exp() * 3).sum(), x.exp().sum())
    assert plain.names == ("a", "b")
    plain.close()
    x = leaf()
    named = CompareStepper((x.exp() * 3).sum(), x.exp().sum(), names=("the engine", "your loop"))
    assert "the engine runs MulBackward0" in named.first_difference.diagnosis
    assert "your loop runs ExpBackward0" in named.first_difference.diagnosis
    named.close()
