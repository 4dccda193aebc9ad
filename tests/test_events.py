"""The event bus: what the engine publishes, in which order, with what in it."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.core import events


def program():
    """The fixed program of the event contract: ((a*b)+a).sum() and its backward."""
    events.reset_ids()
    a = wb.tensor([1.0, 2.0], requires_grad=True)
    b = wb.tensor([3.0, 4.0], requires_grad=True)
    with events.collect() as got:
        loss = ((a * b) + a).sum()
        loss.backward()
    return got.events, a, b


def describe(e) -> tuple:
    """The stable part of an event, compactly (live arrays as lists)."""
    if e.kind == "op_recorded":
        return ("op", e.op, e.inputs, e.output, e.node, e.next_nodes)
    if e.kind == "saved_tensor_packed":
        return ("pack", e.node, e.slot, e.tensor, e.nbytes)
    if e.kind == "saved_tensor_freed":
        return ("free", e.node, e.slot, e.tensor, e.nbytes)
    if e.kind == "backward_started":
        return ("start", e.roots, e.root_nodes)
    if e.kind == "node_step":
        return ("step", e.index, e.node, e.name, e.next_nodes, e.leaf)
    if e.kind == "grad_accumulated":
        before = None if e.before is None else e.before.tolist()
        return ("acc", e.tensor, before, e.contribution.tolist(), e.after.tolist())
    if e.kind == "backward_finished":
        return ("finish", e.steps, e.roots)
    return (e.kind,)


EXPECTED = [
    ("op", "mul", ("t1", "t2"), "t3", "n1", ("n2", "n3")),
    ("pack", "n1", "a", "t1", 8),
    ("pack", "n1", "b", "t2", 8),
    ("op", "add", ("t3", "t1"), "t4", "n4", ("n1", "n2")),
    ("op", "sum", ("t4",), "t5", "n5", ("n4",)),
    ("start", ("t5",), ("n5",)),
    ("step", 0, "n5", "SumBackward0", ("n4",), None),
    ("step", 1, "n4", "AddBackward0", ("n1", "n2"), None),
    ("free", "n1", "a", "t1", 8),
    ("free", "n1", "b", "t2", 8),
    ("step", 2, "n1", "MulBackward0", ("n2", "n3"), None),
    # a's and b's nodes are ready together: PyTorch's heap runs a's first (REFERENCE D24)
    ("acc", "t1", None, [4.0, 5.0], [4.0, 5.0]),
    ("step", 3, "n2", "AccumulateGrad", (), "t1"),
    ("acc", "t2", None, [1.0, 2.0], [1.0, 2.0]),
    ("step", 4, "n3", "AccumulateGrad", (), "t2"),
    ("finish", 5, ("t5",)),
]


def test_exact_event_sequence_of_the_fixed_program():
    got, _, _ = program()
    # The ops a gradient rule runs inside backward depend on how the rule is written;
    # everything else is the engine's contract.
    contract = [describe(e) for e in got if not (e.kind == "op_recorded" and e.in_backward)]
    assert contract == EXPECTED


def test_sequence_numbers_count_up_from_reset():
    got, _, _ = program()
    assert [e.seq for e in got] == list(range(1, len(got) + 1))


def test_ops_run_by_rules_are_marked_in_backward_and_sit_inside_a_step():
    got, _, _ = program()
    start = next(i for i, e in enumerate(got) if e.kind == "backward_started")
    finish = next(i for i, e in enumerate(got) if e.kind == "backward_finished")
    for i, e in enumerate(got):
        if e.kind == "op_recorded":
            assert e.in_backward == (start < i < finish), e
            if e.in_backward:
                assert e.node is None  # no create_graph: the backward records nothing
    # a gets gradients from add and from mul; the engine sums them itself (no op: nothing
    # records the sum)
    adds = [e for e in got if e.kind == "op_recorded" and e.in_backward and e.op == "add"]
    assert adds == []


def test_with_create_graph_gradients_that_meet_are_summed_by_the_add_op():
    """The sum must be on the recorded graph: it is an add op of the step that completes it."""
    with events.collect() as heard:
        a = wb.tensor([1.0, 2.0], requires_grad=True)
        b = wb.tensor([3.0, 4.0], requires_grad=True)
        (ga,) = wb.autograd.grad((a * b + a).sum(), a, create_graph=True)
    got = heard.events
    add_step, mul_step = (
        i for i, e in enumerate(got) if e.kind == "node_step" and e.index in (1, 2)
    )
    adds = [e for e in got[add_step:mul_step] if e.kind == "op_recorded" and e.op == "add"]
    assert len(adds) == 1 and adds[0].in_backward and adds[0].node is not None
    assert ga.grad_fn is not None


def test_node_step_carries_grads_in_rule_and_grads_out():
    got, a, b = program()
    steps = {e.name: e for e in got if e.kind == "node_step"}
    mul = steps["MulBackward0"]
    assert mul.op == "mul"
    assert "ā = collapse_sum_like(ȳ · b, a)" in mul.formula
    np.testing.assert_allclose(mul.grads_in[0], [1.0, 1.0])
    np.testing.assert_allclose(mul.grads_out[0], b.detach().numpy())  # ∂(a·b)/∂a = b
    np.testing.assert_allclose(mul.grads_out[1], a.detach().numpy())
    assert len(mul.grads_out_ids) == 2


def test_saved_bytes_add_up_and_are_given_back():
    got, _, _ = program()
    packed = [e for e in got if e.kind == "saved_tensor_packed"]
    freed = [e for e in got if e.kind == "saved_tensor_freed"]
    assert packed[1].total_bytes - packed[0].total_bytes == packed[1].nbytes
    assert freed[0].total_bytes - freed[1].total_bytes == freed[1].nbytes
    assert packed[-1].total_bytes - freed[-1].total_bytes == sum(e.nbytes for e in packed)


def test_collapse_sum_event_names_input_shape_and_summed_axes():
    x = wb.ones(2, 3, requires_grad=True)
    bias = wb.ones(3, requires_grad=True)
    column = wb.ones(2, 1, requires_grad=True)
    with events.collect("collapse_sum", "node_step") as got:
        (x * bias * column).sum().backward()
    sums = [e for e in got.events if e.kind == "collapse_sum"]
    assert {(e.input_shape, e.output_shape, e.axes) for e in sums} == {
        ((2, 3), (3,), (0,)),
        ((2, 3), (2, 1), (1,)),
    }
    # each collapse-sum is published during the step of the rule that called it
    for e in sums:
        step = next(s for s in got.events if s.kind == "node_step" and s.seq > e.seq)
        assert step.name == "MulBackward0"
        assert e.output in step.grads_out_ids


def test_grad_accumulated_shows_before_contribution_after():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    with events.collect("grad_accumulated") as got:
        (x * x).sum().backward()
    (e,) = got.events
    assert e.tensor == x.uid
    np.testing.assert_allclose(e.before, [2.0, 4.0])
    np.testing.assert_allclose(e.contribution, [2.0, 4.0])
    np.testing.assert_allclose(e.after, [4.0, 8.0])


def test_backward_started_lists_inputs_as_tensor_ids():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    y = wb.tensor([3.0], requires_grad=True)
    with events.collect("backward_started", "backward_finished") as got:
        wb.autograd.grad((x * y).sum(), [x], retain_graph=True)
    started, finished = got.events
    assert started.inputs == (x.uid,)
    assert started.retain_graph is True and started.create_graph is False
    assert finished.steps >= 1


def test_anomaly_is_published_before_the_error():
    x = wb.tensor([0.0], requires_grad=True)
    with events.collect("anomaly") as got, pytest.warns(UserWarning):
        with wb.autograd.detect_anomaly(), pytest.raises(RuntimeError, match="nan"):
            (x.sqrt() * 0).sum().backward()
    (e,) = got.events
    assert e.name == "SqrtBackward0" and "nan" in e.message


def test_subscribe_with_a_callback_and_as_context_manager():
    seen = []
    sub = events.subscribe(seen.append)
    assert events.listening
    wb.tensor([1.0], requires_grad=True) * 2
    sub.close()
    count = len(seen)
    assert count == 1 and seen[0].kind == "op_recorded"
    wb.tensor([1.0], requires_grad=True) * 2
    assert len(seen) == count  # closed: nothing more
    with events.subscribe(seen.append, "node_step"):
        (wb.tensor([1.0], requires_grad=True) * 2).sum().backward()
    assert [e.kind for e in seen[count:]] == ["node_step"] * 3
    assert not events.listening


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown event kinds"):
        events.subscribe(print, "node_stepp")


def test_no_subscriber_means_not_listening():
    assert not events.listening
    with events.collect():
        assert events.listening
    assert not events.listening


def test_subscribers_are_called_in_subscription_order():
    calls = []
    with events.subscribe(lambda e: calls.append("first")):
        with events.subscribe(lambda e: calls.append("second")):
            wb.tensor([1.0], requires_grad=True) * 2
    assert calls == ["first", "second"]


def test_reference_d1_7_building_b_emits_a_node_created_event():
    a = wb.tensor([1.0, 2.0], requires_grad=True)
    with events.collect("op_recorded") as got:
        b = a * 2
    (e,) = got.events
    assert (e.op, e.inputs, e.output_shape) == ("mul", (a.uid, None), (2,))
    assert e.node == b.grad_fn.uid and e.output == b.uid
    assert e.next_names == ("AccumulateGrad", None) and e.attrs == {"input1": 2}
