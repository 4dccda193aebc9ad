"""wb.from_torch: PyTorch's own backward, recorded as a Trace and stepped through.

Every test that needs PyTorch asks for the ``torch`` fixture, which skips without it;
the tests of what happens without PyTorch run everywhere.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from tests.helpers import dot_vertices
from workbench.trace import summary_array
from workbench.widgets import BackwardStepper
from workbench.widgets.trace_steps import tensor_names

ROOT = Path(__file__).resolve().parents[1]
ALL = 10_000  # keep every value of these small models' arrays in the trace


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


# ------------------------------------------------------------------ models
def mlp(torch):
    """Linear, ReLU, Linear and cross-entropy; the input needs no grad."""
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    x, y = torch.randn(5, 3), torch.tensor([0, 1, 0, 1, 1])
    return model, x, lambda: F.cross_entropy(model(x), y)


def cnn(torch):
    """Conv2d, ReLU, MaxPool2d, Linear and cross-entropy."""
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8, 3)
    )
    x, y = torch.randn(2, 1, 6, 6), torch.tensor([0, 2])
    return model, x, lambda: F.cross_entropy(model(x), y)


MODELS = {"mlp": mlp, "cnn": cnn}


def graph_nodes(loss) -> list:
    nodes, stack = [], [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is not None and node not in nodes:
            nodes.append(node)
            stack.extend(child for child, _ in node.next_functions)
    return nodes


def arrays(grads) -> list:
    return [None if g is None else g.detach().clone().numpy() for g in grads]


def watch(loss) -> tuple[list, list]:
    """Hooks of the test's own: ``(name, grads in, grads out)`` as PyTorch runs each node."""
    ran = []

    def hook(node, sent, received):
        ran.append((type(node).__name__, arrays(received), arrays(sent)))

    handles = [
        node.register_hook(lambda sent, received, node=node: hook(node, sent, received))
        for node in graph_nodes(loss)
    ]
    return ran, handles


def steps(trace) -> list:
    return trace.of_kind("node_step")


def leaf_updates(trace) -> dict:
    """``leaf name -> (before, after)`` from the trace's grad_accumulated records."""
    names = tensor_names(trace)
    return {
        names[r["tensor"]]: (summary_array(r["before"]), summary_array(r["after"]))
        for r in trace.of_kind("grad_accumulated")
    }


def assert_same(got, expected) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if e is None:
            assert g is None
        else:
            np.testing.assert_allclose(summary_array(g), e, rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------- without torch
def test_import_workbench_does_not_import_torch():
    code = "import sys, workbench; workbench.from_torch; print('torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "False"


def test_without_torch_the_message_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # what `import torch` sees when missing
    with pytest.raises(ModuleNotFoundError) as caught:
        wb.from_torch(object())
    message = str(caught.value)
    assert "pip install torch" in message
    assert "pip install 'autodiff-workbench[torch]'" in message
    assert caught.value.name == "torch"


# ------------------------------------------------------------ names and order
def test_node_names_and_order_are_pytorchs(torch):
    model, _, make_loss = mlp(torch)
    loss = make_loss()
    ran, handles = watch(loss)
    trace = wb.from_torch(loss)
    for handle in handles:
        handle.remove()
    names = [r["name"] for r in steps(trace)]
    assert names == [name for name, _, _ in ran]
    assert names[:3] == ["NllLossBackward0", "LogSoftmaxBackward0", "AddmmBackward0"]
    assert names.count("AccumulateGrad") == 4
    assert [r["index"] for r in steps(trace)] == list(range(len(ran)))
    (finished,) = trace.of_kind("backward_finished")
    assert finished["steps"] == len(ran)


@pytest.mark.parametrize("which", sorted(MODELS))
def test_grads_in_and_out_are_pytorchs(torch, which):
    model, _, make_loss = MODELS[which](torch)
    loss = make_loss()
    ran, handles = watch(loss)
    trace = wb.from_torch(loss, small=ALL)
    for handle in handles:
        handle.remove()
    assert len(steps(trace)) == len(ran)
    for record, (name, grads_in, grads_out) in zip(steps(trace), ran):
        assert record["name"] == name
        assert_same(record["grads_in"], grads_in)
        assert_same(record["grads_out"], grads_out)
        assert len(record["next_nodes"]) == len(grads_out)


def test_an_input_that_needs_no_grad_is_no_edge(torch):
    model, _, make_loss = mlp(torch)
    trace = wb.from_torch(make_loss())
    first = trace.of_kind("op_recorded")[1]  # addmm(bias, x, weight.t()): x needs no grad
    assert first["op"] == "addmm"
    assert first["inputs"][1] is None and first["next_nodes"][1] is None
    assert first["attrs"]["input1"] == "no grad"
    step = next(r for r in steps(trace) if r["node"] == first["node"])
    assert step["next_nodes"][1] is None and step["grads_out"][1] is None


# ------------------------------------------------------------------ leaves
@pytest.mark.parametrize("which", sorted(MODELS))
def test_leaf_grads_after_are_pytorchs_grad(torch, which):
    model, _, make_loss = MODELS[which](torch)
    trace = wb.from_torch(make_loss(), names=model, small=ALL)
    updates = leaf_updates(trace)
    assert sorted(updates) == sorted(name for name, _ in model.named_parameters())
    for name, p in model.named_parameters():
        before, after = updates[name]
        assert before is None
        np.testing.assert_array_equal(after, p.grad.numpy())


def test_a_second_backward_shows_the_grad_before(torch):
    model, _, make_loss = mlp(torch)
    loss = make_loss()
    first = wb.from_torch(loss, retain_graph=True, names=model)
    grads = {name: p.grad.clone().numpy() for name, p in model.named_parameters()}
    second = wb.from_torch(loss, names=model)  # the same graph, kept by retain_graph
    assert first.passes[0].started["retain_graph"] is True
    assert second.passes[0].started["retain_graph"] is False
    updates = leaf_updates(second)
    for name, p in model.named_parameters():
        before, after = updates[name]
        np.testing.assert_array_equal(before, grads[name])
        np.testing.assert_array_equal(after, p.grad.numpy())
        np.testing.assert_allclose(after, 2 * grads[name], rtol=1e-6)


def test_leaves_are_named_by_the_model_or_by_id(torch):
    model, _, make_loss = mlp(torch)
    named = wb.from_torch(make_loss(), names=model)
    assert sorted(tensor_names(named).values()) == sorted(n for n, _ in model.named_parameters())
    plain = wb.from_torch(make_loss())
    assert tensor_names(plain) == {}
    stepper = BackwardStepper(plain)
    labels = [info.label for info in stepper.cursor.source.nodes.values() if info.leaf]
    assert labels and all(label.startswith("leaf t") for label in labels)


# ------------------------------------------------------------------ saved
def test_saved_tensors_are_listed_with_shapes_dtypes_and_values(torch):
    model, x, make_loss = cnn(torch)
    loss = make_loss()
    expected = set()
    for node in graph_nodes(loss):
        for attr in dir(node):
            value = getattr(node, attr) if attr.startswith("_saved_") else None
            if isinstance(value, torch.Tensor):
                slot = (type(node).__name__, attr[len("_saved_") :])
                expected.add((*slot, tuple(value.shape), str(value.dtype)[len("torch.") :]))
    trace = wb.from_torch(loss, small=ALL)
    names = {r["node"]: r["name"] for r in steps(trace)}
    got = {
        (names[r["node"]], r["slot"], tuple(r["value"]["shape"]), r["value"]["dtype"])
        for r in trace.of_kind("saved_tensor_packed")
    }
    assert got == expected
    assert ("MaxPool2DWithIndicesBackward0", "result1", (2, 2, 2, 2), "int64") in got
    assert ("ConvolutionBackward0", "weight", (2, 1, 3, 3), "float32") in got
    # a saved tensor's values are the forward's: ReLU saves its output, the conv its input
    saved = {(names[r["node"]], r["slot"]): r for r in trace.of_kind("saved_tensor_packed")}
    relu = model[1](model[0](x)).detach().numpy()
    np.testing.assert_allclose(summary_array(saved["ReluBackward0", "result"]["value"]), relu)
    np.testing.assert_array_equal(
        summary_array(saved["ConvolutionBackward0", "input"]["value"]), x.numpy()
    )


def test_the_stepper_shows_saved_tensors_and_forward_values(torch):
    model, x, make_loss = mlp(torch)
    stepper = BackwardStepper(wb.from_torch(make_loss(), small=ALL))
    relu = next(uid for uid, i in stepper.cursor.source.nodes.items() if i.name == "ReluBackward0")
    info = stepper.cursor.source.nodes[relu]
    expected = model[1](model[0](x)).detach().numpy()
    np.testing.assert_allclose(info.saved["result"], expected)
    np.testing.assert_allclose(info.data, expected)  # its output, known because it was saved
    stepper.inspect(relu)
    assert "saved result" in stepper.inspector.value
    # x needs no grad, so it is in no edge: only its saved copy tells the picture its shape
    assert "saved mat1" in stepper.graph.dot and "(5, 3) float32" in stepper.graph.dot


# ------------------------------------------------------------------ stepping
@pytest.mark.parametrize("which", sorted(MODELS))
def test_the_stepper_steps_through_pytorchs_backward(torch, which):
    """At every step the picture, the panel and the model's .grad tell the same story."""
    model, _, make_loss = MODELS[which](torch)
    trace = wb.from_torch(make_loss(), names=model, small=ALL)
    params = dict(model.named_parameters())
    stepper = BackwardStepper(trace)
    assert stepper.error is None
    seen, leaves = [], {}
    while True:
        record = stepper.record
        seen.append(record.name)
        assert stepper.active == record.node
        assert stepper.graph.active in dot_vertices(stepper.graph.dot)
        assert record.name in stepper.panel.value
        if record.leaf is not None:
            assert f"{record.leaf.name}.grad after" in stepper.panel.value
            np.testing.assert_array_equal(record.leaf.after, params[record.leaf.name].grad)
            leaves[record.leaf.name] = record.leaf
        if not stepper.next():
            break
    assert seen == [r["name"] for r in steps(trace)]
    assert sorted(leaves) == sorted(params)
    assert stepper.next_button.disabled


def test_the_trace_saves_loads_and_steps_the_same(torch, tmp_path):
    model, _, make_loss = cnn(torch)
    trace = wb.from_torch(make_loss(), names=model)
    loaded = wb.Trace.load(trace.save(tmp_path / "torch.json"))  # checked field by field
    assert loaded.records == trace.records
    assert wb.Trace.from_json(loaded.to_json()).records == trace.records
    panels = []
    for stepper in (BackwardStepper(trace), BackwardStepper(loaded)):
        panels.append([stepper.panel.value])
        while stepper.next():
            panels[-1].append(stepper.panel.value)
    assert panels[0] == panels[1]
    assert len(panels[0]) == len(steps(trace))


# ------------------------------------------------------------------ hooks and errors
def test_the_hooks_are_removed_afterwards(torch, monkeypatch):
    model, _, make_loss = mlp(torch)
    loss = make_loss()
    wb.from_torch(loss, retain_graph=True)

    def fail(self, tensor):
        raise AssertionError("a hook of from_torch is still on PyTorch's graph")

    monkeypatch.setattr(wb.trace.torch_replay.TorchReplay, "summary", fail)
    loss.backward()  # would call the hooks, were they still there


def test_the_hooks_are_removed_when_backward_fails(torch, monkeypatch):
    model, _, make_loss = mlp(torch)
    loss = make_loss() * torch.ones(2)  # not a scalar: backward() refuses
    with pytest.raises(RuntimeError, match="scalar"):
        wb.from_torch(loss)
    monkeypatch.setattr(wb.trace.torch_replay.TorchReplay, "summary", None)  # a hook would fail
    loss.sum().backward()


def test_a_freed_graph_says_retain_graph(torch):
    model, _, make_loss = mlp(torch)
    loss = make_loss()
    loss.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        wb.from_torch(loss)


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda torch: wb.tensor([1.0], requires_grad=True).sum(), TypeError, "PyTorch tensor"),
        (lambda torch: torch.ones(2, requires_grad=True), ValueError, "no grad_fn"),
        (lambda torch: torch.ones(2).sum(), ValueError, "requires_grad=True"),
    ],
)
def test_what_cannot_be_replayed_is_a_clear_error(torch, make, error, words):
    with pytest.raises(error, match=words):
        wb.from_torch(make(torch))


def test_saved_values_that_are_not_tensors_are_the_ops_attrs(torch):
    model, _, make_loss = cnn(torch)
    trace = wb.from_torch(make_loss())
    attrs = {r["op"]: r["attrs"] for r in trace.of_kind("op_recorded")}
    assert attrs["logsoftmax"] == {"dim": 1}
    assert attrs["nllloss"] == {"ignore_index": -100, "reduction": 1}  # as PyTorch's default
    assert attrs["convolution"]["stride"] == [1, 1]
    assert attrs["maxpool2dwithindices"]["kernel_size"] == [2, 2]
    assert not [key for a in attrs.values() for key in a if "sym_" in key]
