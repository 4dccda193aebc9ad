"""workbench.nn.functional beyond the samples table: randomness, options, in-place forms."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from tests.helpers import assert_close
from workbench.nn import functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

BRIEF_NAMES = (
    "linear conv2d max_pool2d avg_pool2d nll_loss cross_entropy mse_loss l1_loss "
    "binary_cross_entropy binary_cross_entropy_with_logits layer_norm dropout embedding "
    "softmax log_softmax relu sigmoid tanh gelu silu leaky_relu elu softplus"
).split()


def test_functional_has_pytorchs_names():
    missing = [name for name in BRIEF_NAMES if not callable(getattr(F, name, None))]
    assert not missing
    assert wb.nn.functional is F


def test_new_ops_are_tensor_methods():
    x = wb.tensor([[0.5, -1.0], [2.0, 0.25]])
    assert_close(x.softmax(1).sum(1), [1, 1])
    assert_close(x.square(), x.numpy() ** 2)
    assert_close(x.flip(0), x.numpy()[::-1])
    assert x.var().shape == () and x.cumsum(0).shape == (2, 2)


def test_dropout_is_seeded_by_manual_seed():
    x = wb.ones(200, requires_grad=True)
    wb.manual_seed(7)
    a = F.dropout(x, 0.3)
    wb.manual_seed(7)
    b = F.dropout(x, 0.3)
    assert_close(a, b.detach().numpy())
    kept = a.detach().numpy() != 0
    assert_close(a.detach().numpy()[kept], np.full(kept.sum(), 1 / 0.7))
    assert 0.5 < kept.mean() < 0.9  # about 70 % kept
    a.sum().backward()
    assert_close(x.grad, kept / 0.7)  # the gradient goes through the same mask


def test_dropout_edge_cases():
    x = wb.ones(4, requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert not np.any(F.dropout(x, 1.0).detach().numpy())


def test_inplace_activations_write_into_the_input_and_keep_gradients():
    x = wb.tensor([-1.0, 2.0], requires_grad=True)
    y = x * 1
    out = F.relu(y, inplace=True)
    assert out is y
    assert_close(y, [0, 2])
    y.sum().backward()
    assert_close(x.grad, [0, 1])


@needs_torch
def test_embedding_padding_idx_keeps_the_value_but_not_the_gradient():
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((4, 3))
    ids = np.array([[1, 3, 1], [0, 2, 3]])
    ours = wb.tensor(weight, requires_grad=True)
    theirs = torch.tensor(weight, requires_grad=True)
    out = F.embedding(wb.tensor(ids), ours, padding_idx=3)
    ref = TF.embedding(torch.tensor(ids), theirs, padding_idx=3)
    assert_close(out, ref)
    cotangent = rng.standard_normal(out.shape)
    out.backward(wb.tensor(cotangent))
    ref.backward(torch.tensor(cotangent))
    assert_close(ours.grad, theirs.grad)
    assert not np.any(ours.grad.numpy()[3])


@needs_torch
def test_embedding_max_norm_renormalizes_used_rows_in_place():
    weight = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    ours, theirs = wb.tensor(weight), torch.tensor(weight)
    ids = np.array([0, 1])
    F.embedding(wb.tensor(ids), ours, max_norm=1.0)
    TF.embedding(torch.tensor(ids), theirs, max_norm=1.0)
    assert_close(ours, theirs)
    assert_close(ours[2], [6.0, 8.0])  # an unused row is left alone


@needs_torch
def test_max_pool2d_return_indices_match_torch():
    x = np.random.default_rng(1).standard_normal((2, 2, 5, 5))
    out, idx = F.max_pool2d(wb.tensor(x), 3, 2, 1, ceil_mode=True, return_indices=True)
    ref, ref_idx = TF.max_pool2d(torch.tensor(x), 3, 2, 1, ceil_mode=True, return_indices=True)
    assert_close(out, ref)
    np.testing.assert_array_equal(idx.numpy(), ref_idx.numpy())


@needs_torch
def test_float32_conv_and_pool_keep_their_dtype_and_match_torch():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    y = F.max_pool2d(F.conv2d(wb.tensor(x), wb.tensor(w), padding=1), 2)
    ref = TF.max_pool2d(TF.conv2d(torch.tensor(x), torch.tensor(w), padding=1), 2)
    assert y.dtype == np.float32
    assert_close(y, ref, atol=1e-4)


def test_conv2d_second_derivative_is_exact_for_a_bilinear_map():
    """conv is bilinear: d²⟨v, conv(x, w)⟩ / dx dw is a constant; check one entry by hand."""
    x = wb.tensor(np.zeros((1, 1, 3, 3)), requires_grad=True)
    w = wb.tensor(np.zeros((1, 1, 2, 2)), requires_grad=True)
    y = F.conv2d(x, w)
    (gx,) = wb.autograd.grad(y.sum(), x, create_graph=True)
    (gw,) = wb.autograd.grad(gx[0, 0, 1, 1], w)
    # x[1,1] is read by all four windows, once at every kernel position
    assert_close(gw, np.ones((1, 1, 2, 2)))


def test_cross_entropy_equals_nll_of_log_softmax():
    logits = wb.tensor([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]], dtype=wb.float64)
    target = wb.tensor([1, 2])
    expected = F.nll_loss(F.log_softmax(logits, 1), target)
    assert_close(F.cross_entropy(logits, target), expected.numpy())
