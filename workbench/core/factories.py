"""Tensor factories: ``tensor``, ``zeros``, ``ones``, ``arange``, ``eye``, ``from_numpy``...

Factories make leaves. Given ``requires_grad=True`` they require grad even inside
``no_grad`` (PyTorch's factory exception). Random ones (``rand``, ``randn``...) are in
``workbench/core/sampling.py``.
"""

from __future__ import annotations

import math

import numpy as np

from . import backend, checks, dtypes, state
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
    fill_value = checks.value_fits("full", "fill_value", fill_value, dtype, math.prod(shape))
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
    fill_value = checks.value_fits("full_like", "fill_value", fill_value, dtype, input.numel())
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
    complex tensor (the default float's complex). Each value is PyTorch's, to the bit, in
    every dtype: see :func:`_linspace_values`."""
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
    if dtype == np.bool_:
        raise NotImplementedError(
            "\"linspace_cpu\" not implemented for 'Bool': a bool dtype has no values in between"
        )
    if steps > 0:  # PyTorch converts only the bounds it uses: none for 0 steps, start for 1
        start = checks.value_fits("linspace", "start", start, dtype, steps)  # steps 1: a fill
    if steps > 1:
        end = checks.value_fits("linspace", "end", end, dtype)
    with np.errstate(invalid="ignore", over="ignore"):  # an infinite bound: NaNs, as PyTorch
        array = _linspace_values(start, end, steps, dtype)
    return _leaf(array, requires_grad, None, device)


def _linspace_values(start, end, steps: int, dtype) -> np.ndarray:
    """PyTorch's CPU linspace, to the bit: the first half counts up from ``start``, the
    second down from ``end`` (so both ends are exact), in the arithmetic PyTorch's kernel
    uses for ``dtype``:

    - float32 and float64: ``start + step * i`` as one fused multiply-add;
    - complex: the same, for the real and the imaginary part apart;
    - integers: the bounds first converted to the dtype (2.7 is 2), the steps in float64,
      each value truncated toward zero;
    - float16 and bfloat16: every operation rounded to the dtype (:func:`_small_float_steps`).

    numpy's ``linspace`` counts from ``start`` only, rounds twice and floors integers, so
    about a third of its values are one unit in the last place (or one integer) away."""
    if steps <= 1:
        return np.full(steps, start if steps else 0, dtype)  # PyTorch fills one with start
    if dtype in dtypes.SMALL_FLOATS:
        return _small_float_steps(start, end, steps, dtype)
    kind = dtypes.kind(dtype)
    if kind == "c":
        part = np.finfo(dtype).dtype
        real = _from_both_ends(complex(start).real, complex(end).real, steps, part)
        imaginary = _from_both_ends(complex(start).imag, complex(end).imag, steps, part)
        return (real + 1j * imaginary).astype(dtype)
    if kind in "iu":
        first, last = (np.array(bound).astype(dtype) for bound in (start, end))
        return _from_both_ends(float(first), float(last), steps, np.float64).astype(dtype)
    return _from_both_ends(start, end, steps, dtype)


def _from_both_ends(start, end, steps: int, dtype) -> np.ndarray:
    """``start + step * i`` up to the middle, ``end - step * (steps - 1 - i)`` after it,
    each value one fused multiply-add (rounded once) in the dtype's own precision."""
    work = np.dtype(dtype).type
    first, last = work(start), work(end)
    step = (last - first) / work(steps - 1)
    count = np.arange(steps, dtype=np.float64)
    half = steps // 2
    up = _fused_multiply_add(np.float64(step), count[:half], np.float64(first))
    down = _fused_multiply_add(-np.float64(step), steps - 1 - count[half:], np.float64(last))
    return np.concatenate([up, down]).astype(dtype)


def _small_float_steps(start, end, steps: int, dtype) -> np.ndarray:
    """The same two halves in float16 or bfloat16 arithmetic, as PyTorch's kernel does
    it: each operation computed in float32 and rounded to the dtype before the next (the
    step, the count ``i``, the product and the sum)."""

    def rounded(values):
        return np.asarray(values, np.float32).astype(dtype).astype(np.float32)

    first, last = rounded(start), rounded(end)
    step = rounded(rounded(last - first) / rounded(steps - 1))
    count = np.arange(steps)
    half = steps // 2
    up = first + rounded(step * rounded(count[:half]))
    down = last - rounded(step * rounded(steps - 1 - count[half:]))
    return np.concatenate([up, down]).astype(dtype)


def _fused_multiply_add(a, b: np.ndarray, c) -> np.ndarray:
    """``a * b + c`` with one rounding, in float64 arithmetic (numpy has no fma).

    Boldo and Melquiond's emulation: the product is split exactly into ``product +
    product_error`` (Dekker's halves), ``c + product`` exactly into ``total + total_error``
    (Knuth's two-sum), and the two small errors are added rounded to odd, which keeps in
    the last bit whether anything was dropped; so the one rounding to nearest at the end
    is the fma's, even when ``c`` is far smaller than the product."""
    product = a * b
    a_high, a_low = _halves(a)
    b_high, b_low = _halves(b)
    product_error = ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low
    total, total_error = _two_sum(product, c)
    exact = total + _sum_rounded_to_odd(total_error, product_error)
    return np.where(np.isfinite(total), exact, total)  # an infinity has no rounding error


def _two_sum(x, y):
    """``x + y`` rounded, and the rounding error: their sum is exactly ``x + y``."""
    total = x + y
    y_virtual = total - x
    return total, (x - (total - y_virtual)) + (y - y_virtual)


def _sum_rounded_to_odd(x, y) -> np.ndarray:
    """``x + y`` rounded to the neighbour whose last bit is 1 when it is not exact."""
    total, error = _two_sum(np.asarray(x, np.float64), np.asarray(y, np.float64))
    even = (np.asarray(total).view(np.int64) & 1) == 0
    toward_error = np.nextafter(total, np.copysign(np.inf, error))
    return np.where((error != 0) & even, toward_error, total)


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
