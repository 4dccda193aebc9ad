"""Bad input on the public surface around the registry's ops (issue 36): modules, data
loading, seeds, schedulers, state dicts, ``grad``/``backward`` arguments, factories,
reshape, optimizers, bitwise ops, mixed-dtype matmul and traces.

The table style is tests/test_bad_input.py's (its ``case``, ``WB`` and ``TORCH``): each
row is one call written once for both libraries, the exception type PyTorch 2.13 raises,
and patterns the workbench's message must contain; the error must be raised by a
``raise`` in workbench's own code. ``torch=False`` marks a row where the workbench is
stricter than PyTorch on purpose (the comment says why).
"""

from __future__ import annotations

import re

import pytest

import workbench as wb
import workbench.utils.data
from tests.test_bad_input import Lib, _assert_raised_by_workbench, _kinds, case
from tests.test_bad_input import torch as real_torch

# test_bad_input's libraries, with torch.utils.data as ``m.data``
WB = Lib(wb, nn=wb.nn, F=wb.nn.functional, optim=wb.optim, data=wb.utils.data)
TORCH = None
if real_torch is not None:
    TORCH = Lib(
        real_torch,
        nn=real_torch.nn,
        F=real_torch.nn.functional,
        optim=real_torch.optim,
        data=real_torch.utils.data,
    )


# ------------------------------------------------------------------ helpers
def plateau(m, min_lr):
    groups = [{"params": [m.nn.Parameter(m.ones(2))]}, {"params": [m.nn.Parameter(m.ones(1))]}]
    m.optim.lr_scheduler.ReduceLROnPlateau(m.optim.SGD(groups, lr=0.1), min_lr=min_lr)


def load_weight(m, value):
    layer = m.nn.Linear(2, 2)
    layer.load_state_dict({"weight": value, "bias": m.ones(2)})


def loader(m, **options):
    return m.data.DataLoader(m.data.TensorDataset(m.ones(4, 2)), **options)


def buffer_over_parameter(m):
    m.nn.Linear(2, 2).register_buffer("weight", m.ones(2))


def parameter_over_buffer(m):
    norm = m.nn.BatchNorm1d(2)
    norm.register_parameter("running_mean", m.nn.Parameter(m.ones(2)))


def module_over_parameter(m):
    m.nn.Linear(2, 2).add_module("bias", m.nn.ReLU())


# ----------------------------------------------------------------- the table
CASES = [
    # ------------------------------------------------------------- modules
    case(
        "register_buffer over a parameter",
        buffer_over_parameter,
        KeyError,
        r"register_buffer",
        r"'weight' already exists",
        r"Linear",
    ),
    case(
        "register_parameter over a buffer",
        parameter_over_buffer,
        KeyError,
        r"register_parameter",
        r"'running_mean' already exists",
    ),
    case(
        "add_module over a parameter",
        module_over_parameter,
        KeyError,
        r"add_module",
        r"'bias' already exists",
    ),
    case(
        "load_state_dict nested list",
        lambda m: load_weight(m, [[1.0, 2.0], [3.0, 4.0]]),
        RuntimeError,
        r"state_dict for Linear",
        r'"weight"',
        r"list",
    ),
    case(
        "load_state_dict number",
        lambda m: load_weight(m, 1.0),
        RuntimeError,
        r'"weight"',
        r"float",
    ),
    # --------------------------------------------------------- data loading
    case(
        "DataLoader prefetch_factor without workers",
        lambda m: loader(m, prefetch_factor=2),
        ValueError,
        r"DataLoader",
        r"prefetch_factor",
        r"num_workers > 0",
    ),
    case(
        "DataLoader persistent_workers without workers",
        lambda m: loader(m, persistent_workers=True),
        ValueError,
        r"persistent_workers",
        r"num_workers > 0",
    ),
    case(
        "DataLoader negative timeout",
        lambda m: loader(m, timeout=-1),
        ValueError,
        r"timeout",
        r"non-negative",
    ),
    # ---------------------------------------------------------------- seeds
    case(
        "Generator.manual_seed float",
        lambda m: m.Generator().manual_seed(1.5),
        RuntimeError,
        r"manual_seed",
        r"float",
    ),
    case(
        "Generator.manual_seed str",
        lambda m: m.Generator().manual_seed("3"),
        RuntimeError,
        r"manual_seed",
        r"str",
    ),
    case(
        "Generator.manual_seed bool",
        lambda m: m.Generator().manual_seed(True),
        RuntimeError,
        r"manual_seed",
        r"bool",
    ),
    case(
        "manual_seed beyond 64 bits",
        lambda m: m.manual_seed(2**64),
        ValueError,
        r"Overflow",
        r"manual_seed",
    ),
    # ----------------------------------------------------------- schedulers
    case(
        "ReduceLROnPlateau min_lr too long",
        lambda m: plateau(m, [0.1, 0.2, 0.3]),
        ValueError,
        r"ReduceLROnPlateau",
        r"expected 2 min_lrs",
        r"got 3",
    ),
    case(
        "ReduceLROnPlateau min_lr too short",
        lambda m: plateau(m, (0.1,)),
        ValueError,
        r"expected 2 min_lrs",
        r"got 1",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input_gets_an_error_that_teaches(case):
    with pytest.raises(case.error) as info:
        case.call(WB)
    message = str(info.value)
    for pattern in case.patterns:
        assert re.search(pattern, message), f"{pattern!r} not in {message!r}"
    _assert_raised_by_workbench(info.value)


@pytest.mark.skipif(TORCH is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("case", [c for c in CASES if c.torch is not False], ids=lambda c: c.id)
def test_pytorch_raises_the_same_kind_of_error(case):
    call = case.torch if callable(case.torch) else case.call
    with pytest.raises(Exception) as theirs:
        call(TORCH)
    with pytest.raises(Exception) as ours:
        case.call(WB)
    torch_kinds, our_kinds = _kinds(theirs.value), _kinds(ours.value)
    assert isinstance(theirs.value, case.error), f"torch raised {theirs.value!r}"
    assert torch_kinds <= our_kinds and our_kinds - {RuntimeError} <= torch_kinds, (
        f"torch: {type(theirs.value).__name__}: {theirs.value}\n"
        f"workbench: {type(ours.value).__name__}: {ours.value}"
    )
