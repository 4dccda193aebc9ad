"""Forward-mode AD: dual tensors, whose tangents ride forward through every op.

PyTorch's ``torch.autograd.forward_ad``, with its names::

    with forward_ad.dual_level():
        x = forward_ad.make_dual(primal, tangent)   # x carries ẋ = tangent
        y = x.sigmoid()                             # y carries ẏ = ẋ · y · (1 − y)
        y_primal, y_tangent = forward_ad.unpack_dual(y)

Reverse mode records a graph and walks it back later; forward mode needs no graph. Each
op, as it runs, looks at its inputs' tangents and computes its output's tangent at once
with the op's **JVP rule** (``register_jvp`` in ``workbench/ops/registry.py``, next to the
op's gradient rule): ẏ = J ẋ, the Jacobian times the tangent, without building J.

``apply_op`` (dispatch.py) pays one check per op for all of this: ``LEVEL is not None``.
Outside a dual level nothing here runs. A JVP rule is built from differentiable ops, so
a tangent has a history of its own when its primal does: reverse mode can differentiate
it, and a backward pass run inside a dual level carries tangents (forward over reverse,
how Hessian-vector products are made).

As in PyTorch 2.13, one level at a time: levels do not nest. When a level ends, every
tensor made dual in it loses its tangent.
"""

from __future__ import annotations

import weakref
from collections import namedtuple
from typing import NamedTuple

from ..core import backend, state

# The dual level in use; apply_op reads it once per op. One for the whole process, not
# one per thread: PyTorch keeps its forward levels in one global list too (a tangent
# made in one thread is seen in another), unlike grad mode, which is per thread.
LEVEL: DualLevel | None = None


class DualLevel:
    """One ``dual_level()``: the tensors that got a tangent in it, to be cleared at its end."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.duals: list[weakref.ref] = []

    def clear(self) -> None:
        for ref in self.duals:
            t = ref()
            if t is not None and t._forward_grad is not None:
                del t._forward_grad  # back to the class default, None
        self.duals.clear()


class UnpackedDualTensor(NamedTuple):
    """``unpack_dual``'s answer: the primal, and the tangent (None for a plain tensor)."""

    primal: Tensor
    tangent: Tensor | None


# ------------------------------------------------------------------- the levels
def enter_dual_level() -> int:
    """Start a dual level; returns its index (0: one level at a time, as PyTorch)."""
    global LEVEL
    if LEVEL is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    LEVEL = DualLevel(0)
    return LEVEL.index


def exit_dual_level(*, level: int | None = None) -> None:
    """End the dual level: its dual tensors lose their tangents."""
    global LEVEL
    if LEVEL is None or (level is not None and level != LEVEL.index):
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. "
            "This is not supported."
        )
    ending, LEVEL = LEVEL, None
    ending.clear()


class dual_level:
    """Context manager for a dual level: ``with dual_level(): ...``; tangents live inside."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


# ------------------------------------------------------------- dual tensors
def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` that carries ``tangent`` (ẋ) forward through every op.

    As in PyTorch: only inside a dual level; the primal and the tangent are floating
    point or complex and of one shape; the primal has no tangent at this level yet.
    """
    _check_level(level, "_make_dual")
    if LEVEL is None:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure "
            "to enter_dual_level() first."
        )
    for name, value in (("primal", tensor), ("tangent", tangent)):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"make_dual(): argument '{name}' must be Tensor, not {type(value).__name__}"
            )
        if not is_differentiable_dtype(value._data.dtype):
            raise ValueError(
                f"Expected {name} to be floating point or complex, but got: {_torch_name(value)}"
            )
    checked_tangent(tensor, tangent)
    if tangent_of(tensor) is not None:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at "
            f"the same level {LEVEL.index} is not supported."
        )
    dual = _alias(tensor)
    if dual.grad_fn is not None:  # a node the learner did not write: pictures say why it is there
        dual.grad_fn.metadata["origin"] = "a view made by make_dual"
        dual.grad_fn.metadata["dual_of_input"] = True  # pictures call it by its primal's name
    _attach(dual, tangent)
    return dual


def checked_tangent(tensor: Tensor, tangent: Tensor) -> Tensor:
    """``tangent``, if it may be ``tensor``'s: of its shape (PyTorch's error otherwise)."""
    if tangent.shape != tensor.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}."
        )
    return tangent


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)``: the primal as a view without tangent, the tangent or None."""
    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"_unpack_dual(): argument 'dual' (position 1) must be Tensor, not "
            f"{type(tensor).__name__}"
        )
    _check_level(level, "_unpack_dual")
    tangent = tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_alias(tensor), tangent)


def tangent_of(t: Tensor) -> Tensor | None:
    """The tangent ``t`` carries at the level in use, or None."""
    held = t._forward_grad
    if held is None or LEVEL is None or held[0] is not LEVEL:
        return None
    return held[1]


def make_tangent(t: Tensor, tangent: Tensor) -> None:
    """Give ``t`` the tangent another tensor of the same value has (the engine's copies:
    a checkpoint's recomputed values, a saved output rebuilt for backward)."""
    if LEVEL is not None:
        _attach(t, tangent)


def take_tangent(t: Tensor, source: Tensor) -> None:
    """``t`` now holds ``source``'s values (an in-place op wrote them): its tangent too."""
    tangent = tangent_of(source)
    if tangent is not None:
        _attach(t, tangent)
    elif tangent_of(t) is not None:
        del t._forward_grad


def _attach(t: Tensor, tangent: Tensor) -> None:
    t._forward_grad = (LEVEL, tangent)
    LEVEL.duals.append(weakref.ref(t))


def _alias(t: Tensor) -> Tensor:
    """A view of ``t`` with the same values and history (PyTorch's make_dual is a view)."""
    from ..ops.shape import view

    with suspended():
        return view(t, tuple(t.shape))


def _check_level(level: int | None, where: str) -> None:
    if level is not None and (LEVEL is None or level != LEVEL.index):
        raise RuntimeError(f"Invalid level given to {where}")


def _torch_name(t: Tensor) -> str:
    return "torch." + str(t.dtype)


# ------------------------------------------------------- tangents through ops
class JvpCall(
    namedtuple("JvpCall", "op args out attrs needs_input_grad carried", defaults=(None,))
):
    """What a JVP rule reads about the call: the op, its inputs, its output, its attrs,
    and which inputs move (``needs_input_grad``: the names a gradient rule reads, so that
    a rule may call the op's gradient rule where the two formulas are one).

    ``carried``: which inputs carry a tangent of their own; the others (a constant, a
    Python number) move by a zero filled in for them (``product_term`` says why a rule may
    care). None: those that move."""

    def carries(self, i: int) -> bool:
        return (self.needs_input_grad if self.carried is None else self.carried)[i]


def same_op(orig: JvpCall, tangents: list, moving: tuple | None = None) -> Tensor:
    """The op itself, run on the tangents: ẏ for an op that is linear in its inputs
    (reshape, sum, cat, conv2d in one of its operands...).

    ``moving``: the positions that take their tangents (default: every input that has
    one); the others keep their primal value (indices, targets, a shape-only input).
    """
    from .dispatch import apply_op

    if moving is None:
        moving = tuple(i for i, t in enumerate(tangents) if t is not None)
    inputs = tuple(t if i in moving else x for i, (x, t) in enumerate(zip(orig.args, tangents)))
    return apply_op(orig.op, inputs, orig.attrs or None)


class suspended:
    """No tangents while a JVP rule runs: the rule's own ops compute ẏ from ẋ, and their
    results are plain tensors (tangents of tangents would be a second level).

    Nor is the rule's work part of a checkpoint: its ops are not taped by a marker stage
    and what they save is not packed by saved-tensor hooks (a checkpoint's recomputation
    must save what its forward pass saved, dual level or not).
    """

    def __enter__(self) -> None:
        global LEVEL
        self.level, LEVEL = LEVEL, None
        self.hooks, self.recorder = state.saved_hooks.stack, state.stage.record
        if self.hooks:
            state.push_saved_hooks((_unchanged, _unchanged))  # innermost: the user's skip
        if self.recorder is not None:
            state.set_stage_recorder(None)

    def __exit__(self, *exc) -> None:
        global LEVEL
        LEVEL = self.level
        if self.hooks:
            state.pop_saved_hooks()
        if self.recorder is not None:
            state.set_stage_recorder(self.recorder)


def _unchanged(t: Tensor) -> Tensor:
    """A pack and unpack hook that keeps the tensor as it is."""
    return t


def push_tangent(op, inputs: tuple, attrs, result: Tensor, node) -> None:
    """Give ``result`` its tangent, ẏ = the op's JVP rule applied to its inputs' tangents.

    Called by ``apply_op`` for every op inside a dual level. Nothing happens when no input
    carries a tangent, or when the op has no derivative (a comparison, argmax: no tangent,
    as in PyTorch).
    """
    tangents = [tangent_of(x) if isinstance(x, Tensor) else None for x in inputs]
    if not op.differentiable or all(t is None for t in tangents):
        return
    if not is_differentiable_dtype(result._data.dtype):
        return  # an integer or bool output (x.long()) carries no tangent, as in PyTorch
    if op.jvp is None:
        raise NotImplementedError(
            f"Trying to use forward AD with {op.name} that does not support it because it "
            "has no JVP rule"
        )
    filled = [tangent_or_zeros(x, t) for x, t in zip(inputs, tangents)]
    with suspended():
        moving = tuple(t is not None for t in filled)
        call = JvpCall(
            op, inputs, result, attrs or {}, moving, tuple(t is not None for t in tangents)
        )
        tangent = op.jvp(call, filled)
        if tangent is None:
            return
        tangent = _fit(op, tangent, result)
    _attach(result, tangent)
    saved_out = getattr(node, "saved_out", None)
    if saved_out is not None and hasattr(saved_out, "keep_tangent"):
        saved_out.keep_tangent(tangent)


def _fit(op, tangent: Tensor, result: Tensor) -> Tensor:
    """ẏ in y's shape (a rule's sum of terms may broadcast less: ẏ = ȧ + 0 for a + b with a
    constant b of a bigger shape) and kind: real for a real y, complex for a complex y."""
    from ..ops import astype, expand, real

    if tangent.shape != result.shape:
        try:
            tangent = expand(tangent, tuple(result.shape))
        except RuntimeError as err:
            raise RuntimeError(
                f"the JVP rule of {op.name} gave a tangent of shape {tuple(tangent.shape)} "
                f"for an output of shape {tuple(result.shape)}"
            ) from err
    y_complex, t_complex = result.dtype.kind == "c", tangent.dtype.kind == "c"
    if t_complex and not y_complex:
        return real(tangent)
    if y_complex and not t_complex:
        return astype(tangent, result.dtype)
    return tangent


def tangent_or_zeros(x, tangent: Tensor | None) -> Tensor | None:
    """A float or complex input without a tangent moves by zero; anything else has none."""
    if tangent is not None or not isinstance(x, Tensor):
        return tangent
    if not is_differentiable_dtype(x._data.dtype):
        return None
    return Tensor._make(backend.xp(x._data).zeros_like(x._data))


def restore_tangent(saved, out: Tensor) -> None:
    """A saved output, rebuilt for backward, gets back the tangent it had (forward over
    reverse: the gradient rule's ops then carry tangents too)."""
    tangent = getattr(saved, "tangent_kept", None)  # (a slot, set only by keep_tangent)
    if tangent is not None and tangent[0] is LEVEL:
        _attach(out, tangent[1])


def product_term(call: JvpCall, i: int, tangent: Tensor | None, factor) -> Tensor | None:
    """``tangent · factor``: the term of input ``i`` in a product rule (ẏ = ȧ·b + a·ḃ).

    An input that carries no tangent (a constant, a Python number) moves by PyTorch's
    *zero tensor*: its term is exactly 0 whatever ``factor`` holds (0 · ∞ is 0 there, not
    NaN), and it is still recorded on the tape of ``factor``: through the tangent, what
    ``factor`` depends on gets a gradient of 0 from PyTorch rather than none.
    """
    if call.carries(i):
        return tangent * factor
    if not (isinstance(factor, Tensor) and factor.requires_grad):
        return None  # 0, and nothing to record
    from ..ops import where

    shape = () if tangent is None else tuple(tangent.shape)
    never = Tensor._make(backend.xp(factor._data).zeros(shape, dtype=bool))
    return where(never, factor, 0.0)  # 0, recorded as depending on factor


def sum_of_terms(terms: list) -> Tensor:
    """The sum of a rule's terms, leaving out those of inputs without a tangent (a Python
    number: ḃ does not exist, rather than being 0)."""
    present = [t for t in terms if t is not None]
    total = present[0]
    for term in present[1:]:
        total = total + term
    return total


# Last: tensor.py imports the ops, and the ops import this module's helpers above.
from ..core.tensor import Tensor, is_differentiable_dtype  # noqa: E402
