"""``//``, ``%``, ``remainder``, ``fmod`` and ``floor_divide`` against PyTorch (issue 36):
values with each sign convention, dtypes, division by zero, gradients, refusals."""

from __future__ import annotations

import math
import operator

import pytest
import torch

import workbench as wb
from workbench.func import jvp

DIVIDENDS = [5.5, -5.5, 3.0, -3.0, 0.0, 7.0]
DIVISORS = [2.0, 2.0, -2.0, -2.0, 3.0, 0.5]


def _outcome(function, *args):
    """The result's dtype and numbers (nan written out, so that it equals itself, and a
    zero's sign, which == does not see: -5 % 2.5 is -0.0 in PyTorch), or the exception's
    type."""
    try:
        result = function(*args)
    except Exception as error:  # noqa: BLE001  (compared with PyTorch's)
        return type(error).__name__
    return str(result.dtype).split(".")[-1], [_written(v) for v in result.tolist()]


def _written(value):
    if value != value:
        return "nan"
    return "-0.0" if value == 0 and math.copysign(1, value) < 0 else value


def _both(function, *values, dtypes=("float32", "float32")):
    """``function`` on the same values as workbench tensors and as torch tensors (a Python
    number stays a number)."""

    def make(lib):
        return [
            lib.tensor(v, dtype=getattr(lib, d)) if isinstance(v, list) else v
            for v, d in zip(values, dtypes)
        ]

    return _outcome(function(wb), *make(wb)), _outcome(function(torch), *make(torch))


OPERATIONS = {
    "remainder": lambda lib: lib.remainder,
    "fmod": lambda lib: lib.fmod,
    "floor_divide": lambda lib: lib.floor_divide,
    "%": lambda lib: operator.mod,
    "//": lambda lib: operator.floordiv,
    "method remainder": lambda lib: lambda a, b: a.remainder(b),
    "method fmod": lambda lib: lambda a, b: a.fmod(b),
    "method floor_divide": lambda lib: lambda a, b: a.floor_divide(b),
}
DTYPE_PAIRS = [
    ("float32", "float32"),
    ("float64", "float32"),
    ("int64", "int64"),
    ("int8", "int64"),
    ("int32", "float32"),
    ("bool", "bool"),
    ("complex64", "float32"),
]


@pytest.mark.parametrize("dtypes", DTYPE_PAIRS, ids="-".join)
@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_values_and_dtypes_as_pytorch(name, dtypes):
    """remainder takes the divisor's sign, fmod the dividend's; integers stay integers;
    bool and complex are PyTorch's NotImplementedError."""
    ours, theirs = _both(OPERATIONS[name], DIVIDENDS, DIVISORS, dtypes=dtypes)
    assert ours == theirs


@pytest.mark.parametrize("name", sorted(OPERATIONS))
@pytest.mark.parametrize("divisor", [2, -2, 2.5, -2.5, 0, 0.0, [0, 0, 0, 0, 0, 0]], ids=str)
@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_numbers_and_division_by_zero_as_pytorch(name, divisor, dtype):
    """A Python number as divisor; by zero: integers are PyTorch's
    RuntimeError("ZeroDivisionError"), floats give inf and nan."""
    values = [5, -5, 3, -3, 0, 7]
    ours, theirs = _both(OPERATIONS[name], values, divisor, dtypes=(dtype, dtype))
    assert ours == theirs


@pytest.mark.parametrize("name", ["%", "//"])
def test_a_number_divided_by_a_tensor_as_pytorch(name):
    ours, theirs = _both(lambda lib: lambda b: OPERATIONS[name](lib)(7, b), DIVISORS)
    assert ours == theirs


def test_zero_division_message_is_pytorch_s():
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        wb.tensor([5]) % 0


@pytest.mark.parametrize("op", ["remainder", "fmod"])
@pytest.mark.parametrize("divisor_kind", ["tensor", "number"])
def test_gradients_and_node_names_as_pytorch(op, divisor_kind):
    """ā = ȳ, b̄ = −ȳ · floor(a / b) (remainder) or −ȳ · trunc(a / b) (fmod)."""

    def run(lib):
        a = lib.tensor(DIVIDENDS, dtype=lib.float64, requires_grad=True)
        b = lib.tensor(DIVISORS, dtype=lib.float64, requires_grad=True)
        out = getattr(lib, op)(a, b if divisor_kind == "tensor" else -1.5)
        weights = lib.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=lib.float64)
        inputs = (a, b) if divisor_kind == "tensor" else (a,)
        grads = lib.autograd.grad((out * weights).sum(), inputs)
        return out.grad_fn.name(), [g.tolist() for g in grads]

    assert run(wb) == run(torch)


@pytest.mark.parametrize("op", ["remainder", "fmod"])
def test_gradients_agree_with_finite_differences(op):
    """Away from the jumps (quotients far from integers)."""
    a = wb.tensor([5.3, -5.3, 2.7, -1.4, 7.9, -0.6], dtype=wb.float64, requires_grad=True)
    b = wb.tensor([2.1, 2.1, -1.7, 1.3, -2.2, 0.9], dtype=wb.float64, requires_grad=True)
    assert wb.autograd.gradcheck(getattr(wb, op), (a, b))


@pytest.mark.parametrize("op", ["remainder", "fmod"])
def test_forward_mode_as_pytorch(op):
    """ẏ = ȧ − ḃ · floor(a / b) (remainder) or − ḃ · trunc(a / b) (fmod)."""

    def run(lib, transform):
        primals = (lib.tensor(DIVIDENDS), lib.tensor(DIVISORS))
        tangents = (lib.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), lib.ones(6))
        return [t.tolist() for t in transform(getattr(lib, op), primals, tangents)]

    assert run(wb, jvp) == run(torch, torch.func.jvp)


NO_DERIVATIVE = {
    "floor_divide backward": lambda lib, x: lib.autograd.grad((x // 2).sum(), x),
    "number % x backward": lambda lib, x: lib.autograd.grad((5.0 % x).sum(), x),
    "fmod(number, x)": lambda lib, x: lib.autograd.grad(lib.fmod(5.0, x).sum(), x),
    "floor_divide jvp": lambda lib, x: (lib if lib is torch else wb).func.jvp(
        lambda t: t // 2, (x.detach(),), (x.detach(),)
    ),
}


@pytest.mark.parametrize("case", sorted(NO_DERIVATIVE))
def test_no_derivative_where_pytorch_has_none(case):
    """floor_divide's result requires grad (its node is NotImplemented) but backward and
    forward AD through it raise, as PyTorch's; so does a remainder by a tensor divisor
    of a number."""

    def run(lib):
        x = lib.tensor(DIVISORS, requires_grad=True)
        try:
            NO_DERIVATIVE[case](lib, x)
        except TypeError:  # fmod has no number-first form (the messages differ)
            return "TypeError"
        except Exception as error:  # noqa: BLE001  (compared with PyTorch's)
            return type(error).__name__, str(error)
        return "no error"

    assert run(wb) == run(torch)


@pytest.mark.parametrize("name", ["ifloordiv", "imod"])
def test_in_place_operators_change_the_tensor_as_pytorch(name):
    def run(lib):
        x = lib.tensor([7, -7, 9])
        alias, version = x, x._version
        getattr(operator, name)(x, lib.tensor([2, 2, -4]))
        leaf = lib.ones(2, requires_grad=True)
        return (
            x is alias,
            x._version - version,
            x.tolist(),
            _outcome(getattr(operator, name), leaf, 2),
        )

    assert run(wb) == run(torch)


@pytest.mark.parametrize("op", ["remainder_", "fmod_", "floor_divide_"])
def test_in_place_methods_as_pytorch(op):
    def run(lib):
        x = lib.tensor([7.5, -7.5, 9.0])
        result = getattr(x, op)(lib.tensor([2.0, 2.0, -4.0]))
        return result is x, x.tolist(), _outcome(getattr(lib.tensor([1, 2]), op), 0.5)

    assert run(wb) == run(torch)


@pytest.mark.parametrize("bad", [None, "a", "wrong shape"])
def test_bad_operands_refused_as_pytorch(bad):
    def run(lib):
        try:
            lib.remainder(lib.ones(2), lib.ones(3) if bad == "wrong shape" else bad)
        except Exception as error:  # noqa: BLE001  (compared with PyTorch's)
            return next(c.__name__ for c in type(error).__mro__ if c.__module__ == "builtins")
        return "no error"

    assert run(wb) == run(torch)
