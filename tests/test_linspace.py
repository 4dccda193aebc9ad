"""``linspace`` gives PyTorch's values to the bit (issue 36, "Small": PyTorch fills from
both ends, numpy from the start only, so 604 of ``linspace(-π, π, 2000)``'s values were
one unit in the last place apart, and PyTorch's RMSprop polynomial tutorial ended 0.9%
away after 2,000 steps)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(36)
CASES = [
    (-math.pi, math.pi, 2000),
    (0, 1, 11),
    (1, 0, 7),
    (-3.3, 7.1, 1001),
    (2, 2, 5),
    (0, 1, 2),
    (3, -4, 3),
] + [
    (float(_rng.normal() * 10.0 ** _rng.integers(-3, 4)), float(_rng.normal() * 10), int(n))
    for n in _rng.integers(2, 5000, size=60)
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linspace_equals_pytorch_bit_for_bit(dtype):
    differing = [
        (start, end, steps)
        for start, end, steps in CASES
        if not np.array_equal(
            wb.linspace(start, end, steps, dtype=getattr(wb, dtype)).numpy(),
            torch.linspace(start, end, steps, dtype=getattr(torch, dtype)).numpy(),
        )
    ]
    assert not differing, f"{len(differing)} of {len(CASES)} differ, first {differing[:3]}"


def test_both_ends_are_exact_and_the_default_dtype_is_used():
    x = wb.linspace(-math.pi, math.pi, 2000)
    assert x.dtype == wb.float32
    assert x[0].item() == np.float32(-math.pi) and x[-1].item() == np.float32(math.pi)


@pytest.mark.parametrize(
    "start, end, steps, dtype",
    [(0, 1, 1, "float32"), (0, 1, 0, "float32"), (0, 5, 4, "int64"), (0.5, 2, 3, "float16")],
)
def test_the_other_cases_still_equal_pytorch(start, end, steps, dtype):
    got = wb.linspace(start, end, steps, dtype=getattr(wb, dtype)).numpy()
    expected = torch.linspace(start, end, steps, dtype=getattr(torch, dtype)).numpy()
    assert got.dtype == expected.dtype and np.array_equal(got, expected)
