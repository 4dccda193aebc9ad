"""Samples for the ops added for PyTorch programs (issue 26): log10, log2, all, any,
isclose, one_hot, batch_norm; and the ops that give a graph PyTorch's nodes: addmm and t
(nn.Linear), transpose, squeeze, unsqueeze, mse_loss, binary_cross_entropy_with_logits."""

from __future__ import annotations

import numpy as np

import workbench as wb
from tests.samples import Sample
from workbench.nn import functional as F
from workbench.ops.linalg import linear_in_steps

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

CLASSES = np.array([0, 3, 1, 3, 2])
PROBABILITIES = np.array([[0.1, 0.9, 0.5, 0.3], [0.7, 0.2, 0.6, 0.4], [0.05, 0.95, 0.5, 0.8]])
MIXED = np.array([[0.0, 1.5, -2.0], [0.0, 0.0, 0.0], [3.0, 1.0, 0.5]])


def _torch_batch_norm(x, w, b):
    return TF.batch_norm(x, None, None, w, b, training=True, eps=1e-3)


SAMPLES = [
    Sample("log10", ("log10",), wb.log10, ((3, 4),), lambda x: x.log10(), low=0.2, high=3.0),
    Sample("log2", ("log2",), lambda x: x.log2(), ((3, 4),), lambda x: x.log2(), low=0.2, high=3.0),
    Sample("all", ("all",), lambda x: x.all(), (MIXED,), lambda x: x.all()),
    Sample(
        "all:dim_keepdim",
        ("all",),
        lambda x: wb.all(x, dim=1, keepdim=True),
        (MIXED,),
        lambda x: torch.all(x, dim=1, keepdim=True),
    ),
    Sample("any:dim", ("any",), lambda x: x.any(0), (MIXED,), lambda x: x.any(0)),
    Sample(
        "isclose",
        ("isclose",),
        lambda a, b: wb.isclose(a, b, rtol=0.0, atol=0.1),
        (np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.05, 2.5, 3.0, 3.95])),
        lambda a, b: torch.isclose(a, b, rtol=0.0, atol=0.1),
    ),
    Sample("one_hot", ("one_hot",), F.one_hot, (CLASSES,), TF and TF.one_hot),
    Sample(
        "one_hot:num_classes",
        ("one_hot",),
        lambda t: F.one_hot(t, num_classes=6),
        (CLASSES,),
        lambda t: TF.one_hot(t, num_classes=6),
    ),
    Sample(
        "batch_norm:1d",
        ("batch_norm",),
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True, eps=1e-3),
        ((6, 3), (3,), (3,)),
        _torch_batch_norm,
    ),
    Sample(
        "batch_norm:2d_images",
        ("batch_norm",),
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True, eps=1e-3),
        ((2, 3, 2, 3), (3,), (3,)),
        _torch_batch_norm,
    ),
    Sample(
        "batch_norm:no_affine",
        ("batch_norm",),
        lambda x: F.batch_norm(x, None, None, training=True),
        ((4, 2, 5),),
        None if TF is None else lambda x: TF.batch_norm(x, None, None, training=True),
    ),
    Sample(
        "addmm",
        ("addmm",),
        wb.addmm,
        ((3,), (4, 2), (2, 3)),
        None if torch is None else torch.addmm,
    ),
    Sample(
        "addmm:matrix_bias",
        ("addmm",),
        wb.addmm,
        ((4, 3), (4, 2), (2, 3)),
        None if torch is None else torch.addmm,
    ),
    Sample(
        "addmm:transposed_weight",
        ("addmm", "t"),
        lambda b, x, w: wb.addmm(b, x, w.t()),
        ((3,), (4, 2), (3, 2)),
        None if torch is None else lambda b, x, w: torch.addmm(b, x, w.t()),
    ),
    Sample(
        "linear_in_steps",
        ("addmm", "t"),
        linear_in_steps,
        ((5, 4), (3, 4), (3,)),
        TF and TF.linear,
    ),
    Sample(
        "linear_in_steps:batched_no_bias",
        ("matmul", "t", "reshape"),
        linear_in_steps,
        ((2, 5, 4), (3, 4)),
        TF and TF.linear,
    ),
    Sample(
        "linear_in_steps:vector",
        ("addmm", "t", "reshape"),
        linear_in_steps,
        ((4,), (3, 4), (3,)),
        TF and TF.linear,
    ),
    Sample("t", ("t",), lambda x: x.t(), ((2, 3),), lambda x: x.t()),
    Sample(
        "transpose:outer_dims",
        ("transpose",),
        lambda x: x.transpose(0, 2),
        ((2, 3, 4),),
        lambda x: x.transpose(0, 2),
    ),
    Sample(
        "unsqueeze", ("unsqueeze",), lambda x: x.unsqueeze(1), ((2, 3),), lambda x: x.unsqueeze(1)
    ),
    Sample("squeeze", ("squeeze",), lambda x: x.squeeze(), ((2, 1, 3, 1),), lambda x: x.squeeze()),
    Sample(
        "squeeze:dim", ("squeeze",), lambda x: x.squeeze(1), ((2, 1, 3),), lambda x: x.squeeze(1)
    ),
    Sample(
        "mse_loss:none",
        ("mse_loss",),
        lambda a, b: F.mse_loss(a, b, reduction="none"),
        ((3, 4), (3, 4)),
        None if TF is None else lambda a, b: TF.mse_loss(a, b, reduction="none"),
    ),
    Sample(
        "bce_with_logits:weight_sum",
        ("binary_cross_entropy_with_logits",),
        lambda x, t, w: F.binary_cross_entropy_with_logits(x, t, w, reduction="sum"),
        ((3, 4), PROBABILITIES, (4,)),
        None
        if TF is None
        else lambda x, t, w: TF.binary_cross_entropy_with_logits(x, t, w, reduction="sum"),
        grad=(True, True, False),
        low=-3,
        high=3,
    ),
]
