"""Autodiff Workbench: a readable reverse-mode autograd engine you can watch.

``import workbench as wb`` gives PyTorch's names: ``wb.tensor``, ``wb.no_grad``,
``wb.autograd.grad``... The picture and widget layers (``wb.viz``, ``wb.widgets``)
load lazily on first use, so this import never pulls in graphviz, matplotlib or
ipywidgets.

The backward algorithm itself is :func:`workbench.autograd.reference.backward`
(``workbench/autograd/reference.py``, one screen); ``workbench/autograd/README.md`` is
the reading order from a tensor to the engine.
"""

from __future__ import annotations

import importlib

import numpy as _np

from . import (
    autograd,
    func,  # wb.func: grad, vjp, jacrev, vmap (torch.func's transforms)
    program,  # wb.program: trace a function into a program, its adjoint, the runner
    trace,  # callable: wb.trace() records; light (json and numpy only)
)
from .autograd.te import gradient
from .compat import accelerator, backends, cuda
from .compat.runtime import (
    are_deterministic_algorithms_enabled,
    get_num_threads,
    set_num_threads,
    use_deterministic_algorithms,
)
from .compat.torch_alias import as_torch
from .core import events
from .core import random as random  # torch.random's path: wb.random
from .core.devices import device, get_default_device, set_default_device
from .core.dtypes import finfo, iinfo
from .core.factories import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    is_floating_point,
    is_tensor,
    linspace,
    numel,
    ones,
    ones_like,
    tensor,
    zeros,
    zeros_like,
)
from .core.random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from .core.sampling import (
    bernoulli,
    multinomial,
    normal,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
)
from .core.scope import current_scope, name_scope
from .core.size import Size
from .core.tensor import (
    Tensor,
    bfloat16,
    bool_,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    get_default_dtype,
    int32,
    int64,
    set_default_dtype,
    set_printoptions,
    uint8,
)
from .ops import *  # noqa: F403  (the op library: wb.exp, wb.matmul, ...)
from .ops import abs, all, any, max, min, pow, sum  # noqa: F401  (builtins' names, as torch)
from .ops.reductions import histogram
from .ops.shape import meshgrid
from .program import compile  # torch.compile: trace into a program and run that
from .record.grad_mode import *  # noqa: F403  (wb.no_grad, wb.enable_grad, ...: the grad modes)
from .serialization import load, save
from .trace import Trace, TraceReplay
from .trace.torch_replay import from_torch

bool = bool_  # noqa: A001  (wb.bool, as torch.bool)
float = float32  # noqa: A001
double = float64
half = float16
cfloat = complex64
cdouble = complex128
long = int64
int = int32  # noqa: A001
int8, int16 = _np.dtype("int8"), _np.dtype("int16")
short = int16

__version__ = "0.1.0"

_LAZY = {"exercises", "nn", "optim", "teaching", "utils", "viz", "widgets"}


def __getattr__(name: str):
    """Load ``wb.viz``, ``wb.widgets``, ``wb.nn``... on first use."""
    if name in _LAZY:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    from .compat.torch_alias import not_here

    raise AttributeError(not_here("workbench", name))
