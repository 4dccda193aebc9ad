"""``DataLoader``: batches of a dataset, in order or shuffled, with PyTorch's arguments.

Everything runs in this process: ``num_workers`` is accepted and the batches are the
same as PyTorch's with workers (PyTorch's workers change where a sample is loaded, not
which or in what order). Each ``iter(loader)`` first draws one int64 from the loader's
``generator`` (or the default one), as PyTorch does to seed its workers, so the random
numbers a program draws afterwards stay in step with PyTorch's.
"""

from __future__ import annotations

import numbers
import reprlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ...core import random
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size`` samples, collated into tensors.

    ``shuffle=True`` gives a new random order each epoch (from ``generator`` if given);
    ``drop_last=True`` drops a last batch smaller than ``batch_size``; ``collate_fn``
    replaces :func:`default_collate`; ``sampler`` or ``batch_sampler`` choose the indices.
    """

    def __init__(
        self,
        dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler=None,
        batch_sampler=None,
        num_workers: int = 0,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable | None = None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers)
        self.dataset = dataset
        self.num_workers = num_workers
        self.generator = generator
        self.batch_size = batch_size
        self.drop_last = drop_last
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise ValueError(
                "DataLoader with IterableDataset: expected unspecified shuffle, sampler and "
                f"batch_sampler options, but got shuffle={shuffle}"
            )
        self.sampler, self.batch_sampler = self._samplers(shuffle, sampler, batch_sampler)
        if collate_fn is not None and not callable(collate_fn):  # (PyTorch: at the 1st batch)
            raise TypeError(
                f"DataLoader: collate_fn must be callable, not {type(collate_fn).__name__}"
            )
        if collate_fn is None:
            collate_fn = default_convert if self._auto_collation is False else default_collate
        self.collate_fn = collate_fn

    def _samplers(self, shuffle, sampler, batch_sampler) -> tuple:
        """PyTorch's rules for which of shuffle, sampler and batch_sampler may go together."""
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if sampler is not None and not _iterable(sampler):  # (PyTorch: at the first batch)
            raise TypeError(
                "DataLoader: sampler must be an iterable of indices (a Sampler or a sequence), "
                f"not {type(sampler).__name__} ({sampler!r})"
            )
        if batch_sampler is not None:
            if self.batch_size != 1 or shuffle or sampler is not None or self.drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            self.batch_size, self.drop_last = None, False
        elif self.batch_size is None and self.drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with "
                "drop_last"
            )
        if self._iterable:
            return None, None
        if sampler is None:
            if shuffle:
                sampler = RandomSampler(self.dataset, generator=self.generator)
            else:
                sampler = SequentialSampler(self.dataset)
        if self.batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, self.batch_size, self.drop_last)
        return sampler, batch_sampler

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    def __iter__(self) -> Iterator:
        self._draw_base_seed()
        if self._iterable:
            return self._iterable_batches()
        if self.batch_sampler is None:
            return self._map_samples()
        return self._map_batches()

    def _draw_base_seed(self) -> int:
        """The int64 PyTorch draws at the start of each epoch to seed its workers."""
        generator = random.default_generator if self.generator is None else self.generator
        return int(generator.integers(0, 2**63, ()))

    def _map_samples(self) -> Iterator:
        for index in self.sampler:
            with _said_where(_FETCHING.format(f"the index {reprlib.repr(index)}")):
                sample = self.dataset[index]
            with _said_where(_COLLATING):
                converted = self.collate_fn(sample)
            yield converted

    def _map_batches(self) -> Iterator:
        fetch_many = getattr(self.dataset, "__getitems__", None)
        for indices in self.batch_sampler:
            with _said_where(_FETCHING.format(f"the indices {reprlib.repr(indices)}")):
                samples = fetch_many(indices) if fetch_many else [self.dataset[i] for i in indices]
            with _said_where(_COLLATING):
                batch = self.collate_fn(samples)
            yield batch

    def _iterable_batches(self) -> Iterator:
        if self.batch_size is None:
            yield from (self.collate_fn(sample) for sample in self.dataset)
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is None:
                return length
            whole, rest = divmod(length, self.batch_size)
            return whole + (1 if rest and not self.drop_last else 0)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)


_FETCHING = "DataLoader: the dataset refused {} that the sampler gave"
_COLLATING = "DataLoader: collate_fn could not make a batch of the dataset's samples"


@contextmanager
def _said_where(context: str):
    """An error inside keeps its type, its message said after ``context``: which indices
    of which sampler, or which step of the loader, failed. (PyTorch shows only the inner
    message, such as "new(): invalid data type 'str'" for a sampler of letters.) A type
    that cannot be made from one message is raised as it came."""
    try:
        yield
    except Exception as error:
        try:
            told = type(error)(f"{context}: {error}")
        except Exception:
            told = None
        if told is None:
            raise
        raise told from error


def _iterable(value) -> bool:
    """Whether a ``for`` loop can go over ``value`` (``__iter__``, or ``__getitem__``
    from 0), asked without starting an iteration."""
    return hasattr(type(value), "__iter__") or hasattr(type(value), "__getitem__")


def get_worker_info():
    """None: no worker processes here (every batch is loaded in the main process)."""
    return None


def _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers) -> None:
    """PyTorch's checks of the worker options: prefetch_factor and persistent_workers only
    mean something with worker processes (num_workers > 0), so without them they are refused."""
    if not isinstance(num_workers, numbers.Real):
        raise TypeError(f"DataLoader: num_workers must be an int, not {type(num_workers).__name__}")
    if num_workers < 0:
        raise ValueError(
            "DataLoader: num_workers option should be non-negative; use num_workers=0 to "
            "disable multiprocessing."
        )
    if timeout < 0:
        raise ValueError(f"DataLoader: timeout option should be non-negative, got {timeout}")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            f"DataLoader: prefetch_factor={prefetch_factor} could only be specified in "
            "multiprocessing: let num_workers > 0 to enable multiprocessing, otherwise set "
            "prefetch_factor to None."
        )
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError(
            f"DataLoader: prefetch_factor option should be non-negative, got {prefetch_factor}"
        )
    if persistent_workers and num_workers == 0:
        raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
