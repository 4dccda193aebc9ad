"""``workbench.as_torch()``: one line puts the workbench under ``import torch``.

Each check runs in a fresh Python process: the name ``torch`` is process-wide, and this
test process holds the real PyTorch for the comparisons elsewhere.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_import_workbench_leaves_the_name_torch_alone():
    out = run(
        "import sys, workbench\n"
        "alias = workbench.compat.torch_alias\n"
        "print('torch' in sys.modules, alias.is_active())"
    )
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_after_as_torch_the_imports_of_a_pytorch_program_give_the_workbench():
    code = """
import workbench; workbench.as_torch()
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset
from torch.optim.lr_scheduler import StepLR
from torch import nn as nn2
import workbench.nn, workbench.utils.data
assert torch is workbench and nn is workbench.nn and nn2 is nn
assert F is workbench.nn.functional and optim is workbench.optim
assert DataLoader is workbench.utils.data.DataLoader
assert StepLR is workbench.optim.lr_scheduler.StepLR
assert torch.utils.data.TensorDataset is TensorDataset
workbench.as_torch()  # a second call changes nothing
x = torch.ones(2, 3, requires_grad=True)
print(type(x).__module__, x.size(), (x * 2).sum().grad_fn)
"""
    out = run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[:3] == ["workbench.core.tensor", "torch.Size([2,", "3])"]


def test_it_refuses_when_the_real_pytorch_is_already_imported():
    code = "import torch, workbench\ntry:\n    workbench.as_torch()\nexcept RuntimeError as e:\n"
    out = run(code + "    print(e)")
    assert out.returncode == 0, out.stderr
    message = out.stdout
    assert "the real PyTorch is already imported" in message
    assert "Restart" in message and "before anything imports torch" in message


def test_a_missing_torch_module_is_refused_with_a_message_that_says_so():
    code = """
import workbench; workbench.as_torch()
for name in ("torch.distributions", "torch.fancy_new_thing"):
    try:
        __import__(name)
    except ModuleNotFoundError as e:
        print(type(e).__name__, e.name, "|", e)
"""
    out = run(code)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    assert first.startswith("ModuleNotFoundError torch.distributions |")
    assert "probability distributions are not part of the workbench" in first
    assert "docs/pytorch_compatibility.md" in first
    assert "the workbench has no such module" in second


def test_a_missing_name_is_an_attribute_error_that_says_why():
    code = """
import workbench; workbench.as_torch()
import torch
for get in (lambda: torch.jit, lambda: torch.nn.LSTM, lambda: torch.not_a_thing):
    try:
        get()
    except AttributeError as e:
        print(e)
"""
    out = run(code)
    jit, lstm, other = out.stdout.strip().splitlines()
    assert "TorchScript" in jit and "torch.jit" in jit
    assert "recurrent layers" in lstm
    assert "docs/pytorch_compatibility.md" in other


def test_from_torch_refuses_under_as_torch():
    code = """
import workbench; workbench.as_torch()
import torch
try:
    workbench.from_torch(torch.ones(1, requires_grad=True).sum())
except RuntimeError as e:
    print(e)
"""
    out = run(code)
    assert "needs the real PyTorch" in out.stdout, out.stderr


EQUALITY_WITH_LISTS = "x = torch.ones(2)\nprint([x == [1, 1], x != (1, 1), [[1]] == x, x == [x]])"


def test_equality_with_a_list_under_as_torch_is_pytorchs():
    """``x == [1, 1]`` in a PyTorch program run under ``as_torch()`` answers as the real
    PyTorch does (the bool False, not a tensor of bools)."""
    theirs = run("import torch\n" + EQUALITY_WITH_LISTS)
    ours = run("import workbench; workbench.as_torch()\nimport torch\n" + EQUALITY_WITH_LISTS)
    assert ours.stdout == theirs.stdout == "[False, True, False, False]\n", ours.stderr


def _workbench_modules_pytorch_also_has() -> list:
    """(torch name, workbench name) for every workbench module whose name PyTorch has too:
    ``torch.autograd.forward_ad``, ``torch.utils.data.sampler``... Its files, and the
    PyTorch-named faces a package binds to a module kept in another layer
    (``workbench.autograd.forward_ad`` is ``workbench.record.forward_ad``)."""
    import importlib
    import pkgutil
    import sys

    import workbench

    pytest.importorskip("torch")
    pairs = []
    names = {info.name for info in pkgutil.walk_packages(workbench.__path__, "workbench.")}
    names |= {name for name in sys.modules if name.startswith("workbench.")}
    for name in sorted(names):
        torch_name = "torch" + name[len("workbench") :]
        if torch_name == "torch.ops":  # PyTorch's operator registry: another thing
            continue
        try:
            importlib.import_module(torch_name)
        except ImportError:
            continue  # PyTorch has no such module
        pairs.append((torch_name, name))
    return pairs


def test_every_module_pytorch_and_the_workbench_share_imports_under_torch():
    """Issue 36: ``import torch.autograd.forward_ad`` (and graph, function,
    utils.data.dataloader/sampler/dataset) were refused though the workbench has them."""
    pairs = _workbench_modules_pytorch_also_has()
    assert ("torch.autograd.forward_ad", "workbench.autograd.forward_ad") in pairs
    code = "import importlib, sys, workbench; workbench.as_torch()\n"
    for torch_name, workbench_name in pairs:
        code += (
            f"import {torch_name}\n"
            f"assert sys.modules[{torch_name!r}] is importlib.import_module({workbench_name!r})\n"
        )
    code += "from torch.utils.data.sampler import RandomSampler\nprint('ok')\n"
    out = run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
