"""The fused backward kernels (wb.ops.fused) against the formula rules they stand in for.

On the registry samples of sigmoid, tanh, relu and log_softmax (float64), the fused rule
must give the formula rule's gradients, first order and second order (w.r.t. the inputs
and w.r.t. the upstream gradient ȳ); gradcheck and gradgradcheck must pass with the fused
rules on; and switching them off must put the formula rules back.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from tests.samples import all_samples
from workbench.ops import activations, fused
from workbench.ops.registry import OPS
from workbench.ops.softmax import log_softmax_grad

KERNELS = {  # op -> the fused kernel its fast rule calls
    "sigmoid": "sigmoid_backward",
    "tanh": "tanh_backward",
    "relu": "relu_backward",
    "log_softmax": "log_softmax_backward",
}
FORMULA_RULES = {
    "sigmoid": activations.sigmoid_grad,
    "tanh": activations.tanh_grad,
    "relu": activations.relu_grad,
    "log_softmax": log_softmax_grad,
}
SAMPLES = [s for s in all_samples() if set(s.ops) & set(KERNELS)]


@pytest.fixture(autouse=True)
def _formula_rules_after_each_test():
    yield
    fused.disable()


def _inputs(sample) -> list:
    return [
        wb.tensor(a, requires_grad=r) if isinstance(a, np.ndarray) else a
        for a, r in zip(sample.arrays(), sample.requires())
    ]


def _gradients(sample):
    """First-order gradients of the sample, and the second-order ones of ⟨first, w⟩
    w.r.t. the inputs and the upstream gradient; plus the ops that ran."""
    rng = np.random.default_rng(0)
    inputs = _inputs(sample)
    wanted = [x for x in inputs if isinstance(x, wb.Tensor) and x.requires_grad]
    with wb.events.collect() as got:
        out = sample.fn(*inputs)
        upstream = wb.tensor(rng.standard_normal(out.shape), requires_grad=True)
        first = wb.autograd.grad(out, wanted, upstream, create_graph=True)
        total = sum((g * wb.tensor(rng.standard_normal(g.shape))).sum() for g in first)
        second = wb.autograd.grad(total, [*wanted, upstream], allow_unused=True)
    ran = {e.op for e in got.events if isinstance(e, wb.events.OpRecorded)}
    first = [g.detach().numpy() for g in first]
    second = [None if g is None else g.numpy() for g in second]
    return first, second, ran


def _assert_same(formula, fused_, what):
    assert len(formula) == len(fused_)
    for i, (a, b) in enumerate(zip(formula, fused_)):
        assert (a is None) == (b is None), f"{what} {i}: formula gives {a}, fused {b}"
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, err_msg=f"{what} {i}")


def test_every_fused_rule_is_pinned_by_samples():
    assert set(fused.FUSED_RULES) == set(KERNELS)
    covered = {op for s in SAMPLES for op in s.ops}
    assert set(KERNELS) <= covered


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_same_as_formula(sample):
    first, second, ran = _gradients(sample)
    with fused.fused_rules():
        fast_first, fast_second, fast_ran = _gradients(sample)
    kernels = {KERNELS[op] for op in sample.ops if op in KERNELS}
    assert not kernels & ran, "the formula rules ran a fused kernel"
    assert kernels <= fast_ran, "the fused rules did not run their kernel"
    _assert_same(first, fast_first, "first-order gradient")
    _assert_same(second, fast_second, "second-order gradient")


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_gradcheck_and_gradgradcheck_pass_with_fused_rules(sample):
    inputs = tuple(_inputs(sample))
    with fused.fused_rules():
        kw = {"eps": sample.eps, "atol": sample.atol, "rtol": sample.rtol}
        assert wb.autograd.gradcheck(sample.fn, inputs, **kw)
        assert wb.autograd.gradgradcheck(sample.fn, inputs, **kw)


def test_formula_rules_are_the_default_and_disable_puts_them_back():
    formulas = {name: OPS[name].formula for name in KERNELS}
    for name, rule in FORMULA_RULES.items():
        assert OPS[name].gradient is rule
    assert not fused.is_enabled()
    fused.enable()
    assert fused.is_enabled()
    for name in KERNELS:
        assert OPS[name].gradient is fused.FUSED_RULES[name]
        assert OPS[name].formula == formulas[name]  # learners see the same formula
    fused.disable()
    for name, rule in FORMULA_RULES.items():
        assert OPS[name].gradient is rule
        assert OPS[name].formula == formulas[name]


def test_the_block_restores_what_was_on_before_it_even_after_an_error():
    with fused.fused_rules():
        assert fused.is_enabled()
        with fused.fused_rules(False):
            assert OPS["sigmoid"].gradient is FORMULA_RULES["sigmoid"]
        assert fused.is_enabled()
    assert not fused.is_enabled()
    with pytest.raises(RuntimeError, match="boom"), fused.fused_rules():
        raise RuntimeError("boom")
    assert OPS["relu"].gradient is FORMULA_RULES["relu"]


@pytest.mark.parametrize("on", [False, True], ids=["formula", "fused"])
@pytest.mark.parametrize("op", sorted(KERNELS))
def test_float32_gradients_stay_float32(op, on):
    x = wb.tensor(np.array([[-1.5, 0.5, 2.0]], dtype=np.float32), requires_grad=True)
    fn = getattr(wb, op)
    with fused.fused_rules(on):
        y = fn(x, -1) if op == "log_softmax" else fn(x)
        (gx,) = wb.autograd.grad(y, x, wb.ones(1, 3, dtype=wb.float32))
    assert gx.dtype == np.float32


@pytest.mark.parametrize("on", [False, True], ids=["formula", "fused"])
def test_relu_gradient_of_its_gradient_is_zero_not_missing(on):
    """PyTorch answers 0 here (threshold_backward's derivative w.r.t. y is zeros)."""
    x = wb.tensor([-1.0, 2.0, 0.5], requires_grad=True)
    with fused.fused_rules(on):
        (gx,) = wb.autograd.grad(x.relu().sum(), x, create_graph=True)
        (ggx,) = wb.autograd.grad(gx.sum(), x)
    np.testing.assert_array_equal(gx.detach().numpy(), [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(ggx.numpy(), [0.0, 0.0, 0.0])


@pytest.mark.parametrize("on", [False, True], ids=["formula", "fused"])
def test_relu_gives_zero_where_masked_even_for_inf_and_nan(on):
    x = wb.tensor([-1.0, 2.0, -3.0, 0.0], requires_grad=True)
    with fused.fused_rules(on):
        x.relu().backward(wb.tensor([np.inf, np.inf, np.nan, 1.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, np.inf, 0.0, 0.0])


@pytest.mark.parametrize("fused_on", [False, True])
def test_relu_passes_the_gradient_at_nan_as_pytorch(fused_on):
    """PyTorch's relu backward zeroes the gradient where y ≤ 0: at y = NaN it passes."""
    with fused.fused_rules(enabled=fused_on):
        x = wb.tensor([float("nan"), -1.0, 0.0, 2.0], requires_grad=True)
        x.relu().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 0.0, 1.0])
