"""The reference backward (autograd/reference.py): what it does on its own, and its size.

tests/test_one_road.py holds the engine to it on every registry sample and random
programs, step by step.
"""

from __future__ import annotations

import ast
import inspect

import numpy as np
import pytest

import workbench as wb
from workbench.autograd import reference


def test_a_non_scalar_root_takes_its_gradient():
    x = wb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    reference.backward(x * x, wb.tensor([1.0, 0.0, -1.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, -6.0])


def test_the_reference_frees_the_graph_as_backward_does():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    reference.backward(y)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_the_reference_is_at_most_80_lines_of_code():
    """Docstrings, comments and blank lines do not count."""
    source = inspect.getsource(reference)
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    code = [
        line
        for number, line in enumerate(source.splitlines(), start=1)
        if number not in docstrings and line.strip() and not line.strip().startswith("#")
    ]
    assert len(code) <= 80, f"the reference backward has {len(code)} lines of code"
