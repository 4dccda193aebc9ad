"""Matrix multiplication, with numpy's (and PyTorch's) rules for 1-D and batched operands."""

from __future__ import annotations

import numpy as np

from ..core import checks
from ..core.dtypes import SMALL_FLOAT_CHARS, in_float32
from ..core.tensor import Tensor
from ..record.dispatch import apply_op, broadcast_mismatch
from ..record.forward_ad import same_op
from .broadcasting import sum_to
from .complex_numbers import conj, refuse_mixed_complex
from .registry import register_gradient, register_jvp, register_op
from .shape import matrix_t, matrix_transpose, reshape, unsqueeze


def _matmul_name(node) -> str:
    """PyTorch names a product by its operands' ranks: matrix·matrix MmBackward0,
    matrix·vector MvBackward0, vector·vector DotBackward0; other ranks keep ours."""
    ranks = tuple(len(meta[0]) for meta in node.input_meta)
    return {(2, 2): "MmBackward0", (2, 1): "MvBackward0", (1, 1): "DotBackward0"}.get(
        ranks, "MatmulBackward0"
    )


@register_op(
    "matmul", inputs=("a", "b"), saves={"a": "b", "b": "a"}, node_name=_matmul_name, writes_out=True
)
def _matmul(a, b, out=None):
    if a.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_matmul.forward, a, b)
    return np.matmul(a, b, out=out)


@register_gradient("matmul")
def matmul_grad(orig, grad):
    """Forward: Y = A @ B
    Backward: Ā = Ȳ @ Bᵀ, B̄ = Aᵀ @ Ȳ   (batch dims collapse-summed back)
    Complex A, B: Ā = Ȳ @ Bᴴ, B̄ = Aᴴ @ Ȳ   (Bᴴ = conj(B)ᵀ: the conjugate transpose)"""
    a, b = orig.args
    need_a, need_b = orig.needs_input_grad
    if a.ndim == 1 and b.ndim == 1:
        return [grad * conj(b) if need_a else None, grad * conj(a) if need_b else None]
    if a.ndim == 2 and b.ndim == 1:  # matrix · vector: Ā = ȳ ⊗ conj(b), b̄ = Aᴴ ȳ
        return [
            unsqueeze(grad, -1) * conj(b) if need_a else None,
            matrix_transpose(conj(a)) @ grad if need_b else None,
        ]
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
        grad_a = _fit(_mm(grad, matrix_transpose(conj(b))), a_shape, left=True)
    if need_b:
        grad_b = _fit(_mm(matrix_transpose(conj(a)), grad), b_shape, left=False)
    return [grad_a, grad_b]


@register_jvp("matmul")
def matmul_jvp(orig, tangents):
    """Forward: Y = A @ B
    JVP: Ẏ = Ȧ @ B + A @ Ḃ"""
    return same_op(orig, tangents, (0,)) + same_op(orig, tangents, (1,))


def _fit(grad: Tensor, shape: tuple, left: bool) -> Tensor:
    """Sum away broadcast batch dims, then drop the unit dim a 1-D operand was given."""
    if len(shape) > 1:
        return sum_to(grad, shape)
    matrix = (1,) + shape if left else shape + (1,)
    return reshape(sum_to(grad, matrix), shape)


def refuse_mixed_dtypes(op: str, **operands: Tensor | None) -> None:
    """PyTorch's matrix kernels take one dtype: float32 @ float64, bfloat16 @ float32 or
    int64 @ float32 is a RuntimeError there, not promoted as ``*`` and ``+`` promote."""
    tensors = {name: t for name, t in operands.items() if t is not None}
    dtypes = {t.dtype for t in tensors.values()}
    if len(dtypes) > 1 and all(d.kind != "b" for d in dtypes):  # bool: the op refuses it
        refuse_mixed_complex(op, *tensors.values())  # (its own message: real and complex)
        names = list(tensors)
        together = ", ".join(names[:-1]) + " and " + names[-1]
        got = ", ".join(f"{name} {t.dtype} {tuple(t.shape)}" for name, t in tensors.items())
        raise RuntimeError(
            f"{op}: expected {together} to have the same dtype, but got {got}: "
            "convert one with .to(the other's dtype), e.g. .float() or .double()"
        )


def matmul(input: Tensor, other: Tensor) -> Tensor:
    checks.tensor_arg("matmul", "input", input)
    checks.tensor_arg("matmul", "other", other)
    if input._data.dtype != other._data.dtype:  # the errors name both dtypes
        refuse_mixed_complex("matmul", input, other)
        refuse_mixed_dtypes("matmul", input=input, other=other)
    problem = _cannot_multiply(input._data.shape, other._data.shape)
    if problem:
        raise RuntimeError(f"matmul: {problem}")
    return apply_op(_matmul, (input, other))


def _cannot_multiply(a: tuple, b: tuple) -> str | None:
    """Why ``matmul`` cannot multiply operands of shapes ``a`` and ``b`` (None: it can).
    Read from the arrays' own shape tuples: it runs on every product."""
    if not a or not b:
        return (
            f"both arguments to matmul need to be at least 1D, but they are {len(a)}D and {len(b)}D"
        )
    inner_a, inner_b = a[-1], (b[0] if len(b) == 1 else b[-2])
    if inner_a != inner_b:
        rows = a[-2] if len(a) > 1 else 1
        cols = b[-1] if len(b) > 1 else 1
        return f"shapes {a} and {b} cannot be multiplied ({rows}x{inner_a} and {inner_b}x{cols})"
    batch_mismatch = broadcast_mismatch([a[:-2], b[:-2]]) if len(a) > 2 or len(b) > 2 else None
    if batch_mismatch:
        return (
            f"the batch dimensions of {a} and {b} cannot be broadcast: {batch_mismatch} of the "
            "batch shapes"
        )
    return None


def _check_ranks(op: str, rank: int, message: str, **named: Tensor) -> None:
    """Each named argument is a tensor of ``rank`` dims, or PyTorch's RuntimeError: ``message``
    with the argument's ``{name}`` and its ``{ndim}``."""
    for name, value in named.items():
        checks.tensor_arg(op, name, value)
        if value.ndim != rank:
            raise RuntimeError(message.format(name=name, ndim=value.ndim))


def _matmul_of_one_dtype(op: str, **named: Tensor) -> Tensor:
    """``matmul`` of the two named arguments, once they are checked to share a dtype (mm, mv,
    bmm and dot do not promote, unlike ``@``)."""
    refuse_mixed_dtypes(op, **named)
    return matmul(*named.values())


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Matrix times matrix, both 2-D (no broadcasting, unlike :func:`matmul`)."""
    _check_ranks(
        "mm", 2, "{name} must be a matrix (mm: got a {ndim}-D tensor)", self=input, mat2=mat2
    )
    (n, m), (k, p) = input.shape, mat2.shape
    if m != k:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{m} and {k}x{p})")
    return _matmul_of_one_dtype("mm", input=input, mat2=mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix times vector: ``(n, m) @ (m,) → (n,)``."""
    checks.tensor_arg("mv", "input", input)
    checks.tensor_arg("mv", "vec", vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got {input.ndim}, {vec.ndim} (mv: a 2-D matrix "
            "and a 1-D vector)"
        )
    (n, m), (k,) = input.shape, vec.shape
    if m != k:
        raise RuntimeError(f"size mismatch, got input ({n}), mat ({n}x{m}), vec ({k})")
    return _matmul_of_one_dtype("mv", input=input, vec=vec)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """A batch of matrix products: ``(b, n, m) @ (b, m, p) → (b, n, p)``, same b."""
    _check_ranks(
        "bmm", 3, "{name} must be a 3D tensor (bmm: got {ndim}-D)", batch1=input, batch2=mat2
    )
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(
            f"bmm: batch1 and batch2 must have the same batch size, got {input.shape[0]} and "
            f"{mat2.shape[0]}"
        )
    return _matmul_of_one_dtype("bmm", input=input, mat2=mat2)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """``outer(a, b)[i, j] = a[i] · b[j]`` for 1-D a and b."""
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(
            f"outer: expected 1-D vectors, got {input.ndim}-D and {vec2.ndim}-D tensors"
        )
    return unsqueeze(input, 1) * unsqueeze(vec2, 0)


def dot(input: Tensor, other: Tensor) -> Tensor:
    checks.tensor_args("dot", input=input, other=other)
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(
            f"dot: 1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors"
        )
    refuse_mixed_complex("dot", input, other)
    return _matmul_of_one_dtype("dot", input=input, other=other)


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
        grad_w = _mm(matrix_transpose(rows), conj(x_rows))
    grad_b = sum_to(rows, bias.shape) if need_b else None
    return [grad_x, grad_w, grad_b]


@register_jvp("linear")
def linear_jvp(orig, tangents):
    """Forward: y = x Wᵀ + b
    JVP: ẏ = ẋ Wᵀ + x Ẇᵀ + ḃ"""
    (x, weight, _), (dx, dw, db) = orig.args, tangents
    return apply_op(_linear, (dx, weight, None)) + apply_op(_linear, (x, dw, db))


def _mm(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` where the forward already checked that the shapes fit: the matmul op
    itself, without ``matmul``'s argument checks."""
    return apply_op(_matmul, (a, b))


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y = x Wᵀ + b`` with W of shape (out_features, in_features), as ``F.linear``."""
    _check_linear(input, weight, bias)
    return apply_op(_linear, (input, weight, bias))


def _check_linear(input: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    checks.tensor_args("linear", ("bias",), input=input, weight=weight, bias=bias)
    if weight.ndim != 2 or input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        raise RuntimeError(
            f"linear: input with last dim {input.shape[-1:]} cannot be multiplied by a weight "
            f"of shape {tuple(weight.shape)}: expected weight (out_features, "
            f"{input.shape[-1] if input.ndim else '?'}) (input {tuple(input.shape)})"
        )
    refuse_mixed_complex("linear", input, weight, bias)
    refuse_mixed_dtypes("linear", input=input, weight=weight, bias=bias)
    if bias is not None and tuple(bias.shape) not in ((weight.shape[0],), ()):
        raise RuntimeError(
            f"linear: bias of shape {tuple(bias.shape)} does not match out_features "
            f"{weight.shape[0]}"
        )


# -------------------------------------------------------------------- addmm
# mat2 is kept for W̄ too: its layout (a transposed view or not) decides how W̄ is made.
@register_op(
    "addmm",
    inputs=("input", "mat1", "mat2"),
    saves={"mat1": "mat2", "mat2": ("mat1", "mat2")},
    writes_out=True,
)
def _addmm(input, mat1, mat2, out=None):
    if mat1.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_addmm.forward, input, mat1, mat2)
    out = np.matmul(mat1, mat2, out=out)
    out += input  # out is fresh (or the runner's own): adding in place saves a temporary
    return out


@register_gradient("addmm")
def addmm_grad(orig, grad):
    """Forward: Y = b + X @ W   (b broadcast over the rows)
    Backward: b̄ = Σ Ȳ over the rows,  X̄ = Ȳ @ Wᵀ,  W̄ = Xᵀ @ Ȳ
    Complex: X̄ = Ȳ @ Wᴴ,  W̄ = Xᴴ @ Ȳ

    When W is a transposed view (nn.Linear's Wᵀ), W̄ is made as (Ȳᵀ @ X)ᵀ, as PyTorch
    does: the weight's own gradient then comes out in the weight's layout."""
    bias, mat1, mat2 = orig.args
    need_b, need_1, need_2 = orig.needs_input_grad
    grad_b = grad_1 = grad_2 = None
    if need_b:
        grad_b = sum_to(grad, bias.shape)
    if need_1:
        grad_1 = _mm(grad, matrix_transpose(conj(mat2)))
    if need_2:
        if _is_transposed(mat2):
            grad_2 = matrix_transpose(_mm(matrix_transpose(grad), conj(mat1)))
        else:
            grad_2 = _mm(matrix_transpose(conj(mat1)), grad)
    return [grad_b, grad_1, grad_2]


@register_jvp("addmm")
def addmm_jvp(orig, tangents):
    """Forward: Y = b + X @ W
    JVP: Ẏ = ḃ + Ẋ @ W + X @ Ẇ

    Three ops, as PyTorch's formula: one addmm of ḃ, Ẋ and W would put W on the tape of
    Ẏ's own tangent at an outer dual level whenever ḃ moves there (a zero term, but a
    gradient of 0 for W where PyTorch gives none)."""
    (_, mat1, mat2), (db, d1, d2) = orig.args, tangents
    return db + _mm(d1, mat2) + _mm(mat1, d2)


def _is_transposed(t: Tensor) -> bool:
    flags = t._data.flags
    return bool(flags.f_contiguous and not flags.c_contiguous)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``input + mat1 @ mat2`` for matrices (``input`` broadcast to the product's shape)."""
    checks.tensor_arg("addmm", "input", input)
    if beta != 1 or alpha != 1:
        return beta * input + alpha * mm(mat1, mat2)
    for name, value in (("mat1", mat1), ("mat2", mat2)):
        checks.tensor_arg("addmm", name, value)
        if value.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {value.ndim}-D tensor (addmm)")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} and "
            f"{mat2.shape[0]}x{mat2.shape[1]})"
        )
    # nn.Linear's forward runs here: three attribute reads, a call only for complex operands
    if "c" in (input._data.dtype.kind, mat1._data.dtype.kind, mat2._data.dtype.kind):
        refuse_mixed_complex("addmm", input, mat1, mat2)
    if not input._data.dtype == mat1._data.dtype == mat2._data.dtype:
        refuse_mixed_dtypes("addmm", input=input, mat1=mat1, mat2=mat2)
    return apply_op(_addmm, (input, mat1, mat2))


def linear_in_steps(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y = x Wᵀ + b`` recorded in PyTorch's steps, for ``nn.Linear``: ``Wᵀ`` (TBackward0),
    then ``addmm(b, x, Wᵀ)`` (AddmmBackward0; ``mm``, MmBackward0, without a bias). An
    input that is not a batch of rows is viewed as one, and the result viewed back
    (ViewBackward0). So a Linear's graph reads as in PyTorch: AddmmBackward0, its bias's
    AccumulateGrad, the input, TBackward0 → the weight's AccumulateGrad.

    ``F.linear`` computes the same as one node, LinearBackward0 (the op the rule
    exercises check).
    """
    _check_linear(input, weight, bias)  # (it covers what t's and addmm's own checks would)
    rows = input if input.ndim == 2 else reshape(input, (-1, input.shape[-1]))
    weight_t = matrix_t(weight)
    out = mm(rows, weight_t) if bias is None else apply_op(_addmm, (bias, rows, weight_t))
    if input.ndim == 2:
        return out
    return reshape(out, tuple(input.shape[:-1]) + (weight.shape[0],))
