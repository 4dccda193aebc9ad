"""Predict, then reveal: ``BackwardStepper(loss, predict=True)`` asks before it shows.

Each step's result (what its node sends on, a leaf's ``.grad`` after it) stays hidden
until the learner predicts it or presses Show me; the verdict is the exercise
checkers' own diagnosis (a factor, a sign, a broadcast gradient not summed back, the
other input's gradient). The right answers are PyTorch's, computed in the same test.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.core import events
from workbench.exercises.diagnose import compare
from workbench.widgets import BackwardStepper

X = [0.5, -1.0, 2.0]
W = [1.5, -0.5, 0.25]


def tanh_times_w():
    """L = sum(tanh(x) * w): steps Sum, Mul, AccumulateGrad(w), Tanh, AccumulateGrad(x)."""
    events.reset_ids()
    x = wb.tensor(X, requires_grad=True, name="x")
    w = wb.tensor(W, requires_grad=True, name="w")
    return (wb.tanh(x) * w).sum(), x, w


def torch_tanh_times_w():
    """The same program in PyTorch: tanh(x), and the gradients of the product."""
    x = torch.tensor(X, requires_grad=True)
    w = torch.tensor(W, requires_grad=True)
    h = torch.tanh(x)
    h.retain_grad()
    (h * w).sum().backward()
    return h.detach().numpy(), h.grad.numpy(), x.grad.numpy(), w.grad.numpy()


@pytest.fixture
def stepper():
    loss, _, _ = tanh_times_w()
    made = BackwardStepper(loss, predict=True)
    yield made
    made.close()


def test_the_first_step_is_shown_with_its_result_hidden(stepper):
    assert stepper.step == 1 and stepper.hidden and stepper.score == (0, 0)
    assert "Step 1: SumBackward0" in stepper.question
    assert "predict it" in stepper.panel.value
    assert "1., 1., 1." not in stepper.panel.value  # what sum sends is not shown
    tail = stepper.picture.vertex_of(stepper.active)
    assert not any(key.startswith(f"{tail}->") for key in stepper.graph.captions)


def test_no_move_skips_the_question(stepper):
    assert stepper.slider.max == 1 and stepper.next_button.disabled
    assert not stepper.next() and stepper.step == 1
    assert not stepper.go(4) and stepper.step == 1
    assert "Step 1 first" in stepper.panel.value
    stepper.continue_()
    assert stepper.step == 1 and stepper.hidden


def test_a_right_prediction_reveals_the_step_and_scores():
    loss, _, w = tanh_times_w()
    stepper = BackwardStepper(loss, predict=True)
    h, h_grad, x_grad, w_grad = torch_tanh_times_w()
    verdict = stepper.predict(np.ones(3))
    assert verdict.right and verdict.counted, verdict.message
    assert stepper.score == (1, 1) and stepper.step == 1 and not stepper.hidden
    assert "predict it" not in stepper.panel.value
    assert not stepper.next_button.disabled and stepper.slider.max == 2
    assert stepper.next() and stepper.step == 2 and stepper.hidden
    verdict = stepper.predict([W, h])  # mul sends ȳ·w to tanh's node and ȳ·h to w
    assert verdict.right, verdict.message
    np.testing.assert_allclose(stepper.record.grads_out[0].value, h_grad, rtol=1e-6)
    assert stepper.next() and stepper.record.name == "AccumulateGrad"
    assert stepper.record.leaf.name == "w" and w.grad is None  # hidden: not in w.grad either
    assert stepper.predict(wb.tensor(w_grad)).right  # a leaf's question: its .grad after
    np.testing.assert_allclose(w.grad.numpy(), w_grad, rtol=1e-6)  # revealed: now it is
    assert stepper.score == (3, 3)
    stepper.close()


def test_a_factor_is_named_with_the_checkers_words(stepper):
    stepper.predict(np.ones(3))
    stepper.next()
    h = np.tanh(np.array(X, dtype=np.float32))
    verdict = stepper.predict([2 * np.array(W), h])
    assert not verdict.right and verdict.counted
    (finding,) = verdict.findings
    same = compare("your gradient for input 0 → TanhBackward0", np.array(W), 2 * np.array(W))
    assert finding.kind == same.kind == "factor"
    assert verdict.message == f"{same.sentences()} You have one more try before the step is shown."
    assert "2 times the expected value" in verdict.message
    assert stepper.score == (1, 1) and stepper.hidden  # one more try: still hidden
    again = stepper.predict([2 * np.array(W), h])
    assert again.message == f"{same.sentences()} Step 2 is shown now."
    assert stepper.score == (1, 2) and not stepper.hidden  # revealed after the second one


def test_a_sign_and_the_other_inputs_gradient(stepper):
    stepper.predict(np.ones(3))
    stepper.next()
    h = np.tanh(np.array(X, dtype=np.float32))
    verdict = stepper.predict([h, W])  # the two gradients swapped
    kinds = [f.kind for f in verdict.findings]
    assert kinds == ["swapped", "swapped"], verdict.message
    assert "is the gradient that your gradient for w should get" in verdict.message
    loss, _, _ = tanh_times_w()
    again = BackwardStepper(loss, predict=True)
    again.predict(np.ones(3))
    again.next()
    verdict = again.predict([-np.array(W), h])
    assert [f.kind for f in verdict.findings] == ["sign"]
    assert "wrong sign" in verdict.message
    again.close()


def test_a_broadcast_gradient_not_summed_back_is_named():
    events.reset_ids()
    a = wb.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True, name="a")
    b = wb.tensor([1.0, 2.0, 3.0], requires_grad=True, name="b")
    stepper = BackwardStepper((a * b).sum(), predict=True)
    stepper.predict(np.ones((2, 3)))
    stepper.next()
    ta, tb = (torch.tensor(v.detach().numpy(), requires_grad=True) for v in (a, b))
    (ta * tb).sum().backward()
    unsummed = np.broadcast_to(ta.detach().numpy(), (2, 3))  # ȳ·a before the collapse-sum
    verdict = stepper.predict([ta.grad.numpy(), unsummed])
    (finding,) = verdict.findings
    assert finding.kind == "shape" and finding.details["right_once_summed"]
    assert "collapse_sum_like(g, b)" in verdict.message
    assert "summed, its values are right" in verdict.message
    stepper.close()


def test_a_grad_replaced_not_added_to_is_named():
    loss, x, w = tanh_times_w()
    loss.backward()  # w.grad holds one gradient already
    first = w.grad.numpy().copy()
    again, _, _ = tanh_times_w()  # new leaves; reuse w of the first run
    events.reset_ids()
    h = wb.tanh(wb.tensor(X, requires_grad=True, name="x"))
    stepper = BackwardStepper((h * w).sum(), predict=True)
    stepper.show_me()
    stepper.next()
    stepper.show_me()
    stepper.next()
    assert stepper.record.leaf is not None and stepper.record.leaf.name == "w"
    verdict = stepper.predict(first)  # the incoming x̄ alone: backward adds into .grad
    assert [f.kind for f in verdict.findings] == ["not_accumulated"], verdict.message
    assert "Backward adds into .grad: w.grad was" in verdict.message
    stepper.show_me()
    np.testing.assert_allclose(w.grad.numpy(), 2 * first, rtol=1e-6)  # the step on show
    stepper.close()


def test_an_answer_it_cannot_read_leaves_the_step_hidden(stepper):
    stepper.predict(np.ones(3))
    stepper.next()
    for answer in ([1.0], "tanh", [np.ones(3), "w"], {"a": 1}):
        verdict = stepper.predict(answer)
        assert not verdict.counted and not verdict.right
        assert stepper.hidden and stepper.score == (1, 1)
    assert "has 2 inputs, and you gave 1 values" in stepper.predict([1.0]).message


def test_show_me_reveals_and_counts_as_asked(stepper):
    verdict = stepper.show_me()
    assert not verdict.right and stepper.score == (0, 1) and not stepper.hidden
    for _ in range(4):
        stepper.next()
        stepper.show_me()
    assert stepper.step == stepper.total == 5 and stepper.question == ""
    done = stepper.predict(1.0)
    assert not done.counted and "every step is shown" in done.message
    assert stepper.score == (0, 5) and stepper.check_button.disabled


def test_the_boxes_check_and_show_me_buttons(stepper):
    stepper.answer_box.value = "[1, 1, 1]"
    stepper.check_button.click()
    assert stepper.score == (1, 1) and "✔" in stepper.verdict_text.value
    stepper.next_button.click()
    stepper.answer_box.value = "__import__('os')"  # read as a name, never run
    stepper.check_button.click()
    assert stepper.score == (1, 1) and stepper.hidden
    stepper.show_me_button.click()
    assert stepper.score == (1, 2) and not stepper.hidden


def test_predicting_the_next_node():
    loss, x, _ = tanh_times_w()
    stepper = BackwardStepper(loss, predict="node")
    assert (
        stepper.step == 1
        and not stepper.hidden
        and "Which node runs at step 2" in (stepper.question)
    )
    assert not stepper.next() and stepper.step == 1
    assert stepper.predict("MulBackward0").right and stepper.step == 2
    early = stepper.predict("TanhBackward0")  # ready, but a leaf's node runs first
    assert not early.right and "A leaf's AccumulateGrad runs as soon as it is ready" in (
        early.message
    )
    assert stepper.step == 2 and early.tries_left == 1  # one more try
    stepper.predict("TanhBackward0")
    assert stepper.step == 3 and stepper.record.name == "AccumulateGrad"
    too_soon = stepper.predict(x)  # x's AccumulateGrad, before tanh sent it anything
    assert not too_soon.right and "it is not ready then" in too_soon.message
    unknown = stepper.predict("ExpBackward0")
    assert not unknown.counted and "no node of this graph" in unknown.message
    assert stepper.score == (1, 2)  # the guess about step 4 has one more try
    stepper.close()


def test_predict_on_a_saved_trace():
    with wb.trace() as trace:
        loss, _, _ = tanh_times_w()
        loss.backward()
    stepper = BackwardStepper(trace, predict=True)
    assert stepper.predict(np.ones(3)).right
    stepper.next()
    assert not stepper.predict([np.ones(3), np.ones(3)]).right
    stepper.close()


def test_a_wrong_predict_argument_is_a_clear_error():
    loss, _, _ = tanh_times_w()
    with pytest.raises(ValueError, match="predict must be True"):
        BackwardStepper(loss, predict="gradients")
    plain = BackwardStepper(loss)
    assert not plain.predict(1.0).counted and plain.score == (0, 0)
    plain.close()


def tanh_step(x) -> BackwardStepper:
    """A predicting stepper on (tanh(x) * 2).sum(), at tanh's node (step 3)."""
    stepper = BackwardStepper((wb.tanh(x) * 2).sum(), predict=True)
    for _ in range(2):
        stepper.show_me()
        stepper.next()
    return stepper


def test_a_big_gradient_is_predicted_by_its_shape_and_a_few_elements():
    events.reset_ids()
    x = wb.tensor(np.linspace(-1, 1, 60).reshape(6, 10), requires_grad=True, name="x")
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    (torch.tanh(tx) * 2).sum().backward()
    right = tx.grad.numpy()
    stepper = tanh_step(x)
    assert stepper.record.name == "TanhBackward0"
    assert "{'shape': (64, 10), (0, 3): 0.25}" in stepper.question
    verdict = stepper.predict({"shape": (6, 10), (0, 0): right[0, 0], (5, 9): right[5, 9]})
    assert verdict.right, verdict.message
    stepper.close()
    for answer, words in [
        ({"shape": (10, 6)}, "has shape (10, 6) where (6, 10) was expected"),
        ({(2, 3): 2 * right[2, 3]}, "your gradient for x[2, 3] is"),
    ]:
        again = tanh_step(x)
        verdict = again.predict(answer)
        assert not verdict.right and verdict.counted and words in verdict.message, verdict.message
        again.close()


@pytest.mark.parametrize(
    "answer, words",
    [
        ({(6, 0): 1.0}, "element [6, 0], which a gradient of shape (6, 10) has not"),
        ({"shape": (10**12, 10**12)}, "names a shape (1000000000000, 1000000000000), far bigger"),
        ({"rows": 1.0}, "a key 'rows'"),
        ({(0, 0): [1.0, 2.0]}, "one number"),
    ],
)
def test_a_glimpse_that_names_no_element_of_the_gradient_is_said_plainly(answer, words):
    events.reset_ids()
    stepper = tanh_step(wb.tensor(np.ones((6, 10)), requires_grad=True, name="x"))
    verdict = stepper.predict(answer)
    assert words in verdict.message, verdict.message
    stepper.close()
