"""CheckpointExplorer as a Python object: slider, measured memory, recomputation, graph.

Every expectation below is about what checkpoint_sequential really does to a tanh
MLP: activations of 256 × 64 float32 (64 KiB each) are what checkpointing saves; the
weights are kept by both runs.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from tests.helpers import dot_vertices
from workbench.utils.checkpoint import checkpoint
from workbench.widgets import CheckpointExplorer
from workbench.widgets.checkpoint_explorer import TanhMLP

LAYERS, WIDTH, BATCH = 16, 64, 256
ACTIVATION_BYTES = BATCH * WIDTH * 4


@pytest.fixture(scope="module")
def explorer():
    return CheckpointExplorer(segments=4, layers=LAYERS, width=WIDTH, batch=BATCH)


def plain_grads(mlp: TanhMLP) -> list:
    """The gradients of the same step, written out without any checkpoint machinery."""
    for p in mlp.parameters():
        p.grad = None
    h = mlp.x
    for layer in mlp.layers:
        h = (h @ layer.weight + layer.bias).tanh()
    h.pow(2).mean().backward()
    return [p.grad.numpy().copy() for p in mlp.parameters()]


def test_default_explorer_saves_memory_and_recomputes_three_segments(explorer):
    explorer.slider.value = 4
    result = explorer.result
    assert explorer.error is None
    assert result.segments == 4
    assert result.recomputes == 3  # the last of the 4 segments runs plainly
    assert result.recomputed_nodes == 3 * 4 * 3  # 3 segments × 4 layers × (matmul, add, tanh)
    assert result.ratio < 0.6
    assert "3 segment rerun(s)" in explorer.readout.value
    assert f"{result.ratio:.0%} of plain" in explorer.readout.value


def test_gradients_with_and_without_checkpointing_are_equal(explorer):
    explorer.slider.value = 4
    result = explorer.result
    assert result.grads_equal and "identical" in explorer.readout.value
    written_out = plain_grads(explorer.mlp)
    assert len(written_out) == 2 * LAYERS
    for ours, theirs in zip(result.checkpointed.grads, written_out):
        assert np.array_equal(ours, theirs)
    for ours, theirs in zip(result.plain.grads, written_out):
        assert np.array_equal(ours, theirs)


def test_one_segment_checkpoints_nothing(explorer):
    explorer.slider.value = 1
    result = explorer.result
    assert result.recomputes == 0 and result.recomputed_nodes == 0
    assert result.checkpointed.memory.peak_bytes == result.plain.memory.peak_bytes
    assert result.ratio == 1.0
    assert result.recomputed_vertices == ()
    assert "recomputed" not in result.dot


@pytest.mark.parametrize("segments", [2, 4, 8])
def test_more_segments_hold_fewer_activations_at_the_peak(explorer, segments):
    explorer.slider.value = segments
    result = explorer.result
    assert result.recomputes == segments - 1
    saved = result.plain.memory.peak_bytes - result.checkpointed.memory.peak_bytes
    # Plain holds x and all 16 outputs; checkpointed: one input per checkpointed
    # segment, then the last segment's input and its outputs.
    plain_held = LAYERS + 1
    checkpointed_held = (segments - 1) + 1 + LAYERS // segments
    assert saved == (plain_held - checkpointed_held) * ACTIVATION_BYTES


def test_moving_the_slider_changes_recomputes_ratio_and_pictures(explorer):
    explorer.slider.value = 2
    at_two = (explorer.result.ratio, bytes(explorer.image.value), explorer.readout.value)
    explorer.slider.value = 4
    assert explorer.result.recomputes == 3
    assert explorer.result.ratio < at_two[0]  # 4 segments of 4 layers beat 2 of 8
    assert bytes(explorer.image.value) != at_two[1]
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert explorer.readout.value != at_two[2]


@pytest.mark.parametrize("segments", [9, 16])
def test_one_layer_segments_save_nothing_and_say_why(explorer, segments):
    explorer.slider.value = segments
    result = explorer.result
    assert result.recomputes == segments - 1  # the cost is still paid
    assert result.ratio == 1.0
    assert "one-layer segment" in explorer.readout.value


def test_sweep_measures_every_segment_count(explorer):
    explorer.slider.value = 4
    sweep = explorer.sweep
    assert sorted(sweep) == list(range(1, LAYERS + 1))
    assert sweep[1] == explorer.result.plain.memory.peak_bytes
    assert sweep[4] == explorer.result.checkpointed.memory.peak_bytes
    assert min(sweep, key=sweep.get) == 4  # √16: the sweet spot


def test_memory_timeline_has_both_series(explorer):
    explorer.slider.value = 4
    result = explorer.result
    timelines = result.timelines()
    assert set(timelines) == {"plain", "checkpointed"}
    for name, memory in timelines.items():
        held = memory.held()
        assert len(held) > 2 * LAYERS, name
        assert held.max() == memory.peak_bytes, name
        assert held[-1] == 0, name  # backward let go of everything it saved
        assert 0 < memory.backward_at < len(held), name
    plain, ckpt = timelines["plain"], timelines["checkpointed"]
    assert plain.recompute_at == [] and len(ckpt.recompute_at) == 3
    assert all(i >= ckpt.backward_at for i in ckpt.recompute_at)  # reruns happen in backward
    assert len(ckpt.held()) > len(plain.held())  # the reruns save (and free) again


def test_graph_folds_into_segments_and_marks_the_recomputed_ones(explorer):
    explorer.slider.value = 4
    result = explorer.result
    boxes = [
        "scope:segment 1: layers 0–3, checkpointed",
        "scope:segment 2: layers 4–7, checkpointed",
        "scope:segment 3: layers 8–11, checkpointed",
        "scope:segment 4: layers 12–15, run plainly",
    ]
    assert set(result.recomputed_vertices) == set(boxes[:3])
    vertices = dot_vertices(result.dot)
    assert len(vertices) <= 4 + 8  # fits its box: a few vertices, not 147
    for box in boxes:
        assert vertices[box][0] == "fold"
        assert ("recomputed" in vertices[box]) == (box != boxes[-1]), box
    assert result.dot.count("↻ 12 recomputed nodes") == 3  # 4 layers × (matmul, add, tanh)
    # each checkpointed segment is framed: three boundaries, the plain segment has none
    assert result.dot.count('class="segment"') == 3
    assert 'label="loss\\n' in result.dot  # the loss is named, not a bare tensor id
    assert explorer.graph.dot == result.dot
    assert explorer.graph.classes == {vid: "recomputed" for vid in boxes[:3]}


def test_viz_marks_a_recomputed_node_when_not_folded():
    x = wb.randn(3, 4, requires_grad=True)
    h = checkpoint(lambda t: t.tanh() * 2.0, x, use_reentrant=False)
    loss = h.exp().sum()
    loss.backward()
    graph = wb.viz.draw(loss, fold_limit=None)
    marked = [v for v in graph.model.vertices.values() if "recomputed" in v.classes]
    assert sorted(v.lines[0] for v in marked) == ["MulBackward0", "TanhBackward0"]
    segment = h.grad_fn.metadata["checkpoint"]
    assert all(v.lines[-1] == f"↻ recomputed ×1 ({segment})" for v in marked)
    assert graph.dot.count('fillcolor="#d7f0d0"') == 2
    exp_node = loss.grad_fn.next_functions[0][0]
    assert f'<g id="{exp_node.uid}" class="node backward">' in graph.svg()
    assert f'<g id="{h.grad_fn.uid}" class="node backward recomputed">' in graph.svg()


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"segments": 0}, "segments = 0"),
        ({"segments": 20}, "from 1 to 16"),
        ({"layers": 0}, "layers = 0"),
        ({"layers": 1000}, "from 1 to 64"),
        ({"width": -3}, "width = -3"),
        ({"segments": "four"}, "segments = 'four'"),
        ({"layers": 2.5}, "layers = 2.5"),
    ],
)
def test_bad_input_shows_a_message_not_a_traceback(kwargs, words):
    explorer = CheckpointExplorer(**kwargs)
    assert explorer.result is None
    assert words in explorer.error
    assert "wb-message" in explorer.readout.value
    assert bytes(explorer.image.value) == b"" and explorer.graph.dot == ""


def test_typing_a_bad_depth_shows_a_message_and_a_good_one_recovers():
    explorer = CheckpointExplorer(segments=3, layers=6, width=8, batch=4)
    assert explorer.result.recomputes == 2
    explorer.layers_box.value = -1
    assert explorer.result is None and "layers = -1" in explorer.error
    explorer.layers_box.value = 2  # the slider is refitted: 3 segments clamp to 2
    assert explorer.error is None and explorer.slider.max == 2
    assert explorer.result.segments == 2 and explorer.result.recomputes == 1
    assert sorted(explorer.sweep) == [1, 2]


def test_the_explorer_leaves_no_saved_memory_behind():
    before = wb.autograd.saved_memory().current
    explorer = CheckpointExplorer(segments=2, layers=4, width=8, batch=4)
    explorer.slider.value = 3
    assert explorer.result is not None
    assert wb.autograd.saved_memory().current == before


def test_building_the_model_leaves_the_global_generator_alone():
    wb.manual_seed(5)
    expected = wb.randn(3).numpy()
    wb.manual_seed(5)
    CheckpointExplorer(segments=2, layers=2, width=4, batch=2)
    assert np.array_equal(wb.randn(3).numpy(), expected)
