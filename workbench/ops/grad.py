"""Backward operators, as TVM's ``tvm.relax.op.grad``.

Some gradients are whole computations of their own: routing ȳ to each pooling
window's maximum, scatter-adding it for a ``take``, spreading a loss over its
targets. TVM gives each its own op so that the gradient rule of the forward op
stays one line, and so do we::

    @register_gradient("max_pool2d")
    def max_pool2d_grad(orig, grad):
        return [max_pool2d_backward(grad, x, **orig.attrs)]

These backward ops are ordinary registered ops with gradient rules of their own,
so the gradient of a gradient (``create_graph=True``) works through them too. Most
are linear in ``output_grad``, which makes their rules short: the gradient of
"multiply by Aᵀ" is "multiply by A", the forward op again.

Where a TVM rule returns ``no_grad(arg)`` for an argument with no gradient (targets,
indices, weights), our rules return ``None``. The ``no_grad`` op itself is here for
graphs: a node that passes its input's value on and stops its gradient.
"""

from __future__ import annotations

import numpy as np

from .. import backend
from ..autograd.dispatch import apply_op
from ..checks import dim_in_range
from ..dtypes import SMALL_FLOAT_CHARS, in_float32
from ..tensor import Tensor
from . import im2col
from . import indexing as indexing_ops
from . import nn as nn_ops
from .registry import register_gradient, register_op


# ------------------------------------------------------------------ no_grad
@register_op("no_grad", view=True)
def _no_grad(x):
    return x


@register_gradient("no_grad")
def no_grad_grad(orig, grad):
    """Forward: y = x   (TVM's no_grad marker)
    Backward: x̄ = none   (the gradient stops here)"""
    return [None]


def no_grad(input: Tensor) -> Tensor:
    """The value of ``input``, on a graph node that lets no gradient through."""
    return apply_op(_no_grad, (input,))


# -------------------------------------------------------- nll_loss_backward
@register_op(
    "nll_loss_backward",
    inputs=("output_grad", "predictions", "targets", "weights"),
    saves=("targets", "weights"),
)
def _nll_loss_backward(output_grad, predictions, targets, weights, reduction, ignore_index):
    # Only the shape of the predictions matters: the loss is linear in them.
    shape = tuple(predictions.shape)
    batched = shape if len(shape) > 1 else (1,) + shape
    target = np.reshape(targets, (batched[0],) + batched[2:])
    target, weight = nn_ops.targets_and_weights(target, weights, ignore_index, output_grad.dtype)
    if reduction == "mean":
        scale = output_grad / (target.size if weight is None else weight.sum())
    elif reduction == "sum":
        scale = output_grad
    else:
        scale = np.reshape(output_grad, target.shape)
    out = backend.xp(output_grad).zeros(batched, dtype=output_grad.dtype)  # on its device
    nn_ops.put_at_targets(out, target, -scale if weight is None else -weight * scale)
    return out.reshape(shape)


@register_gradient("nll_loss_backward")
def nll_loss_backward_grad(orig, grad):
    """Forward: p̄ = nll_loss_backward(ḡ, p, t, w)   (−w[t]·ḡ at each target, linear in ḡ)
    Backward: ḡ̄ = nll_loss(ȳ, t, w)   (the adjoint of Aᵀ is A: the loss again)"""
    _, _, targets, weights = orig.args
    attrs = orig.attrs
    again = nn_ops.nll_loss_op(grad, targets, weights, attrs["reduction"], attrs["ignore_index"])
    return [again, None, None, None]


def nll_loss_backward(
    output_grad: Tensor,
    predictions: Tensor,
    targets: Tensor,
    weights: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int = -100,
) -> Tensor:
    """The gradient of ``nll_loss`` w.r.t. ``predictions``: ``−w[t]·ḡ`` at each target class.

    With ``reduction='mean'`` ḡ is divided by the sum of the weights of the targets that
    are not ``ignore_index``; ignored rows get zero.
    """
    nn_ops.check_nll_args(
        predictions, targets, weights, reduction, ignore_index, "nll_loss_backward"
    )
    attrs = {"reduction": reduction, "ignore_index": int(ignore_index)}
    return nll_loss_backward_op(output_grad, predictions, targets, weights, attrs)


def nll_loss_backward_op(output_grad, predictions, targets, weights, attrs: dict) -> Tensor:
    """``nll_loss_backward`` without the argument checks: for nll_loss's rule, whose
    arguments were checked when the loss was computed."""
    return apply_op(_nll_loss_backward, (output_grad, predictions, targets, weights), attrs)


# ------------------------------------------------------------------- pooling
def _check_layout(layout: str, out_layout) -> None:
    if layout != "NCHW" or out_layout not in (None, "NCHW"):
        raise ValueError(
            f"pooling: only the NCHW layout is supported (got layout={layout!r}, "
            f"out_layout={out_layout!r})"
        )


def pool_attrs(pool_size, strides, padding, dilation, ceil_mode, count_include_pad) -> dict:
    """TVM's pooling attributes in one normal form: pairs, and padding as four numbers."""
    return {
        "pool_size": im2col.pair(pool_size, "pool_size"),
        "strides": im2col.pair(strides, "strides"),
        "padding": im2col.four(padding),
        "dilation": im2col.pair(dilation, "dilation"),
        "ceil_mode": bool(ceil_mode),
        "count_include_pad": bool(count_include_pad),
    }


def geometry_of(shape: tuple, attrs: dict) -> im2col.Geometry:
    return im2col.pool_geometry(
        shape[-2:],
        attrs["pool_size"],
        attrs["strides"],
        attrs["padding"],
        attrs["dilation"],
        attrs["ceil_mode"],
    )


def _pool_kernel_attrs(attrs: dict) -> dict:
    return {k: v for k, v in attrs.items() if k != "count_include_pad"}


@register_op("max_pool2d_backward", inputs=("output_grad", "data"), saves=("data",))
def _max_pool2d_backward(output_grad, data, **attrs):
    geometry = geometry_of(data.shape, attrs)
    arg = im2col.window_argmax(data, geometry)
    return im2col.scatter_to_argmax(output_grad, arg, data.shape, geometry)


@register_gradient("max_pool2d_backward")
def max_pool2d_backward_grad(orig, grad):
    """Forward: x̄ = max_pool2d_backward(ḡ, x)   (ḡ routed to each window's first max)
    Backward: ḡ̄ = max_pool2d_gather(ȳ, x)   (read ȳ at those maxima); x: 0"""
    _, data = orig.args
    return [max_pool2d_gather(grad, data, orig.attrs), None]


@register_op("max_pool2d_gather", inputs=("values", "data"), saves=("data",))
def _max_pool2d_gather(values, data, **attrs):
    geometry = geometry_of(data.shape, attrs)
    arg = im2col.window_argmax(data, geometry)
    return im2col.gather_at_argmax(values, arg, geometry)


@register_gradient("max_pool2d_gather")
def max_pool2d_gather_grad(orig, grad):
    """Forward: y = v at the first max of each pooling window of x   (max_pool2d(x) = y(x, x))
    Backward: v̄ = max_pool2d_backward(ȳ, x); x: 0   (the choice of window max is flat)"""
    _, data = orig.args
    return [apply_op(_max_pool2d_backward, (grad, data), orig.attrs), None]


def max_pool2d_gather(values: Tensor, data: Tensor, attrs: dict) -> Tensor:
    """``values`` (shaped like ``data``) read at the first maximum of each window of ``data``."""
    return apply_op(_max_pool2d_gather, (values, data), _pool_kernel_attrs(attrs))


def max_pool2d_backward(
    output_grad: Tensor,
    data: Tensor,
    pool_size=(1, 1),
    strides=(1, 1),
    padding=(0, 0, 0, 0),
    dilation=(1, 1),
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    layout: str = "NCHW",
    out_layout=None,
) -> Tensor:
    """The gradient of ``max_pool2d`` w.r.t. ``data``: each window sends its ḡ to its first max."""
    _check_layout(layout, out_layout)
    attrs = pool_attrs(pool_size, strides, padding, dilation, ceil_mode, count_include_pad)
    return apply_op(_max_pool2d_backward, (output_grad, data), _pool_kernel_attrs(attrs))


@register_op("avg_pool2d_backward", inputs=("output_grad", "data"))
def _avg_pool2d_backward(output_grad, data, divisor_override=None, **attrs):
    if output_grad.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(
            _avg_pool2d_backward.forward, output_grad, data, divisor_override, **attrs
        )
    geometry = geometry_of(data.shape, attrs)
    divisor = divisor_override or im2col.avg_divisor(
        geometry, attrs["count_include_pad"], output_grad
    )
    share = (output_grad / divisor).astype(output_grad.dtype, copy=False)
    kh, kw = geometry.kernel
    n, c, oh, ow = share.shape
    patches = np.broadcast_to(share[:, :, None, None], (n, c, kh, kw, oh, ow))
    return im2col.crop_image(im2col.fold(patches, geometry), geometry)


@register_gradient("avg_pool2d_backward")
def avg_pool2d_backward_grad(orig, grad):
    """Forward: x̄ = avg_pool2d_backward(ḡ, x)   (ḡ / divisor spread over each window)
    Backward: ḡ̄ = avg_pool2d(ȳ)   (a linear map's adjoint's adjoint is itself); x: 0"""
    return [nn_ops.avg_pool2d_op(grad, orig.attrs), None]


def avg_pool2d_backward(
    output_grad: Tensor,
    data: Tensor,
    pool_size=(1, 1),
    strides=(1, 1),
    padding=(0, 0, 0, 0),
    dilation=(1, 1),
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    layout: str = "NCHW",
    out_layout=None,
    divisor_override: int | None = None,
) -> Tensor:
    """The gradient of ``avg_pool2d`` w.r.t. ``data``: ḡ / divisor added over each window."""
    _check_layout(layout, out_layout)
    attrs = pool_attrs(pool_size, strides, padding, dilation, ceil_mode, count_include_pad)
    if divisor_override:
        attrs["divisor_override"] = int(divisor_override)
    return apply_op(_avg_pool2d_backward, (output_grad, data), attrs)


# --------------------------------------------------------------- take_backward
@register_op("take_backward", inputs=("output_grad", "x", "indices"), saves=("indices",))
def _take_backward(output_grad, x, indices, axis=None):
    # x is only a shape here (the op does not save it): the zeros go on ȳ's device.
    out = backend.xp(output_grad).zeros(x.shape, dtype=output_grad.dtype)
    if axis is None:
        np.add.at(out.reshape(-1), indices.reshape(-1), output_grad.reshape(-1))
        return out
    np.add.at(out, (slice(None),) * axis + (indices,), output_grad)
    return out


@register_gradient("take_backward")
def take_backward_grad(orig, grad):
    """Forward: x̄ = take_backward(ḡ, x, i, axis)   (zeros, then x̄[i] += ḡ)
    Backward: ḡ̄ = take(ȳ, i, axis); x and i: none"""
    _, _, indices = orig.args
    return [indexing_ops.take(grad, indices, orig.attrs.get("axis")), None, None]


def take_backward(output_grad: Tensor, x, indices: Tensor, axis: int | None = None) -> Tensor:
    """The gradient of ``take`` w.r.t. ``x``: zero-fill, then scatter-*add* ``output_grad``.

    An index that appears twice adds both gradients (``[0, 0, 2]`` → ``[2, 0, 1]``).
    A negative ``axis`` counts from the end, as in ``take``.
    """
    attrs = None if axis is None else {"axis": dim_in_range("take_backward", axis, x.ndim)}
    return apply_op(_take_backward, (output_grad, x, indices), attrs)


# TVM's checkpoint-stage markers live in markers.py; tvm.relax.op.grad has them beside the
# backward operators, so wb.ops.grad does too.
from .markers import end_checkpoint, start_checkpoint  # noqa: E402, F401
