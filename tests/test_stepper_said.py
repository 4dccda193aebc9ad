"""What the stepper says agrees with what it shows (issue 39, point 3)."""

from __future__ import annotations

import re

import pytest
from test_compare_stepper import square_function

import workbench as wb
from workbench.widgets import BackwardStepper, CompareStepper, ForwardStepper, TwoModes


def small_pass():
    x = wb.tensor([0.5, -1.0, 2.0], requires_grad=True, name="x")
    w = wb.tensor([1.5, 0.5, -0.25], requires_grad=True, name="w")
    return wb.sigmoid(w * x).sum()


def test_going_back_after_running_to_the_end_drops_the_end_note():
    """Lesson 1 runs to the end, then shows step 2: the panel said "Step 2 of 7" and
    "ran to the end of the backward pass" at once."""
    stepper = BackwardStepper(small_pass())
    stepper.continue_()
    assert "ran to the end" in stepper.panel.value
    assert stepper.go(2) and stepper.step == 2
    assert "ran to the end" not in stepper.panel.value.lower()
    stepper.slider.value = 3
    assert "ran to the end" not in stepper.panel.value.lower()
    stepper.close()


def test_a_move_that_has_something_to_say_still_says_it():
    stepper = BackwardStepper(small_pass())
    stepper.go(stepper.total)
    assert not stepper.next()
    assert "the backward pass is done" in stepper.panel.value
    stepper.go(1)
    assert not stepper.prev() and "This is the first step." in stepper.panel.value
    stepper.close()


def labels(picture) -> str:
    return "\n".join("\n".join(v.lines) for v in picture.model.vertices.values())


def test_a_tensor_the_learner_did_not_name_is_called_after_the_op_that_made_it():
    """Issue 39, point 6: ``tanh_out``, not ``t7``; a name the learner gave stays, and
    is not followed by an id (``scaled``, not ``scaled (t21)``)."""
    x = wb.tensor([0.5, -1.0], requires_grad=True, name="x")
    weights = wb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True, name="W")
    scaled = wb.tanh(weights @ x) * 2
    scaled.name = "scaled"
    loss = scaled.sum()
    text = labels(wb.viz.draw(loss, kind="forward"))
    assert "\nsum_out\n" in text and "\nscaled\n" in text and scaled.uid not in text
    assert "\ntanh_out\n" in text and "\nmatmul_out\n" in text and "\nmul_out" not in text
    with wb.trace() as recorded:
        x2 = wb.tensor([0.5, -1.0], requires_grad=True, name="x")
        wb.tanh(x2).sum().backward()
    assert "sum_out\n" in labels(wb.viz.draw(recorded))


def test_a_custom_functions_output_is_called_after_it():
    x = wb.tensor([0.5, -1.0], requires_grad=True, name="x")
    squared = square_function(1.0).apply(x)  # a learner's Square (test_compare_stepper)
    assert "\nsquare_out\n" in labels(wb.viz.draw(squared.sum(), kind="forward"))


def test_a_node_the_learner_did_not_write_says_where_it_came_from():
    """Lesson 11's TwoModes drew a ViewBackward0 nobody wrote: make_dual's view."""
    import workbench.record.forward_ad as fwAD

    x = wb.tensor([0.5, -1.0], requires_grad=True, name="x")
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, wb.ones_like(x))
        y = wb.sigmoid(dual).sum()
    backward_text = labels(wb.viz.draw(y))
    forward_text = labels(wb.viz.draw(y, kind="forward"))
    for text in (backward_text, forward_text):
        assert text.count("a view made by make_dual") == 1, text
    plain = labels(wb.viz.draw(wb.sigmoid(x).sum()))
    assert "made by" not in plain

    assert "\nx (dual)\n" in forward_text  # the primal's name, not view_out or an id
    assert "view_out" not in forward_text


def tensor_heads(picture) -> set:
    """The first line of every tensor's box (a leaf's under its AccumulateGrad)."""
    heads = set()
    for vertex in picture.model.vertices.values():
        if vertex.kind in ("leaf", "tensor", "const", "root"):
            heads.add(vertex.lines[0])
        elif vertex.kind == "accumulate":
            heads.add(vertex.lines[1])
    return heads


def test_a_modules_parameters_are_called_by_their_path_in_it():
    """Issue 39, point 6: ``0.weight`` (as ``named_parameters()`` says), not ``t1``; in
    the picture, the node picker and the panel. A name the learner gave wins."""
    model = wb.nn.Sequential(wb.nn.Linear(3, 4), wb.nn.Tanh(), wb.nn.Linear(4, 1))
    x = wb.ones(5, 3, name="x")
    loss = model(x).sum()
    paths = [name for name, _ in model.named_parameters()]
    assert paths == ["0.weight", "0.bias", "2.weight", "2.bias"]
    for kind in ("backward", "forward"):
        heads = tensor_heads(wb.viz.draw(loss, kind=kind))
        assert set(paths) <= heads, (kind, heads)
        assert not [h for h in heads if re.fullmatch(r"t\d+", h)], (kind, heads)
    stepper = BackwardStepper(loss)
    picked = [name for name, _ in stepper.node_picker.options]
    assert {f"AccumulateGrad ({path})" for path in paths} <= set(picked), picked
    stepper.go(stepper.total)
    assert "0.weight" in stepper.panel.value or "0.bias" in stepper.panel.value
    stepper.close()
    model[0].bias.name = "b1"  # the learner's own name
    assert "b1" in tensor_heads(wb.viz.draw(model(x).sum()))


def test_a_parameter_of_a_module_in_a_module_gets_its_whole_path():
    class Net(wb.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = wb.nn.Sequential(wb.nn.Linear(2, 2))
            self.scale = wb.nn.Parameter(wb.ones(2))

        def forward(self, x):
            return self.body(x) * self.scale

    net = Net()
    heads = tensor_heads(wb.viz.draw(net(wb.ones(1, 2)).sum()))
    assert {"body.0.weight", "body.0.bias", "scale"} <= heads, heads
    assert [name for name, _ in net.named_parameters()] == ["scale", "body.0.weight", "body.0.bias"]


def test_forward_steppers_inputs_are_called_by_fs_argument_names():
    """TwoModes named its input ``t20``: now ``x`` as ``f`` calls it (or the primal's
    own name), and make_dual's view of it ``x (dual)``, with a line saying what it is."""
    primal, along = wb.tensor([0.5, -1.0]), wb.tensor([1.0, 0.0])
    modes = TwoModes(lambda x: (wb.sigmoid(x) * x).sum(), (primal,), (along,))
    picked = [name for name, _ in modes.backward.node_picker.options]
    assert "AccumulateGrad (x)" in picked, picked
    assert not [p for p in picked if re.search(r"\bt\d+\b", p)], picked
    forward = modes.forward.picture.dot
    assert "x (dual)" in forward and "a view made by make_dual" in forward
    modes.close()
    named = ForwardStepper(
        lambda a, b: (a * b).sum(), (primal, wb.tensor([2.0, 3.0], name="w")), (along, along)
    )
    assert [x.name for x in named.inputs] == ["a", "w"]  # f's argument, the primal's name
    named.close()
    anonymous = ForwardStepper(lambda *xs: xs[0].sum(), (primal,), (along,))
    assert [x.name for x in anonymous.inputs] == ["primals[0]"]
    anonymous.close()


def backward_stepper():
    return BackwardStepper(small_pass())


def forward_stepper():
    x = wb.tensor([0.5, -1.0, 2.0])
    return ForwardStepper(lambda x: (wb.sigmoid(x) * x).sum(), (x,), (wb.ones_like(x),))


def compare_stepper():
    return CompareStepper(small_pass(), small_pass())


# Each stepper, and what waits behind its "More" (besides Reset, Stop and Play's speed).
STEPPERS = {
    "backward": (backward_stepper, ("over_button", "continue_button", "view_switch")),
    "forward": (forward_stepper, ()),
    "compare": (compare_stepper, ()),
}


def everyday_row(stepper):
    (row,) = [c for c in stepper.children if stepper.prev_button in getattr(c, "children", ())]
    return list(row.children)


@pytest.mark.parametrize("kind", sorted(STEPPERS))
def test_the_everyday_controls_are_few_and_the_rest_wait_behind_more(kind):
    """Issue 39, point 3: Prev, Next, Play and the step slider ("step k of n"); reset,
    stop, speed (and the backward stepper's step over, find, breakpoints and views)
    behind one "More" toggle: one bar for every stepper."""
    make, more_of_its_own = STEPPERS[kind]
    stepper = make()
    everyday = [stepper.prev_button, stepper.next_button, stepper.play, stepper.slider]
    everyday.append(stepper.step_count)
    if kind == "compare":  # what a comparison is for, every day
        everyday.append(stepper.difference_button)
    assert everyday_row(stepper) == [*everyday, stepper.more_button]
    assert f"of {stepper.total}" in stepper.step_count.value
    behind = {stepper.reset_button, stepper.stop_button, stepper.speed}
    behind |= {getattr(stepper, name) for name in more_of_its_own}
    assert behind <= set(descendants(stepper.more))
    assert not behind & set(everyday_row(stepper))
    assert stepper.more.layout.display == "none"
    stepper.more_button.value = True
    assert stepper.more.layout.display == "" and stepper.more_button.description == "Less ▴"
    stepper.reset_button.click()  # a control behind More works as it did in the row
    assert stepper.step == 1
    stepper.more_button.value = False
    assert stepper.more.layout.display == "none" and stepper.more_button.description == "More ▾"
    stepper.close()


def said(stepper) -> tuple[list[str], str]:
    """What the widget says is on show: each panel's "k of n" (a comparison has two),
    and the panels' and the message's text."""
    panels = [side.panel for side in getattr(stepper, "sides", [])] or [stepper.panel]
    titles = [re.search(r"Step (\d+ of \d+)", panel.value).group(1) for panel in panels]
    text = " ".join([stepper.message.value, *(panel.value for panel in panels)])
    return titles, text.lower()


MOVES = {
    "Next": lambda stepper: stepper.next(),
    "the slider": lambda stepper: setattr(stepper.slider, "value", stepper.total - 1),
    "Reset": lambda stepper: stepper.reset_button.click(),
    "go to the end": lambda stepper: stepper.go(stepper.total),
    "Next at the end": lambda stepper: stepper.next(),
}


@pytest.mark.parametrize("kind", sorted(STEPPERS))
def test_the_numbering_and_the_message_agree_after_every_move(kind):
    """The slider's "step k" and "of n" and each panel's "Step k of n" name one step
    after every move, and only Next at the last step says it is the last."""
    stepper = STEPPERS[kind][0]()
    for move, make_it in MOVES.items():
        make_it(stepper)
        shown = f"{stepper.slider.value} of {stepper.total}"
        titles, text = said(stepper)
        assert stepper.step == stepper.slider.value, move
        assert stepper.step_count.value.endswith(f"of {stepper.total}</span>"), move
        assert titles == [shown] * len(titles), (move, titles, shown)
        if kind == "compare":  # it speaks of the two passes, not of a step
            assert f"agree at all {stepper.total} steps" in text, move
        else:
            assert ("the last step" in text) == (move == "Next at the end"), (move, text)
    stepper.close()


def descendants(box) -> list:
    found = []
    for child in getattr(box, "children", ()):
        found += [child, *descendants(child)]
    return found


def test_no_glyph_the_default_fonts_lack():
    """Issue 39, point 6: ❓ drew as a box in Chromium's default fonts; the widgets' text
    uses no emoji (pictographs U+1F300-1FAFF, ❓❔❕❗✅❌⭐)."""
    import re
    from pathlib import Path

    emoji = re.compile("[\U0001f300-\U0001faff\u2753\u2754\u2755\u2757\u2705\u274c\u2b50]")
    package = Path(wb.__file__).parent
    found = [
        f"{path.relative_to(package)}:{number}"
        for path in package.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if emoji.search(line)
    ]
    assert not found, found
