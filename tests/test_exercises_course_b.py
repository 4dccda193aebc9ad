"""The checks of lessons 5–9: right answers pass, each usual mistake gets its diagnosis."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from test_catalogue_course_c import peak_saved

import workbench as wb
from workbench.exercises import (
    ExerciseError,
    NotAnswered,
    check_avg_pool_backward,
    check_cross_entropy_grad,
    check_hvp,
    check_jacobian,
    check_peak_measure,
    check_segments,
    check_take_backward,
    higher_order,
    segment_budget,
)


def message(check, answer) -> str:
    with pytest.raises(ExerciseError) as caught:
        check(answer)
    return str(caught.value)


# ------------------------------------------------------------------ checkpointing
# The mistakes learners make in lessons 5, 6 and 7, and right answers written other ways,
# are in tests/test_catalogue_course_c.py; here, what the checks rest on.
def segments_for(budget, layers, x):
    for segments in range(1, len(layers) + 1):
        if peak_saved(layers, x, segments) <= budget:
            return segments
    return None


def test_a_right_plan_passes_and_says_where_the_least_memory_is():
    passed = check_segments(segments_for)
    assert "√12" in passed.proof


def test_the_least_peak_is_not_at_the_most_segments():
    layers, x = segment_budget.network()
    peaks = [peak_saved(layers, x, s) for s in range(1, len(layers) + 1)]
    best = int(np.argmin(peaks)) + 1
    assert 2 < best < len(layers) and peaks[-1] > min(peaks)


def test_the_funnel_networks_peak_comes_in_backward():
    """What lets the check tell a measurement of the forward pass alone from a whole step."""
    layers, x = segment_budget.funnel_network()
    with segment_budget.steady_memory():
        whole = segment_budget.measured_peak(layers, x, segment_budget.FUNNEL_SEGMENTS)
        forward = segment_budget.measured_peak(
            layers, x, segment_budget.FUNNEL_SEGMENTS, backward=False
        )
    assert whole > forward > 0


def test_the_uniform_networks_peak_comes_at_the_end_of_forward():
    """Lesson 5's words: in backward one segment's recomputed activations are held at a
    time, which is less than the end of the forward pass holds."""
    layers, x = segment_budget.network()
    with segment_budget.steady_memory():
        for segments in segment_budget.PEAK_COUNTS:
            whole = segment_budget.measured_peak(layers, x, segments)
            assert whole == segment_budget.measured_peak(layers, x, segments, backward=False)


def test_the_bigger_peak_left_before_a_call_is_bigger_than_any_step():
    layers, x = segment_budget.network()
    with segment_budget.steady_memory():
        peaks = [segment_budget.measured_peak(layers, x, s) for s in range(1, 13)]
        start = wb.autograd.saved_memory().current
        assert segment_budget.leave_a_bigger_peak(layers, x) - start > max(peaks)
        assert wb.autograd.saved_memory().current == start  # the graph is gone


def test_two_budgets_equal_a_peak_so_that_a_strict_comparison_shows():
    """The budgets of check_segments include peaks themselves: ``<`` in place of ``<=``
    gives another answer there."""
    layers, x = segment_budget.network()
    with segment_budget.steady_memory():
        peaks = {s: segment_budget.measured_peak(layers, x, s) for s in range(1, 13)}
    strict = {
        b: segment_budget.fewest_that_fit(peaks, b, lambda peak, budget: peak < budget)
        for b in (peaks[1], min(peaks.values()))
    }
    assert strict == {peaks[1]: 2, min(peaks.values()): None}


# ------------------------------------------------------------------ higher order
def test_the_jacobian_checks_first_function_is_not_square():
    """A transposed Jacobian shows as a shape on it (the softmax's is symmetric)."""
    name, f, x = higher_order.vector_functions()[0]
    x = wb.tensor(x, dtype=wb.float64)
    assert tuple(f(x).shape) != tuple(x.shape)


# ------------------------------------------------------------------ backward ops
# Each mistake's diagnosis, and right answers written other ways: the misconception
# catalogue, tests/test_catalogue_course_d.py. Here: what a pass and a failure carry.
def avg_pool2d_backward(output_grad, data, pool_size):
    k = pool_size
    g = output_grad.numpy() / (k * k)
    x_bar = np.zeros(data.shape)
    oh, ow = g.shape[-2:]
    x_bar[..., : oh * k, : ow * k] = g.repeat(k, axis=-2).repeat(k, axis=-1)
    return x_bar


def test_a_right_avg_pool_backward_passes_and_says_what_it_proved():
    result = check_avg_pool_backward(avg_pool2d_backward)
    assert result.headline == "Your average pooling backward is right."
    assert "ȳ / k²" in result.proof


def test_a_wrong_avg_pool_backward_shows_the_exact_expected_values():
    """The heat map shows the backward operator's values, not finite differences' noise."""

    def undivided(output_grad, data, pool_size):
        return avg_pool2d_backward(output_grad, data, pool_size) * pool_size**2

    with pytest.raises(ExerciseError) as caught:
        check_avg_pool_backward(undivided)
    err = caught.value
    rng = np.random.default_rng(0)  # the check's first case, made again
    x = wb.tensor(rng.standard_normal((1, 1, 4, 4)))
    upstream = wb.tensor(rng.standard_normal((1, 1, 2, 2)))
    exact = avg_pool2d_backward(upstream, x, 2)
    assert np.array_equal(err.expected, exact)
    assert np.array_equal(err.got, exact * 4) and err.wrong.all()


def take_backward(output_grad, x, indices):
    x_bar = np.zeros(x.numel())
    np.add.at(x_bar, indices.numpy().reshape(-1), output_grad.numpy().reshape(-1))
    return x_bar.reshape(x.shape)


def test_a_right_take_backward_passes_and_says_what_it_proved():
    result = check_take_backward(take_backward)
    assert result.headline == "Your take backward is right."
    assert "scatter-add" in result.proof


def test_a_take_backward_that_assigns_lights_the_repeated_index_alone():
    def assigns(output_grad, x, indices):
        x_bar = np.zeros(x.numel())
        x_bar[indices.numpy().reshape(-1)] = output_grad.numpy().reshape(-1)
        return x_bar.reshape(x.shape)

    with pytest.raises(ExerciseError) as caught:
        check_take_backward(assigns)
    assert caught.value.wrong.tolist() == [False, False, False, True, False]  # index 3, twice


# ------------------------------------------------------------------ cross-entropy
def cross_entropy_grad(logits, labels):
    p = logits.softmax(1)
    onehot = np.eye(logits.shape[1])[labels.numpy()]
    return (p - wb.tensor(onehot)) / logits.shape[0]


def test_a_right_cross_entropy_gradient_passes_and_says_what_it_proved():
    result = check_cross_entropy_grad(cross_entropy_grad)
    assert result.headline == "Your cross-entropy gradient is right."
    assert "(softmax(z) − onehot(labels)) / N" in result.proof


def test_a_cross_entropy_gradient_in_float32_passes():
    """Right to float32's accuracy (finite differences' tolerance): still right."""

    def in_float32(z, t):
        return cross_entropy_grad(z.float(), t)

    assert check_cross_entropy_grad(in_float32)


def test_the_checks_own_messages_name_the_first_batch_that_fails():
    def summed(z, t):
        return cross_entropy_grad(z, t) * z.shape[0]

    text = message(check_cross_entropy_grad, summed)
    assert text.startswith("With logits of shape (4, 3) and labels [0, 2, 1, 2],")


# ------------------------------------------------------------------ unanswered
def not_yet(*args):
    raise NotImplementedError()


@pytest.mark.parametrize(
    "check",
    [
        check_peak_measure,
        check_segments,
        check_hvp,
        check_jacobian,
        check_avg_pool_backward,
        check_take_backward,
        check_cross_entropy_grad,
    ],
)
def test_an_unanswered_exercise_is_not_answered_yet_in_a_short_message(check):
    """The student version of a lesson (``raise NotImplementedError()`` in place of the
    solution) is not answered yet: a short message that says what to do, no traceback."""
    with pytest.raises(NotAnswered) as caught:
        check(not_yet)
    text = str(caught.value)
    assert text.startswith("Not answered yet") and "# YOUR CODE HERE" in text
    assert "Traceback" not in text and len(text) < 300


# ------------------------------------------------------------------ the lessons
LESSONS = Path(__file__).resolve().parent.parent / "lessons"
COURSE_B = {
    "05_checkpointing.ipynb": "05-checkpointing",
    "06_custom_functions_and_gradcheck.ipynb": "06-custom-functions",
    "07_higher_order_gradients.ipynb": "07-higher-order",
    "08_convolution_and_pooling.ipynb": "08-conv-pool",
    "09_training_a_network.ipynb": "09-training",
}


@pytest.mark.parametrize("name", sorted(COURSE_B))
def test_each_exercise_is_a_solution_cell_then_its_graded_check(name):
    cells = json.loads((LESSONS / name).read_text())["cells"]
    graded = [c for c in cells if c["metadata"].get("nbgrader")]
    solutions = [c for c in graded if c["metadata"]["nbgrader"]["solution"]]
    checks = [c for c in graded if c["metadata"]["nbgrader"]["grade"]]
    assert len(solutions) == len(checks) >= 2
    for cell in graded:
        assert cell["metadata"]["nbgrader"]["grade_id"].startswith(COURSE_B[name] + "-")
    for solution in solutions:
        source = "".join(solution["source"])
        assert "### BEGIN SOLUTION" in source and "### END SOLUTION" in source
        following = cells[cells.index(solution) + 1]
        meta = following["metadata"]["nbgrader"]
        assert meta["grade"] and meta["locked"] and meta["points"] > 0
        assert meta["grade_id"] == solution["metadata"]["nbgrader"]["grade_id"] + "-check"
    first = "".join(cells[0]["source"])
    last = "".join([c for c in cells if c["cell_type"] == "markdown"][-1]["source"])
    assert "What you will learn" in first and "Read it in the source" in last


def test_grade_ids_are_unique_across_these_lessons():
    ids = [
        c["metadata"]["nbgrader"]["grade_id"]
        for name in COURSE_B
        for c in json.loads((LESSONS / name).read_text())["cells"]
        if c["metadata"].get("nbgrader")
    ]
    assert len(ids) == len(set(ids)) >= 20


@pytest.mark.parametrize("name", sorted(COURSE_B))
def test_the_source_pointers_name_files_and_functions_that_exist(name):
    """Every `workbench/....py` named in a lesson exists, and each `name` after it in the
    same bullet is defined in it (a def, a class or a method)."""
    root = LESSONS.parent
    text = "".join("".join(c["source"]) for c in json.loads((LESSONS / name).read_text())["cells"])
    items = text.replace("\n  ", " ").splitlines()  # a bullet's continued lines joined
    lines = [line for line in items if "`workbench/" in line]
    assert lines
    for line in lines:
        pieces = re.split(r"`(workbench/[\w/]+\.py)`", line)  # text, path, text, path, text
        for path, after in zip(pieces[1::2], pieces[2::2]):
            source = (root / path).read_text()
            for function in re.findall(r"`(\w+(?:\.\w+)?)`", after):
                last = function.split(".")[-1]
                assert re.search(rf"(def|class) {last}\b", source), f"{function} not in {path}"
