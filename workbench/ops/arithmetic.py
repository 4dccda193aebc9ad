"""Arithmetic: + − · / and powers, abs, sign, maximum, minimum, where, clamp, comparisons.

Each op is its forward kernel (numpy arrays in, array out), its gradient rule
(tensor ops, so it can itself be differentiated) and the public function. Binary
rules pass each partial through ``collapse_sum_like`` to undo broadcasting. Mixed
dtypes are promoted first, as in PyTorch (``promote``). For complex inputs a rule
multiplies by the conjugate of the derivative, ``conj(...)``, which does nothing to a
real tensor (see :mod:`workbench.ops.complex_numbers`). One-input math functions are
in :mod:`workbench.ops.unary`, activation functions in :mod:`workbench.ops.activations`.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from ..core import checks
from ..core.dtypes import bfloat16
from ..core.tensor import Tensor, default_complex_dtype, get_default_dtype, is_differentiable_dtype
from ..record.dispatch import apply_op
from ..record.forward_ad import carry_tangents, product_term, sum_of_terms
from .broadcasting import collapse_sum_like
from .complex_numbers import conj, real, refuse_complex
from .registry import register_gradient, register_jvp, register_op
from .shape import astype


# ----------------------------------------------------------- dtype promotion
def _as_operand(x, op: str, name: str):
    """Python numbers stay numbers (they get no gradient); arrays become constant tensors."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (int, float, bool, complex)):
        if type(x) is int and not checks.INT_LOW <= x <= checks.INT_HIGH:
            raise checks.int_overflow(op, name, x)
        return x
    return checks.as_tensor(op, name, checks.operand(op, name, x))


def check_operands(name: str, *args) -> None:
    """Refuse ``None``, strings and other non-numbers, with PyTorch's TypeError.

    ``args`` are ``(argument name, position, value)`` triples. Without this check
    numpy would wrap ``None`` in an object array: ``x + None`` gave NaNs.
    """
    for arg, position, value in args:
        if not _is_operand(value):
            shown = "" if value is None else f" ({value!r})"
            raise TypeError(
                f"{name}(): argument '{arg}' (position {position}) must be Tensor, "
                f"not {type(value).__name__}{shown}"
            )


def _is_operand(x) -> bool:
    """A tensor, a number, or array data (numpy arrays, lists) that becomes a constant tensor."""
    if isinstance(x, (Tensor, numbers.Number, np.generic, list, tuple)):
        return True
    return hasattr(x, "dtype") and hasattr(x, "shape")


# PyTorch's categories of dtypes, lowest first: bool < integer < float < complex.
# "V" is bfloat16, the one void-kind dtype a tensor can hold (see workbench/core/dtypes.py).
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3, "V": 2}


def result_type(tensor, other) -> np.dtype:
    """``torch.result_type``: the dtype a binary op on ``tensor`` and ``other`` computes in."""
    return _result_type(
        _as_operand(tensor, "result_type", "tensor"), _as_operand(other, "result_type", "other")
    )


def _result_type(*operands) -> np.dtype:
    """The dtype an op on these tensors and Python numbers computes in.

    Operands come in three tiers: tensors with dimensions, 0-d tensors, Python numbers.
    A lower tier changes the dtype only when it is of a higher category (see
    ``_combine``): float32 · 0-d float64 is float32, int32 · 0-d float64 is float64,
    int32 · 2.5 is the default float dtype (a Python float counts as float32).
    """
    numbers, zero_d, dimensioned = None, None, None  # each tier's promoted dtype
    for x in operands:
        if not isinstance(x, Tensor):
            numbers = _promote(numbers, _number_dtype(x))
        elif x._data.ndim == 0:
            zero_d = _promote(zero_d, x._data.dtype)
        else:
            dimensioned = _promote(dimensioned, x._data.dtype)
    return _combine(dimensioned, _combine(zero_d, numbers))


def _number_dtype(x) -> np.dtype:
    """The dtype PyTorch gives a Python number: bool, int64, or the default float/complex."""
    if isinstance(x, bool):
        return np.dtype(np.bool_)
    if isinstance(x, int):
        return np.dtype(np.int64)
    if isinstance(x, complex):
        return default_complex_dtype()
    return get_default_dtype()


def _promote(tier: np.dtype | None, dtype: np.dtype) -> np.dtype:
    return dtype if tier is None else promote_types(tier, dtype)


def promote_types(a: np.dtype, b: np.dtype) -> np.dtype:
    """``torch.promote_types``: numpy's answer, except that a bool or an integer never
    widens a float or complex dtype (numpy: int64 + float16 is float64; PyTorch: float16),
    and that bfloat16, which numpy does not know, promotes as PyTorch's does."""
    if _CATEGORY[a.kind] != _CATEGORY[b.kind] and min(_CATEGORY[a.kind], _CATEGORY[b.kind]) <= 1:
        return a if _CATEGORY[a.kind] > _CATEGORY[b.kind] else b
    if a == bfloat16 or b == bfloat16:
        return _promote_bfloat16(b if a == bfloat16 else a)
    return np.promote_types(a, b)


def _promote_bfloat16(other: np.dtype) -> np.dtype:
    """bfloat16 with a float or complex ``other``: bfloat16 × float16 is float32 (neither
    holds the other); any wider dtype wins, as float16 would lose to it."""
    if other == bfloat16:
        return other
    if other == np.float16:
        return np.dtype(np.float32)
    return np.promote_types(other, np.float16)


def _combine(higher: np.dtype | None, lower: np.dtype | None) -> np.dtype | None:
    """The higher tier's dtype, unless the lower tier's is of a higher category."""
    if higher is None:
        return lower
    if lower is None or _CATEGORY[lower.kind] <= _CATEGORY[higher.kind]:
        return higher
    if lower.kind == "c":  # float32 tensor · 0-d complex128: complex64
        return _complex_of(higher)
    return promote_types(higher, lower)


def _complex_of(dtype: np.dtype) -> np.dtype:
    """The complex dtype of a float's precision; complex64 for the small floats (PyTorch
    has complex32 for float16, an experimental dtype numpy lacks: we use complex64)."""
    return np.dtype(np.complex128 if dtype == np.float64 else np.complex64)


def promote(a, b, op: str = "promote"):
    """Bring two operands to their result type, as PyTorch computes a binary op.

    Python numbers stay numbers: numpy lets an array's dtype decide over them, as
    PyTorch does. ``op`` names the op in the error for an operand that is neither a
    tensor nor a number.
    """
    a, b = _as_operand(a, op, "input"), _as_operand(b, op, "other")
    dtype = _result_type(a, b)
    return _cast(a, dtype), _cast(b, dtype)


def _cast(x, dtype: np.dtype):
    """``x`` in ``dtype``, cast only where numpy's own promotion would not reach it.

    numpy widens a float or complex array just as PyTorch does (float32 · float64 is
    float64), so those need no copy. An integer or bool tensor is always cast (numpy:
    int8 · 2.5 is float64; PyTorch: float32), and so is a wider float tensor (a 0-d
    float64 times a float32 tensor). If that one requires grad, its cast is a node in
    the graph, and its gradient comes back in float64.
    """
    if not isinstance(x, Tensor):
        # numpy's rule that an array's dtype decides over a Python number does not reach
        # bfloat16 (bfloat16 · 2.5 would be float32): the number becomes a bfloat16 scalar
        # (an int through float: ml_dtypes refuses ints over 63 bits, up to 2**64 - 1 fine).
        if dtype == bfloat16:
            return bfloat16.type(float(x) if type(x) is int else x)
        return x
    if x._data.dtype == dtype:
        return x
    if x._data.dtype.kind in "fc" and np.promote_types(x._data.dtype, dtype) == dtype:
        return x
    return astype(x, dtype)  # an op, so that a traced program casts too (wb.program)


# The Python numbers that leave a tensor's dtype as it is, by the tensor's dtype kind:
# those of the same or a lower category (float32 · 2 and float32 · 2.5 stay float32).
_NUMBERS_WITHIN = {
    "b": (bool,),
    "u": (bool, int),
    "i": (bool, int),
    "f": (bool, int, float),
    "c": (bool, int, float, complex),
    "V": (),  # bfloat16: numpy's rule for numbers misses it, promote() takes care of it
}


def _keeps_dtype(a, b) -> bool:
    """Whether ``a ⊕ b`` needs no promotion: two tensors of one dtype, or a tensor and a
    Python number that leaves its dtype alone."""
    if isinstance(a, Tensor):
        if isinstance(b, Tensor):
            return a._data.dtype == b._data.dtype
        return type(b) in _NUMBERS_WITHIN[a._data.dtype.kind]
    return isinstance(b, Tensor) and type(a) in _NUMBERS_WITHIN[b._data.dtype.kind]


def _binary(op, a, b) -> Tensor:
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        da, db = a._data.dtype, b._data.dtype
        if da is db or da == db:
            return apply_op(op, (a, b))  # the common case: nothing to promote
    elif _keeps_dtype(a, b):
        return apply_op(op, (a, b))  # x * 2.0: numpy keeps x's dtype, as PyTorch does
    elif op.name not in ("eq", "ne"):  # x == None stays elementwise (PyTorch's says False)
        check_operands(op.name, ("input", 1, a), ("other", 2, b))
    a, b = promote(a, b, op.name)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = checks.as_tensor(op.name, "input", a)
    return apply_op(op, (a, b))


def _float_operands(a, b, op: str = "div"):
    """Division of integers gives floats (the default dtype), as in PyTorch."""
    a, b = _as_operand(a, op, "input"), _as_operand(b, op, "other")
    dtype = _result_type(a, b)
    if dtype.kind in "biu":
        dtype = get_default_dtype()
    return _cast(a, dtype), _cast(b, dtype)


# --------------------------------------------------------------- arithmetic
# The plainest kernels are numpy's ufuncs themselves: z = np.add(x, y) is x + y, and a
# Python function around it would only add a call to every add.
_add = register_op("add", inputs=("a", "b"))(np.add)


@register_gradient("add")
def add_grad(orig, grad):
    """Forward: y = a + b
    Backward: ā = collapse_sum_like(ȳ, a), b̄ = collapse_sum_like(ȳ, b)"""
    a, b = orig.args
    return [collapse_sum_like(grad, a), collapse_sum_like(grad, b)]


@register_jvp("add")
def add_jvp(orig, tangents):
    """Forward: y = a + b
    JVP: ẏ = ȧ + ḃ"""
    return sum_of_terms(tangents)


# ``1 - x`` (a number first) is PyTorch's "reversed subtraction", RsubBackward1.
_sub = register_op(
    "sub",
    inputs=("a", "b"),
    node_name=lambda node: "RsubBackward1" if node.input_meta[0] is None else "SubBackward0",
)(np.subtract)


@register_gradient("sub")
def sub_grad(orig, grad):
    """Forward: y = a − b
    Backward: ā = collapse_sum_like(ȳ, a), b̄ = collapse_sum_like(−ȳ, b)"""
    a, b = orig.args
    need_a, need_b = orig.needs_input_grad
    return [
        collapse_sum_like(grad, a) if need_a else None,
        collapse_sum_like(-grad, b) if need_b else None,
    ]


@register_jvp("sub")
def sub_jvp(orig, tangents):
    """Forward: y = a − b
    JVP: ẏ = ȧ − ḃ"""
    da, db = tangents
    return sum_of_terms([da, None if db is None else -db])


_mul = register_op("mul", inputs=("a", "b"), saves={"a": "b", "b": "a"})(np.multiply)


@register_gradient("mul")
def mul_grad(orig, grad):
    """Forward: y = a · b
    Backward: ā = collapse_sum_like(ȳ · b, a), b̄ = collapse_sum_like(ȳ · a, b)
    Complex: ā = collapse_sum_like(ȳ · conj(b), a), b̄ = collapse_sum_like(ȳ · conj(a), b)"""
    a, b = orig.args
    need_a, need_b = orig.needs_input_grad
    if grad._data.dtype.kind == "c":  # complex (ȳ is): ȳ · conj(b) and ȳ · conj(a)
        a, b = (_conj(a) if need_b else a), (_conj(b) if need_a else b)  # (only what is saved)
    return [
        collapse_sum_like(grad * b, a) if need_a else None,
        collapse_sum_like(grad * a, b) if need_b else None,
    ]


@register_jvp("mul")
def mul_jvp(orig, tangents):
    """Forward: y = a · b
    JVP: ẏ = ȧ · b + a · ḃ   (the product rule; ȧ or ḃ PyTorch's zero for a constant)"""
    (a, b), (da, db) = orig.args, tangents
    return sum_of_terms([product_term(orig, 0, da, b), product_term(orig, 1, db, a)])


def _conj(x):
    """``conj`` for a tensor or a Python number (whose conjugate is itself unless complex).

    A real tensor comes back at once: mul's and div's rules call this on every backward.
    """
    if isinstance(x, Tensor):
        return x if x._data.dtype.kind != "c" else conj(x)
    return x.conjugate()


@register_op("div", inputs=("a", "b"), saves={"b": ("a", "b"), "out": "b"})
def _div(a, b):
    return a / b


@register_gradient("div")
def div_grad(orig, grad):
    """Forward: y = a / b
    Backward: ā = collapse_sum_like(ȳ / b, a), b̄ = collapse_sum_like(−ȳ · y / b, b)
    Complex: ā = collapse_sum_like(ȳ / conj(b), a), b̄ = collapse_sum_like(−ȳ · conj(y / b), b)"""
    a, b = orig.args
    need_a, need_b = orig.needs_input_grad
    b_conj = _conj(b)
    return [
        collapse_sum_like(grad / b_conj, a) if need_a else None,
        collapse_sum_like(-grad * conj(orig.out) / b_conj, b) if need_b else None,
    ]


@register_jvp("div")
def div_jvp(orig, tangents):
    """Forward: y = a / b
    JVP: ẏ = (ȧ − y · ḃ) / b   (ḃ PyTorch's zero for a constant)"""
    (_, b), (da, db) = orig.args, tangents
    from_b = product_term(orig, 1, db, orig.out)
    return sum_of_terms([da, None if from_b is None else -from_b]) / b


_neg = register_op("neg")(np.negative)


@register_gradient("neg")
def neg_grad(orig, grad):
    """Forward: y = −x
    Backward: x̄ = −ȳ"""
    return [-grad]


@register_jvp("neg")
def neg_jvp(orig, tangents):
    """Forward: y = −x
    JVP: ẏ = −ẋ"""
    return -tangents[0]


def _pow_name(node) -> str:
    """PyTorch's three pows: ``x ** 2`` (0), ``x ** y`` of tensors (1), ``2 ** x`` (2)."""
    base, exponent = node.input_meta
    if base is None:
        return "PowBackward2"
    return "PowBackward0" if exponent is None else "PowBackward1"


@register_op(
    "pow",
    inputs=("x", "p"),
    saves={"x": ("x", "p"), "p": ("x", "p"), "out": "p"},
    node_name=_pow_name,
)
def _pow(x, p):
    """``x ** p``, with PyTorch's last bit where its CPU kernel writes the power out."""
    if not isinstance(p, (np.ndarray, complex, np.complexfloating)):  # a real number
        written_out, dtypes = _POWERS_WRITTEN_OUT.get(float(p), (None, ()))
        if x.dtype in dtypes:
            return written_out(x)
    return x**p


# PyTorch's CPU pow by these Python numbers is products, a quotient or a square root,
# each rounded in the tensor's dtype (numpy's power rounds once, so about a quarter of the
# values were one unit in the last place away); other exponents go through a vector pow
# whose last bit numpy cannot reproduce (REFERENCE.md D25).
_FLOATS = (np.dtype("float32"), np.dtype("float64"))
_POWERS_WRITTEN_OUT = {
    3.0: (lambda x: x * x * x, _FLOATS + (bfloat16,)),
    -2.0: (lambda x: 1 / (x * x), _FLOATS + (bfloat16,)),
    -0.5: (lambda x: 1 / np.sqrt(x), _FLOATS),  # bfloat16: in float32, rounded once
}


@register_gradient("pow")
def pow_grad(orig, grad):
    """Forward: y = x ** p
    Backward: x̄ = ȳ · p · x ** (p − 1) (0 where p = 0), p̄ = ȳ · y · ln x (0 where x = 0, p ≥ 0)
    Complex x: x̄ = ȳ · conj(p · x ** (p − 1)), p̄ = ȳ · conj(y · ln x)   (0 where x = 0, Re p ≥ 0)"""
    x, p = orig.args
    need_x, need_p = orig.needs_input_grad
    return [
        _pow_base_grad(grad, x, p) if need_x else None,
        _pow_exponent_grad(grad, x, p, orig.out) if need_p else None,
    ]


@register_jvp("pow")
def pow_jvp(orig, tangents):
    """Forward: y = x ** p
    JVP: ẏ = ẋ · p · x ** (p − 1) + ṗ · y · ln x   (the first term 0 where p = 0, the second
    where x = 0 and Re p ≥ 0; complex too: no conjugates in forward mode)"""
    (x, p), (dx, dp) = orig.args, tangents
    y = orig.out
    from_x = from_p = None
    if dx is not None:
        slope = p * x ** _less_one(p)
        from_x = where(p == 0, 0.0, dx * slope) if isinstance(p, Tensor) else dx * slope
        if not isinstance(p, Tensor) and p == 0:
            from_x = zeros_like_grad(y)
    if dp is not None:
        from_p = _pow_exponent_jvp(dp, x, p, y)
    return sum_of_terms([from_x, from_p])


def _pow_exponent_jvp(dp, x, p, y):
    """ṗ · y · ln x, flat where x = 0 and Re p ≥ 0 (as the gradient rule's PyTorch choice)."""
    from .unary import log

    if isinstance(x, Tensor):
        x = astype(x, y.dtype)
        flat = (x == 0) & (real(p) >= 0)
        return dp * y * log(where(flat, 1.0, x))
    if x == 0:
        return dp * y * where(real(p) >= 0, 0.0, -math.inf)
    with np.errstate(invalid="ignore"):
        ln_x = np.log(x)
    return dp * y * (complex(ln_x) if isinstance(x, complex) else float(ln_x))


def _less_one(p):
    """p − 1, the exponent of the slope x ** (p − 1). A Python int that would fall below
    int64 (p = −2⁶³) becomes a float, as PyTorch computes it in double."""
    less = p - 1
    return float(less) if type(less) is int and less < checks.INT_LOW else less


def _pow_base_grad(grad, x, p):
    if not isinstance(p, Tensor):
        return zeros_like_grad(grad) if p == 0 else grad * _conj(p) * conj(x ** _less_one(p))
    return collapse_sum_like(where(p == 0, 0.0, grad * conj(p) * conj(x ** (p - 1))), x)


def _pow_exponent_grad(grad, x, p, y):
    """ȳ · conj(y · ln x), except where x = 0 and Re p ≥ 0: there y is flat in p (PyTorch's
    choice).

    Those points take ln 1 = 0 instead of ln 0, so no 0 · ∞ is ever computed.
    """
    from .unary import log  # unary.py imports this module: log is imported when needed

    if isinstance(x, Tensor):
        x = astype(x, y.dtype)  # a float32 base of a float64 power: ln x in float64, as PyTorch
        flat = (x == 0) & (real(p) >= 0)
        return collapse_sum_like(grad * conj(y) * conj(log(where(flat, 1.0, x))), p)
    # A Python-number base: ln x is a constant.
    if x == 0:
        return grad * conj(y) * where(real(p) >= 0, 0.0, -math.inf)
    with np.errstate(invalid="ignore"):
        ln_x = np.log(x)
    return grad * conj(y) * (ln_x.conjugate() if isinstance(x, complex) else float(ln_x))


def _times_alpha(other, alpha, input):
    """``alpha · other`` for add and sub. A number times alpha becomes a new 0-d tensor,
    which is made on the CPU: it moves to ``input``'s device, where the sum happens.

    In forward mode its tangent is PyTorch's α · ḃ: add's own formula has no term for
    α, where a mul by a number records one (``product_term``)."""
    scaled = mul(other, alpha)
    if isinstance(input, Tensor) and not isinstance(other, Tensor):
        scaled = scaled.to(input.device)
    if isinstance(other, Tensor):
        carry_tangents(other, scaled, lambda tangent: tangent * alpha)
    return scaled


def add(input, other, *, alpha=1) -> Tensor:
    """``input + alpha · other``."""
    if alpha != 1:
        checks.number_arg("add", "alpha", alpha, complex_ok=True)
        other = _times_alpha(other, alpha, input)
    return _binary(_add, input, other)


def sub(input, other, *, alpha=1) -> Tensor:
    """``input − alpha · other``."""
    if alpha != 1:
        checks.number_arg("sub", "alpha", alpha, complex_ok=True)
        other = _times_alpha(other, alpha, input)
    return _binary(_sub, input, other)


def mul(input, other) -> Tensor:
    return _binary(_mul, input, other)


def div(input, other) -> Tensor:
    """True division; integers divide to floats, as in PyTorch."""
    if _keeps_dtype(input, other) and _floating(input, other):
        return apply_op(_div, (input, other))  # x / 2: nothing to promote
    check_operands("div", ("input", 1, input), ("other", 2, other))
    a, b = _float_operands(input, other, "div")
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = checks.as_tensor("div", "input", a)
    return apply_op(_div, (a, b))


# ------------------------------------------------ floor division and remainders
# a // b is floor(a / b); a % b = a − b · floor(a / b) takes the divisor's sign (Python's),
# fmod(a, b) = a − b · trunc(a / b) the dividend's (C's). Integers divided by zero are
# PyTorch's RuntimeError("ZeroDivisionError"); floats give inf and nan.
def _integer_division(kernel):
    """``kernel`` that refuses an integer division by zero, as PyTorch does (numpy would
    warn and give 0)."""

    def divide(a, b):
        if np.result_type(a, b).kind in "iu" and _any_zero(b):
            raise RuntimeError("ZeroDivisionError")
        return kernel(a, b)

    return divide


def _any_zero(b) -> bool:
    """Whether the divisor holds a 0 (an array on its own device, or a Python number)."""
    return bool((b == 0).any()) if hasattr(b, "any") else b == 0


def _remainder_name(node) -> str:
    """``x % 2`` is RemainderBackward0, ``x % y`` of tensors RemainderBackward1; ``2 % x``
    has no derivative in PyTorch (its node is NotImplemented)."""
    return _taken_away_name("Remainder", node)


def _fmod_name(node) -> str:
    return _taken_away_name("Fmod", node)


def _taken_away_name(op: str, node) -> str:
    dividend, divisor = node.input_meta
    if dividend is None:
        return "NotImplemented"
    return f"{op}Backward0" if divisor is None else f"{op}Backward1"


def _divisors_sign_remainder(a, b):
    """``a % b`` as PyTorch's kernel computes it: C's fmod (the dividend's sign), then b
    added where the signs differ. A zero keeps the dividend's sign: ``-5 % 2.5`` is -0.0
    there and here, where numpy's remainder gives the divisor's (0.0)."""
    taken = np.fmod(a, b)
    return np.where((taken != 0) & ((b < 0) != (taken < 0)), taken + b, taken)


_remainder = register_op(
    "remainder", inputs=("a", "b"), saves={"a": "b", "b": "b"}, node_name=_remainder_name
)(_integer_division(_divisors_sign_remainder))
_fmod = register_op("fmod", inputs=("a", "b"), saves={"a": "b", "b": "b"}, node_name=_fmod_name)(
    _integer_division(np.fmod)
)
_floor_divide = register_op("floor_divide", inputs=("a", "b"), node_name="NotImplemented")(
    _integer_division(np.floor_divide)
)


def _quotient(orig):
    """floor(a / b) for remainder, trunc(a / b) for fmod: how many b's were taken away."""
    from .unary import floor, trunc

    a, b = orig.args
    return (floor if orig.op.name == "remainder" else trunc)(a / b)


def _not_implemented(orig, name: str):
    """PyTorch has no derivative of ``floor_divide``, nor of ``remainder``/``fmod`` by
    their divisor when the dividend is a number: its backward raises."""
    if orig.input_meta[0] is None:  # the dividend was a number
        raise RuntimeError(f"derivative for aten::{name} is not implemented")


@register_gradient("remainder")
def remainder_grad(orig, grad):
    """Forward: y = a − b · floor(a / b)
    Backward: ā = collapse_sum_like(ȳ, a), b̄ = collapse_sum_like(−ȳ · floor(a / b), b)"""
    return _taken_away_grad(orig, grad)


@register_gradient("fmod")
def fmod_grad(orig, grad):
    """Forward: y = a − b · trunc(a / b)
    Backward: ā = collapse_sum_like(ȳ, a), b̄ = collapse_sum_like(−ȳ · trunc(a / b), b)"""
    return _taken_away_grad(orig, grad)


def _taken_away_grad(orig, grad):
    a, b = orig.args
    _not_implemented(orig, orig.op.name)
    need_a, need_b = orig.needs_input_grad
    return [
        collapse_sum_like(grad, a) if need_a else None,
        collapse_sum_like(-grad * _quotient(orig), b) if need_b else None,
    ]


@register_jvp("remainder")
def remainder_jvp(orig, tangents):
    """Forward: y = a − b · floor(a / b)
    JVP: ẏ = ȧ − ḃ · floor(a / b)"""
    return _taken_away_jvp(orig, tangents)


@register_jvp("fmod")
def fmod_jvp(orig, tangents):
    """Forward: y = a − b · trunc(a / b)
    JVP: ẏ = ȧ − ḃ · trunc(a / b)"""
    return _taken_away_jvp(orig, tangents)


def _taken_away_jvp(orig, tangents):
    da, db = tangents
    return sum_of_terms([da, None if db is None else -db * _quotient(orig)])


@register_gradient("floor_divide")
def floor_divide_grad(orig, grad):
    """Forward: y = floor(a / b)
    Backward: none: PyTorch's backward raises (derivative for aten::floor_divide is not
    implemented); the result still requires grad, as PyTorch's"""
    raise RuntimeError("derivative for aten::floor_divide is not implemented")


@register_jvp("floor_divide")
def floor_divide_jvp(orig, tangents):
    """Forward: y = floor(a / b)
    JVP: none: PyTorch refuses forward AD with aten::floor_divide"""
    raise NotImplementedError(
        "Trying to use forward AD with aten::floor_divide that does not support it."
    )


def _divided(op, kernel_name: str, input, other) -> Tensor:
    """``op`` on promoted operands; bool and complex are PyTorch's NotImplementedError."""
    check_operands(op.name, ("input", 1, input), ("other", 2, other))
    for x in (input, other):
        dtype = x.dtype if isinstance(x, Tensor) else None
        if dtype is not None and dtype.kind in "bc" or isinstance(x, complex):
            raise NotImplementedError(
                f'"{kernel_name}" not implemented for {dtype or "complex"}: {op.name} takes '
                "integer and floating-point tensors"
            )
    return _binary(op, input, other)


def remainder(input, other) -> Tensor:
    """``input % other``: the remainder with the divisor's sign, as Python's (and PyTorch's)."""
    return _divided(_remainder, "remainder_cpu", input, other)


def fmod(input, other) -> Tensor:
    """C's remainder: the sign of the dividend (``fmod(-5, 3)`` is −2, ``-5 % 3`` is 1).
    Its input must be a tensor (PyTorch's fmod has no number-first form, remainder has)."""
    checks.tensor_arg("fmod", "input", input)
    return _divided(_fmod, "fmod_cpu", input, other)


def floor_divide(input, other) -> Tensor:
    """``input // other``: floor(input / other), in the operands' promoted dtype (integers
    stay integers). No gradient: PyTorch's backward through it raises."""
    return _divided(_floor_divide, "div_floor_cpu", input, other)


def neg(input: Tensor) -> Tensor:
    return apply_op(_neg, (input,))


def _floating(a, b) -> bool:
    """Whether the tensor among ``a`` and ``b`` (``a`` if both are) is float or complex."""
    tensor = a if isinstance(a, Tensor) else b
    return is_differentiable_dtype(tensor._data.dtype)


def pow(input, exponent) -> Tensor:
    if _keeps_dtype(input, exponent):
        return apply_op(_pow, (input, exponent))  # x ** 2: nothing to promote
    check_operands("pow", ("input", 1, input), ("exponent", 2, exponent))
    a, b = promote(input, exponent, "pow")
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = checks.as_tensor("pow", "input", a)
    return apply_op(_pow, (a, b))


true_divide = divide = div
multiply = mul
subtract = sub
negative = neg


# ----------------------------------------------------------------- sign, abs
def zeros_like_grad(grad: Tensor) -> Tensor:
    """A zero gradient shaped like ``grad`` (constant: no history)."""
    return Tensor._make(np.zeros_like(grad._data))


@register_op("sign", differentiable=True)
def _sign(x):
    return np.sign(x)


@register_gradient("sign")
def sign_grad(orig, grad):
    """Forward: y = sign(x)
    Backward: x̄ = 0"""
    return [zeros_like_grad(grad)]


@register_jvp("sign")
def sign_jvp(orig, tangents):
    """Forward: y = sign(x)
    JVP: ẏ = 0"""
    return zeros_like_grad(orig.out)


def sign(input) -> Tensor:
    refuse_complex("sign", input)
    return apply_op(_sign, (input,))


@register_op("abs", saves=("x",))
def _abs(x):
    return np.abs(x)


@register_gradient("abs")
def abs_grad(orig, grad):
    """Forward: y = |x|
    Backward: x̄ = ȳ · sign(x)   (complex x: ȳ · x / |x|; 0 at x = 0, as PyTorch)"""
    (x,) = orig.args
    if x._data.dtype.kind != "c":
        return [grad * sign(x)]
    size = abs(x)
    safe = where(size == 0, 1.0, size)  # no 0/0 in the branch that `where` drops
    return [where(size == 0, 0.0, grad * x / safe)]


@register_jvp("abs")
def abs_jvp(orig, tangents):
    """Forward: y = |x|
    JVP: ẏ = ẋ · sign(x)   (complex x: Re(conj(sgn x) · ẋ); 0 at x = 0)"""
    (x,), (dx,) = orig.args, tangents
    if x._data.dtype.kind != "c":
        return dx * sign(x)
    return real(conj(sgn(x)) * dx)


def abs(input) -> Tensor:
    return apply_op(_abs, (input,))


@register_op("sgn", saves=("x", "out"))
def _sgn(x):
    if x.dtype.kind != "c":
        return np.sign(x)
    size = np.abs(x)
    return np.where(size == 0, 0, x / np.where(size == 0, 1, size)).astype(x.dtype, copy=False)


@register_gradient("sgn")
def sgn_grad(orig, grad):
    """Forward: y = sgn(z) = z / |z|   (0 at z = 0; sign(x) for real x)
    Backward: z̄ = (ȳ − y² · conj(ȳ)) / (2|z|)   (0 at z = 0; 0 for real x, as sign)"""
    (x,) = orig.args
    if x._data.dtype.kind != "c":
        return [zeros_like_grad(grad)]
    y = orig.out
    size = abs(x)
    safe = where(size == 0, 1.0, size)  # no 0/0 in the branch that `where` drops
    return [where(size == 0, 0.0, (grad - y * y * conj(grad)) / (2 * safe))]


@register_jvp("sgn")
def sgn_jvp(orig, tangents):
    """Forward: y = sgn(z) = z / |z|
    JVP: ẏ = (ż − y · Re(conj(y) · ż)) / |z|   (0 at z = 0; 0 for real x)"""
    (x,), (dx,) = orig.args, tangents
    if x._data.dtype.kind != "c":
        return zeros_like_grad(orig.out)
    y = orig.out
    size = abs(x)
    safe = where(size == 0, 1.0, size)
    return where(size == 0, 0.0, (dx - y * real(conj(y) * dx)) / safe)


def sgn(input) -> Tensor:
    """``z / |z|`` for complex z (0 at 0), ``sign`` for real tensors: ``torch.sgn``."""
    return apply_op(_sgn, (input,))


absolute = abs


# ----------------------------------------------------- maximum, minimum, where
@register_op("maximum", inputs=("a", "b"), saves=("a", "b"))
def _maximum(a, b):
    return np.maximum(a, b)


@register_gradient("maximum")
def maximum_grad(orig, grad):
    """Forward: y = max(a, b)
    Backward: ā = ȳ · ([a > b] + ½[a = b]), b̄ = ȳ · ([b > a] + ½[a = b])"""
    a, b = orig.args
    return [
        collapse_sum_like(grad * where(a > b, 1.0, where(a == b, 0.5, 0.0)), a),
        collapse_sum_like(grad * where(b > a, 1.0, where(a == b, 0.5, 0.0)), b),
    ]


@register_jvp("maximum")
def maximum_jvp(orig, tangents):
    """Forward: y = max(a, b)
    JVP: ẏ = ȧ · ([a > b] + ½[a = b]) + ḃ · ([b > a] + ½[a = b])"""
    (a, b), (da, db) = orig.args, tangents
    return da * where(a > b, 1.0, where(a == b, 0.5, 0.0)) + db * where(
        b > a, 1.0, where(a == b, 0.5, 0.0)
    )


@register_op("minimum", inputs=("a", "b"), saves=("a", "b"))
def _minimum(a, b):
    return np.minimum(a, b)


@register_gradient("minimum")
def minimum_grad(orig, grad):
    """Forward: y = min(a, b)
    Backward: ā = ȳ · ([a < b] + ½[a = b]), b̄ = ȳ · ([b < a] + ½[a = b])"""
    a, b = orig.args
    return [
        collapse_sum_like(grad * where(a < b, 1.0, where(a == b, 0.5, 0.0)), a),
        collapse_sum_like(grad * where(b < a, 1.0, where(a == b, 0.5, 0.0)), b),
    ]


@register_jvp("minimum")
def minimum_jvp(orig, tangents):
    """Forward: y = min(a, b)
    JVP: ẏ = ȧ · ([a < b] + ½[a = b]) + ḃ · ([b < a] + ½[a = b])"""
    (a, b), (da, db) = orig.args, tangents
    return da * where(a < b, 1.0, where(a == b, 0.5, 0.0)) + db * where(
        b < a, 1.0, where(a == b, 0.5, 0.0)
    )


@register_op("where", inputs=("condition", "a", "b"), saves=("condition",))
def _where(condition, a, b):
    out = np.where(condition, a, b)
    # Two Python numbers give the default float dtype, as torch.where(c, 1.0, 0.5) does.
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if out.dtype.kind == "f":
            out = out.astype(get_default_dtype())
    return out


@register_gradient("where")
def where_grad(orig, grad):
    """Forward: y = where(c, a, b)
    Backward: c̄ = none, ā = collapse_sum_like(where(c, ȳ, 0), a), b̄ = … where(c, 0, ȳ)"""
    condition, a, b = orig.args
    need_c, need_a, need_b = orig.needs_input_grad
    return [
        None,
        collapse_sum_like(where(condition, grad, 0.0), a) if need_a else None,
        collapse_sum_like(where(condition, 0.0, grad), b) if need_b else None,
    ]


@register_jvp("where")
def where_jvp(orig, tangents):
    """Forward: y = where(c, a, b)
    JVP: ẏ = where(c, ȧ, ḃ)   (ȧ or ḃ 0 for a number)"""
    condition = orig.args[0]
    _, da, db = tangents
    return where(condition, 0.0 if da is None else da, 0.0 if db is None else db)


def maximum(input, other) -> Tensor:
    refuse_complex("maximum", input, other)
    return _binary(_maximum, input, other)


def minimum(input, other) -> Tensor:
    refuse_complex("minimum", input, other)
    return _binary(_minimum, input, other)


def where(condition, input, other) -> Tensor:
    """Pick ``input`` where ``condition`` holds, else ``other`` (either may be a number)."""
    check_operands("where", ("input", 2, input), ("other", 3, other))
    condition = checks.as_tensor("where", "condition", condition)
    _check_condition(condition)
    x, y = promote(input, other, "where")
    return apply_op(_where, (condition, x, y))


def _check_condition(condition: Tensor) -> None:
    """A bool condition, as PyTorch wants (uint8 still passes, with its warning)."""
    dtype = condition._data.dtype
    if dtype == np.uint8:
        warnings.warn(
            "where received a uint8 condition tensor. This behavior is deprecated and will be "
            "removed in a future version of PyTorch. Use a boolean condition instead.",
            UserWarning,
            stacklevel=3,
        )
    elif dtype != np.bool_:
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor with dtype {dtype}"
        )


def clamp(input: Tensor, min=None, max=None) -> Tensor:
    """Limit values to [min, max]; the gradient passes where min ≤ x ≤ max (inclusive).

    As PyTorch, ``min(max(x, min), max)``: where min > max every element becomes max.
    """
    refuse_complex("clamp", input)
    min, max = (_bound(input, name, bound) for name, bound in (("min", min), ("max", max)))
    if min is None and max is None:
        raise RuntimeError("clamp: at least one of 'min' or 'max' must not be None")
    out = input
    if min is not None:
        out = where(out < min, min, out)
    if max is not None:
        out = where(out > max, max, out)
    return out


def _bound(input: Tensor, name: str, bound):
    """A bound of ``clamp``: None, a Tensor, or a number PyTorch can read as a double (a
    complex one only without an imaginary part, as its real part) that the result's dtype
    can hold (1e300 is beyond float32)."""
    if bound is None or isinstance(bound, Tensor):
        return bound
    if not isinstance(bound, (int, float, complex, np.number)):
        raise TypeError(
            f"clamp(): argument '{name}' must be a Tensor or a number, not "
            f"{type(bound).__name__} ({bound!r})"
        )
    if type(bound) is int and not checks.INT_LOW <= bound <= checks.INT_HIGH:
        raise checks.int_overflow("clamp", name, bound)
    bound = checks.value_fits("clamp", name, bound, np.float64)
    return checks.value_fits("clamp", name, bound, result_type(input, bound))


clip = clamp


def clamp_min(input: Tensor, min) -> Tensor:
    return clamp(input, min=min)


def clamp_max(input: Tensor, max) -> Tensor:
    return clamp(input, max=max)


# ----------------------------------------------------------------- comparisons
def _comparison(name: str, ufunc, result: str = "a bool tensor"):
    op = register_op(name, inputs=("a", "b"), differentiable=False)(lambda a, b: ufunc(a, b))

    def compare(input, other) -> Tensor:
        if name in ("lt", "le", "gt", "ge"):
            refuse_complex(name, input, other)
        return _binary(op, input, other)

    compare.__name__ = name
    compare.__doc__ = f"Elementwise ``{name}``: {result} that never requires grad."
    return compare


lt = _comparison("lt", np.less)
le = _comparison("le", np.less_equal)
gt = _comparison("gt", np.greater)
ge = _comparison("ge", np.greater_equal)
eq = _comparison("eq", np.equal)
ne = _comparison("ne", np.not_equal)
logical_and = _comparison("logical_and", np.logical_and)
logical_or = _comparison("logical_or", np.logical_or)
logical_xor = _comparison("logical_xor", np.logical_xor)
_logical_not = register_op("logical_not", differentiable=False)(np.logical_not)


def logical_not(input: Tensor) -> Tensor:
    return apply_op(_logical_not, (checks.tensor_arg("logical_not", "input", input),))


less, less_equal, greater, greater_equal, equal_elementwise, not_equal = lt, le, gt, ge, eq, ne


# -------------------------------------------------------------------- bitwise
# ``&``, ``|``, ``^`` and ``~`` of integer tensors work on the bits, as in PyTorch:
# 6 & 3 is 2, ~5 is -6 (Tensor's operators call these for integers, the logical ops for
# bools, where the two agree). No gradient: bits are not differentiable.
_BITS = "an integer (or bool) tensor"
bitwise_and = _comparison("bitwise_and", np.bitwise_and, _BITS)
bitwise_or = _comparison("bitwise_or", np.bitwise_or, _BITS)
bitwise_xor = _comparison("bitwise_xor", np.bitwise_xor, _BITS)
_bitwise_not = register_op("bitwise_not", differentiable=False)(np.invert)
# x << n and x >> n: 0 (or -1 for a negative x >> n) once n passes the width, as PyTorch
bitwise_left_shift = _comparison("bitwise_left_shift", np.left_shift, _BITS)
bitwise_right_shift = _comparison("bitwise_right_shift", np.right_shift, _BITS)


def bitwise_not(input: Tensor) -> Tensor:
    return apply_op(_bitwise_not, (checks.tensor_arg("bitwise_not", "input", input),))


# ------------------------------------------------------- closeness, equality
@register_op("isclose", inputs=("a", "b"), differentiable=False)
def _isclose(a, b, rtol, atol, equal_nan):
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def isclose(input: Tensor, other: Tensor, rtol=1e-05, atol=1e-08, equal_nan=False) -> Tensor:
    """Elementwise ``|input − other| ≤ atol + rtol · |other|``: a bool tensor."""
    checks.tensor_arg("isclose", "input", input)
    checks.tensor_arg("isclose", "other", other)
    if input.dtype != other.dtype:
        raise RuntimeError(
            f"isclose: {input.dtype} did not match {other.dtype} (both must have one dtype)"
        )
    a, b = promote(input, other, "isclose")
    rtol, atol = (
        checks.number_arg("isclose", "rtol", rtol),
        checks.number_arg("isclose", "atol", atol),
    )
    attrs = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan}
    return apply_op(_isclose, (a, b), attrs)


def allclose(input: Tensor, other: Tensor, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether every element of ``input`` is close to ``other``'s (see :func:`isclose`)."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both have the same shape and the same values."""
    checks.tensor_arg("equal", "input", input)
    checks.tensor_arg("equal", "other", other)
    return input.shape == other.shape and bool(eq(input, other)._data.all())
