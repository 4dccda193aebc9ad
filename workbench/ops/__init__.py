"""The op library: every differentiable operation, registered with its gradient rule.

``workbench.ops.registry.OPS`` maps each op's name to its kernel and rule; the
functions here are the public API (also reachable as ``wb.exp``, ``x.exp()`` and
Python operators).
"""

import types as _types

from . import grad, markers  # markers registers TVM's checkpoint markers
from .activations import (
    elu,
    gelu,
    leaky_relu,
    relu,
    sigmoid,
    silu,
    softplus,
    tanh,
)
from .arithmetic import (
    abs,
    absolute,
    add,
    allclose,
    clamp,
    clamp_max,
    clamp_min,
    clip,
    div,
    divide,
    eq,
    equal,
    floor_divide,
    fmod,
    ge,
    greater,
    greater_equal,
    gt,
    isclose,
    le,
    less,
    less_equal,
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
    promote_types,
    remainder,
    result_type,
    sgn,
    sign,
    sub,
    subtract,
    true_divide,
    where,
)
from .broadcasting import (
    TensorShape,
    broadcast_to,
    collapse_sum_like,
    expand,
    expand_as,
    sum_to,
)
from .complex_numbers import angle, complex, conj, imag, real
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
from .linalg import addmm, bmm, dot, linear, matmul, mm, mv, outer
from .nn import avg_pool2d, batch_norm, conv2d, dropout, layer_norm, max_pool2d, nll_loss
from .reductions import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    logsumexp,
    max,
    mean,
    min,
    norm,
    prod,
    std,
    sum,
    var,
)
from .registry import OPS, get_op, register_gradient, register_op
from .scans import cumprod, cumsum
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
from .softmax import log_softmax, softmax
from .unary import (
    ceil,
    cos,
    erf,
    exp,
    expm1,
    floor,
    log,
    log1p,
    log2,
    log10,
    reciprocal,
    round,
    rsqrt,
    sin,
    sqrt,
    square,
    tan,
    trunc,
)

# Export the functions, not the submodules: ``from workbench.ops import *`` must not
# put ``grad`` or ``nn`` (modules of this package) into the ``workbench`` namespace.
__all__ = [
    name
    for name, value in globals().items()
    if not name.startswith("_") and not isinstance(value, _types.ModuleType)
]
