"""The op library: every differentiable operation, registered with its gradient rule.

``workbench.ops.registry.OPS`` maps each op's name to its kernel and rule; the
functions here are the public API (also reachable as ``wb.exp``, ``x.exp()`` and
Python operators).
"""

from types import ModuleType as _ModuleType

from . import checkpoint_markers, grad  # registers the TVM checkpoint marker ops
from .elementwise import (
    abs,
    absolute,
    add,
    clamp,
    clamp_max,
    clamp_min,
    clip,
    cos,
    div,
    divide,
    eq,
    exp,
    ge,
    greater,
    greater_equal,
    gt,
    le,
    less,
    less_equal,
    log,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    maximum,
    minimum,
    mul,
    multiply,
    ne,
    neg,
    negative,
    not_equal,
    pow,
    promote,
    relu,
    sigmoid,
    sign,
    sin,
    sqrt,
    sub,
    subtract,
    tanh,
    true_divide,
    where,
)
from .linalg import dot, matmul, mm
from .reduce import amax, amin, argmax, argmin, max, mean, min, sum
from .registry import OPS, get_op, register_gradient, register_op
from .shape import (
    TensorShape,
    astype,
    broadcast_to,
    clone,
    collapse_sum_like,
    contiguous,
    expand,
    expand_as,
    flatten,
    getitem,
    index_put,
    permute,
    reshape,
    squeeze,
    sum_to,
    swapaxes,
    t,
    to_device,
    transpose,
    unsqueeze,
    view,
)

# Submodules (grad, shape...) stay out of ``from workbench.ops import *``: no ``wb.grad``.
__all__ = [
    name
    for name, value in globals().items()
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]


def _bind_tensor_methods() -> None:
    """Give Tensor its operators (``_ops``) and the methods that are plain ops (``x.exp()``)."""
    import importlib
    import sys

    tensor_module = importlib.import_module("workbench.tensor")
    tensor_module._ops = sys.modules[__name__]
    tensor_module.install_method_ops(tensor_module.METHOD_OPS, tensor_module._ops)


_bind_tensor_methods()
