"""The rules of sigmoid, tanh, relu and log_softmax call one backward op each
(``sigmoid_backward``, ``tanh_backward``, ``relu_backward``, ``log_softmax_backward``,
as PyTorch's and TVM's do): one pass over memory instead of three or four ops. Each
is held here to the formula of its rule's docstring, written in elementary ops: on the
registry samples, the same gradients to first and second order (w.r.t. the inputs and
w.r.t. the upstream gradient ȳ), and gradcheck and gradgradcheck pass.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from tests.samples import all_samples
from tests.samples.complex_numbers import complex_variant
from workbench.ops.registry import OPS

KERNELS = {  # op -> the backward op its rule calls
    "sigmoid": "sigmoid_backward",
    "tanh": "tanh_backward",
    "relu": "relu_backward",
    "log_softmax": "log_softmax_backward",
}


def sigmoid_formula(orig, grad):
    """x̄ = ȳ · y · (1 − y) (complex: ȳ · conj(y) · (1 − conj(y)))."""
    y = wb.conj(orig.out)
    return [grad * y * (1 - y)]


def tanh_formula(orig, grad):
    """x̄ = ȳ · (1 − y²) (complex: ȳ · (1 − conj(y)²))."""
    y = wb.conj(orig.out)
    return [grad * (1 - y * y)]


def relu_formula(orig, grad):
    """x̄ = ȳ · [y > 0]; 0 where y ≤ 0, also for an infinite ȳ (written as 0 · y there)."""
    y = orig.out
    return [wb.where(y <= 0, 0 * y, grad)]


def log_softmax_formula(orig, grad):
    """x̄ = ȳ − exp(y) · Σ ȳ along dim."""
    y = orig.out
    return [grad - y.exp() * grad.sum(orig.attrs["dim"], keepdim=True)]


FORMULAS = {
    "sigmoid": sigmoid_formula,
    "tanh": tanh_formula,
    "relu": relu_formula,
    "log_softmax": log_softmax_formula,
}
SAMPLES = [s for s in all_samples() if set(s.ops) & set(KERNELS)]
SAMPLES += [complex_variant(s) for s in SAMPLES if s.name in ("sigmoid", "tanh", "sigmoid_large")]


@pytest.fixture
def formula_rules(monkeypatch):
    """Inside the test, the ops run the formulas above as their rules."""

    def use():
        for name, formula in FORMULAS.items():
            monkeypatch.setattr(OPS[name], "gradient", formula)

    return use


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
        # (of the output's dtype: PyTorch refuses a real upstream for a complex output)
        upstream = wb.tensor(rng.standard_normal(out.shape).astype(out.dtype), requires_grad=True)
        first = wb.autograd.grad(out, wanted, upstream, create_graph=True)
        total = sum((g * wb.tensor(rng.standard_normal(g.shape))).sum().real for g in first)
        second = wb.autograd.grad(total, [*wanted, upstream], allow_unused=True)
    ran = {e.op for e in got.events if isinstance(e, wb.events.OpRecorded)}
    first = [g.detach().numpy() for g in first]
    second = [None if g is None else g.numpy() for g in second]
    return first, second, ran


def _assert_same(formula, by_op, what):
    assert len(formula) == len(by_op)
    for i, (a, b) in enumerate(zip(formula, by_op)):
        assert (a is None) == (b is None), f"{what} {i}: formula gives {a}, backward op {b}"
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, err_msg=f"{what} {i}")


def test_every_backward_op_is_pinned_by_samples():
    covered = {op for s in SAMPLES for op in s.ops}
    assert set(KERNELS) <= covered


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_same_as_formula(sample, formula_rules):
    first, second, ran = _gradients(sample)
    formula_rules()
    formula_first, formula_second, formula_ran = _gradients(sample)
    kernels = {KERNELS[op] for op in sample.ops if op in KERNELS}
    assert kernels <= ran, "the rules did not run their backward op"
    assert not kernels & formula_ran, "the formulas ran a backward op"
    _assert_same(formula_first, first, "first-order gradient")
    _assert_same(formula_second, second, "second-order gradient")


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_gradcheck_and_gradgradcheck_pass(sample):
    inputs = tuple(_inputs(sample))
    kw = {"eps": sample.eps, "atol": sample.atol, "rtol": sample.rtol}
    assert wb.autograd.gradcheck(sample.fn, inputs, **kw)
    assert wb.autograd.gradgradcheck(sample.fn, inputs, **kw)


@pytest.mark.parametrize("op", sorted(KERNELS))
def test_float32_gradients_stay_float32(op):
    x = wb.tensor(np.array([[-1.5, 0.5, 2.0]], dtype=np.float32), requires_grad=True)
    fn = getattr(wb, op)
    y = fn(x, -1) if op == "log_softmax" else fn(x)
    (gx,) = wb.autograd.grad(y, x, wb.ones(1, 3, dtype=wb.float32))
    assert gx.dtype == np.float32


def test_relu_gradient_of_its_gradient_is_zero_not_missing():
    """PyTorch answers 0 here (threshold_backward's derivative w.r.t. y is zeros)."""
    x = wb.tensor([-1.0, 2.0, 0.5], requires_grad=True)
    (gx,) = wb.autograd.grad(x.relu().sum(), x, create_graph=True)
    (ggx,) = wb.autograd.grad(gx.sum(), x)
    np.testing.assert_array_equal(gx.detach().numpy(), [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(ggx.numpy(), [0.0, 0.0, 0.0])


def test_relu_gives_zero_where_masked_even_for_inf_and_nan():
    x = wb.tensor([-1.0, 2.0, -3.0, 0.0], requires_grad=True)
    x.relu().backward(wb.tensor([np.inf, np.inf, np.nan, 1.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, np.inf, 0.0, 0.0])


def test_relu_passes_the_gradient_at_nan_as_pytorch():
    """PyTorch's relu backward zeroes the gradient where y ≤ 0: at y = NaN it passes."""
    x = wb.tensor([float("nan"), -1.0, 0.0, 2.0], requires_grad=True)
    x.relu().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 0.0, 1.0])
