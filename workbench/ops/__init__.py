"""The op library: every differentiable operation, registered with its gradient rule.

``workbench.ops.registry.OPS`` maps each op's name to its kernel and rule; the
functions here are the public API (also reachable as ``wb.exp``, ``x.exp()`` and
Python operators).
"""

import types as _types

from . import checkpoint_markers, grad  # checkpoint_markers registers TVM's markers
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
    relu_backward,
    sigmoid,
    sigmoid_backward,
    sign,
    sin,
    sqrt,
    sub,
    subtract,
    tanh,
    tanh_backward,
    true_divide,
    where,
)
from .indexing import (
    cat,
    chunk,
    concat,
    concatenate,
    flip,
    gather,
    index_select,
    masked_fill,
    pad,
    repeat,
    roll,
    split,
    stack,
    take,
    tile,
    tril,
    triu,
    unbind,
)
from .linalg import dot, linear, matmul, mm
from .math import (
    ceil,
    elu,
    erf,
    expm1,
    floor,
    gelu,
    leaky_relu,
    log1p,
    reciprocal,
    round,
    rsqrt,
    silu,
    softplus,
    square,
    tan,
    trunc,
)
from .nn import avg_pool2d, conv2d, dropout, layer_norm, max_pool2d, nll_loss
from .reduce import amax, amin, argmax, argmin, max, mean, min, sum
from .reductions import (
    cumprod,
    cumsum,
    log_softmax,
    log_softmax_backward,
    logsumexp,
    norm,
    prod,
    softmax,
    std,
    var,
)
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

# Export the functions, not the submodules: ``from workbench.ops import *`` must not
# put ``grad`` or ``nn`` (modules of this package) into the ``workbench`` namespace.
__all__ = [
    name
    for name, value in globals().items()
    if not name.startswith("_") and not isinstance(value, _types.ModuleType)
]

# Methods that are exactly the op of the same name, beyond tensor.METHOD_OPS.
MORE_METHOD_OPS = (
    "ceil",
    "chunk",
    "cumprod",
    "cumsum",
    "erf",
    "expm1",
    "flip",
    "floor",
    "gather",
    "index_select",
    "log1p",
    "log_softmax",
    "logsumexp",
    "masked_fill",
    "norm",
    "prod",
    "reciprocal",
    "repeat",
    "roll",
    "round",
    "rsqrt",
    "softmax",
    "split",
    "square",
    "std",
    "take",
    "tan",
    "tile",
    "tril",
    "triu",
    "trunc",
    "unbind",
    "var",
)


def _bind_tensor_methods() -> None:
    """Give Tensor its operators (``_ops``) and the methods that are plain ops (``x.exp()``)."""
    import importlib
    import sys

    tensor_module = importlib.import_module("workbench.tensor")
    ops = sys.modules[__name__]
    tensor_module.bind_ops(ops)
    tensor_module.install_method_ops(tensor_module.METHOD_OPS, ops)
    tensor_module.install_method_ops(MORE_METHOD_OPS, ops)
    tensor_module.install_operator_ops(ops)


_bind_tensor_methods()
