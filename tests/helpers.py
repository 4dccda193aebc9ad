"""Small helpers shared by the tests."""

from __future__ import annotations

import numpy as np

try:
    import torch
except ImportError:  # the comparisons skip without torch
    torch = None


def assert_close(actual, expected, atol=1e-6, rtol=1e-5):
    actual = actual.detach().numpy() if hasattr(actual, "detach") else np.asarray(actual)
    if torch is not None and isinstance(expected, torch.Tensor):
        expected = expected.detach().numpy()
    np.testing.assert_allclose(actual, np.asarray(expected), atol=atol, rtol=rtol)
