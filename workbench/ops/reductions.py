"""More reductions: prod, var, std, logsumexp, norm.

Like ``sum`` and ``mean`` (in :mod:`workbench.ops.reduce`), a reduction's gradient
broadcasts ȳ back over the reduced axes (``unreduce``) and multiplies it by the
local derivative. Scans (``cumsum``, ``cumprod``) are in :mod:`workbench.ops.scans`,
softmax and log_softmax in :mod:`workbench.ops.softmax`.

numpy returns a scalar, not an array, from a full reduction. Kernels turn it into a
0-d array with ``backend.asarray(result, like=x)``, not ``np.asarray``: on a CuPy
array np.asarray would have to copy GPU memory to the CPU, which CuPy refuses.
"""

from __future__ import annotations

import math

import numpy as np

from .. import backend
from ..autograd.dispatch import apply_op
from ..tensor import Tensor
from .arithmetic import _float_input, abs, sign, where
from .indexing import cat, flip
from .reduce import keepdim_shape, reduced_dims, sum, unreduce
from .reduce import mean as mean_op
from .registry import register_gradient, register_op
from .shape import astype, getitem, reshape
from .unary import exp, sqrt


def _along(dim: int, index) -> tuple:
    return (slice(None),) * dim + (index,)


def _count(shape: tuple, dims: tuple | None) -> int:
    if dims is None:
        return math.prod(shape)
    return math.prod(shape[d] for d in dims)


def _has_zeros(x: Tensor) -> bool:
    """Rules may look at values to pick a formula (PyTorch's prod and cumprod do too)."""
    return bool(np.any(x._data == 0))


def _int_to_int64(input: Tensor, dtype):
    """Sums and products of bools and ints accumulate in int64, as in PyTorch."""
    if dtype is not None:
        return np.dtype(dtype)
    if input.dtype.kind in "biu":
        return np.dtype("int64")
    return None


# --------------------------------------------------------------------- prod
@register_op("prod", saves=("x", "out"))
def _prod(x, dims, keepdim, dtype=None):
    return backend.asarray(np.prod(x, axis=dims, keepdims=keepdim, dtype=dtype), like=x)


@register_gradient("prod")
def prod_grad(orig, grad):
    """Forward: y = Π x   (over dim)
    Backward: x̄ᵢ = ȳ · Π_{j≠i} xⱼ   (= ȳ · y / xᵢ when no x is 0)"""
    (x,) = orig.args
    dims = orig.attrs["dims"]
    spread = unreduce(grad, x.shape, dims)
    if not _has_zeros(x):
        y = reshape(orig.out, keepdim_shape(x.shape, dims))
        return [spread * y / x]
    if dims is None:
        return [spread * reshape(_product_of_others(reshape(x, (-1,)), 0), x.shape)]
    return [spread * _product_of_others(x, dims[0])]


def _product_of_others(x: Tensor, dim: int) -> Tensor:
    """Π_{j≠i} xⱼ along ``dim`` without dividing (so zeros are fine).

    It is (product of everything before i) · (product of everything after i): two
    cumulative products, one run forwards and one backwards.
    """
    from .scans import cumprod  # scans.py imports this module

    n = x.shape[dim]
    shape = tuple(1 if i == dim else s for i, s in enumerate(x.shape))
    one = Tensor._make(backend.xp(x._data).ones(shape, x.dtype))  # on x's device, for cat
    before = cumprod(cat([one, getitem(x, _along(dim, slice(0, n - 1)))], dim), dim)
    after = cat([getitem(x, _along(dim, slice(1, n))), one], dim)
    after = flip(cumprod(flip(after, dim), dim), dim)
    return before * after


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The product of all elements, or along ``dim``."""
    dims = None if dim is None else reduced_dims(dim, input.ndim, "prod")
    attrs = {"dims": dims, "keepdim": keepdim}
    wanted = _int_to_int64(input, dtype)
    if wanted is not None:
        attrs["dtype"] = wanted
    return apply_op(_prod, (input,), attrs)


# ------------------------------------------------------------------ var, std
@register_op("var", saves=("x",))
def _var(x, dims, correction, keepdim):
    centered = x - np.mean(x, axis=dims, keepdims=True)
    squares = np.sum(centered * centered, axis=dims, keepdims=keepdim)
    with np.errstate(divide="ignore", invalid="ignore"):
        return backend.asarray(squares / max(_count(x.shape, dims) - correction, 0), like=x)


@register_gradient("var")
def var_grad(orig, grad):
    """Forward: y = Σ (x − mean x)² / (N − correction)   (correction 1: unbiased)
    Backward: x̄ = ȳ · 2 (x − mean x) / (N − correction)"""
    (x,) = orig.args
    dims, correction = orig.attrs["dims"], orig.attrs["correction"]
    centered = x - mean_op(x, dims, keepdim=True)
    denominator = float(max(_count(x.shape, dims) - correction, 0))
    return [unreduce(grad, x.shape, dims) * centered * 2 / denominator]


def _correction(unbiased, correction, name: str) -> float:
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{name}: can't specify both unbiased and correction")
    if correction is not None:
        return correction
    return 0 if unbiased is False else 1


def var(
    input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None
) -> Tensor:
    """Variance; by default unbiased (divide by N − 1), as PyTorch. ``correction=0``: by N."""
    if isinstance(dim, bool):  # the legacy form var(x, unbiased)
        dim, unbiased = None, dim
    if input.dtype.kind not in "fc":
        raise RuntimeError(f"var(): expected a floating point input, got {input.dtype}")
    dims = None if dim is None else reduced_dims(dim, input.ndim, "var")
    attrs = {
        "dims": dims,
        "correction": _correction(unbiased, correction, "var"),
        "keepdim": keepdim,
    }
    return apply_op(_var, (input,), attrs)


def std(
    input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None
) -> Tensor:
    """Standard deviation: √var, with the same ``correction`` rules."""
    return sqrt(var(input, dim, unbiased, keepdim, correction=correction))


# ---------------------------------------------------------------- logsumexp
@register_op("logsumexp", saves=("x", "out"))
def _logsumexp(x, dims, keepdim):
    peak = np.max(x, axis=dims, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0)  # all −∞ (or ∞) rows: no shift
    with np.errstate(divide="ignore", over="ignore"):
        out = np.log(np.sum(np.exp(x - peak), axis=dims, keepdims=True)) + peak
    if keepdim:
        return out
    return out.reshape(()) if dims is None else np.squeeze(out, axis=dims)


@register_gradient("logsumexp")
def logsumexp_grad(orig, grad):
    """Forward: y = log Σ exp(x)   (over dim, shifted by the max for stability)
    Backward: x̄ = ȳ · exp(x − y)   (= ȳ · softmax(x))"""
    (x,) = orig.args
    dims = orig.attrs["dims"]
    y = reshape(orig.out, keepdim_shape(x.shape, dims))
    return [unreduce(grad, x.shape, dims) * exp(x - y)]


def logsumexp(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` without overflow."""
    input = _float_input(input)
    dims = None if dim is None else reduced_dims(dim, input.ndim, "logsumexp")
    return apply_op(_logsumexp, (input,), {"dims": dims, "keepdim": keepdim})


# --------------------------------------------------------------------- norm
@register_op("norm", saves=("x", "out"))
def _norm(x, p, dims, keepdim):
    a = np.abs(x)
    if p == math.inf:
        return backend.asarray(np.max(a, axis=dims, keepdims=keepdim), like=x)
    if p == -math.inf:
        return backend.asarray(np.min(a, axis=dims, keepdims=keepdim), like=x)
    if p == 0:
        return backend.asarray(np.sum(a != 0, axis=dims, keepdims=keepdim), like=x, dtype=x.dtype)
    if p == 2:
        return backend.asarray(np.sqrt(np.sum(a * a, axis=dims, keepdims=keepdim)), like=x)
    return backend.asarray(np.sum(a**p, axis=dims, keepdims=keepdim) ** (1.0 / p), like=x)


@register_gradient("norm")
def norm_grad(orig, grad):
    """Forward: y = (Σ |x|ᵖ)^(1/p)   (p = 2: √Σx²; p = ±∞: max/min |x|)
    Backward: x̄ = ȳ · sign(x) · |x|^(p−1) / y^(p−1)   (p = 2: ȳ · x / y; 0 where y = 0)"""
    (x,) = orig.args
    p, dims = orig.attrs["p"], orig.attrs["dims"]
    spread = unreduce(grad, x.shape, dims)
    y = reshape(orig.out, keepdim_shape(x.shape, dims))
    if p == 0:
        return [spread * 0.0]
    if p == 1:
        return [spread * sign(x)]
    if p in (math.inf, -math.inf):
        hits = astype(abs(x) == y, x.dtype)
        return [spread * sign(x) * hits / sum(hits, dims, keepdim=True)]
    safe_y = where(y == 0, 1.0, y)  # where y = 0 every x is 0 too, so x̄ = 0
    if p == 2:
        return [spread * x / safe_y]
    return [spread * sign(x) * abs(x) ** (p - 1) / safe_y ** (p - 1)]


def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """The p-norm of all elements, or along ``dim`` (``'fro'`` means p = 2)."""
    if dtype is not None:
        input = astype(input, dtype)
    if p == "nuc":
        raise ValueError("norm: the nuclear norm (p='nuc') is not supported")
    p = 2.0 if p in ("fro", None) else float(p)
    dims = None if dim is None else reduced_dims(dim, input.ndim, "norm")
    return apply_op(_norm, (_float_input(input),), {"p": p, "dims": dims, "keepdim": keepdim})
