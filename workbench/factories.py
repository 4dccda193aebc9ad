"""Tensor factories: ``tensor``, ``zeros``, ``ones``, ``arange``, ``randn``... and the seed.

Factories make leaves. Given ``requires_grad=True`` they require grad even inside
``no_grad`` (PyTorch's factory exception).
"""

from __future__ import annotations

import numpy as np

from . import backend
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


def _size(size: tuple, op: str) -> tuple:
    """The shape given as ``ones(2, 3)`` or ``ones((2, 3))``: integers only.

    ``int(2.5)`` would quietly make ``ones(2.5)`` a tensor of 2; PyTorch refuses it.
    """
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    for position, s in enumerate(size):
        if not _is_integer(s):
            raise TypeError(
                f"{op}(): argument 'size' must be tuple of ints, but found element of type "
                f"{type(s).__name__} at pos {position} ({s!r})"
            )
    return tuple(int(s) for s in size)


def _is_integer(s) -> bool:
    if isinstance(s, Tensor):
        return s.ndim == 0 and s.dtype.kind in "iu"
    return isinstance(s, (int, np.integer)) and not isinstance(s, bool)


def _leaf(array, requires_grad: bool, name, device) -> Tensor:
    t = Tensor._make(backend.to_device(array, backend.normalize_device(device)))
    if name is not None:
        t.name = name
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


def _float_dtype(dtype):
    return get_default_dtype() if dtype is None else np.dtype(dtype)


def zeros(*size, dtype=None, requires_grad=False, device=None, name=None) -> Tensor:
    return _leaf(np.zeros(_size(size, "zeros"), _float_dtype(dtype)), requires_grad, name, device)


def ones(*size, dtype=None, requires_grad=False, device=None, name=None) -> Tensor:
    return _leaf(np.ones(_size(size, "ones"), _float_dtype(dtype)), requires_grad, name, device)


def empty(*size, dtype=None, requires_grad=False, device=None, name=None) -> Tensor:
    return zeros(*size, dtype=dtype, requires_grad=requires_grad, device=device, name=name)


def full(size, fill_value, dtype=None, requires_grad=False, device=None, name=None) -> Tensor:
    if dtype is None:
        if isinstance(fill_value, bool):
            dtype = np.dtype(bool)
        elif isinstance(fill_value, int):
            dtype = np.dtype("int64")
    array = np.full(_size((size,), "full"), fill_value, _float_dtype(dtype))
    return _leaf(array, requires_grad, name, device)


def zeros_like(input: Tensor, dtype=None, requires_grad=False, device=None) -> Tensor:
    xp = backend.xp(input._data)
    return _leaf(
        xp.zeros(input.shape, dtype or input.dtype), requires_grad, None, device or input.device
    )


def ones_like(input: Tensor, dtype=None, requires_grad=False, device=None) -> Tensor:
    xp = backend.xp(input._data)
    return _leaf(
        xp.ones(input.shape, dtype or input.dtype), requires_grad, None, device or input.device
    )


def full_like(input: Tensor, fill_value, dtype=None, requires_grad=False, device=None) -> Tensor:
    xp = backend.xp(input._data)
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
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = np.dtype("int64") if is_int else get_default_dtype()
    return _leaf(np.arange(start, end, step, dtype=dtype), requires_grad, None, device)


def linspace(start, end, steps: int, dtype=None, requires_grad=False, device=None) -> Tensor:
    array = np.linspace(start, end, steps, dtype=_float_dtype(dtype))
    return _leaf(array, requires_grad, None, device)


def eye(n: int, m: int | None = None, dtype=None, requires_grad=False, device=None) -> Tensor:
    return _leaf(np.eye(n, m, dtype=_float_dtype(dtype)), requires_grad, None, device)


def rand(*size, dtype=None, requires_grad=False, device=None, name=None) -> Tensor:
    """Uniform samples in [0, 1) from the seeded generator."""
    dtype = _float_dtype(dtype)
    array = _generator[0].random(_size(size, "rand"), dtype=np.float64).astype(dtype)
    return _leaf(array, requires_grad, name, device)


def randn(*size, dtype=None, requires_grad=False, device=None, name=None) -> Tensor:
    """Standard normal samples from the seeded generator."""
    dtype = _float_dtype(dtype)
    array = _generator[0].standard_normal(_size(size, "randn")).astype(dtype)
    return _leaf(array, requires_grad, name, device)


def randint(low, high=None, size=(), dtype=None, device=None) -> Tensor:
    if high is None:
        low, high = 0, low
    array = _generator[0].integers(low, high, size=tuple(size)).astype(dtype or np.int64)
    return _leaf(array, False, None, device)


def rand_like(input: Tensor, dtype=None, requires_grad=False) -> Tensor:
    return rand(
        *input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad, device=input.device
    )


def randn_like(input: Tensor, dtype=None, requires_grad=False) -> Tensor:
    return randn(
        *input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad, device=input.device
    )
