"""Samples for more one-input math and activation ops (workbench/ops/unary.py, activations.py)."""

from __future__ import annotations

import numpy as np

import workbench as wb
from tests.samples import Sample

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

# Values kept away from the kinks and jumps, where finite differences mean nothing:
# no integers or halves (rounding), no zeros (leaky_relu, elu).
OFF_KINKS = np.array([[-2.3, -1.6, -0.7, -0.2], [0.3, 0.8, 1.4, 2.7], [-3.1, 3.2, -0.45, 0.55]])
# Both branches of erf's kernel: the series (|x| ≤ 2.5) and the continued fraction.
ERF_POINTS = np.array([-4.0, -2.6, -2.4, -1.0, -0.01, 0.2, 1.3, 2.45, 2.55, 3.5, 5.9])


def _unary(name, fn, torch_fn, low=-1.0, high=1.0, shape=(3, 4), **kw):
    return Sample(name, (name.split(":")[0],), fn, (shape,), torch_fn, low=low, high=high, **kw)


SAMPLES = [
    _unary("log1p", wb.log1p, lambda x: x.log1p(), low=-0.5, high=2.0),
    _unary("expm1", wb.expm1, lambda x: x.expm1()),
    _unary("reciprocal", wb.reciprocal, lambda x: x.reciprocal(), low=0.5, high=2.0),
    _unary("rsqrt", lambda x: x.rsqrt(), lambda x: x.rsqrt(), low=0.5, high=2.0),
    _unary("square", lambda x: x.square(), lambda x: x.square()),
    _unary("tan", wb.tan, lambda x: x.tan()),
    Sample("erf", ("erf",), wb.erf, (ERF_POINTS,), lambda x: x.erf()),
    Sample("floor", ("floor",), wb.floor, (OFF_KINKS,), lambda x: x.floor()),
    Sample("ceil", ("ceil",), lambda x: x.ceil(), (OFF_KINKS,), lambda x: x.ceil()),
    Sample("trunc", ("trunc",), wb.trunc, (OFF_KINKS,), lambda x: x.trunc()),
    Sample("round", ("round",), wb.round, (OFF_KINKS,), lambda x: x.round()),
    Sample(
        "round:decimals",
        ("round",),
        lambda x: wb.round(x, decimals=1),
        (OFF_KINKS + 0.01,),
        lambda x: torch.round(x, decimals=1),
    ),
    _unary("softplus", wb.softplus, TF.softplus if TF else None, low=-3, high=3),
    Sample(
        "softplus:beta_threshold",
        ("softplus",),
        lambda x: wb.softplus(x, beta=2.0, threshold=1.0),
        (OFF_KINKS,),
        lambda x: TF.softplus(x, beta=2.0, threshold=1.0),
    ),
    _unary("gelu", wb.gelu, TF.gelu if TF else None, low=-3, high=3),
    _unary(
        "gelu:tanh",
        lambda x: wb.gelu(x, approximate="tanh"),
        lambda x: TF.gelu(x, approximate="tanh"),
        low=-3,
        high=3,
    ),
    _unary("silu", wb.silu, TF.silu if TF else None, low=-3, high=3),
    Sample("leaky_relu", ("leaky_relu",), wb.leaky_relu, (OFF_KINKS,), TF and TF.leaky_relu),
    Sample(
        "leaky_relu:slope",
        ("leaky_relu",),
        lambda x: wb.leaky_relu(x, 0.2),
        (OFF_KINKS,),
        lambda x: TF.leaky_relu(x, 0.2),
    ),
    Sample("elu", ("elu",), wb.elu, (OFF_KINKS,), TF and TF.elu),
    Sample(
        "elu:alpha",
        ("elu",),
        lambda x: wb.elu(x, alpha=0.5),
        (OFF_KINKS,),
        lambda x: TF.elu(x, alpha=0.5),
    ),
]
