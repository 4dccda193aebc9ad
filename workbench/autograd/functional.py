"""Jacobians, Hessians and their products, as ``torch.autograd.functional``.

Everything here is built from one primitive, the vector-Jacobian product that
``backward`` computes (``vᵀJ``):

* ``vjp``: one backward pass.
* ``jvp`` (``J v``): the *double-backward trick*. ``g(u) = Jᵀu`` is linear in ``u``;
  differentiating ``⟨g(u), v⟩`` with respect to ``u`` gives ``J v``. So two backward
  passes replace forward-mode differentiation.
* ``jacobian``: one vjp per output element, rows stacked.
* ``hessian``: the jacobian of the jacobian (the inner one with ``create_graph=True``).
* ``vhp`` (``vᵀH``) and ``hvp`` (``H v``, by the same trick as jvp).

The signatures, argument checks, ``create_graph`` and ``strict`` follow PyTorch.
Results carry no graph unless ``create_graph=True``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core import backend
from ..core.tensor import Tensor
from ..record.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from . import entry_points


# ------------------------------------------------------------------ helpers
def _as_tuple(value, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(was it a tuple?, the value as a tuple of tensors)."""
    if isinstance(value, Tensor):
        return False, (value,)
    if not isinstance(value, (tuple, list)):
        raise TypeError(
            f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
            f"but the given {arg_name} has type {type(value).__name__}."
        )
    for i, el in enumerate(value):
        if not isinstance(el, Tensor):
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                f"Tensors but the value at index {i} has type {type(el).__name__}."
            )
    return True, tuple(value)


def _unpack(result, was_tuple):
    """Undo ``_as_tuple``: one level (inputs) or two levels (outputs, inputs)."""
    if isinstance(was_tuple, tuple):
        outputs_tuple, inputs_tuple = was_tuple
        if not inputs_tuple:
            result = tuple(row[0] for row in result)
        return result if outputs_tuple else result[0]
    return result if was_tuple else result[0]


def _prepare(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh leaves for the user's tensors, or (create_graph) a recorded alias of each,
    so that the results stay differentiable w.r.t. what the caller passed in."""
    from .. import ops

    prepared = []
    for t in inputs:
        if create_graph and t.requires_grad:
            prepared.append(ops.view(t, t.shape))
        else:
            prepared.append(t.detach().requires_grad_(need_graph))
    return tuple(prepared)


def _finish(values, create_graph: bool):
    """Detach results (recursively through tuples) unless the caller wants the graph."""
    if isinstance(values, tuple):
        return tuple(_finish(v, create_graph) for v in values)
    if values is None or create_graph:
        return values
    return values.detach()


def _validate_v(v: tuple, other: tuple) -> None:
    if len(v) != len(other):
        raise RuntimeError(
            f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
        )
    for i, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            raise RuntimeError(
                f"Entry {i} in v has invalid size: should be {tuple(el_other.shape)} but got "
                f"{tuple(el_v.shape)}."
            )


def _checked_v(v, against: tuple, create_graph: bool, fn_name: str, when_none: str):
    """``v`` as a tuple of tensors shaped like ``against`` (the tensors it multiplies).

    ``v`` may be None only where ``against`` is one single-element tensor, as PyTorch:
    ``when_none`` says what that one tensor is, for the error."""
    if v is None:
        if len(against) != 1 or against[0].numel() != 1:
            raise RuntimeError(
                f"The vector v can only be None if {when_none} a single Tensor with a single "
                "element."
            )
        return None
    _, v = _as_tuple(v, "v", fn_name)
    v = _prepare(v, create_graph, need_graph=False)
    _validate_v(v, against)
    return v


_STRICT_REQUIRES_GRAD = {
    "outputs": "Output {i} of the user-provided function does not require gradients.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
    "user-provided function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
    "function with respect to input {i} is independent of the input. This is not allowed in "
    "strict mode. You should ensure that your function is twice differentiable and that the "
    "jacobian depends on the inputs (this would be violated by a linear function for example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is "
    "independent of the input. This is not allowed in strict mode. You should ensure that your "
    "function is thrice differentiable and that the hessian depends on the inputs.",
}


def _check_requires_grad(values: tuple, kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, value in enumerate(values):
        if value is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This "
                "is not allowed in strict mode."
            )
        if not value.requires_grad:
            raise RuntimeError(_STRICT_REQUIRES_GRAD[kind].format(i=i))


def _leaf_inputs(inputs, create_graph: bool, fn_name: str) -> tuple[bool, tuple]:
    """(were the inputs a tuple?, the inputs as tensors to differentiate with respect to)."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    return inputs_tuple, _prepare(inputs, create_graph, need_graph=True)


def _outputs_of(func: Callable, inputs: tuple, strict: bool, fn_name: str) -> tuple[bool, tuple]:
    """(did ``func`` return a tuple?, its outputs at ``inputs`` as a tuple); in strict mode
    each output must require grad."""
    outputs_tuple, outputs = _as_tuple(
        func(*inputs), "outputs of the user-provided function", fn_name
    )
    _check_requires_grad(outputs, "outputs", strict)
    return outputs_tuple, outputs


def _grad(outputs: tuple, inputs: tuple, grad_outputs=None, create_graph=False, retain_graph=None):
    """``autograd.grad`` that skips outputs without a graph and gives None for unused inputs."""
    grad_outputs = (None,) * len(outputs) if grad_outputs is None else grad_outputs
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return entry_points.grad(
        [o for o, _ in pairs],
        list(inputs),
        [g for _, g in pairs],
        retain_graph=retain_graph,
        create_graph=create_graph,
        allow_unused=True,
    )


_STRICT_NONE = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
    "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. This "
    "is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
    "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
    "in the grad_jacobian. This is not allowed in strict mode as it prevents from using the "
    "double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str):
    """Zeros where a gradient is None (an error instead, in strict mode)."""
    from ..core import factories

    filled = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_STRICT_NONE[stage].format(i=i))
            g = factories.zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This "
                "is not allowed in strict mode when create_graph=True."
            )
        filled.append(g)
    return tuple(filled)


def _backward_pass(ys: tuple, xs: tuple, v, create_graph: bool, strict: bool, stage: str):
    """vᵀ · ∂ys/∂xs in one backward pass, zeros for an x the ys do not depend on; recorded
    when ``create_graph`` (else as the caller's grad mode says)."""
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = _grad(ys, xs, v, create_graph=create_graph)
        return _fill_in_zeros(grads, xs, strict, create_graph, stage)


# -------------------------------------------------------------------- vjp / jvp
# vjp, jvp, jacobian and vhp/hvp start alike, with _leaf_inputs and _outputs_of; jvp and vhp/hvp
# check v between the two, before func runs, as PyTorch does: the first error is PyTorch's.
def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), vᵀ · J)``: the vector-Jacobian product, one backward pass."""
    with enable_grad():
        inputs_tuple, inputs = _leaf_inputs(inputs, create_graph, "vjp")
        outputs_tuple, outputs = _outputs_of(func, inputs, strict, "vjp")
        v = _checked_v(v, outputs, create_graph, "vjp", "the user-provided function returns")
        result = _backward_pass(outputs, inputs, v, create_graph, strict, "back")
    outputs, result = _finish(outputs, create_graph), _finish(result, create_graph)
    return _unpack(outputs, outputs_tuple), _unpack(result, inputs_tuple)


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J · v)`` by the double-backward trick (no forward mode needed)."""
    from ..core import factories

    with enable_grad():
        inputs_tuple, inputs = _leaf_inputs(inputs, create_graph, "jvp")
        v = _checked_v(v, inputs, create_graph, "jvp", "the input to the user-provided function is")
        outputs_tuple, outputs = _outputs_of(func, inputs, strict, "jvp")
        # u ↦ Jᵀu is linear; its gradient w.r.t. u, weighted by v, is J v.
        dummies = tuple(factories.zeros_like(o, requires_grad=True) for o in outputs)
        transposed = _grad(outputs, inputs, dummies, create_graph=True)
        _check_requires_grad(transposed, "grad_inputs", strict)
        result = _backward_pass(transposed, dummies, v, create_graph, strict, "back_trick")
    outputs, result = _finish(outputs, create_graph), _finish(result, create_graph)
    return _unpack(outputs, outputs_tuple), _unpack(result, outputs_tuple)


# ------------------------------------------------------------- jacobian, hessian
def jacobian(
    func: Callable,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
):
    """The Jacobian of ``func`` at ``inputs``: shape ``output.shape + input.shape``.

    ``reverse-mode`` computes one row per output element with a vjp; ``forward-mode``
    one column per input element with a jvp (double-backward trick). ``vectorize`` is
    accepted for compatibility; without vmap the rows are computed one at a time.
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    with enable_grad():
        inputs_tuple, inputs = _leaf_inputs(inputs, create_graph, "jacobian")
        outputs_tuple, outputs = _outputs_of(func, inputs, strict, "jacobian")
        if strategy == "forward-mode":
            result = _forward_jacobian(func, inputs, outputs, create_graph, strict)
        else:
            result = tuple(
                _reverse_jacobian_rows(i, out, inputs, create_graph, strict)
                for i, out in enumerate(outputs)
            )
    result = _finish(result, create_graph)
    return _unpack(result, (outputs_tuple, inputs_tuple))


def _reverse_jacobian_rows(i: int, out: Tensor, inputs: tuple, create_graph, strict) -> tuple:
    """∂out/∂input for every input, one vjp per element of ``out``."""
    from .. import ops
    from ..core import factories

    rows = [[] for _ in inputs]
    flat = ops.reshape(out, (-1,))
    for k in range(out.numel()):
        grads = _grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
        for j, (g, inp) in enumerate(zip(grads, inputs)):
            if g is None:
                if strict:
                    raise RuntimeError(
                        f"Output {i} of the user-provided function is independent of input {j}. "
                        "This is not allowed in strict mode."
                    )
                g = factories.zeros_like(inp)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(
                    f"The jacobian of the user-provided function is independent of input {j}. "
                    "This is not allowed in strict mode when create_graph=True."
                )
            rows[j].append(g)
    return tuple(_stack_rows(r, out.shape, inp) for r, inp in zip(rows, inputs))


def _forward_jacobian(func, inputs, outputs, create_graph, strict) -> tuple:
    """One jvp per input element: the columns of every ∂out/∂input."""
    from .. import ops
    from ..core import factories

    columns = [[[] for _ in inputs] for _ in outputs]
    for j, inp in enumerate(inputs):
        for k in range(inp.numel()):
            v = [factories.zeros_like(t) for t in inputs]
            v[j] = Tensor._make(_unit(inp, k))
            _, products = jvp(func, inputs, tuple(v), create_graph=create_graph, strict=strict)
            products = products if isinstance(products, tuple) else (products,)
            for i, p in enumerate(products):
                columns[i][j].append(p)
    result = []
    for i, out in enumerate(outputs):
        per_input = []
        for j, inp in enumerate(inputs):
            stacked = _stack_rows(columns[i][j], inp.shape, out)  # (input..., output...)
            moved = ops.permute(
                stacked,
                tuple(range(inp.ndim, inp.ndim + out.ndim)) + tuple(range(inp.ndim)),
            )
            per_input.append(moved)
        result.append(tuple(per_input))
    return tuple(result)


def _unit(like: Tensor, k: int):
    """The k-th standard basis vector, shaped like ``like``."""
    unit = backend.xp(like._data).zeros(like.shape, dtype=like.dtype)  # on like's device
    unit.reshape(-1)[k] = 1
    return unit


def _stack_rows(rows: list, lead_shape: tuple, like: Tensor) -> Tensor:
    """Stack per-element results into shape ``lead_shape + like.shape``."""
    from .. import ops
    from ..core import factories

    if not rows:
        return factories.zeros(tuple(lead_shape) + tuple(like.shape), dtype=like.dtype)
    return ops.reshape(ops.stack(rows, 0), tuple(lead_shape) + tuple(like.shape))


# jacobian's arguments again, as in PyTorch's signature (outer_jacobian_strategy for strategy).
def hessian(
    func: Callable,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
):
    """The Hessian of a scalar function: the jacobian of its jacobian."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def scalar_output(*args):
        out = func(*args)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if out_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should contain a single "
                "element"
            )
        return out.squeeze()

    def gradient_of(*args):
        jac = jacobian(scalar_output, args, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    result = jacobian(
        gradient_of,
        inputs,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _unpack(result, (inputs_tuple, inputs_tuple))


# ------------------------------------------------------------------- vhp / hvp
def _scalar_and_gradient(func, inputs, v, create_graph, strict, name):
    """Shared start of vhp and hvp: checked inputs and v, the output, and its gradient."""
    inputs_tuple, inputs = _leaf_inputs(inputs, create_graph, name)
    v = _checked_v(v, inputs, create_graph, name, "the input to the user-provided function is")
    outputs_tuple, outputs = _outputs_of(func, inputs, strict, name)
    if outputs_tuple:
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {name} should contain a single element"
        )
    gradient = _grad(outputs, inputs, create_graph=True)
    _check_requires_grad(gradient, "jacobian", strict)
    return inputs_tuple, inputs, v, outputs, gradient


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), vᵀ · H)``: differentiate ``⟨∇f, v⟩`` once more."""
    with enable_grad():
        inputs_tuple, inputs, v, outputs, gradient = _scalar_and_gradient(
            func, inputs, v, create_graph, strict, "vhp"
        )
        result = _backward_pass(gradient, inputs, v, create_graph, strict, "double_back")
    outputs, result = _finish(outputs, create_graph), _finish(result, create_graph)
    return outputs[0], _unpack(result, inputs_tuple)


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H · v)`` by the double-backward trick, as PyTorch computes it."""
    from ..core import factories

    with enable_grad():
        inputs_tuple, inputs, v, outputs, gradient = _scalar_and_gradient(
            func, inputs, v, create_graph, strict, "hvp"
        )
        dummies = tuple(factories.zeros_like(t, requires_grad=True) for t in inputs)
        transposed = _grad(gradient, inputs, dummies, create_graph=True)
        _check_requires_grad(transposed, "hessian", strict)
        result = _backward_pass(transposed, dummies, v, create_graph, strict, "double_back_trick")
    outputs, result = _finish(outputs, create_graph), _finish(result, create_graph)
    return outputs[0], _unpack(result, inputs_tuple)
