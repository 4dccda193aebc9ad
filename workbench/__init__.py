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

from . import (
    autograd,
    events,
    trace,  # callable: wb.trace() records; light (json and numpy only)
)
from .autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .autograd.te import gradient
from .factories import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    get_rng_state,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    set_rng_state,
    tensor,
    zeros,
    zeros_like,
)
from .ops import *  # noqa: F403  (the op library: wb.exp, wb.matmul, ...)
from .ops import abs, max, min, pow, sum  # noqa: F401  (shadow builtins on purpose, as torch)
from .scope import current_scope, name_scope
from .tensor import (
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
    uint8,
)
from .torch_replay import from_torch
from .trace import Trace, TraceReplay

bool = bool_  # noqa: A001  (wb.bool, as torch.bool)
float = float32  # noqa: A001
double = float64
half = float16
cfloat = complex64
cdouble = complex128
long = int64

__version__ = "0.1.0"

_LAZY = {"viz", "widgets", "nn", "optim", "utils", "cli", "exercises"}


def __getattr__(name: str):
    """Load ``wb.viz``, ``wb.widgets``, ``wb.nn``... on first use."""
    if name in _LAZY:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'workbench' has no attribute '{name}'")
