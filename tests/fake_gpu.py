"""A pretend GPU for machines without one, to catch arrays made on the wrong device.

``FakeGpuArray`` is numpy memory that behaves like a CuPy array in the one way that
matters here: a ufunc or numpy function that gets both a FakeGpuArray and a plain
numpy array raises ``MixedDevices``, as CuPy raises TypeError. The fixture
``pretend_gpu`` makes ``workbench.core.backend`` take FakeGpuArrays for CuPy arrays and a
numpy-backed stand-in for the cupy module, so ``device="cuda"`` gives FakeGpuArrays.

Where CuPy might quietly copy a numpy index array to the GPU (np.add.at), this
refuses it: kernels should not lean on that copy.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from workbench.core import backend


class MixedDevices(TypeError):
    pass


class FakeGpuArray(np.ndarray):
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _refuse_cpu_arrays((inputs, kwargs), f"np.{ufunc.__name__}.{method}")
        out = kwargs.get("out")
        result = getattr(ufunc, method)(*_plain(inputs), **_plain(kwargs))
        if out is not None:  # in place: hand back the caller's own arrays
            return out[0] if len(out) == 1 else out
        return _on_gpu(result)

    def __array_function__(self, func, types, args, kwargs):
        _refuse_cpu_arrays((args, kwargs), f"np.{func.__name__}")
        return _on_gpu(func(*_plain(args), **_plain(kwargs)))

    def __getitem__(self, key):
        out = super().__getitem__(key)
        return _on_gpu(out) if isinstance(out, np.generic) else out  # x[0] is 0-d in CuPy

    def get(self) -> np.ndarray:
        """Copy to the CPU, as ``cupy.ndarray.get``."""
        return np.array(self.view(np.ndarray))


def _refuse_cpu_arrays(value, where: str) -> None:
    if isinstance(value, (list, tuple)):
        for v in value:
            _refuse_cpu_arrays(v, where)
    elif isinstance(value, dict):
        _refuse_cpu_arrays(list(value.values()), where)
    elif isinstance(value, np.ndarray) and not isinstance(value, FakeGpuArray):
        raise MixedDevices(
            f"{where}: a CPU array {value.shape} {value.dtype} met a (pretend) GPU array"
        )


def _plain(value):
    """FakeGpuArrays as plain numpy views, for numpy to compute with."""
    if isinstance(value, FakeGpuArray):
        return value.view(np.ndarray)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _on_gpu(value):
    """Results back on the pretend GPU; numpy scalars become 0-d arrays, as CuPy gives."""
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value).view(FakeGpuArray)
    if isinstance(value, (list, tuple)):
        return type(value)(_on_gpu(v) for v in value)
    return value


class FakeCupy(types.ModuleType):
    """``cupy`` for the pretend GPU: numpy's functions, with their results on it."""

    ndarray = FakeGpuArray

    def __init__(self) -> None:
        super().__init__("fake_cupy")

    @staticmethod
    def asarray(value, dtype=None):
        """Explicit copies to the GPU are allowed, as with ``cupy.asarray``."""
        if isinstance(value, FakeGpuArray) and (dtype is None or value.dtype == dtype):
            return value
        return np.array(_plain(value), dtype=dtype).view(FakeGpuArray)

    def __getattr__(self, name):
        function = getattr(np, name)
        if not callable(function) or isinstance(function, type):
            return function

        def on_gpu(*args, **kwargs):
            _refuse_cpu_arrays((args, kwargs), f"cupy.{name}")
            return _on_gpu(function(*_plain(args), **_plain(kwargs)))

        return on_gpu


@pytest.fixture
def pretend_gpu(monkeypatch):
    """``device="cuda"`` gives FakeGpuArrays for the length of a test."""
    monkeypatch.setattr(backend, "_is_cupy_array", lambda a: isinstance(a, FakeGpuArray))
    fake_cupy = FakeCupy()
    monkeypatch.setattr(backend, "cupy_module", lambda: fake_cupy)
    # CuPy's no-copy check reads device pointers; numpy's own reshape does the same job.
    monkeypatch.setattr(backend, "reshape_view", lambda a, shape: np.reshape(a, shape, copy=False))
    monkeypatch.setattr(backend, "gpu_in_use", False)
