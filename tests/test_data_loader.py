"""``wb.utils.data`` against ``torch.utils.data``: the same batches in the same order, the
same collated types, the same errors, and the generators left where PyTorch leaves them."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import workbench as wb
from workbench.utils import data

torch = pytest.importorskip("torch")
tdata = torch.utils.data

X = np.arange(40, dtype=np.float32).reshape(20, 2)
Y = np.arange(20)


def batches(module, lib, seed, **options):
    """Two epochs of (features, labels) batches as lists, with the given loader options."""
    lib.manual_seed(seed)
    generator = options.pop("generator", None)
    if generator is not None:
        generator = lib.Generator().manual_seed(generator)
    dataset = module.TensorDataset(lib.tensor(X), lib.tensor(Y))
    loader = module.DataLoader(dataset, generator=generator, **options)
    epochs = [[(xb.tolist(), yb.tolist()) for xb, yb in loader] for _ in range(2)]
    after = lib.rand(2, generator=generator).tolist()  # where the generator was left
    return epochs, len(loader), after


@pytest.mark.parametrize(
    "options",
    [
        {"batch_size": 6},
        {"batch_size": 6, "shuffle": True},
        {"batch_size": 6, "shuffle": True, "generator": 3},
        {"batch_size": 6, "shuffle": True, "drop_last": True},
        {"batch_size": 20, "shuffle": True, "generator": 5},
        {"batch_size": 1, "shuffle": False, "num_workers": 2},
    ],
    ids=["in_order", "shuffled", "own_generator", "drop_last", "one_batch", "workers"],
)
def test_the_batches_and_their_order_are_pytorchs(options):
    assert batches(data, wb, 9, **options) == batches(tdata, torch, 9, **options)


def collate_both(samples):
    ours = data.default_collate(samples(np))
    theirs = tdata.default_collate(samples(np))
    return ours, theirs


Pair = namedtuple("Pair", "x y")


@pytest.mark.parametrize(
    "samples",
    [
        lambda m: [(m.ones(2, dtype=np.float32), 1), (m.zeros(2, dtype=np.float32), 0)],
        lambda m: [{"a": 1.5, "b": [1, 2]}, {"a": 2.5, "b": [3, 4]}],
        lambda m: [Pair(1, 2.0), Pair(3, 4.0)],
        lambda m: [("cat", True), ("dog", False)],
        lambda m: [m.float64(1.5), m.float64(2.5)],
    ],
    ids=["arrays_and_ints", "dicts", "namedtuples", "strings_and_bools", "numpy_scalars"],
)
def test_default_collate_makes_what_pytorch_makes(samples):
    ours, theirs = collate_both(samples)

    def plain(value):
        if hasattr(value, "tolist") and hasattr(value, "dtype"):
            return ("tensor", str(value.dtype).removeprefix("torch."), value.tolist())
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return (type(value).__name__, [plain(v) for v in value])
        return value

    assert plain(ours) == plain(theirs)


def test_a_dataset_subclass_with_numpy_samples():
    class Squares(data.Dataset):
        def __len__(self):
            return 7

        def __getitem__(self, i):
            return np.array([i, i * i], dtype=np.float32), i % 2

    xb, yb = next(iter(data.DataLoader(Squares(), batch_size=4)))
    assert xb.shape == (4, 2) and xb.dtype == wb.float32 and yb.tolist() == [0, 1, 0, 1]
    assert len(data.DataLoader(Squares(), batch_size=4)) == 2
    assert len(data.DataLoader(Squares(), batch_size=4, drop_last=True)) == 1


def test_random_split_as_pytorch():
    for lengths in ([0.7, 0.3], [5, 15], [0.34, 0.33, 0.33]):
        ours = data.random_split(range(20), lengths, wb.Generator().manual_seed(1))
        theirs = tdata.random_split(range(20), lengths, torch.Generator().manual_seed(1))
        assert [list(s) for s in ours] == [list(s) for s in theirs]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        data.random_split(range(5), [2, 2])


def test_concat_and_subset():
    both = data.TensorDataset(wb.tensor(Y[:3])) + data.TensorDataset(wb.tensor(Y[10:12]))
    assert [int(both[i][0]) for i in range(len(both))] == [0, 1, 2, 10, 11]
    assert int(data.Subset(both, [4, 0])[0][0]) == 11


def test_an_iterable_dataset_is_batched_in_order():
    class Stream(data.IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in data.DataLoader(Stream(), batch_size=3)] == [
        [0, 1, 2],
        [3, 4, 5],
        [6],
    ]


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda d: d.DataLoader(range(4), shuffle=True, sampler=[0, 1]), ValueError, "sampler"),
        (
            lambda d: d.DataLoader(range(4), batch_size=None, drop_last=True),
            ValueError,
            "drop_last",
        ),
        (
            lambda d: d.DataLoader(range(4), batch_size=2, batch_sampler=[[0, 1]]),
            ValueError,
            "batch_sampler",
        ),
        (lambda d: d.DataLoader(range(4), num_workers=-1), ValueError, "num_workers"),
        (lambda d: d.BatchSampler(range(4), 0, False), ValueError, "batch_size"),
        (
            lambda d: d.TensorDataset(wb.ones(3), wb.ones(4)),
            AssertionError,
            "Size mismatch between tensors",
        ),
    ],
)
def test_bad_loader_arguments_are_refused_as_in_pytorch(make, error, words):
    with pytest.raises(error, match=words):
        make(data)


def test_collating_lists_of_unequal_size_is_refused():
    with pytest.raises(RuntimeError, match="equal size"):
        data.default_collate([[1, 2], [3]])


class _RefusingDataset:
    """Two samples, each refused with ``error`` (PyTorch's loader passes it on as it is)."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def __getitem__(self, index):
        raise self.error

    def __len__(self) -> int:
        return 2


@pytest.mark.parametrize("batch_size", [None, 2])
def test_an_index_the_dataset_refuses_keeps_its_type_and_names_the_sampler(batch_size):
    """A sampler of letters for a TensorDataset: PyTorch's TypeError says only "new():
    invalid data type 'str'"; here the same type says which indices the sampler gave."""
    theirs = tdata.DataLoader(tdata.TensorDataset(torch.ones(4, 2)), batch_size, sampler="ab")
    with pytest.raises(TypeError):
        next(iter(theirs))
    ours = data.DataLoader(data.TensorDataset(wb.ones(4, 2)), batch_size, sampler="ab")
    with pytest.raises(TypeError, match=r"DataLoader: the dataset refused the ind.* sampler gave"):
        next(iter(ours))


def test_an_error_that_cannot_be_retold_comes_as_it_was_raised():
    """An exception type that cannot be made from one message (UnicodeDecodeError takes
    five arguments) leaves the loader unchanged, not as a TypeError from rebuilding it."""
    error = UnicodeDecodeError("utf-8", b"x", 0, 1, "bad byte")
    with pytest.raises(UnicodeDecodeError) as raised:
        next(iter(data.DataLoader(_RefusingDataset(error))))
    assert raised.value is error


def test_a_sampler_that_is_no_iterable_is_refused_where_the_loader_is_made():
    """PyTorch's TypeError ("'float' object is not iterable") comes at the first batch,
    from Python; the workbench says it when the loader is made, naming the argument."""
    with pytest.raises(TypeError):
        next(iter(tdata.DataLoader(range(4), sampler=1.5)))
    with pytest.raises(TypeError, match=r"sampler must be an iterable of indices.*float"):
        data.DataLoader(range(4), sampler=1.5)
