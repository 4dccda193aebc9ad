"""The reference backward (autograd/reference.py) is the spec: backward() must agree.

Every registry sample and a hundred random programs are built twice; one copy runs
``wb.autograd.reference.backward``, the other the engine's ``backward()``; the
leaves' ``.grad`` must be equal to the last bit.
"""

from __future__ import annotations

import ast
import inspect

import numpy as np
import pytest
from programs import random_program, sample_program
from samples import all_samples

import workbench as wb
from workbench.autograd import reference
from workbench.ops import OPS

SAMPLES = [
    s for s in all_samples() if any(s.requires()) and any(OPS[op].differentiable for op in s.ops)
]


def _loss(outputs: list, grads: list):
    """One scalar whose gradient w.r.t. each output is that output's fixed gradient."""
    total = None
    for out, grad in zip(outputs, grads):
        term = (out * grad).sum().real  # complex samples: a real loss, as backward() needs
        total = term if total is None else total + term
    return total


def _grads_by_both(build) -> tuple:
    """The leaves' .grad after the reference backward, and after backward()."""
    results = []
    for run in (reference.backward, lambda loss: loss.backward()):
        leaves, outputs, grads = build()
        assert outputs, "the program makes no output that requires grad"
        run(_loss(outputs, grads))
        results.append([None if x.grad is None else x.grad.numpy() for x in leaves])
    return results


def _assert_same(by_reference: list, by_engine: list) -> None:
    assert len(by_reference) == len(by_engine)
    for i, (ref, eng) in enumerate(zip(by_reference, by_engine)):
        assert (ref is None) == (eng is None), f"leaf {i}: one .grad is None"
        if ref is not None:
            assert ref.dtype == eng.dtype, f"leaf {i}: {ref.dtype} vs {eng.dtype}"
            np.testing.assert_array_equal(ref, eng, err_msg=f"leaf {i}")


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_the_reference_fills_grad_as_backward_does_on_every_sample(sample):
    _assert_same(*_grads_by_both(lambda: sample_program(sample)))


@pytest.mark.parametrize("seed", range(100))
def test_the_reference_fills_grad_as_backward_does_on_random_programs(seed):
    _assert_same(*_grads_by_both(lambda: random_program(seed)))


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
