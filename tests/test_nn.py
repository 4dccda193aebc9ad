"""wb.nn: Module bookkeeping, PyTorch-identical layers and losses, init, name scopes."""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict

import numpy as np
import pytest

import workbench as wb
from workbench import nn
from workbench.core import events

torch = pytest.importorskip("torch")


class MLP(nn.Module):
    def __init__(self, sizes=(4, 8, 3)):
        super().__init__()
        self.fc1 = nn.Linear(sizes[0], sizes[1])
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(sizes[1], sizes[2])

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class TorchMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.act = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def _torch_mlp():
    return TorchMLP()


def copy_weights(ours: nn.Module, theirs) -> None:
    """Give a torch module exactly our module's parameter values (float64)."""
    state = {k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()}
    theirs.load_state_dict(state)


def close(ours, theirs, atol=1e-10):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=atol)


# ------------------------------------------------------------- registration
def test_attributes_register_parameters_children_and_buffers():
    model = MLP()
    model.register_buffer("steps", wb.zeros(1))
    assert [name for name, _ in model.named_parameters()] == [
        "fc1.weight",
        "fc1.bias",
        "fc2.weight",
        "fc2.bias",
    ]
    assert [name for name, _ in model.named_children()] == ["fc1", "act", "fc2"]
    assert [name for name, _ in model.named_modules()] == ["", "fc1", "act", "fc2"]
    assert [name for name, _ in model.named_buffers()] == ["steps"]
    assert len(list(model.parameters())) == 4
    assert model.fc1.weight.shape == (8, 4)


def test_parameter_names_match_torch():
    ours = [name for name, _ in MLP().named_parameters()]
    theirs = [name for name, _ in _torch_mlp().named_parameters()]
    assert ours == theirs


def test_shared_modules_and_parameters_are_listed_once():
    layer = nn.Linear(2, 2)
    model = nn.Sequential(layer, nn.ReLU(), layer)
    assert len(list(model.parameters())) == 2
    assert [name for name, _ in model.named_modules()] == ["", "0", "1"]


def test_assigning_a_plain_tensor_to_a_parameter_slot_is_refused():
    layer = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign"):
        layer.weight = wb.ones(2, 2)
    layer.bias = None
    assert layer.bias is None and "bias" in layer._parameters


def test_assigning_before_init_says_so():
    class Broken(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Broken()


def test_reassigning_changes_the_kind_of_attribute():
    model = MLP()
    model.fc2 = nn.Parameter(wb.ones(1))
    assert "fc2" not in model._modules and "fc2" in model._parameters
    del model.fc2
    assert not hasattr(model, "fc2")


def test_missing_attributes_name_the_class():
    with pytest.raises(AttributeError, match="'MLP' object has no attribute 'fc3'"):
        MLP().fc3  # noqa: B018


def test_parameter_requires_grad_even_inside_no_grad():
    with wb.no_grad():
        p = nn.Parameter(wb.ones(2))
        layer = nn.Linear(2, 2)
    assert p.requires_grad and p.is_leaf
    assert layer.weight.requires_grad
    assert repr(p).startswith("Parameter containing:\ntensor(")


def test_parameter_shares_memory_with_its_tensor():
    t = wb.zeros(3)
    p = nn.Parameter(t)
    with wb.no_grad():
        p.add_(1.0)
    np.testing.assert_allclose(t.numpy(), [1, 1, 1])


# ------------------------------------------------------------- modes and grads
def test_train_and_eval_reach_every_submodule():
    model = nn.Sequential(MLP(), nn.Dropout(0.5))
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    with pytest.raises(ValueError, match="boolean"):
        model.train("yes")


def test_zero_grad_sets_none_by_default():
    model = MLP()
    model(wb.randn(2, 4)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad(set_to_none=False)
    assert all(not p.grad.numpy().any() for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_requires_grad_false_freezes_a_layer():
    model = MLP()
    model.fc1.requires_grad_(False)
    model(wb.randn(2, 4)).sum().backward()
    assert model.fc1.weight.grad is None
    assert model.fc2.weight.grad is not None


# ------------------------------------------------------------------ state dict
def test_state_dict_round_trip():
    a, b = MLP(), MLP()
    assert not np.allclose(a.fc1.weight.detach().numpy(), b.fc1.weight.detach().numpy())
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    x = wb.randn(3, 4)
    close(a(x), b(x))
    assert b.fc1.weight.requires_grad and b.fc1.weight.is_leaf


def test_state_dict_values_are_detached_and_share_memory():
    model = MLP()
    state = model.state_dict()
    assert list(state) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert not state["fc1.weight"].requires_grad
    with wb.no_grad():
        model.fc1.weight.fill_(2.0)
    assert state["fc1.weight"].numpy()[0, 0] == 2.0


def test_state_dict_loads_into_torch_and_back():
    ours = MLP().double()
    theirs = _torch_mlp().double()
    copy_weights(ours, theirs)
    x = np.random.default_rng(0).standard_normal((5, 4))
    close(ours(wb.tensor(x)), theirs(torch.tensor(x)))
    again = MLP().double()
    again.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    close(again(wb.tensor(x)), theirs(torch.tensor(x)))


def test_non_persistent_buffers_are_not_saved():
    model = MLP()
    model.register_buffer("scratch", wb.zeros(2), persistent=False)
    model.register_buffer("count", wb.zeros(1))
    assert "scratch" not in model.state_dict() and "count" in model.state_dict()


def test_load_state_dict_reports_missing_unexpected_and_size_mismatch():
    model = MLP()
    state = model.state_dict()
    del state["fc2.bias"]
    state["extra"] = wb.zeros(1)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "fc2.bias"'):
        model.load_state_dict(state)
    result = model.load_state_dict(state, strict=False)
    assert result.missing_keys == ["fc2.bias"] and result.unexpected_keys == ["extra"]
    wrong = MLP((4, 5, 3)).state_dict()
    with pytest.raises(RuntimeError, match="size mismatch for fc1.weight"):
        model.load_state_dict(wrong)


def test_deepcopy_gives_independent_parameters():
    model = MLP()
    clone = copy.deepcopy(model)
    with wb.no_grad():
        clone.fc1.weight.fill_(0.0)
    assert model.fc1.weight.detach().numpy().any()
    assert isinstance(clone.fc1.weight, nn.Parameter) and clone.fc1.weight.requires_grad


# ------------------------------------------------------------------------ repr
def test_repr_matches_torch():
    ours = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16, 10, bias=False),
        nn.Dropout(0.25),
        nn.LayerNorm(10),
        nn.GELU(),
    )
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(16, 10, bias=False),
        torch.nn.Dropout(0.25),
        torch.nn.LayerNorm(10),
        torch.nn.GELU(),
    )
    assert repr(ours) == repr(theirs)
    assert repr(nn.Embedding(10, 3, padding_idx=0)) == repr(torch.nn.Embedding(10, 3, 0))
    assert repr(nn.AvgPool2d(2)) == repr(torch.nn.AvgPool2d(2))
    assert repr(nn.Tanh()) == "Tanh()"
    assert repr(nn.ReLU(inplace=True)) == repr(torch.nn.ReLU(inplace=True))
    assert repr(nn.Dropout(0.1, inplace=True)) == repr(torch.nn.Dropout(0.1, inplace=True))


def test_inplace_relu_overwrites_a_non_leaf_and_still_differentiates():
    x = wb.tensor([-1.0, 2.0], requires_grad=True)
    h = x * 1.0
    y = nn.ReLU(inplace=True)(h)
    assert y is h and h.detach().numpy().tolist() == [0.0, 2.0]
    y.sum().backward()
    assert x.grad.numpy().tolist() == [0.0, 1.0]


def test_repr_of_nested_modules_indents_like_torch():
    ours = nn.Sequential(OrderedDict(block=nn.Sequential(nn.Linear(2, 2), nn.Sigmoid())))
    theirs = torch.nn.Sequential(
        OrderedDict(block=torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Sigmoid()))
    )
    assert repr(ours) == repr(theirs)


# ------------------------------------------------------------------ containers
def test_sequential_indexing_len_iter_and_append():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    model.append(nn.Linear(3, 1))
    assert len(model) == 3 and isinstance(model[-1], nn.Linear)
    assert isinstance(model[:2], nn.Sequential) and len(model[:2]) == 2
    assert [type(m).__name__ for m in model] == ["Linear", "ReLU", "Linear"]
    assert model(wb.randn(5, 2)).shape == (5, 1)
    with pytest.raises(IndexError):
        model[3]


def test_module_list_registers_its_modules():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(3, 3) for _ in range(2))

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    model = Stack()
    assert [name for name, _ in model.named_parameters()][:2] == [
        "layers.0.weight",
        "layers.0.bias",
    ]
    assert model(wb.randn(2, 3)).shape == (2, 3)


# ------------------------------------------------------------------------ init
def test_linear_init_is_kaiming_uniform_like_torch():
    layer = nn.Linear(400, 300)
    bound = 1 / np.sqrt(400)
    weight = layer.weight.detach().numpy()
    assert np.abs(weight).max() <= bound
    # U(-b, b) has standard deviation b/sqrt(3)
    assert abs(weight.std() - bound / np.sqrt(3)) < 0.02 * bound
    assert np.abs(layer.bias.detach().numpy()).max() <= bound


def test_conv_init_uses_fan_in_of_the_kernel():
    layer = nn.Conv2d(3, 8, 5)
    bound = 1 / np.sqrt(3 * 5 * 5)
    weight = layer.weight.detach().numpy()
    assert weight.shape == (8, 3, 5, 5)
    assert np.abs(weight).max() <= bound and np.abs(weight).max() > 0.9 * bound


def test_init_follows_manual_seed():
    wb.manual_seed(7)
    first = nn.Linear(5, 5).weight.detach().numpy().copy()
    wb.manual_seed(7)
    second = nn.Linear(5, 5).weight.detach().numpy()
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first, nn.Linear(5, 5).weight.detach().numpy())


def test_init_functions():
    w = wb.empty(200, 100)
    nn.init.xavier_uniform_(w)
    assert np.abs(w.numpy()).max() <= np.sqrt(6 / 300)
    nn.init.kaiming_normal_(w, nonlinearity="relu")
    assert abs(w.numpy().std() - np.sqrt(2 / 100)) < 0.01
    nn.init.zeros_(w)
    assert not w.numpy().any()
    assert nn.init.calculate_gain("tanh") == pytest.approx(5 / 3)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(wb.empty(3))


def test_dtype_and_device_arguments():
    layer = nn.Linear(2, 3, dtype=wb.float64, device="cpu")
    assert layer.weight.dtype == wb.float64 and layer.weight.device.type == "cpu"
    assert nn.Linear(2, 3).weight.dtype == wb.float32


# -------------------------------------------------- layers and losses vs torch
def _layer_pairs():
    return [
        ("linear", nn.Linear(4, 3), torch.nn.Linear(4, 3), (5, 4)),
        ("linear_3d", nn.Linear(4, 3, bias=False), torch.nn.Linear(4, 3, bias=False), (2, 5, 4)),
        (
            "conv2d",
            nn.Conv2d(2, 3, 3, stride=2, padding=1),
            torch.nn.Conv2d(2, 3, 3, stride=2, padding=1),
            (2, 2, 7, 7),
        ),
        ("max_pool2d", nn.MaxPool2d(2), torch.nn.MaxPool2d(2), (2, 3, 6, 6)),
        ("avg_pool2d", nn.AvgPool2d(3, 2), torch.nn.AvgPool2d(3, 2), (2, 3, 7, 7)),
        ("relu", nn.ReLU(), torch.nn.ReLU(), (4, 5)),
        ("sigmoid", nn.Sigmoid(), torch.nn.Sigmoid(), (4, 5)),
        ("tanh", nn.Tanh(), torch.nn.Tanh(), (4, 5)),
        ("gelu", nn.GELU(), torch.nn.GELU(), (4, 5)),
        ("gelu_tanh", nn.GELU("tanh"), torch.nn.GELU("tanh"), (4, 5)),
        ("layer_norm", nn.LayerNorm(5), torch.nn.LayerNorm(5), (3, 4, 5)),
        ("flatten", nn.Flatten(), torch.nn.Flatten(), (2, 3, 4)),
        ("softmax", nn.Softmax(dim=1), torch.nn.Softmax(dim=1), (3, 4)),
        ("log_softmax", nn.LogSoftmax(dim=-1), torch.nn.LogSoftmax(dim=-1), (3, 4)),
    ]


@pytest.mark.parametrize("name", [p[0] for p in _layer_pairs()])
def test_layers_match_torch_forward_and_backward(name):
    _, ours, theirs, shape = next(p for p in _layer_pairs() if p[0] == name)
    ours.double()
    theirs.double()
    if list(ours.parameters()):
        with wb.no_grad():  # move away from ones/zeros so the affine part is tested too
            for p in ours.parameters():
                p.add_(wb.randn(*p.shape, dtype=wb.float64) * 0.1)
        copy_weights(ours, theirs)
    data = np.random.default_rng(1).standard_normal(shape)
    x, tx = wb.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    y, ty = ours(x), theirs(tx)
    close(y, ty)
    upstream = np.random.default_rng(2).standard_normal(ty.shape)
    (y * wb.tensor(upstream)).sum().backward()
    (ty * torch.tensor(upstream)).sum().backward()
    close(x.grad, tx.grad)
    for p, tp in zip(ours.parameters(), theirs.parameters()):
        close(p.grad, tp.grad)


def test_embedding_matches_torch_and_keeps_padding_row_at_zero():
    ours = nn.Embedding(6, 3, padding_idx=0).double()
    theirs = torch.nn.Embedding(6, 3, padding_idx=0).double()
    assert not ours.weight.detach().numpy()[0].any()
    copy_weights(ours, theirs)
    idx = np.array([[0, 2, 2], [5, 1, 0]])
    y, ty = ours(wb.tensor(idx)), theirs(torch.tensor(idx))
    close(y, ty)
    y.sum().backward()
    ty.sum().backward()
    close(ours.weight.grad, theirs.weight.grad)
    assert not ours.weight.grad.numpy()[0].any()


def test_dropout_trains_and_evaluates_like_torch():
    layer = nn.Dropout(0.5)
    x = wb.ones(1000)
    y = layer(x).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert 350 < (y == 0).sum() < 650
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), x.numpy())
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


LOSSES = [  # (test id, class name in both libraries, settings, kind of input)
    ("mse", "MSELoss", {}, "real"),
    ("mse_sum", "MSELoss", {"reduction": "sum"}, "real"),
    ("l1", "L1Loss", {}, "real"),
    ("l1_none", "L1Loss", {"reduction": "none"}, "real"),
    ("cross_entropy", "CrossEntropyLoss", {}, "class"),
    ("nll", "NLLLoss", {}, "logprob"),
    ("nll_sum", "NLLLoss", {"reduction": "sum"}, "logprob"),
    ("bce", "BCELoss", {}, "prob"),
    ("bce_logits", "BCEWithLogitsLoss", {}, "binary"),
]


def _loss_inputs(kind: str):
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((6, 4))
    if kind == "real":
        return logits, rng.standard_normal((6, 4))
    if kind == "class":
        return logits, rng.integers(0, 4, 6)
    if kind == "logprob":
        logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
        return logp, rng.integers(0, 4, 6)
    if kind == "prob":
        return 1 / (1 + np.exp(-logits)), rng.integers(0, 2, (6, 4)).astype(float)
    return logits, rng.integers(0, 2, (6, 4)).astype(float)


@pytest.mark.parametrize("name", [entry[0] for entry in LOSSES])
def test_loss_modules_match_torch(name):
    _, cls, settings, kind = next(entry for entry in LOSSES if entry[0] == name)
    ours, theirs = getattr(nn, cls)(**settings), getattr(torch.nn, cls)(**settings)
    data, target = _loss_inputs(kind)
    x, tx = wb.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    loss, tloss = ours(x, wb.tensor(target)), theirs(tx, torch.tensor(target))
    close(loss, tloss)
    loss.sum().backward()
    tloss.sum().backward()
    close(x.grad, tx.grad)


def test_bad_reduction_is_refused():
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nn.MSELoss(reduction="avg")


# ------------------------------------------------------------------ name scopes
def _scopes(fn):
    with events.collect() as got:
        fn()
    return [(e.op, e.scope) for e in got.events if e.kind == "op_recorded"]


def test_module_calls_open_scopes_named_by_path():
    model = nn.Sequential(MLP(), nn.Tanh())
    scopes = {scope for _, scope in _scopes(lambda: model(wb.randn(2, 4)))}
    assert ("Sequential", "0", "0.fc1") in scopes
    assert ("Sequential", "0", "0.act") in scopes
    assert ("Sequential", "0", "0.fc2") in scopes
    assert ("Sequential", "1") in scopes


def test_module_list_children_are_named_by_their_full_path():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])

        def forward(self, x):
            return self.blocks[1](self.blocks[0](x)).relu()

    model = Stack()
    scopes = _scopes(lambda: model(wb.randn(1, 2)))
    assert {s for _, s in scopes} == {
        ("Stack", "blocks.0"),
        ("Stack", "blocks.1"),
        ("Stack",),
    }


def test_user_scopes_wrap_module_scopes_and_close_on_error():
    model = MLP()
    with wb.name_scope("train"):
        scopes = _scopes(lambda: model(wb.randn(1, 4)))
        assert all(s[:2] == ("train", "MLP") for _, s in scopes)
        with pytest.raises(Exception):
            model(wb.randn(1, 5))  # wrong width: the scopes must still close
        assert wb.current_scope() == ("train",)
    assert wb.current_scope() == ()
    with pytest.raises(ValueError):
        with wb.name_scope(""):
            pass


def test_scopes_are_per_thread():
    seen = []
    with wb.name_scope("main"):
        worker = threading.Thread(target=lambda: seen.append(wb.current_scope()))
        worker.start()
        worker.join()
    assert seen == [()]


def test_forward_hooks_run_and_can_replace_the_output():
    layer = nn.Linear(2, 2)
    calls = []
    pre = layer.register_forward_pre_hook(lambda m, args: calls.append("pre"))
    post = layer.register_forward_hook(lambda m, args, out: out * 0)
    y = layer(wb.ones(1, 2))
    assert calls == ["pre"] and not y.detach().numpy().any()
    pre.remove()
    post.remove()
    assert layer(wb.ones(1, 2)).detach().numpy().any() and calls == ["pre"]


# ------------------------------------------- one-op kernels the layers use
def test_relu_backward_gives_zero_where_the_input_was_negative_even_for_inf():
    x = wb.tensor([-1.0, 2.0, -3.0, 0.0], requires_grad=True)
    y = x.relu()
    y.backward(wb.tensor([float("inf"), float("inf"), float("nan"), 1.0]))
    tx = torch.tensor([-1.0, 2.0, -3.0, 0.0], requires_grad=True)
    tx.relu().backward(torch.tensor([float("inf"), float("inf"), float("nan"), 1.0]))
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, np.inf, 0.0, 0.0])


def test_linear_weight_gradient_is_contiguous_in_the_weights_layout():
    layer = nn.Linear(5, 3)
    layer(wb.randn(4, 5)).sum().backward()
    assert layer.weight.grad.shape == (3, 5)
    assert layer.weight.grad.numpy().flags.c_contiguous


def test_linear_refuses_mismatched_shapes_with_a_clear_message():
    with pytest.raises(RuntimeError, match=r"linear: .*weight of shape \(3, 4\)"):
        nn.functional.linear(wb.ones(2, 5), wb.ones(3, 4))


def test_sigmoid_is_exact_at_the_extremes_without_warnings():
    values = [-1000.0, -90.0, -20.0, 0.0, 20.0, 90.0, 1000.0]
    for dtype, torch_dtype in ((wb.float32, torch.float32), (wb.float64, torch.float64)):
        x = wb.tensor(values, dtype=dtype, requires_grad=True)
        tx = torch.tensor(values, dtype=torch_dtype, requires_grad=True)
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            y = wb.sigmoid(x)
            y.sum().backward()
        tx.sigmoid().sum().backward()
        # At x = −90 in float32 the true σ is subnormal (8.2e-40); e⁻ˣ overflows, σ is 0 here
        # as in torch.
        expected = tx.sigmoid().detach().numpy()
        np.testing.assert_allclose(y.detach().numpy(), expected, rtol=1e-6, atol=1e-30)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-30)


def test_sigmoid_of_small_floats_is_computed_in_float32():
    # In float16, e⁻ˣ overflows for x < −11 while σ(−12) ≈ 6.1e-6 is representable:
    # like PyTorch, the kernel computes in float32 and rounds once.
    values = [-16.0, -12.0, -5.0, 0.0, 5.0, 12.0]
    for dtype, torch_dtype in ((wb.float16, torch.float16), (wb.bfloat16, torch.bfloat16)):
        y = wb.sigmoid(wb.tensor(values, dtype=dtype))
        expected = torch.tensor(values, dtype=torch_dtype).sigmoid().float().numpy()
        assert y.dtype == dtype
        np.testing.assert_allclose(y.float().numpy(), expected, rtol=1e-2)
        assert y.float().numpy()[1] > 0
