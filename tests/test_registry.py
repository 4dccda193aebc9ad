"""Registry-driven checks: every op has samples; gradcheck, gradgradcheck and PyTorch agree."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from tests.samples import all_samples
from tests.samples.complex_numbers import COMPLEX_NAMES, complex_variant
from workbench.ops.registry import OPS

torch = pytest.importorskip("torch") if False else None
try:
    import torch
except ImportError:
    torch = None

REAL_SAMPLES = all_samples()
_BY_NAME = {s.name: s for s in REAL_SAMPLES}
COMPLEX_SAMPLES = [complex_variant(_BY_NAME[name]) for name in COMPLEX_NAMES]
SAMPLES = REAL_SAMPLES + COMPLEX_SAMPLES


def test_every_complex_name_is_a_sample():
    assert set(COMPLEX_NAMES) <= set(_BY_NAME), sorted(set(COMPLEX_NAMES) - set(_BY_NAME))


def _real_sum(t):
    """A real scalar to differentiate: the sum, or the sum of its real part (PyTorch's
    ``backward``/``grad`` create an implicit gradient only for real scalars)."""
    return t.sum().real


def test_every_registered_op_has_a_sample():
    covered = {op for s in SAMPLES for op in s.ops}
    missing = sorted(set(OPS) - covered)
    assert not missing, f"ops without samples in tests/samples: {missing}"


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_sample_runs_the_ops_it_claims(sample):
    """A sample covers an op only if the op really runs: forward, backward or double backward."""
    inputs = _wb_inputs(sample)
    with wb.events.collect() as got:
        out = sample.fn(*inputs)
        wanted = [x for x in inputs if isinstance(x, wb.Tensor) and x.requires_grad]
        if out.requires_grad and wanted:
            grads = wb.autograd.grad(_real_sum(out), wanted, create_graph=True, allow_unused=True)
            second = [_real_sum(g) for g in grads if g is not None and g.requires_grad]
            if second:
                wb.autograd.grad(sum(second), wanted, allow_unused=True)
    ran = {e.op for e in got.events if isinstance(e, wb.events.OpRecorded)}
    assert set(sample.ops) <= ran, f"{sample.name} never ran {sorted(set(sample.ops) - ran)}"


def test_every_differentiable_op_has_a_gradient_rule_with_formula():
    for op in OPS.values():
        if op.differentiable:
            assert op.gradient is not None, f"op '{op.name}' has no gradient rule"
            assert "Forward" in op.formula and "Backward" in op.formula, (
                f"the rule of '{op.name}' needs a 'Forward: ... Backward: ...' docstring"
            )


def _wb_inputs(sample):
    tensors = []
    for array, req in zip(sample.arrays(), sample.requires()):
        if isinstance(array, np.ndarray):
            tensors.append(wb.tensor(array, requires_grad=req))
        else:
            tensors.append(array)
    return tensors


def _differentiable(sample) -> bool:
    return any(OPS[name].differentiable for name in sample.ops) and any(sample.requires())


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_gradcheck(sample):
    if not _differentiable(sample):
        out = sample.fn(*_wb_inputs(sample))
        assert not getattr(out, "requires_grad", False)
        return
    inputs = _wb_inputs(sample)
    assert wb.autograd.gradcheck(
        sample.fn, tuple(inputs), eps=sample.eps, atol=sample.atol, rtol=sample.rtol
    )


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_gradgradcheck(sample):
    if not _differentiable(sample) or not sample.gradgrad:
        assert sample.gradgrad or sample.note, f"{sample.name}: gradgrad=False needs a note"
        return
    inputs = _wb_inputs(sample)
    assert wb.autograd.gradgradcheck(
        sample.fn, tuple(inputs), eps=sample.eps, atol=sample.atol, rtol=sample.rtol
    )


def _torch_inputs(sample):
    out = []
    for array, req in zip(sample.arrays(), sample.requires()):
        if isinstance(array, np.ndarray):
            out.append(torch.tensor(array, requires_grad=req))
        else:
            out.append(array)
    return out


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize(
    "sample", [s for s in SAMPLES if s.torch_fn is not None], ids=lambda s: s.name
)
def test_matches_torch(sample):
    ours_in, theirs_in = _wb_inputs(sample), _torch_inputs(sample)
    ours, theirs = sample.fn(*ours_in), sample.torch_fn(*theirs_in)
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().numpy(), atol=1e-8, rtol=1e-6, err_msg="value"
    )
    if not _differentiable(sample):
        return
    rng = np.random.default_rng(7)
    cotangent = _random_like(rng, ours)
    wanted = [i for i, r in enumerate(sample.requires()) if r]
    ours_g = wb.autograd.grad(
        ours,
        [ours_in[i] for i in wanted],
        wb.tensor(cotangent),
        create_graph=True,
        allow_unused=True,
    )
    theirs_g = torch.autograd.grad(
        theirs,
        [theirs_in[i] for i in wanted],
        torch.tensor(cotangent),
        create_graph=True,
        allow_unused=True,
    )
    for a, b in zip(ours_g, theirs_g):
        if b is None:
            assert a is None or not np.any(a.detach().numpy())
            continue
        np.testing.assert_allclose(
            a.detach().numpy(), b.detach().numpy(), atol=1e-7, rtol=1e-5, err_msg="gradient"
        )
    if not sample.gradgrad:
        return
    # second order: differentiate <grads, w> with a random w
    pairs = [
        (a, b)
        for a, b in zip(ours_g, theirs_g)
        if a is not None and b is not None and a.requires_grad and b.requires_grad
    ]
    if not pairs:
        return
    ws = [_random_like(rng, a) for a, _ in pairs]
    ours_s = sum(_real_sum(a * wb.tensor(w)) for (a, _), w in zip(pairs, ws))
    theirs_s = sum(_real_sum(b * torch.tensor(w)) for (_, b), w in zip(pairs, ws))
    ours_gg = wb.autograd.grad(ours_s, [ours_in[i] for i in wanted], allow_unused=True)
    theirs_gg = torch.autograd.grad(theirs_s, [theirs_in[i] for i in wanted], allow_unused=True)
    for a, b in zip(ours_gg, theirs_gg):
        if b is None or a is None:
            assert (a is None or not np.any(a.numpy())) and (b is None or not torch.any(b))
            continue
        np.testing.assert_allclose(
            a.numpy(),
            b.numpy(force=True),  # force: torch may return a ZeroTensor here
            atol=1e-7,
            rtol=1e-5,
            err_msg="second-order gradient",
        )


def _random_like(rng, t) -> np.ndarray:
    """Standard normal values in ``t``'s shape and dtype; both parts random if complex."""
    values = rng.standard_normal(t.shape)
    if np.dtype(t.dtype).kind == "c":
        values = values + 1j * rng.standard_normal(t.shape)
    return values.astype(t.dtype)


def _has_complex_input(sample) -> bool:
    return any(isinstance(a, np.ndarray) and a.dtype.kind == "c" for a in sample.arrays())


# complex64: the complex variants, and this module's samples that take complex inputs
COMPLEX64_SAMPLES = [
    complex_variant(s, np.complex64)
    for s in [_BY_NAME[n] for n in COMPLEX_NAMES] + list(filter(_has_complex_input, REAL_SAMPLES))
    if s.torch_fn is not None
]


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("sample", COMPLEX64_SAMPLES, ids=lambda s: s.name)
def test_matches_torch_complex64(sample):
    """Single precision: values and gradients as PyTorch's, to float32's accuracy."""
    ours_in, theirs_in = _wb_inputs(sample), _torch_inputs(sample)
    ours, theirs = sample.fn(*ours_in), sample.torch_fn(*theirs_in)
    assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch."))
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-4, atol=1e-5)
    if not ours.requires_grad:  # comparisons: no gradient to compare
        assert not theirs.requires_grad
        return
    wanted = [i for i, r in enumerate(sample.requires()) if r]
    cotangent = _random_like(np.random.default_rng(7), ours)
    ours_g = wb.autograd.grad(ours, [ours_in[i] for i in wanted], wb.tensor(cotangent))
    theirs_g = torch.autograd.grad(theirs, [theirs_in[i] for i in wanted], torch.tensor(cotangent))
    for a, b in zip(ours_g, theirs_g):
        assert a.dtype == np.dtype(str(b.dtype).removeprefix("torch."))
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5, err_msg="gradient")
