"""Bad arguments raise errors that name the op and the shapes (DESIGN: errors teach)."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.nn import functional as F


def randn(*shape):
    return wb.randn(*shape, dtype=wb.float64)


def test_conv2d_wrong_channels_names_the_shapes():
    with pytest.raises(
        RuntimeError, match=r"conv2d: Given groups=1.*\[4, 4, 3, 3\].*\[2, 3, 5, 5\]"
    ):
        F.conv2d(randn(2, 3, 5, 5), randn(4, 4, 3, 3))


def test_conv2d_kernel_larger_than_padded_input():
    with pytest.raises(RuntimeError, match=r"conv2d: .*\(4 x 4\).*\(5 x 5\).*input \(1, 1, 2, 2\)"):
        F.conv2d(randn(1, 1, 2, 2), randn(1, 1, 5, 5), padding=1)


def test_conv2d_groups_must_divide_the_channels():
    with pytest.raises(RuntimeError, match="conv2d: groups=2"):
        F.conv2d(randn(1, 4, 5, 5), randn(3, 2, 3, 3), groups=2)


def test_conv2d_bad_bias_and_dtype_and_same_with_stride():
    with pytest.raises(RuntimeError, match=r"conv2d: expected bias of shape \(2,\)"):
        F.conv2d(randn(1, 1, 4, 4), randn(2, 1, 3, 3), randn(3))
    with pytest.raises(RuntimeError, match="conv2d: Input type"):
        F.conv2d(randn(1, 1, 4, 4), wb.randn(2, 1, 3, 3))
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided"):
        F.conv2d(randn(1, 1, 4, 4), randn(2, 1, 3, 3), stride=2, padding="same")


def test_nll_loss_target_out_of_range():
    with pytest.raises(IndexError, match=r"nll_loss: Target 3 is out of bounds.*\(2, 3\)"):
        F.nll_loss(randn(2, 3), wb.tensor([0, 3]))


def test_nll_loss_wrong_target_shape_and_dtype_and_reduction():
    with pytest.raises(ValueError, match=r"nll_loss: expected targets of shape \(2,\)"):
        F.nll_loss(randn(2, 3), wb.tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match="nll_loss: expected integer class targets"):
        F.nll_loss(randn(2, 3), wb.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="nll_loss: avg is not a valid value for reduction"):
        F.nll_loss(randn(2, 3), wb.tensor([0, 1]), reduction="avg")
    with pytest.raises(RuntimeError, match="weight tensor should be defined"):
        F.nll_loss(randn(2, 3), wb.tensor([0, 1]), weight=randn(2))


def test_cross_entropy_target_out_of_range():
    with pytest.raises(IndexError, match="nll_loss: Target -2 is out of bounds"):
        F.cross_entropy(randn(2, 3), wb.tensor([-2, 1]))


def test_pool_padding_larger_than_half_the_kernel():
    with pytest.raises(RuntimeError, match="max_pool2d: pad should be at most half"):
        F.max_pool2d(randn(1, 1, 5, 5), 3, padding=2)
    with pytest.raises(RuntimeError, match="avg_pool2d: pad should be at most half"):
        F.avg_pool2d(randn(1, 1, 5, 5), 2, padding=2)


def test_pool_output_too_small_and_bad_rank():
    with pytest.raises(RuntimeError, match=r"max_pool2d: Given input size \(1, 1, 2, 2\)"):
        F.max_pool2d(randn(1, 1, 2, 2), 3)
    # PyTorch's avg_pool2d reads dim -3 of a 2-D input before checking its rank: IndexError
    with pytest.raises(IndexError, match="avg_pool2d: expected a 3-D"):
        F.avg_pool2d(randn(2, 2), 2)


def test_shape_op_errors():
    with pytest.raises(RuntimeError, match="cat\\(\\): Sizes of tensors must match"):
        wb.cat([randn(2, 3), randn(3, 3)], 1)
    with pytest.raises(RuntimeError, match="stack\\(\\): stack expects each tensor"):
        wb.stack([randn(2), randn(3)])
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes"):
        wb.split(randn(5), [2, 2])
    with pytest.raises(RuntimeError, match="repeat\\(\\): Number of dimensions"):
        randn(2, 3).repeat(2)
    with pytest.raises(RuntimeError, match="pad\\(\\): Padding length must be divisible by 2"):
        wb.pad(randn(2, 3), (1, 2, 3))
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2"):
        wb.tril(randn(3))
    with pytest.raises(IndexError, match="flip: Dimension out of range"):
        randn(2, 3).flip(2)


def test_index_op_errors():
    with pytest.raises(IndexError, match=r"index_select\(\): index 3 is out of bounds for dim"):
        randn(3, 2).index_select(0, wb.tensor([0, 3]))
    with pytest.raises(IndexError, match="index_select\\(\\): Index is supposed to be a vector"):
        randn(3, 2).index_select(0, wb.tensor([[0]]))
    with pytest.raises(RuntimeError, match="gather\\(\\): Index tensor must have the same number"):
        randn(3, 2).gather(0, wb.tensor([0, 1]))
    with pytest.raises(IndexError, match=r"take\(\): index 6 is out of bounds"):
        wb.take(randn(2, 3), wb.tensor([6]))
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks"):
        randn(2).masked_fill(wb.tensor([1, 0]), 0.0)


@pytest.mark.parametrize(
    ("shape", "dim"),
    [((4,), 0), ((2, 4), 0), ((2, 4), 1), ((2, 4), -1), ((2, 3, 4), 1), ((2, 3, 4), 2)],
)
def test_index_select_out_of_range_has_pytorchs_type_along_every_dim(shape, dim):
    """PyTorch's CPU kernel reports a RuntimeError along dim 1 and an IndexError elsewhere."""
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as theirs:
        torch.zeros(shape).index_select(dim, torch.tensor([9]))
    for call in (
        lambda: wb.zeros(shape).index_select(dim, wb.tensor([9])),
        lambda: wb.take(wb.zeros(shape), wb.tensor([9]), axis=dim),
    ):
        with pytest.raises(Exception) as ours:
            call()
        assert type(theirs.value) in (IndexError, RuntimeError)
        assert isinstance(ours.value, type(theirs.value)), (ours.value, theirs.value)
        assert "index 9 is out of bounds" in str(ours.value)


def test_index_select_with_a_0d_index_keeps_the_dim_as_pytorch():
    torch = pytest.importorskip("torch")
    x = np.arange(8.0).reshape(2, 4)
    ours = wb.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    picked = (ours.index_select(1, wb.tensor(1)), theirs.index_select(1, torch.tensor(1)))
    assert tuple(picked[0].shape) == tuple(picked[1].shape) == (2, 1)
    picked[0].sum().backward()
    picked[1].sum().backward()
    assert ours.grad.tolist() == theirs.grad.tolist()


def test_reduction_and_layer_errors():
    with pytest.raises(TypeError, match=r"var\(\): can't specify both unbiased and correction"):
        randn(3).var(unbiased=True, correction=0)
    with pytest.raises(RuntimeError, match=r"layer_norm: Given normalized_shape=\[4\]"):
        F.layer_norm(randn(2, 3), (4,))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.dropout(randn(3), 1.5)
    with pytest.raises(RuntimeError, match="binary_cross_entropy: all elements of input"):
        F.binary_cross_entropy(wb.tensor([1.5]), wb.tensor([1.0]))
    with pytest.raises(ValueError, match="binary_cross_entropy: Using a target size"):
        F.binary_cross_entropy(wb.tensor([0.5]), wb.tensor([1.0, 0.0]))


def test_softmax_without_dim_warns_and_picks_the_legacy_dim():
    x = randn(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        y = F.softmax(x)
    np.testing.assert_allclose(y.sum(1).numpy(), [1.0, 1.0])
