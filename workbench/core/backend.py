"""The only module that knows numpy from CuPy.

Kernels are written against numpy's API. CuPy arrays implement numpy's dispatch
protocols (``__array_ufunc__`` and ``__array_function__``), so ``np.exp(cupy_array)``
stays on the GPU; what cannot dispatch that way (creating new arrays, moving data
between devices, asking whether memory is writeable) goes through the helpers here.

A tensor's device is simply where its array lives: a ``numpy.ndarray`` is on
``"cpu"``, a ``cupy.ndarray`` on ``"cuda"``. Until the first GPU array exists
(``gpu_in_use`` is False), every tensor is on the CPU and ``apply_op`` skips the
device check entirely.
"""

from __future__ import annotations

import contextvars
import sys
import threading

import numpy as np

from . import state

_cupy = None
_cupy_checked = False
gpu_in_use = False  # becomes True when a GPU is first used; apply_op then checks devices


# ----------------------------------------------------- numpy's warnings, off
# numpy warns (RuntimeWarning) on overflow, 0/0, log(0)...; PyTorch never does: inf and
# NaN are values like any other, and anomaly mode is the tool that looks for them. So a
# kernel runs with numpy's floating-point errors ignored, whatever the caller's own
# numpy setting (np.errstate, np.seterr) is outside it. numpy keeps that setting in a
# context variable; entering np.errstate(all="ignore") around every kernel would cost
# more than a small kernel itself. Instead each thread makes, once, a contextvars.Context
# inside np.errstate(all="ignore"), and kernels run in it:
#
#     out = backend.quiet.run(kernel, *arrays)
#
# Context.run switches to that context for the one call, at about the cost of a function
# call. (A context cannot be entered twice at once: a kernel never calls an op.)
class _QuietNumpy(threading.local):
    """``run(fn, *args, **kwargs)``: ``fn`` called with numpy's floating-point errors ignored."""

    def __init__(self) -> None:
        with np.errstate(all="ignore"):
            self.run = contextvars.copy_context().run


quiet = _QuietNumpy()


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
    """True when CuPy is installed and a CUDA GPU is usable.

    (``pip install 'autodiff-workbench[cuda]'`` installs CuPy.)
    """
    return cupy_module() is not None


def _is_cupy_array(array) -> bool:
    cupy = sys.modules.get("cupy")  # no cupy imported: no cupy arrays can exist
    return cupy is not None and isinstance(array, cupy.ndarray)


def xp(array):
    """The array module (numpy or cupy) that holds ``array``."""
    if type(array) is np.ndarray or not _is_cupy_array(array):
        return np
    _mark_gpu_in_use()
    return cupy_module()


def _mark_gpu_in_use() -> None:
    global gpu_in_use
    gpu_in_use = True


def device_of(array) -> str:
    return "cpu" if xp(array) is np else "cuda"


def normalize_device(device, op: str | None = None) -> str:
    """``'cpu'``, ``'cuda'``, ``'cuda:0'``, a ``wb.device`` or an int (an accelerator's
    index, as in PyTorch: ``to(0)`` is ``to('cuda:0')``) → ``'cpu'`` or ``'cuda'``; None →
    the default device; a clear error otherwise, naming ``op`` where it is given."""
    said = f"{op}(): " if op else ""
    if device is None:
        return state.default_device.name
    if isinstance(device, int) and not isinstance(device, bool):
        device = _accelerator(device, said)
    name = str(getattr(device, "type", device))
    if name == "cpu":
        return "cpu"
    if name == "cuda" or name.startswith("cuda:"):
        if not cuda_available():
            raise RuntimeError(
                f"{said}device={device!r} needs CuPy and a CUDA GPU: pip install "
                "'autodiff-workbench[cuda]' on a machine with an NVIDIA GPU"
            )
        _mark_gpu_in_use()
        return "cuda"
    raise RuntimeError(f"{said}unknown device {device!r}: expected 'cpu' or 'cuda'")


def _accelerator(index: int, said: str) -> str:
    """The device an int names: the accelerator of that index (``'cuda:0'`` for 0). A
    negative index is PyTorch's RuntimeError, one beyond 64 bits its ValueError."""
    if not -(2**63) <= index < 2**63:
        raise ValueError(
            f"{said}the device index {index} is too big (Overflow when unpacking long long)"
        )
    if index < 0:
        raise RuntimeError(f"{said}Device index must not be negative, got the device {index}")
    return f"cuda:{index}"


def to_device(array, device: str):
    """Copy ``array`` to ``device`` ('cpu' or 'cuda'); a no-op when it is already there."""
    if device_of(array) == device:
        return array
    if device == "cpu":
        return array.get()
    _mark_gpu_in_use()
    return cupy_module().asarray(array)


def to_numpy(array) -> np.ndarray:
    return array if type(array) is np.ndarray else to_device(array, "cpu")


def asarray(value, like, dtype=None):
    """``np.asarray(value, dtype)`` on the device of ``like``.

    Kernels must not call ``np.asarray`` on results: for CuPy data it would try
    to copy them to the CPU (CuPy refuses). This makes the array where ``like`` lives.
    """
    return xp(like).asarray(value, dtype=dtype)


def is_writeable(array) -> bool:
    """Whether ``array`` may be written in place (numpy marks read-only views; CuPy has none)."""
    flags = getattr(array, "flags", None)
    return getattr(flags, "writeable", True) if flags is not None else False


def reshape_view(array, shape: tuple):
    """Reshape without copying; ValueError when the memory layout needs a copy."""
    if xp(array) is np:
        return np.reshape(array, shape, copy=False)
    out = array.reshape(shape)
    if out.size and out.data.ptr != array.data.ptr:
        raise ValueError("cannot reshape this array without copying it")
    return out


def check_same_device(op_name: str, arrays) -> None:
    """Raise a clear error when an op's tensor inputs live on different devices.

    Only arrays count. Python numbers go anywhere, and so does the stand-in (shape and
    dtype, no array) that a gradient rule passes on for an input the op did not save.
    """
    devices = []
    for array in arrays:
        if isinstance(array, np.ndarray) or _is_cupy_array(array):
            device = device_of(array)
            if device not in devices:
                devices.append(device)
    if len(devices) > 1:
        raise RuntimeError(
            f"{op_name}: expected all tensors to be on the same device, but found at least two "
            f"devices, {devices[0]} and {devices[1]}: move them first, for example with "
            f"x.to('{devices[0]}')"
        )
