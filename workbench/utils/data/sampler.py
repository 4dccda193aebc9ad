"""Samplers: which indices a ``DataLoader`` takes, in which order, in which batches.

``RandomSampler`` draws exactly what PyTorch's draws: without its own generator it first
takes a seed from the default generator (one int64, two 32-bit words) and shuffles with a
new generator seeded with it; with one, it shuffles with that generator. It is a Python
generator function, as PyTorch's, so its draws happen when the batches are asked for.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence

from ...core import random, sampling


class Sampler:
    """An iterable of dataset indices (subclass it and write ``__iter__``)."""

    def __init__(self, data_source=None) -> None:
        pass

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


def _sized(sampler: str, name: str, value):
    """A dataset or sequence the sampler takes the length of: PyTorch's TypeError said
    where the sampler is made, rather than at ``len()`` inside the first epoch."""
    if not hasattr(value, "__len__"):
        raise TypeError(
            f"{sampler}(): {name} must have a length (a dataset or a sequence), not "
            f"{type(value).__name__}"
        )
    return value


class SequentialSampler(Sampler):
    """0, 1, …, n − 1."""

    def __init__(self, data_source) -> None:
        self.data_source = _sized("SequentialSampler", "data_source", data_source)

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new random order of the indices each epoch (or ``num_samples`` with replacement)."""

    def __init__(self, data_source, replacement: bool = False, num_samples=None, generator=None):
        self.data_source = _sized("RandomSampler", "data_source", data_source)
        if not isinstance(replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples="
                f"{self.num_samples}"
            )
        if self.num_samples > sys.maxsize:  # (PyTorch's OverflowError comes from len())
            raise OverflowError(
                f"RandomSampler: num_samples={self.num_samples} cannot fit an index-sized "
                f"integer (at most sys.maxsize, {sys.maxsize})"
            )

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            seed = int(random.default_generator.integers(0, 2**63, ()))
            generator = random.Generator().manual_seed(seed)
        if self.replacement:
            for start in range(0, self.num_samples, 32):
                count = min(32, self.num_samples - start)
                yield from sampling.randint(0, n, (count,), generator=generator).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from sampling.randperm(n, generator=generator).tolist()
        yield from sampling.randperm(n, generator=generator).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a new random order each epoch."""

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices = _sized("SubsetRandomSampler", "indices", indices)
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        order = sampling.randperm(len(self.indices), generator=self.generator).tolist()
        for i in order:
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of ``batch_size`` (the last may be short,
    unless ``drop_last``)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if batch_size > sys.maxsize:  # (PyTorch's ValueError comes from its first batch)
            raise ValueError(
                f"batch_size should be at most sys.maxsize ({sys.maxsize}), but got "
                f"batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
