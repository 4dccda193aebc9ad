"""Reverse-mode automatic differentiation: graph nodes, the engine, grad modes, Function.

The algorithm is :func:`workbench.autograd.reference.backward` (``reference.py``):
the whole backward pass in a few dozen lines, on the same nodes and rules the engine
uses. Read it first; ``engine.py`` runs the same loop, with hooks, events and
stepping woven in. The reading order is in ``workbench/autograd/README.md``.

``workbench.autograd`` mirrors ``torch.autograd``: ``backward``, ``grad``,
``Function``, ``gradcheck``/``gradgradcheck``, anomaly detection and the grad modes.
``saved_memory()`` reports the bytes that live graphs hold for backward (current and
peak); ``workbench.record.recompute`` is the machinery behind activation
checkpointing (``wb.utils.checkpoint`` and the TVM markers of
``wb.ops.markers``).
"""

import sys as _sys

from ..core.state import is_checkpoint_valid as _is_checkpoint_valid  # torch.autograd's name
from ..record import forward_ad as forward_ad
from ..record import graph as graph
from ..record import recompute as recompute
from ..record.anomaly import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from ..record.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ..record.memory import SavedMemoryStats, reset_peak_saved_memory, saved_memory
from . import functional as functional
from . import reference as reference
from .engine import GraphTask, Step
from .entry_points import backward, grad, make_backward_task
from .function import Function, once_differentiable
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

# `import workbench.autograd.forward_ad` gives the same module as workbench.record.forward_ad
_sys.modules[f"{__name__}.forward_ad"] = forward_ad
# `import workbench.autograd.graph` gives the same module as workbench.record.graph
_sys.modules[f"{__name__}.graph"] = graph

__all__ = [
    "Function",
    "GradcheckError",
    "GraphTask",
    "SavedMemoryStats",
    "Step",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "forward_ad",
    "functional",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "graph",
    "inference_mode",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "make_backward_task",
    "no_grad",
    "once_differentiable",
    "reset_peak_saved_memory",
    "saved_memory",
    "set_detect_anomaly",
    "set_grad_enabled",
]
