"""``default_collate``: a list of samples → one batch, as PyTorch's DataLoader makes it.

Tensors are stacked along a new first dim; numpy arrays become tensors first; Python
floats become a float64 tensor and ints an int64 one; strings stay as they come; tuples,
lists, dicts and namedtuples are collated field by field (a sample ``(x, y)`` gives a
batch ``[X, Y]``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ... import ops
from ...core import factories
from ...core.tensor import Tensor, float64


def default_collate(batch: list):
    """Stack a list of samples into a batch (see the module docstring)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return ops.stack(list(batch), 0)
    if isinstance(elem, np.ndarray) and elem.dtype.kind not in "OSU":
        return ops.stack([factories.as_tensor(b) for b in batch], 0)
    if isinstance(elem, np.generic):
        return factories.as_tensor(np.array(batch))
    if isinstance(elem, bool):
        return factories.tensor(batch)
    if isinstance(elem, float):
        return factories.tensor(batch, dtype=float64)
    if isinstance(elem, int):
        return factories.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, Mapping):
        return type(elem)({key: default_collate([d[key] for d in batch]) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(default_collate(field) for field in zip(*batch)))
    if isinstance(elem, Sequence):
        return _collate_sequences(batch)
    raise TypeError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {type(elem).__name__}"
    )


def _collate_sequences(batch: list) -> list:
    """Samples that are tuples or lists: one batch per position, returned as a list."""
    size = len(batch[0])
    if any(len(sample) != size for sample in batch):
        raise RuntimeError("each element in list of batch should be of equal size")
    return [default_collate(field) for field in zip(*batch)]


def default_convert(data):
    """What a DataLoader with ``batch_size=None`` does to each sample: numpy arrays
    become tensors, containers are converted inside, everything else stays."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "OSU":
        return factories.as_tensor(data)
    if isinstance(data, Mapping):
        return type(data)({key: default_convert(value) for key, value in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, list):
        return [default_convert(d) for d in data]
    return data
