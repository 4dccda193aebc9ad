"""``torch.utils.data``'s names: datasets, samplers and the ``DataLoader`` that batches them.

A training loop written for PyTorch runs unchanged::

    loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True, generator=g)
    for xb, yb in loader:          # one epoch: a new shuffle each time
        ...

The order of the batches is PyTorch's: shuffling draws from the same generator, in the
same order, as PyTorch's ``RandomSampler`` (see ``workbench/core/random.py``).
"""

from .collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
)

__all__ = [
    "BatchSampler",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]


def __getattr__(name: str):
    from ...compat.torch_alias import not_here

    raise AttributeError(not_here(__name__, name))
