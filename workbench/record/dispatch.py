"""Calling an op: check the arguments, run its kernel, record a node if grad mode asks
for one, publish an event if someone listens (:func:`apply_op`).

This is the hot path of the whole engine, so it does nothing it can skip: no node when
nothing requires grad, no event object when nobody listens.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..core import backend, checks, events, state
from ..core.tensor import Tensor, get_default_dtype, is_differentiable_dtype
from . import forward_ad, grad_mode, memory
from .graph import Node, OpNode, SavedTensor, set_history


class OpError(RuntimeError):
    """An op was called with inputs it cannot take; the message names the op and shapes."""


class OpIndexError(OpError, IndexError):
    """An index out of range: still an IndexError, as Python (and PyTorch) code expects."""


def describe_inputs(inputs) -> str:
    parts = []
    for x in inputs:
        if isinstance(x, Tensor):
            parts.append(f"{tuple(x.shape)} {x.dtype}")
        else:
            parts.append(repr(x))
    return ", ".join(parts)


def broadcast_mismatch(shapes) -> str | None:
    """PyTorch's sentence for the first dimension where two of ``shapes`` cannot broadcast."""
    names = "abcdefgh"
    for i, a in enumerate(shapes):
        for j in range(i + 1, len(shapes)):
            b = shapes[j]
            ndim = max(len(a), len(b))
            for back in range(1, min(len(a), len(b)) + 1):
                size_a, size_b = a[-back], b[-back]
                if size_a != size_b and 1 not in (size_a, size_b):
                    return (
                        f"the size of tensor {names[i]} ({size_a}) must match the size of "
                        f"tensor {names[j]} ({size_b}) at non-singleton dimension {ndim - back}"
                    )
    return None


# The names PyTorch's signatures give the inputs that kernels call ``a``, ``b`` and ``x``:
# an error names the argument the user wrote (``x * 2**70``: ``other``).
PYTORCH_NAMES = {"a": "input", "x": "input", "b": "other"}


def argument_name(op, position: int) -> str:
    name = op.input_names[position]
    return PYTORCH_NAMES.get(name, name)


def _int_error(op, inputs, value: int) -> Exception:
    """A Python int beyond 64 bits: PyTorch's OverflowError where a number may stand
    (``x * 2**70``), its TypeError where a tensor must (``wb.abs(2**70)``: no tensor)."""
    position = next(i for i, given in enumerate(inputs) if given is value)
    name = argument_name(op, position)
    if not any(isinstance(x, Tensor) for x in inputs):
        return TypeError(f"{op.name}(): argument '{name}' must be Tensor, not int")
    return checks.int_overflow(op.name, name, value)


def op_error(op, inputs, err: Exception) -> Exception:
    """The error to raise when ``op``'s kernel failed with ``err``, naming the op and inputs.

    Only the failure path comes here, so it may look closely at what went wrong. An input
    that is not a tensor or a number (a string, a list) is PyTorch's TypeError; otherwise
    the inputs were fine and their shapes or dtypes were not: an IndexError stays one,
    the rest is PyTorch's RuntimeError.
    """
    for i, x in enumerate(inputs):
        # None stands for an input left out (no bias); the kernel failing on it names it
        left_out = x is None and isinstance(err, (TypeError, AttributeError))
        if left_out or not isinstance(x, (Tensor, int, float, complex, np.generic, type(None))):
            return TypeError(
                f"{op.name}(): argument '{argument_name(op, i)}' must be Tensor, not "
                f"{type(x).__name__}"
            )
    message = str(err)
    if "could not be broadcast" in message:
        shapes = [tuple(x.shape) for x in inputs if isinstance(x, Tensor)]
        message = broadcast_mismatch(shapes) or "shapes cannot be broadcast together"
    kind = OpIndexError if isinstance(err, IndexError) else OpError
    return kind(f"{op.name}: {message} (inputs: {describe_inputs(inputs)})")


def float_input(x: Tensor, op: str) -> Tensor:
    """The input of a floating-point function (``exp``, ``sigmoid``...): integers become
    the default float dtype; anything but a Tensor is a TypeError, as in PyTorch."""
    if not isinstance(x, Tensor):
        checks.tensor_arg(op, "input", x)  # raises
    if not is_differentiable_dtype(x._data.dtype):
        x = x.to(get_default_dtype())  # the astype op (no history: an integer has none)
    return x


def apply_op(op, inputs: tuple, attrs: dict | None = None) -> Tensor:
    """Run ``op`` on ``inputs`` (Tensors or Python numbers) and return its result. Its jobs:

    - inside ``wb.func.vmap``, a batched input sends the call to the op's batching rule;
    - the inputs' arrays are taken (a view first catches up with a base that changed);
      a Python int beyond int64, or arrays on two devices, are refused;
    - the kernel runs with numpy's floating-point warnings off (inf and NaN are values,
      as in PyTorch), and numpy's errors become the op's own;
    - a node is recorded when grad mode records and an input requires grad (a
      checkpoint stage tapes it first); a view is linked to its base;
    - inside a dual level (forward mode), the output's tangent is pushed;
    - the call goes to the program tracer while ``wb.program.trace`` runs, and to the
      widgets as an event if someone listens."""
    if state.in_use.vmaps and (batched := vmap_call(op, inputs, attrs)) is not None:
        return batched  # a wb.func.vmap runs: a batched input went to its batching rule
    recording = state.grad_mode.records
    arrays, requires_grad = [], False
    for x in inputs:
        if isinstance(x, Tensor):
            if x._view_of is not None and not x._requires_grad and (recording or op.view):
                x._refresh_view()  # a view whose base may have gained a history
            arrays.append(x._data)
            requires_grad = requires_grad or x._requires_grad
        elif type(x) is int and not checks.INT_LOW <= x <= checks.INT_HIGH:
            raise _int_error(op, inputs, x)
        else:
            arrays.append(x)
    if backend.gpu_in_use:  # CPU-only runs skip the device check entirely
        backend.check_same_device(op.name, arrays)
    try:
        run = backend.quiet.run
        out = run(op.forward, *arrays, **attrs) if attrs else run(op.forward, *arrays)
    except (ValueError, IndexError, TypeError, AttributeError) as err:
        raise op_error(op, inputs, err) from err
    if type(out) is not np.ndarray and isinstance(out, np.generic):  # (ndarray: one test)
        out = np.asarray(out)  # a numpy scalar, from a kernel on 0-d arrays
    result = Tensor._make(out)
    node = None
    if requires_grad and recording:  # (not recording: no node, and maybe inference mode)
        if records_node(op, result):
            record = (state.in_use.stages and state.stage.record) or OpNode  # a stage tapes first
            node = record(op, inputs, attrs, result)
    elif state.in_use.inference and state.grad_mode.inference:
        result._is_inference = True
    if op.view:
        link_view(result, op, inputs, attrs, recording)
    if forward_ad.LEVELS:  # inside a dual level: the output's tangent
        forward_ad.push_tangent(op, inputs, attrs, result, node)
    if state.in_use.tracers and state.tracing.tracer is not None:  # wb.program.trace runs
        state.tracing.tracer.record(op, inputs, attrs, result)
    if events.listening:
        _publish_op(op, inputs, attrs, result, node)
    return result


def records_node(op, result: Tensor) -> bool:
    """Whether a call of ``op`` that grad mode records, with an input that requires grad,
    goes on the graph: the op has a derivative, and its output can carry a gradient. Only
    a floating-point or complex output can: an op whose output is an integer or bool
    tensor (``x.long()``, ``x.bool()``) ends the graph, as in PyTorch. (vmap's batched
    calls ask the same question: func/batching.py.)"""
    return op.differentiable and is_differentiable_dtype(result._data.dtype)


def vmap_call(op, inputs: tuple, attrs: dict | None) -> Tensor | None:
    """``op`` run by its batching rule inside a ``wb.func.vmap``; None when no input is
    batched (imported here: the batching rules call ops themselves)."""
    from ..func.batching import batched_call

    return batched_call(op, inputs, attrs)


def vmap_function_call(cls, args: tuple, kwargs: dict):
    """The custom Function ``cls`` run by vmap's rule for Functions when an input is
    batched; None when none is (imported here, as in ``vmap_call``)."""
    from ..func.batching import batched_function

    return batched_function(cls, args, kwargs)


def link_view(view: Tensor, op, inputs: tuple, attrs: dict | None, recording: bool) -> None:
    """A view shares its base's data and version counter, and remembers how it was made."""
    base = inputs[0]
    view._version_ref = base._version_ref
    view._base = base if base._base is None else base._base
    view._view_of = (op, inputs, attrs, recording)
    view._view_version = base._version_ref[0]


def replay_view(view: Tensor) -> None:
    """Record the view op of ``view`` again on its (possibly changed) parent (see _refresh_view)."""
    op, inputs, attrs, _ = view._view_of
    parent = inputs[0]
    parent._refresh_view()
    old_node = view._grad_fn
    with grad_mode.enable_grad():
        fresh = apply_op(op, (parent,) + tuple(inputs[1:]), attrs)
    node = fresh._grad_fn
    if node is None:  # no history now: the base does not require grad (any more)
        view._grad_fn, view._output_nr, view._requires_grad = None, 0, fresh._requires_grad
    else:
        set_history(view, node)
    view._view_version = view._version_ref[0]
    if forward_ad.LEVELS:
        forward_ad.take_tangent(view, fresh)
    if node is None:
        return
    node._output_ref = weakref.ref(view)
    hooks = old_node._tensor_hooks_for(0) if old_node is not None else None
    if hooks:  # hooks registered on the view stay with it
        node._keep_tensor_hooks(hooks)
    if view._retains_grad:
        node._retain(view)


def _publish_op(op, inputs: tuple, attrs: dict | None, result: Tensor, node) -> None:
    """OpRecorded, then one SavedTensorPacked per tensor the new node keeps."""
    ids, shapes, names = [], [], []
    numbers = False  # a Python number among the inputs: attrs shows it
    for x in inputs:  # one pass; ids are handed out in input order
        if isinstance(x, Tensor):
            ids.append(x.uid)
            shapes.append(x._data.shape)
            names.append(x.name)
        else:
            ids.append(None)
            shapes.append(())
            names.append(None)
            numbers = True
    node_id, next_nodes, next_names = None, (), ()
    if node is not None:
        node_id = node.uid  # before its edges' nodes: ids are handed out in this order
        next_nodes, next_names = _edges(node)
    data = result._data
    events.publish(
        events.OpRecorded(
            op=op.name,
            output=result.uid,
            inputs=tuple(ids),
            input_shapes=tuple(shapes),
            output_shape=data.shape,
            dtype=events.dtype_name(data.dtype),
            node=node_id,
            attrs=_plain_attrs(attrs, inputs) if attrs or numbers else {},
            name=result.name,
            in_backward=state.in_backward(),
            value=data,
            scope=state.name_scopes.stack,
            next_nodes=next_nodes,
            next_names=next_names,
            input_names=tuple(names),
        )
    )
    if node is not None:
        _publish_saved(node, inputs, result)


def _edges(node: Node) -> tuple:
    """The ids and the names of the nodes the edges of ``node`` lead to (None: no edge)."""
    ids, names = [], []
    for child, _ in node.next_functions:
        ids.append(None if child is None else child.uid)
        names.append(None if child is None else child.name())
    return tuple(ids), tuple(names)


def _publish_saved(node: OpNode, inputs: tuple, result: Tensor) -> None:
    """One event per saved slot; ``nbytes`` is what the save added to the running total."""
    saved = [
        (slot, tensor, kept)
        for slot, tensor, kept in zip(node.op.input_names, inputs, node.inputs)
        if type(kept) is SavedTensor
    ]
    if type(node.saved_out) is SavedTensor:
        saved.append(("out", result, node.saved_out))
    total = memory.running_total() - sum(kept.added for _, _, kept in saved)
    for slot, tensor, kept in saved:
        total += kept.added
        events.publish(
            events.SavedTensorPacked(
                node=node.uid, slot=slot, tensor=tensor.uid, nbytes=kept.added, total_bytes=total
            )
        )


def _plain_attrs(attrs: dict | None, inputs: tuple) -> dict:
    """Attributes (and Python-number inputs) in a JSON-friendly form."""
    if not attrs and all(isinstance(x, Tensor) for x in inputs):
        return {}
    plain = {}
    for key, value in (attrs or {}).items():
        plain[key] = (
            value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)
        )
    for i, x in enumerate(inputs):
        if not isinstance(x, Tensor):
            plain[f"input{i}"] = x if isinstance(x, (int, float, bool)) else repr(x)
    return plain
