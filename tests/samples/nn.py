"""Samples for conv2d, the pools, nll_loss, layer_norm, dropout and TVM's backward ops."""

from __future__ import annotations

import numpy as np

import workbench as wb
from tests.samples import Sample
from workbench.nn import functional as F
from workbench.ops import grad as G
from workbench.ops import nn as nn_ops

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

TARGETS_BATCH = np.array([[0, 2, 1, 1], [2, 2, 0, 1]])  # (N=2, d=4) for predictions (2, 3, 4)
TARGETS = np.array([2, 0, 1])
CLASS_WEIGHTS = np.array([1.0, 2.0, 3.0])


def _conv(name, x_shape, w_shape, **kw):
    return Sample(
        f"conv2d:{name}",
        ("conv2d",),
        lambda x, w: F.conv2d(x, w, **kw),
        (x_shape, w_shape),
        lambda x, w: TF.conv2d(x, w, **kw),
    )


def _pool(name, op, **kw):
    ours, theirs = getattr(F, op), getattr(TF, op) if TF else None
    return Sample(
        f"{op}:{name}",
        (op,),
        lambda x: ours(x, **kw),
        ((2, 2, 5, 5),),
        lambda x: theirs(x, **kw),
    )


def _torch_pool_grad(op, **kw):
    """torch's gradient of a pool w.r.t. its input, as a function of (output_grad, data)."""

    def backward(g, x):
        x = x.detach().requires_grad_()
        return torch.autograd.grad(getattr(TF, op)(x, **kw), x, g, create_graph=True)[0]

    return backward


def _torch_max_gather(v, x):
    out, index = TF.max_pool2d(x, 3, 2, 1, return_indices=True)
    return v.flatten(2).gather(2, index.flatten(2)).view_as(out)


def _nll(name, reduction, weighted, ignore_index, batch=True):
    targets = TARGETS_BATCH if batch else np.array(1)
    shape = (2, 3, 4) if batch else (3,)
    inputs = (shape, targets) + ((CLASS_WEIGHTS,) if weighted else ())
    kw = {"reduction": reduction, "ignore_index": ignore_index}
    return Sample(
        f"nll_loss:{name}",
        ("nll_loss",),
        lambda p, t, *w: F.nll_loss(p, t, *w, **kw),
        inputs,
        lambda p, t, *w: TF.nll_loss(p, t, *w, **kw),
        grad=(True, False, False)[: len(inputs)],
    )


SAMPLES = [
    _conv("basic", (2, 2, 5, 5), (3, 2, 3, 3)),
    _conv("stride_2_1", (2, 2, 5, 5), (3, 2, 3, 3), stride=(2, 1)),
    _conv("padding_3_2", (1, 2, 4, 4), (2, 2, 3, 3), padding=(3, 2)),
    _conv("dilation_2", (2, 2, 5, 5), (2, 2, 2, 2), dilation=2),
    _conv("groups_2", (2, 4, 5, 5), (4, 2, 3, 3), groups=2, padding=1),
    _conv("stride_2_leftover", (1, 2, 6, 6), (2, 2, 3, 3), stride=2),
    _conv("same", (1, 2, 5, 5), (2, 2, 2, 2), padding="same"),
    Sample(
        "conv2d:bias",
        ("conv2d",),
        lambda x, w, b: F.conv2d(x, w, b, padding=1),
        ((2, 2, 4, 4), (3, 2, 3, 3), (3,)),
        lambda x, w, b: TF.conv2d(x, w, b, padding=1),
    ),
    Sample(
        "conv2d:unbatched",
        ("conv2d",),
        lambda x, w: F.conv2d(x, w),
        ((2, 4, 4), (1, 2, 3, 3)),
        lambda x, w: TF.conv2d(x, w),
    ),
    Sample(
        "conv2d_input_grad",
        ("conv2d_input_grad",),
        lambda g, w: nn_ops.conv2d_input_grad(
            g,
            w,
            (2, 4, 6, 6),
            {"stride": (2, 2), "padding": (1,) * 4, "dilation": (1, 1), "groups": 2},
        ),
        ((2, 4, 3, 3), (4, 2, 3, 3)),
        lambda g, w: torch.nn.grad.conv2d_input((2, 4, 6, 6), w, g, 2, 1, 1, 2),
    ),
    Sample(
        "conv2d_weight_grad",
        ("conv2d_weight_grad",),
        lambda x, g: nn_ops.conv2d_weight_grad(
            x,
            g,
            (3, 2, 2, 2),
            {"stride": (1, 2), "padding": (0,) * 4, "dilation": (2, 1), "groups": 1},
        ),
        ((1, 2, 5, 5), (1, 3, 3, 2)),
        lambda x, g: torch.nn.grad.conv2d_weight(x, (3, 2, 2, 2), g, (1, 2), 0, (2, 1), 1),
    ),
    _pool("k2", "max_pool2d", kernel_size=2),
    _pool("k3_s2_p1_ceil", "max_pool2d", kernel_size=3, stride=2, padding=1, ceil_mode=True),
    _pool("k2_s1_dilation2", "max_pool2d", kernel_size=2, stride=1, dilation=2),
    _pool("k2_s2_p1_include_pad", "avg_pool2d", kernel_size=2, stride=2, padding=1),
    _pool(
        "k3_s2_p1_ceil_exclude_pad",
        "avg_pool2d",
        kernel_size=3,
        stride=2,
        padding=1,
        ceil_mode=True,
        count_include_pad=False,
    ),
    _pool("k2_ceil_include_pad", "avg_pool2d", kernel_size=2, ceil_mode=True),
    _pool("k3_divisor_override", "avg_pool2d", kernel_size=3, stride=1, divisor_override=4),
    Sample(
        "max_pool2d:unbatched",
        ("max_pool2d",),
        lambda x: F.max_pool2d(x, 2, 1),
        ((2, 3, 3),),
        lambda x: TF.max_pool2d(x, 2, 1),
    ),
    Sample(
        "max_pool2d_backward",
        ("max_pool2d_backward",),
        lambda g, x: G.max_pool2d_backward(g, x, 3, 2, 1, ceil_mode=True),
        ((2, 2, 3, 3), (2, 2, 5, 5)),
        _torch_pool_grad("max_pool2d", kernel_size=3, stride=2, padding=1, ceil_mode=True),
        grad=(True, False),
    ),
    Sample(
        "max_pool2d_gather",
        ("max_pool2d_gather",),
        lambda v, x: G.max_pool2d_gather(v, x, G.pool_attrs(3, 2, 1, 1, False, False)),
        ((2, 2, 5, 5), (2, 2, 5, 5)),
        _torch_max_gather,
        grad=(True, False),
    ),
    Sample(
        "avg_pool2d_backward",
        ("avg_pool2d_backward",),
        lambda g, x: G.avg_pool2d_backward(g, x, 3, 2, (1, 1, 1, 1), ceil_mode=True),
        ((2, 2, 3, 3), (2, 2, 5, 5)),
        _torch_pool_grad(
            "avg_pool2d",
            kernel_size=3,
            stride=2,
            padding=1,
            ceil_mode=True,
            count_include_pad=False,
        ),
        grad=(True, False),
    ),
    _nll("mean", "mean", False, -100),
    _nll("mean_weighted", "mean", True, -100),
    _nll("mean_weighted_ignore_1", "mean", True, 1),
    _nll("sum_ignore_-1", "sum", False, -1),
    _nll("sum_weighted_ignore_1", "sum", True, 1),
    _nll("none_weighted", "none", True, -100),
    _nll("none_ignore_1", "none", False, 1),
    _nll("no_batch", "mean", True, -100, batch=False),
    _nll("no_batch_none", "none", False, -100, batch=False),
    Sample(
        "nll_loss_backward",
        ("nll_loss_backward",),
        lambda g, p, t, w: G.nll_loss_backward(g, p, t, w, "none", ignore_index=1),
        ((3,), (3, 3), TARGETS, CLASS_WEIGHTS),
        lambda g, p, t, w: _torch_nll_backward(g, p, t, w),
        grad=(True, False, False, False),
    ),
    Sample(
        "layer_norm:affine",
        ("layer_norm",),
        lambda x, w, b: F.layer_norm(x, (4,), w, b),
        ((2, 3, 4), (4,), (4,)),
        lambda x, w, b: TF.layer_norm(x, (4,), w, b),
    ),
    Sample(
        "layer_norm:two_dims",
        ("layer_norm",),
        lambda x: F.layer_norm(x, (3, 4), eps=1e-3),
        ((2, 3, 4),),
        lambda x: TF.layer_norm(x, (3, 4), eps=1e-3),
    ),
    Sample(
        "dropout:seeded",
        ("dropout",),
        lambda x: (wb.manual_seed(3), F.dropout(x, 0.4))[1],
        ((3, 4),),
        None if torch is None else lambda x: (torch.manual_seed(3), TF.dropout(x, 0.4))[1],
        note="the mask is random; the seed inside fn keeps it fixed across gradcheck's calls "
        "(and equal to PyTorch's: the same generator, the same draws)",
    ),
    Sample(
        "no_grad",
        ("no_grad",),
        G.no_grad,
        ((2, 3),),
        grad=(False,),
        note="no_grad stops gradients, so finite differences would disagree by design; "
        "tests/test_grad_ops.py checks it",
    ),
]


def _torch_nll_backward(g, p, t, w):
    p = p.detach().requires_grad_()
    loss = TF.nll_loss(p, t, w, reduction="none", ignore_index=1)
    return torch.autograd.grad(loss, p, g, create_graph=True)[0]
