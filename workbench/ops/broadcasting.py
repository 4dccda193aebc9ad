"""Broadcasting and its undo: ``expand`` (``broadcast_to``) and ``collapse_sum_like``.

``expand`` stretches a tensor to a bigger shape without copying (a numpy view).
``collapse_sum_like`` goes the other way: it sums a gradient over the axes that
broadcasting added or stretched, back to the shape of the input that was broadcast.
Each is the other's gradient, and every binary op's rule passes its partials through
``collapse_sum_like`` (TVM Relay's name; ``sum_to`` is TVM's ``collapse_sum_to``).
"""

from __future__ import annotations

import numpy as np

from ..core import checks, events
from ..core.dtypes import SMALL_FLOAT_CHARS, in_float32
from ..core.tensor import Tensor
from ..record.dispatch import apply_op
from .registry import register_gradient, register_linear_jvp, register_op


def shape_arg(op: str, sizes: tuple, name: str = "shape") -> tuple:
    """A shape given as sizes (``x.expand(2, 3)``) or as one sequence (``x.expand((2, 3))``),
    read as PyTorch reads a list of ints (``checks.int_list``): a float, a leading bool or
    an int beyond int64 is its TypeError, not rounded down by ``int()`` or overflowed."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = sizes[0]
    return checks.int_list(op, name, tuple(sizes))


# ------------------------------------------------------ expand (broadcast_to)
# expand's rules share their shape with permute's in shape.py on purpose: each op's formula is its
# own rule's docstring.
@register_op("expand", view=True)
def _expand(x, shape):
    return np.broadcast_to(x, shape)


@register_gradient("expand")
def expand_grad(orig, grad):
    """Forward: y = broadcast_to(x, shape)
    Backward: x̄ = collapse_sum_like(ȳ, x)"""
    (x,) = orig.args
    return [collapse_sum_like(grad, x)]


register_linear_jvp(
    "expand",
    "y = broadcast_to(x, shape)",
    "ẏ = broadcast_to(ẋ, shape)   (linear: the op on the tangent)",
)


def expand(input: Tensor, *sizes) -> Tensor:
    sizes = shape_arg("expand", sizes, "size")
    lead = len(sizes) - input._data.ndim
    if lead < 0:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({input._data.ndim})"
        )
    shape = tuple(
        input._data.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes)
    )
    for i, size in enumerate(input._data.shape):
        if size != 1 and size != shape[lead + i]:
            raise RuntimeError(
                f"expand: the expanded size of the tensor ({shape[lead + i]}) must match the "
                f"existing size ({size}) at non-singleton dimension {lead + i}. Target sizes: "
                f"{list(sizes)}. Tensor sizes: {list(input._data.shape)}"
            )
    if shape == input._data.shape:
        return input
    return apply_op(_expand, (input,), {"shape": shape})


broadcast_to = expand


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other.shape)


# ------------------------------------------------------------ collapse_sum_like
def summed_axes(from_shape: tuple, to_shape: tuple) -> tuple:
    """The axes of ``from_shape`` that broadcasting added or stretched from ``to_shape``."""
    lead = len(from_shape) - len(to_shape)
    axes = list(range(lead))
    for i, size in enumerate(to_shape):
        if size == 1 and from_shape[lead + i] != 1:
            axes.append(lead + i)
    return tuple(axes)


@register_op("collapse_sum_like", inputs=("grad",))
def _collapse_sum(grad, shape):
    if grad.dtype.char in SMALL_FLOAT_CHARS:  # float16/bfloat16: in float32, rounded once
        return in_float32(_collapse_sum.forward, grad, shape)
    axes = summed_axes(grad.shape, shape)
    return grad.sum(axis=axes).reshape(shape) if axes else grad.reshape(shape)


@register_gradient("collapse_sum_like")
def collapse_sum_grad(orig, grad):
    """Forward: y = collapse_sum_like(x, like)   (sum over the broadcast axes)
    Backward: x̄ = broadcast_to(ȳ, x.shape)"""
    (x,) = orig.args
    return [expand(grad, x.shape)]


register_linear_jvp(
    "collapse_sum_like",
    "y = collapse_sum_like(x, like)",
    "ẏ = collapse_sum_like(ẋ, like)   (linear)",
)


def sum_to(grad: Tensor, shape: tuple) -> Tensor:
    """Sum ``grad`` over broadcast axes so that it has ``shape`` (TVM's collapse_sum_to)."""
    shape = tuple(shape)
    if grad._data.shape == shape:
        return grad
    if not _broadcastable_to(shape, grad.shape):
        raise RuntimeError(
            f"collapse_sum_like: cannot sum a gradient of shape {tuple(grad.shape)} to shape "
            f"{shape}: the shapes are not broadcast-compatible"
        )
    out = apply_op(_collapse_sum, (grad,), {"shape": shape})
    if events.listening:
        events.publish(
            events.CollapseSum(
                input_shape=tuple(grad.shape),
                output_shape=shape,
                axes=summed_axes(grad.shape, shape),
                output=out.uid,
                node=None if out.grad_fn is None else out.grad_fn.uid,
            )
        )
    return out


def collapse_sum_like(grad: Tensor, like) -> Tensor | None:
    """Relay's ``collapse_sum_like``: sum ``grad`` back to the shape of ``like``.

    ``like`` is the input that was broadcast (a tensor, or anything with ``.shape``).
    A Python number gets no gradient, so for one this returns None.
    """
    shape = like._data.shape if isinstance(like, Tensor) else getattr(like, "shape", None)
    if shape is None:
        return None
    if grad._data.shape == shape:
        return grad  # nothing was broadcast
    return sum_to(grad, tuple(shape))


def _broadcastable_to(shape: tuple, target: tuple) -> bool:
    if len(shape) > len(target):
        return False
    return all(a == b or a == 1 for a, b in zip(reversed(shape), reversed(target)))


class TensorShape:
    """Something with just a ``.shape``, for collapse_sum_like when only the shape is known."""

    def __init__(self, shape) -> None:
        self.shape = tuple(shape)
