"""Reference values from REFERENCE A20 / D20.160, and TVM's backward ops (relax.op.grad)."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from tests.helpers import assert_close
from workbench.nn import functional as F
from workbench.ops import grad as G


def t64(values, requires_grad=False):
    return wb.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def grad_of(fn, *inputs):
    return wb.autograd.grad(fn(*inputs), inputs)


# ----------------------------------------------------------------- A20 table
def test_max_pool_tie_sends_the_gradient_to_the_first_element_only():
    x = t64(np.ones((1, 1, 2, 2)), requires_grad=True)
    (g,) = grad_of(lambda x: F.max_pool2d(x, 2).sum(), x)
    assert_close(g, [[[[1, 0], [0, 0]]]])


@pytest.mark.parametrize(
    "include_pad, expected",
    [
        (True, np.full((3, 3), 0.25)),
        # Windows cover rows/cols {−1, 0} and {1, 2}: the top-left window holds one input
        # value (gradient 1.0), the edge windows two (0.5), the inner one four (0.25).
        (False, [[1.0, 0.5, 0.5], [0.5, 0.25, 0.25], [0.5, 0.25, 0.25]]),
    ],
)
def test_avg_pool_padding_table(include_pad, expected):
    x = t64(np.ones((1, 1, 3, 3)), requires_grad=True)
    pooled = F.avg_pool2d(x, 2, 2, padding=1, count_include_pad=include_pad)
    (g,) = wb.autograd.grad(pooled.sum(), x)
    assert_close(g[0, 0], expected)


def _log_probs():
    return wb.tensor(np.log([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]), requires_grad=True)


@pytest.mark.parametrize("reduction, scale", [("mean", 0.25), ("sum", 1.0), ("none", 1.0)])
def test_nll_loss_weighted_gradients(reduction, scale):
    p, targets, weights = _log_probs(), wb.tensor([2, 0]), t64([1.0, 2.0, 3.0])
    loss = F.nll_loss(p, targets, weights, reduction=reduction)
    (g,) = wb.autograd.grad(loss.sum(), p)
    expected = np.zeros((2, 3))
    expected[0, 2], expected[1, 0] = -3 * scale, -1 * scale
    assert_close(g, expected)


def test_nll_loss_ignore_index_rows_are_zero_and_left_out_of_the_mean():
    p, targets = _log_probs(), wb.tensor([2, 0])
    loss = F.nll_loss(p, targets, ignore_index=0)
    (g,) = wb.autograd.grad(loss, p)
    assert_close(g, [[0, 0, -1], [0, 0, 0]])
    assert_close(loss, -np.log(0.5))


def test_var_is_unbiased_by_default():
    x = t64([1.0, 2.0, 6.0], requires_grad=True)
    (g,) = grad_of(lambda x: x.var(), x)
    assert_close(g, 2 * (x.detach().numpy() - 3.0) / 2)
    (g,) = grad_of(lambda x: x.var(unbiased=False), x)
    assert_close(g, 2 * (x.detach().numpy() - 3.0) / 3)


def test_cumsum_backward_is_a_reversed_cumsum():
    x = t64([0.0, 0.0, 0.0], requires_grad=True)
    (g,) = grad_of(lambda x: (x.cumsum(0) * t64([1.0, 10.0, 100.0])).sum(), x)
    assert_close(g, [111, 110, 100])


@pytest.mark.parametrize(
    "gather",
    [
        lambda x, i: x[i],
        lambda x, i: x.index_select(0, i),
        lambda x, i: wb.take(x, i),
        lambda x, i: x.gather(0, i),
        lambda x, i: F.embedding(i, x.unsqueeze(1)).squeeze(1),
    ],
    ids=["getitem", "index_select", "take", "gather", "embedding"],
)
def test_duplicate_indices_accumulate(gather):
    x = t64([1.0, 2.0, 3.0], requires_grad=True)
    (g,) = grad_of(lambda x: gather(x, wb.tensor([0, 0, 2])).sum(), x)
    assert_close(g, [2, 0, 1])


@pytest.mark.parametrize("op", [wb.sign, wb.floor, wb.round, wb.ceil, wb.trunc])
def test_step_functions_have_zero_gradient(op):
    x = t64([-1.5, 0.2, 2.7], requires_grad=True)
    (g,) = grad_of(lambda x: op(x).sum(), x)
    assert_close(g, [0, 0, 0])


def test_activation_kinks_follow_pytorch():
    x = t64([0.0], requires_grad=True)
    assert_close(grad_of(lambda x: F.leaky_relu(x, 0.2).sum(), x)[0], [0.2])
    assert_close(grad_of(lambda x: F.elu(x, 0.5).sum(), x)[0], [0.5])
    assert_close(grad_of(lambda x: F.relu(x).sum(), x)[0], [0.0])


def test_higher_order_gradients_of_a_cube():
    x = t64(3.0, requires_grad=True)
    (first,) = wb.autograd.grad(x**3, x, create_graph=True)
    (second,) = wb.autograd.grad(first, x, create_graph=True)
    (third,) = wb.autograd.grad(second, x)
    assert (first.item(), second.item(), third.item()) == (27.0, 18.0, 6.0)


# --------------------------------------------------------- relax.op.grad ops
def test_no_grad_passes_the_value_and_stops_the_gradient():
    x = t64([1.0, 2.0], requires_grad=True)
    stopped = G.no_grad(x)
    assert stopped.grad_fn.name() == "NoGradBackward0"
    assert_close(stopped, [1, 2])
    (stopped * x).sum().backward()
    assert_close(x.grad, [1, 2])  # only the path through the second factor counts


def test_take_backward_scatter_adds():
    g = t64([1.0, 1.0, 1.0])
    out = G.take_backward(g, wb.zeros(4, dtype=wb.float64), wb.tensor([0, 0, 2]))
    assert_close(out, [2, 0, 1, 0])
    out = G.take_backward(t64([[1.0, 2.0, 3.0]]), wb.zeros(1, 3), wb.tensor([2, 2, 0]), axis=1)
    assert_close(out, [[3, 0, 3]])


def test_nll_loss_backward_follows_the_tvm_formula():
    g = t64(2.0)
    p = wb.zeros(2, 3, dtype=wb.float64)
    w = t64([1.0, 2.0, 3.0])
    out = G.nll_loss_backward(g, p, wb.tensor([2, 1]), w, reduction="mean", ignore_index=1)
    assert_close(out, [[0, 0, -2.0], [0, 0, 0]])  # −w[t]·g / Σw with row 1 ignored
    one = G.nll_loss_backward(t64(1.0), wb.zeros(3, dtype=wb.float64), wb.tensor(1), w, "sum")
    assert_close(one, [0, -2, 0])  # the 1-D "no batch" case


def test_pool_backward_ops_equal_the_pool_gradients():
    rng = np.random.default_rng(0)
    x = t64(rng.standard_normal((2, 2, 5, 5)), requires_grad=True)
    g = t64(rng.standard_normal((2, 2, 3, 3)))
    for pool, backward in (
        (F.max_pool2d, G.max_pool2d_backward),
        (F.avg_pool2d, G.avg_pool2d_backward),
    ):
        (expected,) = wb.autograd.grad(pool(x, 3, 2, 1, ceil_mode=True), x, g)
        got = backward(g, x.detach(), 3, 2, (1, 1, 1, 1), ceil_mode=True, count_include_pad=True)
        assert_close(got, expected)


def test_forward_rules_are_built_from_the_backward_ops():
    """With create_graph (and a cotangent that requires grad) the backward graph shows the
    TVM ops that the rules call."""
    image = t64(np.arange(16.0).reshape(1, 1, 4, 4), requires_grad=True)
    scores = t64(np.arange(12.0).reshape(4, 3), requires_grad=True)
    cases = {
        "MaxPool2dBackwardBackward0": (image, lambda x: F.max_pool2d(x, 2)),
        "AvgPool2dBackwardBackward0": (image, lambda x: F.avg_pool2d(x, 2)),
        "TakeBackwardBackward0": (image, lambda x: wb.take(x, wb.tensor([0, 3]))),
        "NllLossBackwardBackward0": (scores, lambda x: F.nll_loss(x, wb.tensor([0, 1, 2, 0]))),
    }
    for node_name, (x, build) in cases.items():
        out = build(x)
        v = wb.ones_like(out, requires_grad=True)
        (g,) = wb.autograd.grad(out, x, v, create_graph=True)
        assert g.grad_fn.name() == node_name


def test_backward_ops_reject_other_layouts():
    x = wb.zeros(1, 1, 2, 2)
    with pytest.raises(ValueError, match="NCHW"):
        G.max_pool2d_backward(wb.zeros(1, 1, 1, 1), x, 2, 2, layout="NHWC")


def test_pool_second_derivatives_are_linear_in_the_output_gradient():
    """max_pool2d_backward is linear in ḡ, so its gradient w.r.t. ḡ is a gather."""
    x = t64([[[[1.0, 5.0], [3.0, 2.0]]]])
    g = t64([[[[2.0]]]], requires_grad=True)
    back = G.max_pool2d_backward(g, x, 2, 2)
    assert_close(back, [[[[0, 2], [0, 0]]]])
    (gg,) = wb.autograd.grad(back, g, t64([[[[10.0, 20.0], [30.0, 40.0]]]]))
    assert_close(gg, [[[[20.0]]]])


def test_max_pool_propagates_nan_like_pytorch():
    torch = pytest.importorskip("torch")
    values = np.array([[[[1.0, np.nan, 2.0, 0.0], [3.0, 4.0, 8.0, 1.0]]]])
    x, xt = t64(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    out, ref = F.max_pool2d(x, 2), torch.nn.functional.max_pool2d(xt, 2)
    assert_close(out, ref)
    g = np.array([[[[1.0, np.inf]]]])  # an infinite gradient must stay at its own argmax
    out.backward(wb.tensor(g))
    ref.backward(torch.tensor(g))
    assert_close(x.grad, xt.grad)
