"""Neural-network ops: conv2d, the 2-D pools, nll_loss, binary_cross_entropy, layer_norm, dropout.

The public functions take PyTorch's arguments; ``workbench.nn.functional`` exports
them under PyTorch's names. Their kernels work on whole batches at once:
convolution is ``im2col`` plus one matmul, pooling reduces over a strided view of
every window (see :mod:`workbench.ops.im2col`).

Convolution is bilinear, which closes its gradients under differentiation. With
``y = conv2d(x, w)`` all three of ``conv2d``, ``conv2d_input_grad`` (x̄, a
transposed convolution) and ``conv2d_weight_grad`` (w̄) are partial derivatives of
one number, ``⟨ȳ, conv2d(x, w)⟩``, so each one's gradient is made of the other two,
and gradients of any order stay inside these three ops.
"""

from __future__ import annotations

import numpy as np

from ..core import backend, checks, random
from ..core.dtypes import SMALL_FLOAT_CHARS, in_float32, is_floating
from ..core.tensor import Tensor
from ..record.dispatch import apply_op
from ..record.forward_ad import same_op
from . import im2col
from .broadcasting import collapse_sum_like, sum_to
from .complex_numbers import conj, refuse_complex, refuse_mixed_complex
from .reductions import mean
from .registry import OpDef, register_gradient, register_jvp, register_linear_jvp, register_op
from .shape import reshape, squeeze, unsqueeze
from .unary import rsqrt


# ------------------------------------------------------------------ conv2d
def _conv_geometry(x_shape: tuple, w_shape: tuple, attrs: dict) -> im2col.Geometry:
    return im2col.conv_geometry(
        x_shape[-2:], w_shape[-2:], attrs["stride"], attrs["padding"], attrs["dilation"]
    )


def _conv_attrs(attrs: dict) -> dict:
    """The convolution attributes, without the shape that a backward op also carries."""
    return {k: attrs[k] for k in ("stride", "padding", "dilation", "groups")}


# The bias is added inside, as PyTorch's one ConvolutionBackward0 node does it.
@register_op(
    "conv2d",
    inputs=("x", "weight", "bias"),
    saves={"x": "weight", "weight": "x"},
    node_name="ConvolutionBackward0",
)
def _conv2d(x, weight, bias, stride, padding, dilation, groups):
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_conv2d.forward, x, weight, bias, stride, padding, dilation, groups)
    geometry = im2col.conv_geometry(x.shape[-2:], weight.shape[-2:], stride, padding, dilation)
    cols = im2col.im2col(x, geometry, groups)  # (N, G, Cg·kh·kw, OH·OW)
    out = np.matmul(im2col.grouped_weight(weight, groups), cols)  # (N, G, O/G, OH·OW)
    out = out.reshape((x.shape[0], weight.shape[0]) + geometry.out_size)
    if bias is not None:
        out += bias.reshape(1, -1, 1, 1)  # out is fresh: adding in place saves a temporary
    return out


@register_gradient("conv2d")
def conv2d_grad(orig, grad):
    """Forward: y = x ⋆ w + b   (y[n,o,i,j] = Σ_c,a,b w[o,c,a,b] · x[n,c,i·s+a·d,j·s+b·d] + b[o])
    Backward: x̄ = conv2d_input_grad(ȳ, w), w̄ = conv2d_weight_grad(x, ȳ), b̄[o] = Σ_n,i,j ȳ[n,o,i,j]
    Complex: x̄ = conv2d_input_grad(ȳ, conj(w)), w̄ = conv2d_weight_grad(conj(x), ȳ)

    conv2d_input_grad is a transposed convolution (TVM writes it conv2d_transpose). The
    three conv ops are linear in each input, so every complex rule is its real rule with
    the other input conjugated, as for mul."""
    x, weight, _ = orig.args
    need_x, need_w, need_b = orig.needs_input_grad
    return [
        conv2d_input_grad(grad, conj(weight), x.shape, orig.attrs) if need_x else None,
        conv2d_weight_grad(conj(x), grad, weight.shape, orig.attrs) if need_w else None,
        reshape(sum_to(grad, (1, grad.shape[1], 1, 1)), (-1,)) if need_b else None,
    ]


@register_jvp("conv2d")
def conv2d_jvp(orig, tangents):
    """Forward: y = x ⋆ w + b
    JVP: ẏ = ẋ ⋆ w + x ⋆ ẇ + ḃ   (bilinear: the product rule)"""
    (x, weight, _), (dx, dw, db) = orig.args, tangents
    return apply_op(_conv2d, (dx, weight, None), orig.attrs) + apply_op(
        _conv2d, (x, dw, db), orig.attrs
    )


@register_op(
    "conv2d_input_grad", inputs=("grad", "weight"), saves={"grad": "weight", "weight": "grad"}
)
def _conv2d_input_grad(grad, weight, input_shape, stride, padding, dilation, groups):
    if grad.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(
            _conv2d_input_grad.forward, grad, weight, input_shape, stride, padding, dilation, groups
        )
    geometry = im2col.conv_geometry(input_shape[-2:], weight.shape[-2:], stride, padding, dilation)
    w = im2col.grouped_weight(weight, groups)  # (G, O/G, Cg·kh·kw)
    cols = np.matmul(w.transpose(0, 2, 1), im2col.grouped_output(grad, groups))
    return im2col.col2im(cols, input_shape, geometry)


@register_gradient("conv2d_input_grad")
def conv2d_input_grad_grad(orig, grad):
    """Forward: x̄ = conv2d_input_grad(ḡ, w)   (the adjoint of x ↦ x ⋆ w, applied to ḡ)
    Backward: ḡ̄ = conv2d(ȳ, w), w̄ = conv2d_weight_grad(ȳ, ḡ)   (complex: conj(w), conj(ḡ))"""
    g, weight = orig.args
    need_g, need_w = orig.needs_input_grad
    attrs = _conv_attrs(orig.attrs)
    return [
        conv2d_op(grad, conj(weight), attrs) if need_g else None,
        conv2d_weight_grad(grad, conj(g), weight.shape, attrs) if need_w else None,
    ]


@register_jvp("conv2d_input_grad")
def conv2d_input_grad_jvp(orig, tangents):
    """Forward: x̄ = conv2d_input_grad(ḡ, w)
    JVP: ẋ̄ = conv2d_input_grad(ḡ̇, w) + conv2d_input_grad(ḡ, ẇ)   (bilinear)"""
    return same_op(orig, tangents, (0,)) + same_op(orig, tangents, (1,))


@register_op("conv2d_weight_grad", inputs=("x", "grad"), saves={"x": "grad", "grad": "x"})
def _conv2d_weight_grad(x, grad, weight_shape, stride, padding, dilation, groups):
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(
            _conv2d_weight_grad.forward, x, grad, weight_shape, stride, padding, dilation, groups
        )
    geometry = im2col.conv_geometry(x.shape[-2:], weight_shape[-2:], stride, padding, dilation)
    cols = im2col.im2col(x, geometry, groups)  # (N, G, Cg·kh·kw, OH·OW)
    per_image = np.matmul(im2col.grouped_output(grad, groups), cols.transpose(0, 1, 3, 2))
    return per_image.sum(axis=0).reshape(weight_shape)


@register_gradient("conv2d_weight_grad")
def conv2d_weight_grad_grad(orig, grad):
    """Forward: w̄ = conv2d_weight_grad(x, ḡ)   (the adjoint of w ↦ x ⋆ w, applied to ḡ)
    Backward: x̄ = conv2d_input_grad(ḡ, ȳ), ḡ̄ = conv2d(x, ȳ)   (complex: conj(ḡ), conj(x))"""
    x, g = orig.args
    need_x, need_g = orig.needs_input_grad
    attrs = _conv_attrs(orig.attrs)
    return [
        conv2d_input_grad(conj(g), grad, x.shape, attrs) if need_x else None,
        conv2d_op(conj(x), grad, attrs) if need_g else None,
    ]


@register_jvp("conv2d_weight_grad")
def conv2d_weight_grad_jvp(orig, tangents):
    """Forward: w̄ = conv2d_weight_grad(x, ḡ)
    JVP: ẇ̄ = conv2d_weight_grad(ẋ, ḡ) + conv2d_weight_grad(x, ḡ̇)   (bilinear)"""
    return same_op(orig, tangents, (0,)) + same_op(orig, tangents, (1,))


def conv2d_op(x: Tensor, weight: Tensor, attrs: dict) -> Tensor:
    return apply_op(_conv2d, (x, weight, None), _conv_attrs(attrs))


def conv2d_input_grad(grad: Tensor, weight, input_shape: tuple, attrs: dict) -> Tensor:
    """x̄ of a convolution: ȳ spread back over every window that read each input value."""
    attrs = dict(_conv_attrs(attrs), input_shape=tuple(input_shape))
    return apply_op(_conv2d_input_grad, (grad, weight), attrs)


def conv2d_weight_grad(x, grad: Tensor, weight_shape: tuple, attrs: dict) -> Tensor:
    """w̄ of a convolution: Σ over batch and positions of ȳ times the window it saw."""
    attrs = dict(_conv_attrs(attrs), weight_shape=tuple(weight_shape))
    return apply_op(_conv2d_weight_grad, (x, grad), attrs)


def _conv_padding(padding, kernel: tuple, stride: tuple, dilation: tuple) -> tuple:
    """PyTorch's padding argument (int, pair, 'valid' or 'same') as (top, left, bottom, right)."""
    if isinstance(padding, str):
        checks.one_of("conv2d", "padding", padding, ("valid", "same"), error=RuntimeError)
    if padding == "valid":
        return (0, 0, 0, 0)
    if padding == "same":
        if stride != (1, 1):
            raise RuntimeError(
                f"conv2d: padding='same' is not supported for strided convolutions "
                f"(stride={stride})"
            )
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return (total[0] // 2, total[1] // 2, total[0] - total[0] // 2, total[1] - total[1] // 2)
    return 2 * checks.non_negative(
        "conv2d", "padding", checks.int_pair("conv2d", "padding", padding)
    )


def _check_conv(x: Tensor, weight: Tensor, bias, attrs: dict) -> None:
    refuse_mixed_complex("conv2d", x, weight, bias)
    checks.not_bool("conv2d", "input", x)
    checks.not_bool("conv2d", "weight", weight)
    shapes = f"(input {tuple(x.shape)}, weight {tuple(weight.shape)})"
    if x.ndim != 4 or weight.ndim != 4:
        raise RuntimeError(
            f"conv2d: expected a 4-D input (N, C, H, W) and a 4-D weight (O, C/groups, kH, kW) "
            f"{shapes}"
        )
    groups = attrs["groups"]
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"conv2d: groups={groups} must divide the {weight.shape[0]} output channels {shapes}"
        )
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(
            f"conv2d: Given groups={groups}, weight of size {list(weight.shape)}, expected "
            f"input{list(x.shape)} to have {weight.shape[1] * groups} channels, but got "
            f"{x.shape[1]} channels instead"
        )
    geometry = _conv_geometry(x.shape, weight.shape, attrs)
    padded = geometry.padded_size
    span = tuple(d * (k - 1) + 1 for k, d in zip(weight.shape[-2:], attrs["dilation"]))
    if padded[0] < span[0] or padded[1] < span[1]:
        raise RuntimeError(
            f"conv2d: Calculated padded input size per channel: ({padded[0]} x {padded[1]}). "
            f"Kernel size: ({span[0]} x {span[1]}). Kernel size can't be greater than actual "
            f"input size {shapes}"
        )
    if x.dtype != weight.dtype:
        raise RuntimeError(
            f"conv2d: Input type ({x.dtype}) and weight type ({weight.dtype}) should be the same"
        )
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(
            f"conv2d: expected bias of shape ({weight.shape[0]},), got {tuple(bias.shape)} {shapes}"
        )


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> Tensor:
    """2-D cross-correlation of an (N, C, H, W) batch with (O, C/groups, kH, kW) filters.

    A 3-D input (C, H, W) is treated as a batch of one, as in PyTorch.
    """
    checks.tensor_args("conv2d", ("bias",), input=input, weight=weight, bias=bias)
    if input.ndim == 3:
        return squeeze(
            conv2d(unsqueeze(input, 0), weight, bias, stride, padding, dilation, groups), 0
        )
    stride = checks.positive("conv2d", "stride", checks.int_pair("conv2d", "stride", stride))
    dilation = checks.positive(
        "conv2d", "dilation", checks.int_pair("conv2d", "dilation", dilation)
    )
    if weight.ndim != 4:  # before its kernel size is read
        raise RuntimeError(
            f"conv2d: expected a 4-D weight (O, C/groups, kH, kW), got shape "
            f"{tuple(weight.shape)} (input {tuple(input.shape)})"
        )
    kernel = tuple(weight.shape[-2:])
    attrs = {
        "stride": stride,
        "padding": _conv_padding(padding, kernel, stride, dilation),
        "dilation": dilation,
        "groups": checks.positive("conv2d", "groups", int(groups)),
    }
    _check_conv(input, weight, bias, attrs)
    return apply_op(_conv2d, (input, weight, bias), attrs)


# ------------------------------------------------------------------- pooling
@register_op("max_pool2d", saves=("x",), node_name="MaxPool2DWithIndicesBackward0")
def _max_pool2d(x, **attrs):
    geometry = geometry_of(x.shape, attrs)
    padded = im2col.pad_image(x, geometry.applied_pads, value=-np.inf)
    return im2col.window_max(padded, geometry)


@register_gradient("max_pool2d")
def max_pool2d_grad(orig, grad):
    """Forward: y[n,c,i,j] = max of window (i, j) of x   (padding counts as −∞)
    Backward: x̄ = max_pool2d_backward(ȳ, x)   (ȳ to the first max of each window)"""
    (x,) = orig.args
    return [max_pool2d_backward(grad, x, **orig.attrs)]


@register_jvp("max_pool2d")
def max_pool2d_jvp(orig, tangents):
    """Forward: y[n,c,i,j] = max of window (i, j) of x
    JVP: ẏ = ẋ read at the first max of each window"""
    (x,) = orig.args
    return max_pool2d_gather(tangents[0], x, orig.attrs)


@register_op("avg_pool2d", node_name="AvgPool2DBackward0")
def _avg_pool2d(x, divisor_override=None, **attrs):
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_avg_pool2d.forward, x, divisor_override, **attrs)
    geometry = geometry_of(x.shape, attrs)
    padded = im2col.pad_image(x, geometry.applied_pads)
    total = im2col.window_sum(padded, geometry)
    divisor = divisor_override or im2col.avg_divisor(geometry, attrs["count_include_pad"], x)
    return (total / divisor).astype(x.dtype, copy=False)


@register_gradient("avg_pool2d")
def avg_pool2d_grad(orig, grad):
    """Forward: y[n,c,i,j] = mean of window (i, j) of x   (divisor as count_include_pad says)
    Backward: x̄ = avg_pool2d_backward(ȳ, x)   (ȳ / divisor spread over each window)"""
    (x,) = orig.args
    return [avg_pool2d_backward(grad, x, **orig.attrs)]


register_linear_jvp(
    "avg_pool2d", "y[n,c,i,j] = mean of window (i, j) of x", "ẏ = avg_pool2d(ẋ)   (linear)"
)


def avg_pool2d_op(x: Tensor, attrs: dict) -> Tensor:
    return apply_op(_avg_pool2d, (x,), dict(attrs))


def _pool_input(input: Tensor, op: str) -> Tensor:
    checks.tensor_arg(op, "input", input)
    if input.ndim not in (3, 4):
        # PyTorch's avg_pool2d reads dim -3 before it checks the rank: IndexError there
        error = IndexError if op == "avg_pool2d" and input.ndim < 3 else RuntimeError
        raise error(
            f"{op}: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape "
            f"{tuple(input.shape)}"
        )
    refuse_complex(op, input)
    checks.not_bool(op, "input", input)
    if not is_floating(input.dtype):
        raise RuntimeError(f"{op}: expected a floating point input, got dtype {input.dtype}")
    return input if input.ndim == 4 else unsqueeze(input, 0)


def _pool_sizes(op: str, kernel_size, stride, padding, dilation) -> tuple:
    """PyTorch's pooling arguments, each an int or a pair, checked and made pairs.

    ``stride`` defaults to the kernel size (None or an empty tuple).
    """
    kernel = checks.positive(op, "kernel_size", checks.int_pair(op, "kernel_size", kernel_size))
    if stride is None or stride == ():
        stride = kernel
    stride = checks.positive(op, "stride", checks.int_pair(op, "stride", stride))
    padding = checks.non_negative(op, "padding", checks.int_pair(op, "padding", padding))
    dilation = checks.positive(op, "dilation", checks.int_pair(op, "dilation", dilation))
    return kernel, stride, padding, dilation


def _check_pool(input: Tensor, attrs: dict, op: str) -> None:
    kernel, dilation = attrs["pool_size"], attrs["dilation"]
    for k, d, p in zip(kernel, dilation, attrs["padding"]):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(
                f"{op}: pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d} (input shape {tuple(input.shape)})"
            )
    geometry = geometry_of(input.shape, attrs)
    if min(geometry.out_size) <= 0:
        raise RuntimeError(
            f"{op}: Given input size {tuple(input.shape)} and kernel {kernel}, stride "
            f"{attrs['strides']}, padding {attrs['padding'][:2]}: calculated output size "
            f"{geometry.out_size} is too small"
        )


def max_pool2d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """The largest value of each window; ties send the gradient to the first one."""
    x = _pool_input(input, "max_pool2d")
    kernel, stride, padding, dilation = _pool_sizes(
        "max_pool2d", kernel_size, stride, padding, dilation
    )
    attrs = pool_attrs(kernel, stride, padding, dilation, ceil_mode, False)
    del attrs["count_include_pad"]
    _check_pool(x, attrs, "max_pool2d")
    out = apply_op(_max_pool2d, (x,), attrs)
    out = out if input.ndim == 4 else squeeze(out, 0)
    if not return_indices:
        return out
    indices = _max_indices(x._data, geometry_of(x.shape, attrs))
    return out, Tensor(indices if input.ndim == 4 else indices[0])


def _max_indices(x: np.ndarray, geometry: im2col.Geometry) -> np.ndarray:
    """PyTorch's ``return_indices``: the flat index (row · W + col) of each max in its plane."""
    return im2col.argmax_flat_index(im2col.window_argmax(x, geometry), geometry)


def avg_pool2d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """The mean of each window; ``count_include_pad`` decides whether padding counts."""
    x = _pool_input(input, "avg_pool2d")
    kernel, stride, padding, _ = _pool_sizes("avg_pool2d", kernel_size, stride, padding, 1)
    attrs = pool_attrs(kernel, stride, padding, 1, ceil_mode, count_include_pad)
    _check_pool(x, attrs, "avg_pool2d")
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("avg_pool2d: divisor must be not zero (divisor_override=0)")
        attrs["divisor_override"] = int(divisor_override)
    out = apply_op(_avg_pool2d, (x,), attrs)
    return out if input.ndim == 4 else squeeze(out, 0)


# ------------------------------------------------------------------ nll_loss
def batched_nll(pred: np.ndarray, target: np.ndarray) -> tuple:
    """Predictions (N, C, ...) and targets (N, ...); an unbatched (C,) becomes a batch of one."""
    if pred.ndim == 1:
        return pred[None], np.reshape(target, (1,))
    return pred, target


def targets_and_weights(target, weights, ignore_index: int, dtype) -> tuple:
    """The targets to index with, and the weight of each: w[t] (1 without class weights),
    0 where t is ignore_index. The weights are None when they would all be 1 (the common
    case: no class weights, nothing ignored), which saves computing with a vector of ones."""
    ignored = target == ignore_index
    if weights is None and backend.xp(target) is np and not ignored.any():
        return target, None  # (on a GPU, asking would wait for it: the weighted road is taken)
    safe = np.where(ignored, 0, target)  # any valid class will do: its weight is 0
    w = np.ones_like(safe, dtype=dtype) if weights is None else weights[safe].astype(dtype)
    return safe, np.where(ignored, 0, w).astype(dtype, copy=False)


def at_targets(pred, target):
    """``pred[n, target[n], ...]``: each sample's entry at its target class."""
    if pred.ndim == 2:  # (N, C): fancy indexing, several times faster than take_along_axis
        return pred[backend.xp(pred).arange(len(target)), target]
    return np.take_along_axis(pred, np.expand_dims(target, 1), axis=1)[:, 0]


def put_at_targets(out, target, values) -> None:
    """``out[n, target[n], ...] = values[n, ...]`` (values: one per target, or one number)."""
    if out.ndim == 2:
        out[backend.xp(out).arange(len(target)), target] = values
        return
    spread = np.expand_dims(np.broadcast_to(values, target.shape), 1)
    np.put_along_axis(out, np.expand_dims(target, 1), spread, axis=1)


@register_op("nll_loss", inputs=("predictions", "targets", "weights"), saves=("targets", "weights"))
def _nll_loss(predictions, targets, weights, reduction, ignore_index):
    if predictions.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_nll_loss.forward, predictions, targets, weights, reduction, ignore_index)
    pred, target = batched_nll(predictions, targets)
    target, weight = targets_and_weights(target, weights, ignore_index, pred.dtype)
    losses = -at_targets(pred, target)  # a fresh array: weighted in place
    if weight is not None:
        losses *= weight
    if reduction == "none":
        return losses.reshape(np.shape(targets))
    total_weight = losses.size if weight is None else weight.sum()
    total = losses.sum() if reduction == "sum" else losses.sum() / total_weight
    return backend.asarray(total, like=pred, dtype=pred.dtype)  # 0-d, on pred's device


@register_gradient("nll_loss")
def nll_loss_grad(orig, grad):
    """Forward: ℓₙ = −w[tₙ] · p[n, tₙ]; mean: Σℓₙ / Σ w[tₙ]   (ignore_index rows count 0)
    Backward: p̄ = nll_loss_backward(ℓ̄, p, t, w); t, w: none"""
    predictions, targets, weights = orig.args
    return [
        nll_loss_backward_op(grad, predictions, targets, weights, orig.attrs),
        None,
        None,
    ]


register_linear_jvp(
    "nll_loss",
    "ℓₙ = −w[tₙ] · p[n, tₙ]; mean: Σℓₙ / Σ w[tₙ]",
    "ℓ̇ = nll_loss(ṗ, t, w)   (linear in p; t and w carry no tangent)",
    moving=(0,),
)


def nll_loss_op(predictions, targets, weights, reduction: str, ignore_index: int) -> Tensor:
    attrs = {"reduction": reduction, "ignore_index": int(ignore_index)}
    return apply_op(_nll_loss, (predictions, targets, weights), attrs)


def _shapes(predictions, targets) -> str:
    return f"(predictions {tuple(predictions.shape)}, targets {tuple(targets.shape)})"


def _check_target_shape(predictions, targets, op: str) -> None:
    """One class index per sample: targets shaped (N, d1, ...) for predictions (N, C, d1, ...),
    and () for a single sample (C,). The error types are PyTorch's: a target with extra dims
    (one-hot targets) is a RuntimeError, another batch size (or no dims) a ValueError."""
    pred, target = tuple(predictions.shape), tuple(targets.shape)
    shapes = _shapes(predictions, targets)
    if not pred:
        raise ValueError(f"{op}: Expected 1 or more dimensions (got 0) {shapes}")
    if len(pred) == 1 and len(target) == 1 and target[0] != 1:
        raise ValueError(
            f"{op}: For 1D input, 1D target must have size 1, but got target size: "
            f"{target[0]} {shapes}"
        )
    expected = () if len(pred) == 1 else (pred[0],) + pred[2:]
    batch = target[0] if target else 0  # PyTorch counts a 0-d target as a batch of 0
    if len(pred) >= 2 and batch != pred[0]:
        raise ValueError(
            f"{op}: expected targets of shape {expected}: the input's batch size ({pred[0]}) "
            f"and the target's ({batch}) differ {shapes}"
        )
    if len(pred) in (1, 2) and len(target) > 1:
        raise RuntimeError(
            f"{op}: 0D or 1D target tensor expected, multi-target not supported: pass class "
            f"indices, one per sample, not one-hot or column targets {shapes}"
        )
    if len(pred) == 0 or target != expected:
        raise RuntimeError(f"{op}: expected targets of shape {expected} {shapes}")


def check_nll_args(predictions, targets, weights, reduction, ignore_index, op: str) -> None:
    """Shapes, dtypes and target range, with errors that name the op and the shapes."""
    checks.reduction(op, reduction)
    checks.tensor_args(op, ("weight",), input=predictions, target=targets, weight=weights)
    checks.int_arg(op, "ignore_index", ignore_index)  # an int of 64 bits, as PyTorch's
    if targets.dtype.kind not in "iu":
        raise RuntimeError(
            f"{op}: expected integer class targets, but got {targets.dtype} "
            f"{_shapes(predictions, targets)}"
        )
    _check_target_shape(predictions, targets, op)
    pred_ndim = predictions.ndim
    classes = predictions.shape[0 if pred_ndim == 1 else 1]
    one_weight_per_class(op, weights, classes)  # (PyTorch checks the weights first)
    t = targets._data
    # How far the targets reach outside 0 … C − 1: one question to a GPU (it waits to answer)
    if t.size and np.maximum(-t.min(), t.max() - (classes - 1)) > 0:
        bad = (t != ignore_index) & ((t < 0) | (t >= classes))
        if bad.any():
            raise IndexError(
                f"{op}: Target {int(t[bad].reshape(-1)[0])} is out of bounds: there are "
                f"{classes} classes {_shapes(predictions, targets)}"
            )


def one_weight_per_class(op: str, weights: Tensor | None, classes: int) -> None:
    """A loss's class weights (nll_loss, cross_entropy): none, or one for each class."""
    if weights is not None and tuple(weights.shape) != (classes,):
        raise RuntimeError(
            f"{op}: weight tensor should be defined either for all {classes} classes or no "
            f"classes but got weight tensor of shape: {list(weights.shape)}"
        )


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of the target classes, from log-probabilities ``input``."""
    refuse_complex("nll_loss", input, weight)
    checks.tensor_arg("nll_loss", "input", input)
    checks.not_bool("nll_loss", "input", input)
    check_nll_args(input, target, weight, reduction, ignore_index, "nll_loss")
    return nll_loss_op(input, target, weight, reduction, ignore_index)


# ------------------------------------------------------ layer_norm, batch_norm
# Layer norm and batch norm standardize x over some dims, x̂ = (x − μ) / σ, then scale and shift,
# y = γ · x̂ + β. They differ only in those dims and in how γ and β meet x: layer norm's have the
# normalized shape and broadcast as they are; batch norm's hold one value per channel (dim 1).
# The forward, the rule and the JVP are written once, given ``shaped``, which makes γ (or β)
# broadcast against x, and ``summed``, which sums a gradient back to γ's shape.
def _standardized(x, dims: tuple, eps: float):
    """x̂ = (x − μ) / √(σ² + ε), μ and σ² over ``dims`` (numpy, in the forward)."""
    mu = x.mean(axis=dims, keepdims=True)
    var = x.var(axis=dims, keepdims=True)
    return (x - mu) / np.sqrt(var + eps)


def _standardized_grad(x, g_hat, dims: tuple, eps: float, need_x: bool):
    """x̂ and x̄ (None unless ``need_x``) for ĝ = ȳ · γ, as recordable ops:
    x̄ = (1/σ)(ĝ − mean(ĝ) − x̂ · mean(ĝ · x̂)), the means over ``dims``."""
    centered = x - mean(x, dims, keepdim=True)
    inv_std = rsqrt(mean(centered * centered, dims, keepdim=True) + eps)
    x_hat = centered * inv_std
    if not need_x:
        return x_hat, None
    spread = g_hat - mean(g_hat, dims, keepdim=True)
    return x_hat, inv_std * (spread - x_hat * mean(g_hat * x_hat, dims, keepdim=True))


def _as_is(t, ndim: int):
    """Layer norm's γ and β: they have the normalized shape, so they broadcast as they are."""
    return t


def _per_channel(t, ndim: int):
    """A (C,) tensor or array shaped to broadcast along dim 1 of an ndim-D input."""
    return t.reshape((1, -1) + (1,) * (ndim - 2))


def _sum_per_channel(g: Tensor, param: Tensor) -> Tensor:
    """Batch norm's γ̄ or β̄: ``g`` summed over every dim but the channels', as a (C,) tensor."""
    return reshape(sum_to(g, (1, g.shape[1]) + (1,) * (g.ndim - 2)), (-1,))


def _affine_standardized(x, weight, bias, dims: tuple, eps: float, shaped):
    """The forward kernel: y = γ · x̂ + β (numpy)."""
    if x.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_affine_standardized, x, weight, bias, dims, eps, shaped)
    out = _standardized(x, dims, eps)
    if weight is not None:
        out = out * shaped(weight, x.ndim)
    if bias is not None:
        out = out + shaped(bias, x.ndim)
    return out.astype(x.dtype, copy=False)


def _affine_standardized_grad(orig, grad, shaped, summed) -> list:
    """x̄, γ̄ and β̄ (None where not needed) for the op ``orig``."""
    x, weight, bias = orig.args
    need_x, need_w, need_b = orig.needs_input_grad
    g_hat = grad * shaped(weight, x.ndim) if weight is not None else grad
    x_hat, grad_x = _standardized_grad(x, g_hat, orig.attrs["dims"], orig.attrs["eps"], need_x)
    grad_w = summed(grad * x_hat, weight) if need_w else None
    grad_b = summed(grad, bias) if need_b else None
    return [grad_x, grad_w, grad_b]


def _affine_standardized_jvp(orig, tangents, shaped) -> Tensor:
    """ẏ = γ · ẋ̂ + γ̇ · x̂ + β̇ for the op ``orig``."""
    (x, weight, bias), (dx, dw, db) = orig.args, tangents
    dims, eps = orig.attrs["dims"], orig.attrs["eps"]
    x_hat, dx_hat = _standardized_grad(x, dx, dims, eps, True)
    if weight is not None:
        dx_hat = dx_hat * shaped(weight, x.ndim) + x_hat * shaped(dw, x.ndim)
    return dx_hat if bias is None else dx_hat + shaped(db, x.ndim)


def _register_norm(name: str, node_name: str, shaped) -> OpDef:
    """Register layer_norm or batch_norm: inputs x, γ, β; x is kept, and γ for x̄ only."""

    def kernel(x, weight, bias, dims, eps):
        return _affine_standardized(x, weight, bias, dims, eps, shaped)

    saves = {"x": None, "weight": "x"}
    return register_op(name, ("x", "weight", "bias"), saves, node_name=node_name)(kernel)


_layer_norm = _register_norm("layer_norm", "NativeLayerNormBackward0", _as_is)
_batch_norm = _register_norm("batch_norm", "NativeBatchNormBackward0", _per_channel)


@register_gradient("layer_norm")
def layer_norm_grad(orig, grad):
    """Forward: y = γ · x̂ + β,  x̂ = (x − μ) / σ   (μ, σ² over the normalized dims)
    Backward: x̄ = (1/σ)(ĝ − mean(ĝ) − x̂ · mean(ĝ · x̂)) with ĝ = ȳ · γ; γ̄ = Σ ȳ · x̂; β̄ = Σ ȳ"""
    return _affine_standardized_grad(orig, grad, _as_is, collapse_sum_like)


@register_jvp("layer_norm")
def layer_norm_jvp(orig, tangents):
    """Forward: y = γ · x̂ + β,  x̂ = (x − μ) / σ
    JVP: ẏ = γ · ẋ̂ + γ̇ · x̂ + β̇,  ẋ̂ = (1/σ)(ẋ − mean(ẋ) − x̂ · mean(ẋ · x̂))

    ẋ̂ is the gradient rule's x̄ with ĝ = ẋ: the Jacobian of x ↦ x̂ is symmetric."""
    return _affine_standardized_jvp(orig, tangents, _as_is)


@register_gradient("batch_norm")
def batch_norm_grad(orig, grad):
    """Forward: y = γ · x̂ + β,  x̂ = (x − μ) / σ   (μ, σ² of each channel over the batch)
    Backward: x̄ = (1/σ)(ĝ − mean(ĝ) − x̂ · mean(ĝ · x̂)) with ĝ = ȳ · γ; γ̄ = Σ ȳ · x̂; β̄ = Σ ȳ

    Layer norm's rule, with the means over the batch (and spatial) dims instead."""
    return _affine_standardized_grad(orig, grad, _per_channel, _sum_per_channel)


@register_jvp("batch_norm")
def batch_norm_jvp(orig, tangents):
    """Forward: y = γ · x̂ + β,  x̂ = (x − μ) / σ   (per channel, over the batch)
    JVP: ẏ = γ · ẋ̂ + γ̇ · x̂ + β̇,  ẋ̂ = (1/σ)(ẋ − mean(ẋ) − x̂ · mean(ẋ · x̂))"""
    return _affine_standardized_jvp(orig, tangents, _per_channel)


def layer_norm(
    input: Tensor,
    normalized_shape,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize over the last ``len(normalized_shape)`` dims, then scale and shift."""
    checks.tensor_args("layer_norm", ("weight", "bias"), input=input, weight=weight, bias=bias)
    refuse_complex("layer_norm", input, weight, bias)
    normalized_shape = checks.shape_arg("layer_norm", (normalized_shape,), "normalized_shape")
    k = len(normalized_shape)
    if k == 0 or tuple(input.shape[input.ndim - k :]) != normalized_shape:
        raise RuntimeError(
            f"layer_norm: Given normalized_shape={list(normalized_shape)}, expected input with "
            f"shape [*, {', '.join(map(str, normalized_shape))}], but got input of size "
            f"{list(input.shape)}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != normalized_shape:
            raise RuntimeError(
                f"layer_norm: expected {name} of shape {normalized_shape}, got {tuple(t.shape)}"
            )
    dims = tuple(range(input.ndim - k, input.ndim))
    return apply_op(_layer_norm, (input, weight, bias), {"dims": dims, "eps": float(eps)})


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel (dim 1) by its mean and variance over the batch (training),
    or by the running estimates (eval), then scale by ``weight`` and shift by ``bias``.

    In training the running estimates move towards the batch's, in place:
    ``running ← (1 − momentum) · running + momentum · batch`` (the variance unbiased)."""
    checks.tensor_args(
        "batch_norm",
        ("running_mean", "running_var", "weight", "bias"),
        input=input,
        running_mean=running_mean,
        running_var=running_var,
        weight=weight,
        bias=bias,
    )
    refuse_complex("batch_norm", input, weight, bias)
    if input.ndim < 2:  # PyTorch reads the batch size first: a 0-d input is its IndexError
        error = IndexError if input.ndim == 0 else ValueError
        raise error(f"batch_norm: expected 2D or more input (got {input.ndim}D input)")
    _one_per_channel(
        input, running_mean=running_mean, running_var=running_var, weight=weight, bias=bias
    )
    dims = (0,) + tuple(range(2, input.ndim))
    count = input.numel() // input.shape[1]
    if training and count <= 1:
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size "
            f"{list(input.shape)}"
        )
    if not training and running_mean is not None:
        return _normalize_with(input, running_mean, running_var, weight, bias, eps)
    if training and running_mean is not None:
        _update_running(running_mean, running_var, input._data, dims, momentum, count)
    return apply_op(_batch_norm, (input, weight, bias), {"dims": dims, "eps": float(eps)})


def _one_per_channel(input: Tensor, **per_channel) -> None:
    """The running statistics, weight and bias hold one number per channel (PyTorch counts
    elements, so a (C, 1) weight is taken too)."""
    channels = input.shape[1]
    for name, t in per_channel.items():
        if t is not None and t.numel() != channels:
            raise RuntimeError(
                f"batch_norm: {name} should contain {channels} elements not {t.numel()} "
                f"(input shape {tuple(input.shape)}, {name} shape {tuple(t.shape)})"
            )


def _update_running(running_mean, running_var, x, dims: tuple, momentum: float, count: int):
    """Move the running estimates towards this batch's mean and unbiased variance."""
    batch_mean = x.mean(axis=dims)
    batch_var = x.var(axis=dims) * (count / (count - 1))
    for running, batch in ((running_mean, batch_mean), (running_var, batch_var)):
        running._data *= 1 - momentum
        running._data += momentum * batch.astype(running.dtype)
        running._bump_version()


def _normalize_with(input, running_mean, running_var, weight, bias, eps) -> Tensor:
    """Eval mode: the statistics are constants, so the ops are plain arithmetic."""
    out = (input - _per_channel(running_mean, input.ndim)) * rsqrt(
        _per_channel(running_var, input.ndim) + eps
    )
    if weight is not None:
        out = out * _per_channel(weight, input.ndim)
    if bias is not None:
        out = out + _per_channel(bias, input.ndim)
    return out


# ------------------------------------------------------------------- dropout
# PyTorch's dropout multiplies by the mask: its node is a MulBackward0.
@register_op("dropout", inputs=("x", "mask"), saves=("mask",), node_name="MulBackward0")
def _dropout(x, mask):
    return x * mask


@register_gradient("dropout")
def dropout_grad(orig, grad):
    """Forward: y = x · m,  m = [kept] / (1 − p)   (m drawn once, in the forward)
    Backward: x̄ = ȳ · m"""
    _, mask = orig.args
    return [grad * mask, None]


register_linear_jvp(
    "dropout", "y = x · m", "ẏ = ẋ · m   (linear; the mask m is drawn once)", moving=(0,)
)


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1/(1 − p).

    The mask is PyTorch's: ``bernoulli(1 − p)`` from the default generator (the one
    ``wb.manual_seed`` seeds), divided by ``1 − p`` in the input's dtype; so a seeded run
    drops the elements PyTorch drops.
    """
    checks.tensor_arg("dropout", "input", input)
    refuse_complex("dropout", input)
    checks.probability("dropout", p)
    if not training or p == 0.0:
        return input
    if p == 1.0:  # everything dropped; PyTorch draws nothing for it
        return apply_op(_dropout, (input, Tensor._make(np.zeros_like(input._data))))
    generator = random.default_generator
    keep, levels = random.per_example(input.shape, lambda shape: generator.bernoulli(shape, 1 - p))
    mask = keep.astype(input.dtype) / input.dtype.type(1.0 - p)
    # Drawn on the CPU (a seed gives the same mask on every device), then moved to the
    # input's device, where the multiply runs.
    mask = Tensor._make(backend.to_device(mask, backend.device_of(input._data)))
    if levels:  # one mask per example, under vmap(randomness="different")
        mask = random.batched_at(mask, levels)
    return apply_op(_dropout, (input, mask))


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
    ignored = target == ignore_index
    target, weight = targets_and_weights(target, weights, ignore_index, output_grad.dtype)
    if reduction == "mean":
        scale = output_grad / (target.size if weight is None else weight.sum())
    elif reduction == "sum":
        scale = output_grad
    else:
        scale = np.reshape(output_grad, target.shape)
    out = backend.xp(output_grad).zeros(batched, dtype=output_grad.dtype)  # on its device
    if weight is not None:  # ignored rows stay 0, even when all are (scale = ḡ/0: NaN)
        scale = np.where(ignored, 0, -weight * scale).astype(output_grad.dtype, copy=False)
    put_at_targets(out, target, -scale if weight is None else scale)
    return out.reshape(shape)


@register_gradient("nll_loss_backward")
def nll_loss_backward_grad(orig, grad):
    """Forward: p̄ = nll_loss_backward(ḡ, p, t, w)   (−w[t]·ḡ at each target, linear in ḡ)
    Backward: ḡ̄ = nll_loss(ȳ, t, w)   (the adjoint of Aᵀ is A: the loss again)"""
    _, _, targets, weights = orig.args
    attrs = orig.attrs
    again = nll_loss_op(grad, targets, weights, attrs["reduction"], attrs["ignore_index"])
    return [again, None, None, None]


register_linear_jvp(
    "nll_loss_backward",
    "y = nll_loss_backward(ḡ, p, t, w)",
    "ẏ = nll_loss_backward(ḡ̇, p, t, w)   (linear in ḡ)",
    moving=(0,),
)


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
    check_nll_args(predictions, targets, weights, reduction, ignore_index, "nll_loss_backward")
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


register_linear_jvp(
    "max_pool2d_backward",
    "y = max_pool2d_backward(ḡ, x)",
    "ẏ = max_pool2d_backward(ḡ̇, x)   (linear in ḡ; the choice of window max is flat in x)",
    moving=(0,),
)


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


register_linear_jvp(
    "max_pool2d_gather",
    "y = v at the first max of each window of x",
    "ẏ = v̇ at the same places   (linear in v; flat in x)",
    moving=(0,),
)


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
    return [avg_pool2d_op(grad, orig.attrs), None]


register_linear_jvp(
    "avg_pool2d_backward",
    "y = avg_pool2d_backward(ḡ, x)",
    "ẏ = avg_pool2d_backward(ḡ̇, x)   (linear; x gives only its shape)",
    moving=(0,),
)


# max_pool2d_backward's parameters again, on purpose: each is the public signature of its
# namesake in TVM's tvm.relax.op.grad (ops/grad.py), the one the pooling exercise has learners
# write; this one adds divisor_override, and each hands its own kernel to apply_op.
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


# -------------------------------------------------------------------- one_hot
@register_op("one_hot", inputs=("indices",), differentiable=False)
def _one_hot(indices, num_classes):
    xp = backend.xp(indices)
    return (indices[..., None] == xp.arange(num_classes)).astype(np.int64)


def one_hot(input: Tensor, num_classes: int = -1) -> Tensor:
    """Class indices → rows of 0s with a 1 at the index (int64, one more dim of size C)."""
    checks.tensor_arg("one_hot", "input", input)
    if input.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    values = input._data
    if values.size and values.min() < 0:
        raise RuntimeError(f"one_hot: Class values must be non-negative, got {values.min()}.")
    if num_classes == -1:
        if not values.size:
            raise RuntimeError("one_hot: Can not infer total number of classes from empty tensor.")
        num_classes = int(values.max()) + 1
    elif values.size and values.max() >= num_classes:
        raise RuntimeError(
            f"one_hot: Class values must be smaller than num_classes ({num_classes}), got "
            f"{values.max()}."
        )
    return apply_op(_one_hot, (input,), {"num_classes": int(num_classes)})
