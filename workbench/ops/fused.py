"""Fused backward kernels: an opt-in speed layer under the formula rules.

The gradient rules learners read are their formulas: sigmoid's is ``grad * y * (1 - y)``,
three ops, each a pass over memory (and a node, when gradients of gradients are
recorded). Each kernel here computes one such formula in a single op, with a gradient
rule of its own, derived by hand, so gradients of gradients still work. They are off by
default; switch them on for speed::

    wb.ops.fused.enable()              # sigmoid, tanh, relu, log_softmax use the kernels
    wb.ops.fused.disable()             # back to the formula rules
    with wb.ops.fused.fused_rules():   # on inside the block only
        loss.backward()

Switching changes only which rule an op runs. The formula shown to learners (the op's
``formula``: in graph pictures, the stepper's panel) is the formula rule's either way.
tests/test_fused_rules.py pins each kernel to the formula it stands in for, to first and
second order.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ..autograd.dispatch import apply_op
from ..checks import dim_in_range
from ..tensor import Tensor
from .activations import relu_grad, sigmoid_grad, tanh_grad
from .arithmetic import zeros_like_grad
from .complex_numbers import conj
from .reductions import sum
from .registry import OPS, register_gradient, register_op
from .softmax import log_softmax_grad
from .unary import exp


# -------------------------------------------------------------------- sigmoid
# fast path: sigmoid's ȳ · y · (1 − y); pinned by tests/test_fused_rules.py::test_same_as_formula
@register_op("sigmoid_backward", inputs=("grad", "y"), saves={"grad": ("y",), "y": ("grad", "y")})
def _sigmoid_backward(grad, y):
    slope = y * (1 - y)
    return grad * (slope.conj() if slope.dtype.kind == "c" else slope)


@register_gradient("sigmoid_backward")
def sigmoid_backward_grad(orig, grad):
    """Forward: x̄ = sigmoid_backward(ȳ, y) = ȳ · y · (1 − y)   (complex: ȳ · conj(y · (1 − y)))
    Backward: ȳ̄ = sigmoid_backward(x̄̄, y), ȳ' = x̄̄ · ȳ · (1 − 2y)   (y' is the saved output)
    Complex: ȳ̄ = sigmoid_backward(x̄̄, conj(y)), ȳ' = conj(x̄̄) · ȳ · conj(1 − 2y)"""
    g, y = orig.args
    need_g, need_y = orig.needs_input_grad
    return [
        sigmoid_backward(grad, conj(y)) if need_g else None,
        conj(grad) * g * conj(1 - 2 * y) if need_y else None,
    ]


def sigmoid_backward(grad: Tensor, y: Tensor) -> Tensor:
    """sigmoid's gradient from its output: ``grad · y · (1 − y)``, one op instead of three."""
    return apply_op(_sigmoid_backward, (grad, y))


# ----------------------------------------------------------------------- tanh
# fast path: tanh's ȳ · (1 − y²); pinned by tests/test_fused_rules.py::test_same_as_formula
@register_op("tanh_backward", inputs=("grad", "y"), saves={"grad": ("y",), "y": ("grad", "y")})
def _tanh_backward(grad, y):
    slope = 1 - y * y
    return grad * (slope.conj() if slope.dtype.kind == "c" else slope)


@register_gradient("tanh_backward")
def tanh_backward_grad(orig, grad):
    """Forward: x̄ = tanh_backward(ȳ, y) = ȳ · (1 − y²)   (complex: ȳ · conj(1 − y²))
    Backward: ȳ̄ = tanh_backward(x̄̄, y), ȳ' = −2 · x̄̄ · ȳ · y   (y' is the saved output)
    Complex: ȳ̄ = tanh_backward(x̄̄, conj(y)), ȳ' = −2 · conj(x̄̄) · ȳ · conj(y)"""
    g, y = orig.args
    need_g, need_y = orig.needs_input_grad
    return [
        tanh_backward(grad, conj(y)) if need_g else None,
        -2 * conj(grad) * g * conj(y) if need_y else None,
    ]


def tanh_backward(grad: Tensor, y: Tensor) -> Tensor:
    """tanh's gradient from its output: ``grad · (1 − y²)``, one op instead of three."""
    return apply_op(_tanh_backward, (grad, y))


# ----------------------------------------------------------------------- relu
# fast path: relu's ȳ · [y > 0]; pinned by tests/test_fused_rules.py::test_same_as_formula
@register_op("relu_backward", inputs=("grad", "y"), saves=("y",))
def _relu_backward(grad, y):
    # ȳ · [y > 0] as a multiply: several times faster than np.where on a random mask.
    mask = ~(y <= 0)  # not y > 0: at y = NaN the gradient passes, as in PyTorch
    if np.isfinite(grad).all():
        return grad * mask
    result = grad * mask  # ±inf · 0 is NaN: those entries are zeroed next
    result[~mask] = 0  # where the mask is off the gradient is 0, whatever came in
    return result


@register_gradient("relu_backward")
def relu_backward_grad(orig, grad):
    """Forward: x̄ = relu_backward(ȳ, y) = ȳ · [y > 0]
    Backward: ȳ̄ = relu_backward(x̄̄, y), ȳ' = 0   (linear in ȳ; the mask is flat in y)"""
    g, y = orig.args
    need_g, need_y = orig.needs_input_grad
    return [
        relu_backward(grad, y) if need_g else None,
        zeros_like_grad(grad) if need_y else None,  # 0, not none: PyTorch's answer
    ]


def relu_backward(grad: Tensor, out: Tensor) -> Tensor:
    """ReLU's gradient: ``grad`` where the forward output was positive, else 0."""
    return apply_op(_relu_backward, (grad, out))


# ---------------------------------------------------------------- log_softmax
# fast path: log_softmax's ȳ − exp(y)·Σȳ; pinned by tests/test_fused_rules.py::test_same_as_formula
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


def log_softmax_backward(grad: Tensor, y: Tensor, dim: int) -> Tensor:
    """log_softmax's gradient from its output ``y``: one op instead of four."""
    d = dim_in_range("log_softmax_backward", dim, max(y.ndim, 1))
    return apply_op(_log_softmax_backward, (grad, y), {"dim": d})


# ------------------------------------------------------- the rules they swap in
def sigmoid_fused_grad(orig, grad):
    """sigmoid's rule with the fused kernel: x̄ = sigmoid_backward(ȳ, y).

    The kernels are written for real numbers: complex inputs take the formula rule."""
    y = orig.out
    if y._data.dtype.kind == "c":
        return sigmoid_grad(orig, grad)
    return [apply_op(_sigmoid_backward, (grad, y))]  # (sigmoid_backward, one call less)


def tanh_fused_grad(orig, grad):
    """tanh's rule with the fused kernel: x̄ = tanh_backward(ȳ, y) (complex: the formula rule)."""
    y = orig.out
    if y._data.dtype.kind == "c":
        return tanh_grad(orig, grad)
    return [apply_op(_tanh_backward, (grad, y))]  # (tanh_backward, one call less)


def relu_fused_grad(orig, grad):
    """relu's rule with the fused kernel: x̄ = relu_backward(ȳ, y)."""
    return [apply_op(_relu_backward, (grad, orig.out))]  # (relu_backward, one call less)


def log_softmax_fused_grad(orig, grad):
    """log_softmax's rule with the fused kernel: x̄ = log_softmax_backward(ȳ, y, dim)."""
    return [log_softmax_backward(grad, orig.out, orig.attrs["dim"])]


FUSED_RULES = {
    "sigmoid": sigmoid_fused_grad,
    "tanh": tanh_fused_grad,
    "relu": relu_fused_grad,
    "log_softmax": log_softmax_fused_grad,
}
FORMULA_RULES = {  # the rules the ops were registered with, and the default
    "sigmoid": sigmoid_grad,
    "tanh": tanh_grad,
    "relu": relu_grad,
    "log_softmax": log_softmax_grad,
}


def _use(rules: dict) -> None:
    for name, rule in rules.items():
        OPS[name].gradient = rule  # the op's formula (what learners see) stays as it is


def enable() -> None:
    """Run the fused kernels in the backward of sigmoid, tanh, relu and log_softmax."""
    _use(FUSED_RULES)


def disable() -> None:
    """Back to the formula rules (the default)."""
    _use(FORMULA_RULES)


def is_enabled() -> bool:
    return all(OPS[name].gradient is rule for name, rule in FUSED_RULES.items())


@contextmanager
def fused_rules(enabled: bool = True):
    """The fused rules on (off, with ``enabled=False``) inside the block; as before after it."""
    before = FUSED_RULES if is_enabled() else FORMULA_RULES
    _use(FUSED_RULES if enabled else FORMULA_RULES)
    try:
        yield
    finally:
        _use(before)
