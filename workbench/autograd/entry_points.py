"""``backward()`` and ``grad()`` as PyTorch takes them: the arguments checked, with
PyTorch's errors, then a :class:`~.engine.GraphTask` made and run.

``Tensor.backward`` calls :func:`backward`, which runs the task :func:`make_backward_task`
makes (in a traced training step, the tracer's); the stepper widget
makes the same task and steps it. The loop itself is :mod:`.engine`'s.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core import checks, state
from ..core.tensor import Tensor
from ..record import recompute
from .engine import GraphTask


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of ``tensors`` into the leaves' ``.grad``, as
    ``torch.autograd.backward`` (``inputs``: only into theirs)."""
    make_backward_task(tensors, grad_tensors, retain_graph, create_graph, inputs).run()


def make_backward_task(
    tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None
) -> GraphTask:
    """The GraphTask of a ``backward()`` call, not yet run (the stepper steps through it);
    in a traced training step (``wb.compile``), the tracer's, which writes it into the program."""
    if state.stage.record is not None:
        recompute.close_forgotten_stage()
    roots = [tensors] if isinstance(tensors, Tensor) else _outputs(tensors, "backward", "tensors")
    grads = root_gradients(roots, grad_tensors, "backward")
    create_graph = checks.engine_flag("backward", "create_graph", create_graph)
    if create_graph:
        _warn_create_graph()
    retain_graph = checks.engine_flag("backward", "retain_graph", retain_graph, create_graph)
    if state.in_use.tracers and state.tracing.tracer is not None:
        return state.tracing.tracer.backward_task(roots, grads, create_graph, inputs)
    task = GraphTask(roots, grads, retain_graph, create_graph)
    return task if inputs is None else task.aim_at(_backward_inputs(inputs), accumulate=True)


def _tensor_list(value, op: str, arg: str) -> list:
    """One Tensor, or what a sequence holds, as a list (each caller checks the items):
    anything else (None, a number) is PyTorch's TypeError, which it gets from ``tuple()``."""
    if isinstance(value, Tensor):
        return [value]
    if not hasattr(value, "__iter__"):
        raise TypeError(
            f"{op}(): argument '{arg}' must be a Tensor or a sequence of Tensors, not "
            f"{type(value).__name__}"
        )
    return list(value)


def _outputs(value, op: str, arg: str) -> list:
    """The tensors to differentiate, checked (PyTorch asserts that they are Tensors: its
    AssertionError, saying which one is not)."""
    outputs = _tensor_list(value, op, arg)
    for i, t in enumerate(outputs):
        if not isinstance(t, Tensor):
            raise AssertionError(
                f"{op}(): argument '{arg}' must hold Tensors, but {arg}[{i}] is "
                f"{type(t).__name__} ({t!r}): expected each output to be a Tensor"
            )
    return outputs


def _inputs(value, op: str) -> list:
    """The tensors to differentiate with respect to: Tensors that require grad."""
    inputs = _tensor_list(value, op, "inputs")
    if not inputs:
        raise RuntimeError(f"`inputs` argument to `{op}()` cannot be empty.")
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise RuntimeError(
                f"{op}(): all inputs have to be Tensors, but got {type(t).__name__} "
                f"(inputs[{i}] = {t!r})"
            )
        if not t._requires_grad:
            why = (
                "can't retain_grad on Tensor that has requires_grad=False"
                if op == "backward"
                else "One of the differentiated Tensors does not require grad"
            )
            raise RuntimeError(f"{op}(): inputs[{i}] does not require grad: {why}")
    return inputs


def _warn_create_graph() -> None:
    warnings.warn(
        "Using backward() with create_graph=True will create a reference cycle between "
        "the parameter and its gradient which can cause a memory leak. We recommend using "
        "autograd.grad when creating the graph to avoid this.",
        UserWarning,
        stacklevel=recompute.user_stacklevel(),  # the learner's line, whichever road led here
    )


def _backward_inputs(inputs) -> list:
    inputs = _inputs(inputs, "backward")
    for t in inputs:
        if t._grad_fn is not None:
            t.retain_grad()  # as PyTorch: a non-leaf input keeps its .grad from now on
    return inputs


# How each call names the gradients it is given (``autograd.backward`` says ``grad_tensors``
# for ``Tensor.backward``'s ``gradient``)
GRADIENTS_ARGUMENT = {"backward": "gradient", "grad": "grad_outputs"}


def root_gradients(roots: list, given, op: str) -> list:
    """The gradient each root starts with: the one given, or ones for a real scalar root."""
    arg = GRADIENTS_ARGUMENT[op]
    given = [None] * len(roots) if given is None else _tensor_list(given, op, arg)
    for i, (root, grad) in enumerate(zip(roots, given)):
        if grad is None and root._data.size == 1 and root._data.dtype.kind != "c":
            grad = given[i] = Tensor._make(np.ones_like(root._data))  # ȳ = 1
        if not root._requires_grad or not isinstance(grad, Tensor) or grad.shape != root.shape:
            raise _bad_gradient(i, root, grad, op)
        if (grad._data.dtype.kind == "c") != (root._data.dtype.kind == "c"):
            raise _bad_gradient(i, root, grad, op)
    if len(given) != len(roots):
        raise RuntimeError(f"{op}: got {len(roots)} tensors and {len(given)} gradients")
    return given


def _bad_gradient(i: int, root: Tensor, grad, op: str) -> Exception:
    """PyTorch's error for root ``i``, in PyTorch's order: ``grad`` does not fit it (its
    Python side checks that first), or the root needs no gradient (its engine's check)."""
    # func/reverse.py's vjp_fn makes the same shape check with its own messages (PyTorch's for each
    # API).
    if grad is not None and not isinstance(grad, Tensor):
        return TypeError(
            f"{op}(): gradients can be either Tensors or None, but got {type(grad).__name__} "
            f"(argument '{GRADIENTS_ARGUMENT[op]}', for output {i})"
        )
    if grad is not None and grad.shape != root.shape:
        return RuntimeError(
            f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(grad.shape)} and "
            f"output[{i}] has a shape of {tuple(root.shape)}."
        )
    if grad is not None and (grad._data.dtype.kind == "c") != (root._data.dtype.kind == "c"):
        return RuntimeError(
            "For complex Tensors, both grad_output and output are required to have the same "
            f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {grad.dtype} and "
            f"output[{i}] has a dtype of {root.dtype}."
        )
    if not root._requires_grad:
        return RuntimeError(
            f"element {i} of tensors does not require grad and does not have a grad_fn"
        )
    return _no_implicit_gradient(i, root, op)


def _no_implicit_gradient(i: int, root: Tensor, op: str) -> RuntimeError:
    """Only a real scalar output starts from 1 by itself; any other needs its gradient."""
    what, why = (
        ("real scalar", f"is {root.dtype}")
        if root._data.size == 1
        else ("scalar", f"has shape {tuple(root.shape)}")
    )
    return RuntimeError(
        f"{op}(): grad can be implicitly created only for {what} outputs, and output {i} "
        f"{why}: pass its gradient as '{GRADIENTS_ARGUMENT[op]}'"
    )


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """The gradients of ``outputs`` w.r.t. ``inputs``, returned rather than accumulated."""
    if state.stage.record is not None:
        recompute.close_forgotten_stage()
    outputs = _outputs(outputs, "grad", "outputs")
    inputs_list = _inputs(inputs, "grad")
    retain_graph, create_graph, allow_unused = _grad_flags(
        retain_graph, create_graph, allow_unused, materialize_grads
    )
    if is_grads_batched:
        return _batched_grad(
            outputs, inputs_list, grad_outputs, retain_graph, create_graph, allow_unused
        )
    grads = root_gradients(outputs, grad_outputs, "grad")
    retain_graph = create_graph if retain_graph is None else retain_graph
    task = GraphTask(outputs, grads, retain_graph, create_graph)
    task.aim_at(inputs_list, accumulate=False).run()
    result = []
    for i, (t, g) in enumerate(zip(inputs_list, task.captured)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior."
                )
            if materialize_grads:
                g = Tensor._make(np.zeros_like(t._data))
        elif not create_graph and g._requires_grad:
            g = g.detach()
        result.append(g)
    return tuple(result)


def _grad_flags(retain_graph, create_graph, allow_unused, materialize_grads) -> tuple:
    """``grad()``'s flags as bools, checked as PyTorch's engine reads them (an unset
    ``allow_unused`` follows ``materialize_grads``; an unset ``retain_graph`` stays None)."""
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = checks.engine_flag("grad", "materialize_grads", materialize_grads)
    return (
        None if retain_graph is None else checks.engine_flag("grad", "retain_graph", retain_graph),
        checks.engine_flag("grad", "create_graph", create_graph),
        checks.engine_flag("grad", "allow_unused", allow_unused),
    )


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused):
    """``is_grads_batched=True``: the first dimension of each grad_output is a batch of vectors."""
    grad_outputs = _tensor_list(grad_outputs, "grad", "grad_outputs")
    batch = grad_outputs[0].shape[0]
    rows = []
    for b in range(batch):
        rows.append(
            grad(
                outputs,
                inputs,
                [g[b] for g in grad_outputs],
                retain_graph=True if retain_graph is None else retain_graph,
                create_graph=create_graph,
                allow_unused=allow_unused,
            )
        )
    return tuple(_stack_rows([row[i] for row in rows]) for i in range(len(inputs)))


def _stack_rows(rows: list) -> Tensor | None:
    """Stack one gradient per batch row along a new first dim (differentiably).

    Each row is scattered into its own slot of a zero tensor and the slots are added,
    so the result stays on the graph when ``create_graph`` is on.
    """
    from ..ops.shape import getitem_backward

    if all(r is None for r in rows):
        return None
    like = next(r for r in rows if r is not None)
    shape = (len(rows),) + tuple(like.shape)
    out = None
    for b, row in enumerate(rows):
        if row is not None:
            slot = getitem_backward(row, shape, b)
            out = slot if out is None else out + slot
    return out
