"""Check a learner's JVP rule: the forward-mode twin of a gradient rule (lesson 11).

A JVP rule is what the registry holds for each op next to its gradient rule
(``OPS[name].jvp``, registered with ``register_jvp``)::

    def sigmoid_jvp(orig, tangents):    # orig: the call (args, out); tangents: [ẋ]
        y = orig.out
        return tangents[0] * y * (1 - y)    # one tensor, ẏ, of y's shape

:func:`check_jvp_rule` runs the learner's rule on several calls of the op (several
shapes, broadcast pairs for mul, one call where an input is a constant whose tangent
is zero), all in float64, with random tangents, and compares the ẏ it returns with
the engine's own JVP rule and with a finite difference along the tangents,
(f(x + hẋ) − f(x − hẋ)) / (2h). A wrong ẏ is named where the mistake is a known one
(:data:`SLIPS`: a factor of the derivative left out, the derivative taken at the
tangent, the product rule's second term forgotten, its terms swapped, the ε² term
kept...); otherwise the check shows expected and got.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.tensor import Tensor
from ..ops import registry
from ..record.forward_ad import JvpCall
from ..record.grad_mode import no_grad
from .cases import Case, default_cases
from .diagnose import NOT_VALUES, Finding, compare, is_close, shape_text, wrong_values
from .guard import checker
from .report import CheckerMisuse, Passed, call_learner, fail
from .rules import FD_ATOL, FD_EPS, FD_RTOL, plural

SEED = 11
JvpRule = Callable[[JvpCall, list], Tensor]

# What compare's findings advise for a gradient, said for a tangent.
ADVICE = {
    "zeros": "the tangent got lost on the way (multiplied by 0, or never used)",
    "no_upstream": "multiply it by ẋ = tangents[0], the tangent arriving from the input: "
    "that is the chain rule, ẏ = dy/dx · ẋ",
    "not_a_tensor": "build it with tensor operations on tangents and orig.args or orig.out, "
    "so that it is a Tensor",
}


# ----------------------------------------------------------------- check_jvp_rule
@checker
def check_jvp_rule(op_name: str, rule: JvpRule) -> Passed:
    """Check ``rule(orig, tangents) -> ẏ`` as the JVP rule of the op ``op_name``.

    ``orig`` holds the call (``orig.args``, ``orig.out``), ``tangents`` one tangent per
    input (a tensor of that input's shape; zeros for an input that does not move). The
    rule must return one tensor of the output's shape, equal to the engine's JVP rule
    and to finite differences along the tangents.
    """
    op = registry.get_op(op_name)
    if op.jvp is None:
        raise CheckerMisuse(f"the op '{op_name}' has no JVP rule to check against")
    cases = jvp_cases(op_name)
    rng = np.random.default_rng(SEED)
    for case in cases:
        check_jvp_case(op, rule, case, rng)
    return Passed(f"Your JVP rule for {op_name} is right.", proof_text(op, cases))


def jvp_cases(op_name: str) -> list[Case]:
    """check_rule's calls of the op; an input that "needs no gradient" there is a
    constant here: it does not move, and its tangent is zeros."""
    return default_cases(op_name)


def check_jvp_case(op, rule: JvpRule, case: Case, rng: np.random.Generator) -> None:
    inputs = [Tensor(x.detach().numpy()) for x in case.inputs(rng)]
    moving = case.needs or (True,) * len(inputs)
    tangents = [rng.standard_normal(x.shape) * m for x, m in zip(inputs, moving)]
    with no_grad():
        out = case.call(*inputs)
        call = JvpCall(op, tuple(inputs), out, {}, tuple(moving))
        expected = op.jvp(call, [Tensor(t) for t in tangents]).numpy()
    expected = np.broadcast_to(expected, out.shape).copy()
    names = op.input_names[: len(inputs)]
    context = f"With {label(case, names)}"
    got = run_jvp_rule(rule, op, inputs, out, moving, tangents, context)
    finding = jvp_finding(op, inputs, out.numpy(), tangents, expected, got, names)
    if finding is None:
        numeric = directional_difference(case.call, inputs, tangents)
        finding = compare("your ẏ", numeric, got, rtol=FD_RTOL, atol=FD_ATOL)
    if finding is not None:
        fail(finding.sentences(context, advice_for(finding)), finding)


def label(case: Case, names: tuple) -> str:
    """``a of shape (2, 3) and b of shape (3,)``, and which input is a constant."""
    parts = [f"{name} of shape {shape_text(s)}" for name, s in zip(names, case.shapes)]
    text = " and ".join(parts)
    still = [name for name, need in zip(names, case.needs) if not need]
    if still:
        text += f" ({' and '.join(still)} a constant: its tangent is zeros)"
    return text


def run_jvp_rule(rule, op, inputs, out, moving, tangents, context: str):
    """The learner's rule on fresh copies of the call (it cannot spoil what is compared)."""
    args = tuple(Tensor(x.numpy().copy()) for x in inputs)
    call = JvpCall(op, args, Tensor(out.numpy().copy()), {}, tuple(moving))
    name = getattr(rule, "__name__", "<lambda>")
    what = "rule" if name == "<lambda>" else f"rule {name}"
    with no_grad():
        got = call_learner(rule, (call, [Tensor(t.copy()) for t in tangents]), context, what)
    return returned_tangent(got, context)


def returned_tangent(got, context: str) -> Tensor | np.ndarray:
    """One tensor, ẏ: a gradient rule's list, a None or a numpy array is refused in words."""
    if isinstance(got, (list, tuple)):
        added = " If your list holds the terms of ẏ, return their sum." if len(got) > 1 else ""
        fail(
            f"{context}, your rule returned a {type(got).__name__} of {len(got)}, as a "
            "gradient rule does. A JVP rule returns one tensor, ẏ, the tangent of the one "
            f"output, however many inputs the op has.{added}"
        )
    if got is None:
        fail(f"{context}, your rule returned None. Return ẏ, a tensor of y's shape.")
    if isinstance(got, np.ndarray):
        fail(
            f"{context}, your ẏ is a numpy array, not a Tensor. Build it with tensor "
            "operations on tangents and orig.args or orig.out."
        )
    return got


def jvp_finding(op, inputs, out, tangents, expected, got, names) -> Finding | None:
    """What is wrong with ``got``: its shape, then a known slip, then compare's findings."""
    what = "your ẏ"
    one_input = len(tangents) == 1 and tangents[0].shape == expected.shape
    finding = compare(what, expected, got, upstream=tangents[0] if one_input else None)
    if finding is None or finding.kind in NOT_VALUES:
        return finding
    if finding.kind == "shape":
        return shape_finding(finding, [x.shape for x in inputs], names)
    if finding.kind == "not_finite":
        return finding
    primals = [x.numpy() for x in inputs]
    return slip_finding(op.name, primals, out, tangents, expected, finding.got) or finding


def shape_finding(finding: Finding, input_shapes: list, names: tuple) -> Finding:
    """A tangent of the wrong shape: summed back to an input's shape, as a gradient is?"""
    got_shape = finding.details["got_shape"]
    owners = [n for n, s in zip(names, input_shapes) if tuple(s) == tuple(got_shape)]
    if owners:
        finding.advice = (
            f"that is the shape of {owners[0]}: a tangent has the shape of the output y, "
            "whatever its inputs' shapes. Do not sum it back with collapse_sum_like as a "
            "gradient rule does: ẏ lives where y lives"
        )
    else:
        finding.advice = "a tangent always has the shape of the output y"
    return finding


def advice_for(finding: Finding) -> str | None:
    """The advice to show: the tangent's words where compare's speak of gradients."""
    return ADVICE.get(finding.kind)


# ----------------------------------------------------------------- known slips
@dataclass(frozen=True)
class Slip:
    """A wrong JVP rule learners write: ``made(primals, out, tangents)`` is its ẏ."""

    kind: str
    made: Callable[[list, np.ndarray, list], np.ndarray]
    observation: str
    advice: str


def sigmoid_of(v: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-v))


SIGMOID_SLIPS = (
    Slip(
        "tangent_only",
        lambda xs, y, ts: ts[0],
        "your ẏ is ẋ itself, passed on unchanged",
        "the chain rule multiplies ẋ by the local derivative dy/dx = y · (1 − y)",
    ),
    Slip(
        "wrong_factor",
        lambda xs, y, ts: ts[0] * y,
        "your ẏ is ẋ · y: the tangent is multiplied by y alone",
        "the derivative of σ is y · (1 − y): the factor (1 − y) is missing",
    ),
    Slip(
        "wrong_factor",
        lambda xs, y, ts: ts[0] * (1 - y),
        "your ẏ is ẋ · (1 − y): the tangent is multiplied by (1 − y) alone",
        "the derivative of σ is y · (1 − y): the factor y is missing",
    ),
    Slip(
        "input_for_output",
        lambda xs, y, ts: ts[0] * xs[0] * (1 - xs[0]),
        "your ẏ is ẋ · x · (1 − x): the formula is right, but written with the input x",
        "write it with the output y = orig.out, the sigmoid's value, in place of x",
    ),
    Slip(
        "derivative_at_tangent",
        lambda xs, y, ts: sigmoid_of(ts[0]) * (1 - sigmoid_of(ts[0])),
        "your ẏ is σ′(ẋ) = σ(ẋ) · (1 − σ(ẋ)): the derivative is taken at the tangent",
        "take the derivative where the function is, at the primal (y = orig.out), and "
        "multiply it by ẋ: ẏ = ẋ · y · (1 − y)",
    ),
    Slip(
        "applied_again",
        lambda xs, y, ts: ts[0] * sigmoid_of(y) * (1 - sigmoid_of(y)),
        "your ẏ is what the rule gives at sigmoid(y), not at y",
        "orig.out is already the output y = sigmoid(x): use it as it is, without applying "
        "sigmoid to it again",
    ),
)

MUL_SLIPS = (
    Slip(
        "second_term_forgotten",
        lambda xs, y, ts: ts[0] * xs[1],
        "your ẏ is ȧ · b, the product rule's first term alone",
        "the input b moves too: add a · ḃ, the change its tangent makes, ẏ = ȧ · b + a · ḃ",
    ),
    Slip(
        "first_term_forgotten",
        lambda xs, y, ts: xs[0] * ts[1],
        "your ẏ is a · ḃ, the product rule's second term alone",
        "the input a moves too: add ȧ · b, the change its tangent makes, ẏ = ȧ · b + a · ḃ",
    ),
    Slip(
        "swapped",
        lambda xs, y, ts: ts[0] * xs[0] + xs[1] * ts[1],
        "your ẏ is ȧ · a + b · ḃ: each tangent is multiplied by its own input, the "
        "terms' factors swapped",
        "when a moves by ȧ, y = a · b moves by ȧ times the other factor, b: ẏ = ȧ · b + a · ḃ",
    ),
    Slip(
        "tangents_multiplied",
        lambda xs, y, ts: ts[0] * ts[1],
        "your ẏ is ȧ · ḃ, the product of the tangents",
        "that term is of second order (it comes with ε², which is 0): the first-order "
        "change is ȧ · b + a · ḃ",
    ),
    Slip(
        "second_order_kept",
        lambda xs, y, ts: ts[0] * xs[1] + xs[0] * ts[1] + ts[0] * ts[1],
        "your ẏ is ȧ · b + a · ḃ + ȧ · ḃ: the last term is one too many",
        "(a + ȧε)(b + ḃε) = ab + (ȧb + aḃ)ε + ȧḃε², and ε² = 0: drop ȧ · ḃ",
    ),
    Slip(
        "tangents_added",
        lambda xs, y, ts: ts[0] + ts[1],
        "your ẏ is ȧ + ḃ, the rule of add",
        "for a product each tangent is scaled by the other factor: ẏ = ȧ · b + a · ḃ",
    ),
)

SLIPS = {"sigmoid": SIGMOID_SLIPS, "mul": MUL_SLIPS}


def slip_finding(op_name, primals, out, tangents, expected, got) -> Finding | None:
    """The first known slip whose ẏ is the learner's (and not the right one)."""
    for slip in SLIPS.get(op_name, ()):
        with np.errstate(all="ignore"):
            slipped = np.broadcast_to(slip.made(primals, out, tangents), expected.shape)
        if is_close(expected, slipped) or not is_close(slipped, got):
            continue
        return wrong_values(
            slip.kind, "your ẏ", slip.observation, slip.advice, expected, got, 1e-6, 1e-9
        )
    return None


# ----------------------------------------------------------------- references
def directional_difference(call: Callable, inputs: list, tangents: list) -> np.ndarray:
    """(f(x + hẋ) − f(x − hẋ)) / (2h), every input moved along its tangent at once:
    forward mode's answer, by two calls of the function (no derivative anywhere)."""
    primals = [x.numpy() for x in inputs]

    def at(step: float) -> np.ndarray:
        with no_grad():
            return call(*[Tensor(p + step * t) for p, t in zip(primals, tangents)]).numpy()

    return (at(FD_EPS) - at(-FD_EPS)) / (2 * FD_EPS)


def proof_text(op, cases: list[Case]) -> str:
    shapes = ", ".join(" × ".join(shape_text(s) for s in c.shapes) for c in cases)
    formula = jvp_formula(op)
    text = (
        f"On {plural(len(cases), 'call')} of {op.name} (shapes {shapes}) it gives the same "
        "ẏ as the engine's JVP rule and as a finite difference along the tangents, "
        "(f(x + hẋ) − f(x − hẋ)) / (2h), in float64"
    )
    if formula:
        text += f". You just proved that it computes {formula}: J·ẋ without building J"
    return text + "."


def jvp_formula(op) -> str | None:
    """The rule as its docstring writes it: ``ẏ = ẋ · y · (1 − y)``."""
    doc = op.jvp.__doc__ or ""
    lines = [ln.strip() for ln in doc.splitlines() if ln.strip().startswith("JVP:")]
    if not lines:
        return None
    return re.split(r"\s{2,}", lines[0].removeprefix("JVP:").strip())[0]
