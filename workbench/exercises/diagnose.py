"""Compare an answer with the expected one, and say in plain words what is wrong.

:func:`compare` runs the diagnoses below in order and returns the first that fits,
as a :class:`Finding`, or ``None`` when the answer is right. Each diagnosis is one
small function that looks for one kind of mistake:

==================  ==========================================================
``missing``         None where a gradient was expected
``unexpected``      a gradient where None was expected
``not_a_tensor``    a float, list... where a tensor was expected
``shape``           the wrong shape; a broadcast gradient not summed back
``not_finite``      NaN (not a number) or infinity
``zeros``           all zeros where nonzero values were expected
``no_upstream``     the local derivative alone, not multiplied by ȳ
``sign``            every element off by a sign
``conjugated``      complex: the conjugate of the expected value (kind
                    ``conjugate``: a conj one too many, or one missing)
``conjugate``       complex: ȳ · f′(z) where ȳ · conj(f′(z)) was expected
``factor``          every element off by the same factor (2, ½, ...)
``elements``        some elements wrong: which ones, expected and got
==================  ==========================================================

Where ``compare`` finds only wrong elements, :func:`~workbench.exercises.rules.check_rule`
knows more about a gradient rule, and tries these (each needs what only it has):

==================  ==========================================================
``upstream_only``   ȳ passed on unchanged: the local derivative left out
``swapped``         the gradient another input should get (ā where b̄ belongs)
``applied_again``   the op applied to its own output y again (``y.sigmoid()``)
``real_part_only``  complex: the right real parts, no imaginary part
==================  ==========================================================

A finding holds an *observation* ("your gradient for y has shape (2, 3) where (3,)
was expected") and *advice* ("sum it over axis 0 with collapse_sum_like(g, y)").
The checkers put them into one or two sentences, and may swap the advice for one
that fits their exercise better (``ADVICE`` in each checker).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..core.tensor import Tensor
from ..ops.broadcasting import summed_axes

RTOL = 1e-6  # an answer within these of the expected one is right
ATOL = 1e-9
MAX_LISTED = 5  # wrong elements named one by one in a message
NOT_VALUES = ("missing", "unexpected", "not_a_tensor", "dtype")  # kinds read no values


@dataclass
class Finding:
    """One thing wrong with one answer (``what``: "your gradient for x", "x.grad")."""

    kind: str
    what: str
    observation: str
    advice: str = ""
    expected: np.ndarray | None = None
    got: np.ndarray | None = None
    wrong: np.ndarray | None = None  # bool mask, shaped like ``expected``: the wrong elements
    details: dict = field(default_factory=dict)

    def sentences(self, context: str = "", advice: str | None = None) -> str:
        """``"<Context>, <observation>. <Advice>."`` — one or two plain sentences.

        ``advice`` replaces the finding's own, where the checker knows better.
        """
        first = f"{context}, {self.observation}" if context else self.observation
        text = capitalize(first) + "."
        advice = self.advice if advice is None else advice
        if advice:
            text += " " + capitalize(advice.rstrip(".")) + "."
        return text


def compare(
    what: str,
    expected,
    got,
    *,
    upstream=None,
    rtol: float = RTOL,
    atol: float = ATOL,
) -> Finding | None:
    """The first diagnosis that fits ``got`` against ``expected``; None if ``got`` is right.

    ``expected`` and ``got`` are tensors, arrays or None. ``upstream`` is the gradient ȳ
    that reached the op, when it has the answer's shape: it lets the check notice a
    rule that forgot to multiply by it.
    """
    if expected is None or got is None:
        return diagnose_missing(what, expected, got) or diagnose_unexpected(what, expected, got)
    finding = diagnose_not_a_tensor(what, got) or diagnose_dtype(what, expected, got)
    if finding is not None:
        return finding
    expected, got = as_array(expected), as_array(got)
    finding = diagnose_shape(what, expected, got, rtol, atol)
    if finding is not None:
        return finding
    finding = diagnose_not_finite(what, expected, got)
    if finding is not None or is_close(expected, got, rtol, atol):
        return finding
    value_diagnoses = (
        lambda: diagnose_zeros(what, expected, got, rtol, atol),
        lambda: diagnose_no_upstream(what, expected, got, upstream, rtol, atol),
        lambda: diagnose_sign(what, expected, got, rtol, atol),
        lambda: diagnose_conjugated(what, expected, got, rtol, atol, upstream),
        lambda: diagnose_conjugate(what, expected, got, upstream, rtol, atol),
        lambda: diagnose_factor(what, expected, got, rtol, atol),
    )
    for diagnose in value_diagnoses:
        finding = diagnose()
        if finding is not None:
            return finding
    return diagnose_elements(what, expected, got, rtol, atol)


# ------------------------------------------------------------------ diagnoses
def diagnose_missing(what: str, expected, got) -> Finding | None:
    """None where a gradient was expected."""
    if got is not None or expected is None:
        return None
    shape = shape_text(as_array(expected).shape)
    return Finding(
        "missing",
        what,
        f"{what} is None, but a gradient was expected",
        f"return a tensor of shape {shape} in its place (None means “no gradient at all”)",
        expected=as_array(expected),
    )


def diagnose_unexpected(what: str, expected, got) -> Finding | None:
    """A gradient where None was expected (an input that takes no gradient)."""
    if expected is not None or got is None:
        return None
    return Finding(
        "unexpected",
        what,
        f"{what} should be None, but you gave a value",
        "this input takes no gradient (it is a Python number, or needs none): return None "
        "in its place",
    )


def diagnose_not_a_tensor(what: str, got) -> Finding | None:
    """A float, a list... where a tensor was expected."""
    if isinstance(got, (Tensor, np.ndarray)):
        return None
    kind = type(got).__name__
    if type(got).__module__.startswith("torch"):
        kind = f"PyTorch {kind} (torch.{kind})"
    return Finding(
        "not_a_tensor",
        what,
        f"{what} is a {kind}, not a tensor",
        "build it with tensor operations on grad and orig.args, so that it is a Tensor",
    )


def diagnose_dtype(what: str, expected, got) -> Finding | None:
    """Numbers of the wrong kind: complex where the gradient is real (its imaginary parts
    would be dropped without a word), True/False, text or objects.

    Whole numbers and another float width are judged by their values: a prediction
    written as ``[2, 4]`` is the float gradient ``[2., 4.]``.
    """
    expected, got = as_array(expected), as_array(got)
    if got.dtype.kind == "c" and expected.dtype.kind != "c":
        observation = f"{what} is complex ({got.dtype}) where a real {expected.dtype} was expected"
        advice = (
            "its imaginary parts would be dropped without a word: keep the computation real "
            "(take .real only where the math says so)"
        )
    elif got.dtype.kind not in "iufc":
        observation = f"{what} has dtype {got.dtype} where {expected.dtype} was expected"
        advice = "compute it from the floating-point tensors you were given, not from masks"
    else:
        return None
    details = {"expected_dtype": expected.dtype, "got_dtype": got.dtype}
    return Finding("dtype", what, observation, advice, details=details)


def diagnose_shape(
    what: str, expected, got, rtol=RTOL, atol=ATOL, values_known: bool = True
) -> Finding | None:
    """The wrong shape: a broadcast gradient not summed back, a transpose, or another.

    With ``values_known`` False only ``expected``'s shape counts (not its values).
    """
    expected, got = as_array(expected), as_array(got)
    if expected.shape == got.shape:
        return None
    observation = (
        f"{what} has shape {shape_text(got.shape)} where {shape_text(expected.shape)} was expected"
    )
    details = {"expected_shape": expected.shape, "got_shape": got.shape}
    if broadcasts_to(expected.shape, got.shape):
        axes = summed_axes(got.shape, expected.shape)
        summed = collapse_sum(got, expected.shape)
        right = values_known and is_close(expected, summed, rtol, atol)
        details.update(axes=axes, right_once_summed=right)
        like = input_name(what) or "the input it belongs to"
        advice = (
            f"the broadcast gradient was not summed back: sum it over {axes_text(axes)} "
            f"with collapse_sum_like(g, {like})"
        )
        if details["right_once_summed"]:
            advice += " (summed, its values are right)"
        return Finding("shape", what, observation, advice, details=details)
    if got.ndim >= 2 and got.shape == expected.shape[::-1]:
        advice = "it looks transposed: check the order of the factors in your matmul"
    else:
        advice = "a gradient always has the shape of the input it belongs to"
    return Finding("shape", what, observation, advice, details=details)


def diagnose_not_finite(what: str, expected, got) -> Finding | None:
    """NaN or infinity where the expected value is a finite number."""
    expected, got = as_array(expected), as_array(got)
    bad = ~np.isfinite(got) & np.isfinite(expected)
    if not bad.any():
        return None
    word = "NaN (not a number)" if np.isnan(got[bad]).any() else "infinity"
    return Finding(
        "not_finite",
        what,
        f"{what} has {word} {where_text(bad)}",
        "something divided by zero or took the log of a negative number or zero",
        expected=expected,
        got=got,
        wrong=bad,
    )


def diagnose_zeros(what: str, expected, got, rtol=RTOL, atol=ATOL) -> Finding | None:
    """All zeros where nonzero values were expected."""
    expected, got = as_array(expected), as_array(got)
    if np.any(got != 0) or is_close(expected, 0 * expected, rtol, atol):
        return None
    observation = f"{what} is all zeros, but nonzero values were expected"
    advice = "the incoming gradient ȳ got lost on the way (multiplied by 0, or never used)"
    return wrong_values("zeros", what, observation, advice, expected, got, rtol, atol)


def diagnose_no_upstream(what: str, expected, got, upstream, rtol=RTOL, atol=ATOL):
    """The local derivative alone: the rule forgot to multiply by ȳ."""
    if upstream is None:
        return None
    expected, got, upstream = as_array(expected), as_array(got), as_array(upstream)
    if upstream.shape != got.shape or not is_close(expected, got * upstream, rtol, atol):
        return None
    observation = f"{what} is the local derivative alone"
    advice = (
        "multiply it by ȳ (the grad argument), the gradient arriving from above: "
        "that is the chain rule"
    )
    return wrong_values("no_upstream", what, observation, advice, expected, got, rtol, atol)


def diagnose_sign(what: str, expected, got, rtol=RTOL, atol=ATOL) -> Finding | None:
    """Every element off by a sign."""
    expected, got = as_array(expected), as_array(got)
    if not is_close(-expected, got, rtol, atol):
        return None
    observation = f"every element of {what} has the wrong sign"
    advice = "check the sign of your formula (a minus sign missing, or one too many)"
    finding = wrong_values("sign", what, observation, advice, expected, got, rtol, atol)
    finding.details["factor"] = -1.0
    return finding


def diagnose_conjugated(
    what: str, expected, got, rtol=RTOL, atol=ATOL, upstream=None
) -> Finding | None:
    """Complex numbers: the conjugate of the expected value, every imaginary part flipped.

    A conj one too many (``grad * conj(z) / |z|`` for abs) and one missing look the
    same here, as do ``conj(ȳ · y)`` and ``conj(ȳ) · y`` for exp: the finding names
    the flip, not which conj caused it. Where the local derivative has modulus 1
    (abs's z/|z|), its conjugate is also its reciprocal, so a ratio written upside
    down (|z|/z) gives the same numbers: the advice names both causes.
    """
    expected, got = as_array(expected), as_array(got)
    if expected.dtype.kind != "c" or np.allclose(expected.imag, 0, atol=atol):
        return None
    if not is_close(np.conj(expected), got, rtol, atol):
        return None
    advice = (
        "a conj in the wrong place flips them all (one too many, or one missing): check "
        "each conj in your rule"
    )
    if local_has_modulus_one(expected, upstream, rtol):
        advice = (
            "the local derivative here has modulus 1, so its conjugate is also its "
            "reciprocal: either a conj is in the wrong place (one too many, or one "
            "missing), or a ratio is upside down (|z| / z where z / |z| is meant)"
        )
    observation = (
        f"{what} is the complex conjugate of the expected value: every imaginary part has "
        "the wrong sign"
    )
    return wrong_values("conjugate", what, observation, advice, expected, got, rtol, atol)


def local_has_modulus_one(expected: np.ndarray, upstream, rtol=RTOL) -> bool:
    """Whether ``expected / ȳ``, the local derivative, has modulus 1 at every element."""
    if upstream is None:
        return False
    upstream = as_array(upstream)
    if upstream.shape != expected.shape or not np.all(upstream != 0):
        return False
    return bool(np.allclose(np.abs(expected / upstream), 1.0, rtol=max(rtol, 1e-9), atol=0))


def diagnose_conjugate(what: str, expected, got, upstream, rtol=RTOL, atol=ATOL):
    """Complex numbers: ȳ times the derivative where ȳ times its conjugate was expected.

    Only with a complex ȳ: with a real one (abs, whose output is real) this is the
    conjugate of the expected value, which :func:`diagnose_conjugated` names.
    """
    if upstream is None:
        return None
    expected, got, upstream = as_array(expected), as_array(got), as_array(upstream)
    if expected.dtype.kind != "c" or upstream.shape != got.shape or not np.all(upstream != 0):
        return None
    if upstream.dtype.kind != "c" or np.allclose(upstream.imag, 0, atol=atol):
        return None
    local = expected / upstream  # conj(f′(z)), element by element
    if not is_close(upstream * np.conj(local), got, rtol, atol):
        return None
    observation = f"{what} is ȳ times the derivative, not ȳ times its conjugate"
    advice = (
        "for complex inputs the gradient is ȳ · conj(f′(z)): wrap the derivative in "
        "wb.conj(...), as PyTorch's rules do"
    )
    return wrong_values("conjugate", what, observation, advice, expected, got, rtol, atol)


# Each diagnosis ends in the same Finding call (what, its sentences, expected, got, the tolerances):
# alike in shape only, the sentences are each diagnosis's own.
def diagnose_factor(what: str, expected, got, rtol=RTOL, atol=ATOL) -> Finding | None:
    """Every element off by the same factor: ``got == c · expected`` with c ≠ 1."""
    expected, got = as_array(expected), as_array(got)
    factor = uniform_ratio(expected, got, rtol, atol)
    if factor is None or (got.size == 1 and nice_fraction(factor) is None):
        return None
    how = factor_text(abs(factor))
    if factor < 0:
        observation = f"every element of {what} has the wrong sign and is {how} the expected value"
    else:
        observation = f"every element of {what} is {how} the expected value"
    advice = f"your formula is off by a constant factor of {scale_text(abs(factor))}"
    if nice_fraction(abs(factor)) in (Fraction(2), Fraction(1, 2)):
        advice += ": look for a 2 (or a ½) that is missing or one too many"
    return Finding(
        "factor",
        what,
        observation,
        advice,
        expected=expected,
        got=got,
        wrong=~np.isclose(got, expected, rtol=rtol, atol=atol),
        details={"factor": factor},
    )


def diagnose_elements(what: str, expected, got, rtol=RTOL, atol=ATOL) -> Finding | None:
    """Some elements wrong: name them (up to a handful), with expected and got."""
    expected, got = as_array(expected), as_array(got)
    wrong = ~np.isclose(got, expected, rtol=rtol, atol=atol)
    count = int(wrong.sum())
    if count == 0:
        return None
    indices = [tuple(int(i) for i in index) for index in np.argwhere(wrong)]
    if got.ndim == 0:
        observation = f"{what} is {got_where_expected(got, expected)}"
    elif count == 1:
        (index,) = indices
        observation = (
            f"{what} is wrong at 1 element: at {index_text(index)} it is "
            f"{got_where_expected(got[index], expected[index])}"
        )
    else:
        first = indices[0]
        which = "all" if count == got.size else f"{count} of"
        listed = "" if count == got.size else f" ({indices_text(indices)})"
        observation = (
            f"{what} is wrong at {which} {got.size} elements{listed}; "
            f"at {index_text(first)} it is {got_where_expected(got[first], expected[first])}"
        )
    zeros = bool(np.all(got[wrong] == 0))
    advice = "these are 0 where nonzero values were expected" if zeros else ""
    return Finding(
        "elements",
        what,
        observation,
        advice,
        expected=expected,
        got=got,
        wrong=wrong,
        details={"indices": indices, "zeros": zeros},
    )


# ------------------------------------------------- what check_rule knows more
def diagnose_upstream_only(what: str, expected, got, upstream, rtol=RTOL, atol=ATOL):
    """ȳ passed on unchanged: the rule left out the local derivative (tanh's 1 − y²)."""
    if upstream is None:
        return None
    expected, got, upstream = as_array(expected), as_array(got), as_array(upstream)
    if upstream.shape != got.shape or not is_close(upstream, got, rtol, atol):
        return None
    if is_close(expected, upstream, rtol, atol):
        return None
    observation = f"{what} is ȳ itself, passed on unchanged"
    advice = f"the chain rule multiplies ȳ by the local derivative ∂y/∂{input_name(what) or 'x'}"
    return wrong_values("upstream_only", what, observation, advice, expected, got, rtol, atol)


def diagnose_swapped(what: str, expected, got, others: dict, rtol=RTOL, atol=ATOL):
    """The gradient another input should get: ``others`` maps each other input's name to
    its expected gradient (mul's ā = ȳ · a where ȳ · b belongs, or [b̄, ā] returned)."""
    expected, got = as_array(expected), as_array(got)
    for other, theirs in others.items():
        if theirs is None or is_close(expected, as_array(theirs), rtol, atol):
            continue
        if is_close(as_array(theirs), got, rtol, atol):
            observation = f"{what} is the gradient that {other} should get"
            advice = (
                "each input's gradient has its own formula: check which input each one "
                "uses, and that the list holds them in the order of the inputs"
            )
            return wrong_values("swapped", what, observation, advice, expected, got, rtol, atol)
    return None


def diagnose_applied_again(what: str, expected, got, again, op_name: str, rtol=RTOL, atol=ATOL):
    """The op applied to its own output again: ``again`` is what the right rule gives
    at op(y) in place of y (``s = y.sigmoid()`` where y = orig.out is already σ(x))."""
    if again is None:
        return None
    expected, got, again = as_array(expected), as_array(got), as_array(again)
    if not is_close(again, got, rtol, atol) or is_close(expected, again, rtol, atol):
        return None
    name = input_name(what) or "x"
    observation = f"{what} is what the rule gives at {op_name}(y), not at y"
    advice = (
        f"orig.out is already the output y = {op_name}({name}): use it as it is, without "
        f"applying {op_name} to it again"
    )
    return wrong_values("applied_again", what, observation, advice, expected, got, rtol, atol)


def diagnose_real_part_only(what: str, expected, got, rtol=RTOL, atol=ATOL):
    """Complex numbers: the right real parts, and no imaginary part at all."""
    expected, got = as_array(expected), as_array(got)
    if expected.dtype.kind != "c" or expected.shape != got.shape:
        return None
    if np.allclose(expected.imag, 0, atol=atol) or not np.allclose(got.imag, 0, atol=atol):
        return None
    if not is_close(expected.real, got.real, rtol, atol):
        return None
    name = input_name(what) or "z"
    observation = f"{what} has the right real parts but no imaginary part"
    advice = (
        f"the gradient of a complex {name} is ∂L/∂(Re {name}) + i·∂L/∂(Im {name}): "
        f"add the imaginary part, ∂L/∂(Im {name})"
    )
    return wrong_values("real_part_only", what, observation, advice, expected, got, rtol, atol)


# ------------------------------------------------------------------ helpers
def wrong_values(kind, what, observation, advice, expected, got, rtol, atol) -> Finding:
    """A finding about values, with the mask of the elements that differ."""
    wrong = ~np.isclose(got, expected, rtol=rtol, atol=atol)
    return Finding(kind, what, observation, advice, expected=expected, got=got, wrong=wrong)


def as_array(value) -> np.ndarray:
    if isinstance(value, Tensor):
        return value.detach().numpy()
    return np.asarray(value)


def is_close(expected: np.ndarray, got: np.ndarray, rtol=RTOL, atol=ATOL) -> bool:
    return expected.shape == got.shape and bool(
        np.allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    )


def broadcasts_to(shape: tuple, target: tuple) -> bool:
    """Whether broadcasting stretches ``shape`` to ``target`` (so a sum undoes it)."""
    if len(shape) > len(target):
        return False
    return all(a in (b, 1) for a, b in zip(reversed(shape), reversed(target)))


def collapse_sum(array: np.ndarray, shape: tuple) -> np.ndarray:
    """``collapse_sum_like`` on arrays: sum over the axes that broadcasting added."""
    return array.sum(axis=summed_axes(array.shape, shape)).reshape(shape)


def uniform_ratio(expected: np.ndarray, got: np.ndarray, rtol=RTOL, atol=ATOL) -> float | None:
    """``c`` when ``got == c · expected`` everywhere (with c not 0 or 1), else None."""
    big = np.abs(expected) > max(atol, 1e-12)
    if not big.any():
        return None
    ratios = got[big] / expected[big]
    if ratios.dtype.kind == "c":  # a factor is a real number: a complex ratio is no factor
        if not np.allclose(ratios.imag, 0, atol=1e-9):
            return None
        ratios = ratios.real
    factor = float(np.median(ratios))
    if not 1e-300 < abs(factor) < 1e300 or np.isclose(factor, 1, rtol=max(1e-4, 10 * rtol)):
        return None  # 0, inf, NaN, one whose reciprocal overflows, or rounding: no factor
    if not np.allclose(got, factor * expected, rtol=max(rtol, 1e-6), atol=atol):
        return None
    fraction = nice_fraction(factor, max(rtol, 1e-6))  # 2 for 1.9996: digits typed by hand
    if fraction == 1:
        return None  # close to 1 within the tolerance, yet not close enough: no factor
    return float(fraction) if fraction is not None else factor


def nice_fraction(value: float, tolerance: float = 1e-6) -> Fraction | None:
    """``value`` as a small fraction (2, ½, ⅓, 3/2...) when it is one, within
    ``tolerance`` (relative), else None."""
    fraction = Fraction(value).limit_denominator(12)
    if fraction == 0 or abs(float(fraction) - value) > tolerance * max(1.0, abs(value)):
        return None  # 0 is no factor: a tiny one (1e-16) is "almost all zeros", not "× 0"
    if abs(fraction.numerator) > 12:
        return None
    return fraction


def factor_text(factor: float) -> str:
    """``2 times``, ``half``, ``1/3 of``, ``1.37 times``."""
    fraction = nice_fraction(factor)
    if fraction == Fraction(1, 2):
        return "half"
    if fraction is not None and fraction.denominator == 1:
        return f"{fraction.numerator} times"
    if fraction is not None:
        return f"{fraction.numerator}/{fraction.denominator} of"
    return f"{factor:.3g} times"


def scale_text(size: float) -> str:
    """The factor to name in "off by a factor of ...": 2 for both 2 and ½."""
    size = max(size, 1 / size)
    fraction = nice_fraction(size)
    return str(fraction) if fraction is not None else f"{size:.3g}"


def shape_text(shape: tuple) -> str:
    """``(2, 3)``, ``(3,)``, ``()``, as Python prints a shape."""
    return str(tuple(int(s) for s in shape))


def axes_text(axes: tuple) -> str:
    if len(axes) == 1:
        return f"axis {axes[0]}"
    return "axes " + ", ".join(str(a) for a in axes)


def index_text(index: tuple) -> str:
    """``[1, 2]``: how you would index the array to see that element."""
    return "[" + ", ".join(str(i) for i in index) + "]"


def indices_text(indices: list) -> str:
    shown = ", ".join(index_text(i) for i in indices[:MAX_LISTED])
    more = len(indices) - MAX_LISTED
    return f"{shown} and {more} more" if more > 0 else shown


def where_text(mask: np.ndarray) -> str:
    if mask.ndim == 0:
        return ""
    indices = [tuple(int(i) for i in index) for index in np.argwhere(mask)]
    return f"at {indices_text(indices)}"


def number(value, digits: int = 4) -> str:
    """``0.5``, or ``3+4j`` for a complex value: ``digits`` significant digits."""
    if np.iscomplexobj(value):
        z = complex(value)
        sign = "-" if np.signbit(z.imag) else "+"
        return f"{z.real:.{digits}g}{sign}{abs(z.imag):.{digits}g}j"
    return f"{float(value):.{digits}g}"


def got_where_expected(got, expected) -> str:
    """``1.906 where 1.907 was expected``: with as many digits as it takes (up to 10) for
    the two to read differently, never "1.907 where 1.907 was expected"."""
    digits = 4
    while digits < 10 and number(got, digits) == number(expected, digits):
        digits += 1
    return f"{number(got, digits)} where {number(expected, digits)} was expected"


def input_name(what: str) -> str | None:
    """``x`` from "your gradient for x" or "x.grad" (the name collapse_sum_like needs);
    None where ``what`` ends in no name ("your sum back to (2, 1)")."""
    name = what.rsplit(" ", 1)[-1].split(".")[0]
    return name if name.isidentifier() else None


def capitalize(text: str) -> str:
    """The first letter upper-case, unless the sentence starts with code (``x.grad``)."""
    first = text.split(" ", 1)[0]
    if not text or any(mark in first for mark in "._()[]"):
        return text
    return text[:1].upper() + text[1:]
