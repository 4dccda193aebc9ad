"""Activation checkpointing with ``torch.utils.checkpoint``'s API: trade compute for memory.

::

    from workbench.utils.checkpoint import checkpoint, checkpoint_sequential

    h = checkpoint(block, x, use_reentrant=False)   # block's activations are not kept
    y = checkpoint_sequential(layers, 4, x, use_reentrant=False)

``use_reentrant=False`` (recommended, as in PyTorch) keeps the graph of ``fn`` but not
its saved tensors; backward reruns ``fn`` once and carries on through the original
graph (see :mod:`workbench.record.recompute`). Gradients, tensor hooks,
``autograd.grad``, nesting and keyword arguments work as without checkpointing.

``use_reentrant=True`` is PyTorch's older variant, implemented too: ``fn`` runs
without a graph inside a custom :class:`~workbench.autograd.Function`, whose
backward reruns ``fn`` with grad enabled and calls ``backward()`` inside backward.
It inherits PyTorch's limits: no ``autograd.grad``/``backward(inputs=...)``, no
keyword arguments, and a parameter used inside and outside gets its hooks run twice.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

from ..autograd import entry_points
from ..autograd.function import Function
from ..core import state
from ..core.random import get_rng_state
from ..core.tensor import Tensor
from ..record import grad_mode
from ..record.recompute import FunctionFrame, detached, rng_state

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointFunction"]

_PASS_EXPLICITLY = (
    "the use_reentrant parameter should be passed explicitly. use_reentrant=False is "
    "recommended, but if you need to preserve the current default behavior, you can pass "
    "use_reentrant=True. Refer to docs for more details on the differences between the two "
    "variants."
)

_GRAD_INCOMPATIBLE = (
    "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an "
    "`inputs` parameter to .backward(). To resolve this error, you can either set "
    "use_reentrant=False, or call .backward() without passing the `inputs` argument."
)


def checkpoint(
    function: Callable,
    *args,
    use_reentrant: bool | None = None,
    preserve_rng_state: bool = True,
    determinism_check: str = "default",
    **kwargs,
):
    """Run ``function(*args, **kwargs)`` without keeping its activations for backward.

    ``preserve_rng_state`` reruns with the random state of the forward pass (same
    dropout masks). ``determinism_check="default"`` compares the shape and dtype of
    every recomputed value with the forward pass; ``"none"`` skips it. Omitting
    ``use_reentrant`` warns and picks ``True``, as PyTorch does.
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: " + _PASS_EXPLICITLY, stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return _checkpoint_reentrant(function, preserve_rng_state, args)
    if determinism_check not in ("default", "none"):
        raise ValueError(
            f"determinism_check should be one of ['default', 'none'], but got {determinism_check}"
        )
    if not grad_mode.is_grad_enabled():
        return function(*args, **kwargs)  # nothing will be saved: nothing to checkpoint
    frame = FunctionFrame(
        function, args, kwargs, preserve_rng_state, determinism_check == "default"
    )
    return frame.run(args)


def checkpoint_sequential(
    functions, segments: int, input: Tensor, use_reentrant: bool | None = None, **kwargs
):
    """Run ``functions`` one after another in ``segments`` chunks, checkpointing all but the last.

    Each checkpointed chunk keeps only its input; the last chunk runs normally (its
    output is needed at once by backward anyway). ``functions`` is a list of callables
    or a module with ``children()`` (``nn.Sequential``).
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: " + _PASS_EXPLICITLY, stacklevel=2
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    functions = list(functions.children() if hasattr(functions, "children") else functions)
    if not isinstance(segments, int) or not 1 <= segments <= len(functions):
        raise ValueError(
            f"checkpoint_sequential: segments={segments!r}: choose a whole number from 1 to "
            f"{len(functions)}, the number of functions (PyTorch fails here with a bare "
            "ZeroDivisionError or ValueError)"
        )
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(
            _run_chunk(functions, start, end),
            input,
            use_reentrant=use_reentrant,
            preserve_rng_state=preserve,
        )
    return _run_chunk(functions, end + 1, len(functions) - 1)(input)


def _run_chunk(functions: Sequence[Callable], start: int, end: int) -> Callable:
    def forward(x):
        for j in range(start, end + 1):
            x = functions[j](x)
        return x

    return forward


# ------------------------------------------------------------------ reentrant
def _checkpoint_reentrant(function: Callable, preserve_rng_state: bool, args: tuple):
    if grad_mode.is_grad_enabled() and not any(
        isinstance(a, Tensor) and a.requires_grad for a in args
    ):
        warnings.warn(
            "None of the inputs have requires_grad=True. Gradients will be None", stacklevel=3
        )
    return CheckpointFunction.apply(function, preserve_rng_state, *args)


class CheckpointFunction(Function):
    """Reentrant checkpoint: forward without a graph; backward reruns fn and differentiates it."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
        return run_function(*args)  # Function.apply runs this under no_grad

    @staticmethod
    def backward(ctx, *grad_outputs):
        if not state.is_checkpoint_valid():
            raise RuntimeError(_GRAD_INCOMPATIBLE)
        inputs = list(ctx.inputs)
        for index, saved in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[index] = detached(saved)
        with rng_state(ctx.rng_state), grad_mode.enable_grad():
            outputs = ctx.run_function(*inputs)
        outputs = (outputs,) if isinstance(outputs, Tensor) else outputs
        pairs = [
            (out, grad)
            for out, grad in zip(outputs, grad_outputs)
            if isinstance(out, Tensor) and out.requires_grad
        ]
        if not pairs:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        entry_points.backward([out for out, _ in pairs], [grad for _, grad in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None for x in inputs)
