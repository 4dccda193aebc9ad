"""Softmax and log_softmax: exponentiate and normalize along one axis.

Both kernels subtract the maximum along the axis first, so exp never overflows, and
both gradient rules need only the output y.
"""

from __future__ import annotations

import numpy as np

from ..core.checks import dim_in_range
from ..core.dtypes import SMALL_FLOAT_CHARS, in_float32
from ..core.tensor import Tensor
from ..record.dispatch import apply_op, float_input
from .complex_numbers import refuse_complex
from .reductions import sum
from .registry import register_gradient, register_jvp, register_op
from .shape import astype, reshape
from .unary import exp


# ----------------------------------------------------- softmax, log_softmax
def c_ordered(x):
    """``x`` in row-major order: PyTorch's softmax returns a contiguous tensor whatever
    its input's strides (a transposed input included), so ``.view`` works on it."""
    return x if x.flags.c_contiguous else x.copy(order="C")


@register_op("softmax", saves=("out",))
def _softmax(x, dim):
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_softmax.forward, x, dim)
    if x.size == 0:  # nothing to normalize (np.max would refuse): empty, as in torch
        return x.copy()
    x = c_ordered(x)
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return e / np.sum(e, axis=dim, keepdims=True)


@register_gradient("softmax")
def softmax_grad(orig, grad):
    """Forward: yᵢ = exp(xᵢ) / Σⱼ exp(xⱼ)   (along dim)
    Backward: x̄ = (ȳ − Σ ȳ · y) · y"""
    y = orig.out
    return [(grad - sum(grad * y, orig.attrs["dim"], keepdim=True)) * y]


@register_jvp("softmax")
def softmax_jvp(orig, tangents):
    """Forward: yᵢ = exp(xᵢ) / Σⱼ exp(xⱼ)   (along dim)
    JVP: ẏ = y · (ẋ − Σ ẋ · y)"""
    y, dx = orig.out, tangents[0]
    return y * (dx - sum(dx * y, orig.attrs["dim"], keepdim=True))


@register_op("log_softmax", saves=("out",))
def _log_softmax(x, dim):
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_log_softmax.forward, x, dim)
    if x.size == 0:  # as softmax
        return x.copy()
    shifted = c_ordered(x) - x.max(axis=dim, keepdims=True)
    # shifted is a fresh array: subtract the log-sum-exp from it in place.
    shifted -= np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
    return shifted


@register_gradient("log_softmax")
def log_softmax_grad(orig, grad):
    """Forward: yᵢ = xᵢ − log Σⱼ exp(xⱼ)   (along dim)
    Backward: x̄ = ȳ − exp(y) · Σ ȳ   (Σ along dim; exp(y) is softmax(x))"""
    return [log_softmax_backward(grad, orig.out, orig.attrs["dim"])]


@register_jvp("log_softmax")
def log_softmax_jvp(orig, tangents):
    """Forward: yᵢ = xᵢ − log Σⱼ exp(xⱼ)   (along dim)
    JVP: ẏ = ẋ − Σ ẋ · exp(y)   (the softmax-weighted mean of ẋ, taken off)"""
    dx = tangents[0]
    return dx - sum(dx * exp(orig.out), orig.attrs["dim"], keepdim=True)


# The rule's formula as one op (PyTorch's _log_softmax_backward_data).
@register_op(
    "log_softmax_backward", inputs=("grad", "y"), saves={"grad": ("y",), "y": ("grad", "y")}
)
def _log_softmax_backward(grad, y, dim):
    # The product is a fresh array, so ȳ is added to it in place.
    out = np.exp(y) * -grad.sum(axis=dim, keepdims=True)
    out += grad
    return out


@register_gradient("log_softmax_backward")
def log_softmax_backward_grad(orig, grad):
    """Forward: x̄ = log_softmax_backward(ȳ, y) = ȳ − (Σ ȳ) · exp(y)   (Σ along dim)
    Backward: ȳ̄ = x̄̄ − Σ x̄̄ · exp(y), ȳ' = −x̄̄ · (Σ ȳ) · exp(y)   (y' is the saved output)"""
    g, y = orig.args
    need_g, need_y = orig.needs_input_grad
    dim = orig.attrs["dim"]
    p = exp(y)
    return [
        grad - sum(grad * p, dim, keepdim=True) if need_g else None,
        -grad * sum(g, dim, keepdim=True) * p if need_y else None,
    ]


@register_jvp("log_softmax_backward")
def log_softmax_backward_jvp(orig, tangents):
    """Forward: x̄ = log_softmax_backward(ȳ, y) = ȳ − (Σ ȳ) · exp(y)
    JVP: ẋ̄ = log_softmax_backward(ȳ̇, y) − (Σ ȳ) · exp(y) · ẏ"""
    (g, y), (dg, dy) = orig.args, tangents
    dim = orig.attrs["dim"]
    return log_softmax_backward(dg, y, dim) - sum(g, dim, keepdim=True) * exp(y) * dy


def log_softmax_backward(grad: Tensor, y: Tensor, dim: int) -> Tensor:
    """log_softmax's gradient from its output ``y``: ``ȳ − exp(y) · Σ ȳ`` along ``dim``."""
    d = dim_in_range("log_softmax_backward", dim, max(y.ndim, 1))
    return apply_op(_log_softmax_backward, (grad, y), {"dim": d})


def _normalize(kernel, input: Tensor, dim: int, dtype, name: str) -> Tensor:
    refuse_complex(name, input)
    input = float_input(input, name) if dtype is None else astype(input, dtype)
    if input.ndim == 0:
        dim_in_range(name, dim, 1)  # only 0 and -1, as in PyTorch
        return reshape(_normalize(kernel, reshape(input, (1,)), 0, None, name), ())
    return apply_op(kernel, (input,), {"dim": dim_in_range(name, dim, input.ndim)})


def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """Exponentiate and normalize along ``dim``: the entries become probabilities.

    ``dim`` is an int, as ``torch.softmax``'s; only ``F.softmax`` still picks one
    when it is left out (PyTorch's deprecated implicit dim)."""
    return _normalize(_softmax, input, dim, dtype, "softmax")


def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``log(softmax(x))``, computed without taking the log of a tiny number."""
    return _normalize(_log_softmax, input, dim, dtype, "log_softmax")
