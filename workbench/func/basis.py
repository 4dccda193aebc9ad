"""A Jacobian from one batched pass: the whole basis through ``vmap`` at once.

``jacrev`` needs vᵀ·J for every one-hot v (one row each), ``jacfwd`` needs J·v for every
one-hot v (one column each). Looping runs one pass per basis vector; torch.func, and
the workbench when it can, pushes the identity matrix through *one* vectorised pass
instead: ``vmap`` over the pullback (``jacrev``) or over ``jvp`` (``jacfwd``). Every op
of that pass runs its batching rule once on the whole basis.

The loop stays the general road: the batched pass is taken only where every op on
the way has a batching rule. An op without one stops ``vmap`` with a ``"vmap: ..."``
error (:func:`batching_refused`), and the transform then runs its loop, which gives
the same numbers one basis vector at a time, or PyTorch's error where there is one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..core.tensor import Tensor
from .vmap import vmap


def one_hots(like: list) -> list:
    """The basis e₀ … e_{n-1} of the elements of the tensors ``like`` taken together (n
    in all), as torch.func builds it for a pytree: row k of an identity matrix, split
    back into one tensor per ``like``, each of its shape and dtype (so each tensor's
    block holds n rows), on its device. For one tensor, the rows of an identity matrix."""
    count = sum(t.numel() for t in like)
    dtype = np.result_type(*(t._data.dtype for t in like))  # (one tensor's: no cast below)
    identity, start, blocks = np.eye(count, dtype=dtype), 0, []
    for t in like:
        block = identity[:, start : start + t.numel()].astype(t._data.dtype, copy=False)
        blocks.append(_on(Tensor._make(block.reshape(count, *t.shape)), t.device))
        start += t.numel()
    return blocks


def _on(block: Tensor, device) -> Tensor:
    """``block`` (built on the CPU) on ``device``; ``to`` only when it must move."""
    return block if device.type == "cpu" else block.to(device)


def check_chunk_size(chunk_size, api: str) -> None:
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"{api}: `chunk_size` should be greater than 0.")


def through_vmap(one_pass: Callable, basis: list, out_dims, chunk_size: int | None):
    """``vmap(one_pass, out_dims=out_dims)(*basis)`` (the basis's blocks, one argument
    each, see ``one_hots``), ``chunk_size`` basis vectors at a time when given (less
    memory, more passes: torch.func's ``chunk_size``), the chunks' results concatenated
    along ``out_dims``."""
    mapped = vmap(one_pass, out_dims=out_dims)
    count = basis[0].shape[0]
    if chunk_size is None or chunk_size >= count:
        return mapped(*basis)
    chunks = [
        mapped(*[block[start : start + chunk_size] for block in basis])
        for start in range(0, count, chunk_size)
    ]
    return _concatenated(chunks, out_dims)


def _concatenated(chunks: list, dim: int):
    from .. import ops

    if isinstance(chunks[0], (tuple, list)):
        return type(chunks[0])(
            _concatenated([c[n] for c in chunks], dim) for n in range(len(chunks[0]))
        )
    return ops.cat(chunks, dim=dim)


def batching_refused(error: Exception) -> bool:
    """Whether ``error`` is vmap refusing to batch something (an op, a raw numpy call on
    a batched tensor, a write into an unbatched one): the loop can do it instead. A
    random op under ``randomness='error'`` is PyTorch's error, not a refusal to batch."""
    message = str(error)
    return (
        isinstance(error, RuntimeError)
        and message.startswith("vmap:")
        and "randomness error mode" not in message
    )
