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

``apply_op`` (dispatch.py) pays one check per op for all of this: ``if LEVELS``.
Outside a dual level nothing here runs. A JVP rule is built from differentiable ops, so
a tangent has a history of its own when its primal does: reverse mode can differentiate
it, and a backward pass run inside a dual level carries tangents (forward over reverse,
how Hessian-vector products are made).

**Levels nest**, as torch.func's ``jvp`` inside ``jvp`` (``jacfwd(jacfwd(f))``): each
level is a separate direction ε₁, ε₂, ..., and a tensor holds one tangent per level
(``Tensor._forward_grad``, a dict). The JVP rule of level k runs with only the levels
outside k in use, so the tangent it makes is itself a dual number of those outer
levels: x + ẋ₁ε₁ + (ẋ₂ + ẍ ε₁)ε₂ is stored as {level 1: ẋ₁, level 2: ẋ₂ carrying ẍ at
level 1}. A level never sees another level's tangents as its own, so d/dx [x · d/dy (x + y)]
is 1, not 2 (no *perturbation confusion*). One level is the same road with one entry.

As in PyTorch 2.13, ``dual_level()`` itself does not nest: only ``wb.func.jvp`` opens
a level inside another (``transform_level``). When a level ends, every tensor made dual
in it loses its tangent at that level.
"""

from __future__ import annotations

import weakref
from collections import namedtuple
from collections.abc import Callable
from typing import NamedTuple

from ..core import backend, state

# The dual levels in use, outermost first; apply_op checks ``if LEVELS`` once per op. One
# list for the whole process, not one per thread: PyTorch keeps its forward levels in one
# global list too (a tangent made in one thread is seen in another), unlike grad mode.
# While the JVP rule of a level runs, the list holds only the levels outside it.
LEVELS: list[DualLevel] = []


class DualLevel:
    """One level: the tensors that got a tangent in it, to be cleared at its end."""

    def __init__(self, index: int, by_transform: bool) -> None:
        self.index = index
        self.by_transform = by_transform  # opened by wb.func.jvp (may hold another jvp's)
        self.duals: list[weakref.ref] = []

    def clear(self) -> None:
        for ref in self.duals:
            t = ref()
            if t is not None and t._forward_grad is not None:
                t._forward_grad.pop(self, None)
                if not t._forward_grad:
                    del t._forward_grad  # back to the class default, None
        self.duals.clear()


class UnpackedDualTensor(NamedTuple):
    """``unpack_dual``'s answer: the primal, and the tangent (None for a plain tensor)."""

    primal: Tensor
    tangent: Tensor | None


# ------------------------------------------------------------------- the levels
NESTED = "Nested forward mode AD is not supported at the moment"


def enter_dual_level() -> int:
    """Start a dual level; returns its index. As in PyTorch, not inside another level
    (nor inside a ``wb.func.jvp``): nesting is the transforms' job."""
    if LEVELS:
        raise RuntimeError(NESTED)
    return _enter(by_transform=False)


def exit_dual_level(*, level: int | None = None) -> None:
    """End the innermost dual level: its dual tensors lose their tangents at it."""
    if not LEVELS or (level is not None and level != LEVELS[-1].index):
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. "
            "This is not supported."
        )
    LEVELS.pop().clear()


def _enter(by_transform: bool) -> int:
    LEVELS.append(DualLevel(len(LEVELS), by_transform))
    return LEVELS[-1].index


class dual_level:
    """Context manager for a dual level: ``with dual_level(): ...``; tangents live inside."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


class transform_level(dual_level):
    """``wb.func.jvp``'s level: inside another jvp's it opens a level of its own (each
    jvp its own direction, as torch.func's levels); inside a ``dual_level()`` it is
    refused, as PyTorch refuses it."""

    def __enter__(self) -> int:
        if LEVELS and not LEVELS[-1].by_transform:
            raise RuntimeError(NESTED)
        return _enter(by_transform=True)


def current_level() -> DualLevel | None:
    """The innermost level in use (the one ``make_dual`` and ``unpack_dual`` work at)."""
    return LEVELS[-1] if LEVELS else None


# ------------------------------------------------------------- dual tensors
def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` that carries ``tangent`` (ẋ) forward through every op.

    As in PyTorch: only inside a dual level; the primal and the tangent are floating
    point or complex and of one shape; the primal has no tangent at this level yet (it
    keeps those it has at outer levels: ``jvp`` inside ``jvp``).
    """
    _check_level(level, "_make_dual")
    if not LEVELS:
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
            f"the same level {LEVELS[-1].index} is not supported."
        )
    dual = _alias(tensor)
    if dual.grad_fn is not None:  # a node the learner did not write: pictures say why it is there
        dual.grad_fn.metadata["origin"] = "a view made by make_dual"
        dual.grad_fn.metadata["dual_of_input"] = True  # pictures call it by its primal's name
    make_tangent(dual, tangent)
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
    """``(primal, tangent)`` at the innermost level: the primal as a view without that
    tangent (with the outer levels' ones), the tangent or None."""
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


def tangent_of(t: Tensor, level: DualLevel | None = None) -> Tensor | None:
    """The tangent ``t`` carries at ``level`` (default: the innermost in use), or None."""
    level = level or current_level()
    held = t._forward_grad
    return None if held is None or level is None else held.get(level)


def tangents_of(t: Tensor) -> dict:
    """``{level: tangent}`` for the levels in use at which ``t`` has a tangent."""
    held = t._forward_grad or {}
    return {level: held[level] for level in LEVELS if level in held}


def make_tangent(t: Tensor, tangent: Tensor, level: DualLevel | None = None) -> None:
    """Give ``t`` the tangent ``tangent`` at ``level`` (default: the innermost in use)."""
    level = level or current_level()
    if t._forward_grad is None:
        t._forward_grad = {}
    t._forward_grad[level] = tangent
    level.duals.append(weakref.ref(t))


def give_tangents(t: Tensor, tangents: dict) -> None:
    """Give ``t`` the tangents of ``tangents_of(another tensor of the same value)`` that
    are at levels still in use (the engine's copies: a checkpoint's recomputed values, a
    saved output rebuilt for backward)."""
    for level, tangent in tangents.items():
        if level in LEVELS:
            make_tangent(t, tangent, level)


def carry_tangents(source: Tensor, target: Tensor, convert: Callable | None = None) -> None:
    """``target`` (made from ``source`` outside the ops: batched, detached, scaled) gets
    ``source``'s tangent at every level in use, each passed through ``convert`` as
    ``source`` was. ``convert`` runs with only the levels outside the tangent's in use:
    a tangent is a dual number of those (see the module's docstring), and a ``convert``
    that carries tangents itself converts them too."""
    for level, tangent in tangents_of(source).items():
        if convert is not None:
            with suspended(level):
                tangent = convert(tangent)
        make_tangent(target, tangent, level)


def take_tangent(t: Tensor, source: Tensor) -> None:
    """``t`` now holds ``source``'s values (an in-place op wrote them): its tangents too,
    at every level in use (a level where ``source`` has none leaves ``t`` without one)."""
    for level in LEVELS:
        tangent = tangent_of(source, level)
        if tangent is not None:
            make_tangent(t, tangent, level)
        elif tangent_of(t, level) is not None:
            del t._forward_grad[level]


def _alias(t: Tensor) -> Tensor:
    """A view of ``t`` with the same values and history (PyTorch's make_dual is a view),
    and ``t``'s tangents at the levels outside the innermost."""
    from ..ops.shape import view

    with suspended(current_level()):
        return view(t, tuple(t.shape))


def _check_level(level: int | None, where: str) -> None:
    if level is not None and (not LEVELS or level != LEVELS[-1].index):
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
    """Only the levels outside ``level`` in use while a JVP rule of ``level`` runs (none
    at all for ``level=None``): the rule's own ops compute ẏ from ẋ, and their results
    carry tangents of the outer levels only (a second derivative, when levels nest).

    Nor is the rule's work part of a checkpoint: its ops are not taped by a marker stage
    and what they save is not packed by saved-tensor hooks (a checkpoint's recomputation
    must save what its forward pass saved, dual level or not).
    """

    def __init__(self, level: DualLevel | None = None) -> None:
        self.outside = LEVELS.index(level) if level is not None else 0

    def __enter__(self) -> None:
        self.levels = LEVELS[:]
        del LEVELS[self.outside :]
        self.hooks, self.recorder = state.saved_hooks.stack, state.stage.record
        if self.hooks:
            state.push_saved_hooks((_unchanged, _unchanged))  # innermost: the user's skip
        if self.recorder is not None:
            state.set_stage_recorder(None)

    def __exit__(self, *exc) -> None:
        LEVELS[:] = self.levels
        if self.hooks:
            state.pop_saved_hooks()
        if self.recorder is not None:
            state.set_stage_recorder(self.recorder)


def _unchanged(t: Tensor) -> Tensor:
    """A pack and unpack hook that keeps the tensor as it is."""
    return t


def push_tangent(op, inputs: tuple, attrs, result: Tensor, node) -> None:
    """Give ``result`` its tangent at every level in use, outermost first (the rule of an
    inner level may read the output, whose outer tangents must be there by then).

    Called by ``apply_op`` for every op inside a dual level. Nothing happens when no input
    carries a tangent, or when the op has no derivative (a comparison, argmax: no tangent,
    as in PyTorch).
    """
    if op.differentiable and is_differentiable_dtype(result._data.dtype):
        for level in tuple(LEVELS):
            _push_at(level, op, inputs, attrs, result, node)


def _push_at(level: DualLevel, op, inputs: tuple, attrs, result: Tensor, node) -> None:
    """ẏ at ``level`` = the op's JVP rule applied to its inputs' tangents at ``level``.

    (An integer or bool output, ``x.long()``, carries no tangent, as in PyTorch: see
    ``push_tangent``.)"""
    tangents = [tangent_of(x, level) if isinstance(x, Tensor) else None for x in inputs]
    if all(t is None for t in tangents):
        return
    if op.jvp is None:
        raise NotImplementedError(
            f"Trying to use forward AD with {op.name} that does not support it because it "
            "has no JVP rule"
        )
    filled = [tangent_or_zeros(x, t) for x, t in zip(inputs, tangents)]
    with suspended(level):
        moving = tuple(t is not None for t in filled)
        call = JvpCall(
            op, inputs, result, attrs or {}, moving, tuple(t is not None for t in tangents)
        )
        tangent = op.jvp(call, filled)
        if tangent is None:
            return
        tangent = _fit(op, tangent, result)
    make_tangent(result, tangent, level)
    saved_out = getattr(node, "saved_out", None)
    if saved_out is not None and hasattr(saved_out, "keep_tangent"):
        saved_out.keep_tangent(level, tangent)


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
    """A saved output, rebuilt for backward, gets back the tangents it had (forward over
    reverse: the gradient rule's ops then carry tangents too)."""
    kept = getattr(saved, "tangent_kept", None)  # (a slot, set only by keep_tangent)
    if kept is not None:
        give_tangents(out, kept)


def product_term(call: JvpCall, i: int, tangent: Tensor | None, factor) -> Tensor | None:
    """``tangent · factor``: the term of input ``i`` in a product rule (ẏ = ȧ·b + a·ḃ).

    An input that carries no tangent (a constant, a Python number) moves by PyTorch's
    *zero tensor* Z: its term Z · factor is exactly 0 whatever ``factor`` holds (0 · ∞ is
    0 there, not NaN), and it is still recorded on the tape of ``factor``: through the
    tangent, what ``factor`` depends on gets a gradient of 0 from PyTorch rather than
    none. It is a product, so under an outer dual level its own tangent has a zero term
    on ``factor``'s tape too (PyTorch's, in forward over forward).
    """
    if call.carries(i):
        return tangent * factor
    from ..ops import where
    from .graph import on_some_tape

    if not (isinstance(factor, Tensor) and on_some_tape(factor)):
        return None  # 0, and nothing to record

    shape = () if tangent is None else tuple(tangent.shape)
    zero = Tensor._make(backend.xp(factor._data).zeros(shape, dtype=bool))  # Z (False: 0)
    return zero * where(zero, factor, 0.0)  # 0 (never NaN), recorded as depending on factor


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
