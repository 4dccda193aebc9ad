"""Check a learner's custom :class:`~workbench.autograd.Function` (forward, ctx, backward).

::

    class Square(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    check_function(Square, [0.5, -1.0, 2.0], reference=wb.square)

The check calls ``Square.apply`` on float64 copies of the inputs, then the learner's
``backward`` with the node it recorded (its ``ctx``) and a random ȳ, and compares
each gradient with finite differences of the learner's own forward — and, when a
``reference`` function is given, with the engine's gradients of the reference, and
the forward values with the reference's.

Besides the diagnoses of ``diagnose.py``, three are particular to Functions, one small
function each: :func:`diagnose_overflow` (infinity or NaN only where an input is too
big for an exponential), :func:`diagnose_crossed` (two inputs' gradients swapped, or
one input's rule copied into another's place) and :func:`diagnose_at_output` (the
derivative taken at the output y where it belongs at the input x). An error raised in
forward or backward gets advice where its cause is plain (:func:`error_advice`).

The lesson's three exercises call :func:`check_softplus`, :func:`check_hypot` and
:func:`check_power`: the inputs and references are here, so that the lesson and the
tests run the same check.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np

from ..autograd.entry_points import grad as autograd_grad
from ..autograd.function import Function
from ..core.tensor import Tensor
from ..ops.activations import softplus
from ..record.grad_mode import no_grad
from .diagnose import (
    Finding,
    as_array,
    broadcasts_to,
    collapse_sum,
    compare,
    index_text,
    is_close,
    number,
    shape_text,
)
from .guard import checker, inputs_kept, modes_kept
from .report import (
    PASSED_ON,
    CheckerMisuse,
    ExerciseError,
    NotAnswered,
    Passed,
    fail,
    fail_on,
    learner_error,
    learners_frame,
)
from .rules import (
    FD_ATOL,
    FD_RTOL,
    SEED,
    differentiable,
    finite_differences,
    gradient_symbol,
    plural,
)

EXP_LIMIT = float(np.log(np.finfo(np.float64).max))  # 709.78: e^x is infinity above it
EXP_LIMIT_FLOAT32 = float(np.log(np.finfo(np.float32).max))  # 88.72, the same in float32


# ------------------------------------------------------------ the lesson's exercises
def hypot(a: Tensor, b: Tensor) -> Tensor:
    """√(a² + b²) with the engine's ops: its gradient is the reference for ``Hypot``."""
    return (a * a + b * b).sqrt()


def power(x: Tensor, k: float) -> Tensor:
    """xᵏ with the engine's op: the reference for ``Power``."""
    return x**k


SOFTPLUS_INPUTS = ([[-2.0, 0.0, 3.0], [800.0, -800.0, 0.5]],)  # ±800: e^800 overflows float64
HYPOT_INPUTS = ([3.0, -1.0, 0.5], [4.0, 2.0, -0.25])
POWER_INPUTS = ([0.5, 1.5, 2.0], 3)


@checker
def check_softplus(function: type[Function]) -> Passed:
    """Exercise 1 of lesson 6: a stable softplus, checked at x = ±800 too."""
    passed = check_function(function, *SOFTPLUS_INPUTS, reference=softplus)
    passed.proof += (
        " Its values and gradients are right at x = ±800 too, where e^x overflows: it is stable."
    )
    return passed


@checker
def check_hypot(function: type[Function]) -> Passed:
    """Exercise 2 of lesson 6: two inputs, and the output saved for backward."""
    return check_function(function, *HYPOT_INPUTS, reference=hypot)


@checker
def check_power(function: type[Function]) -> Passed:
    """Exercise 3 of lesson 6: a Python number on ctx, and None for its gradient."""
    return check_function(function, *POWER_INPUTS, reference=power)


# ------------------------------------------------------------------ the check
@checker
def check_function(function: type[Function], *inputs, reference: Callable | None = None) -> Passed:
    """Check the custom Function ``function`` on ``inputs`` (tensors, arrays or lists;
    Python numbers are passed as they are and take no gradient).

    Raises :class:`ExerciseError` when the forward differs from ``reference``, or a
    gradient from finite differences (or from the reference's gradient).
    """
    if not inputs:
        raise CheckerMisuse("check_function needs the inputs to call the Function on")
    if not (isinstance(function, type) and issubclass(function, Function)):
        fail(
            f"Your answer is a {type(function).__name__}, not a Function: write a class "
            "that subclasses wb.autograd.Function, with a forward and a backward "
            "@staticmethod, and pass the class itself (not Exp.apply, not a lambda)."
        )
    rng = np.random.default_rng(SEED)
    leaves = [as_input(x) for x in inputs]
    names = argument_names(function, len(leaves))
    label = " and ".join(
        f"{n} of shape {shape_text(x.shape)}" for n, x in zip(names, leaves) if is_tensor(x)
    )
    context = f"With {label}" if label else "On these inputs"
    outputs = run_forward(function, leaves, names, context)
    upstreams = [Tensor(rng.standard_normal(o.shape)) for o in outputs]
    if reference is not None:
        check_forward(reference, inputs, outputs, names, leaves, context)
    got = run_backward(function, outputs[0].grad_fn, upstreams, names, leaves, context)
    expected = reference_gradients(reference, inputs, upstreams)
    numeric = finite_differences(function.apply, leaves, [g.numpy() for g in upstreams])
    wanted = numeric if expected is None else expected
    crossed = diagnose_crossed(names, got, wanted)
    if crossed is not None:
        fail(crossed.sentences(context), crossed, input=crossed.details["input"])
    single = upstreams[0] if len(upstreams) == 1 else None
    at_output = gradient_at_output(reference, leaves, outputs, upstreams)
    for i, (name, x) in enumerate(zip(names, leaves)):
        gradient = Gradient(name, x, got[i], wanted[i], numeric[i])
        check_gradient(gradient, single, names, leaves, context, at_output)
    return Passed(f"Your Function {function.__name__} is right.", proof_text(label, reference))


class Gradient:
    """One input's gradient: the learner's, the one wanted, and finite differences'."""

    def __init__(self, name: str, x, got, expected, numeric) -> None:
        self.name, self.x, self.got, self.expected, self.numeric = name, x, got, expected, numeric


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


def run_forward(function: type[Function], leaves: list, names: list, context: str) -> list:
    """``function.apply(*leaves)``, its outputs as a list of the tensors that have a node."""
    try:
        with modes_kept(), inputs_kept(function.forward, (None, *leaves)):
            result = function.apply(*leaves)
    except PASSED_ON:  # the checker's own stops and messages go through as they are
        raise
    except Exception as err:
        what = f"Function {function.__name__}"
        raise advised_error(err, function.forward, what, context, None, names, leaves) from None
    outputs = list(result) if isinstance(result, tuple) else [result]
    if not all(isinstance(o, Tensor) for o in outputs):
        fail(f"{context}, your forward returned a {type(result).__name__}. Return a Tensor.")
    aliased = aliased_input(outputs, leaves, names)
    if aliased is not None:
        fail(
            f"{context}, your forward returned its input {aliased} itself (or a view of it). "
            "Return a new tensor computed from it: an output that is its input is changed "
            "by whatever changes the input."
        )
    if outputs[0].grad_fn is None:
        fail(
            f"{context}, the output of your Function has no backward node. Return a float "
            "tensor computed from the inputs in forward."
        )
    return outputs


def aliased_input(outputs: list, leaves: list, names: list) -> str | None:
    """The name of an input whose memory an output shares, else None."""
    for name, leaf in zip(names, leaves):
        if is_tensor(leaf):
            for out in outputs:
                if np.shares_memory(out.detach().numpy(), leaf.detach().numpy()):
                    return name
    return None


def check_forward(reference, inputs: tuple, outputs: list, names, leaves, context: str) -> None:
    with no_grad():
        result = reference(*[as_input(x) for x in inputs])
    wanted = list(result) if isinstance(result, tuple) else [result]
    for nr, (want, out) in enumerate(zip(wanted, outputs)):
        what = "the output of your forward" if len(wanted) == 1 else f"output {nr} of your forward"
        finding = diagnose_overflow(what, want, out, names, leaves) or compare(what, want, out)
        fail_on(finding, context)


def run_backward(function, ctx, upstreams: list, names: list, leaves: list, context: str) -> list:
    """The learner's ``backward(ctx, *ȳ)``: one gradient per input, as a list."""
    count = len(leaves)
    try:
        with no_grad(), modes_kept():
            got = function.backward(ctx, *[g.clone() for g in upstreams])
    except PASSED_ON:  # the checker's own stops and messages go through as they are
        raise
    except Exception as err:
        what = f"Function {function.__name__}'s backward"
        raise advised_error(err, function.backward, what, context, ctx, names, leaves) from None
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    if len(got) < count or any(g is not None for g in got[count:]):
        fail(
            f"{context}, your backward returned {plural(len(got), 'gradient')} where {count} "
            "were expected. Return one per input of forward (after ctx), None for an input that "
            "takes none."
        )
    for i, (g, x) in enumerate(zip(got, leaves)):
        if g is not None and not isinstance(g, Tensor) and is_tensor(x):
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


def gradient_at_output(reference, leaves: list, outputs: list, upstreams: list):
    """ȳ · f′(y): the reference's gradient taken at the output in place of the input.

    Only for an elementwise function (one input, one output of its shape), where it is
    the gradient of a backward that put y where x belongs. None otherwise.
    """
    if reference is None or len(leaves) != 1 or len(outputs) != 1 or not is_tensor(leaves[0]):
        return None
    if outputs[0].shape != leaves[0].shape:
        return None
    return reference_gradients(reference, (outputs[0].detach(),), upstreams)[0]


def check_gradient(gradient: Gradient, upstream, names, leaves, context, at_output=None) -> None:
    """Input ``name``'s gradient against the expected one, then finite differences."""
    name, x, got = gradient.name, gradient.x, gradient.got
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
    expected, numeric = gradient.expected, gradient.numeric
    tolerances = {"rtol": FD_RTOL, "atol": FD_ATOL} if expected is numeric else {}
    finding = diagnose_overflow(what, expected, got, names, leaves)
    if finding is None:
        finding = compare(what, expected, got, upstream=upstream, **tolerances)
    if finding is None and expected is not numeric:
        finding = compare(what, numeric, got, rtol=FD_RTOL, atol=FD_ATOL)
    if finding is not None and finding.kind == "elements":
        finding = diagnose_at_output(what, name, expected, got, at_output, upstream) or finding
    if finding is not None:
        fail(finding.sentences(context), finding, input=name)


# ------------------------------------------------------------------ diagnoses
def diagnose_overflow(what: str, expected, got, names: list, leaves: list) -> Finding | None:
    """Infinity or NaN only where an input is too big for an exponential: an overflow.

    The expected values are finite there, and the input (of the answer's shape) is
    beyond ±709.8 at every such element, where e^x (or e^−x) is infinity in float64.
    """
    if expected is None or not isinstance(got, (Tensor, np.ndarray)):
        return None
    expected, got = as_array(expected), as_array(got)
    if expected.shape != got.shape:
        return None
    bad = ~np.isfinite(got) & np.isfinite(expected)
    if not bad.any():
        return None
    for name, x in zip(names, leaves):
        if not is_tensor(x) or x.shape != got.shape:
            continue
        values = x.detach().numpy()
        if np.all(np.abs(values[bad]) > EXP_LIMIT):
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            word = "NaN (not a number)" if np.isnan(got[first]) else "infinity"
            where = index_text(first) if got.ndim else ""
            return Finding(
                "overflow",
                what,
                f"{what} is {word} at {where}, where {name} = {number(values[first])}, and "
                "the expected value is finite",
                f"a number that big overflows in an exponential: in float64 e^x is infinity "
                f"once x > {EXP_LIMIT:.1f} (in float32 once x > {EXP_LIMIT_FLOAT32:.1f}), and "
                "inf − inf or inf / inf is NaN. Write it so that no e^x of a large positive "
                "x is ever computed",
                expected=expected,
                got=got,
                wrong=bad,
            )
    return None


def diagnose_crossed(names: list, got: list, wanted: list) -> Finding | None:
    """A gradient that belongs to another input: two swapped, or one input's rule copied.

    Only where the two inputs' expected gradients differ (else nothing can be told).
    """
    for i in range(len(names)):
        if same(got[i], wanted[i]):
            continue
        for j in range(len(names)):
            if j == i or same(wanted[i], wanted[j]) or not same(got[i], wanted[j]):
                continue
            if same(got[j], wanted[i]):
                return crossed_finding("swapped", names, got, wanted, i, j)
            if got[i] is not None:
                return crossed_finding("copied", names, got, wanted, i, j)
    return None


def same(a, b) -> bool:
    """Two gradients (None or arrays) equal to finite differences' accuracy."""
    if a is None or b is None:
        return a is None and b is None
    a, b = as_array(a), as_array(b)
    return a.shape == b.shape and is_close(b, a, FD_RTOL, FD_ATOL)


def crossed_finding(kind: str, names: list, got: list, wanted: list, i: int, j: int) -> Finding:
    name, other = names[i], names[j]
    what = f"your gradient for {name}"
    expected = None if wanted[i] is None else as_array(wanted[i])
    mine = None if got[i] is None else as_array(got[i])
    wrong = None
    if expected is not None and mine is not None:
        wrong = ~np.isclose(mine, expected, rtol=FD_RTOL, atol=FD_ATOL)
    if kind == "swapped":
        symbols = ["None" if w is None else gradient_symbol(n) for n, w in zip(names, wanted)]
        order = ", ".join(symbols)
        observation = (
            f"your gradients for {name} and {other} are swapped: each is the one the other "
            "input should get"
        )
        advice = f"return them in the order of forward's inputs: ({order})"
    else:
        observation = f"{what} is the one {other} should get, as if {other}'s rule were copied"
        advice = (
            f"give {name} its own: ȳ times {name}'s own partial derivative, ∂y/∂{name}, "
            f"not ∂y/∂{other}"
        )
    details = {"input": name, "other": other}
    return Finding(kind, what, observation, advice, expected, mine, wrong, details)


def diagnose_at_output(
    what: str, name: str, expected, got, at_output, upstream=None
) -> Finding | None:
    """The derivative evaluated at the output y where it belongs at the input x
    (``at_output`` is ȳ · f′(y), from :func:`gradient_at_output`).

    Only where f′(y) varies from element to element: where it is one constant (a clip,
    whose f′(y) is 1 on all its outputs) ȳ · f′(y) is also what a backward that passes
    ȳ through (or scales it) gives, and the cause cannot be told.
    """
    if at_output is None or got is None or upstream is None:
        return None
    expected, got, at_output = as_array(expected), as_array(got), as_array(at_output)
    if not is_close(at_output, got) or is_close(at_output, expected, FD_RTOL, FD_ATOL):
        return None
    upstream = as_array(upstream)
    if upstream.shape != got.shape or not np.all(upstream != 0):
        return None
    slopes = at_output / upstream  # f′(y), element by element
    if np.allclose(slopes, slopes.flat[0], rtol=FD_RTOL, atol=FD_ATOL):
        return None
    return Finding(
        "at_output",
        what,
        f"{what} is ȳ times the derivative taken at the output y, not at the input {name}",
        f"evaluate the derivative at {name}: save {name} in forward for it (or, if you keep "
        f"y, write the derivative as a formula in y)",
        expected,
        got,
        ~np.isclose(got, expected, rtol=FD_RTOL, atol=FD_ATOL),
    )


# ------------------------------------------------------------ errors in the code
def advised_error(
    err: BaseException, method: Callable, what: str, context: str, ctx, names: list, leaves: list
) -> ExerciseError:
    """The short message for ``err``, raised in the learner's ``method`` (forward or
    backward), with one more sentence where its cause is plain (:func:`error_advice`),
    unless it is a stub (not answered yet)."""
    error = learner_error(err, method, what, context)
    advice = error_advice(err, method, ctx, names, leaves)
    if advice is None or isinstance(error, NotAnswered):
        return error
    return ExerciseError(f"{error.message} {advice}", error.finding, kind=error.kind)


def error_advice(err: BaseException, method: Callable, ctx, names: list, leaves: list):
    """Advice for an error whose cause is plain: a number given to save_for_backward,
    one of forward's arguments used in backward, saved tensors unpacked wrongly."""
    numbers = [n for n, x in zip(names, leaves) if not is_tensor(x)]
    if isinstance(err, TypeError) and "save_for_backward can only save" in str(err):
        name = numbers[0] if len(numbers) == 1 else "k"
        return (
            f"save_for_backward is for tensors: keep a number on ctx as an attribute, "
            f"ctx.{name} = {name}, and read ctx.{name} in backward."
        )
    if isinstance(err, NameError) and getattr(err, "name", None) in names and ctx is not None:
        name = err.name
        if name in numbers:
            return (
                f"{name} is an argument of forward, which backward does not see: keep it on "
                f"ctx in forward (ctx.{name} = {name}) and read ctx.{name} in backward."
            )
        return (
            f"{name} is an argument of forward, which backward does not see: save it in "
            f"forward with ctx.save_for_backward({name}) and read it from ctx.saved_tensors."
        )
    return unpack_advice(err, method, ctx)


def unpack_advice(err: BaseException, method: Callable, ctx) -> str | None:
    """``(x,) = ctx.saved_tensors`` when forward saved another number of tensors."""
    if ctx is None or not isinstance(err, ValueError) or "values to unpack" not in str(err):
        return None
    frame = learners_frame(err, method)
    if frame is None or "saved_tensors" not in (frame.line or ""):
        return None
    try:
        saved = len(ctx.saved_tensors)
    except Exception:  # the saved tensors cannot be read: no advice
        return None
    if saved == 0:
        return (
            "ctx.saved_tensors is empty: your forward saved nothing. Call "
            "ctx.save_for_backward(...) in forward with the tensors backward needs."
        )
    return (
        f"ctx.saved_tensors holds {plural(saved, 'tensor')}, those forward saved: unpack as "
        "many, in the order they were saved."
    )


def proof_text(label: str, reference: Callable | None) -> str:
    against = "finite differences in float64"
    if reference is not None:
        name = getattr(reference, "__name__", "the reference")
        against += f" and the engine's gradient of {name}"
    return (
        f"With {label}, its backward gives the same gradients as {against}. You just proved that "
        "ctx carries what backward needs from forward, and that backward applies the chain rule."
    )
