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

The backward ops live beside their forward ops (``max_pool2d_backward`` and
``nll_loss_backward`` in :mod:`.nn`, ``take_backward`` in :mod:`.indexing`); this module
gathers them under TVM's names and adds ``no_grad``.

Where a TVM rule returns ``no_grad(arg)`` for an argument with no gradient (targets,
indices, weights), our rules return ``None``. The ``no_grad`` op itself is here for
graphs: a node that passes its input's value on and stops its gradient.
"""

from __future__ import annotations

from ..core.tensor import Tensor
from ..record.dispatch import apply_op
from .registry import register_gradient, register_jvp, register_op


# ------------------------------------------------------------------ no_grad
@register_op("no_grad", view=True)
def _no_grad(x):
    return x


@register_gradient("no_grad")
def no_grad_grad(orig, grad):
    """Forward: y = x   (TVM's no_grad marker)
    Backward: x̄ = none   (the gradient stops here)"""
    return [None]


@register_jvp("no_grad")
def no_grad_jvp(orig, tangents):
    """Forward: y = x   (TVM's no_grad marker)
    JVP: ẏ = none   (the tangent stops here, as at PyTorch's detach)"""
    return None


def no_grad(input: Tensor) -> Tensor:
    """The value of ``input``, on a graph node that lets no gradient through."""
    return apply_op(_no_grad, (input,))


# TVM's backward operators, each registered beside its forward op.
from .indexing import take_backward  # noqa: E402
from .markers import end_checkpoint, start_checkpoint  # noqa: E402, F401
from .nn import (  # noqa: E402
    avg_pool2d_backward,
    geometry_of,
    max_pool2d_backward,
    max_pool2d_gather,
    nll_loss_backward,
    nll_loss_backward_op,
    pool_attrs,
)

__all__ = [
    "avg_pool2d_backward",
    "end_checkpoint",
    "geometry_of",
    "max_pool2d_backward",
    "max_pool2d_gather",
    "nll_loss_backward",
    "nll_loss_backward_op",
    "no_grad",
    "pool_attrs",
    "start_checkpoint",
    "take_backward",
]
