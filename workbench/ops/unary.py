"""One-input math functions: exp, log, sqrt, trigonometry, erf, rounding, one op per block.

Each block is a forward kernel on arrays, a gradient rule written in tensor ops
(so it can be differentiated again) and the public function. Rounding ops have a
zero gradient, as in PyTorch. For complex x the derivative is conjugated,
``x̄ = ȳ · conj(f'(x))``; ``conj`` leaves real tensors alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..core import backend, checks
from ..core.tensor import Tensor
from ..record.dispatch import apply_op, float_input
from .arithmetic import zeros_like_grad
from .complex_numbers import conj, refuse_complex
from .registry import OpDef, register_gradient, register_jvp, register_op, register_rules

TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _on_floats(op: OpDef, doc: str | None = None) -> Callable[[Tensor], Tensor]:
    """The public function of a one-input op on floating-point values: an integer input is
    made float first (``exp(tensor([1]))`` is ``tensor([2.7183])``), as in PyTorch."""

    def function(input) -> Tensor:
        return apply_op(op, (float_input(input, op.name),))

    function.__name__ = function.__qualname__ = op.name
    function.__doc__ = doc
    return function


# ------------------------------------------------------------ exp, log, sqrt
_exp = register_op("exp", saves=("out",))(np.exp)


@register_gradient("exp")
def exp_grad(orig, grad):
    """Forward: y = exp(x)
    Backward: x̄ = ȳ · y
    Complex x: x̄ = ȳ · conj(y)"""
    return [grad * conj(orig.out)]


@register_jvp("exp")
def exp_jvp(orig, tangents):
    """Forward: y = exp(x)
    JVP: ẏ = ẋ · y"""
    return tangents[0] * orig.out


exp = _on_floats(_exp)


_log = register_op("log", saves=("x",))(np.log)


@register_gradient("log")
def log_grad(orig, grad):
    """Forward: y = ln x
    Backward: x̄ = ȳ / x
    Complex x: x̄ = ȳ / conj(x)"""
    (x,) = orig.args
    return [grad / conj(x)]


@register_jvp("log")
def log_jvp(orig, tangents):
    """Forward: y = ln x
    JVP: ẏ = ẋ / x"""
    return tangents[0] / orig.args[0]


log = _on_floats(_log)


_sqrt = register_op("sqrt", saves=("out",))(np.sqrt)


@register_gradient("sqrt")
def sqrt_grad(orig, grad):
    """Forward: y = √x
    Backward: x̄ = ȳ / (2 · y)
    Complex x: x̄ = ȳ / (2 · conj(y))"""
    return [grad / (2 * conj(orig.out))]


@register_jvp("sqrt")
def sqrt_jvp(orig, tangents):
    """Forward: y = √x
    JVP: ẏ = ẋ / (2 · y)"""
    return tangents[0] / (2 * orig.out)


sqrt = _on_floats(_sqrt)


# ------------------------------------------------------------------ sin, cos
_sin = register_op("sin", saves=("x",))(np.sin)


@register_gradient("sin")
def sin_grad(orig, grad):
    """Forward: y = sin x
    Backward: x̄ = ȳ · cos x
    Complex x: x̄ = ȳ · conj(cos x)"""
    (x,) = orig.args
    return [grad * conj(cos(x))]


@register_jvp("sin")
def sin_jvp(orig, tangents):
    """Forward: y = sin x
    JVP: ẏ = ẋ · cos x"""
    return tangents[0] * cos(orig.args[0])


sin = _on_floats(_sin)


_cos = register_op("cos", saves=("x",))(np.cos)


@register_gradient("cos")
def cos_grad(orig, grad):
    """Forward: y = cos x
    Backward: x̄ = −ȳ · sin x
    Complex x: x̄ = −ȳ · conj(sin x)"""
    (x,) = orig.args
    return [-grad * conj(sin(x))]


@register_jvp("cos")
def cos_jvp(orig, tangents):
    """Forward: y = cos x
    JVP: ẏ = −ẋ · sin x"""
    return -tangents[0] * sin(orig.args[0])


cos = _on_floats(_cos)


# ------------------------------------------------------------- log10, log2
def _rounded_once(ufunc, x):
    """numpy's float32 log10 and log2 may be 1 ulp off (log10(1000) = 3.0000002); computed
    in float64 and rounded once, they are PyTorch's."""
    if x.dtype == np.float32:
        return ufunc(x.astype(np.float64)).astype(np.float32)
    return ufunc(x)


def _register_log(base: int, subscript: str):
    """Register ``log{base}``: ``y = log_b x`` is ``ln x / ln b``, so its rules are ln's
    divided by ``ln b``. The rules' docstrings, the formulas the stepper shows, name the base."""
    name, ln_b = f"log{base}", math.log(base)

    def log_b_grad(orig, grad):
        (x,) = orig.args
        return [grad / (conj(x) * ln_b)]

    def log_b_jvp(orig, tangents):
        return tangents[0] / (orig.args[0] * ln_b)

    ufunc = getattr(np, name)
    op = register_op(name, saves=("x",))(lambda x: _rounded_once(ufunc, x))
    backward = f"x̄ = ȳ / (x · ln {base})\nComplex x: x̄ = ȳ / (conj(x) · ln {base})"
    tangent = f"ẏ = ẋ / (x · ln {base})"
    register_rules(name, log_b_grad, log_b_jvp, f"log{subscript} x", backward, tangent)
    return op


_log10 = _register_log(10, "₁₀")
_log2 = _register_log(2, "₂")


log10 = _on_floats(_log10)


log2 = _on_floats(_log2)


# ----------------------------------------------------------- log1p, expm1
_log1p = register_op("log1p", saves=("x",))(np.log1p)


@register_gradient("log1p")
def log1p_grad(orig, grad):
    """Forward: y = ln(1 + x)
    Backward: x̄ = ȳ / (1 + x)
    Complex x: x̄ = ȳ / conj(1 + x)"""
    (x,) = orig.args
    return [grad / conj(1 + x)]


@register_jvp("log1p")
def log1p_jvp(orig, tangents):
    """Forward: y = ln(1 + x)
    JVP: ẏ = ẋ / (1 + x)"""
    return tangents[0] / (1 + orig.args[0])


_expm1 = register_op("expm1", saves=("out",))(np.expm1)


@register_gradient("expm1")
def expm1_grad(orig, grad):
    """Forward: y = eˣ − 1
    Backward: x̄ = ȳ · (y + 1)
    Complex x: x̄ = ȳ · (conj(y) + 1)"""
    return [grad * (conj(orig.out) + 1)]


@register_jvp("expm1")
def expm1_jvp(orig, tangents):
    """Forward: y = eˣ − 1
    JVP: ẏ = ẋ · (y + 1)"""
    return tangents[0] * (orig.out + 1)


log1p = _on_floats(_log1p, "``ln(1 + x)``, accurate for small x.")


expm1 = _on_floats(_expm1, "``eˣ − 1``, accurate for small x.")


# ------------------------------------------------- reciprocal, rsqrt, square
_reciprocal = register_op("reciprocal", saves=("out",))(np.reciprocal)


@register_gradient("reciprocal")
def reciprocal_grad(orig, grad):
    """Forward: y = 1 / x
    Backward: x̄ = −ȳ · y²
    Complex x: x̄ = −ȳ · conj(y)²"""
    y = conj(orig.out)
    return [-grad * y * y]


@register_jvp("reciprocal")
def reciprocal_jvp(orig, tangents):
    """Forward: y = 1 / x
    JVP: ẏ = −ẋ · y²"""
    y = orig.out
    return -tangents[0] * y * y


@register_op("rsqrt", saves=("out",))
def _rsqrt(x):
    return 1 / np.sqrt(x)


@register_gradient("rsqrt")
def rsqrt_grad(orig, grad):
    """Forward: y = 1 / √x
    Backward: x̄ = −½ · ȳ · y³
    Complex x: x̄ = −½ · ȳ · conj(y)³"""
    y = conj(orig.out)
    return [-0.5 * grad * y * y * y]


@register_jvp("rsqrt")
def rsqrt_jvp(orig, tangents):
    """Forward: y = 1 / √x
    JVP: ẏ = −½ · ẋ · y³"""
    y = orig.out
    return -0.5 * tangents[0] * y * y * y


@register_op("square", saves=("x",), node_name="PowBackward0")  # PyTorch squares with pow
def _square(x):
    return x * x


@register_gradient("square")
def square_grad(orig, grad):
    """Forward: y = x²
    Backward: x̄ = 2 · x · ȳ
    Complex x: x̄ = 2 · conj(x) · ȳ"""
    (x,) = orig.args
    return [2 * conj(x) * grad]


@register_jvp("square")
def square_jvp(orig, tangents):
    """Forward: y = x²
    JVP: ẏ = 2 · x · ẋ"""
    return 2 * orig.args[0] * tangents[0]


reciprocal = _on_floats(_reciprocal)


rsqrt = _on_floats(_rsqrt)


def square(input) -> Tensor:
    return apply_op(_square, (checks.as_tensor("square", "input", input),))


# ------------------------------------------- rounding: zero gradient everywhere
def _register_step(name: str, kernel, forward: str):
    """Register a rounding op: ``kernel`` on arrays, and the rules of a step function, flat
    almost everywhere, so that ``x̄ = 0`` and ``ẏ = 0`` (as PyTorch). ``forward`` is the op
    as a formula; the rules' docstrings, the formulas the stepper shows, are made from it."""
    flat = "(a step function: flat almost everywhere, as PyTorch)"

    def step_grad(orig, grad):
        return [zeros_like_grad(grad)]

    def step_jvp(orig, tangents):
        return zeros_like_grad(orig.out)

    op = register_op(name)(kernel)
    register_rules(name, step_grad, step_jvp, forward, f"x̄ = 0   {flat}", f"ẏ = 0   {flat}")
    return op


def _round_kernel(x, decimals=0):
    # np.round rounds halves to even, as torch.round does. Integers and bools are whole
    # already: they keep their dtype, as floor's do (np.round would make bools float16).
    return x.copy() if x.dtype.kind in "biu" else np.round(x, decimals)


_floor = _register_step("floor", np.floor, "⌊x⌋")
_ceil = _register_step("ceil", np.ceil, "⌈x⌉")
_trunc = _register_step("trunc", np.trunc, "trunc(x)   (round toward zero)")
_round = _register_step("round", _round_kernel, "round(x)   (halves to even)")


def floor(input: Tensor) -> Tensor:
    refuse_complex("floor", input)
    return apply_op(_floor, (input,))


def ceil(input: Tensor) -> Tensor:
    refuse_complex("ceil", input)
    return apply_op(_ceil, (input,))


def trunc(input: Tensor) -> Tensor:
    refuse_complex("trunc", input)
    return apply_op(_trunc, (input,))


def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001  (torch.round)
    refuse_complex("round", input)
    if decimals and isinstance(input, Tensor) and input.dtype.kind in "biu":
        raise NotImplementedError(
            f"round(): rounding to decimals={decimals} is not implemented for an input of "
            f"dtype {input.dtype} (shape {tuple(input.shape)}): only floating-point tensors"
        )
    attrs = {"decimals": int(decimals)} if decimals else None
    return apply_op(_round, (input,), attrs)


# ------------------------------------------------------------------- tan, erf
_tan = register_op("tan", saves=("out",))(np.tan)


@register_gradient("tan")
def tan_grad(orig, grad):
    """Forward: y = tan x
    Backward: x̄ = ȳ · (1 + y²)
    Complex x: x̄ = ȳ · (1 + conj(y)²)"""
    y = conj(orig.out)
    return [grad * (1 + y * y)]


@register_jvp("tan")
def tan_jvp(orig, tangents):
    """Forward: y = tan x
    JVP: ẏ = ẋ · (1 + y²)"""
    y = orig.out
    return tangents[0] * (1 + y * y)


tan = _on_floats(_tan)


def erf_array(x: np.ndarray) -> np.ndarray:
    """The error function on an array, to double precision, with numpy only.

    numpy has no ``erf``. For |x| ≤ 2.5 we sum the series
    ``erf(x) = 2/√π · e^(−x²) · Σₙ (2x²)ⁿ · x / (1·3·5···(2n+1))``, whose terms are all
    positive (no cancellation). Further out we use the continued fraction
    ``erfc(x) = e^(−x²)/√π · 1/(x + ½/(x + 1/(x + (3/2)/(x + ...))))``, evaluated from
    the bottom up. Both loops run over terms, never over elements.
    """
    xp = backend.xp(x)  # numpy or cupy, whichever holds x: the work stays on its device
    x64 = xp.asarray(x, dtype=np.float64)
    a = np.abs(x64)
    out = np.empty_like(x64)
    near = a <= 2.5
    xn = x64[near]
    term, total, two_x2 = xn.copy(), xn.copy(), 2 * xn * xn
    for n in range(1, 40):
        term = term * two_x2 / (2 * n + 1)
        total = total + term
    out[near] = TWO_OVER_SQRT_PI * np.exp(-xn * xn) * total
    far = ~near & ~np.isnan(a)
    af = a[far]
    with np.errstate(over="ignore", invalid="ignore"):
        fraction = af.copy()
        for k in range(50, 0, -1):
            fraction = af + (k / 2) / fraction
        erfc = np.exp(-af * af) / (math.sqrt(math.pi) * fraction)
    out[far] = np.sign(x64[far]) * (1 - np.nan_to_num(erfc))
    out[np.isnan(a)] = np.nan
    return out.astype(x.dtype if isinstance(x, xp.ndarray) else np.float64, copy=False)


@register_op("erf", saves=("x",))
def _erf(x):
    return erf_array(x)


@register_gradient("erf")
def erf_grad(orig, grad):
    """Forward: y = erf(x) = 2/√π ∫₀ˣ e^(−t²) dt
    Backward: x̄ = ȳ · 2/√π · e^(−x²)"""
    (x,) = orig.args
    return [grad * TWO_OVER_SQRT_PI * exp(-(x * x))]


@register_jvp("erf")
def erf_jvp(orig, tangents):
    """Forward: y = erf(x)
    JVP: ẏ = ẋ · 2/√π · e^(−x²)"""
    (x,) = orig.args
    return tangents[0] * TWO_OVER_SQRT_PI * exp(-(x * x))


def erf(input) -> Tensor:
    refuse_complex("erf", input)
    return apply_op(_erf, (float_input(input, "erf"),))
