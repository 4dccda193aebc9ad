"""``wb.save`` and ``wb.load``: a model's ``state_dict`` (or any object of tensors) to a file.

The file is a Python pickle of the object, with each tensor stored as its numpy array
(and whether it requires grad). PyTorch's files are a zip of its own format: a file
written by one cannot be read by the other. As in PyTorch, ``load`` reads only tensors,
arrays, numbers, strings and containers unless ``weights_only=False`` (which runs
whatever the file asks for: only for files you trust).
"""

from __future__ import annotations

import io
import os
import pickle

from .core import backend, checks
from .core.devices import device
from .core.tensor import Tensor


class _Pickler(pickle.Pickler):
    """Stores a tensor as ``(its values on the CPU, requires_grad)``."""

    def reducer_override(self, obj):
        if type(obj) is Tensor:
            return _rebuild_tensor, (backend.to_numpy(obj.detach()._data), obj.requires_grad)
        return NotImplemented


def _rebuild_tensor(array, requires_grad: bool) -> Tensor:
    return Tensor(array, requires_grad=requires_grad)


def save(obj, f) -> None:
    """Write ``obj`` (tensors, dicts, lists, numbers...) to the path or file ``f``."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as handle:
            _Pickler(handle).dump(obj)
        return
    if not hasattr(f, "write"):  # PyTorch's AttributeError, with its words
        raise AttributeError(
            "save(): expected 'f' to be string, path, or a file-like object with a 'write' "
            f"attribute, not {type(f).__name__}"
        )
    _Pickler(f).dump(obj)


# What a weights-only load may build: tensors, parameters, numpy arrays, containers.
SAFE = {
    ("workbench.serialization", "_rebuild_tensor"),
    ("workbench.nn.parameter", "_rebuild_parameter"),
    ("collections", "OrderedDict"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
}


class _WeightsOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) not in SAFE:
            raise pickle.UnpicklingError(
                f"load(weights_only=True) refuses to build {module}.{name}: the file holds "
                "more than tensors and containers. Pass weights_only=False only if you trust "
                "the file."
            )
        return super().find_class(module, name)


def load(f, map_location=None, weights_only: bool | None = None, **pickle_options):
    """Read back what :func:`save` wrote. Tensors load on the CPU whatever
    ``map_location`` says (``.to(device)`` them after); one that is no location at all
    is PyTorch's TypeError."""
    if weights_only is not None:
        weights_only = checks.truth_arg("load", "weights_only", weights_only)
    if not (map_location is None or isinstance(map_location, (str, dict, device))):
        if not callable(map_location):
            raise TypeError(
                "load(): map_location must be a str, a device, a dict or a function, not "
                f"{type(map_location).__name__}"
            )
    if isinstance(f, (str, os.PathLike)):
        if not os.path.exists(f):
            raise FileNotFoundError(f"load(): no such file: {os.fspath(f)!r}")
        with open(f, "rb") as handle:
            return _unpickle(handle, weights_only)
    if isinstance(f, (bytes, bytearray)):
        return _unpickle(io.BytesIO(f), weights_only)
    if not hasattr(f, "read"):  # PyTorch's AttributeError (it asks for seek)
        raise AttributeError(
            f"load(): expected 'f' to be a string, a path or a file-like object with 'read' "
            f"and 'seek', not {type(f).__name__}"
        )
    return _unpickle(f, weights_only)


def _unpickle(handle, weights_only: bool | None):
    if weights_only is False:  # (None: True, PyTorch's default)
        return pickle.load(handle)
    return _WeightsOnly(handle).load()
