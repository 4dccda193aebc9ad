"""In-place ops: write into the tensor's own memory, bump its version, rebase its history.

When nothing needs recording, an in-place op just writes. When it does, the op is
computed out of place on an *alias* of the tensor (same memory and history, another
object), the result is written back into the tensor's memory (so views see it), and
the tensor's ``grad_fn`` moves to the new node: its history now ends with the op.
The version counter catches any saved tensor that the write made stale.

Through a view (``y[1].mul_(2)``, ``y.t().add_(1)``) the change is a change of the
base: the base gets a new history (its old values with the view's region replaced),
and the view's history is then replayed from the base's new history.
"""

from __future__ import annotations

import numpy as np

from ..core import checks, state
from ..core.tensor import Tensor
from ..record import forward_ad, grad_mode
from ..record.graph import on_some_tape, set_history


def check_inplace(t: Tensor, writes_through_view: bool = False) -> None:
    """PyTorch's refusals: leaves that require grad, their views, inference tensors.

    ``x[i] = v`` writes through the view ``x[i]``, so on a leaf it gets the view message.
    """
    if t._is_inference and not state.grad_mode.inference:
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not allowed"
        )
    if not state.grad_mode.records:
        return
    base = t._base
    leaf_view = base is not None and base._grad_fn is None and base._requires_grad
    if t._grad_fn is None and t._requires_grad and not writes_through_view and not leaf_view:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation."
        )
    if leaf_view or (t._grad_fn is None and t._requires_grad):
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        )


def alias(t: Tensor) -> Tensor:
    """Another tensor object with the same memory, version counter and history."""
    t._refresh_view()
    a = Tensor._make(t._data, t._requires_grad, t._grad_fn, t._output_nr)
    a._version_ref = t._version_ref
    if forward_ad.LEVELS:
        forward_ad.take_tangent(a, t)
    return a


def snapshot(t: Tensor) -> Tensor:
    """The tensor's current values (copied) and history: the input an in-place op computes on.

    The write that follows changes ``t``'s memory, not this copy, so a rule that saved its
    input (``mul_`` saves it for the other operand's gradient) still sees the old values.
    PyTorch does the same by saving a clone of the original ``self``.
    """
    t._refresh_view()
    copy = Tensor._make(t._data.copy(), t._requires_grad, t._grad_fn, t._output_nr)
    if forward_ad.LEVELS:  # the op computes t's new tangent from its old one
        forward_ad.take_tangent(copy, t)
    return copy


def _recording(t: Tensor, others) -> bool:
    if not state.grad_mode.records:
        return False
    return on_some_tape(t) or any(isinstance(o, Tensor) and on_some_tape(o) for o in others)


def _write(t: Tensor, result: Tensor, op_name: str) -> None:
    _check_result(t, result, op_name)
    if state.in_use.tracers and state.tracing.tracer is not None:
        state.tracing.tracer.write(t, result)  # a program: t holds result's value from now on
    try:
        np.copyto(t._data, result._data, casting="same_kind")
    except ValueError as err:
        raise RuntimeError(f"{op_name}: cannot write into this tensor in place: {err}") from err
    t._bump_version()
    if forward_ad.LEVELS:  # inside a dual level the tangent is written too
        forward_ad.take_tangent(t, result)


def _check_result(t: Tensor, result: Tensor, op_name: str) -> None:
    """An in-place result must keep the tensor's shape and cast to its dtype."""
    if result.shape != t.shape:
        raise RuntimeError(
            f"{op_name}: output with shape {list(t.shape)} doesn't match the broadcast shape "
            f"{list(result.shape)}"
        )
    check_cast(op_name, result.dtype, t)


def check_cast(op_name: str, dtype, t: Tensor) -> None:
    """PyTorch's rule for writing a result of ``dtype`` into ``t``: a float into an
    integer tensor, a complex into a real one or a number into a bool one is refused.
    (An op whose kernel refuses some dtypes checks this first, as PyTorch's in-place
    ops do: ``long_x &= 1.5`` is this RuntimeError, not bitwise_and's refusal of floats.)"""
    if not np.can_cast(dtype, t.dtype, casting="same_kind"):
        raise RuntimeError(
            f"{op_name}: result type {dtype} can't be cast to the desired output type {t.dtype}"
        )


def _rebase(t: Tensor, result: Tensor) -> None:
    """``t``'s history now ends with the node that produced ``result``."""
    node = result._grad_fn
    if node is None:
        return
    set_history(t, node, result._output_nr)
    if hasattr(node, "_output_ref"):
        import weakref

        node._output_ref = weakref.ref(t)
    if t._retains_grad:
        node._retain(t)


# How to put a changed view back into its parent, for each view op: the parent's values
# with the view's region replaced, as a differentiable expression.
def _put_back_getitem(parent: Tensor, values: Tensor, attrs: dict) -> Tensor:
    from .. import ops

    return ops.index_put(parent, attrs["key"], values)


def _put_back_reshape(parent: Tensor, values: Tensor, attrs: dict) -> Tensor:
    from .. import ops

    return ops.reshape(values, parent.shape)


def _put_back_permute(parent: Tensor, values: Tensor, attrs: dict) -> Tensor:
    from .. import ops

    return ops.permute(values, tuple(int(i) for i in np.argsort(attrs["dims"])))


PUT_BACK = {
    "getitem": _put_back_getitem,
    "reshape": _put_back_reshape,
    "view": _put_back_reshape,
    "unsqueeze": _put_back_reshape,
    "squeeze": _put_back_reshape,
    "permute": _put_back_permute,
    "transpose": _put_back_permute,
    "t": _put_back_permute,
}


def _through_view(view: Tensor, new_values: Tensor, op_name: str) -> Tensor:
    """Write ``new_values`` into ``view`` by giving its parent (and so its base) a new history."""
    op, inputs, attrs, _ = view._view_of
    put_back = PUT_BACK.get(op.name)
    if put_back is None:
        raise RuntimeError(
            f"{op_name}: in-place operation on a view made by '{op.name}' of a tensor that "
            "takes part in autograd is not supported; use the out-of-place form (for example "
            "y = y + 1)"
        )
    _check_result(view, new_values, op_name)
    from .. import ops
    from ..record.dispatch import replay_view

    parent = inputs[0]
    whole = put_back(alias(parent), ops.astype(new_values, view.dtype), attrs)
    if parent._view_of is not None:
        _through_view(parent, whole, op_name)
    else:
        _write(parent, whole, op_name)
        _rebase(parent, whole)
    replay_view(view)  # even a view that had no history has one now
    return view


def apply(t: Tensor, fn, *args, **kwargs) -> Tensor:
    """``t.op_(*args)``: run ``fn(t, *args)`` and write the result into ``t``."""
    name = getattr(fn, "__name__", "op") + "_"
    check_inplace(t)
    if t._view_of is not None and forward_ad.LEVELS:  # the base's tangent changes
        return _through_view(t, fn(snapshot(t), *args, **kwargs), name)
    if not _recording(t, args):
        with grad_mode.no_grad():
            result = fn(t, *args, **kwargs)
        _write(t, result, name)
        return t
    if t._view_of is not None:
        return _through_view(t, fn(snapshot(t), *args, **kwargs), name)
    result = fn(snapshot(t), *args, **kwargs)
    _write(t, result, name)
    _rebase(t, result)
    return t


def add_scaled(t: Tensor, other, alpha, fn, ufunc) -> Tensor:
    """``t.add_(other, alpha=a)`` or ``t.sub_(...)`` (``fn`` is ops.add or ops.sub,
    ``ufunc`` np.add or np.subtract).

    When nothing records or traces and ``other`` is a numpy tensor of ``t``'s shape and
    dtype (an optimizer's update), numpy writes straight into ``t``'s memory: no
    out-of-place result to copy back. Anything else takes the general path, :func:`apply`.
    """
    check_inplace(t)
    direct = (
        not _recording(t, (other,))
        and not forward_ad.LEVELS
        and state.tracing.tracer is None  # a trace writes the op down (apply)
        and isinstance(other, Tensor)
        and type(t._data) is np.ndarray
        and type(other._data) is np.ndarray
        and other._data.shape == t._data.shape
        and other._data.dtype == t._data.dtype
        and isinstance(alpha, (int, float))
        and t._data.flags.writeable
    )
    if not direct:
        return apply(t, fn, other, alpha=alpha)
    scaled = other._data if alpha == 1 else np.multiply(other._data, alpha)
    ufunc(t._data, scaled, out=t._data)
    t._bump_version()  # the version, and the global write count that traces watch
    return t


def setitem(t: Tensor, key, value) -> None:
    """``t[key] = value``; records an index_put node when gradients are involved."""
    from .. import ops

    check_inplace(t, writes_through_view=True)
    checks.operand("setitem", "value", value)
    direct = not _recording(t, (value,)) and not forward_ad.LEVELS  # (tangents: index_put)
    if direct and not state.transforms.levels:  # (a vmap's batches: index_put's rule)
        array = value._data if isinstance(value, Tensor) else value
        index = ops.shape.index_key(key, t._data, "setitem")
        try:
            t._data[index] = array
        except IndexError as err:
            raise IndexError(
                f"setitem: {err} (tensor shape {tuple(t.shape)}, key {key!r})"
            ) from None
        except ValueError as err:
            raise RuntimeError(
                f"setitem: shape mismatch: a value of shape {np.shape(array)} cannot be written "
                f"into x[{key!r}] of shape {t._data[index].shape} (tensor shape "
                f"{tuple(t.shape)}): {err}"
            ) from None
        t._bump_version()
        return
    new = ops.index_put(alias(t), key, value)
    if t._view_of is not None:
        _through_view(t, new, "setitem")
        return
    _write(t, new, "setitem")
    _rebase(t, new)


def fill(t: Tensor, value) -> Tensor:
    """Write ``value`` (a tensor that broadcasts to ``t``) into ``t``: the gradient to the
    old values is zero."""
    from .. import ops

    # The condition is a constant True, made on the tensor's device (where meets a there).
    return apply(t, lambda a, v: ops.where(Tensor(True, device=a.device), v, a), value)


def fill_(t: Tensor, value) -> Tensor:
    """``t.fill_(value)`` / ``t.zero_()``: ``value`` is a number ``t``'s dtype can hold or
    a 0-d tensor, as PyTorch's ``fill_`` takes."""
    from .indexing import fill_value

    return fill(t, fill_value("fill_", value, t, t.numel()))


def copy(t: Tensor, src) -> Tensor:
    """``t.copy_(src)``: the gradient flows to ``src`` only (broadcast, cast)."""
    from .. import ops

    src = src if isinstance(src, Tensor) else Tensor(src, device=t.device)  # data: t's device

    def copy_values(a, s):
        return ops.astype(ops.expand(s, a.shape), a.dtype)

    return apply(t, copy_values, src)
