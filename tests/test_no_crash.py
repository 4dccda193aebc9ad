"""Nothing a user writes takes the process down: random indexing, shapes and sizes run
in a child process (tests/no_crash_child.py), which must always exit normally.

numpy's ``ufunc.at`` (``np.add.at``) walks its arrays with a 32-dim iterator and writes
past its buffers beyond that: the gradient of ``x[i]`` for an index of 33 dims killed
the interpreter. Each example runs in the child; a Python exception there is an error
message, a normal outcome; a signal is a crash, and the test shows the example that
caused it (the child prints each one before running it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

import workbench as wb

CHILD = Path(__file__).with_name("no_crash_child.py")


def run_child(examples: int, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(CHILD), str(examples)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=CHILD.parent.parent,
        check=False,
    )


def test_random_indexing_shapes_and_sizes_never_crash_the_process():
    examples = max(60, settings.default.max_examples)  # the fuzz profile: 4,000
    done = run_child(examples, timeout=60 + examples * 0.5)
    last = done.stderr.strip().splitlines()[-3:]
    assert done.returncode == 0, f"the child died (exit {done.returncode}) after: {last}"
    assert f"finished {examples} examples" in done.stdout


@pytest.mark.parametrize("ndim", [32, 33, 40, 64])
def test_the_gradient_of_an_index_of_many_dims_is_torchs(ndim):
    """The issue's segfault: x[index of 33 dims].sum().backward(), in this process."""
    torch = pytest.importorskip("torch")
    index = np.zeros((1,) * ndim, dtype=np.int64)
    x, t = wb.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    x[wb.tensor(index)].sum().backward()
    t[torch.tensor(index)].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_scatter_add_beyond_32_dims_of_out_gather_and_take():
    """gather and take scatter their gradients the same way, on an x of 40 dims."""
    shape = (1,) * 39 + (3,)
    x = wb.ones(*shape, requires_grad=True)
    index = wb.tensor(np.array([0, 0, 2]).reshape((1,) * 39 + (3,)))
    x.gather(39, index).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy().reshape(-1), [2.0, 0.0, 1.0])
    x.grad = None
    wb.take(x, wb.tensor([[0] * 35])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy().reshape(-1), [35.0, 0.0, 0.0])


@pytest.mark.parametrize("factory", ["ones", "zeros", "empty", "rand", "randn", "full"])
@pytest.mark.parametrize("size", [(2**62,), (2**31, 2**31, 4), (2**40, 2**40)])
def test_a_size_that_overflows_is_torchs_runtime_error(factory, size):
    torch = pytest.importorskip("torch")
    args = (size, 1.0) if factory == "full" else size
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed") as theirs:
        getattr(torch, factory)(*args)
    with pytest.raises(RuntimeError) as ours:
        getattr(wb, factory)(*args)
    assert str(ours.value) == f"{factory}: {theirs.value}"
