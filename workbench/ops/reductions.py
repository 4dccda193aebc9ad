"""Reductions: sum, mean, max/min (full, over a dim, amax/amin), argmax/argmin, prod,
var, std, logsumexp, norm.

A reduction's gradient broadcasts ȳ back over the reduced axes (``unreduce``: reshape
ȳ to the ``keepdim`` shape, then expand to the input's shape) and multiplies it by
the local derivative. Scans (``cumsum``, ``cumprod``) are in :mod:`workbench.ops.scans`,
softmax and log_softmax in :mod:`workbench.ops.softmax`.

numpy returns a scalar, not an array, from a full reduction. Kernels turn it into a
0-d array with ``backend.asarray(result, like=x)``, not ``np.asarray``: on a CuPy
array np.asarray would have to copy GPU memory to the CPU, which CuPy refuses.
"""

from __future__ import annotations

import builtins
import math
import warnings
from collections import namedtuple
from collections.abc import Callable

import numpy as np

from ..core import backend, checks
from ..core.argnames import numpy_style
from ..core.checks import dim_in_range
from ..core.dtypes import SMALL_FLOAT_CHARS, in_float32
from ..core.tensor import Tensor, is_differentiable_dtype
from ..record.dispatch import apply_op, float_input
from .arithmetic import abs, maximum, minimum, sgn, where, zeros_like_grad
from .broadcasting import expand
from .complex_numbers import conj, refuse_complex
from .registry import (
    register_gradient,
    register_jvp,
    register_linear_jvp,
    register_op,
    register_rules,
)
from .shape import astype, getitem, reshape
from .unary import exp


def reduced_dims(dim, ndim: int, op: str) -> tuple | None:
    """``dim`` as a sorted tuple of non-negative axes (None means all), each named once."""
    if dim is None:
        return None
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    if not dims:  # dim=() reduces every dim, as in torch
        return None
    if dims is dim:  # PyTorch unpacks a list of dims with a TypeError for a number too big
        _each_fits_in_64_bits(dims, op)
    axes = [dim_in_range(op, d, ndim) for d in dims]  # a 0-d tensor takes 0 and -1
    for axis in axes:
        if axes.count(axis) > 1:  # PyTorch refuses sum(dim=(0, 0)) rather than sum once
            raise RuntimeError(f"{op}: dim {axis} appears multiple times in the list of dims")
    return () if ndim == 0 else tuple(sorted(axes))


def _each_fits_in_64_bits(dims, op: str) -> None:
    for at, d in enumerate(dims):
        if isinstance(d, int) and not checks.fits_c_long(d):
            raise TypeError(
                f"{op}(): argument 'dim' failed to unpack the int at pos {at + 1}: {d} is too "
                "large to convert to a C long"
            )


def _dim_and_keepdim(op: str, input, dim, keepdim, numpy_names: dict) -> tuple:
    """``(dim, keepdim)`` after the checks a reduction makes first: ``input`` must be a
    tensor and ``keepdim`` a bool (PyTorch's errors); numpy's ``axis=`` and ``keepdims=``
    are read as ``dim`` and ``keepdim``."""
    if not (isinstance(input, Tensor) and isinstance(keepdim, bool)):
        checks.reduction_args(op, input, keepdim)
    if numpy_names:  # axis=, keepdims=: numpy's names, which PyTorch accepts
        dim, keepdim = numpy_style(op, dim, keepdim, numpy_names)
    return dim, keepdim


def keepdim_shape(shape: tuple, dims: tuple | None) -> tuple:
    """``shape`` with the reduced axes kept as size 1."""
    if dims is None:
        return (1,) * len(shape)
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def unreduce(grad: Tensor, shape: tuple, dims: tuple | None) -> Tensor:
    """Broadcast a reduction's gradient back to the input's ``shape``."""
    if dims is not None or grad._data.ndim != 0:  # put the reduced axes back (size 1) first
        grad = reshape(grad, keepdim_shape(shape, dims))
    return expand(grad, shape)


def _along(dim: int, index) -> tuple:
    return (slice(None),) * dim + (index,)


def has_zeros(x: Tensor) -> bool:
    """Rules may look at values to pick a formula (PyTorch's prod and cumprod do too)."""
    return bool(np.any(x._data == 0))


def int_to_int64(input: Tensor, dtype, op: str = "prod"):
    """Sums and products of bools and ints accumulate in int64, as in PyTorch."""
    if dtype is not None:
        return checks.dtype_arg(op, dtype)
    if input.dtype.kind in "biu":
        return np.dtype("int64")
    return None


# Each reduction keeps its own kernel, rules and public function, even where two share a shape
# (amax's and amin's, all's and any's, var's and std's): a node's formula is its rule's docstring,
# and each public function keeps PyTorch's signature. What they do alike is written once:
# _dim_and_keepdim, _extreme_grad, _weighted_sum_jvp, _amax_or_amin, _argmax_or_argmin.


# ---------------------------------------------------------------------- sum
def _sum_or_mean_name(node) -> str:
    """PyTorch's names: over everything ``SumBackward0``, over dims ``SumBackward1``."""
    base = "SumBackward" if node.op.name == "sum" else "MeanBackward"
    return base + ("0" if node.attrs["dims"] is None else "1")


@register_op("sum", node_name=_sum_or_mean_name)
def _sum(x, dims, keepdim, dtype=None):
    if dtype is not None:  # as PyTorch: converted first, then summed as that dtype sums
        x = x.astype(dtype, copy=False)
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_sum.forward, x, dims, keepdim)
    return np.sum(x, axis=dims, keepdims=keepdim)


@register_gradient("sum")
def sum_grad(orig, grad):
    """Forward: y = Σ x   (over dim)
    Backward: x̄ = broadcast ȳ back over the summed axes"""
    (x,) = orig.args
    return [unreduce(grad, x.shape, orig.attrs["dims"])]


register_linear_jvp("sum", "y = Σ x   (over dim)", "ẏ = Σ ẋ   (linear)")


def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None, **numpy_names) -> Tensor:
    dim, keepdim = _dim_and_keepdim("sum", input, dim, keepdim, numpy_names)
    dims = reduced_dims(dim, input._data.ndim, "sum")
    attrs = {"dims": dims, "keepdim": keepdim}
    if dtype is not None:
        attrs["dtype"] = checks.dtype_arg("sum", dtype)
    elif input._data.dtype.kind in "bu" or input._data.dtype == np.int32:
        attrs["dtype"] = np.dtype("int64")
    return apply_op(_sum, (input,), attrs)


# --------------------------------------------------------------------- mean
@register_op("mean", node_name=_sum_or_mean_name)
def _mean(x, dims, keepdim):
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_mean.forward, x, dims, keepdim)
    return mean_of(x, dims, keepdim)


def mean_of(x, dims, keepdim):
    """``np.mean``, except that the mean of no elements is NaN without numpy's "Mean of
    empty slice" warning (PyTorch's is silent)."""
    if x.size:
        return np.mean(x, axis=dims, keepdims=keepdim)
    return np.sum(x, axis=dims, keepdims=keepdim) / _count(x.shape, dims)  # 0 / 0: NaN


@register_gradient("mean")
def mean_grad(orig, grad):
    """Forward: y = (1/N) Σ x   (over dim)
    Backward: x̄ = broadcast ȳ / N back over the averaged axes"""
    (x,) = orig.args
    dims = orig.attrs["dims"]
    count = _count(x.shape, dims)
    return [unreduce(grad / count, x.shape, dims)]


register_linear_jvp("mean", "y = (1/N) Σ x   (over dim)", "ẏ = (1/N) Σ ẋ   (linear)")


def _count(shape: tuple, dims: tuple | None) -> int:
    if dims is None:
        return math.prod(shape)
    return math.prod(shape[d] for d in dims)


def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None, **numpy_names) -> Tensor:
    dim, keepdim = _dim_and_keepdim("mean", input, dim, keepdim, numpy_names)
    if dtype is not None:
        input = input.to(checks.dtype_arg("mean", dtype))
    if not is_differentiable_dtype(input.dtype):
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating "
            f"point or complex dtype. Got: {input.dtype}"
        )
    dims = reduced_dims(dim, input.ndim, "mean")
    return apply_op(_mean, (input,), {"dims": dims, "keepdim": keepdim})


# ------------------------------------------------------ amax / amin / max / min
def _extreme_grad(orig, grad):
    x, y = orig.args[0], orig.out
    dims = orig.attrs["dims"]
    y_keep = reshape(y, keepdim_shape(x.shape, dims))
    hits = (x == y_keep).to(grad.dtype)
    share = hits / sum(hits, dim=dims, keepdim=True)
    return [unreduce(grad, x.shape, dims) * share]


def _weighted_sum_jvp(orig, dx: Tensor, rule, dims) -> Tensor:
    """ẏ = Σ conj(w) · ẋ over ``dims``, where w = ``rule`` at ȳ = 1: each element's slope
    ∂y/∂xᵢ (for complex x the gradient rule gives its conjugate; a real y keeps Re ẏ).

    A reduction's gradient rule spreads ȳ over the elements with these weights; its JVP
    gathers ẋ back with the same weights: the Jacobian read by rows instead of columns.
    """
    ones = Tensor._make(backend.xp(orig.out._data).ones_like(orig.out._data))
    (weights,) = rule(orig, ones)
    keepdim = orig.attrs["keepdim"]
    return apply_op(_sum, (conj(weights) * dx,), {"dims": dims, "keepdim": keepdim})


def _register_extreme(name: str, reduce, over: str, node_name: str | None = None):
    """Register ``name``, a max or a min (``reduce`` is np.max or np.min) over ``over``, with
    the one rule amax, amin, max and min share: ȳ shared evenly among the elements equal to
    y, as PyTorch. The rules' docstrings, the formulas the stepper shows, are made here."""
    extreme = reduce.__name__  # "max" or "min"

    def kernel(x, dims, keepdim):
        return reduce(x, axis=dims, keepdims=keepdim)

    def extreme_grad(orig, grad):
        return _extreme_grad(orig, grad)

    def extreme_jvp(orig, tangents):
        return _weighted_sum_jvp(orig, tangents[0], _extreme_grad, orig.attrs["dims"])

    op = register_op(name, saves=("x", "out"), node_name=node_name)(kernel)
    register_rules(
        name,
        extreme_grad,
        extreme_jvp,
        f"{extreme} x   (over {over})",
        f"x̄ = ȳ shared evenly among the elements equal to the {extreme}",
        f"ẏ = Σ ẋ · [x = y] / Σ [x = y]   (the mean of ẋ over the {extreme}ima)",
    )
    return op


_amax = _register_extreme("amax", np.max, "dim")
_amin = _register_extreme("amin", np.min, "dim")
# x.max() and x.min(): ops of their own for PyTorch's names (MaxBackward1: its name for a max
# over everything).
_max_all = _register_extreme("max", np.max, "every element", node_name="MaxBackward1")
_min_all = _register_extreme("min", np.min, "every element", node_name="MinBackward1")


def _amax_or_amin(op, name: str, input: Tensor, dim, keepdim: bool, numpy_names: dict):
    """The op ``_amax`` or ``_amin`` over ``dim`` (every dim when it is () or None)."""
    dim, keepdim = _dim_and_keepdim(name, input, dim, keepdim, numpy_names)
    refuse_complex(name, input)
    dims = None if dim == () or dim is None else reduced_dims(dim, input.ndim, name)
    checks.non_empty_reduction(name, input.shape, dims)
    return apply_op(op, (input,), {"dims": dims, "keepdim": keepdim})


def amax(input: Tensor, dim=(), keepdim: bool = False, **numpy_names) -> Tensor:
    return _amax_or_amin(_amax, "amax", input, dim, keepdim, numpy_names)


def amin(input: Tensor, dim=(), keepdim: bool = False, **numpy_names) -> Tensor:
    return _amax_or_amin(_amin, "amin", input, dim, keepdim, numpy_names)


MaxResult = namedtuple("MaxResult", ["values", "indices"])


@register_op(
    "max_dim",
    saves=("x",),
    node_name=lambda node: "MaxBackward0" if node.attrs["largest"] else "MinBackward0",
)
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


@register_jvp("max_dim")
def max_dim_jvp(orig, tangents):
    """Forward: values = max(x, dim)   (with indices)
    JVP: ẏ = ẋ at the first index of each max"""
    return _weighted_sum_jvp(orig, tangents[0], max_dim_grad, (orig.attrs["dim"],))


def _max_or_min(input: Tensor, dim, keepdim: bool, largest: bool, name: str):
    if dim is None:
        checks.non_empty_reduction(name, input.shape, None)
        return apply_op(
            _max_all if largest else _min_all, (input,), {"dims": None, "keepdim": False}
        )
    if isinstance(dim, Tensor):
        return (maximum if largest else minimum)(input, dim)
    d = dim_in_range(name, dim, input.ndim)  # a 0-d tensor takes dims 0 and -1
    d = d if input.ndim else None
    checks.non_empty_reduction(name, input.shape, None if d is None else (d,))
    if d is None:
        values = input
        indices = Tensor(backend.xp(input._data).zeros((), dtype=np.int64))  # input's device
        return MaxResult(values, indices)
    values = apply_op(_max_dim, (input,), {"dim": d, "keepdim": keepdim, "largest": largest})
    indices = (argmax if largest else argmin)(input, d, keepdim)
    return MaxResult(values, indices)


def max(input: Tensor, dim=None, keepdim: bool = False, **numpy_names):
    """``max(x)``: the largest value; ``max(x, dim)``: (values, indices); ``max(x, y)``: maximum."""
    dim, keepdim = _dim_and_keepdim("max", input, dim, keepdim, numpy_names)
    refuse_complex("max", input)
    return _max_or_min(input, dim, keepdim, True, "max")


def min(input: Tensor, dim=None, keepdim: bool = False, **numpy_names):
    """``min(x)``: the smallest value; ``min(x, dim)``: (values, indices)."""
    dim, keepdim = _dim_and_keepdim("min", input, dim, keepdim, numpy_names)
    refuse_complex("min", input)
    return _max_or_min(input, dim, keepdim, False, "min")


# ------------------------------------------------------------ argmax/argmin
@register_op("argmax", differentiable=False)
def _argmax(x, dim, keepdim):
    return np.argmax(x, axis=dim, keepdims=keepdim).astype(np.int64)


@register_op("argmin", differentiable=False)
def _argmin(x, dim, keepdim):
    return np.argmin(x, axis=dim, keepdims=keepdim).astype(np.int64)


def _argmax_or_argmin(op, name: str, input: Tensor, dim, keepdim: bool, numpy_names: dict):
    """The op ``_argmax`` or ``_argmin`` along one ``dim``, or over the flattened input."""
    dim, keepdim = _dim_and_keepdim(name, input, dim, keepdim, numpy_names)
    refuse_complex(name, input, error=RuntimeError)
    d = None if dim is None else dim_in_range(name, dim, input.ndim)
    checks.non_empty_reduction(name, input.shape, None if d is None else (d,), IndexError)
    return apply_op(op, (input,), {"dim": d, "keepdim": keepdim and d is not None})


def argmax(input: Tensor, dim=None, keepdim: bool = False, **numpy_names) -> Tensor:
    return _argmax_or_argmin(_argmax, "argmax", input, dim, keepdim, numpy_names)


def argmin(input: Tensor, dim=None, keepdim: bool = False, **numpy_names) -> Tensor:
    return _argmax_or_argmin(_argmin, "argmin", input, dim, keepdim, numpy_names)


# ----------------------------------------------------------------- all, any
@register_op("all", differentiable=False)
def _all(x, dims, keepdim):
    return backend.asarray(np.all(x, axis=dims, keepdims=keepdim), like=x)


@register_op("any", differentiable=False)
def _any(x, dims, keepdim):
    return backend.asarray(np.any(x, axis=dims, keepdims=keepdim), like=x)


def all(input: Tensor, dim=None, keepdim: bool = False, **numpy_names) -> Tensor:
    """Whether every element (along ``dim``) is nonzero: a bool tensor."""
    dim, keepdim = _dim_and_keepdim("all", input, dim, keepdim, numpy_names)
    dims = reduced_dims(dim, input.ndim, "all")
    return apply_op(_all, (input,), {"dims": dims, "keepdim": keepdim})


def any(input: Tensor, dim=None, keepdim: bool = False, **numpy_names) -> Tensor:
    """Whether some element (along ``dim``) is nonzero: a bool tensor."""
    dim, keepdim = _dim_and_keepdim("any", input, dim, keepdim, numpy_names)
    dims = reduced_dims(dim, input.ndim, "any")
    return apply_op(_any, (input,), {"dims": dims, "keepdim": keepdim})


# --------------------------------------------------------------------- prod
@register_op("prod", saves=("x", "out"))
def _prod(x, dims, keepdim, dtype=None):
    if dtype is not None:  # as sum
        x = x.astype(dtype, copy=False)
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        # PyTorch's CPU prod multiplies these in their own dtype, in as many running
        # products as the CPU's vectors have lanes: its answer depends on the machine.
        # Here every machine gives the float32 product, rounded once (see dtypes.py).
        return in_float32(_prod.forward, x, dims, keepdim)
    return backend.asarray(np.prod(x, axis=dims, keepdims=keepdim), like=x)


@register_gradient("prod")
def prod_grad(orig, grad):
    """Forward: y = Π x   (over dim)
    Backward: x̄ᵢ = ȳ · Π_{j≠i} xⱼ   (= ȳ · y / xᵢ when no x is 0)
    Complex x: x̄ᵢ = ȳ · conj(Π_{j≠i} xⱼ)   (= ȳ · conj(y / xᵢ) when no x is 0)"""
    (x,) = orig.args
    dims = orig.attrs["dims"]
    spread = unreduce(grad, x.shape, dims)
    if not has_zeros(x):
        y = reshape(orig.out, keepdim_shape(x.shape, dims))
        return [spread * conj(y) / conj(x)]
    x = conj(x)  # the product of the others' conjugates is the conjugate of their product
    if not dims:  # None, or () for a 0-d x: all of x
        return [spread * reshape(_product_of_others(reshape(x, (-1,)), 0), x.shape)]
    return [spread * _product_of_others(x, dims[0])]


@register_jvp("prod")
def prod_jvp(orig, tangents):
    """Forward: y = Π x   (over dim)
    JVP: ẏ = Σᵢ ẋᵢ · Π_{j≠i} xⱼ"""
    return _weighted_sum_jvp(orig, tangents[0], prod_grad, orig.attrs["dims"])


def _product_of_others(x: Tensor, dim: int) -> Tensor:
    """Π_{j≠i} xⱼ along ``dim`` without dividing (so zeros are fine).

    It is (product of everything before i) · (product of everything after i): two
    cumulative products, one run forwards and one backwards.
    """
    # indexing.py and scans.py import this module (for sum): import from them here
    from .indexing import cat, flip
    from .scans import cumprod

    n = x.shape[dim]
    shape = tuple(1 if i == dim else s for i, s in enumerate(x.shape))
    one = Tensor._make(backend.xp(x._data).ones(shape, x.dtype))  # on x's device, for cat
    before = cumprod(cat([one, getitem(x, _along(dim, slice(0, n - 1)))], dim), dim)
    after = cat([getitem(x, _along(dim, slice(1, n))), one], dim)
    after = flip(cumprod(flip(after, dim), dim), dim)
    return before * after


def prod(
    input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype=None, **numpy_names
) -> Tensor:
    """The product of all elements, or along ``dim``."""
    dim, keepdim = _dim_and_keepdim("prod", input, dim, keepdim, numpy_names)
    dims = None if dim is None else reduced_dims(dim, input.ndim, "prod")
    attrs = {"dims": dims, "keepdim": keepdim}
    wanted = int_to_int64(input, dtype)
    if wanted is not None:
        attrs["dtype"] = wanted
    return apply_op(_prod, (input,), attrs)


# ------------------------------------------------------------------ var, std
@register_op("var", saves=("x",))
def _var(x, dims, correction, keepdim):
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_var.forward, x, dims, correction, keepdim)
    centered = x - mean_of(x, dims, True)
    if x.dtype.kind == "c":  # |x − mean|²: a real variance
        centered = np.abs(centered)
    squares = np.sum(centered * centered, axis=dims, keepdims=keepdim)
    return backend.asarray(squares / builtins.max(_count(x.shape, dims) - correction, 0), like=x)


@register_gradient("var")
def var_grad(orig, grad):
    """Forward: y = Σ (x − mean x)² / (N − correction)   (correction 1: unbiased)
    Backward: x̄ = ȳ · 2 (x − mean x) / (N − correction)"""
    (x,) = orig.args
    return [_var_backward(grad, x, orig.attrs["dims"], orig.attrs["correction"])]


@register_jvp("var")
def var_jvp(orig, tangents):
    """Forward: y = Σ |x − mean x|² / (N − correction)
    JVP: ẏ = Σ 2 Re(conj(x − mean x) · ẋ) / (N − correction)"""
    return _weighted_sum_jvp(orig, tangents[0], var_grad, orig.attrs["dims"])


def _var_backward(grad: Tensor, x: Tensor, dims, correction) -> Tensor:
    centered = x - mean(x, dims, keepdim=True)
    denominator = float(builtins.max(_count(x.shape, dims) - correction, 0))
    return unreduce(grad, x.shape, dims) * centered * 2 / denominator


@register_op("std", saves=("x", "out"))
def _std(x, dims, correction, keepdim):
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_std.forward, x, dims, correction, keepdim)
    return np.sqrt(_var.forward(x, dims, correction, keepdim))


@register_gradient("std")
def std_grad(orig, grad):
    """Forward: y = √var(x)
    Backward: x̄ = var's x̄ for ȳ / 2y, and 0 where y = 0   (a constant input: PyTorch's 0)

    Written as √ after var, the chain rule would meet √'(0) = ∞ times var's 0: NaN.
    """
    (x,) = orig.args
    y = orig.out
    flat = y == 0
    half = where(flat, 0.0, grad / where(flat, 1.0, 2 * y))  # no ∞ even in double backward
    return [_var_backward(half, x, orig.attrs["dims"], orig.attrs["correction"])]


@register_jvp("std")
def std_jvp(orig, tangents):
    """Forward: y = √var(x)
    JVP: ẏ = var's ẏ / 2y   (0 where y = 0)"""
    return _weighted_sum_jvp(orig, tangents[0], std_grad, orig.attrs["dims"])


def _correction(unbiased, correction, name: str) -> float:
    if unbiased is not None and correction is not None:
        raise TypeError(
            f"{name}(): can't specify both unbiased and correction (unbiased={unbiased}, "
            f"correction={correction})"
        )
    if correction is not None:
        return correction
    return 0 if unbiased is False else 1


def _spread(op, doc: str) -> Callable[..., Tensor]:
    """``var`` or ``std``: one signature, PyTorch's, with the same ``correction`` rules."""

    def spread(
        input: Tensor,
        dim=None,
        unbiased=None,
        keepdim: bool = False,
        *,
        correction=None,
        **numpy_names,
    ) -> Tensor:
        if numpy_names:  # axis=, keepdims=: numpy's names, which PyTorch accepts
            dim, keepdim = numpy_style(op.name, dim, keepdim, numpy_names)
        attrs = _var_attrs(input, dim, unbiased, keepdim, correction, op.name)
        return apply_op(op, (input,), attrs)

    spread.__name__ = spread.__qualname__ = op.name
    spread.__doc__ = doc
    return spread


var = _spread(
    _var, "Variance; by default unbiased (divide by N − 1), as PyTorch. ``correction=0``: by N."
)
std = _spread(_std, "Standard deviation: √var, with the same ``correction`` rules.")


def _var_attrs(input: Tensor, dim, unbiased, keepdim: bool, correction, name: str) -> dict:
    """var's and std's attributes (``name`` names the op in errors and warnings)."""
    checks.tensor_arg(name, "input", input)
    checks.flag(name, "keepdim", keepdim)
    if isinstance(dim, bool):  # the legacy form var(x, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None:
        checks.flag(name, "unbiased", unbiased)
    if correction is not None:
        checks.number_arg(name, "correction", correction, complex_ok=True)
        correction = checks.value_fits(name, "correction", correction, np.float64)  # 1+0j: 1.0
        if isinstance(correction, int) and not checks.INT_LOW <= correction <= checks.INT_HIGH:
            raise checks.int_overflow(name, "correction", correction)  # (a trace holds 64 bits)
    if not is_differentiable_dtype(input.dtype):
        raise RuntimeError(f"{name}(): expected a floating point input, got {input.dtype}")
    dims = None if dim is None else reduced_dims(dim, input.ndim, name)
    correction = _correction(unbiased, correction, name)
    if _count(input.shape, dims) - correction <= 0:
        warnings.warn(
            f"{name}(): degrees of freedom is <= 0 ({_count(input.shape, dims)} values, "
            f"correction={correction}): the result is inf or NaN. Correction should be "
            "strictly less than the reduction factor (input numel divided by output numel).",
            UserWarning,
            stacklevel=3,
        )
    return {"dims": dims, "correction": correction, "keepdim": keepdim}


# ---------------------------------------------------------------- logsumexp
def sum_in_float32(x, dims):
    """``x`` summed over ``dims`` (kept), float16/bfloat16 in float32 and rounded once."""
    if x.dtype.char not in SMALL_FLOAT_CHARS:
        return np.sum(x, axis=dims, keepdims=True)
    return np.sum(x, axis=dims, keepdims=True, dtype=np.float32).astype(x.dtype)


@register_op("logsumexp", saves=("x", "out"))
def _logsumexp(x, dims, keepdim):
    # float16/bfloat16 as PyTorch's logsumexp, which is made of ops: each step rounds to
    # the dtype (numpy's and ml_dtypes' loops do), only the sum accumulates in float32.
    # An empty x has no max to shift by, nor needs one: a sum of nothing is 0, its log −∞
    # (complex x: the real parts' max, as PyTorch, so that the shift leaves the phase alone)
    parts = x.real if x.dtype.kind == "c" else x
    peak = np.max(parts, axis=dims, keepdims=True) if x.size else backend.xp(x).zeros((), x.dtype)
    peak = np.where(np.isfinite(peak), peak, 0).astype(x.dtype)  # all −∞ (or ∞): no shift
    out = np.log(sum_in_float32(np.exp(x - peak), dims)) + peak
    if keepdim:
        return out
    return out.reshape(()) if dims is None else np.squeeze(out, axis=dims)


@register_gradient("logsumexp")
def logsumexp_grad(orig, grad):
    """Forward: y = log Σ exp(x)   (over dim, shifted by the max for stability)
    Backward: x̄ = ȳ · exp(x − y)   (= ȳ · softmax(x))
    Complex x: x̄ = ȳ · conj(exp(x − y))"""
    (x,) = orig.args
    dims = orig.attrs["dims"]
    y = reshape(orig.out, keepdim_shape(x.shape, dims))
    return [unreduce(grad, x.shape, dims) * conj(exp(x - y))]


@register_jvp("logsumexp")
def logsumexp_jvp(orig, tangents):
    """Forward: y = log Σ exp(x)   (over dim)
    JVP: ẏ = Σ ẋ · exp(x − y)   (the softmax-weighted mean of ẋ)"""
    return _weighted_sum_jvp(orig, tangents[0], logsumexp_grad, orig.attrs["dims"])


def logsumexp(input: Tensor, dim=None, keepdim: bool = False, **numpy_names) -> Tensor:
    """``log(sum(exp(x)))`` without overflow."""
    if numpy_names:  # axis=, keepdims=: numpy's names, which PyTorch accepts
        dim, keepdim = numpy_style("logsumexp", dim, keepdim, numpy_names)
    input = float_input(input, "logsumexp")
    dims = None if dim is None else reduced_dims(dim, input.ndim, "logsumexp")
    return apply_op(_logsumexp, (input,), {"dims": dims, "keepdim": keepdim})


# --------------------------------------------------------------------- norm
@register_op("norm", saves=("x", "out"), node_name="LinalgVectorNormBackward0")
def _norm(x, p, dims, keepdim):
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_norm.forward, x, p, dims, keepdim)
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
    Backward: x̄ = ȳ · sgn(x) · |x|^(p−1) / y^(p−1)   (p = 2: ȳ · x / y; 0 where y = 0;
              p < 1: 0 where x = 0, as PyTorch's norm_backward)
    (sgn(x) = x / |x|: sign(x) for real x)"""
    (x,) = orig.args
    p, dims = orig.attrs["p"], orig.attrs["dims"]
    spread = unreduce(grad, x.shape, dims)
    y = reshape(orig.out, keepdim_shape(x.shape, dims))
    if p == 0:  # a count of the nonzero elements: flat, and PyTorch sends no gradient
        return [None]
    if p == 1:
        return [spread * sgn(x)]
    if p in (math.inf, -math.inf):
        hits = astype(abs(x) == y, y.dtype)
        return [spread * sgn(x) * hits / sum(hits, dims, keepdim=True)]
    if p < 1:  # |x|^(p−1) is infinite at x = 0, where PyTorch's slope is 0
        zero = x == 0
        slope = where(zero, 0.0, where(zero, 1.0, abs(x)) ** (p - 1))
        return [spread * sgn(x) * slope * y ** (1 - p)]
    safe_y = where(y == 0, 1.0, y)  # where y = 0 every x is 0 too, so x̄ = 0
    if p == 2:
        return [spread * x / safe_y]
    return [spread * sgn(x) * abs(x) ** (p - 1) / safe_y ** (p - 1)]


@register_jvp("norm")
def norm_jvp(orig, tangents):
    """Forward: y = (Σ |x|ᵖ)^(1/p)
    JVP: ẏ = Σ Re(conj(sgn x) · ẋ) · |x|^(p−1) / y^(p−1)   (p = 2: Σ Re(conj(x) · ẋ) / y)"""
    if orig.attrs["p"] == 0:  # a count: flat
        return zeros_like_grad(orig.out)
    return _weighted_sum_jvp(orig, tangents[0], norm_grad, orig.attrs["dims"])


def norm(
    input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None, **numpy_names
) -> Tensor:
    """The p-norm of all elements, or along ``dim`` (``'fro'`` means p = 2)."""
    dim, keepdim = _dim_and_keepdim("norm", input, dim, keepdim, numpy_names)
    if dtype is not None:
        input = astype(input, dtype)
    if p == "nuc":
        raise ValueError("norm: the nuclear norm (p='nuc') is not supported")
    if isinstance(p, str) and p != "fro":
        raise RuntimeError(f"norm: Order {p!r} not supported: use a number, inf or 'fro'")
    p = 2.0 if p in ("fro", None) else float(p)
    if isinstance(dim, int):
        dim = (dim,)  # as torch.norm, which passes one dim on as a list of one
    dims = None if dim is None else reduced_dims(dim, input.ndim, "norm")
    return apply_op(
        _norm, (float_input(input, "norm"),), {"p": p, "dims": dims, "keepdim": keepdim}
    )


# ---------------------------------------------------------------- histogram
HistogramResult = namedtuple("histogram", ["hist", "bin_edges"])


def histogram(input: Tensor, bins=100, *, range=None, weight=None, density: bool = False):  # noqa: A002
    """Counts of ``input``'s values in ``bins`` equal bins (or at the given edges):
    ``(hist, bin_edges)``, as ``torch.histogram``. Not an op: it has no gradient."""
    checks.tensor_arg("histogram", "input", input)
    if not input.is_floating_point():
        raise RuntimeError(
            f"histogram: expected a floating point input (the bins are floats), got {input.dtype}"
        )
    values = backend.to_numpy(input.detach()._data).ravel()
    edges = bins if isinstance(bins, builtins.int) else backend.to_numpy(bins._data)
    weights = None if weight is None else backend.to_numpy(weight._data).ravel()
    hist, bin_edges = np.histogram(values, edges, range=range, weights=weights, density=density)
    return HistogramResult(
        Tensor._make(hist.astype(input.dtype)), Tensor._make(bin_edges.astype(input.dtype))
    )
