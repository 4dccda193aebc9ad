"""TVM Relax's checkpoint markers: ``start_checkpoint`` and ``end_checkpoint``.

From ``tvm.relax.op.grad``: "The computation between start_checkpoint and
end_checkpoint will be marked as the checkpoint stage. Rather than storing all
intermediate activations of the entire computation graph for computing backward,
the checkpointed stage does not save intermediate activations, and instead
recomputes them in backward process."

TVM marks a stage in a dataflow program before differentiating it. Here the graph is
recorded eagerly, so the stage is every op recorded *between the two calls*::

    c_cp = start_checkpoint(c)      # stage inputs (call it once per input)
    d_cp = start_checkpoint(d)
    e = c_cp + d_cp                 # recorded on the stage's tape; saves nothing
    e_out = end_checkpoint(e)       # the stage's output; the stage closes

Both markers are identity ops (views) and appear on the graph as nodes of their own.
The stage keeps its inputs and the outside tensors its ops read (parameters,
constants); in backward it replays its tape once to recompute what its nodes saved.
Stages do not nest (a second ``start_checkpoint`` adds an input to the open stage),
but a stage may sit inside a ``checkpoint(fn)`` and the other way round.
"""

from __future__ import annotations

from ..core.tensor import Tensor
from ..record import recompute
from ..record.dispatch import apply_op
from .registry import OpDef, register_op, register_rules

__all__ = ["start_checkpoint", "end_checkpoint"]


def _register_marker(name: str, marks: str) -> OpDef:
    """Register a marker: an identity op (a view), x̄ = ȳ and ẏ = ẋ, that is a node of its own
    on the graph, so that the graph tells a stage's start from its end."""

    def identity(x):
        return x

    def marker_grad(orig, grad):
        return [grad]

    def marker_jvp(orig, tangents):
        return tangents[0]

    op = register_op(name, view=True)(identity)
    forward = f"{name}(x)   (identity; marks {marks} of a checkpoint stage)"
    register_rules(name, marker_grad, marker_jvp, forward, "x̄ = ȳ", "ẏ = ẋ")
    return op


_start_checkpoint = _register_marker("start_checkpoint", "an input")
_end_checkpoint = _register_marker("end_checkpoint", "the output")


def _check_tensor(x, marker: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(
            f"The argument of {marker} should be a Tensor (TVM: a Var), got {type(x).__name__}"
        )


def start_checkpoint(input: Tensor) -> Tensor:
    """Mark ``input`` as an input of a checkpoint stage (opening one if none is open)."""
    _check_tensor(input, "start_checkpoint")
    with recompute.stage_paused():
        out = apply_op(_start_checkpoint, (input,))
    recompute.start_stage(out)
    return out


def end_checkpoint(input: Tensor) -> Tensor:
    """Mark ``input`` as the output of the open checkpoint stage and close the stage."""
    _check_tensor(input, "end_checkpoint")
    recompute.end_stage()
    return apply_op(_end_checkpoint, (input,))
