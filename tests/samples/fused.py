"""Samples for ops that do a few steps as one for speed: linear, and the backward ops that the
rules of sigmoid, tanh, relu and log_softmax call (called directly here)."""

from __future__ import annotations

import numpy as np

import workbench as wb
from tests.samples import Sample
from workbench.ops import activations
from workbench.ops.softmax import log_softmax_backward

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

_torch_linear = None if TF is None else TF.linear


def _torch_log_softmax_backward(dim: int):
    return lambda g, y: torch.ops.aten._log_softmax_backward_data(g, y, dim, y.dtype)


SAMPLES = [
    Sample("linear", ("linear",), wb.nn.functional.linear, ((5, 4), (3, 4), (3,)), _torch_linear),
    Sample(
        "linear:batched_no_bias",
        ("linear",),
        wb.nn.functional.linear,
        ((2, 5, 4), (3, 4)),
        _torch_linear,
    ),
    Sample(
        "linear:vector", ("linear",), wb.nn.functional.linear, ((4,), (3, 4), (3,)), _torch_linear
    ),
    Sample(
        "linear:weight_only",
        ("linear",),
        wb.nn.functional.linear,
        ((5, 4), (3, 4), (3,)),
        _torch_linear,
        grad=(False, True, False),
    ),
    Sample(
        "relu_backward",
        ("relu_backward",),
        lambda g, x: activations.relu_backward(g, x.relu()),
        ((3, 4), np.array([[-1.5, 0.7, 2.0, -0.3], [0.2, -2.2, 1.1, 0.4], [-0.9, 1.6, -0.1, 3.0]])),
        None if torch is None else lambda g, x: torch.where(x.relu() > 0, g, 0.0),
    ),
    Sample(
        "tanh_backward",
        ("tanh_backward",),
        activations.tanh_backward,
        ((3, 4), (3, 4)),
        None if torch is None else torch.ops.aten.tanh_backward,
        low=-0.9,
        high=0.9,
    ),
    Sample(
        "log_softmax_backward",
        ("log_softmax_backward",),
        lambda g, y: log_softmax_backward(g, y, -1),
        ((3, 4), (3, 4)),
        None if torch is None else _torch_log_softmax_backward(-1),
        low=-2.0,
        high=0.0,
    ),
    Sample(
        "log_softmax_backward:of_log_softmax",
        ("log_softmax_backward",),
        lambda g, x: log_softmax_backward(g, x.log_softmax(0), 0),
        ((2, 3, 4), (2, 3, 4)),
        None if torch is None else lambda g, x: _torch_log_softmax_backward(0)(g, x.log_softmax(0)),
    ),
    Sample(
        "sigmoid_backward",
        ("sigmoid_backward",),
        activations.sigmoid_backward,
        ((3, 4), (3, 4)),
        None if torch is None else torch.ops.aten.sigmoid_backward,
        low=0.05,
        high=0.95,
    ),
]
