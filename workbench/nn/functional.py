"""``workbench.nn.functional``: PyTorch's ``torch.nn.functional`` names and arguments.

Layers, activations and losses as plain functions. Most are a registered op
(``conv2d``, ``max_pool2d``, ``nll_loss``...); the rest are short compositions of
ops, written out here so that a learner can read what, say, ``cross_entropy``
really computes: ``nll_loss(log_softmax(x))``.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import ops
from ..core import checks
from ..core.dtypes import is_floating
from ..core.tensor import Tensor
from ..ops import avg_pool2d, batch_norm, conv2d, layer_norm, max_pool2d, nll_loss, pad
from ..ops import inplace as _inplace
from ..ops.complex_numbers import refuse_complex
from ..ops.indexing import embedding_rows
from ..ops.losses import bce_with_logits_op, binary_cross_entropy_op, mse_loss_op
from ..ops.nn import one_hot, one_weight_per_class
from ..record import grad_mode

__all__ = [
    "avg_pool2d",
    "batch_norm",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "conv2d",
    "cross_entropy",
    "dropout",
    "elu",
    "embedding",
    "gelu",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "max_pool2d",
    "mse_loss",
    "nll_loss",
    "one_hot",
    "pad",
    "relu",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "tanh",
]


def _inplace_or_not(fn, input: Tensor, inplace: bool, *args) -> Tensor:
    """Run ``fn(input, *args)``; with ``inplace`` write the result into ``input``."""
    if inplace:
        return _inplace.apply(input, fn, *args)
    return fn(input, *args)


# --------------------------------------------------------------- activations
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return _inplace_or_not(ops.relu, input, inplace)


def sigmoid(input: Tensor) -> Tensor:
    return ops.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    return ops.tanh(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    return ops.gelu(input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return _inplace_or_not(ops.silu, input, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return _inplace_or_not(ops.leaky_relu, input, inplace, negative_slope)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return _inplace_or_not(ops.elu, input, inplace, alpha)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return ops.softplus(input, beta, threshold)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    return ops.softmax(input, _implicit_dim(input, dim, "softmax"), dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    return ops.log_softmax(input, _implicit_dim(input, dim, "log_softmax"), dtype=dtype)


def _implicit_dim(input: Tensor, dim, name: str):
    """``dim`` itself, or, left out, the dim PyTorch's ``F.softmax`` still picks with its
    deprecation warning: 0 for a 0-d, 1-d or 3-d input, else 1 (``torch.softmax`` and
    ``x.softmax`` need one)."""
    if dim is not None:
        return dim
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to "
        "include dim=X as an argument.",
        UserWarning,
        stacklevel=3,
    )
    return 0 if checks.tensor_arg(name, "input", input).ndim in (0, 1, 3) else 1


# -------------------------------------------------------------------- layers
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y = x Wᵀ + b`` with W of shape (out_features, in_features): one op, ``linear``."""
    return ops.linear(input, weight, bias)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero elements with probability ``p`` (seeded by ``wb.manual_seed``), scale the rest."""
    return _inplace_or_not(ops.dropout, input, inplace, p, training)


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input``: a ``take`` along dim 0.

    Rows picked several times get the sum of their gradients (take's scatter-add); the
    ``padding_idx`` row gets none.
    """
    checks.tensor_args("embedding", input=input, weight=weight)
    if scale_grad_by_freq or sparse:
        raise ValueError("embedding: scale_grad_by_freq and sparse gradients are not supported")
    if weight.requires_grad:  # PyTorch looks up complex rows, but will not differentiate them
        refuse_complex("embedding", weight, error=RuntimeError)
    if weight.ndim != 2:  # (recording, PyTorch reads weight.size(0) first: 0-d fails there)
        error = IndexError if weight.ndim == 0 and weight.requires_grad else RuntimeError
        raise error(
            f"embedding: 'weight' must be 2-D (num_embeddings, embedding_dim), got shape "
            f"{tuple(weight.shape)}"
        )
    if isinstance(input, Tensor):  # a negative index would wrap to the last rows
        checks.indices_in_range(
            "embedding", input._data, weight.shape[0], 0, weight.shape, negative_ok=False
        )
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    out = embedding_rows(weight, input)
    if padding_idx is None:
        return out
    if padding_idx < 0:
        padding_idx += weight.shape[0]
    is_padding = ops.unsqueeze(input == padding_idx, -1)
    return ops.where(is_padding, out.detach(), out)


def _renorm_rows(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    """PyTorch's max_norm: rescale, in place, the used rows whose norm exceeds max_norm."""
    rows = np.unique(input._data)
    with grad_mode.no_grad():
        norms = np.linalg.norm(weight._data[rows], ord=norm_type, axis=1)
        scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight._data[rows] *= scale[:, None].astype(weight.dtype)
    weight._bump_version()


# -------------------------------------------------------------------- losses
def _reduce(losses: Tensor, reduction: str, op: str) -> Tensor:
    if reduction == "mean":
        return ops.mean(losses)
    if reduction == "sum":
        return ops.sum(losses)
    checks.reduction(op, reduction)
    return losses


def _warn_if_broadcast(op: str, input: Tensor, target: Tensor) -> None:
    """PyTorch warns when a loss's target broadcasts against its input: a (N, 1) output
    against (N,) targets gives an (N, N) loss, silently wrong."""
    checks.tensor_args(op, input=input, target=target)
    if input.shape != target.shape:
        warnings.warn(
            f"{op}: Using a target size ({tuple(target.shape)}) that is different to the input "
            f"size ({tuple(input.shape)}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            UserWarning,
            stacklevel=3,
        )


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean squared error ``(x − t)²``: one op, ``MseLossBackward0``, as in PyTorch."""
    refuse_complex("mse_loss", input, target)
    _warn_if_broadcast("mse_loss", input, target)
    return mse_loss_op(input, target, checks.reduction("mse_loss", reduction))


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean absolute error ``|x − t|`` (gradient 0 where x = t, as PyTorch)."""
    _warn_if_broadcast("l1_loss", input, target)
    return _reduce(ops.abs(input - target), reduction, "l1_loss")


def binary_cross_entropy(
    input: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    """``−w · (t · log x + (1 − t) · log(1 − x))`` for probabilities x; logs clamped at −100."""
    checks.tensor_args(
        "binary_cross_entropy", ("weight",), input=input, target=target, weight=weight
    )
    refuse_complex("binary_cross_entropy", input, target, weight)
    checks.not_bool("binary_cross_entropy", "input", input, error=RuntimeError)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"binary_cross_entropy: Using a target size ({tuple(target.shape)}) that is "
            f"different to the input size ({tuple(input.shape)}) is deprecated. Please ensure "
            "they have the same size."
        )
    for name, given in (("input", input), ("target", target)):
        values = given._data  # NaN is outside [0, 1] too (a NaN min fails min >= 0), as PyTorch
        if values.size and not (values.min() >= 0 and values.max() <= 1):
            raise RuntimeError(
                f"binary_cross_entropy: all elements of {name} should be between 0 and 1"
            )
    reduction = checks.reduction("binary_cross_entropy", reduction)
    return binary_cross_entropy_op(input, target, weight, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """BCE on logits x, stable for any x: ``p · t · softplus(−x) + (1 − t) · softplus(x)``.

    (−log σ(x) = softplus(−x) and −log(1 − σ(x)) = softplus(x); ``p`` is ``pos_weight``.)
    """
    checks.tensor_args(
        "binary_cross_entropy_with_logits",
        ("weight", "pos_weight"),
        input=input,
        target=target,
        weight=weight,
        pos_weight=pos_weight,
    )
    refuse_complex("binary_cross_entropy_with_logits", input, target, weight, pos_weight)
    checks.not_bool("binary_cross_entropy_with_logits", "input", input)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"binary_cross_entropy_with_logits: Target size ({tuple(target.shape)}) must be "
            f"the same as input size ({tuple(input.shape)})"
        )
    reduction = checks.reduction("binary_cross_entropy_with_logits", reduction)
    return bce_with_logits_op(input, target, weight, pos_weight, reduction)


# Its first lines are ops/nn.py's nll_loss signature on purpose: PyTorch's arguments, in PyTorch's
# order.
def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """``nll_loss(log_softmax(x, class_dim), t)``; ``t`` holds class indices or probabilities."""
    checks.tensor_args("cross_entropy", ("weight",), input=input, target=target, weight=weight)
    refuse_complex("cross_entropy", input, target, weight)
    if label_smoothing is not None and label_smoothing > 1.0:  # PyTorch lets negatives pass
        raise RuntimeError(
            f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"
        )
    if tuple(target.shape) == tuple(input.shape) and not is_floating(target.dtype):
        # PyTorch tells the two kinds of target apart by shape, not by dtype
        raise RuntimeError(
            f"cross_entropy: a target of the input's shape {tuple(input.shape)} holds class "
            f"probabilities: expected a floating point target, got {target.dtype}"
        )
    class_dim = 0 if input.ndim == 1 else 1
    log_p = ops.log_softmax(input, class_dim)
    if is_floating(target.dtype):
        return _soft_cross_entropy(log_p, target, weight, reduction, label_smoothing, class_dim)
    loss = nll_loss(log_p, target, weight, ignore_index, reduction)
    if not label_smoothing:
        return loss
    classes = input.shape[class_dim]
    smooth = _smoothing_term(log_p, target, weight, ignore_index, reduction, class_dim)
    return (1 - label_smoothing) * loss + smooth * (label_smoothing / classes)


def _class_weight(weight: Tensor, ndim: int, class_dim: int) -> Tensor:
    """The (C,) weight shaped to broadcast along the class dim of an ndim-D tensor."""
    return ops.reshape(weight, (-1,) + (1,) * (ndim - class_dim - 1))


def _smoothing_term(log_p, target, weight, ignore_index, reduction, class_dim) -> Tensor:
    """−Σ_c w_c · log p_c per sample, reduced the way PyTorch reduces it."""
    weighted = log_p if weight is None else log_p * _class_weight(weight, log_p.ndim, class_dim)
    ignored = target == ignore_index
    smooth = ops.masked_fill(-ops.sum(weighted, class_dim), ignored, 0.0)
    if reduction == "none":
        return smooth
    if reduction == "sum":
        return ops.sum(smooth)
    kept = ~ignored._data
    if weight is None:
        count = float(kept.sum())
    else:
        count = float(weight._data[target._data[kept]].sum())
    return ops.sum(smooth) / count


def _soft_cross_entropy(log_p, target, weight, reduction, label_smoothing, class_dim) -> Tensor:
    """Cross entropy against class probabilities: ``−Σ_c w_c · t_c · log p_c``."""
    shape, target_shape = tuple(log_p.shape), tuple(target.shape)
    if target_shape != shape:
        batch = target_shape[0] if target_shape else 0
        # PyTorch's types: another batch size is a ValueError, another shape a RuntimeError
        error = ValueError if len(shape) >= 2 and batch != shape[0] else RuntimeError
        raise error(
            f"cross_entropy: expected probability targets of the input's shape {shape}, got "
            f"{target_shape} (input batch_size {shape[0]}, target batch_size {batch})"
        )
    classes = log_p.shape[class_dim]
    one_weight_per_class("cross_entropy", weight, classes)
    if label_smoothing:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    terms = log_p * target
    if weight is not None:
        terms = terms * _class_weight(weight, log_p.ndim, class_dim)
    losses = -ops.sum(terms, class_dim)
    if reduction == "mean":
        return ops.sum(losses) / float(log_p.numel() // classes)
    return _reduce(losses, reduction, "cross_entropy")


def __getattr__(name: str):
    from ..compat.torch_alias import not_here

    raise AttributeError(not_here(__name__, name))
