"""The stepper reads well: an exact "Step k of N", and a picture that shows what flows.

- N is known before the first step and equals the number of steps the engine really
  takes, on graphs with unused outputs, hooks, retain_grad, fan-out, and every
  registry sample.
- The gradient that just moved is written on its edge; a collapse-sum lights up with
  its axes; a leaf fills in once its .grad arrives; a folded box shows "k of m run".
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from programs import sample_program
from samples import all_samples

import workbench as wb
from tests.helpers import dot_vertices
from tests.test_widgets import node_of, small_graph
from workbench.viz.fold import OPEN_LIMIT
from workbench.widgets import BackwardStepper
from workbench.widgets.flow_marks import flow_text
from workbench.widgets.panel import STYLE
from workbench.widgets.steps import LiveSteps, StepCursor


def unused_output_graph():
    """chunk makes two pieces; only one reaches the loss. A side result is never used."""
    x = wb.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    first, _second = x.chunk(2)
    _side = x * 3  # not part of the loss's graph
    return (first * first).sum()


def hooked_graph():
    x = wb.tensor([1.0, -2.0, 3.0], requires_grad=True)
    h = x.exp()
    h.register_hook(lambda g: g * 2)
    y = h * x
    y.retain_grad()
    return (y + h).sum()


def fan_out_graph():
    x = wb.tensor([0.5, 1.5], requires_grad=True)
    a = x.sin()
    return (a * a + a.exp() + x).sum()


GRAPHS = {
    "small": lambda: small_graph()[0],
    "unused outputs": unused_output_graph,
    "hooks and retain_grad": hooked_graph,
    "fan-out": fan_out_graph,
}


def steps_taken(loss) -> tuple[int, int]:
    """(N predicted before the first step, steps the engine really ran)."""
    source = LiveSteps(loss)
    predicted = source.expected_steps
    StepCursor(source)
    source.load_all()
    return predicted, len(source.records)


@pytest.mark.parametrize("make", GRAPHS.values(), ids=GRAPHS.keys())
def test_the_step_count_is_known_before_the_first_step(make):
    predicted, ran = steps_taken(make())
    assert predicted == ran


# comparisons, argmax and the like give nothing to differentiate: no graph to step through
DIFFERENTIABLE = [s for s in all_samples() if sample_program(s)[1]]


@pytest.mark.parametrize("sample", DIFFERENTIABLE, ids=lambda s: s.name)
def test_the_step_count_is_exact_for_every_registry_sample(sample):
    _, outputs, output_grads = sample_program(sample)
    loss = sum((o * g).sum() for o, g in zip(outputs, output_grads))
    if loss.dtype.kind == "c":
        loss = loss.real  # backward() starts from a real number
    predicted, ran = steps_taken(loss)
    assert predicted == ran


def test_titles_run_from_step_1_of_n_to_step_n_of_n():
    loss, *_ = small_graph()
    n = steps_taken(small_graph()[0])[1]
    stepper = BackwardStepper(loss)
    titles = [re.search(r"Step \d+ of \d+", stepper.panel.value).group()]
    while stepper.next():
        titles.append(re.search(r"Step \d+ of \d+", stepper.panel.value).group())
    assert titles == [f"Step {k} of {n}" for k in range(1, n + 1)]
    assert stepper.slider.max == n and stepper.slider.value == n
    assert "~" not in stepper.panel.value


def test_arrays_in_the_panel_never_wrap_inside_a_word():
    rule = re.search(r"\.wb-panel pre\.wb-array, \.wb-table pre\.wb-array \{[^}]*\}", STYLE)
    rule = rule.group()  # every panel (the forward stepper's too), not only the step table
    assert "white-space: pre;" in rule and "word-break: normal" in rule


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (np.array(0.25), "0.25"),
        (np.array([1.0, -2.0]), "[1, -2]"),
        (np.array([0.0421, -0.483, 0.0237]), "[0.0421, -0.483, 0.0237]"),
        (np.array([0.32, 0.101, -0.0316, -0.0831]), "‖g‖=0.347"),  # too long to list
        (np.ones((2, 3)), "‖g‖=2.45"),  # the shape is on the edge's label, above it
        (None, ""),
        ("shape (500,) float32: min -1, max 2, mean 0.1, std 0.5", "mean 0.1"),
        ("shape (500,) float32: min None", ""),
    ],
)
def test_flow_text_is_a_number_a_few_values_or_the_norm(value, text):
    assert flow_text(value) == text


def test_the_gradient_that_moved_is_written_on_its_edge():
    loss, x, w, b = small_graph()
    stepper = BackwardStepper(loss)
    mul = loss.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0]
    stepper.run_to(mul)
    to_x = stepper.record.grads_out[0].value
    expected = flow_text(to_x)
    assert stepper.graph.captions[f"{mul.uid}->{node_of(x).uid}"] == expected
    assert expected.startswith("‖g‖=")
    assert float(expected.split("=")[1]) == pytest.approx(np.linalg.norm(to_x), rel=1e-2)
    # w was broadcast: its gradient goes through the collapse-sum vertex, summed to (3,)
    summed = f"{mul.uid}.sum1"
    assert stepper.graph.captions[f"{summed}->{node_of(w).uid}"] == flow_text(
        stepper.record.grads_out[1].value
    )
    assert "collapse-active" in stepper.graph.classes[summed]
    assert stepper.graph.captions[f"{mul.uid}->{summed}"] == "before Σ"
    assert summed not in stepper.graph.captions  # its box names the axes: "Σ over axes (0,)"


def test_the_collapse_sum_lights_only_in_the_step_it_runs():
    loss, x, w, b = small_graph()
    stepper = BackwardStepper(loss)
    add = loss.grad_fn.next_functions[0][0].next_functions[0][0]
    stepper.run_to(add)
    summed = f"{add.uid}.sum1"  # b is a scalar: the gradient is summed over (0, 1)
    assert summed in dot_vertices(stepper.graph.dot)
    assert "collapse-active" in stepper.graph.classes[summed]
    assert re.search(rf'"{re.escape(summed)}" \[[^\n]*Σ over axes \(0, 1\)', stepper.graph.dot)
    stepper.next()
    assert "collapse-active" not in stepper.graph.classes.get(summed, "")


def test_a_leaf_fills_in_when_its_grad_arrives_and_empties_when_rewound():
    loss, x, w, b = small_graph()
    stepper = BackwardStepper(loss)
    leaf = node_of(b).uid
    assert leaf not in stepper.graph.classes
    stepper.run_to(b)
    assert stepper.graph.classes[leaf].split() == ["has-grad", "grad-filled"]
    assert stepper.graph.captions[leaf] == f"b.grad {flow_text(b.grad.numpy())}"
    assert stepper.graph.captions[leaf] == "b.grad 0.4487"
    stepper.next()
    assert stepper.graph.classes[leaf] == "has-grad"  # still filled, no longer the news
    stepper.reset()
    assert leaf not in stepper.graph.classes and leaf not in stepper.graph.captions


def test_a_folded_box_shows_its_progress_and_step_over_leaves_it():
    x = wb.tensor([0.5], requires_grad=True)
    y = x
    for _ in range(299):
        y = (y * 1.001).tanh()
    stepper = BackwardStepper(y.sum())
    total = stepper.cursor.source.expected_steps
    box, inside = next((v, steps) for v, steps in stepper.marks.steps_of.items() if len(steps) > 1)
    assert stepper.picture.kinds[box] == "fold"
    stepper.go(inside[0] + 1)  # steps_of holds places in the list of records; steps count from 1
    assert stepper.graph.active == box and stepper.active != box
    assert stepper.graph.captions[box] == f"1 of {len(inside)} run"
    stepper.next()
    assert stepper.graph.captions[box] == f"2 of {len(inside)} run"
    stepper.step_over()
    assert stepper.graph.active != box
    assert stepper.step == inside[-1] + 2  # the first step after the box
    assert total == len(stepper.graph.step_nodes) - 1  # slot 0 unused: steps count from 1


def test_the_node_picker_lists_a_few_and_the_filter_finds_the_rest():
    x = wb.tensor([0.5], requires_grad=True, name="x")
    y = x
    for _ in range(500):
        y = y * 1.001
    stepper = BackwardStepper(y.sum())
    assert len(stepper.node_picker.options) <= 40
    assert "+" in stepper.node_filter.description
    listed = dict(stepper.node_picker.options)  # as the picture names them, no node id
    assert all(stepper.names[uid] == label for label, uid in listed.items()), listed
    assert "MulBackward0 (the 500th mul)" in listed  # the last made, the first to run
    stepper.node_filter.value = "the 300th mul"  # found by the words the picture shows
    labels = [label for label, _ in stepper.node_picker.options]
    assert labels == ["MulBackward0 (the 300th mul)"]
    stepper.node_filter.value = "leaf x"  # and still by the engine's words
    labels = [label for label, _ in stepper.node_picker.options]
    assert labels == ["AccumulateGrad (x)"]
    stepper.run_to_button.click()
    assert stepper.active == node_of(x).uid
    assert stepper.step == stepper.cursor.source.expected_steps


def test_a_big_graph_labels_shapes_not_values_and_says_so():
    x = wb.tensor([0.5, 0.25], requires_grad=True, name="x")
    y = x
    for _ in range(700):
        y = y * 1.001
    model = wb.viz.build_model(y.sum(), "backward")
    leaf = model.vertices[node_of(x).uid]
    assert leaf.lines == ["AccumulateGrad", "x", "(2,) float32"]
    assert any("labels show shapes, not values" in note for note in model.notes)
    small = wb.viz.build_model((x * 2).sum(), "backward")
    assert "[0.5 , 0.25]" in small.vertices[node_of(x).uid].lines


def tanh_chain(length: int = 300):
    x = wb.tensor([0.5], requires_grad=True, name="x")
    y = x
    for _ in range(length):
        y = (y * 1.001).tanh()
    return y.sum()


def test_a_folded_box_opens_on_click_into_parts_then_nodes_and_folds_again():
    stepper = BackwardStepper(tanh_chain())
    first_dot = stepper.graph.dot
    stepper.go(101)
    box = stepper.graph.active
    assert stepper.picture.kinds[box] == "fold" and box != stepper.active
    stepper.graph.selected = box  # a click on the box
    assert box not in stepper.picture.members  # it opened
    part = stepper.graph.active  # the innermost visible box now holding the node
    assert stepper.picture.kinds[part] == "fold" and part.startswith("open0.part")
    assert len(stepper.picture.members[part]) <= 2 * OPEN_LIMIT  # nodes + saved
    assert stepper.graph.captions[part].endswith("run")
    assert "opened" in stepper.graph.classes[part]
    stepper.graph.selected = part  # open the part: its nodes are drawn one by one
    assert stepper.graph.active == stepper.active
    assert f'"{stepper.active}" [' in stepper.graph.dot
    stepper.fold_button.click()  # nothing selected: the last opened box folds again
    assert stepper.graph.active == part
    stepper.close_box()
    assert stepper.graph.active == box and stepper.graph.dot == first_dot
    assert stepper.fold_button.disabled


def test_closing_a_box_closes_the_boxes_opened_inside_it():
    stepper = BackwardStepper(tanh_chain())
    stepper.go(101)
    box = stepper.graph.active
    stepper.open_box(box)
    stepper.open_box(stepper.graph.active)
    assert len(stepper.opened) == 2
    stepper.close_box(stepper.active)  # the innermost box holding the node: the part
    assert len(stepper.opened) == 1
    stepper.open_box(stepper.graph.active)
    outer = max(stepper.opened, key=len)
    stepper.opened.sort(key=len)  # whatever the order, closing the outer closes both
    stepper.close_box(next(iter(outer - stepper.opened[0])))
    assert stepper.opened == [] and stepper.graph.active == box


def test_picking_a_folded_node_inspects_it_without_opening_its_box():
    stepper = BackwardStepper(tanh_chain())
    stepper.go(101)
    box = stepper.graph.active
    stepper.inspect(stepper.active)
    assert stepper.opened == [] and stepper.graph.selected == box
    assert "Inspecting" in stepper.inspector.value


@pytest.mark.parametrize("view", ["backward", "both"])
def test_a_value_shows_on_a_node_only_from_the_step_that_delivers_it(view):
    """A second pass over a kept graph: before its steps deliver them, the leaves' labels
    must not show the first pass's .grad, and each .grad caption is the one accumulated."""
    x = wb.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True, name="x")
    w = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="w")
    loss = wb.sigmoid(x * w).sum()
    loss.backward(retain_graph=True)
    first = {t.name: t.grad.numpy().copy() for t in (x, w)}
    stepper = BackwardStepper(loss, view=view)
    delivered = {}  # leaf name -> the step whose AccumulateGrad fills it
    for step in range(1, stepper.total + 1):
        stepper.go(step)
        if stepper.record.leaf is not None:
            delivered[stepper.record.leaf.name] = step
        pictures = [stepper.graph.dot]
        if stepper.forward_graph is not None:
            pictures.append(stepper.forward_graph.dot)
        labels = [label for dot in pictures for label in re.findall(r'label="([^"]*)"', dot)]
        assert not any("grad " in label for label in labels), labels
        captions = stepper.graph.captions.values()
        shown = {text.split(".grad")[0] for text in captions if ".grad" in text}
        assert shown == set(delivered), (step, shown)  # from the delivering step on, not before
    assert set(delivered) == {"x", "w"}
    assert (stepper.forward_graph is not None) == (view == "both")
    np.testing.assert_allclose(w.grad.numpy(), 2 * first["w"], rtol=1e-6)  # accumulated
    assert stepper.graph.captions[node_of(w).uid] == f"w.grad {flow_text(w.grad.numpy())}"
    stepper.close()


def caption_slots(dot: str) -> dict:
    """Caption key (``"tail->head"`` or a vertex id) -> the width of the blank slot its
    DOT keeps for the caption (see :mod:`workbench.viz.captions`)."""
    found = {}
    for line in dot.splitlines():
        width = re.search(r'WIDTH="(\d+)" HEIGHT="\d+" BGCOLOR="transparent" ID="wb-slot-', line)
        if width:
            edge = re.match(r'\s*"([^"]+)" -> "([^"]+)"', line)
            key = f"{edge[1]}->{edge[2]}" if edge else re.match(r'\s*"([^"]+)" \[', line)[1]
            found[key] = int(width[1])
    return found


def mlp_graph():
    """Matrices, bias vectors of 4 and 2, a mean: gradients listed, or given by their norm."""
    rng = np.random.default_rng(0)
    h = wb.tensor(rng.normal(0, 1, (5, 3)), name="X")
    for i, (m, n) in enumerate([(3, 4), (4, 4), (4, 2)], start=1):
        weight = wb.tensor(rng.normal(0, 0.5, (m, n)), requires_grad=True, name=f"W{i}")
        bias = wb.tensor(rng.normal(0, 0.5, n), requires_grad=True, name=f"b{i}")
        h = wb.tanh(h @ weight + bias)
    return (h**2).mean()


def folded_chain():
    x = wb.tensor([0.5], requires_grad=True, name="x")
    y = x
    for _ in range(299):
        y = (y * 1.001).tanh()
    return y.sum()


@pytest.mark.parametrize(
    "make", [lambda: small_graph()[0], mlp_graph, folded_chain], ids=["small", "mlp", "folded"]
)
def test_every_caption_has_a_slot_in_the_layout_as_wide_as_its_text(make):
    """Captions are laid out with the graph: at every step, each one the stepper writes
    has a blank slot in the DOT, kept for it before the first step, wide enough for it
    with room to spare; the DOT never changes from step to step."""
    from workbench.viz.captions import text_width
    from workbench.viz.dot import SLOT_PAD

    stepper = BackwardStepper(make())
    dot = stepper.graph.dot
    slots = caption_slots(dot)
    seen = 0
    while True:
        for key, text in stepper.graph.captions.items():
            assert key in slots, (key, text)
            spare = SLOT_PAD if "->" in key else 2 * SLOT_PAD  # after it; at its sides in a box
            assert text_width(text) + spare <= slots[key], (key, text, slots[key])
            seen += 1
        if not stepper.next():
            break
    assert stepper.graph.dot == dot
    assert seen > 5
