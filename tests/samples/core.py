"""Samples for the ops of the engine core (issue 2): elementwise, reductions, shapes, matmul."""

from __future__ import annotations

import workbench as wb
from tests.samples import Sample

try:
    import torch
except ImportError:
    torch = None

SAMPLES = [
    Sample(
        "add_broadcast",
        ("add", "collapse_sum_like", "expand"),
        lambda a, b: a + b,
        ((2, 3), (3,)),
        lambda a, b: a + b,
    ),
    Sample("mul_broadcast", ("mul",), lambda a, b: a * b, ((3, 1), (1, 4)), lambda a, b: a * b),
    Sample("sigmoid", ("sigmoid",), wb.sigmoid, ((3, 3),), lambda x: x.sigmoid()),
]
