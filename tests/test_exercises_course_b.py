"""The checks of lessons 5–9: right answers pass, each usual mistake gets its diagnosis."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

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
)
from workbench.utils.checkpoint import checkpoint_sequential


def message(check, answer) -> str:
    with pytest.raises(ExerciseError) as caught:
        check(answer)
    return str(caught.value)


# ------------------------------------------------------------------ checkpointing
def run_step(layers, x, segments):
    checkpoint_sequential(layers, segments, x, use_reentrant=False).sum().backward()


def peak_saved(layers, x, segments):
    start = wb.autograd.saved_memory().current
    wb.autograd.reset_peak_saved_memory()
    run_step(layers, x, segments)
    return wb.autograd.saved_memory().peak - start


def test_a_right_measurement_passes():
    assert check_peak_measure(peak_saved)


def counts_what_was_held_before(layers, x, segments):
    wb.autograd.reset_peak_saved_memory()
    run_step(layers, x, segments)
    return wb.autograd.saved_memory().peak


def no_reset(layers, x, segments):
    start = wb.autograd.saved_memory().current
    run_step(layers, x, segments)
    return wb.autograd.saved_memory().peak - start


def reads_current(layers, x, segments):
    start = wb.autograd.saved_memory().current
    run_step(layers, x, segments)
    return wb.autograd.saved_memory().current - start


@pytest.mark.parametrize(
    "wrong, words",
    [
        (counts_what_was_held_before, "Subtract saved_memory().current"),
        (no_reset, "reset_peak_saved_memory()"),
        (reads_current, "read saved_memory().peak, not .current"),
    ],
)
def test_a_wrong_measurement_is_named(wrong, words):
    wb.autograd.reset_peak_saved_memory()
    assert words in message(check_peak_measure, wrong)


def segments_for(budget, layers, x):
    for segments in range(1, len(layers) + 1):
        if peak_saved(layers, x, segments) <= budget:
            return segments
    return None


def test_a_right_plan_passes():
    passed = check_segments(segments_for)
    assert "√12" in passed.proof


def test_the_least_peak_is_not_at_the_most_segments():
    layers, x = wb.exercises.segment_budget.network()
    peaks = [peak_saved(layers, x, s) for s in range(1, len(layers) + 1)]
    best = int(np.argmin(peaks)) + 1
    assert 2 < best < len(layers) and peaks[-1] > min(peaks)


def test_a_plan_over_budget_is_named():
    def two_at_most(budget, layers, x):
        found = segments_for(budget, layers, x)
        return None if found is None else min(found, 2)

    text = message(check_segments, two_at_most)
    assert "you chose 2 segments" in text and "over the budget. 3 segments fit" in text


def test_a_plan_with_more_recomputation_than_needed_is_named():
    def least_peak(budget, layers, x):
        if segments_for(budget, layers, x) is None:
            return None
        return min(range(1, len(layers) + 1), key=lambda s: peak_saved(layers, x, s))

    assert "return the fewest segments that fit" in message(check_segments, least_peak)


def test_a_plan_for_an_impossible_budget_wants_none():
    def never_none(budget, layers, x):
        return segments_for(budget, layers, x) or 1

    assert "no segment count fits" in message(check_segments, never_none)


# ------------------------------------------------------------------ higher order
def hvp(f, x, v):
    (g,) = wb.autograd.grad(f(x), x, create_graph=True)
    (hv,) = wb.autograd.grad((g * v).sum(), x)
    return hv


def test_a_right_hvp_passes():
    assert check_hvp(hvp)


def test_an_hvp_without_create_graph_is_named():
    def no_graph(f, x, v):
        (g,) = wb.autograd.grad(f(x), x)
        return wb.autograd.grad((g * v).sum(), x)[0]

    text = message(check_hvp, no_graph)
    assert "without create_graph=True" in text and "Traceback" not in text


def test_an_hvp_that_returns_the_gradient_is_named():
    def gradient_only(f, x, v):
        return wb.autograd.grad(f(x), x)[0]

    assert "the gradient g = ∇f(x) itself" in message(check_hvp, gradient_only)


def test_an_hvp_that_forgets_v_is_named():
    def ones(f, x, v):
        (g,) = wb.autograd.grad(f(x), x, create_graph=True)
        return wb.autograd.grad(g.sum(), x)[0]

    assert "the Hessian times ones" in message(check_hvp, ones)


def test_an_hvp_that_stops_at_the_directional_derivative_is_named():
    def directional(f, x, v):
        (g,) = wb.autograd.grad(f(x), x, create_graph=True)
        return (g * v).sum()

    assert "differentiate it again" in message(check_hvp, directional)


def jacobian(f, x):
    y = f(x)
    rows = []
    for i in range(y.numel()):
        onehot = wb.zeros(y.numel(), dtype=y.dtype)
        onehot[i] = 1.0
        (row,) = wb.autograd.grad(y, x, onehot.reshape(y.shape), retain_graph=True)
        rows.append(row)
    return wb.stack(rows).reshape(*y.shape, *x.shape)


def test_a_right_jacobian_passes():
    assert check_jacobian(jacobian)


def test_a_jacobian_that_is_the_gradient_of_the_sum_is_named():
    def summed(f, x):
        return wb.autograd.grad(f(x).sum(), x)[0]

    assert "the gradient of f(x).sum()" in message(check_jacobian, summed)


def test_a_jacobian_whose_rows_accumulate_is_named():
    def accumulating(f, x):
        y = f(x)
        rows = []
        for i in range(y.numel()):
            onehot = np.zeros(y.numel())
            onehot[i] = 1.0
            y.backward(wb.tensor(onehot.reshape(y.shape)), retain_graph=True)
            rows.append(x.grad.clone())
        return wb.stack(rows).reshape(*y.shape, *x.shape)

    assert "x.grad kept adding up" in message(check_jacobian, accumulating)


def test_a_jacobian_that_frees_the_graph_is_named():
    def freed(f, x):
        y = f(x)
        rows = [wb.autograd.grad(y[i], x)[0] for i in range(y.shape[0])]
        return wb.stack(rows)

    assert "retain_graph=True" in message(check_jacobian, freed)


def test_a_transposed_jacobian_is_wrong():
    def transposed(f, x):
        return jacobian(f, x).T if x.ndim == 1 else jacobian(f, x)

    text = message(check_jacobian, transposed)
    assert "shape (3, 2) where (2, 3) was expected" in text


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
