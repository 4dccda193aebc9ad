"""Samples for the fused ``linear`` op (workbench/ops/linalg.py): y = x Wᵀ + b."""

from __future__ import annotations

import workbench as wb
from tests.samples import Sample

try:
    import torch.nn.functional as TF
except ImportError:
    TF = None

_torch_linear = None if TF is None else TF.linear

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
]
