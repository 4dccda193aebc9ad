"""Small helpers shared by the tests."""

from __future__ import annotations

import re

import numpy as np

try:
    import torch
except ImportError:  # the comparisons skip without torch
    torch = None


def dot_vertices(dot: str) -> dict:
    """Vertex id -> its classes, as written in ``wb.viz``'s DOT (``id="n5", class="..."``).

    Graphviz copies both attributes onto the SVG's ``<g>``: tests/test_graphviz_asset.py
    checks that the browser's Graphviz does, so the DOT says what the page will mark.
    """
    found = re.findall(r'\bid="([^"]+)", class="([^"]*)"', dot)
    return {vid: classes.split() for vid, classes in found}


def assert_close(actual, expected, atol=1e-6, rtol=1e-5):
    actual = actual.detach().numpy() if hasattr(actual, "detach") else np.asarray(actual)
    if torch is not None and isinstance(expected, torch.Tensor):
        expected = expected.detach().numpy()
    np.testing.assert_allclose(actual, np.asarray(expected), atol=atol, rtol=rtol)
