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

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import wraps

import numpy as np

from ..core.tensor import Tensor
from ..ops import collapse_sum_like, registry
from ..record.grad_mode import no_grad
from ..record.graph import NOT_SAVED, OpNode, not_saved_message
from .answers import as_numbers
from .cases import BINARY, Case, default_cases
from .diagnose import (
    ATOL,
    RTOL,
    Finding,
    axes_text,
    collapse_sum,
    compare,
    diagnose_applied_again,
    diagnose_real_part_only,
    diagnose_shape,
    diagnose_swapped,
    diagnose_upstream_only,
    is_close,
    shape_text,
    wrong_values,
)
from .guard import checker, modes_kept
from .report import (
    PASSED_ON,
    CheckerMisuse,
    ExerciseError,
    NotAnswered,
    Passed,
    call_learner,
    fail,
    fail_on,
    learner_error,
)

ENGINE_RULE = "engine_rule"  # the id of a rule that calls the engine's own: no credit
FD_EPS = 1e-6  # the step of the central differences, in float64
FD_RTOL, FD_ATOL = 1e-4, 1e-6  # finite differences are this accurate, at best
SEED = 0

Rule = Callable[[OpNode, Tensor], list]

REGISTERED: dict[str, Callable] = {}  # op name -> its own rule, while trying_rule swaps it


def engine_rule(op_name: str) -> Callable:
    """The op's own rule, even inside :func:`trying_rule`."""
    return REGISTERED.get(op_name) or registry.get_op(op_name).gradient


# ----------------------------------------------------------------- check_rule
@checker
def check_rule(
    op_name: str, rule: Rule, shapes: list | None = None, complex_values: bool = False
) -> Passed:
    """Check ``rule(orig, grad) -> list`` as the gradient rule of the op ``op_name``.

    It runs on several calls of the op (``shapes`` replaces the default shapes: one
    shape per call for a one-input op, a tuple of shapes for more), in float64 (in
    complex128 with ``complex_values``), with a random ȳ. Each gradient it returns must
    match the engine's own rule and finite differences. A wrong gradient raises
    :class:`ExerciseError` saying which input, which elements, expected and got, and
    why if the mistake is a known one (ȳ forgotten, a sign, two gradients swapped, for
    complex inputs a conjugate missing or one too many...).
    """
    op = registry.get_op(op_name)
    cases = default_cases(op_name, shapes)
    rng = np.random.default_rng(SEED)
    wrong = []
    for case in cases:  # every call, each right or wrong on its own: partial credit
        try:
            check_case(op, rule, case, rng, complex_values)
        except NotAnswered:
            raise
        except ExerciseError as err:
            if err.kind == ENGINE_RULE:
                raise  # no credit for the engine's own rule
            wrong.append(err)
    if wrong:
        raise wrong[0].in_parts(len(cases) - len(wrong), len(cases), "call") from None
    return Passed(f"Your rule for {op_name} is right.", proof_text(op, cases, complex_values))


def check_case(
    op, rule: Rule, case: Case, rng: np.random.Generator, complex_values: bool = False
) -> None:
    inputs = case.inputs(rng, complex_values)
    out = case.call(*inputs)
    node = node_of(out, op.name)
    names = input_names(op, len(node.next_functions), complex_values)
    context = f"With {case.label(names)}"
    upstream = Tensor(random_like(rng, out))
    with no_grad():
        expected = engine_rule(op.name)(node, upstream.clone())
        with engine_rules_watched(op) as used:
            got = run_rule(rule, node, upstream.clone(), context, names)
    if used:
        fail(engine_rule_used(op.name, used[0], context), kind=ENGINE_RULE)
    check_returned(got, names, context)
    numeric = finite_differences(case.call, inputs, [upstream.numpy()])
    for i, name in enumerate(names):
        if not node.needs_input_grad[i]:
            continue
        what = f"your gradient for {name}"
        ours = upstream if upstream.shape == inputs[i].shape else None
        finding = compare(what, expected[i], got[i], upstream=ours)
        if finding is not None and finding.kind == "elements":
            others = {other: expected[j] for j, other in enumerate(names) if j != i}
            again = rule_at_its_output(op, case, node, upstream)
            finding = rule_mistake(what, expected[i], got[i], ours, others, again, op) or finding
        if finding is None:
            finding = compare(what, numeric[i], got[i], rtol=FD_RTOL, atol=FD_ATOL)
        if finding is not None:
            fail(finding.sentences(context), finding, input=name)


@contextmanager
def engine_rules_watched(op) -> Iterator[list]:
    """While the block runs, note every call of the engine's own rules for ``op``.

    The block runs the learner's rule. The engine's rule may be reached by many roads:
    ``wb.ops.OPS[name].gradient``, ``orig.op.gradient``, the function imported from
    ``workbench.ops``, ``backward()`` or ``wb.autograd.grad`` on a call of the op (the
    engine runs the rule), forward mode (``wb.func.jvp``: the op's JVP rule gives ȳ · σ'
    for an elementwise op), ``torch`` under ``as_torch()``. Every road ends in the rule's
    code, so a profile function (``sys.setprofile``) watches for those code objects being
    called, whoever calls them; PyTorch's own backward is watched too when the real
    torch is imported. The list the block gets holds what was called (empty: nothing).
    """
    watched = {rule.__code__: rule.__name__ for rule in own_rules(op)}
    watched.update(torch_backward_codes())
    used: list[str] = []

    def profile(frame, event, arg) -> None:
        if event == "call" and frame.f_code in watched:
            used.append(watched[frame.f_code])

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield used
    finally:
        sys.setprofile(previous)


def own_rules(op) -> list[Callable]:
    """The op's registered rules: its gradient rule (even inside trying_rule) and its
    JVP rule; plain Python functions only (a code object to watch for)."""
    rules = [engine_rule(op.name), op.jvp]
    return [rule for rule in rules if hasattr(rule, "__code__")]


def torch_backward_codes() -> dict:
    """The code of PyTorch's backward (what ``backward()``, ``torch.autograd.grad`` and
    ``torch.func.vjp`` all run), if the real PyTorch is imported; else nothing."""
    torch_graph = sys.modules.get("torch.autograd.graph")
    run_backward = getattr(torch_graph, "_engine_run_backward", None)
    code = getattr(run_backward, "__code__", None)
    return {code: "PyTorch's backward"} if code is not None else {}


def engine_rule_used(op_name: str, what: str, context: str) -> str:
    """The message for a rule that ran the engine's own rule (or PyTorch's backward)."""
    if what == "PyTorch's backward":
        ran = f"PyTorch's backward ran inside it, which is the engine's own rule for {op_name}"
    else:
        ran = (
            f"{what}, the engine's own rule for {op_name}, ran inside it (through wb.ops.OPS, "
            f"orig.op, backward() or autograd.grad on {op_name}, or forward mode)"
        )
    return (
        f"{context}, your rule does not compute the gradient itself: {ran}. The exercise is "
        "to write the rule yourself: compute each gradient with tensor operations on grad "
        "and what orig keeps."
    )


def rule_mistake(what, expected, got, upstream, others: dict, again, op) -> Finding | None:
    """What a rule's check knows beyond :func:`compare`: ȳ passed on unchanged, the
    gradient of another input, the op applied again to its own output, a complex
    gradient without its imaginary part (each a diagnosis in diagnose.py)."""
    return (
        diagnose_upstream_only(what, expected, got, upstream)
        or diagnose_swapped(what, expected, got, others)
        or diagnose_applied_again(what, expected, got, again, op.name)
        or diagnose_real_part_only(what, expected, got)
    )


def rule_at_its_output(op, case: Case, node: OpNode, upstream: Tensor):
    """The engine's rule for the op called on its own output y (σ(y) where y = σ(x)):
    what a rule gives that applies the op to ``orig.out`` again. None for an op with
    more than one input, or one that does not keep its output."""
    if len(case.shapes) != 1 or not op.save_out or len(node.next_functions) != 1:
        return None
    y = Tensor(node.out.detach().numpy(), requires_grad=True)
    again = node_of(case.call(y), op.name)
    with no_grad():
        return engine_rule(op.name)(again, upstream.clone())[0]


def random_like(rng: np.random.Generator, out: Tensor) -> np.ndarray:
    """Standard normal values in ``out``'s shape; both parts random if it is complex."""
    values = rng.standard_normal(out.shape)
    if out.is_complex():
        values = values + 1j * rng.standard_normal(out.shape)
    return values


def run_rule(rule: Rule, node: OpNode, grad: Tensor, context: str = "", names: tuple = ()):
    """The learner's rule on one node; an error in it becomes a short message (``names``:
    what the message calls the inputs, where not the op's own names)."""
    try:
        with modes_kept():
            return rule(node, grad)
    except PASSED_ON:  # the checker's own stops and messages go through as they are
        raise
    except Exception as err:
        name = getattr(rule, "__name__", "<lambda>")
        what = "rule" if name == "<lambda>" else f"rule {name}"
        err = unsaved_input_error(err, node, names)
        raise learner_error(err, rule, what, context) from None


def unsaved_input_error(err: Exception, node: OpNode, names: tuple = ()) -> Exception:
    """``err`` as the engine's "used input x, which the op does not save" error, when it
    came from an input the node did not keep (orig.args holds a TensorMeta there).

    Used as a tensor, a TensorMeta raises that error itself; in an arithmetic with
    another (``x * x``, ``-x``) or passed to an op (``wb.tanh(x)``), Python raises a
    TypeError that names only its type. Both get the same plain words
    (:func:`~workbench.exercises.report.known_cause`), with the input named as the
    message names it (``names``). The traceback stays, so the message still names
    the learner's line.
    """
    unsaved = [i for i, slot in enumerate(node.inputs) if slot is NOT_SAVED]
    slots = node.op.input_names
    if isinstance(err, TypeError) and "TensorMeta" in str(err) and len(unsaved) == 1:
        index = unsaved[0]
    elif isinstance(err, RuntimeError) and len(names) == len(slots):
        index = next((i for i in unsaved if f"used input {slots[i]}," in str(err)), None)
    else:
        index = None
    if index is None:
        return err
    shown = names[index] if len(names) == len(slots) else slots[index]
    message = not_saved_message(node.op.name, f"input {shown}", "it")
    return RuntimeError(message).with_traceback(err.__traceback__)


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
    raise CheckerMisuse(f"the call does not end in the op '{op_name}' (it ends in {node})")


def input_names(op, count: int, complex_values: bool = False) -> tuple:
    """The op's names for its inputs; ``z`` for the one input of a complex call, as the
    lessons name a complex number (there ``x`` is its real part)."""
    try:
        names = tuple(op.input_names[i] for i in range(count))
    except (IndexError, TypeError):
        names = ()
    if len(names) != count:
        return tuple(f"input {i}" for i in range(count))
    return ("z",) if complex_values and names == ("x",) else names


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
        return sum(
            float(np.sum(np.conj(g) * o.detach().numpy()).real) for g, o in zip(upstreams, outputs)
        )

    return [
        central_differences(a, loss) if differentiable(x) else None for a, x in zip(arrays, inputs)
    ]


def central_differences(array: np.ndarray, loss: Callable[[], float]) -> np.ndarray:
    """``(L(a + ε) − L(a − ε)) / (2ε)``, one element of ``array`` at a time (moved in place);
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
    broadcast = op.name in BINARY and any(len(set(c.shapes)) > 1 for c in cases)
    dtype = "complex128" if complex_values else "float64"
    text = (
        f"On {plural(len(cases), 'call')} of {op.name} (shapes {calls_text(op, cases)}) "
        f"it gives the same gradients as finite differences in {dtype} and as the engine's own "
        "rule"
    )
    if broadcast:
        text += ", broadcast calls included: it sums each gradient back to its input's shape"
    formula = complex_formula(op) if complex_values else backward_formula(op)
    if formula:
        text += f". You just proved that it computes {formula}: the chain rule through {op.name}"
    return text + "."


def calls_text(op, cases: list[Case]) -> str:
    """``(2, 3) × (3,), (2, 3) × (2, 3) with b needing no gradient``: what ran."""
    calls = []
    for case in cases:
        text = " × ".join(shape_text(s) for s in case.shapes)
        names = input_names(op, len(case.shapes))
        unwanted = [name for name, need in zip(names, case.needs) if not need]
        if unwanted:
            text += f" with {' and '.join(unwanted)} needing no gradient"
        calls.append(text)
    return ", ".join(calls)


def backward_formula(op) -> str | None:
    """The rule as its docstring writes it: ``x̄ = ȳ · y · (1 − y)``."""
    lines = [ln for ln in op.formula.splitlines() if ln.startswith("Backward")]
    if not lines:
        return None
    return lines[0].removeprefix("Backward:").split("(complex")[0].strip()


def complex_formula(op) -> str | None:
    """The rule for complex inputs, as its docstring writes it, with a one-input op's
    input named z (``z̄ = ȳ · conj(y)`` for exp): the real rule is not it."""
    doc = (op.gradient.__doc__ or "") if op.gradient is not None else ""
    lines = [ln.strip() for ln in doc.splitlines()]
    formula = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Complex")), None)
    if formula is None:  # abs writes it in brackets: "(complex x: ȳ · x / |x|; 0 at x = 0 ...)"
        inline = re.search(r"\(complex x: ([^;)]+)", op.formula)
        real = backward_formula(op)
        if inline is None or real is None or "=" not in real:
            return None
        formula = f"{real.split('=')[0].strip()} = {inline.group(1).strip()}"
    if op.input_names == ("x",):
        formula = re.sub(r"(?<![A-Za-z])x(?![A-Za-z])", "z", formula)
    return formula


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


# ------------------------------------------------- collapse_sum_like by hand
COLLAPSE_PAIRS = [  # (the shape of g, the shape to sum it back to)
    ((2, 3), (3,)),
    ((2, 3), (2, 1)),
    ((4, 2, 3), (2, 1)),
    ((4, 2, 3), (4, 1, 3)),
    ((2, 3), ()),
    ((3,), (3,)),
]


@checker
def check_collapse_sum(candidate: Callable) -> Passed:
    """Check ``candidate(g, shape)``, ``collapse_sum_like`` written with numpy (lesson 2).

    It must sum the numpy array ``g`` back to ``shape`` on 2-D and 3-D pairs of shapes,
    as the engine's ``collapse_sum_like`` does (broadcasting stretched ``shape`` to
    ``g.shape``; the sum undoes it). A wrong result says
    which slip it looks like (nothing summed, the size-1 axes left, keepdims
    forgotten, a mean...) or, where none fits, expected against got.
    """
    rng = np.random.default_rng(2)
    for out_shape, shape in COLLAPSE_PAIRS:
        g = rng.standard_normal(out_shape)
        expected = collapse_sum_like(Tensor(g), Tensor(np.zeros(shape))).numpy()
        context = f"With g of shape {shape_text(out_shape)} and shape={shape_text(shape)}"
        got = call_learner(candidate, (g.copy(), shape), context, "function my_collapse_sum")
        fail_on(collapse_finding(g, shape, expected, as_result(got, context)), context)
    return Passed(
        "Your collapse-sum is right.",
        "On 2-D and 3-D pairs of shapes it sums exactly the axes broadcasting added: "
        "the leading ones, and those of size 1.",
    )


def as_result(
    got, context: str, wanted: str = "the summed array", real: str = "g is real, and so is its sum"
) -> np.ndarray:
    """The learner's result as a float array (a numpy scalar for a full sum); None, text,
    complex... refused in words: ``wanted`` says what to return, ``real`` why it is real."""
    if got is None:
        fail(f"{context}, your function returned None. Return {wanted}.")
    try:
        array = as_numbers(got, "function returned what")
    except ExerciseError as err:
        fail(f"{context}, {err.message[0].lower()}{err.message[1:]}")
    if array.dtype.kind == "c":
        fail(f"{context}, your function returned complex numbers: {real}.")
    return array.astype(np.float64)


def collapse_finding(g: np.ndarray, shape: tuple, expected, got: np.ndarray) -> Finding | None:
    """None if ``got`` is ``expected``, ``g`` summed back to ``shape`` by the engine's
    ``collapse_sum_like``; else what is wrong with it."""
    if is_close(expected, got):
        return None
    finding = diagnose_collapse_slip(g, shape, expected, got)
    if finding is not None:
        return finding
    what = "your result"
    if got.shape != expected.shape:
        return Finding(
            "shape",
            what,
            f"{what} has shape {shape_text(got.shape)} where {shape_text(shape)} was expected",
            f"the result has exactly the shape it is given: {steps_text(g.shape, shape)}",
            details={"expected_shape": tuple(shape), "got_shape": got.shape},
        )
    return compare(what, expected, got)


@dataclass(frozen=True)
class Slip:
    """A slip in a collapse-sum: ``made(g, shape)`` is what it returns (None where it
    cannot happen); ``observation`` and ``advice`` put it in words."""

    made: Callable[[np.ndarray, tuple], np.ndarray | None]
    observation: str  # with {got} and {want}: the shapes
    advice: Callable[[tuple, tuple], str]  # (g's shape, shape) -> what to do


def diagnose_collapse_slip(g: np.ndarray, shape: tuple, expected, got) -> Finding | None:
    """The first slip whose result is the learner's result (and not the right one)."""
    for slip in COLLAPSE_SLIPS:
        slipped = slip.made(g, shape)
        if slipped is None or not is_close(slipped, got) or is_close(expected, slipped):
            continue
        observation = slip.observation.format(got=shape_text(got.shape), want=shape_text(shape))
        advice = slip.advice(g.shape, shape)
        kind = slip.made.__name__
        if got.shape == expected.shape:  # the values line up: a heat map can show them
            return wrong_values(kind, "your result", observation, advice, expected, got, RTOL, ATOL)
        details = {"expected_shape": tuple(shape), "got_shape": got.shape}
        return Finding(kind, "your result", observation, advice, details=details)
    return None


def leading_axes(g_shape: tuple, shape: tuple) -> tuple:
    """The axes broadcasting added in front: ``g.ndim − len(shape)`` of them."""
    return tuple(range(len(g_shape) - len(shape)))


def size_one_axes(g_shape: tuple, shape: tuple) -> tuple:
    """The axes of g (counted in g) where ``shape`` has size 1 and g has not."""
    lead = len(g_shape) - len(shape)
    return tuple(lead + i for i, size in enumerate(shape) if size == 1 and g_shape[lead + i] != 1)


def steps_text(g_shape: tuple, shape: tuple) -> str:
    """The sums that take g back to ``shape``, in words."""
    lead, ones = leading_axes(g_shape, shape), size_one_axes(g_shape, shape)
    steps = []
    if lead:
        added = "axis" if len(lead) == 1 else "axes"
        steps.append(f"sum over {axes_text(lead)} (the leading {added} broadcasting added)")
    if ones:
        then = "then " if lead else "sum "
        steps.append(f"{then}over {axes_text(ones)} with keepdims=True (size 1 in shape)")
    return ", ".join(steps) if steps else "g already has that shape"


def nothing_summed(g: np.ndarray, shape: tuple) -> np.ndarray:
    """g as it came."""
    return g


def size_one_axes_left(g: np.ndarray, shape: tuple) -> np.ndarray | None:
    """The leading axes summed, the size-1 axes not (step 2 left out)."""
    if not size_one_axes(g.shape, shape):
        return None
    return g.sum(axis=leading_axes(g.shape, shape))


def leading_axes_left(g: np.ndarray, shape: tuple) -> np.ndarray | None:
    """The size-1 axes summed (keepdims), the leading ones left (step 1 left out)."""
    if not leading_axes(g.shape, shape):
        return None
    return g.sum(axis=size_one_axes(g.shape, shape), keepdims=True)


def one_leading_axis_summed(g: np.ndarray, shape: tuple) -> np.ndarray | None:
    """Only the first of several leading axes summed, then the size-1 axes."""
    if len(leading_axes(g.shape, shape)) < 2:
        return None
    once = g.sum(axis=0)
    return once.sum(axis=size_one_axes(once.shape, shape), keepdims=True)


def leading_axes_kept(g: np.ndarray, shape: tuple) -> np.ndarray | None:
    """The right sums, but the leading axes kept with size 1 (keepdims=True on them)."""
    if not leading_axes(g.shape, shape):
        return None
    return g.sum(axis=leading_axes(g.shape, shape) + size_one_axes(g.shape, shape), keepdims=True)


def keepdims_left_out(g: np.ndarray, shape: tuple) -> np.ndarray | None:
    """Every sum right, but the size-1 axes summed without keepdims=True."""
    ones = size_one_axes(g.shape, shape)
    if not ones:
        return None
    return g.sum(axis=leading_axes(g.shape, shape) + ones)


def trailing_axes_summed(g: np.ndarray, shape: tuple) -> np.ndarray | None:
    """The last ``g.ndim − len(shape)`` axes summed in place of the first ones."""
    if g.ndim == len(shape):
        return None
    return g.sum(axis=tuple(range(len(shape), g.ndim)))


def everything_summed(g: np.ndarray, shape: tuple) -> np.ndarray | None:
    """All of g summed into one number."""
    return None if shape == () else np.asarray(g.sum())


def mean_in_place_of_sum(g: np.ndarray, shape: tuple) -> np.ndarray:
    """The mean over the axes to sum (``mean`` where ``sum`` belongs)."""
    return collapse_sum(g, shape) * (int(np.prod(shape, dtype=int)) / g.size)


COLLAPSE_SLIPS = (
    Slip(
        nothing_summed,
        "your result is g itself, of shape {got}: nothing was summed",
        steps_text,
    ),
    Slip(
        size_one_axes_left,
        "your result has shape {got} where {want} was expected: the leading axes are summed, "
        "but not the axes where shape has size 1",
        lambda g_shape, shape: (
            f"sum over {axes_text(size_one_axes(g_shape, shape))} too, with keepdims=True"
        ),
    ),
    Slip(
        leading_axes_left,
        "your result has shape {got} where {want} was expected: the axes where shape has "
        "size 1 are summed, but the leading axes that broadcasting added are still there",
        lambda g_shape, shape: (
            f"sum over {axes_text(leading_axes(g_shape, shape))} too: "
            "g has g.ndim − len(shape) more axes than shape"
        ),
    ),
    Slip(
        one_leading_axis_summed,
        "your result has shape {got} where {want} was expected: only the first of the "
        "leading axes is summed",
        lambda g_shape, shape: (
            f"sum every leading axis ({axes_text(leading_axes(g_shape, shape))}): g has "
            "g.ndim − len(shape) of them"
        ),
    ),
    Slip(
        leading_axes_kept,
        "your result has shape {got} where {want} was expected: its values are the right "
        "sums, but the leading axes are still there, with size 1",
        lambda g_shape, shape: (
            "sum the leading axes without keepdims, so that they go: shape has "
            "g.ndim − len(shape) fewer axes than g"
        ),
    ),
    Slip(
        keepdims_left_out,
        "your result has shape {got} where {want} was expected: its values are the right "
        "sums, but the axes where shape has size 1 are gone",
        lambda g_shape, shape: "sum those axes with keepdims=True, so that they stay, with size 1",
    ),
    Slip(
        trailing_axes_summed,
        "your result has shape {got} where {want} was expected: the trailing axes of g are "
        "summed, not the leading ones",
        lambda g_shape, shape: (
            "broadcasting lines shapes up from the right, so the axes it "
            f"adds are in front: {steps_text(g_shape, shape)}"
        ),
    ),
    Slip(
        everything_summed,
        "your result is one number, the sum of all of g, where shape {want} was expected",
        lambda g_shape, shape: (
            "sum only where broadcasting stretched: " + steps_text(g_shape, shape)
        ),
    ),
    Slip(
        mean_in_place_of_sum,
        "your result is the mean over the broadcast axes, not the sum",
        lambda g_shape, shape: (
            "sum them: an element that broadcasting reused gets the "
            "gradient of every place it went, added up"
        ),
    ),
)
