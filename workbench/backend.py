"""The only module that knows numpy from CuPy.

Kernels are written against numpy's API. CuPy arrays implement numpy's dispatch
protocols (``__array_ufunc__`` and ``__array_function__``), so ``np.exp(cupy_array)``
stays on the GPU; what cannot dispatch that way (creating new arrays, moving data
between devices) goes through the helpers here.
"""

from __future__ import annotations

import numpy as np

_cupy = None
_cupy_checked = False


def cupy_module():
    """Return the cupy module if it is installed and a GPU is usable, else None."""
    global _cupy, _cupy_checked
    if not _cupy_checked:
        _cupy_checked = True
        try:
            import cupy

            if cupy.cuda.is_available():
                _cupy = cupy
        except Exception:  # ImportError, or a CUDA library that fails to load
            _cupy = None
    return _cupy


def cuda_available() -> bool:
    return cupy_module() is not None


def xp(array):
    """The array module (numpy or cupy) that holds ``array``."""
    if type(array) is np.ndarray or _cupy is None:
        return np
    return _cupy if isinstance(array, _cupy.ndarray) else np


def device_of(array) -> str:
    return "cpu" if xp(array) is np else "cuda"


def normalize_device(device) -> str:
    if device is None:
        return "cpu"
    name = str(device)
    if name == "cpu":
        return "cpu"
    if name == "cuda" or name.startswith("cuda:"):
        if not cuda_available():
            raise RuntimeError(
                "device='cuda' needs CuPy and a CUDA GPU: pip install 'workbench[cuda]' "
                "on a machine with an NVIDIA GPU"
            )
        return "cuda"
    raise ValueError(f"unknown device {device!r}: expected 'cpu' or 'cuda'")


def module_for(device: str):
    return np if device == "cpu" else cupy_module()


def to_device(array, device: str):
    """Copy ``array`` to ``device`` ('cpu' or 'cuda'); a no-op when it is already there."""
    if device_of(array) == device:
        return array
    if device == "cpu":
        return array.get()
    return cupy_module().asarray(array)


def to_numpy(array) -> np.ndarray:
    return array if type(array) is np.ndarray else to_device(array, "cpu")
