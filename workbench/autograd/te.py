"""``wb.gradient``: TVM's ``te.gradient`` on eager tensors.

``te.gradient(output, inputs, head)`` differentiates a tensor expression. Here the
expression has already run, so ``output`` is a tensor with a graph back to
``inputs``, and the same question gets the same answer:

* ``head=None``: the full Jacobian of ``output`` w.r.t. each input, of shape
  ``output.shape + input.shape``.
* ``head`` of shape ``prefix + output.shape``: for every index of ``prefix``, the
  gradient weighted by that slice of ``head``; the result has shape
  ``prefix + input.shape``. (``head = ones_like(output)`` gives ``grad(output.sum())``.)
"""

from __future__ import annotations

from ..core import backend
from ..core.tensor import Tensor
from . import entry_points


def gradient(output: Tensor, inputs, head: Tensor | None = None, *, create_graph: bool = False):
    """The Jacobians (or ``head``-weighted gradients) of ``output`` w.r.t. ``inputs``.

    As in TVM, ``inputs`` may be one tensor or a list, and a list comes back.
    ``create_graph=True`` (not in TVM, whose results are expressions anyway) keeps the
    results differentiable.
    """
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    heads, prefix = _heads(output, head)
    rows = [[] for _ in inputs]
    for h in heads:
        grads = _one_vjp(output, inputs, h, create_graph)
        for j, g in enumerate(grads):
            rows[j].append(g)
    return [_assemble(r, prefix, x) for r, x in zip(rows, inputs)]


def _heads(output: Tensor, head) -> tuple[list, tuple]:
    """The cotangents to pull back, one per prefix index, and the prefix shape."""
    out_shape = tuple(output.shape)
    if head is None:
        n = output.numel()
        identity = backend.xp(output._data).eye(n, dtype=output.dtype)  # on output's device
        return [Tensor._make(row) for row in identity.reshape((n,) + out_shape)], out_shape
    if not isinstance(head, Tensor):
        head = Tensor._make(backend.asarray(head, like=output._data, dtype=output.dtype))
    lead = head.ndim - len(out_shape)
    if lead < 0 or tuple(head.shape[lead:]) != out_shape:
        raise ValueError(
            f"gradient: head must have shape prefix + output.shape; got head "
            f"{tuple(head.shape)} for output {out_shape}"
        )
    prefix = tuple(head.shape[:lead])
    flat = head.reshape((-1,) + out_shape)
    return [flat[i] for i in range(flat.shape[0])], prefix


def _one_vjp(output: Tensor, inputs: list, head: Tensor, create_graph: bool) -> list:
    from ..core import factories

    if not output.requires_grad:
        return [factories.zeros_like(x) for x in inputs]
    grads = entry_points.grad(
        output, inputs, head, retain_graph=True, create_graph=create_graph, allow_unused=True
    )
    return [factories.zeros_like(x) if g is None else g for g, x in zip(grads, inputs)]


def _assemble(rows: list, prefix: tuple, x: Tensor) -> Tensor:
    from .. import ops
    from ..core import factories

    shape = tuple(prefix) + tuple(x.shape)
    if not rows:
        return factories.zeros(shape, dtype=x.dtype)
    return ops.reshape(ops.stack(rows, 0), shape)
