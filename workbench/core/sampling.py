"""Random sampling with PyTorch's names, arguments and numbers: rand, randn, randint,
randperm, normal, bernoulli, multinomial, and the in-place fills (``x.uniform_()``...).

Every function takes ``generator=`` (a :class:`workbench.Generator`) and otherwise draws
from the default generator that ``wb.manual_seed`` seeds. The numbers are PyTorch's CPU
numbers (``workbench/core/random.py`` says how), so a seeded PyTorch program draws the same
values here. New tensors are leaves; they go to the default device unless ``device=``
says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import backend, checks, state
from .random import Generator, batched_at, generator_arg, per_example
from .tensor import Tensor, get_default_dtype, int64


def _leaf(array, requires_grad: bool, device, name=None, levels: tuple = ()) -> Tensor:
    """A new tensor of drawn values (batched at the vmap ``levels`` that drew one sample
    per example: see ``random.per_example``); an inference tensor in ``inference_mode``."""
    array = backend.to_device(array, backend.normalize_device(device))
    t = Tensor._make(array)
    if levels:
        t = batched_at(t, levels)
    t._is_inference = state.grad_mode.inference
    if name is not None:
        t.name = name
    if checks.flag_arg("factory", "requires_grad", requires_grad, none_is_false=True):
        t.requires_grad_(True)
    return t


def _float_dtype(op: str, dtype) -> np.dtype:
    """The dtype to draw floats in: PyTorch has no uniform or normal kernel for an integer
    or bool dtype (its NotImplementedError); complex ones are not drawn here yet."""
    dtype = get_default_dtype() if dtype is None else checks.dtype_arg(op, dtype)
    if dtype.kind in "biu":
        raise NotImplementedError(
            f"{op}(): argument 'dtype' is {dtype}: {op} draws floats, not implemented for {dtype}"
        )
    if dtype.kind != "f" and dtype.name != "bfloat16":
        raise RuntimeError(f"{op}: expected a floating point dtype, got {dtype}")
    return dtype


def _float_sampler(op: str, draw: Callable, doc: str) -> tuple[Callable, Callable]:
    """``rand`` and ``rand_like`` (or ``randn`` and ``randn_like``...): a factory of float
    samples whose values ``draw(generator, shape, dtype)`` gives. Both functions keep
    PyTorch's signature, so help() and an editor show their keywords."""

    def sample(
        *size,
        generator: Generator | None = None,
        dtype=None,
        requires_grad: bool = False,
        device=None,
        name: str | None = None,
    ) -> Tensor:
        shape, dtype = checks.shape_arg(op, size), _float_dtype(op, dtype)
        checks.storage_fits(op, shape, dtype)
        gen = generator_arg(op, generator)
        values, levels = per_example(shape, lambda shape: draw(gen, shape, dtype))
        return _leaf(values, requires_grad, device, name, levels)

    def sample_like(
        input: Tensor,
        *,
        generator: Generator | None = None,
        dtype=None,
        requires_grad: bool = False,
        device=None,
    ) -> Tensor:
        checks.tensor_arg(f"{op}_like", "input", input)
        return sample(
            *input.shape,
            generator=generator,
            dtype=_float_dtype(f"{op}_like", input.dtype if dtype is None else dtype),
            requires_grad=requires_grad,
            device=device or input.device,
        )

    sample.__name__ = sample.__qualname__ = op
    sample_like.__name__ = sample_like.__qualname__ = f"{op}_like"
    sample.__doc__ = doc
    sample_like.__doc__ = (
        f"``{op}`` of ``input``'s shape, dtype and device (unless told otherwise)."
    )
    return sample, sample_like


rand, rand_like = _float_sampler("rand", Generator.uniform, "Uniform samples in [0, 1).")
randn, randn_like = _float_sampler("randn", Generator.normal, "Standard normal samples.")


def randint(
    *args,
    low: int | None = None,
    high: int | None = None,
    size=None,
    generator: Generator | None = None,
    dtype=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``."""
    low, high, size = _randint_args(args, low, high, size)
    if low >= high:
        raise RuntimeError(
            f"randint: random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    shape = checks.shape_arg("randint", (size,))
    dtype = int64 if dtype is None else checks.dtype_arg("randint", dtype)
    gen = generator_arg("randint", generator)
    values, levels = per_example(shape, lambda shape: gen.integers(low, high, shape))
    return _leaf(values.astype(dtype), requires_grad, device, levels=levels)


def _randint_args(args: tuple, low, high, size) -> tuple:
    """PyTorch's two forms: (high, size) and (low, high, size), positional or named."""
    given = list(args)
    if size is None and given and isinstance(given[-1], (tuple, list)):
        size = given.pop()
    if len(given) == 2 and low is None and high is None:
        low, high = given
        if low is None:  # randint(None, 10, size): PyTorch's TypeError, not low=0
            raise TypeError("randint(): argument 'low' must be int, not NoneType")
    elif len(given) == 1:
        if high is None:
            high = given[0]
        else:
            low = given[0]
    elif given:
        raise TypeError(f"randint() takes (high, size) or (low, high, size), got {args!r}")
    if high is None or size is None:
        raise TypeError("randint() missing its 'high' or 'size' argument: randint(low, high, size)")
    low = 0 if low is None else checks.int_arg("randint", "low", low)
    return low, checks.int_arg("randint", "high", high), size


def randperm(
    n: int,
    *,
    generator: Generator | None = None,
    dtype=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """A random permutation of 0, …, n − 1."""
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    dtype = int64 if dtype is None else checks.dtype_arg("randperm", dtype)
    values = generator_arg("randperm", generator).permutation(int(n)).astype(dtype)
    return _leaf(values, requires_grad, device)


def normal(
    mean: float | Tensor = 0.0,
    std: float | Tensor = 1.0,
    size: tuple | None = None,
    *,
    generator: Generator | None = None,
    dtype=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """Samples of N(mean, std²): numbers and a ``size``, or tensors of means and stds."""
    gen = generator_arg("normal", generator)
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        for name, given in (("size", size), ("dtype", dtype)):
            if given is not None:  # PyTorch has no such form: it would be ignored
                raise TypeError(
                    f"normal(): argument '{name}' is not taken with a tensor mean or std: "
                    "the samples have their shape and dtype"
                )
        return _normal_of_tensors(mean, std, gen)
    if size is None:
        raise TypeError("normal() with a number mean and std needs a size: normal(0, 1, (2, 3))")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    shape, dtype = checks.shape_arg("normal", (size,)), _float_dtype("normal", dtype)
    mean, std = float(mean), float(std)
    values, levels = per_example(shape, lambda shape: gen.normal(shape, dtype, mean, std))
    return _leaf(values, requires_grad, device, levels=levels)


def _normal_of_tensors(mean, std, gen: Generator) -> Tensor:
    """PyTorch draws standard normals of the broadcast shape, then scales: ``z · std + mean``."""
    like = mean if isinstance(mean, Tensor) else std
    shape = np.broadcast_shapes(np.shape(_data(mean)), np.shape(_data(std)))
    z = Tensor._make(backend.to_device(gen.normal(shape, like.dtype), like.device.type))
    return z * std + mean


def _data(value):
    return value._data if isinstance(value, Tensor) else value


def bernoulli(input: Tensor, p: float | None = None, *, generator: Generator | None = None):
    """1 with probability ``input`` (elementwise; or ``p`` for every element), else 0."""
    gen = generator_arg("bernoulli", generator)
    probabilities = input._data if p is None else p
    if p is None:
        _check_probabilities("bernoulli", probabilities)
        draws = _uniform_like_probabilities(gen, probabilities)
    else:
        checks.probability("bernoulli", p)
        draws = gen.unit_uniform(input.numel(), np.float64).reshape(input.shape)
    values = backend.to_numpy(draws) < backend.to_numpy(probabilities)
    return Tensor._make(backend.to_device(values.astype(input.dtype), input.device.type))


def _uniform_like_probabilities(gen: Generator, probabilities) -> np.ndarray:
    """A uniform per element, of the probabilities' precision (float32: 24 bits, 1 word)."""
    dtype = probabilities.dtype if probabilities.dtype == np.float64 else np.float32
    return gen.unit_uniform(probabilities.size, dtype).reshape(probabilities.shape)


def _check_probabilities(op: str, probabilities) -> None:
    array = backend.to_numpy(probabilities)
    if array.size and (array.min() < 0 or array.max() > 1):
        raise RuntimeError(f"{op}: Expected p_in >= 0 && p_in <= 1 to be true, but got false.")


def multinomial(
    input: Tensor,
    num_samples: int,
    replacement: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Draw ``num_samples`` category indices from each row of (unnormalised) probabilities.

    PyTorch's two algorithms: without replacement, or for one sample, the index of the
    largest ``p / e`` with ``e`` exponential draws (the Gumbel trick); with replacement,
    a float64 uniform per sample looked up in the row's normalised cumulative sum.
    """
    probabilities = _multinomial_input(input, num_samples, replacement)
    gen = generator_arg("multinomial", generator)
    rows = probabilities.reshape(-1, probabilities.shape[-1])
    if not replacement or num_samples == 1:
        noise = gen.exponential(rows.shape, rows.dtype)
        scores = rows / noise
        picks = np.argsort(-scores, axis=-1, kind="stable")[:, :num_samples]
    else:
        picks = np.stack([_draw_from_cumulative(row, num_samples, gen) for row in rows])
    picks = picks.reshape(probabilities.shape[:-1] + (num_samples,)).astype(np.int64)
    return Tensor._make(backend.to_device(picks, input.device.type))


def _multinomial_input(input: Tensor, num_samples: int, replacement: bool) -> np.ndarray:
    """PyTorch's checks, in its words; the probabilities as a CPU array."""
    checks.tensor_arg("multinomial", "input", input)
    if input.ndim not in (1, 2):
        raise RuntimeError("multinomial: prob_dist must be 1 or 2 dim")
    if input.dtype.kind != "f":
        raise RuntimeError(
            f"multinomial only supports floating-point dtypes for input, got {input.dtype}"
        )
    if num_samples <= 0:
        raise RuntimeError("multinomial: cannot sample n_sample <= 0 samples")
    categories = input.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError(
            "multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        )
    probabilities = backend.to_numpy(input._data)
    if not np.all(np.isfinite(probabilities)) or probabilities.min() < 0:
        raise RuntimeError(
            "multinomial: probability tensor contains either `inf`, `nan` or element < 0"
        )
    if np.any(probabilities.reshape(-1, categories).sum(axis=1) == 0):
        raise RuntimeError(
            "multinomial: invalid multinomial distribution (sum of probabilities <= 0)"
        )
    return probabilities


def _draw_from_cumulative(row: np.ndarray, num_samples: int, gen: Generator) -> np.ndarray:
    """Samples with replacement: the first bucket whose cumulative share reaches u."""
    cumulative = np.cumsum(row, dtype=row.dtype)
    cumulative /= cumulative[-1]
    cumulative[-1] = 1
    u = gen.unit_uniform(num_samples, np.float64)
    return np.searchsorted(cumulative, u, side="left")


def randint_like(
    input: Tensor,
    low: int = 0,
    high: int | None = None,
    *,
    generator: Generator | None = None,
    dtype=None,
) -> Tensor:
    """``randint`` of ``input``'s shape, dtype and device; ``randint_like(x, high)`` or
    ``randint_like(x, low, high)``."""
    if high is None:
        low, high = 0, low
    return randint(
        low,
        high,
        tuple(input.shape),
        generator=generator,
        dtype=dtype or input.dtype,
        device=input.device,
    )


# ------------------------------------------------------------ in-place fills
def fill_with(tensor: Tensor, draw) -> Tensor:
    """Write the values ``draw(shape)`` gives into ``tensor`` in place, as an in-place op
    does (version bump; refused on a leaf that requires grad, outside ``no_grad``); one
    sample per example under ``vmap(randomness="different")``."""
    from ..ops import inplace as _inplace

    values, levels = per_example(tuple(tensor.shape), draw)
    drawn = Tensor._make(backend.to_device(values.astype(tensor.dtype), tensor.device.type))
    return _inplace.fill(tensor, batched_at(drawn, levels) if levels else drawn)


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    gen = generator_arg("uniform_", generator)
    return fill_with(tensor, lambda shape: gen.uniform(shape, tensor.dtype, a, b))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    if std < 0:
        raise RuntimeError(f"normal_ expects std >= 0.0, but found std {std}")
    gen = generator_arg("normal_", generator)
    return fill_with(tensor, lambda shape: gen.normal(shape, tensor.dtype, mean, std))


def random_(tensor: Tensor, low: int = 0, high: int | None = None, generator=None) -> Tensor:
    """Integers in [low, high); without ``high``, up to the largest the dtype holds exactly."""
    if high is None:
        low, high = 0, _random_top(tensor.dtype) if low == 0 else low
    gen = generator_arg("random_", generator)
    return fill_with(tensor, lambda shape: gen.integers(low, high, shape))


def _random_top(dtype) -> int:
    """PyTorch's default upper end of ``random_()``: 2^mantissa + 1 for floats, max + 1 for ints."""
    if dtype.kind == "f":
        return 2 ** (np.finfo(dtype).nmant + 1) + 1
    if dtype.kind == "b":
        return 2
    return int(np.iinfo(dtype).max) + 1


def exponential_(tensor: Tensor, lambd: float = 1.0, generator=None) -> Tensor:
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    gen = generator_arg("exponential_", generator)
    return fill_with(tensor, lambda shape: gen.exponential(shape, tensor.dtype, lambd))


def bernoulli_(tensor: Tensor, p: float = 0.5, generator=None) -> Tensor:
    checks.probability("bernoulli_", p)
    gen = generator_arg("bernoulli_", generator)
    return fill_with(tensor, lambda shape: gen.bernoulli(shape, p))
