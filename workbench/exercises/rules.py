"""Check a learner's gradient rule, and try it in the real engine for a ``with`` block.

A gradient rule is what the registry holds for each op (``OPS[name].gradient``)::

    def sigmoid_rule(orig, grad):       # orig: the node of the call; grad: ȳ
        y = orig.out
        return [grad * y * (1 - y)]     # one gradient per input: [x̄]

:func:`check_rule` runs the learner's rule on several calls of the op (several
shapes, broadcast pairs for binary ops), all in float64, and compares what it
returns, input by input, with the engine's own rule and with finite differences.
:func:`trying_rule` puts the learner's rule in the registry for the span of a
``with`` block, so that ``backward()``, the stepper and the pictures run it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps

import numpy as np

from ..autograd.grad_mode import no_grad
from ..autograd.graph import OpNode
from ..ops import registry
from ..tensor import Tensor
from .cases import BINARY, Case, default_cases
from .diagnose import compare, diagnose_shape, shape_text
from .report import PASSED_ON, Passed, fail, learner_error

FD_EPS = 1e-6  # the step of the central differences, in float64
FD_RTOL, FD_ATOL = 1e-4, 1e-6  # finite differences are this accurate, at best
SEED = 0

Rule = Callable[[OpNode, Tensor], list]

REGISTERED: dict[str, Callable] = {}  # op name -> its own rule, while trying_rule swaps it


def engine_rule(op_name: str) -> Callable:
    """The op's own rule, even inside :func:`trying_rule`."""
    return REGISTERED.get(op_name) or registry.get_op(op_name).gradient


# ----------------------------------------------------------------- check_rule
def check_rule(
    op_name: str, rule: Rule, shapes: list | None = None, complex_values: bool = False
) -> Passed:
    """Check ``rule(orig, grad) -> list`` as the gradient rule of the op ``op_name``.

    It runs on several calls of the op (``shapes`` replaces the default shapes: one
    shape per call for a one-input op, a tuple of shapes for more), in float64 (in
    complex128 with ``complex_values``), with a random ȳ. Each gradient it returns must
    match the engine's own rule and finite differences. A wrong gradient raises
    :class:`ExerciseError` saying which input, which elements, expected and got, and
    why if the mistake is a known one (for complex inputs: a missing conjugate).
    """
    op = registry.get_op(op_name)
    cases = default_cases(op_name, shapes)
    rng = np.random.default_rng(SEED)
    for case in cases:
        check_case(op, rule, case, rng, complex_values)
    return Passed(f"Your rule for {op_name} is right.", proof_text(op, cases, complex_values))


def check_case(
    op, rule: Rule, case: Case, rng: np.random.Generator, complex_values: bool = False
) -> None:
    inputs = case.inputs(rng, complex_values)
    out = case.call(*inputs)
    node = node_of(out, op.name)
    names = input_names(op, len(node.next_functions))
    context = f"With {case.label(names)}"
    upstream = Tensor(random_like(rng, out))
    with no_grad():
        expected = engine_rule(op.name)(node, upstream.clone())
        got = run_rule(rule, node, upstream.clone(), context)
    check_returned(got, names, context)
    numeric = finite_differences(case.call, inputs, [upstream.numpy()])
    for i, name in enumerate(names):
        if not node.needs_input_grad[i]:
            continue
        what = f"your gradient for {name}"
        ours = upstream if upstream.shape == inputs[i].shape else None
        finding = compare(what, expected[i], got[i], upstream=ours)
        if finding is None:
            finding = compare(what, numeric[i], got[i], rtol=FD_RTOL, atol=FD_ATOL)
        if finding is not None:
            fail(finding.sentences(context), finding, input=name)


def random_like(rng: np.random.Generator, out: Tensor) -> np.ndarray:
    """Standard normal values in ``out``'s shape; both parts random if it is complex."""
    values = rng.standard_normal(out.shape)
    if out.is_complex():
        values = values + 1j * rng.standard_normal(out.shape)
    return values


def run_rule(rule: Rule, node: OpNode, grad: Tensor, context: str = ""):
    """The learner's rule on one node; an error in it becomes a short message."""
    try:
        return rule(node, grad)
    except PASSED_ON:  # the checker's own stops and messages go through as they are
        raise
    except Exception as err:
        name = getattr(rule, "__name__", "<lambda>")
        what = "rule" if name == "<lambda>" else f"rule {name}"
        raise learner_error(err, rule, what, context) from None


def check_returned(got, names: tuple, context: str) -> None:
    """A list with one Tensor (or None) per input: what the engine needs from a rule."""
    count = len(names)
    if isinstance(got, Tensor) and count == 1:
        fail(
            f"{context}, your rule returned a Tensor, not a list. "
            f"Return a list with one gradient per input: [{gradient_symbol(names[0])}]."
        )
    if not isinstance(got, (list, tuple)):
        symbols = ", ".join(map(gradient_symbol, names))
        fail(
            f"{context}, your rule returned a {type(got).__name__}. "
            f"Return a list with one gradient per input: [{symbols}]."
        )
    if len(got) != count:
        fail(
            f"{context}, your rule returned {plural(len(got), 'gradient')} where {count} "
            "were expected. "
            f"Return one per input of the op ({', '.join(names)}), None for an input that "
            "needs none."
        )
    for name, grad in zip(names, got):
        if isinstance(grad, np.ndarray):
            fail(
                f"{context}, your gradient for {name} is a numpy array, not a Tensor. "
                "Build it with tensor operations (on grad and orig.args), so that the "
                "engine can use it, and differentiate it again."
            )


def node_of(out: Tensor, op_name: str) -> OpNode:
    """The node that the call of the op recorded: its output's grad_fn."""
    node = out.grad_fn
    if isinstance(node, OpNode) and node.op.name == op_name:
        return node
    raise ValueError(f"the call does not end in the op '{op_name}' (it ends in {node})")


def input_names(op, count: int) -> tuple:
    try:
        names = tuple(op.input_names[i] for i in range(count))
    except (IndexError, TypeError):
        names = ()
    return names if len(names) == count else tuple(f"input {i}" for i in range(count))


def gradient_symbol(name: str) -> str:
    """``x̄`` for ``x`` (a combining macron), as the rules' docstrings write it."""
    return f"{name}\u0304" if len(name) == 1 else f"{name}_grad"


# -------------------------------------------------------- finite differences
def finite_differences(call: Callable, inputs: list, upstreams: list) -> list:
    """∂L/∂x for each input x that requires grad, by central differences in float64,
    with L = Σ ȳ · output (one ȳ per output). None for the other inputs.

    Complex values: L = Re Σ conj(ȳ) · output, and the gradient of a complex x is
    ∂L/∂Re x + i · ∂L/∂Im x, PyTorch's convention (each part moved in turn).

    Runs on copies: the inputs themselves are saved in the graph and must not move.
    """
    arrays = [x.detach().numpy().copy() if differentiable(x) else x for x in inputs]

    def loss() -> float:
        args = [Tensor(a) if differentiable(x) else x for a, x in zip(arrays, inputs)]
        with no_grad():
            result = call(*args)
        outputs = result if isinstance(result, tuple) else (result,)
        return sum(float(np.sum(np.conj(g) * o.numpy()).real) for g, o in zip(upstreams, outputs))

    return [
        central_differences(a, loss) if differentiable(x) else None for a, x in zip(arrays, inputs)
    ]


def central_differences(array: np.ndarray, loss: Callable[[], float]) -> np.ndarray:
    """``(L(a + ε) − L(a − ε)) / 2ε``, one element of ``array`` at a time (moved in place);
    for a complex array, in the real and then the imaginary direction: ∂L/∂Re + i·∂L/∂Im."""
    grad = np.zeros_like(array)
    directions = (1, 1j) if array.dtype.kind == "c" else (1,)
    for index in np.ndindex(array.shape):
        keep = array[index]
        for direction in directions:
            array[index] = keep + FD_EPS * direction
            plus = loss()
            array[index] = keep - FD_EPS * direction
            minus = loss()
            array[index] = keep
            grad[index] += direction * (plus - minus) / (2 * FD_EPS)
    return grad


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def differentiable(x) -> bool:
    return isinstance(x, Tensor) and x.requires_grad


def proof_text(op, cases: list[Case], complex_values: bool = False) -> str:
    shapes = ", ".join(" × ".join(shape_text(s) for s in case.shapes) for case in cases)
    broadcast = op.name in BINARY and any(len(set(c.shapes)) > 1 for c in cases)
    dtype = "complex128" if complex_values else "float64"
    text = (
        f"On {plural(len(cases), 'call')} of {op.name} ({plural(len(cases), 'shape')} {shapes}) "
        f"it gives the same gradients as finite differences in {dtype} and as the engine's own "
        "rule"
    )
    if broadcast:
        text += ", broadcast calls included: it sums each gradient back to its input's shape"
    backward = [ln for ln in op.formula.splitlines() if ln.startswith("Backward")]
    if backward:
        formula = backward[0].removeprefix("Backward:").strip()
        text += f". You just proved that it computes {formula}: the chain rule through {op.name}"
    return text + "."


# ----------------------------------------------------------------- trying_rule
@contextmanager
def trying_rule(op_name: str, rule: Rule) -> Iterator[registry.OpDef]:
    """Run ``rule`` as the op's gradient rule inside the ``with`` block; restore it after.

    Everything that runs backward inside the block (``backward()``, ``wb.autograd.grad``,
    the stepper, the pictures) uses the learner's rule; the op's ``formula`` (what the
    pictures show) stays. The registered rule comes back when the block ends, even on
    an error. A rule that returns the wrong number of gradients or a wrong shape stops
    the backward pass with a short message instead of an engine error.
    """
    op = registry.get_op(op_name)
    outermost = op_name not in REGISTERED
    before = op.gradient
    if outermost:
        REGISTERED[op_name] = before
    op.gradient = checked_in_engine(rule, op)
    try:
        yield op
    finally:
        op.gradient = before
        if outermost:
            del REGISTERED[op_name]


def checked_in_engine(rule: Rule, op) -> Rule:
    """The learner's rule, with what it returns checked the way the engine needs it."""

    @wraps(rule)
    def learners_rule(orig, grad):
        got = run_rule(rule, orig, grad)
        names = input_names(op, len(orig.next_functions))
        context = f"In backward, at {orig.name()}"
        check_returned(got, names, context)
        for i, (name, g) in enumerate(zip(names, got)):
            expected = orig.input_shape(i)
            if isinstance(g, Tensor) and expected is not None and g.shape != expected:
                what = f"your gradient for {name}"
                finding = diagnose_shape(what, np.zeros(expected), g, values_known=False)
                fail(finding.sentences(context), finding, input=name)
        return got

    return learners_rule
