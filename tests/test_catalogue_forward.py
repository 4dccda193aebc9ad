"""Misconception catalogues of lessons 11 and 12: JVP rules, the cheaper mode for a
Jacobian, per-example gradient norms and clipping.

Each mistake is a learner's wrong answer, written as learners write it; the check the
lesson uses must name it. Each right answer is written another way than the lesson's
solution, and must pass. The last tests hold the lessons to these checks and the checks
to PyTorch (a JVP rule against ``torch.func.jvp``, clipping against Opacus's formula
written with torch).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from catalogue import Catalogue, Mistake, Right, exercise_setup, not_yet

import workbench as wb
from workbench.exercises import (
    ExerciseError,
    NotAnswered,
    check_clip_per_example,
    check_dual_interpreter,
    check_example_norms,
    check_fewer_passes,
    check_jvp_rule,
)
from workbench.exercises.passes import count_passes
from workbench.exercises.per_example import batches, clipped, gradient_tuples, whole_norms
from workbench.ops import collapse_sum_like

LESSONS = Path(__file__).resolve().parent.parent / "lessons"


# ----------------------------------------------------------------- lesson 11: sigmoid's JVP
def sigmoid_jvp(orig, tangents):
    y = orig.out
    return tangents[0] * y * (1 - y)


def sigmoid_jvp_from_the_input(orig, tangents):
    s = wb.sigmoid(orig.args[0])
    return s * (1 - s) * tangents[0]


def sigmoid_jvp_with_exp(orig, tangents):
    e = wb.exp(-orig.args[0])
    return tangents[0] * e / (1 + e) ** 2


SIGMOID_JVP = Catalogue(
    exercise="11-sigmoid-jvp",
    check=lambda rule: check_jvp_rule("sigmoid", rule),
    mistakes=[
        Mistake(
            "the tangent times y alone",
            lambda orig, ts: ts[0] * orig.out,
            ["ẋ · y", "the factor (1 − y) is missing"],
            kind="wrong_factor",
        ),
        Mistake(
            "the tangent times (1 − y) alone",
            lambda orig, ts: ts[0] * (1 - orig.out),
            ["ẋ · (1 − y)", "the factor y is missing"],
            kind="wrong_factor",
        ),
        Mistake(
            "σ′ taken at the tangent",
            lambda orig, ts: wb.sigmoid(ts[0]) * (1 - wb.sigmoid(ts[0])),
            ["σ′(ẋ)", "derivative is taken at the tangent", "multiply it by ẋ"],
            kind="derivative_at_tangent",
        ),
        Mistake(
            "the slope alone, ẋ forgotten",
            lambda orig, ts: orig.out * (1 - orig.out),
            ["the local derivative alone", "Multiply it by ẋ = tangents[0]"],
            never=["ȳ"],
            kind="no_upstream",
        ),
        Mistake(
            "ẋ passed on unchanged",
            lambda orig, ts: ts[0],
            ["ẋ itself, passed on unchanged"],
            kind="tangent_only",
        ),
        Mistake(
            "the formula with x",
            lambda orig, ts: ts[0] * orig.args[0] * (1 - orig.args[0]),
            ["ẋ · x · (1 − x)", "y = orig.out"],
            kind="input_for_output",
        ),
        Mistake(
            "σ applied to y again",
            lambda orig, ts: ts[0] * wb.sigmoid(orig.out) * (1 - wb.sigmoid(orig.out)),
            ["at sigmoid(y), not at y"],
            kind="applied_again",
        ),
        Mistake(
            "a sign",
            lambda orig, ts: ts[0] * orig.out * (orig.out - 1),
            ["wrong sign"],
            kind="sign",
        ),
        Mistake(
            "a list, as a gradient rule returns",
            lambda orig, ts: [ts[0] * orig.out * (1 - orig.out)],
            ["returned a list of 1, as a gradient rule does", "returns one tensor"],
        ),
    ],
    rights=[
        Right("the solution", sigmoid_jvp),
        Right("σ of the input", sigmoid_jvp_from_the_input),
        Right("written with exp", sigmoid_jvp_with_exp),
    ],
)


# ----------------------------------------------------------------- lesson 11: mul's JVP
def mul_jvp(orig, tangents):
    a, b = orig.args
    a_dot, b_dot = tangents
    return a_dot * b + a * b_dot


def mul_jvp_with_wb_mul(orig, tangents):
    return wb.add(wb.mul(orig.args[1], tangents[0]), wb.mul(tangents[1], orig.args[0]))


def mul_jvp_by_parts(orig, tangents):
    """Each term kept apart, then added (as the engine's rule does, with sum_of_terms)."""
    terms = [tangents[0] * orig.args[1], orig.args[0] * tangents[1]]
    return terms[0] + terms[1]


MUL_JVP = Catalogue(
    exercise="11-mul-jvp",
    check=lambda rule: check_jvp_rule("mul", rule),
    mistakes=[
        Mistake(
            "the second term forgotten",
            lambda orig, ts: ts[0] * orig.args[1],
            ["ȧ · b, the product rule's first term alone", "add a · ḃ"],
            kind="second_term_forgotten",
        ),
        Mistake(
            "the first term forgotten",
            lambda orig, ts: orig.args[0] * ts[1],
            ["a · ḃ, the product rule's second term alone", "add ȧ · b"],
            kind="first_term_forgotten",
        ),
        Mistake(
            "the terms' factors swapped",
            lambda orig, ts: ts[0] * orig.args[0] + orig.args[1] * ts[1],
            ["ȧ · a + b · ḃ", "swapped"],
            kind="swapped",
        ),
        Mistake(
            "the ε² term kept",
            lambda orig, ts: mul_jvp(orig, ts) + ts[0] * ts[1],
            ["ȧ · ḃ: the last term is one too many", "ε² = 0"],
            kind="second_order_kept",
        ),
        Mistake(
            "the tangents multiplied",
            lambda orig, ts: ts[0] * ts[1],
            ["ȧ · ḃ, the product of the tangents", "second order"],
            kind="tangents_multiplied",
        ),
        Mistake(
            "add's rule",
            lambda orig, ts: ts[0] + ts[1],
            ["ȧ + ḃ, the rule of add"],
            kind="tangents_added",
        ),
        Mistake(
            "summed back to a's shape, as a gradient",
            lambda orig, ts: collapse_sum_like(mul_jvp(orig, ts), orig.args[0]),
            ["has shape (3,) where (2, 3) was expected", "the shape of a", "Do not sum it back"],
            kind="shape",
        ),
        Mistake(
            "the two terms in a list",
            lambda orig, ts: [ts[0] * orig.args[1], orig.args[0] * ts[1]],
            ["returned a list of 2", "return their sum"],
        ),
        Mistake(
            "a numpy array",
            lambda orig, ts: mul_jvp(orig, ts).numpy(),
            ["numpy array, not a Tensor"],
        ),
    ],
    rights=[
        Right("the solution", mul_jvp),
        Right("wb.mul and wb.add, factors in another order", mul_jvp_with_wb_mul),
        Right("the terms kept apart, then added", mul_jvp_by_parts),
    ],
)


# ----------------------------------------------------------------- lesson 11: the interpreter
class Dual:
    """The lesson's solution: a primal and its tangent (``type(self)`` makes each result,
    so that a slipped subclass below keeps its slip through every operation)."""

    def __init__(self, primal, tangent):
        self.primal, self.tangent = primal, tangent

    def __add__(self, other):
        other = other if isinstance(other, Dual) else type(self)(other, 0.0)
        return type(self)(self.primal + other.primal, self.tangent + other.tangent)

    def __mul__(self, other):
        other = other if isinstance(other, Dual) else type(self)(other, 0.0)
        tangent = self.tangent * other.primal + self.primal * other.tangent
        return type(self)(self.primal * other.primal, tangent)

    __radd__, __rmul__ = __add__, __mul__

    def sin(self):
        return type(self)(np.sin(self.primal), np.cos(self.primal) * self.tangent)

    def exp(self):
        y = np.exp(self.primal)
        return type(self)(y, y * self.tangent)


def jvp(f, x, v):
    out = f(Dual(x, v))
    return out.primal, out.tangent


class Lifted:
    """Right, written another way: constants lifted by a helper, __rmul__ of its own."""

    def __init__(self, primal, tangent):
        self.primal, self.tangent = primal, tangent

    @staticmethod
    def lift(value):
        return value if isinstance(value, Lifted) else Lifted(value, np.zeros_like(value))

    def __add__(self, other):
        other = Lifted.lift(other)
        return Lifted(self.primal + other.primal, self.tangent + other.tangent)

    def __radd__(self, other):
        return Lifted.lift(other) + self

    def __mul__(self, other):
        a, b = self, Lifted.lift(other)
        return Lifted(a.primal * b.primal, a.primal * b.tangent + b.primal * a.tangent)

    def __rmul__(self, other):
        return Lifted.lift(other) * self

    def sin(self):
        return Lifted(np.sin(self.primal), self.tangent * np.cos(self.primal))

    def exp(self):
        return Lifted(np.exp(self.primal), np.exp(self.primal) * self.tangent)


def jvp_lifted(f, x, v):
    result = f(Lifted(np.asarray(x, dtype=float), np.asarray(v, dtype=float)))
    return [result.primal, result.tangent]


class Chained(Dual):
    """Right, written another way: sin and exp give their derivative to one chain-rule step."""

    def chain(self, value, derivative):
        return Dual(value, derivative * self.tangent)

    def sin(self):
        return self.chain(np.sin(self.primal), np.cos(self.primal))

    def exp(self):
        return self.chain(np.exp(self.primal), np.exp(self.primal))


def slipped(**changes):
    """The solution with one method changed, as a learner's slip changes it: a jvp."""
    cls = type("Dual", (Dual,), changes)
    return lambda f, x, v: jvp_of(cls, f, x, v)


def jvp_of(cls, f, x, v):
    out = f(cls(x, v))
    return out.primal, out.tangent


def mul_first_term_only(self, other):
    other = other if isinstance(other, Dual) else type(self)(other, 0.0)
    return type(self)(self.primal * other.primal, self.tangent * other.primal)


def add_constant_moves(self, other):
    other = other if isinstance(other, Dual) else type(self)(other, 1.0)
    return type(self)(self.primal + other.primal, self.tangent + other.tangent)


def mul_constant_moves(self, other):
    other = other if isinstance(other, Dual) else type(self)(other, 1.0)
    tangent = self.tangent * other.primal + self.primal * other.tangent
    return type(self)(self.primal * other.primal, tangent)


def sin_at_the_tangent(self):
    return type(self)(np.sin(self.primal), np.cos(self.tangent))


def exp_without_the_tangent(self):
    return type(self)(np.exp(self.primal), np.exp(self.primal))


DUAL_INTERPRETER = Catalogue(
    exercise="11-dual-interpreter",
    check=check_dual_interpreter,
    mistakes=[
        Mistake(
            "the product rule's second term forgotten",
            slipped(__mul__=mul_first_term_only, __rmul__=mul_first_term_only),
            ["ȧ · b, the product rule's first term alone", "add a · ḃ"],
            kind="second_term_forgotten",
        ),
        Mistake(
            "a constant given the tangent 1",
            slipped(
                __add__=add_constant_moves,
                __radd__=add_constant_moves,
                __mul__=mul_constant_moves,
                __rmul__=mul_constant_moves,
            ),
            ["f(x) = 2 + 3 * x", "a constant", "the tangent 1", "tangent 0"],
            kind="constant_moves",
        ),
        Mistake(
            "a constant given the tangent 1 in + alone",
            slipped(__add__=add_constant_moves, __radd__=add_constant_moves),
            ["f(x) = 2 + 3 * x", "your + gives a constant (the 2", "tangent 0"],
            kind="constant_moves",
        ),
        Mistake(
            "sin's tangent cos(ẋ)",
            slipped(sin=sin_at_the_tangent),
            ["f(x) = x.sin()", "cos(ẋ)", "ẏ = cos(x) · ẋ"],
            kind="derivative_at_tangent",
        ),
        Mistake(
            "exp's tangent without ẋ",
            slipped(exp=exp_without_the_tangent),
            ["f(x) = x.exp()", "exp(x): the derivative alone", "ẏ = exp(x) · ẋ"],
            kind="exp_without_tangent",
        ),
        Mistake(
            "primal and tangent swapped in what jvp returns",
            lambda f, x, v: jvp(f, x, v)[::-1],
            ["the tangent first and the primal second", "swapped", "(primal, tangent)"],
            kind="swapped",
        ),
        Mistake(
            "primal and tangent swapped in the input Dual",
            lambda f, x, v: jvp(f, v, x),
            ["runs f at v, moving along x", "swapped", "Dual(x, v)"],
            kind="swapped",
        ),
        Mistake(
            "the direction v ignored (ẋ = 1, as for one number)",
            lambda f, x, v: jvp(f, x, np.ones_like(x)),
            ["the direction ẋ = 1", "not for the direction v", "Dual(x, v)"],
            kind="direction_ignored",
        ),
        Mistake(
            "the tangent not carried: 0 returned",
            lambda f, x, v: (jvp(f, x, v)[0], 0.0),
            ["your tangent is 0 everywhere", "not carried"],
            kind="not_carried",
        ),
        Mistake(
            "the tangent not carried: None returned",
            lambda f, x, v: (f(Dual(x, v)).primal, None),
            ["your tangent is None", "not carried"],
        ),
        Mistake(
            "f run on numbers, not on a Dual",
            lambda f, x, v: (f(x), v),
            ["ran f on a numpy array, not on a Dual", "Dual(x, v)"],
        ),
        Mistake(
            "the Dual itself returned",
            lambda f, x, v: f(Dual(x, v)),
            ["returned a Dual, the dual number itself", "(out.primal, out.tangent)"],
        ),
    ],
    rights=[
        Right("the solution", jvp),
        Right("constants lifted by a helper, __rmul__ of its own, a list", jvp_lifted),
        Right("the chain rule in one helper", lambda f, x, v: jvp_of(Chained, f, x, v)),
    ],
)


# ----------------------------------------------------------------- lesson 11: the prediction
def fewer_passes(n_inputs, n_outputs):
    return "forward" if n_inputs < n_outputs else "reverse"


def fewer_passes_by_counting(n_inputs, n_outputs):
    passes = {"jacfwd": n_inputs, "jacrev": n_outputs}
    return min(passes, key=passes.get)


FEWER_PASSES = Catalogue(
    exercise="11-fewer-passes",
    check=check_fewer_passes,
    mistakes=[
        Mistake(
            "reverse mode always wins (backprop)",
            lambda n, m: "reverse",
            ["R^2 → R^50", "forward mode took 2 jvp passes", "50 vjp passes", "one row of J"],
        ),
        Mistake(
            "forward mode always wins (no graph to keep)",
            lambda n, m: "forward",
            ["R^50 → R^2", "forward mode took 50 jvp passes", "one column of J"],
        ),
        Mistake(
            "the comparison swapped",
            lambda n, m: "forward" if n > m else "reverse",
            ["names the mode with more passes", "swapped"],
        ),
        Mistake(
            "a count in place of a mode",
            lambda n, m: min(n, m),
            ["returned 2", "'forward' or 'reverse'"],
        ),
        Mistake(
            "a mode of its own",
            lambda n, m: "backprop",
            ["returned 'backprop'", "'forward' or 'reverse'"],
        ),
    ],
    rights=[
        Right("the solution", fewer_passes),
        Right("jacfwd and jacrev, by the smaller count", fewer_passes_by_counting),
        Right("capitals, <= for ties", lambda n, m: "Forward" if n <= m else "REVERSE"),
    ],
)


# ----------------------------------------------------------------- lesson 12: norms
def example_norms(per_example_grads):
    count = len(per_example_grads[0])
    return wb.cat([g.reshape(count, -1) for g in per_example_grads], dim=1).norm(dim=1)


def example_norms_by_squares(per_example_grads):
    total = 0
    for g in per_example_grads:
        total = total + (g * g).reshape(g.shape[0], -1).sum(1)
    return total.sqrt()


EXAMPLE_NORMS = Catalogue(
    exercise="12-example-norms",
    check=check_example_norms,
    mistakes=[
        Mistake(
            "the first parameter only",
            lambda grads: grads[0].reshape(len(grads[0]), -1).norm(dim=1),
            ["norms of the first tensor of the tuple alone"],
            kind="first_tensor_only",
        ),
        Mistake(
            "a sum of norms",
            lambda grads: sum(g.reshape(len(g), -1).norm(dim=1) for g in grads),
            ["each tensor's norm, added up"],
            kind="sum_of_norms",
        ),
        Mistake(
            "the squared norm",
            lambda grads: example_norms(grads) ** 2,
            ["squared norms: the square root is missing"],
            kind="squared",
        ),
        Mistake(
            "the norm across the examples",
            lambda grads: grads[0].norm(dim=0),
            ["have shape (3, 2) where (4,) was expected", "across the examples (dim 0)"],
            kind="shape",
        ),
        Mistake(
            "the largest part",
            lambda grads: wb.stack([g.reshape(len(g), -1).norm(dim=1) for g in grads]).amax(0),
            ["the largest of each example's per-tensor norms"],
            kind="largest_part",
        ),
    ],
    rights=[
        Right("the solution", example_norms),
        Right("squares added tensor by tensor", example_norms_by_squares),
        Right(
            "numpy, row by row",
            lambda grads: np.array(
                [
                    np.sqrt(sum(float((g.numpy()[i] ** 2).sum()) for g in grads))
                    for i in range(len(grads[0]))
                ]
            ),
        ),
    ],
)


# ----------------------------------------------------------------- lesson 12: clipping
def clip_per_example(grads, max_norm):
    norms = grads.norm(dim=1, keepdim=True)
    return grads * (max_norm / (norms + 1e-12)).clamp(max=1.0)


def clip_with_minimum(grads, max_norm):
    norms = grads.norm(dim=1, keepdim=True).clamp(min=1e-12)
    return grads * wb.minimum(wb.ones_like(norms), max_norm / norms)


def clip_row_by_row(grads, max_norm):
    rows = []
    for row in grads:
        norm = row.norm().item()
        rows.append(row * (max_norm / norm) if norm > max_norm else row)
    return wb.stack(rows)


CLIP = Catalogue(
    exercise="12-clip-per-example",
    check=lambda clip: check_clip_per_example(clip),
    mistakes=[
        Mistake(
            "the batch clipped as a whole",
            lambda g, c: g * min(1.0, c / g.norm().item()),
            ["the batch clipped as a whole", "Clip each row by its own norm"],
            kind="whole_batch",
        ),
        Mistake(
            "every row stretched to max_norm",
            lambda g, c: g * c / (g.norm(dim=1, keepdim=True) + 1e-12),
            ["rows that were shorter were stretched", "min(1, max_norm / ‖gᵢ‖)"],
            kind="stretched",
        ),
        Mistake(
            "max where min belongs",
            lambda g, c: g * (c / (g.norm(dim=1, keepdim=True) + 1e-12)).clamp(min=1.0),
            ["max(1, max_norm", "Take the min"],
            kind="max_for_min",
        ),
        Mistake(
            "elements clamped",
            lambda g, c: g.clamp(-c, c),
            ["each element clamped", "multiply the whole row by one number"],
            kind="elements_clamped",
        ),
        Mistake(
            "norms down the columns",
            lambda g, c: g * (c / g.norm(dim=0, keepdim=True)).clamp(max=1.0),
            ["norms of the columns (dim=0)", "along dim=1"],
            kind="columns",
        ),
        Mistake(
            "the squared norm",
            lambda g, c: g * (c / ((g * g).sum(1, keepdim=True) + 1e-12)).clamp(max=1.0),
            ["the squared norm, without its square root"],
            kind="squared_norm",
        ),
        Mistake(
            "0 / 0 at a zero row",
            lambda g, c: g / g.norm(dim=1, keepdim=True) * g.norm(dim=1, keepdim=True).clamp(max=c),
            ["NaN in row 1, where grads is all zeros", "the norm plus a tiny number"],
            kind="zero_row",
        ),
        Mistake(
            "the average returned",
            lambda g, c: clip_per_example(g, c).mean(0),
            ["shape (3,) where (4, 3)", "the average of the clipped rows"],
            kind="shape",
        ),
    ],
    rights=[
        Right("the solution", clip_per_example),
        Right("wb.minimum, the norm clamped", clip_with_minimum),
        Right("row by row", clip_row_by_row),
    ],
)


CATALOGUES = [SIGMOID_JVP, MUL_JVP, DUAL_INTERPRETER, FEWER_PASSES, EXAMPLE_NORMS, CLIP]

# The check each exercise's setup cell calls, as the catalogue above calls it.
LESSON_CHECKS = {
    "11-sigmoid-jvp": (
        "11_forward_or_reverse.ipynb",
        'lambda rule: check_jvp_rule("sigmoid", rule)',
    ),
    "11-mul-jvp": ("11_forward_or_reverse.ipynb", 'lambda rule: check_jvp_rule("mul", rule)'),
    "11-dual-interpreter": ("11_forward_or_reverse.ipynb", "check_dual_interpreter,"),
    "11-fewer-passes": ("11_forward_or_reverse.ipynb", "check_fewer_passes,"),
    "12-example-norms": ("12_per_example_gradients.ipynb", "check_example_norms,"),
    "12-clip-per-example": ("12_per_example_gradients.ipynb", "check_clip_per_example,"),
}


@pytest.mark.parametrize("exercise", sorted(LESSON_CHECKS))
def test_the_lesson_checks_with_the_catalogues_check(exercise):
    name, call = LESSON_CHECKS[exercise]
    notebook = json.loads((LESSONS / name).read_text(encoding="utf-8"))
    assert call in exercise_setup(notebook, exercise)


def test_every_exercise_of_the_two_lessons_has_its_catalogue():
    assert {c.exercise for c in CATALOGUES} == set(LESSON_CHECKS)


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda c: c.exercise)
def test_an_unanswered_exercise_is_not_answered_yet(catalogue):
    with pytest.raises(NotAnswered) as caught:
        catalogue.check(not_yet)
    assert str(caught.value).startswith("Not answered yet")


# ----------------------------------------------------------------- the references
@pytest.mark.parametrize("op_name", ["sigmoid", "mul"])
def test_the_engines_jvp_rule_the_check_trusts_is_torch_funcs(op_name):
    """The check compares with the engine's JVP rule: that rule against torch.func.jvp."""
    rng = np.random.default_rng(0)
    shapes = [(2, 3)] if op_name == "sigmoid" else [(3,), (2, 3)]
    primals = [rng.standard_normal(s) for s in shapes]
    tangents = [rng.standard_normal(s) for s in shapes]
    ours = wb.func.jvp(
        getattr(wb, op_name), tuple(map(wb.tensor, primals)), tuple(map(wb.tensor, tangents))
    )[1]
    theirs = torch.func.jvp(
        getattr(torch, op_name),
        tuple(map(torch.tensor, primals)),
        tuple(map(torch.tensor, tangents)),
    )[1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize("sizes", [(2, 50), (50, 2), (3, 3)])
def test_the_passes_are_counted_one_jvp_per_input_and_one_vjp_per_output(sizes):
    """count_passes checks its two Jacobians equal; here its counts against the sizes."""
    n_inputs, n_outputs = sizes
    assert count_passes(n_inputs, n_outputs) == {"forward": n_inputs, "reverse": n_outputs}


def test_the_clipping_reference_is_opacus_formula_in_torch():
    """Opacus clips with min(1, C / (‖g‖ + 1e-6)); the check's reference (no 1e-6) agrees
    to the check's tolerance on every batch it runs."""
    for grads, max_norm in batches():
        g = torch.tensor(grads)
        norms = g.norm(dim=1, keepdim=True)
        theirs = g * (max_norm / (norms + 1e-6)).clamp(max=1.0)
        np.testing.assert_allclose(clipped(grads, max_norm), theirs.numpy(), rtol=1e-5, atol=1e-9)


def test_the_norm_reference_is_torchs_norm_of_the_concatenated_rows():
    for grads in gradient_tuples():
        rows = torch.cat([torch.tensor(g).reshape(len(g), -1) for g in grads], dim=1)
        np.testing.assert_allclose(whole_norms(grads), rows.norm(dim=1).numpy(), rtol=1e-12)


def test_the_interpreter_check_trusts_wb_func_jvp_which_is_torch_funcs():
    """check_dual_interpreter compares with wb.func.jvp, and names slips by a model
    interpreter: both against torch.func.jvp of the same programs."""
    from workbench.exercises.dual_interpreter import PROGRAMS, RIGHT, engine_jvp, model_jvp

    rng = np.random.default_rng(0)
    for program in PROGRAMS:
        x, v = rng.standard_normal(5), rng.standard_normal(5)
        theirs = torch.func.jvp(program.run, (torch.tensor(x),), (torch.tensor(v),))
        for ours in (engine_jvp(program, x, v), model_jvp(RIGHT, program, x, v)):
            for mine, torchs in zip(ours, theirs):
                np.testing.assert_allclose(mine, torchs.numpy(), rtol=1e-12)


def test_a_method_still_the_stub_is_named_not_answered():
    class Open(Dual):
        def sin(self):
            raise NotImplementedError()

    with pytest.raises(NotAnswered, match="method sin of your Dual"):
        check_dual_interpreter(lambda f, x, v: jvp_of(Open, f, x, v))


class Unreadable:
    def __array__(self, *args, **kwargs):
        raise RuntimeError("no reading me")


ODD_RETURNS = {
    "None": None,
    "text": "1, 2",
    "complex": np.full(5, 1 + 5j),
    "True/False": np.ones(5, dtype=bool),
    "10**400": [10**400] * 5,
    "a ragged list": [[1.0], [2.0, 3.0]],
    "an object numpy cannot read": Unreadable(),
    "a megabyte": np.ones(1 << 17),
    "a 0-d array": np.array(1.0),
}


@pytest.mark.parametrize("label", sorted(ODD_RETURNS))
@pytest.mark.parametrize("where", ["alone", "as the primal", "as the tangent"])
def test_an_interpreter_that_runs_f_and_returns_something_odd_gets_a_sentence(label, where):
    value = ODD_RETURNS[label]

    def odd_jvp(f, x, v):
        primal, tangent = jvp(f, x, v)
        return {"alone": value, "as the primal": (value, tangent)}.get(where, (primal, value))

    with pytest.raises(ExerciseError) as caught:
        check_dual_interpreter(odd_jvp)
    message = str(caught.value)
    assert "gap in the checker" not in message and "Traceback" not in message, message
    assert len(message) < 600, message
