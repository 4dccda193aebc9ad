"""Scans: cumsum and cumprod, running sums and products along one axis.

A scan keeps its axis, and its gradient runs the scan backwards.
"""

from __future__ import annotations

import numpy as np

from ..core import backend, checks
from ..core.argnames import numpy_style
from ..core.checks import dim_in_range
from ..core.dtypes import SMALL_FLOAT_CHARS, in_float32
from ..core.tensor import Tensor
from ..record.dispatch import apply_op
from .arithmetic import where
from .complex_numbers import conj
from .indexing import flip
from .reductions import has_zeros, int_to_int64, sum
from .registry import register_gradient, register_jvp, register_linear_jvp, register_op
from .shape import reshape, transpose, unsqueeze


# ----------------------------------------------------------- cumsum, cumprod
def _scanned(scan, x, dim: int, dtype):
    """``scan(x, axis=dim)`` (np.cumsum or np.cumprod) as PyTorch's kernel runs it."""
    if dtype is not None:  # as PyTorch: converted first, then scanned as that dtype is
        x = x.astype(dtype, copy=False)
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(scan, x, axis=dim)
    return scan(x, axis=dim)


@register_op("cumsum")
def _cumsum(x, dim, dtype=None):
    return _scanned(np.cumsum, x, dim, dtype)


@register_gradient("cumsum")
def cumsum_grad(orig, grad):
    """Forward: yᵢ = Σ_{j≤i} xⱼ   (along dim)
    Backward: x̄ₖ = Σ_{i≥k} ȳᵢ   (a reversed cumsum: flip, cumsum, flip)"""
    return [_reverse_cumsum(grad, orig.attrs["dim"])]


register_linear_jvp("cumsum", "yᵢ = Σ_{j≤i} xⱼ", "ẏᵢ = Σ_{j≤i} ẋⱼ   (linear)")


def _reverse_cumsum(x: Tensor, dim: int) -> Tensor:
    return flip(cumsum(flip(x, dim), dim), dim)


@register_op("cumprod", saves=("x", "out"))
def _cumprod(x, dim, dtype=None):
    return _scanned(np.cumprod, x, dim, dtype)


@register_gradient("cumprod")
def cumprod_grad(orig, grad):
    """Forward: yᵢ = Π_{j≤i} xⱼ   (along dim)
    Backward: x̄ₖ = Σ_{i≥k} ȳᵢ · Π_{j≤i, j≠k} xⱼ   (= revcumsum(ȳ · y)ₖ / xₖ when no x is 0)
    Complex x: x̄ₖ = Σ_{i≥k} ȳᵢ · conj(Π_{j≤i, j≠k} xⱼ)"""
    (x,) = orig.args
    dim = orig.attrs["dim"]
    if not has_zeros(x):
        return [_reverse_cumsum(grad * conj(orig.out), dim) / conj(x)]
    return [_cumprod_grad_with_zeros(conj(x), grad, dim)]


@register_jvp("cumprod")
def cumprod_jvp(orig, tangents):
    """Forward: yᵢ = Π_{j≤i} xⱼ   (along dim)
    JVP: ẏᵢ = Σ_{k≤i} ẋₖ · Π_{j≤i, j≠k} xⱼ   (= yᵢ · Σ_{k≤i} ẋₖ / xₖ when no x is 0)"""
    (x,), (dx,) = orig.args, tangents
    dim = orig.attrs["dim"]
    if not has_zeros(x):
        return orig.out * cumsum(dx / x, dim)
    return _cumprod_jvp_with_zeros(x, dx, dim)


def _cumprod_grad_with_zeros(x: Tensor, grad: Tensor, dim: int) -> Tensor:
    """The cumprod gradient without dividing by x, as an n × n table along ``dim``.

    Row k of the table is x with xₖ replaced by 1; its cumulative product at i is
    Π_{j≤i, j≠k} xⱼ. Weighting by ȳᵢ and summing over i ≥ k gives x̄ₖ. It costs n²
    per slice, so it is used only when some x is exactly 0.
    """
    last = x.ndim - 1
    xs, gs = (x, grad) if dim == last else (transpose(x, dim, -1), transpose(grad, dim, -1))
    n = xs.shape[-1]
    xp = backend.xp(x._data)  # the masks go on x's device, to meet it in where
    diagonal = Tensor._make(xp.eye(n, dtype=bool))
    table = cumprod(where(diagonal, 1.0, unsqueeze(xs, -2)), -1)
    later = Tensor._make(np.triu(xp.ones((n, n), dtype=bool)))  # [k, i] = i ≥ k
    out = sum(where(later, unsqueeze(gs, -2) * table, 0.0), -1)
    return out if dim == last else transpose(out, dim, -1)


def _cumprod_jvp_with_zeros(x: Tensor, dx: Tensor, dim: int) -> Tensor:
    """ẏᵢ = Σ_{k≤i} ẋₖ · Π_{j≤i, j≠k} xⱼ from the gradient rule's n × n table (row k: the
    cumprod of x with xₖ replaced by 1), summed down the columns instead of along the rows."""
    last = x.ndim - 1
    xs, ds = (x, dx) if dim == last else (transpose(x, dim, -1), transpose(dx, dim, -1))
    n = xs.shape[-1]
    xp = backend.xp(x._data)
    diagonal = Tensor._make(xp.eye(n, dtype=bool))
    table = cumprod(where(diagonal, 1.0, unsqueeze(xs, -2)), -1)  # [..., k, i]
    later = Tensor._make(np.triu(xp.ones((n, n), dtype=bool)))  # [k, i] = i ≥ k
    out = sum(where(later, unsqueeze(ds, -1) * table, 0.0), -2)
    return out if dim == last else transpose(out, dim, -1)


def _scan(kernel, input: Tensor, dim: int, dtype, name: str) -> Tensor:
    checks.tensor_arg(name, "input", input)
    if input.ndim == 0:
        dim_in_range(name, dim, 0)
        return reshape(_scan(kernel, reshape(input, (1,)), 0, dtype, name), ())
    d = dim_in_range(name, dim, input.ndim)
    attrs = {"dim": d}
    wanted = int_to_int64(input, dtype, name)
    if wanted is not None:
        attrs["dtype"] = wanted
    return apply_op(kernel, (input,), attrs)


def cumsum(input: Tensor, dim: int | None = None, *, dtype=None, **numpy_names) -> Tensor:
    """Running sums along ``dim`` (``axis=``, numpy's name, works too, as in PyTorch)."""
    dim = _scan_dim("cumsum", dim, numpy_names)
    return _scan(_cumsum, input, dim, dtype, "cumsum")


def cumprod(input: Tensor, dim: int | None = None, *, dtype=None, **numpy_names) -> Tensor:
    """Running products along ``dim`` (``axis=``, numpy's name, works too, as in PyTorch)."""
    dim = _scan_dim("cumprod", dim, numpy_names)
    return _scan(_cumprod, input, dim, dtype, "cumprod")


def _scan_dim(op: str, dim, numpy_names: dict) -> int:
    """The dim to scan along, given as ``dim`` or as numpy's ``axis=``; required."""
    if numpy_names:
        dim, _ = numpy_style(op, dim, False, numpy_names)
    if dim is None:
        raise TypeError(f"{op}() missing 1 required positional argument: 'dim'")
    return dim
