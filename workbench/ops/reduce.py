"""Reductions: sum, mean, max/min (full, over a dim, amax/amin), argmax/argmin.

A reduction's gradient broadcasts ȳ back over the reduced axes: reshape ȳ to the
``keepdim`` shape, then expand to the input's shape.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .. import backend
from ..autograd.dispatch import apply_op
from ..tensor import Tensor
from .broadcasting import expand
from .registry import register_gradient, register_op
from .shape import normalize_dim, reshape


def reduced_dims(dim, ndim: int, op: str) -> tuple | None:
    """``dim`` as a sorted tuple of non-negative axes (None means all)."""
    if dim is None:
        return None
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    if ndim == 0:
        for d in dims:
            normalize_dim(d, 1, op)
        return ()
    return tuple(sorted({normalize_dim(d, ndim, op) for d in dims}))


def keepdim_shape(shape: tuple, dims: tuple | None) -> tuple:
    """``shape`` with the reduced axes kept as size 1."""
    if dims is None:
        return (1,) * len(shape)
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def unreduce(grad: Tensor, shape: tuple, dims: tuple | None) -> Tensor:
    """Broadcast a reduction's gradient back to the input's ``shape``."""
    if dims is not None or grad.ndim != 0:  # put the reduced axes back (as size 1) first
        grad = reshape(grad, keepdim_shape(shape, dims))
    return expand(grad, shape)


# ---------------------------------------------------------------------- sum
@register_op("sum")
def _sum(x, dims, keepdim, dtype=None):
    return np.sum(x, axis=dims, keepdims=keepdim, dtype=dtype)


@register_gradient("sum")
def sum_grad(orig, grad):
    """Forward: y = Σ x   (over dim)
    Backward: x̄ = broadcast ȳ back over the summed axes"""
    (x,) = orig.args
    return [unreduce(grad, x.shape, orig.attrs["dims"])]


def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    dims = reduced_dims(dim, input.ndim, "sum")
    attrs = {"dims": dims, "keepdim": keepdim}
    if dtype is not None:
        attrs["dtype"] = np.dtype(dtype)
    elif input.dtype.kind in "bu" or input.dtype == np.int32:
        attrs["dtype"] = np.dtype("int64")
    return apply_op(_sum, (input,), attrs)


# --------------------------------------------------------------------- mean
@register_op("mean")
def _mean(x, dims, keepdim):
    return np.mean(x, axis=dims, keepdims=keepdim)


@register_gradient("mean")
def mean_grad(orig, grad):
    """Forward: y = (1/N) Σ x   (over dim)
    Backward: x̄ = broadcast ȳ / N back over the averaged axes"""
    (x,) = orig.args
    dims = orig.attrs["dims"]
    count = _count(x.shape, dims)
    return [unreduce(grad / count, x.shape, dims)]


def _count(shape: tuple, dims: tuple | None) -> int:
    if dims is None:
        return math.prod(shape)
    return math.prod(shape[d] for d in dims)


def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    if dtype is not None:
        input = input.to(dtype)
    if input.dtype.kind not in "fc":
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating "
            f"point or complex dtype. Got: {input.dtype}"
        )
    dims = reduced_dims(dim, input.ndim, "mean")
    return apply_op(_mean, (input,), {"dims": dims, "keepdim": keepdim})


# ------------------------------------------------------ amax / amin / max / min
@register_op("amax", saves=("x", "out"))
def _amax(x, dims, keepdim):
    return _reduce_checked(np.max, x, dims, keepdim, "amax")


@register_op("amin", saves=("x", "out"))
def _amin(x, dims, keepdim):
    return _reduce_checked(np.min, x, dims, keepdim, "amin")


def _reduce_checked(fn, x, dims, keepdim, name):
    if x.size == 0:
        raise ValueError(f"{name}(): expected a non-empty tensor to reduce")
    return fn(x, axis=dims, keepdims=keepdim)


def _extreme_grad(orig, grad):
    x, y = orig.args[0], orig.out
    dims = orig.attrs["dims"]
    y_keep = reshape(y, keepdim_shape(x.shape, dims))
    hits = (x == y_keep).to(grad.dtype)
    share = hits / sum(hits, dim=dims, keepdim=True)
    return [unreduce(grad, x.shape, dims) * share]


@register_gradient("amax")
def amax_grad(orig, grad):
    """Forward: y = max x   (over dim)
    Backward: x̄ = ȳ shared evenly among the elements equal to the max"""
    return _extreme_grad(orig, grad)


@register_gradient("amin")
def amin_grad(orig, grad):
    """Forward: y = min x   (over dim)
    Backward: x̄ = ȳ shared evenly among the elements equal to the min"""
    return _extreme_grad(orig, grad)


def amax(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    dims = None if dim == () or dim is None else reduced_dims(dim, input.ndim, "amax")
    return apply_op(_amax, (input,), {"dims": dims, "keepdim": keepdim})


def amin(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    dims = None if dim == () or dim is None else reduced_dims(dim, input.ndim, "amin")
    return apply_op(_amin, (input,), {"dims": dims, "keepdim": keepdim})


MaxResult = namedtuple("MaxResult", ["values", "indices"])


@register_op("max_dim", saves=("x",))
def _max_dim(x, dim, keepdim, largest):
    index = (np.argmax if largest else np.argmin)(x, axis=dim, keepdims=True)
    values = np.take_along_axis(x, index, axis=dim)
    return values if keepdim else np.squeeze(values, axis=dim)


@register_op("first_extreme_mask", differentiable=False)
def _first_extreme_mask(x, dim, largest):
    """1 at the first max (or min) along ``dim``, 0 elsewhere."""
    index = (np.argmax if largest else np.argmin)(x, axis=dim, keepdims=True)
    mask = np.zeros_like(x)
    np.put_along_axis(mask, index, 1, axis=dim)
    return mask


@register_gradient("max_dim")
def max_dim_grad(orig, grad):
    """Forward: values = max(x, dim)   (with indices)
    Backward: x̄ = ȳ at the first index of each max, 0 elsewhere"""
    (x,) = orig.args
    dim, largest = orig.attrs["dim"], orig.attrs["largest"]
    mask = apply_op(_first_extreme_mask, (x,), {"dim": dim, "largest": largest})
    return [unreduce(grad, x.shape, (dim,)) * mask]


def _max_or_min(input: Tensor, dim, keepdim: bool, largest: bool, name: str):
    if dim is None:
        return (amax if largest else amin)(input)
    if isinstance(dim, Tensor):
        from .arithmetic import maximum, minimum

        return (maximum if largest else minimum)(input, dim)
    if input.numel() == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    d = normalize_dim(dim, input.ndim, name) if input.ndim else None
    if d is None:
        values = input
        indices = Tensor(backend.xp(input._data).zeros((), dtype=np.int64))  # input's device
        return MaxResult(values, indices)
    values = apply_op(_max_dim, (input,), {"dim": d, "keepdim": keepdim, "largest": largest})
    indices = (argmax if largest else argmin)(input, d, keepdim)
    return MaxResult(values, indices)


def max(input: Tensor, dim=None, keepdim: bool = False):
    """``max(x)``: the largest value; ``max(x, dim)``: (values, indices); ``max(x, y)``: maximum."""
    return _max_or_min(input, dim, keepdim, True, "max")


def min(input: Tensor, dim=None, keepdim: bool = False):
    """``min(x)``: the smallest value; ``min(x, dim)``: (values, indices)."""
    return _max_or_min(input, dim, keepdim, False, "min")


# ------------------------------------------------------------ argmax/argmin
@register_op("argmax", differentiable=False)
def _argmax(x, dim, keepdim):
    return np.argmax(x, axis=dim, keepdims=keepdim).astype(np.int64)


@register_op("argmin", differentiable=False)
def _argmin(x, dim, keepdim):
    return np.argmin(x, axis=dim, keepdims=keepdim).astype(np.int64)


def argmax(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    d = None if dim is None else normalize_dim(dim, input.ndim, "argmax")
    return apply_op(_argmax, (input,), {"dim": d, "keepdim": keepdim and d is not None})


def argmin(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    d = None if dim is None else normalize_dim(dim, input.ndim, "argmin")
    return apply_op(_argmin, (input,), {"dim": d, "keepdim": keepdim and d is not None})
