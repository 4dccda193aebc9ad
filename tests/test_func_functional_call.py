"""``wb.func.functional_call`` against ``torch.func.functional_call`` (issue 36).

The same modules (the same weights) in both libraries: the transforms over a module run
as a function of its weights (gradients, Jacobians, per-example gradients: torch.func's
recipe), the module's own tensors back in place afterwards (also when the call raises),
the dicts' rules (missing keys keep the module's own, ``strict``, tied weights), and
bad inputs refused with PyTorch's exception types.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch
import torch.func as tf

import workbench as wb
from workbench.compat.torch_alias import MODULES

RNG = np.random.default_rng(36)
LIBS = {"wb": (wb, wb.func), "torch": (torch, tf)}


def copied(array, lib):
    return lib.tensor(array)


def linear(lib, in_features=3, out_features=2):
    """An nn.Linear with the weights of the test's random stream (the same in both libraries
    when built in the same order)."""
    layer = lib.nn.Linear(in_features, out_features, dtype=lib.float64)
    return _filled(layer, lib)


def sequential(lib):
    nn = lib.nn
    model = nn.Sequential(
        nn.Linear(3, 4, dtype=lib.float64), nn.Tanh(), nn.Linear(4, 2, dtype=lib.float64)
    )
    return _filled(model, lib)


class Scaled:
    """A module with a buffer, ``scale * x + shift``; its forward writes a new ``calls``
    buffer (a tensor the module replaces during the call)."""

    @staticmethod
    def build(lib):
        class ScaledModule(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.shift = lib.nn.Parameter(lib.ones(3, dtype=lib.float64))
                self.register_buffer("scale", lib.full((3,), 2.0, dtype=lib.float64))
                self.register_buffer("calls", lib.zeros((), dtype=lib.float64))

            def forward(self, x):
                self.calls = self.calls + 1
                return self.scale * x + self.shift

        return ScaledModule()


def _filled(model, lib):
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(WEIGHTS.standard_normal(tuple(p.shape))))
    return model


WEIGHTS = np.random.default_rng(0)


def both(build):
    """``build(lib)`` in each library, with the same weights."""
    global WEIGHTS
    seed = int(RNG.integers(1 << 30))
    models = {}
    for name, (lib, _) in LIBS.items():
        WEIGHTS = np.random.default_rng(seed)
        models[name] = build(lib)
    return models


def detached_parameters(model) -> dict:
    return {name: p.detach() for name, p in model.named_parameters()}


def same(ours, theirs, atol=1e-10):
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs)
        for key in theirs:
            same(ours[key], theirs[key], atol)
        return
    if isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same(a, b, atol)
        return
    assert isinstance(ours, wb.Tensor), type(ours)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=atol, rtol=1e-7)


def mse(lib):
    def loss(prediction, target):
        return ((prediction - target) ** 2).mean()

    return loss


# ---------------------------------------------------------------- under the transforms
@pytest.mark.parametrize("build", [linear, sequential], ids=["linear", "sequential"])
def test_per_example_gradients_as_torch_func(build):
    """torch.func's recipe: vmap(grad(loss of functional_call)), in_dims None for the
    weights, each example a batch of one."""
    models = both(build)
    x, t = RNG.standard_normal((5, 3)), RNG.standard_normal((5, 2))
    results = {}
    for name, (lib, func) in LIBS.items():
        model = models[name]

        def loss(params, sample, target, model=model, lib=lib, func=func):
            prediction = func.functional_call(model, params, (sample.unsqueeze(0),))
            return mse(lib)(prediction, target.unsqueeze(0))

        params = detached_parameters(model)
        per_example = func.vmap(func.grad(loss), in_dims=(None, 0, 0))
        results[name] = per_example(params, copied(x, lib), copied(t, lib))
    same(results["wb"], results["torch"])
    assert set(results["wb"]) == {name for name, _ in models["wb"].named_parameters()}


@pytest.mark.parametrize("build", [linear, sequential], ids=["linear", "sequential"])
def test_grad_and_jacrev_of_the_weights_as_torch_func(build):
    models = both(build)
    x = RNG.standard_normal((4, 3))
    grads, jacobians, outer = {}, {}, {}
    for name, (lib, func) in LIBS.items():
        model, inputs = models[name], copied(x, lib)

        def output(params, model=model, inputs=inputs, func=func):
            return func.functional_call(model, params, inputs)

        params = detached_parameters(model)
        grads[name] = func.grad(lambda p, output=output: output(p).tanh().sum())(params)
        jacobians[name] = func.jacrev(output)(params)
        # the module's own weights, on the outer graph, as the dict's values
        outer[name] = lib.autograd.grad(
            output(dict(model.named_parameters())).sum(), tuple(model.parameters())
        )
        assert all(p.grad is None for p in model.parameters())
    same(grads["wb"], grads["torch"])
    same(jacobians["wb"], jacobians["torch"])
    same(outer["wb"], outer["torch"])


def test_a_tuple_of_dicts_parameters_and_buffers():
    models = both(Scaled.build)
    x = RNG.standard_normal(3)
    outputs, grads = {}, {}
    for name, (lib, func) in LIBS.items():
        model = models[name]
        params = {"shift": lib.tensor([1.0, -1.0, 0.5], dtype=lib.float64)}
        buffers = {"scale": lib.tensor([3.0, 0.0, -2.0], dtype=lib.float64)}
        inputs = copied(x, lib)
        outputs[name] = func.functional_call(model, (params, buffers), inputs)

        def total(p, model=model, buffers=buffers, inputs=inputs, func=func):
            return func.functional_call(model, (p, buffers), (inputs,)).square().sum()

        grads[name] = func.grad(total)(params)
    same(outputs["wb"], outputs["torch"])
    same(grads["wb"], grads["torch"])


# ---------------------------------------------------------------- the module's own tensors
def test_missing_keys_keep_the_modules_own_and_everything_is_restored():
    models = both(linear)
    x = RNG.standard_normal(3)
    for name, (lib, func) in LIBS.items():
        model = models[name]
        weight, bias = model.weight, model.bias
        new_bias = lib.tensor([10.0, 20.0], dtype=lib.float64)
        out = func.functional_call(model, {"bias": new_bias}, copied(x, lib))
        expected = copied(x, lib) @ weight.detach().T + new_bias
        np.testing.assert_allclose(out.detach().numpy(), expected.numpy())
        assert model.weight is weight and model.bias is bias
        assert dict(model.named_parameters()).keys() == {"weight", "bias"}


def test_the_modules_own_come_back_when_the_call_raises():
    models = both(linear)
    refusals = {}
    for name, (lib, func) in LIBS.items():
        model = models[name]
        weight = model.weight
        with pytest.raises(RuntimeError) as refusal:
            func.functional_call(model, {"weight": lib.zeros(2, 5)}, lib.ones(3))
        refusals[name] = refusal.type
        assert model.weight is weight
    assert refusals["wb"] is refusals["torch"]


def test_a_tensor_the_module_replaces_ends_in_the_dict():
    """PyTorch's note: ``self.calls = self.calls + 1`` in forward updates the dict given,
    not the module."""
    models = both(Scaled.build)
    for name, (lib, func) in LIBS.items():
        model = models[name]
        state = {"calls": lib.tensor(5.0, dtype=lib.float64)}
        func.functional_call(model, state, lib.ones(3, dtype=lib.float64))
        assert float(state["calls"]) == 6.0
        assert float(model.calls) == 0.0


def test_an_unexpected_key_without_strict_is_an_attribute_for_the_call_only():
    models = both(linear)
    for name, (lib, func) in LIBS.items():
        model = models[name]
        func.functional_call(model, {"extra": lib.ones(1)}, lib.ones(3, dtype=lib.float64))
        assert not hasattr(model, "extra")


def tied(lib):
    class Tied(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = lib.nn.Linear(2, 2, bias=False, dtype=lib.float64)
            self.second = lib.nn.Linear(2, 2, bias=False, dtype=lib.float64)
            self.second.weight = self.first.weight

        def forward(self, x):
            return self.second(self.first(x))

    return _filled(Tied(), lib)


@pytest.mark.parametrize("tie_weights", [True, False])
def test_tied_weights_as_torch(tie_weights):
    models = both(tied)
    x = RNG.standard_normal(2)
    outputs, refusals = {}, {}
    for name, (lib, func) in LIBS.items():
        model = models[name]
        eye = lib.eye(2, dtype=lib.float64)
        outputs[name] = func.functional_call(
            model, {"first.weight": eye * 3}, copied(x, lib), tie_weights=tie_weights
        )
        try:
            func.functional_call(
                model,
                {"first.weight": eye, "second.weight": eye * 2},
                copied(x, lib),
                tie_weights=tie_weights,
            )
            refusals[name] = None
        except ValueError as error:
            refusals[name] = type(error)
    same(outputs["wb"], outputs["torch"])
    assert refusals["wb"] is refusals["torch"]


# ---------------------------------------------------------------- strict and bad inputs
@pytest.mark.parametrize(
    "keys",
    [["weight", "bias"], ["weight"], ["weight", "bias", "extra"], ["extra"], ["0.weight"]],
)
def test_strict_refuses_missing_and_unexpected_keys_as_torch(keys):
    models = both(linear)
    answers = {}
    for name, (lib, func) in LIBS.items():
        tensors = {key: getattr(models[name], key, lib.ones(1)) for key in keys}
        try:
            func.functional_call(models[name], tensors, lib.ones(3, dtype=lib.float64), strict=True)
            answers[name] = None
        except RuntimeError as error:
            answers[name] = str(error)  # the same words: PyTorch's list of keys
    assert answers["wb"] == answers["torch"]


def _not_a_module(lib):
    return lambda x: x


BAD_CALLS = {
    "not a module": lambda lib, fc, m: fc(_not_a_module(lib), {}, lib.ones(3)),
    "not a module, untied": lambda lib, fc, m: fc(
        _not_a_module(lib), {"weight": lib.ones(1)}, lib.ones(3), tie_weights=False
    ),
    "an int for the dicts": lambda lib, fc, m: fc(m, 3, lib.ones(3)),
    "None for the dicts": lambda lib, fc, m: fc(m, None, lib.ones(3)),
    "a str for the dicts": lambda lib, fc, m: fc(m, "ab", lib.ones(3)),
    "a list with a non-dict": lambda lib, fc, m: fc(m, [{}, 3], lib.ones(3)),
    "a key in two dicts": lambda lib, fc, m: fc(
        m, ({"bias": lib.ones(2)}, {"bias": lib.ones(2)}), lib.ones(3)
    ),
    "a value that is not a tensor": lambda lib, fc, m: fc(m, {"weight": 3.0}, lib.ones(3)),
    "a key below a parameter": lambda lib, fc, m: fc(m, {"weight.x": lib.ones(1)}, lib.ones(3)),
    "a key below a missing submodule": lambda lib, fc, m: fc(
        m, {"layer.weight": lib.ones(1)}, lib.ones(3)
    ),
    "a key naming a non-tensor attribute": lambda lib, fc, m: fc(
        m, {"in_features": lib.ones(1)}, lib.ones(3)
    ),
    "an empty key": lambda lib, fc, m: fc(m, {"": lib.ones(1)}, lib.ones(3)),
    "a key that is not a str": lambda lib, fc, m: fc(m, {1: lib.ones(1)}, lib.ones(3)),
    "a strict call with an extra key": lambda lib, fc, m: fc(
        m, {**dict(m.named_parameters()), "extra": lib.ones(1)}, lib.ones(3), strict=True
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_inputs_refused_as_torch(case):
    models = both(linear)
    refusals = {}
    for name, (lib, func) in LIBS.items():
        with pytest.raises(Exception) as refusal:
            BAD_CALLS[case](lib, func.functional_call, models[name])
        refusals[name] = refusal.type
        if name == "wb":
            assert (
                "functional" in str(refusal.value)
                or refusal.type is ValueError
                or ("reparametrizing" in str(refusal.value))
            ), str(refusal.value)
    assert refusals["wb"] is refusals["torch"], refusals


def test_as_torch_exposes_it_as_torch_func_functional_call():
    torch_func = importlib.import_module(MODULES["torch.func"])
    assert torch_func.functional_call is wb.func.functional_call
    assert "functional_call" in torch_func.__all__
