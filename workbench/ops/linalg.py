"""Matrix multiplication, with numpy's (and PyTorch's) rules for 1-D and batched operands."""

from __future__ import annotations

import numpy as np

from .. import checks
from ..autograd.dispatch import apply_op, broadcast_mismatch
from ..dtypes import SMALL_FLOAT_CHARS, in_float32
from ..tensor import Tensor
from .broadcasting import sum_to
from .complex_numbers import conj, refuse_mixed_complex
from .registry import register_gradient, register_op
from .shape import reshape, transpose, unsqueeze


@register_op("matmul", inputs=("a", "b"), saves={"a": "b", "b": "a"})
def _matmul(a, b):
    if a.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_matmul.forward, a, b)
    return np.matmul(a, b)


def _mT(x: Tensor) -> Tensor:
    return transpose(x, -1, -2)


@register_gradient("matmul")
def matmul_grad(orig, grad):
    """Forward: Y = A @ B
    Backward: Ā = Ȳ @ Bᵀ, B̄ = Aᵀ @ Ȳ   (batch dims collapse-summed back)
    Complex A, B: Ā = Ȳ @ Bᴴ, B̄ = Aᴴ @ Ȳ   (Bᴴ = conj(B)ᵀ: the conjugate transpose)"""
    a, b = orig.args
    need_a, need_b = orig.needs_input_grad
    if a.ndim == 1 and b.ndim == 1:
        return [grad * conj(b) if need_a else None, grad * conj(a) if need_b else None]
    a_shape, b_shape = a.shape, b.shape
    # Treat 1-D operands as matrices: a row vector on the left, a column on the right.
    if a.ndim == 1:
        grad = unsqueeze(grad, -2)
        a = reshape(a, (1,) + a_shape) if need_b else a
    if b.ndim == 1:
        grad = unsqueeze(grad, -1)
        b = reshape(b, b_shape + (1,)) if need_a else b
    grad_a = grad_b = None
    if need_a:
        grad_a = _fit(grad @ _mT(conj(b)), a_shape, left=True)
    if need_b:
        grad_b = _fit(_mT(conj(a)) @ grad, b_shape, left=False)
    return [grad_a, grad_b]


def _fit(grad: Tensor, shape: tuple, left: bool) -> Tensor:
    """Sum away broadcast batch dims, then drop the unit dim a 1-D operand was given."""
    if len(shape) > 1:
        return sum_to(grad, shape)
    matrix = (1,) + shape if left else shape + (1,)
    return reshape(sum_to(grad, matrix), shape)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    from .arithmetic import promote

    checks.tensor_arg("matmul", "input", input)
    checks.tensor_arg("matmul", "other", other)
    refuse_mixed_complex("matmul", input, other)
    a, b = promote(input, other)
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(
            f"matmul: both arguments to matmul need to be at least 1D, but they are {a.ndim}D "
            f"and {b.ndim}D"
        )
    inner_a = a.shape[-1]
    inner_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if inner_a != inner_b:
        rows = a.shape[-2] if a.ndim > 1 else 1
        cols = b.shape[-1] if b.ndim > 1 else 1
        raise RuntimeError(
            f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied "
            f"({rows}x{inner_a} and {inner_b}x{cols})"
        )
    batch_mismatch = broadcast_mismatch([a.shape[:-2], b.shape[:-2]])
    if batch_mismatch:
        raise RuntimeError(
            f"matmul: the batch dimensions of {tuple(a.shape)} and {tuple(b.shape)} cannot be "
            f"broadcast: {batch_mismatch} of the batch shapes"
        )
    return apply_op(_matmul, (a, b))


mm = matmul


def dot(input: Tensor, other: Tensor) -> Tensor:
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(
            f"dot: 1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors"
        )
    refuse_mixed_complex("dot", input, other)
    return matmul(input, other)


# ---------------------------------------------------------------------- linear
@register_op("linear", inputs=("x", "weight", "bias"), saves={"x": "weight", "weight": "x"})
def _linear(x, weight, bias):
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_linear.forward, x, weight, bias)
    out = np.matmul(x, weight.T)
    if bias is not None:
        out += bias  # out is fresh: adding in place saves a temporary
    return out


@register_gradient("linear")
def linear_grad(orig, grad):
    """Forward: y = x Wᵀ + b
    Backward: x̄ = ȳ W, W̄ = ȳᵀ x, b̄ = Σ ȳ   (leading batch dims summed)
    Complex x: x̄ = ȳ conj(W), W̄ = ȳᵀ conj(x), b̄ = Σ ȳ

    One op rather than ``matmul(x, W.t()) + b`` so that W̄ comes out of a single
    matmul already in W's own (out, in) layout: no transposed copy per step.
    """
    x, weight, bias = orig.args
    need_x, need_w, need_b = orig.needs_input_grad
    rows = grad if grad.ndim == 2 else reshape(grad, (-1, grad.shape[-1]))  # batch dims → rows
    grad_x = _mm(grad, conj(weight)) if need_x else None
    grad_w = None
    if need_w:
        x_rows = x if x.ndim == 2 else reshape(x, (-1, x.shape[-1]))
        grad_w = _mm(_mT(rows), conj(x_rows))
    grad_b = sum_to(rows, bias.shape) if need_b else None
    return [grad_x, grad_w, grad_b]


def _mm(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` where the forward already checked that the shapes fit: the matmul op
    itself, without ``matmul``'s argument checks."""
    return apply_op(_matmul, (a, b))


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y = x Wᵀ + b`` with W of shape (out_features, in_features), as ``F.linear``."""
    if weight.ndim != 2 or input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        raise RuntimeError(
            f"linear: input with last dim {input.shape[-1:]} cannot be multiplied by a weight "
            f"of shape {tuple(weight.shape)}: expected weight (out_features, "
            f"{input.shape[-1] if input.ndim else '?'}) (input {tuple(input.shape)})"
        )
    refuse_mixed_complex("linear", input, weight, bias)
    if bias is not None and tuple(bias.shape) not in ((weight.shape[0],), ()):
        raise RuntimeError(
            f"linear: bias of shape {tuple(bias.shape)} does not match out_features "
            f"{weight.shape[0]}"
        )
    return apply_op(_linear, (input, weight, bias))
