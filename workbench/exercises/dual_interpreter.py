"""Check a learner's forward-mode interpreter: dual numbers flowing through a program (lesson 11).

The learner writes a ``Dual`` (a primal and its tangent, numpy arrays), its ``+`` and ``*``
(constants on either side), its methods ``sin`` and ``exp``, and ``jvp(f, x, v)``, which
runs ``f`` once on ``Dual(x, v)`` and returns ``(primal, tangent)``: Autodidax's
``JVPTracer`` in a dozen lines. The programs the check runs are written as one writes them
for a tensor (``x.sin() * x + (x * 2).exp()``), so the same program runs on the learner's
``Dual`` and on the workbench's tensors; :func:`check_dual_interpreter` compares the learner's
``(primal, tangent)`` with ``wb.func.jvp`` of that program (rtol 1e-6).

A wrong answer is named where one known slip (:data:`SLIPS`: a term of the product rule
forgotten, a constant that moves, cos(ẋ) for cos(x) · ẋ, the primal and tangent swapped,
the tangent not carried...) explains the learner's results on *every* program: each slip is
a small interpreter of its own (:class:`Model`), run on the same programs. Otherwise the
check shows expected and got on the first program that differs, and names no cause.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from ..core.tensor import Tensor
from .answers import as_numbers
from .diagnose import compare, is_close, shape_text, wrong_values
from .guard import checker
from .report import CheckerStop, NotAnswered, Passed, call_learner, fail

SEED = 11
RTOL, ATOL = 1e-6, 1e-9
SIZE = 5  # elements of x in every program


@dataclass(frozen=True)
class Program:
    """A small program, written once for the learner's Dual and the engine's tensors."""

    text: str  # how the messages write it: "f(x) = x * x"
    run: Callable
    needs: tuple  # the methods of the Dual it calls


def used_twice(x):
    y = x.exp()
    return y * y + y


PROGRAMS = (
    Program("f(x) = x * x", lambda x: x * x, ("__mul__",)),
    Program("f(x) = 2 + 3 * x", lambda x: 2 + 3 * x, ("__radd__", "__rmul__")),
    Program("f(x) = x.sin()", lambda x: x.sin(), ("sin",)),
    Program("f(x) = x.exp()", lambda x: x.exp(), ("exp",)),
    Program("f(x) = y * y + y with y = x.exp()", used_twice, ("exp", "__mul__", "__add__")),
    Program(
        "f(x) = x.sin() * x + (x * 2).exp()",
        lambda x: x.sin() * x + (x * 2).exp(),
        ("sin", "exp", "__mul__", "__add__"),
    ),
)


# ----------------------------------------------------------------- the models
@dataclass(frozen=True)
class Rules:
    """How a model interpreter computes each tangent: right, or with one slip."""

    mul: Callable = lambda a, da, b, db: da * b + a * db
    sin: Callable = lambda x, dx: np.cos(x) * dx
    exp: Callable = lambda x, dx: np.exp(x) * dx
    constants: tuple = (0.0, 0.0)  # a constant's tangent in + and in *
    seed: Callable = lambda x, v: (x, v)  # jvp's Dual(x, v)
    out: Callable = lambda p, t: (p, t)  # what jvp returns
    carried: bool = True  # False: every tangent is 0


class Model:
    """A right (or slipped) Dual, run on the programs to see what a slip would give."""

    def __init__(self, primal, tangent, rules: Rules) -> None:
        self.primal, self.rules = primal, rules
        self.tangent = tangent if rules.carried else np.zeros_like(np.asarray(tangent, float))

    def lift(self, other, where: int) -> Model:
        """``other`` as a Model; a constant gets the tangent ``rules.constants[where]``."""
        if isinstance(other, Model):
            return other
        return Model(other, self.rules.constants[where], self.rules)

    def __add__(self, other) -> Model:
        other = self.lift(other, 0)
        return Model(self.primal + other.primal, self.tangent + other.tangent, self.rules)

    def __mul__(self, other) -> Model:
        o, r = self.lift(other, 1), self.rules
        tangent = r.mul(self.primal, self.tangent, o.primal, o.tangent)
        return Model(self.primal * o.primal, tangent, r)

    __radd__, __rmul__ = __add__, __mul__

    def sin(self) -> Model:
        return Model(np.sin(self.primal), self.rules.sin(self.primal, self.tangent), self.rules)

    def exp(self) -> Model:
        return Model(np.exp(self.primal), self.rules.exp(self.primal, self.tangent), self.rules)


def model_jvp(rules: Rules, program: Program, x: np.ndarray, v: np.ndarray) -> tuple:
    primal, tangent = rules.seed(x, v)
    out = program.run(Model(primal, tangent, rules))
    p, t = rules.out(out.primal, out.tangent)
    shape = np.shape(x)
    return np.broadcast_to(p, shape).astype(float), np.broadcast_to(t, shape).astype(float)


@dataclass(frozen=True)
class Slip:
    """A wrong interpreter learners write: its rules, and what to say about it."""

    kind: str
    rules: Rules
    observation: str
    advice: str
    wrong_part: str = "tangent"  # which of the pair the message shows


RIGHT = Rules()
SLIPS = (
    Slip(
        "second_term_forgotten",
        replace(RIGHT, mul=lambda a, da, b, db: da * b),
        "your * gives the tangent ȧ · b, the product rule's first term alone",
        "the other factor moves too: add a · ḃ, so that (a + ȧε)(b + ḃε) gives ẏ = ȧ · b + a · ḃ",
    ),
    Slip(
        "first_term_forgotten",
        replace(RIGHT, mul=lambda a, da, b, db: a * db),
        "your * gives the tangent a · ḃ, the product rule's second term alone",
        "the first factor moves too: add ȧ · b, so that ẏ = ȧ · b + a · ḃ",
    ),
    Slip(
        "constant_moves",
        replace(RIGHT, constants=(1.0, 1.0)),
        "your Dual gives a constant (the 2 and the 3 in 2 + 3 * x) the tangent 1",
        "a constant does not move when x moves: wrap it as a Dual with tangent 0",
    ),
    Slip(
        "constant_moves",
        replace(RIGHT, constants=(1.0, 0.0)),
        "your + gives a constant (the 2 in 2 + 3 * x) the tangent 1",
        "a constant does not move when x moves: wrap it as a Dual with tangent 0",
    ),
    Slip(
        "constant_moves",
        replace(RIGHT, constants=(0.0, 1.0)),
        "your * gives a constant (the 3 in 2 + 3 * x) the tangent 1",
        "a constant does not move when x moves: wrap it as a Dual with tangent 0",
    ),
    Slip(
        "derivative_at_tangent",
        replace(RIGHT, sin=lambda x, dx: np.cos(dx)),
        "your sin gives the tangent cos(ẋ): the derivative is taken at the tangent",
        "take the derivative where the function is, at the primal, and multiply it by the "
        "tangent: ẏ = cos(x) · ẋ",
    ),
    Slip(
        "exp_at_tangent",
        replace(RIGHT, exp=lambda x, dx: np.exp(dx)),
        "your exp gives the tangent exp(ẋ): the derivative is taken at the tangent",
        "take the derivative where the function is, at the primal, and multiply it by the "
        "tangent: ẏ = exp(x) · ẋ",
    ),
    Slip(
        "sin_without_tangent",
        replace(RIGHT, sin=lambda x, dx: np.cos(x) + 0 * dx),
        "your sin gives the tangent cos(x): the derivative alone, not multiplied by ẋ",
        "the chain rule multiplies the derivative by the tangent arriving at sin: ẏ = cos(x) · ẋ",
    ),
    Slip(
        "exp_without_tangent",
        replace(RIGHT, exp=lambda x, dx: np.exp(x) + 0 * dx),
        "your exp gives the tangent exp(x): the derivative alone, not multiplied by ẋ",
        "the chain rule multiplies the derivative by the tangent arriving at exp: ẏ = exp(x) · ẋ",
    ),
    Slip(
        "swapped",
        replace(RIGHT, out=lambda p, t: (t, p)),
        "your jvp returns the tangent first and the primal second: the two are swapped",
        "return (primal, tangent), in that order, as wb.func.jvp does",
        wrong_part="primal",
    ),
    Slip(
        "swapped",
        replace(RIGHT, seed=lambda x, v: (v, x)),
        "your jvp runs f at v, moving along x: the primal and the tangent of the input "
        "Dual are swapped",
        "make the input Dual(x, v): x is where f is evaluated (the primal), v the direction "
        "it moves in (the tangent)",
        wrong_part="primal",
    ),
    Slip(
        "direction_ignored",
        replace(RIGHT, seed=lambda x, v: (x, np.ones_like(x))),
        "your tangent is the one for the direction ẋ = 1 (every element of x moving at "
        "speed 1), not for the direction v you were given",
        "seed the input's tangent with v: Dual(x, v)",
    ),
    Slip(
        "not_carried",
        replace(RIGHT, carried=False),
        "your tangent is 0 everywhere: it was not carried through f",
        "each operation must compute its output's tangent from its inputs' (for sin, "
        "cos(x) · ẋ), and jvp return the tangent of f's output",
    ),
)


# ----------------------------------------------------------------- the check
@dataclass
class Run:
    """One program run through the learner's jvp: what came back, what was expected."""

    program: Program
    x: np.ndarray
    v: np.ndarray
    expected: tuple  # (primal, tangent) from wb.func.jvp
    got: tuple = field(default=(None, None))

    @property
    def context(self) -> str:
        return f"For {self.program.text}, x of shape {shape_text(self.x.shape)}"

    def right(self) -> bool:
        return all(same(e, g) for e, g in zip(self.expected, self.got))


@checker
def check_dual_interpreter(jvp: Callable) -> Passed:
    """Check ``jvp(f, x, v) -> (primal, tangent)``, the learner's forward-mode interpreter.

    Runs it on :data:`PROGRAMS` (numpy arrays in float64, a random direction v each) and
    compares with ``wb.func.jvp`` of the same program on tensors.
    """
    if not callable(jvp):
        fail(
            f"Your jvp is not a function but a value ({type(jvp).__name__}): define it with "
            "`def jvp(f, x, v):`, returning (primal, tangent)."
        )
    rng = np.random.default_rng(SEED)
    runs = []
    for program in PROGRAMS:
        x, v = rng.standard_normal(SIZE), rng.standard_normal(SIZE)
        run = Run(program, x, v, engine_jvp(program, x, v))
        run.got = learners_jvp(jvp, run)
        runs.append(run)
    wrong = [run for run in runs if not run.right()]
    if wrong:
        diagnose(runs, wrong[0])
    return Passed(
        "Your forward-mode interpreter is right.",
        f"On {len(runs)} programs, from x * x to x.sin() * x + (x * 2).exp(), f run on your "
        "Dual gave the same value and tangent J·v as wb.func.jvp. You just wrote "
        "forward-mode autodiff: each operation computes its output's tangent as it runs, "
        "and a value used twice needs no bookkeeping.",
    )


def engine_jvp(program: Program, x: np.ndarray, v: np.ndarray) -> tuple:
    from ..func import jvp

    primal, tangent = jvp(program.run, (Tensor(x),), (Tensor(v),))
    return primal.numpy(), tangent.numpy()


class Watched:
    """The program as the learner's jvp receives it: it checks what f is given, runs it,
    and notes a misuse to report after the learner's jvp returns (or swallowed the stop)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.calls = 0
        self.misuse = ""
        self.stub = ""  # the method whose stub (raise NotImplementedError()) ran inside f

    def __call__(self, x):
        self.calls += 1
        self.misuse = misuse_of(x, self.program)
        if self.misuse:
            raise CheckerStop(self.misuse)
        try:
            return self.program.run(x)
        except NotImplementedError as err:
            self.stub = innermost_name(err)
            raise


def misuse_of(x, program: Program) -> str:
    """What is wrong with what the learner's jvp gave f, in words ("" for a Dual)."""
    if isinstance(x, Tensor):
        return (
            "your jvp ran f on a workbench Tensor: run it on your own Dual, Dual(x, v), so "
            "that your operations carry the tangent"
        )
    if isinstance(x, (numbers.Number, np.ndarray)):
        return (
            f"your jvp ran f on {a_kind(x)}, not on a Dual: wrap the input as "
            "Dual(x, v), then run f on it once"
        )
    missing = [name for name in program.needs if not callable(getattr(type(x), name, None))]
    if missing:
        return (
            f"f was given {a_kind(x)}, which has no method {missing[0]}: the "
            f"programs call it as they would on a tensor ({program.text})"
        )
    return ""


def learners_jvp(jvp: Callable, run: Run) -> tuple:
    """The learner's ``(primal, tangent)`` for one program, as arrays; misuse refused in words."""
    watched = Watched(run.program)
    try:
        got = call_learner(jvp, (watched, run.x.copy(), run.v.copy()), run.context, "jvp")
    except NotAnswered:
        raise NotAnswered(stub_text(watched.stub)) from None
    except CheckerStop:
        got = None
    if watched.misuse:
        fail(f"{run.context}, {watched.misuse}.")
    if watched.calls == 0:
        fail(
            f"{run.context}, your jvp never ran f. Run f once on Dual(x, v): its result "
            "holds both the value and the tangent."
        )
    return pair_of(got, run)


def innermost_name(err: BaseException) -> str:
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return "" if tb is None else tb.tb_frame.f_code.co_name


def stub_text(name: str) -> str:
    """ "function jvp", or "method sin of your Dual" when a method's stub ran inside f."""
    return f"method {name} of your Dual" if name else "function jvp"


def pair_of(got, run: Run) -> tuple:
    """``(primal, tangent)`` as float arrays; anything else refused with a sentence."""
    if hasattr_safely(got, "primal") and hasattr_safely(got, "tangent"):
        fail(
            f"{run.context}, your jvp returned {a_kind(got)}, the dual number itself. "
            "Return its two parts as a pair: (out.primal, out.tangent)."
        )
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        count = f" of {len(got)}" if isinstance(got, (tuple, list)) else ""
        what = f"{a_kind(got)}{count}"
        fail(
            f"{run.context}, your jvp returned {what}. Return a pair (primal, tangent): "
            "the value of f at x and its tangent, as wb.func.jvp does."
        )
    return tuple(numbers_of(part, name, run) for part, name in zip(got, ("primal", "tangent")))


def numbers_of(value, name: str, run: Run) -> np.ndarray:
    if value is None:
        if name == "tangent":
            fail(
                f"{run.context}, your tangent is None: it was not carried through f. Each "
                "operation must compute its output's tangent, and jvp return the tangent of "
                "f's output."
            )
        fail(f"{run.context}, your primal is None. Return the value of f at x first.")
    if hasattr_safely(value, "primal") or hasattr_safely(value, "tangent"):
        fail(
            f"{run.context}, your {name} is {a_kind(value)}, not numbers: return "
            f"out.primal and out.tangent, the two parts of f's output."
        )
    array = as_numbers(value, f"{name} ({run.program.text})")
    if array.dtype.kind not in "f":
        fail(
            f"{run.context}, your {name} is complex: keep the computation real "
            "(numpy's sin, cos and exp of real arrays)."
        )
    return array.astype(np.float64)


def a_kind(value) -> str:
    """``a tuple``, ``an int``, ``a numpy array``: the kind of ``value``, with its article."""
    if isinstance(value, np.ndarray):
        return "a numpy array"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def hasattr_safely(value, name: str) -> bool:
    try:
        return hasattr(value, name)
    except Exception:  # noqa: BLE001 (a learner's __getattr__ may raise anything)
        return False


def same(expected: np.ndarray, got: np.ndarray) -> bool:
    return is_close(expected, got, RTOL, ATOL)


def spread(got: np.ndarray, shape: tuple) -> np.ndarray:
    """``got`` broadcast to ``shape`` where it can be (a tangent returned as the number 0)."""
    try:
        return np.broadcast_to(got, shape)
    except ValueError:
        return got


# ----------------------------------------------------------------- the diagnosis
def diagnose(runs: list[Run], first: Run) -> None:
    """Name the one slip that explains every run, else show the first difference."""
    for slip in SLIPS:
        if explains(slip, runs):
            part = 0 if slip.wrong_part == "primal" else 1
            finding = wrong_values(
                slip.kind,
                f"your {slip.wrong_part}",
                slip.observation,
                slip.advice,
                first.expected[part],
                spread(first.got[part], first.expected[part].shape),
                RTOL,
                ATOL,
            )
            fail(finding.sentences(first.context), finding)
    for part, name in enumerate(("primal", "tangent")):
        expected, got = first.expected[part], first.got[part]
        if same(expected, got):
            continue
        finding = compare(f"your {name}", expected, got, rtol=RTOL, atol=ATOL)
        finding.advice = advice_for(finding.kind, name)
        fail(finding.sentences(first.context), finding)


def explains(slip: Slip, runs: list[Run]) -> bool:
    """Does ``slip`` give the learner's results on every program (and differ from right
    on at least one)?"""
    differs = False
    for run in runs:
        with np.errstate(all="ignore"):
            slipped = model_jvp(slip.rules, run.program, run.x, run.v)
        if not all(same(s, spread(g, s.shape)) for s, g in zip(slipped, run.got)):
            return False
        differs = differs or not all(same(s, e) for s, e in zip(slipped, run.expected))
    return differs


def advice_for(kind: str, name: str) -> str:
    """The advice for a difference no known slip explains: what to look at, no cause."""
    if kind == "shape":
        return f"the {name} has the shape of x here: compute it elementwise, with no sum"
    if kind == "zeros":
        return "the tangent got lost on the way: which operation returned a tangent of 0?"
    if name == "primal":
        return "the primal is f(x) itself: each operation computes it as it would on numbers"
    return (
        "run the program by hand on one element: sin gives cos(x) · ẋ, exp gives exp(x) · ẋ, "
        "a product ȧ · b + a · ḃ, a sum ȧ + ḃ, a constant 0"
    )
