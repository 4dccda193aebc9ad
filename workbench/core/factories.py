"""Tensor factories: ``tensor``, ``zeros``, ``ones``, ``arange``, ``eye``, ``from_numpy``...

Factories make leaves. Given ``requires_grad=True`` they require grad even inside
``no_grad`` (PyTorch's factory exception). Random ones (``rand``, ``randn``...) are in
``workbench/core/sampling.py``.
"""

from __future__ import annotations

import math

import numpy as np

from . import backend, checks, state
from .tensor import NOT_GIVEN, Tensor, default_complex_dtype, get_default_dtype, to_array


def _leaf(array, requires_grad: bool, name, device) -> Tensor:
    """A new tensor of ``array`` (an inference tensor when made in ``inference_mode``)."""
    t = Tensor._make(backend.to_device(array, backend.normalize_device(device)))
    t._is_inference = state.grad_mode.inference
    if name is not None:
        t.name = checks.name_arg("tensor", "name", name)
    if checks.flag_arg("factory", "requires_grad", requires_grad, none_is_false=True):
        t.requires_grad_(True)
    return t


def tensor(data, dtype=None, requires_grad: bool = False, name: str | None = None, device=None):
    """A new leaf tensor holding a copy of ``data``; Python floats become float32."""
    checks.flag_arg("tensor", "requires_grad", requires_grad)
    return Tensor(data, dtype=dtype, requires_grad=requires_grad, name=name, device=device)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` itself when it is a tensor (and no dtype is asked); else a new tensor."""
    if isinstance(data, Tensor) and dtype is None:
        return data
    return _leaf(to_array(data, dtype, device, "as_tensor"), False, None, device)


def _float_dtype(dtype, op: str):
    return get_default_dtype() if dtype is None else checks.dtype_arg(op, dtype)


def zeros(*size, dtype=None, requires_grad=False, device=None, name=None) -> Tensor:
    shape, dtype = checks.shape_arg("zeros", size), _float_dtype(dtype, "zeros")
    checks.storage_fits("zeros", shape, dtype)
    return _leaf(np.zeros(shape, dtype), requires_grad, name, device)


def ones(*size, dtype=None, requires_grad=False, device=None, name=None) -> Tensor:
    shape, dtype = checks.shape_arg("ones", size), _float_dtype(dtype, "ones")
    checks.storage_fits("ones", shape, dtype)
    return _leaf(np.ones(shape, dtype), requires_grad, name, device)


def empty(*size, dtype=None, requires_grad=False, device=None, name=None) -> Tensor:
    """Zeros: numpy's uninitialised memory would only make runs differ."""
    shape, dtype = checks.shape_arg("empty", size), _float_dtype(dtype, "empty")
    checks.storage_fits("empty", shape, dtype)
    return _leaf(np.zeros(shape, dtype), requires_grad, name, device)


def full(size, fill_value, dtype=None, requires_grad=False, device=None, name=None) -> Tensor:
    fill_value = checks.scalar_arg("full", "fill_value", fill_value)
    if dtype is None:
        if isinstance(fill_value, bool):
            dtype = np.dtype(bool)
        elif isinstance(fill_value, int):
            dtype = np.dtype("int64")
        elif isinstance(fill_value, complex):
            dtype = default_complex_dtype()
    shape, dtype = checks.size_sequence("full", size), _float_dtype(dtype, "full")
    checks.storage_fits("full", shape, dtype)
    fill_value = checks.value_fits("full", "fill_value", fill_value, dtype)
    array = np.full(shape, fill_value, dtype)
    return _leaf(array, requires_grad, name, device)


def zeros_like(input: Tensor, dtype=None, requires_grad=False, device=None) -> Tensor:
    xp = backend.xp(checks.tensor_arg("zeros_like", "input", input)._data)
    dtype = input.dtype if dtype is None else checks.dtype_arg("zeros_like", dtype)
    return _leaf(xp.zeros(input.shape, dtype), requires_grad, None, device or input.device)


def ones_like(input: Tensor, dtype=None, requires_grad=False, device=None) -> Tensor:
    xp = backend.xp(checks.tensor_arg("ones_like", "input", input)._data)
    dtype = input.dtype if dtype is None else checks.dtype_arg("ones_like", dtype)
    return _leaf(xp.ones(input.shape, dtype), requires_grad, None, device or input.device)


def full_like(input: Tensor, fill_value, dtype=None, requires_grad=False, device=None) -> Tensor:
    xp = backend.xp(checks.tensor_arg("full_like", "input", input)._data)
    fill_value = checks.scalar_arg("full_like", "fill_value", fill_value)
    dtype = input.dtype if dtype is None else checks.dtype_arg("full_like", dtype)
    fill_value = checks.value_fits("full_like", "fill_value", fill_value, dtype)
    array = xp.full(input.shape, fill_value, dtype)
    return _leaf(array, requires_grad, None, device or input.device)


def empty_like(input: Tensor, dtype=None, requires_grad=False, device=None) -> Tensor:
    return zeros_like(input, dtype=dtype, requires_grad=requires_grad, device=device)


# NOT_GIVEN: PyTorch refuses ``arange(5, None)`` and ``eye(3, None)``, so leaving an
# argument out is not the same as giving None.


def arange(start, end=NOT_GIVEN, step=1, dtype=None, requires_grad=False, device=None) -> Tensor:
    """``start``, ``start + step``, ... up to ``end`` (left out); ``arange(end)`` starts at 0.
    Integer bounds and step make an int64 tensor, any float the default float dtype."""
    if end is NOT_GIVEN:
        start, end = 0, start
    start, end, step = (
        _real_number("arange", name, value)
        for name, value in (("start", start), ("end", end), ("step", step))
    )
    _check_range("arange", start, end, step)
    if dtype is None:
        dtype = np.dtype("int64") if _all_integers("arange", start, end, step) else None
    array = np.arange(start, end, step, dtype=_float_dtype(dtype, "arange"))
    if math.isinf(step):  # PyTorch counts ceil((end - start) / step) values: none
        array = array[:0]
    return _leaf(array, requires_grad, None, device)


def _real_number(op: str, name: str, value):
    """A bound or step of a range: a real number, as a Python number (a 0-d tensor's
    value too). A complex one is PyTorch's RuntimeError: it cannot be read as a double."""
    value = checks.scalar_arg(op, name, value)
    if isinstance(value, (complex, np.complexfloating)):
        raise RuntimeError(
            f"{op}(): argument '{name}' is {value!r}: value cannot be converted to type double "
            "without overflow (a range needs real numbers)"
        )
    return value


def _all_integers(op: str, *values) -> bool:
    """Whether a range is of integers (bools count as 0 and 1); its values must then fit
    an int64 (PyTorch's RuntimeError for 2**63 to 2**64 - 1)."""
    if not all(isinstance(v, (int, np.integer)) for v in values):
        return False
    for value in values:
        if not checks.fits_c_long(value):
            raise RuntimeError(
                f"{op}(): {value} cannot be converted to type int64_t without overflow (an "
                "int64 holds -2**63 to 2**63 - 1)"
            )
    return True


def _check_range(op: str, start, end, step) -> None:
    """PyTorch's refusals for arange: a zero (or NaN) step, an infinite bound, a step that
    walks away."""
    if step == 0 or math.isnan(step):
        raise RuntimeError(f"{op}: step must be nonzero (start={start}, end={end}, step={step})")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"{op}: unsupported range: {start} -> {end}")
    if (end - start) * step < 0:
        raise RuntimeError(
            f"{op}: upper bound and lower bound inconsistent with step sign (start={start}, "
            f"end={end}, step={step})"
        )


def linspace(start, end, steps: int, dtype=None, requires_grad=False, device=None) -> Tensor:
    """``steps`` numbers from ``start`` to ``end``, evenly apart; a complex bound makes a
    complex tensor (the default float's complex)."""
    if checks.int_arg("linspace", "steps", steps) < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, but got steps={steps}")
    start = checks.scalar_arg("linspace", "start", start)
    end = checks.scalar_arg("linspace", "end", end)
    complex_bound = any(isinstance(v, (complex, np.complexfloating)) for v in (start, end))
    if dtype is None and complex_bound:
        dtype = default_complex_dtype()
    dtype = _float_dtype(dtype, "linspace")
    if complex_bound and dtype.kind != "c":
        raise RuntimeError(
            f"linspace(): start={start!r}, end={end!r}: a complex bound can't be safely cast to "
            f"the dtype asked for, {dtype}"
        )
    if dtype in (np.float32, np.float64) and steps > 1 and _real(start) and _real(end):
        array = _from_both_ends(start, end, steps, dtype)
    else:
        array = np.linspace(start, end, steps, dtype=dtype)
    return _leaf(array, requires_grad, None, device)


def _real(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _from_both_ends(start, end, steps: int, dtype) -> np.ndarray:
    """PyTorch's linspace, to the bit: the first half counts up from ``start``, the second
    down from ``end`` (so both ends are exact), each value one fused multiply-add
    (``start + step * i``, rounded once) in the dtype's own precision.

    numpy's ``linspace`` counts from ``start`` only and rounds twice, so about a third of
    its values are one unit in the last place away from PyTorch's."""
    work = np.dtype(dtype).type
    first, last = work(start), work(end)
    step = (last - first) / work(steps - 1)
    count = np.arange(steps, dtype=np.float64)
    half = steps // 2
    up = _fused_multiply_add(np.float64(step), count[:half], np.float64(first))
    down = _fused_multiply_add(-np.float64(step), steps - 1 - count[half:], np.float64(last))
    return np.concatenate([up, down]).astype(dtype)


def _fused_multiply_add(a, b: np.ndarray, c) -> np.ndarray:
    """``a * b + c`` with one rounding, in float64 arithmetic (numpy has no fma).

    The product's rounding error is recovered exactly (Dekker's split into 26-bit
    halves) and the sum's (Knuth's two-sum), and both are added back before the one
    rounding. For float32 inputs this is exact; float64 rounds as an fma does except in
    cases too rare to meet (a tie in the last step)."""
    product = a * b
    a_high, a_low = _halves(a)
    b_high, b_low = _halves(b)
    product_error = ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low
    total = product + c
    b_virtual = total - product
    sum_error = (product - (total - b_virtual)) + (c - b_virtual)
    return total + (sum_error + product_error)


def _halves(x):
    """``x`` as high + low, each with at most 26 significant bits (their products are exact)."""
    scaled = 134217729.0 * x  # 2**27 + 1
    high = scaled - (scaled - x)
    return high, x - high


def eye(n: int, m: int = NOT_GIVEN, dtype=None, requires_grad=False, device=None) -> Tensor:
    """The ``n`` × ``m`` identity (``m`` left out: square)."""
    m = n if m is NOT_GIVEN else m
    for name, value in (("n", n), ("m", m)):
        if checks.int_arg("eye", name, value) < 0:
            raise RuntimeError(f"eye: {name} must be greater or equal to 0, got {name}={value}")
    return _leaf(np.eye(n, m, dtype=_float_dtype(dtype, "eye")), requires_grad, None, device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor that shares ``ndarray``'s memory (a change to one shows in the other)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {checks.type_name(ndarray)})")
    return Tensor._make(ndarray)


def numel(input: Tensor) -> int:
    return checks.tensor_arg("numel", "input", input).numel()


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    return checks.tensor_arg("is_floating_point", "input", input).is_floating_point()
