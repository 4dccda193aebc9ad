"""Check a learner's custom :class:`~workbench.autograd.Function` (forward, ctx, backward).

::

    class Exp(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    check_function(Exp, [0.5, -1.0, 2.0], reference=wb.exp)

The check calls ``Exp.apply`` on float64 copies of the inputs, then the learner's
``backward`` with the node it recorded (its ``ctx``) and a random ȳ, and compares
each gradient with finite differences of the learner's own forward — and, when a
``reference`` function is given, with the engine's gradients of the reference, and
the forward values with the reference's.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np

from ..autograd.engine import grad as autograd_grad
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from .diagnose import broadcasts_to, collapse_sum, compare, shape_text
from .report import PASSED_ON, Passed, fail, learner_error
from .rules import FD_ATOL, FD_RTOL, SEED, differentiable, finite_differences, plural


def check_function(function: type[Function], *inputs, reference: Callable | None = None) -> Passed:
    """Check the custom Function ``function`` on ``inputs`` (tensors, arrays or lists;
    Python numbers are passed as they are and take no gradient).

    Raises :class:`ExerciseError` when the forward differs from ``reference``, or a
    gradient from finite differences (or from the reference's gradient).
    """
    if not inputs:
        raise ValueError("check_function needs the inputs to call the Function on")
    rng = np.random.default_rng(SEED)
    leaves = [as_input(x) for x in inputs]
    names = argument_names(function, len(leaves))
    label = " and ".join(
        f"{n} of shape {shape_text(x.shape)}" for n, x in zip(names, leaves) if is_tensor(x)
    )
    context = f"With {label}" if label else "On these inputs"
    outputs = run_forward(function, leaves, context)
    upstreams = [Tensor(rng.standard_normal(o.shape)) for o in outputs]
    if reference is not None:
        check_forward(reference, inputs, outputs, context)
    got = run_backward(function, outputs[0].grad_fn, upstreams, len(leaves), context)
    expected = reference_gradients(reference, inputs, upstreams)
    numeric = finite_differences(function.apply, leaves, [g.numpy() for g in upstreams])
    single = upstreams[0] if len(upstreams) == 1 else None
    for i, (name, x) in enumerate(zip(names, leaves)):
        right = numeric[i] if expected is None else expected[i]
        check_gradient(name, x, got[i], right, numeric[i], single, context)
    return Passed(f"Your Function {function.__name__} is right.", proof_text(label, reference))


def as_input(x):
    """A float64 leaf that requires grad (a copy of a Tensor, array or list); numbers stay."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return x
    array = x.detach().numpy() if isinstance(x, Tensor) else np.asarray(x)
    if array.dtype.kind not in "fc":
        return Tensor(array)  # indices and masks: passed on, no gradient
    return Tensor(array.astype(np.float64), requires_grad=True)


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def argument_names(function: type[Function], count: int) -> list:
    """The names of forward's arguments after ``ctx`` (``x``, ``w``), else input 0, 1..."""
    try:
        params = list(inspect.signature(function.forward).parameters)[1:]
    except (TypeError, ValueError):
        params = []
    if len(params) >= count and not any(p.startswith("*") for p in params[:count]):
        return params[:count]
    return [f"input {i}" for i in range(count)]


def run_forward(function: type[Function], leaves: list, context: str) -> list:
    """``function.apply(*leaves)``, its outputs as a list of the tensors that have a node."""
    try:
        result = function.apply(*leaves)
    except PASSED_ON:  # the checker's own stops and messages go through as they are
        raise
    except Exception as err:
        what = f"Function {function.__name__}"
        raise learner_error(err, function.forward, what, context) from None
    outputs = list(result) if isinstance(result, tuple) else [result]
    if not all(isinstance(o, Tensor) for o in outputs):
        fail(f"{context}, your forward returned a {type(result).__name__}. Return a Tensor.")
    if outputs[0].grad_fn is None:
        fail(
            f"{context}, the output of your Function has no backward node. Return a float "
            "tensor computed from the inputs in forward."
        )
    return outputs


def check_forward(reference: Callable, inputs: tuple, outputs: list, context: str) -> None:
    with no_grad():
        result = reference(*[as_input(x) for x in inputs])
    wanted = list(result) if isinstance(result, tuple) else [result]
    for nr, (want, out) in enumerate(zip(wanted, outputs)):
        what = "the output of your forward" if len(wanted) == 1 else f"output {nr} of your forward"
        finding = compare(what, want, out)
        if finding is not None:
            fail(finding.sentences(context), finding)


def run_backward(function, ctx, upstreams: list, count: int, context: str) -> list:
    """The learner's ``backward(ctx, *ȳ)``: one gradient per input, as a list."""
    try:
        with no_grad():
            got = function.backward(ctx, *[g.clone() for g in upstreams])
    except PASSED_ON:  # the checker's own stops and messages go through as they are
        raise
    except Exception as err:
        what = f"Function {function.__name__}'s backward"
        raise learner_error(err, function.backward, what, context) from None
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    if len(got) < count or any(g is not None for g in got[count:]):
        fail(
            f"{context}, your backward returned {plural(len(got), 'gradient')} where {count} "
            "were expected. Return one per input of forward (after ctx), None for an input that "
            "takes none."
        )
    for i, g in enumerate(got[:count]):
        if g is not None and not isinstance(g, Tensor):
            fail(
                f"{context}, gradient {i} of your backward is a {type(g).__name__}, not a "
                "Tensor. Build it with tensor operations on the gradient and what ctx saved."
            )
    return got[:count]


def reference_gradients(reference: Callable | None, inputs: tuple, upstreams: list):
    """The engine's gradients of ``reference`` (None without one)."""
    if reference is None:
        return None
    leaves = [as_input(x) for x in inputs]
    result = reference(*leaves)
    outputs = list(result) if isinstance(result, tuple) else [result]
    wanted = [x for x in leaves if is_tensor(x) and x.requires_grad]
    grads = iter(autograd_grad(outputs, wanted, upstreams, allow_unused=True))
    return [next(grads) if is_tensor(x) and x.requires_grad else None for x in leaves]


def check_gradient(name, x, got, expected, numeric, upstream, context) -> None:
    """Input ``name``'s gradient against the expected one, then finite differences."""
    what = f"your gradient for {name}"
    if not differentiable(x):
        if got is not None and not is_tensor(x):
            finding = compare(what, None, got)
            fail(finding.sentences(context), finding, input=name)
        return
    if is_tensor(got) and got.shape != x.shape and broadcasts_to(x.shape, got.shape):
        got = collapse_sum(got.numpy(), x.shape)  # the engine sums it, as PyTorch does
    if upstream is not None and upstream.shape != x.shape:
        upstream = None
    tolerances = {"rtol": FD_RTOL, "atol": FD_ATOL} if expected is numeric else {}
    finding = compare(what, expected, got, upstream=upstream, **tolerances)
    if finding is None and expected is not numeric:
        finding = compare(what, numeric, got, rtol=FD_RTOL, atol=FD_ATOL)
    if finding is not None:
        fail(finding.sentences(context), finding, input=name)


def proof_text(label: str, reference: Callable | None) -> str:
    against = "finite differences in float64"
    if reference is not None:
        name = getattr(reference, "__name__", "the reference")
        against += f" and the engine's gradient of {name}"
    return (
        f"With {label}, its backward gives the same gradients as {against}. You just proved that "
        "ctx carries what backward needs from forward, and that backward applies the chain rule."
    )
