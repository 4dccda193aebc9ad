"""The op library: every differentiable operation, registered with its gradient rule.

``workbench.ops.registry.OPS`` maps each op's name to its kernel and rule; the
functions here are the public API (also reachable as ``wb.exp``, ``x.exp()`` and
Python operators). ``wb.ops.fused`` is an opt-in speed layer: fused backward kernels
that stand in for the formula rules of sigmoid, tanh, relu and log_softmax.
"""

import types as _types

from . import checkpoint_markers, fused, grad  # checkpoint_markers registers TVM's markers
from .broadcasting import (
    TensorShape,
    broadcast_to,
    collapse_sum_like,
    expand,
    expand_as,
    sum_to,
)
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
    logsumexp,
    norm,
    prod,
    softmax,
    std,
    var,
)
from .registry import OPS, get_op, register_gradient, register_op
from .shape import (
    astype,
    clone,
    contiguous,
    flatten,
    getitem,
    index_put,
    permute,
    reshape,
    squeeze,
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
