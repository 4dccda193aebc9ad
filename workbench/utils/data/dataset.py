"""Datasets: anything with ``__getitem__`` and ``__len__``, and the ready-made ones."""

from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Sequence

from ...core import random, sampling
from ...core.tensor import Tensor


class Dataset:
    """A map from indices to samples: subclass it and write ``__getitem__`` and ``__len__``."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclass it and write ``__iter__`` (no indices, no shuffling)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class TensorDataset(Dataset):
    """Sample ``i`` is ``(t[i] for t in tensors)``: all tensors have the same first dim."""

    def __init__(self, *tensors: Tensor) -> None:
        for t in tensors:
            if not isinstance(t, Tensor):  # PyTorch's AttributeError (from ``t.size(0)``)
                raise AttributeError(
                    f"TensorDataset: every argument must be a tensor; a {type(t).__name__} has "
                    "no size"
                )
        sizes = [t.shape[0] for t in tensors]
        if len(set(sizes)) > 1:
            raise AssertionError(
                f"Size mismatch between tensors: first dims {sizes} (TensorDataset needs one "
                "length for every tensor)"
            )
        self.tensors = tensors

    def __getitem__(self, index) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several datasets one after the other."""

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        self.cumulative_sizes = []
        total = 0
        for dataset in self.datasets:
            if isinstance(dataset, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
            total += len(dataset)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int):
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


def random_split(dataset, lengths: Sequence, generator=None) -> list[Subset]:
    """Split ``dataset`` into shuffled, non-overlapping subsets of the given lengths
    (or fractions that sum to 1), drawing the shuffle as PyTorch does."""
    generator = random.default_generator if generator is None else generator
    if not isinstance(lengths, Sequence) or not all(isinstance(n, numbers.Real) for n in lengths):
        raise TypeError(
            f"random_split(): lengths must be a sequence of ints or fractions, got {lengths!r}"
        )
    lengths = _split_lengths(len(dataset), list(lengths))
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = sampling.randperm(sum(lengths), generator=generator).tolist()
    subsets, start = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, order[start : start + length]))
        start += length
    return subsets


def _split_lengths(n: int, lengths: list) -> list[int]:
    """Fractions become counts (floor), the remainder going one each to the first subsets."""
    if not (math.isclose(sum(lengths), 1) and sum(lengths) <= 1):
        return lengths
    for i, fraction in enumerate(lengths):
        if fraction < 0 or fraction > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
    counts = [int(math.floor(n * fraction)) for fraction in lengths]
    for i in range(n - sum(counts)):
        counts[i % len(counts)] += 1
    return counts
