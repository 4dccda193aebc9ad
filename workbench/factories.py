"""Tensor factories: ``tensor``, ``zeros``, ``ones``, ``arange``, ``randn``... and the seed.

Factories make leaves. Given ``requires_grad=True`` they require grad even inside
``no_grad`` (PyTorch's factory exception).
"""

from __future__ import annotations

import math

import numpy as np

from . import backend, checks
from .tensor import Tensor, get_default_dtype

_generator = [np.random.default_rng()]


def manual_seed(seed: int) -> np.random.Generator:
    """Seed the generator behind rand, randn, dropout and friends."""
    _generator[0] = np.random.default_rng(seed)
    return _generator[0]


def generator() -> np.random.Generator:
    return _generator[0]


def get_rng_state() -> dict:
    return _generator[0].bit_generator.state


def set_rng_state(state: dict) -> None:
    _generator[0].bit_generator.state = state


def _leaf(array, requires_grad: bool, name, device) -> Tensor:
    t = Tensor._make(backend.to_device(array, backend.normalize_device(device)))
    if name is not None:
        t.name = checks.name_arg("tensor", "name", name)
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data, dtype=None, requires_grad: bool = False, name: str | None = None, device=None):
    """A new leaf tensor holding a copy of ``data``; Python floats become float32."""
    return Tensor(data, dtype=dtype, requires_grad=requires_grad, name=name, device=device)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    if isinstance(data, Tensor) and dtype is None:
        return data
    return Tensor(data, dtype=dtype, device=device)


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
    if dtype is None:
        if isinstance(fill_value, bool):
            dtype = np.dtype(bool)
        elif isinstance(fill_value, int):
            dtype = np.dtype("int64")
    shape, dtype = checks.shape_arg("full", (size,)), _float_dtype(dtype, "full")
    checks.storage_fits("full", shape, dtype)
    array = np.full(shape, fill_value, dtype)
    return _leaf(array, requires_grad, name, device)


def zeros_like(input: Tensor, dtype=None, requires_grad=False, device=None) -> Tensor:
    xp = backend.xp(checks.tensor_arg("zeros_like", "input", input)._data)
    return _leaf(
        xp.zeros(input.shape, dtype or input.dtype), requires_grad, None, device or input.device
    )


def ones_like(input: Tensor, dtype=None, requires_grad=False, device=None) -> Tensor:
    xp = backend.xp(checks.tensor_arg("ones_like", "input", input)._data)
    return _leaf(
        xp.ones(input.shape, dtype or input.dtype), requires_grad, None, device or input.device
    )


def full_like(input: Tensor, fill_value, dtype=None, requires_grad=False, device=None) -> Tensor:
    xp = backend.xp(checks.tensor_arg("full_like", "input", input)._data)
    return _leaf(
        xp.full(input.shape, fill_value, dtype or input.dtype),
        requires_grad,
        None,
        device or input.device,
    )


def empty_like(input: Tensor, dtype=None, requires_grad=False, device=None) -> Tensor:
    return zeros_like(input, dtype=dtype, requires_grad=requires_grad, device=device)


def arange(start, end=None, step=1, dtype=None, requires_grad=False, device=None) -> Tensor:
    if end is None:
        start, end = 0, start
    _check_range("arange", start, end, step)
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = np.dtype("int64") if is_int else get_default_dtype()
    array = np.arange(start, end, step, dtype=checks.dtype_arg("arange", dtype))
    return _leaf(array, requires_grad, None, device)


def _check_range(op: str, start, end, step) -> None:
    """PyTorch's refusals for arange: a zero step, an infinite bound, a step that walks away."""
    if step == 0:
        raise RuntimeError(f"{op}: step must be nonzero (start={start}, end={end}, step=0)")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"{op}: unsupported range: {start} -> {end}")
    if (end - start) * step < 0:
        raise RuntimeError(
            f"{op}: upper bound and lower bound inconsistent with step sign (start={start}, "
            f"end={end}, step={step})"
        )


def linspace(start, end, steps: int, dtype=None, requires_grad=False, device=None) -> Tensor:
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, but got steps={steps}")
    array = np.linspace(start, end, steps, dtype=_float_dtype(dtype, "linspace"))
    return _leaf(array, requires_grad, None, device)


def eye(n: int, m: int | None = None, dtype=None, requires_grad=False, device=None) -> Tensor:
    for name, value in (("n", n), ("m", m)):
        if value is not None and value < 0:
            raise RuntimeError(f"eye: {name} must be greater or equal to 0, got {name}={value}")
    return _leaf(np.eye(n, m, dtype=_float_dtype(dtype, "eye")), requires_grad, None, device)


def rand(*size, dtype=None, requires_grad=False, device=None, name=None) -> Tensor:
    """Uniform samples in [0, 1) from the seeded generator."""
    shape, dtype = checks.shape_arg("rand", size), _float_dtype(dtype, "rand")
    checks.storage_fits("rand", shape, np.float64)  # drawn as float64, then cast
    array = _generator[0].random(shape, dtype=np.float64).astype(dtype)
    return _leaf(array, requires_grad, name, device)


def randn(*size, dtype=None, requires_grad=False, device=None, name=None) -> Tensor:
    """Standard normal samples from the seeded generator."""
    shape, dtype = checks.shape_arg("randn", size), _float_dtype(dtype, "randn")
    checks.storage_fits("randn", shape, np.float64)  # drawn as float64, then cast
    array = _generator[0].standard_normal(shape).astype(dtype)
    return _leaf(array, requires_grad, name, device)


def randint(low, high=None, size=(), dtype=None, device=None) -> Tensor:
    if high is None:
        low, high = 0, low
    if low >= high:
        raise RuntimeError(
            f"randint: random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    shape = checks.shape_arg("randint", (size,))
    dtype = np.int64 if dtype is None else checks.dtype_arg("randint", dtype)
    array = _generator[0].integers(low, high, size=shape).astype(dtype)
    return _leaf(array, False, None, device)


def rand_like(input: Tensor, dtype=None, requires_grad=False) -> Tensor:
    return rand(
        *input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad, device=input.device
    )


def randn_like(input: Tensor, dtype=None, requires_grad=False) -> Tensor:
    return randn(
        *input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad, device=input.device
    )
