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

import numpy as np

from ..autograd.dispatch import apply_op
from ..tensor import Tensor, get_default_dtype
from .broadcasting import collapse_sum_like
from .complex_numbers import conj, real, refuse_complex
from .registry import register_gradient, register_op


# ----------------------------------------------------------- dtype promotion
def _as_operand(x):
    """Python numbers stay numbers (they get no gradient); arrays become constant tensors."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (int, float, bool, complex)):
        return x
    return Tensor(x)


def _cast_constant(t: Tensor, dtype) -> Tensor:
    """Cast a tensor that never requires grad (ints, bools) to a float dtype."""
    return Tensor._make(t._data.astype(dtype))


def promote(a, b):
    """PyTorch's promotion: a float operand wins over an integer one, whatever its width."""
    a, b = _as_operand(a), _as_operand(b)
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if ta and tb:
        da, db = a._data.dtype, b._data.dtype
        if da != db:
            if da.kind in "fc" and db.kind not in "fc":
                b = _cast_constant(b, da)
            elif db.kind in "fc" and da.kind not in "fc":
                a = _cast_constant(a, db)
        return a, b
    if ta and isinstance(b, float) and a._data.dtype.kind in "biu":
        a = _cast_constant(a, get_default_dtype())
    elif tb and isinstance(a, float) and b._data.dtype.kind in "biu":
        b = _cast_constant(b, get_default_dtype())
    return a, b


def _binary(op, a, b) -> Tensor:
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        da, db = a._data.dtype, b._data.dtype
        if da is db or da == db:
            return apply_op(op, (a, b))  # the common case: nothing to promote
    a, b = promote(a, b)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = Tensor(a)
    return apply_op(op, (a, b))


def _float_operands(a, b):
    """Division and powers of integers give floats (default dtype), as in PyTorch."""
    a, b = promote(a, b)
    for_a = isinstance(a, Tensor) and a._data.dtype.kind in "biu"
    for_b = isinstance(b, Tensor) and b._data.dtype.kind in "biu"
    if for_a and (for_b or not isinstance(b, Tensor)):
        a = _cast_constant(a, get_default_dtype())
    if for_b and (for_a or not isinstance(a, Tensor)):
        b = _cast_constant(b, get_default_dtype())
    return a, b


def _float_input(x: Tensor) -> Tensor:
    if not isinstance(x, Tensor):
        x = Tensor(x)
    if x._data.dtype.kind not in "fc":
        x = _cast_constant(x, get_default_dtype())
    return x


# --------------------------------------------------------------- arithmetic
# The plainest kernels are numpy's ufuncs themselves: z = np.add(x, y) is x + y, and a
# Python function around it would only add a call to every add.
_add = register_op("add", inputs=("x", "y"))(np.add)


@register_gradient("add")
def add_grad(orig, grad):
    """Forward: z = x + y
    Backward: x̄ = collapse_sum_like(z̄, x), ȳ = collapse_sum_like(z̄, y)"""
    x, y = orig.args
    return [collapse_sum_like(grad, x), collapse_sum_like(grad, y)]


_sub = register_op("sub", inputs=("x", "y"))(np.subtract)


@register_gradient("sub")
def sub_grad(orig, grad):
    """Forward: z = x − y
    Backward: x̄ = collapse_sum_like(z̄, x), ȳ = collapse_sum_like(−z̄, y)"""
    x, y = orig.args
    need_x, need_y = orig.needs_input_grad
    return [
        collapse_sum_like(grad, x) if need_x else None,
        collapse_sum_like(-grad, y) if need_y else None,
    ]


_mul = register_op("mul", inputs=("x", "y"), saves={"x": "y", "y": "x"})(np.multiply)


@register_gradient("mul")
def mul_grad(orig, grad):
    """Forward: z = x · y
    Backward: x̄ = collapse_sum_like(z̄ · y, x), ȳ = collapse_sum_like(z̄ · x, y)
    Complex x: x̄ = collapse_sum_like(z̄ · conj(y), x), ȳ = collapse_sum_like(z̄ · conj(x), y)"""
    x, y = orig.args
    need_x, need_y = orig.needs_input_grad
    return [
        collapse_sum_like(grad * _conj(y), x) if need_x else None,
        collapse_sum_like(grad * _conj(x), y) if need_y else None,
    ]


def _conj(x):
    """``conj`` for a tensor or a Python number (whose conjugate is itself unless complex)."""
    return conj(x) if isinstance(x, Tensor) else x.conjugate()


@register_op("div", inputs=("x", "y"), saves={"y": ("x", "y"), "out": "y"})
def _div(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return x / y


@register_gradient("div")
def div_grad(orig, grad):
    """Forward: z = x / y
    Backward: x̄ = collapse_sum_like(z̄ / y, x), ȳ = collapse_sum_like(−z̄ · z / y, y)
    Complex x: x̄ = collapse_sum_like(z̄ / conj(y), x), ȳ = collapse_sum_like(−z̄ · conj(z / y), y)"""
    x, y = orig.args
    need_x, need_y = orig.needs_input_grad
    y_conj = _conj(y)
    return [
        collapse_sum_like(grad / y_conj, x) if need_x else None,
        collapse_sum_like(-grad * conj(orig.out) / y_conj, y) if need_y else None,
    ]


_neg = register_op("neg")(np.negative)


@register_gradient("neg")
def neg_grad(orig, grad):
    """Forward: y = −x
    Backward: x̄ = −ȳ"""
    return [-grad]


@register_op("pow", inputs=("x", "p"), saves={"x": ("x", "p"), "p": ("x", "p"), "out": "p"})
def _pow(x, p):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return x**p


@register_gradient("pow")
def pow_grad(orig, grad):
    """Forward: z = x ** p
    Backward: x̄ = z̄ · p · x ** (p − 1) (0 where p = 0), p̄ = z̄ · z · ln x (0 where x = 0, p ≥ 0)
    Complex x: x̄ = z̄ · conj(p · x ** (p − 1)), p̄ = z̄ · conj(z · ln x)   (0 where x = 0, Re p ≥ 0)"""
    x, p = orig.args
    need_x, need_p = orig.needs_input_grad
    return [
        _pow_base_grad(grad, x, p) if need_x else None,
        _pow_exponent_grad(grad, x, p, orig.out) if need_p else None,
    ]


def _pow_base_grad(grad, x, p):
    if not isinstance(p, Tensor):
        return zeros_like_grad(grad) if p == 0 else grad * _conj(p) * conj(x ** (p - 1))
    return collapse_sum_like(where(p == 0, 0.0, grad * conj(p) * conj(x ** (p - 1))), x)


def _pow_exponent_grad(grad, x, p, z):
    """z̄ · conj(z · ln x), except where x = 0 and Re p ≥ 0: there z is flat in p (PyTorch's
    choice).

    Those points take ln 1 = 0 instead of ln 0, so no 0 · ∞ is ever computed.
    """
    from .unary import log  # unary.py imports this module: log is imported when needed

    if isinstance(x, Tensor):
        flat = (x == 0) & (real(p) >= 0)
        return collapse_sum_like(grad * conj(z) * conj(log(where(flat, 1.0, x))), p)
    # A Python-number base: ln x is a constant.
    if x == 0:
        return grad * conj(z) * where(real(p) >= 0, 0.0, -math.inf)
    with np.errstate(invalid="ignore"):
        ln_x = np.log(x)
    return grad * conj(z) * (ln_x.conjugate() if isinstance(x, complex) else float(ln_x))


def _times_alpha(other, alpha, input):
    """``alpha · other`` for add and sub. A number times alpha becomes a new 0-d tensor,
    which is made on the CPU: it moves to ``input``'s device, where the sum happens."""
    scaled = mul(other, alpha)
    if isinstance(input, Tensor) and not isinstance(other, Tensor):
        scaled = scaled.to(input.device)
    return scaled


def add(input, other, *, alpha=1) -> Tensor:
    """``input + alpha · other``."""
    if alpha != 1:
        other = _times_alpha(other, alpha, input)
    return _binary(_add, input, other)


def sub(input, other, *, alpha=1) -> Tensor:
    """``input − alpha · other``."""
    if alpha != 1:
        other = _times_alpha(other, alpha, input)
    return _binary(_sub, input, other)


def mul(input, other) -> Tensor:
    return _binary(_mul, input, other)


def div(input, other) -> Tensor:
    """True division; integers divide to floats, as in PyTorch."""
    a, b = _float_operands(input, other)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = Tensor(a)
    return apply_op(_div, (a, b))


def neg(input: Tensor) -> Tensor:
    return apply_op(_neg, (input,))


def pow(input, exponent) -> Tensor:
    a, b = _float_operands(input, exponent) if _is_float(exponent) else promote(input, exponent)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = Tensor(a)
    return apply_op(_pow, (a, b))


def _is_float(x) -> bool:
    if isinstance(x, Tensor):
        return x._data.dtype.kind in "fc"
    return isinstance(x, float)


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


def abs(input) -> Tensor:
    return apply_op(_abs, (input,))


absolute = abs


# ----------------------------------------------------- maximum, minimum, where
@register_op("maximum", inputs=("x", "y"), saves=("x", "y"))
def _maximum(x, y):
    return np.maximum(x, y)


@register_gradient("maximum")
def maximum_grad(orig, grad):
    """Forward: z = max(x, y)
    Backward: x̄ = z̄ · ([x > y] + ½[x = y]), ȳ = z̄ · ([y > x] + ½[x = y])"""
    x, y = orig.args
    return [
        collapse_sum_like(grad * where(x > y, 1.0, where(x == y, 0.5, 0.0)), x),
        collapse_sum_like(grad * where(y > x, 1.0, where(x == y, 0.5, 0.0)), y),
    ]


@register_op("minimum", inputs=("x", "y"), saves=("x", "y"))
def _minimum(x, y):
    return np.minimum(x, y)


@register_gradient("minimum")
def minimum_grad(orig, grad):
    """Forward: z = min(x, y)
    Backward: x̄ = z̄ · ([x < y] + ½[x = y]), ȳ = z̄ · ([y < x] + ½[x = y])"""
    x, y = orig.args
    return [
        collapse_sum_like(grad * where(x < y, 1.0, where(x == y, 0.5, 0.0)), x),
        collapse_sum_like(grad * where(y < x, 1.0, where(x == y, 0.5, 0.0)), y),
    ]


@register_op("where", inputs=("condition", "x", "y"), saves=("condition",))
def _where(condition, x, y):
    out = np.where(condition, x, y)
    # Two Python numbers give the default float dtype, as torch.where(c, 1.0, 0.5) does.
    if isinstance(x, (int, float)) and isinstance(y, (int, float)):
        if out.dtype.kind == "f":
            out = out.astype(get_default_dtype())
    return out


@register_gradient("where")
def where_grad(orig, grad):
    """Forward: z = where(c, x, y)
    Backward: c̄ = none, x̄ = collapse_sum_like(where(c, z̄, 0), x), ȳ = … where(c, 0, z̄)"""
    condition, x, y = orig.args
    need_c, need_x, need_y = orig.needs_input_grad
    return [
        None,
        collapse_sum_like(where(condition, grad, 0.0), x) if need_x else None,
        collapse_sum_like(where(condition, 0.0, grad), y) if need_y else None,
    ]


def maximum(input, other) -> Tensor:
    refuse_complex("maximum", input, other)
    return _binary(_maximum, input, other)


def minimum(input, other) -> Tensor:
    refuse_complex("minimum", input, other)
    return _binary(_minimum, input, other)


def where(condition, input, other) -> Tensor:
    """Pick ``input`` where ``condition`` holds, else ``other`` (either may be a number)."""
    condition = condition if isinstance(condition, Tensor) else Tensor(condition)
    x, y = promote(input, other)
    return apply_op(_where, (condition, x, y))


def clamp(input: Tensor, min=None, max=None) -> Tensor:
    """Limit values to [min, max]; the gradient passes where min ≤ x ≤ max (inclusive)."""
    refuse_complex("clamp", input)
    if min is None and max is None:
        raise RuntimeError("clamp: at least one of 'min' or 'max' must not be None")
    out = input
    if min is not None:
        out = where(input < min, min, out)
    if max is not None:
        out = where(input > max, max, out)
    return out


clip = clamp


def clamp_min(input: Tensor, min) -> Tensor:
    return clamp(input, min=min)


def clamp_max(input: Tensor, max) -> Tensor:
    return clamp(input, max=max)


# ----------------------------------------------------------------- comparisons
def _comparison(name: str, ufunc):
    op = register_op(name, inputs=("x", "y"), differentiable=False)(lambda x, y: ufunc(x, y))

    def compare(input, other) -> Tensor:
        if name in ("lt", "le", "gt", "ge"):
            refuse_complex(name, input, other)
        return _binary(op, input, other)

    compare.__name__ = name
    compare.__doc__ = f"Elementwise ``{name}``: a bool tensor that never requires grad."
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
    return apply_op(_logical_not, (input,))


less, less_equal, greater, greater_equal, equal_elementwise, not_equal = lt, le, gt, ge, eq, ne
