"""Activation functions: sigmoid, tanh, relu and its relatives, gelu, silu, softplus.

Each block is a forward kernel on arrays, a gradient rule written in tensor ops
(so it can be differentiated again) and the public function. The activations
follow PyTorch's conventions at their kinks (``relu'(0) = 0``,
``leaky_relu'(0) = slope``, ``elu'(0) = α``).
"""

from __future__ import annotations

import math

import numpy as np

from ..core import backend, checks
from ..core.dtypes import SMALL_FLOAT_CHARS, bfloat16, in_float32
from ..core.tensor import Tensor
from ..record.dispatch import apply_op, float_input
from ..record.grad_mode import is_grad_enabled
from .arithmetic import where, zeros_like_grad
from .complex_numbers import conj, refuse_complex
from .registry import register_gradient, register_jvp, register_op
from .unary import erf, erf_array, exp

SQRT_2 = math.sqrt(2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
GELU_TANH_K = math.sqrt(2.0 / math.pi)
GELU_TANH_C = 0.044715


# ------------------------------------------------------------------- sigmoid
@register_op("sigmoid", saves=("out",))
def _sigmoid(x):
    # σ(x) = 1 / (1 + e⁻ˣ), computed as PyTorch computes it. Where e⁻ˣ overflows to inf
    # (x < −88 in float32) σ is 0, as in PyTorch; apply_op keeps numpy quiet about the inf.
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16's e⁻ˣ overflows at x < −11: in float32
        return in_float32(_sigmoid.forward, x)
    return 1 / (1 + np.exp(-x))


@register_gradient("sigmoid")
def sigmoid_grad(orig, grad):
    """Forward: y = σ(x) = 1 / (1 + e⁻ˣ)
    Backward: x̄ = ȳ · y · (1 − y)
    Complex x: x̄ = ȳ · conj(y · (1 − y))"""
    return [sigmoid_backward(grad, orig.out)]


@register_jvp("sigmoid")
def sigmoid_jvp(orig, tangents):
    """Forward: y = σ(x) = 1 / (1 + e⁻ˣ)
    JVP: ẏ = ẋ · y · (1 − y)   (complex too: σ is holomorphic, no conjugate)"""
    y = orig.out
    return tangents[0] * y * (1 - y)


def sigmoid(input) -> Tensor:
    return apply_op(_sigmoid, (float_input(input, "sigmoid"),))


# The rule's formula as one op, as PyTorch's sigmoid_backward and TVM's are: one pass over
# memory instead of three ops. Its own rule makes gradients of gradients work.
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


@register_jvp("sigmoid_backward")
def sigmoid_backward_jvp(orig, tangents):
    """Forward: x̄ = sigmoid_backward(ȳ, y) = ȳ · y · (1 − y)   (complex: ȳ · conj(y · (1 − y)))
    JVP: ẋ̄ = sigmoid_backward(ȳ̇, y) + ȳ · conj(ẏ · (1 − 2y))"""
    (g, y), (dg, dy) = orig.args, tangents
    return sigmoid_backward(dg, y) + g * conj(dy * (1 - 2 * y))


def sigmoid_backward(grad: Tensor, y: Tensor) -> Tensor:
    """σ's gradient from its output: ``grad · y · (1 − y)``."""
    return apply_op(_sigmoid_backward, (grad, y))


# ---------------------------------------------------------------------- tanh
_tanh = register_op("tanh", saves=("out",))(np.tanh)


@register_gradient("tanh")
def tanh_grad(orig, grad):
    """Forward: y = tanh x
    Backward: x̄ = ȳ · (1 − y²)
    Complex x: x̄ = ȳ · conj(1 − y²)"""
    return [tanh_backward(grad, orig.out)]


@register_jvp("tanh")
def tanh_jvp(orig, tangents):
    """Forward: y = tanh x
    JVP: ẏ = ẋ · (1 − y²)"""
    y = orig.out
    return tangents[0] * (1 - y * y)


def tanh(input) -> Tensor:
    return apply_op(_tanh, (float_input(input, "tanh"),))


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


@register_jvp("tanh_backward")
def tanh_backward_jvp(orig, tangents):
    """Forward: x̄ = tanh_backward(ȳ, y) = ȳ · (1 − y²)   (complex: ȳ · conj(1 − y²))
    JVP: ẋ̄ = tanh_backward(ȳ̇, y) − 2 · ȳ · conj(y · ẏ)"""
    (g, y), (dg, dy) = orig.args, tangents
    return tanh_backward(dg, y) - 2 * g * conj(y * dy)


def tanh_backward(grad: Tensor, y: Tensor) -> Tensor:
    """tanh's gradient from its output: ``grad · (1 − y²)``."""
    return apply_op(_tanh_backward, (grad, y))


# ---------------------------------------------------------------------- relu
@register_op("relu", saves=("out",))
def _relu(x):
    if x.dtype.kind != "f" and x.dtype != bfloat16:  # integers
        return np.maximum(x, 0)
    # Against the scalar 0 numpy's maximum runs an element-by-element loop; between two
    # arrays it runs its vectorized one, several times faster. So: an array of zeros,
    # and the result written over it (it is fresh, nobody else holds it).
    out = backend.xp(x).zeros(x.shape, x.dtype)  # calloc'd: cheaper than zeros_like's fill
    return np.maximum(x, out, out=out)


@register_gradient("relu")
def relu_grad(orig, grad):
    """Forward: y = max(x, 0)
    Backward: x̄ = ȳ · [y > 0]   (0 where y ≤ 0, also for an infinite ȳ; at x = 0 too, as
    PyTorch)"""
    return [relu_backward(grad, orig.out)]


@register_jvp("relu")
def relu_jvp(orig, tangents):
    """Forward: y = max(x, 0)
    JVP: ẏ = ẋ · [y > 0]   (0 at x = 0, as PyTorch)"""
    return relu_backward(tangents[0], orig.out)


def relu(input) -> Tensor:
    refuse_complex("relu", input)
    return apply_op(_relu, (input,))


# PyTorch's threshold_backward(grad, y, 0), TVM's relu gradient.
@register_op("relu_backward", inputs=("grad", "y"), saves=("y",))
def _relu_backward(grad, y):
    # ȳ · [y > 0]. Not y > 0 but ~(y ≤ 0): at y = NaN the gradient passes, as in PyTorch.
    mask = ~(y <= 0)
    if backend.xp(grad) is not np:  # a GPU selects at full speed (and asking it whether
        return backend.xp(grad).where(mask, grad, 0)  # ȳ is finite would make it wait)
    # On the CPU a multiply by the mask is several times faster than np.where on a random
    # mask; ±inf · 0 is NaN, so where ȳ is not finite the masked-off entries are set to 0.
    result = grad * mask
    if not np.isfinite(grad).all():
        result[~mask] = 0
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


@register_jvp("relu_backward")
def relu_backward_jvp(orig, tangents):
    """Forward: x̄ = relu_backward(ȳ, y) = ȳ · [y > 0]
    JVP: ẋ̄ = relu_backward(ȳ̇, y)   (the mask is flat in y)"""
    return relu_backward(tangents[0], orig.args[1])


def relu_backward(grad: Tensor, out: Tensor) -> Tensor:
    """ReLU's gradient: ``grad`` where the forward output was positive, else 0."""
    return apply_op(_relu_backward, (grad, out))


# ---------------------------------------------------------- leaky_relu, elu
@register_op("leaky_relu", saves=("x",))
def _leaky_relu(x, negative_slope=0.01):
    return np.where(x > 0, x, x * negative_slope).astype(x.dtype, copy=False)


@register_gradient("leaky_relu")
def leaky_relu_grad(orig, grad):
    """Forward: y = x if x > 0 else slope · x
    Backward: x̄ = ȳ if x > 0 else slope · ȳ   (slope at x = 0, as PyTorch)"""
    (x,) = orig.args
    slope = orig.attrs.get("negative_slope", 0.01)
    return [where(x > 0, grad, grad * slope)]


@register_jvp("leaky_relu")
def leaky_relu_jvp(orig, tangents):
    """Forward: y = x if x > 0 else slope · x
    JVP: ẏ = ẋ if x > 0 else slope · ẋ   (a real elementwise op: the gradient rule's formula)"""
    return leaky_relu_grad(orig, tangents[0])[0]


def leaky_relu(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    refuse_complex("leaky_relu", input)
    negative_slope = checks.scalar_arg("leaky_relu", "negative_slope", negative_slope)
    attrs = None if negative_slope == 0.01 else {"negative_slope": negative_slope}
    return apply_op(_leaky_relu, (input,), attrs)


@register_op("elu", saves=("x",))
def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))).astype(x.dtype, copy=False)


@register_gradient("elu")
def elu_grad(orig, grad):
    """Forward: y = x if x > 0 else α · (eˣ − 1)
    Backward: x̄ = ȳ if x > 0 else ȳ · α · eˣ"""
    (x,) = orig.args
    alpha = orig.attrs.get("alpha", 1.0)
    below = where(x < 0, x, 0.0)  # eˣ bends only below 0: PyTorch's second derivative at 0 is 0
    return [where(x > 0, grad, grad * alpha * exp(below))]


@register_jvp("elu")
def elu_jvp(orig, tangents):
    """Forward: y = x if x > 0 else α · (eˣ − 1)
    JVP: ẏ = ẋ if x > 0 else ẋ · α · eˣ"""
    return elu_grad(orig, tangents[0])[0]


def elu(input: Tensor, alpha: float = 1.0) -> Tensor:
    refuse_complex("elu", input)
    alpha = checks.scalar_arg("elu", "alpha", alpha)
    attrs = None if alpha == 1.0 else {"alpha": alpha}
    return apply_op(_elu, (float_input(input, "elu"),), attrs)


# --------------------------------------------------------------------- gelu
@register_op("gelu", saves=("x",))
def _gelu(x, approximate="none"):
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_gelu.forward, x, approximate)
    if approximate == "tanh":
        inner = GELU_TANH_K * (x + GELU_TANH_C * x**3)
        return 0.5 * x * (1 + np.tanh(inner))
    return (0.5 * x * (1 + erf_array(x / SQRT_2))).astype(x.dtype, copy=False)


@register_gradient("gelu")
def gelu_grad(orig, grad):
    """Forward: y = x · Φ(x)   (Φ the normal CDF; or its tanh approximation)
    Backward: x̄ = ȳ · (Φ(x) + x · φ(x))   (φ the normal density)"""
    (x,) = orig.args
    if orig.attrs.get("approximate", "none") == "tanh":
        t = tanh(GELU_TANH_K * (x + GELU_TANH_C * x * x * x))
        slope = GELU_TANH_K * (1 + 3 * GELU_TANH_C * x * x)
        return [grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * slope)]
    cdf = 0.5 * (1 + erf(x / SQRT_2))
    density = INV_SQRT_2PI * exp(-0.5 * x * x)
    return [grad * (cdf + x * density)]


@register_jvp("gelu")
def gelu_jvp(orig, tangents):
    """Forward: y = x · Φ(x)
    JVP: ẏ = ẋ · (Φ(x) + x · φ(x))   (or the tanh approximation's slope)"""
    return gelu_grad(orig, tangents[0])[0]


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit; ``approximate='tanh'`` uses the tanh formula."""
    refuse_complex("gelu", input)
    checks.one_of("gelu", "approximate", approximate, ("none", "tanh"), error=RuntimeError)
    attrs = {"approximate": "tanh"} if approximate == "tanh" else None
    return apply_op(_gelu, (float_input(input, "gelu"),), attrs)


# --------------------------------------------------------------------- silu
@register_op("silu", saves=("x",))
def _silu(x):
    return x / (1 + np.exp(-x))


@register_gradient("silu")
def silu_grad(orig, grad):
    """Forward: y = x · σ(x)
    Backward: x̄ = ȳ · σ(x) · (1 + x · (1 − σ(x)))"""
    (x,) = orig.args
    s = sigmoid(x)
    return [grad * s * (1 + x * (1 - s))]


@register_jvp("silu")
def silu_jvp(orig, tangents):
    """Forward: y = x · σ(x)
    JVP: ẏ = ẋ · σ(x) · (1 + x · (1 − σ(x)))"""
    return silu_grad(orig, tangents[0])[0]


def silu(input: Tensor) -> Tensor:
    if isinstance(input, Tensor) and input.requires_grad and is_grad_enabled():
        # PyTorch computes silu of complex numbers, but will not differentiate it
        refuse_complex("silu (differentiated)", input, error=RuntimeError)
    return apply_op(_silu, (float_input(input, "silu"),))


# ----------------------------------------------------------------- softplus
@register_op("softplus", saves=("x",))
def _softplus(x, beta=1.0, threshold=20.0):
    bx = beta * x
    smooth = np.logaddexp(0, bx) / beta  # log(1 + e^(βx)) without overflow
    return np.where(bx > threshold, x, smooth).astype(x.dtype, copy=False)


@register_gradient("softplus")
def softplus_grad(orig, grad):
    """Forward: y = log(1 + e^(βx)) / β   (y = x where βx > threshold)
    Backward: x̄ = ȳ · σ(βx)   (ȳ where βx > threshold)"""
    (x,) = orig.args
    beta = orig.attrs.get("beta", 1.0)
    threshold = orig.attrs.get("threshold", 20.0)
    bx = x * beta
    return [where(bx > threshold, grad, grad * sigmoid(bx))]


@register_jvp("softplus")
def softplus_jvp(orig, tangents):
    """Forward: y = log(1 + e^(βx)) / β   (y = x where βx > threshold)
    JVP: ẏ = ẋ · σ(βx)   (ẋ where βx > threshold)"""
    return softplus_grad(orig, tangents[0])[0]


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """PyTorch's softplus: smooth ReLU, linear above ``threshold`` for numerical stability."""
    refuse_complex("softplus", input)
    beta = checks.scalar_arg("softplus", "beta", beta)
    threshold = checks.scalar_arg("softplus", "threshold", threshold)
    attrs = None if (beta, threshold) == (1.0, 20.0) else {"beta": beta, "threshold": threshold}
    return apply_op(_softplus, (float_input(input, "softplus"),), attrs)
