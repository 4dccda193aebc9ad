"""PyTorch's CPU random number generator, draw for draw: ``wb.Generator``, ``wb.manual_seed``.

PyTorch makes every random number on the CPU from one Mersenne Twister (mt19937) per
generator, seeded with the seed's low 32 bits. numpy ships the same twister
(``numpy.random.MT19937``) and seeds it the same way (its "legacy" seeding), so the
32-bit words match PyTorch's one for one. This module turns those words into numbers
the way PyTorch's CPU kernels do, so that ``wb.manual_seed(0); wb.randn(3)`` prints
PyTorch's numbers, and a seeded PyTorch program draws the same weights, batches and
samples here:

==================  ======  =====================================================
kernel              words   how a number is made from them
==================  ======  =====================================================
uniform, float32    1       low 24 bits · 2⁻²⁴, then ``u · (b − a) + a``
uniform, float64    2       (first · 2³² + second), low 53 bits · 2⁻⁵³
normal, ≥ 16 values —       uniforms first, then Box–Muller on blocks of 16
normal, < 16 values 4       Box–Muller in float64; the second value of a pair is
                            kept for the next call (PyTorch caches it too)
integers in [a, b)  1 or 2  ``word % (b − a) + a`` (two words when b − a ≥ 2²⁸)
exponential         2       ``−log(1 − u) / λ``, u a float64 uniform
bernoulli(p)        2       ``u < p``, u a float64 uniform
==================  ======  =====================================================

PyTorch computes float32 normals with vectorized log, sin and cos, numpy with its own:
about one value in seven differs from PyTorch's in the last bit (1 ulp); every other
kind of number here is PyTorch's exactly. Float16 and bfloat16 normals are drawn in
float32 and rounded. Tensors on a GPU get their numbers from here too, then move
(PyTorch's CUDA generator, Philox, draws other numbers).
"""

from __future__ import annotations

import math
import numbers
import os

import numpy as np

from . import state

DEFAULT_FLOAT_WORDS = {np.dtype("float64"): 53, np.dtype("float32"): 24, np.dtype("float16"): 11}
TWO_PI = 2.0 * math.pi
BLOCK = 16  # PyTorch's normal_fill works on blocks of 16 values


class Generator:
    """A source of random numbers with PyTorch's API and PyTorch's numbers.

    ``g = wb.Generator().manual_seed(42)`` and ``wb.randn(3, generator=g)`` draw from
    ``g`` alone; without ``generator=`` a function draws from ``wb.default_generator``.
    """

    def __init__(self, device="cpu") -> None:
        from .devices import device as device_class

        self.device = device_class(device)
        self._twister = np.random.MT19937(0)
        self._initial_seed = 0
        self._next_normal: float | None = None
        self.seed()

    # ----------------------------------------------------------------- seeding
    def manual_seed(self, seed) -> Generator:
        """Start over from ``seed`` (an int, 0 ≤ seed < 2⁶⁴; negative ones wrap, as PyTorch).
        A float, bool or string is refused, as PyTorch's Generator does (``torch.manual_seed``
        converts with ``int()`` first; so does the module's ``manual_seed`` here)."""
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise RuntimeError(
                f"Generator.manual_seed: expected an int seed, but got {type(seed).__name__} "
                f"{seed!r}"
            )
        seed = int(seed)
        if seed < -(2**63) or seed >= 2**64:
            raise ValueError(f"Overflow when unpacking long long: manual_seed({seed})")
        seed %= 2**64
        self._twister._legacy_seeding(seed & 0xFFFFFFFF)
        self._initial_seed = seed
        self._next_normal = None
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; return that seed."""
        seed = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        return self._initial_seed

    # ------------------------------------------------------------------ state
    def get_state(self):
        """The whole state as a uint8 tensor, for :meth:`set_state` (PyTorch's shape of it)."""
        from .tensor import Tensor

        twister = self._twister.state["state"]
        cached = np.nan if self._next_normal is None else self._next_normal
        header = np.array([twister["pos"], self._initial_seed], dtype=np.uint64)
        parts = (header.view(np.uint8), twister["key"].astype(np.uint32).view(np.uint8))
        tail = np.array([cached], dtype=np.float64).view(np.uint8)
        return Tensor._make(np.concatenate(parts + (tail,)))

    def set_state(self, new_state) -> Generator:
        array = np.asarray(getattr(new_state, "_data", new_state))
        if array.dtype != np.uint8 or array.shape != (16 + 624 * 4 + 8,):
            raise RuntimeError(
                f"set_state: expected a uint8 tensor of {16 + 624 * 4 + 8} bytes from "
                f"get_state(), got dtype {array.dtype} and shape {tuple(array.shape)}"
            )
        pos, initial_seed = array[:16].view(np.uint64)
        key = array[16:-8].view(np.uint32)
        cached = float(array[-8:].view(np.float64)[0])
        self._twister.state = {
            "bit_generator": "MT19937",
            "state": {"key": key.copy(), "pos": int(pos)},
        }
        self._initial_seed = int(initial_seed)
        self._next_normal = None if math.isnan(cached) else cached
        return self

    def __repr__(self) -> str:
        return f"<workbench.Generator initial_seed={self._initial_seed}>"

    # ------------------------------------------------------------------ words
    def words32(self, n: int) -> np.ndarray:
        """``n`` raw 32-bit words (as uint64), PyTorch's ``random()``: every random
        number comes from here (so vmap's randomness, and a trace's refusal, are here)."""
        if state.in_use.tracers and state.tracing.tracer is not None:
            state.tracing.tracer.refuse_draw()  # a traced program would replay one draw
        if state.in_use.vmaps:
            check_vmap_randomness()
        return self._twister.random_raw(n)

    def words64(self, n: int) -> np.ndarray:
        """``n`` 64-bit words, each two 32-bit ones, the first high: PyTorch's ``random64()``."""
        pairs = self.words32(2 * n)
        return (pairs[0::2] << np.uint64(32)) | pairs[1::2]

    def unit_uniform(self, n: int, dtype) -> np.ndarray:
        """``n`` uniforms in [0, 1) as float64, made as PyTorch makes them for ``dtype``."""
        bits = DEFAULT_FLOAT_WORDS.get(np.dtype(dtype), 24)  # bfloat16: float's 24 bits
        words = self.words64(n) if bits == 53 else self.words32(n)
        return (words & np.uint64((1 << bits) - 1)).astype(np.float64) * 2.0**-bits

    # -------------------------------------------------------------- kernels
    def uniform(self, shape: tuple, dtype, low: float = 0.0, high: float = 1.0) -> np.ndarray:
        """U(low, high): ``u · (high − low) + low``, rounded once (PyTorch fuses the
        multiply-add, so float64 arithmetic then one rounding gives its float32 numbers)."""
        dtype = np.dtype(dtype)
        u = self.unit_uniform(math.prod(shape), dtype)
        span = float(np.asarray(high, dtype) - np.asarray(low, dtype))
        low = float(np.asarray(low, dtype))
        return (u * span + low).astype(dtype).reshape(shape)

    def normal(self, shape: tuple, dtype, mean: float = 0.0, std: float = 1.0) -> np.ndarray:
        """N(mean, std²): PyTorch's ``normal_fill`` for 16 values or more, else one by one."""
        dtype = np.dtype(dtype)
        n = math.prod(shape)
        if n >= BLOCK:
            return self._normal_blocks(n, dtype, mean, std).reshape(shape)
        values = [self._one_normal() * std + mean for _ in range(n)]
        return np.array(values, dtype=np.float64).astype(dtype).reshape(shape)

    def _normal_blocks(self, n: int, dtype, mean: float, std: float) -> np.ndarray:
        """All uniforms first; then Box–Muller on each block of 16 (u₁ from the first 8,
        u₂ from the last 8); a last partial block is redrawn whole and overwrites the end."""
        work = np.float64 if dtype == np.float64 else np.float32
        data = self.unit_uniform(n, dtype).astype(work)
        whole = n - n % BLOCK
        data[:whole] = _box_muller(data[:whole], mean, std)
        if n % BLOCK:
            tail = self.unit_uniform(BLOCK, dtype).astype(work)
            data[n - BLOCK :] = _box_muller(tail, mean, std)
        return data.astype(dtype)

    def _one_normal(self) -> float:
        """One N(0, 1) value; each Box–Muller pair gives two, the second kept for later."""
        if self._next_normal is not None:
            if state.in_use.vmaps:
                check_vmap_randomness()
            value, self._next_normal = self._next_normal, None
            return value
        u1, u2 = self.unit_uniform(2, np.float64)
        radius = math.sqrt(-2.0 * math.log1p(-u2))
        theta = TWO_PI * u1
        self._next_normal = radius * math.sin(theta)
        return radius * math.cos(theta)

    def integers(self, low: int, high: int, shape: tuple) -> np.ndarray:
        """Integers in [low, high): ``word % (high − low) + low``, as int64; a 64-bit word
        once the range reaches 2²⁸ (PyTorch's threshold, which keeps the modulo's bias small)."""
        span = high - low
        n = math.prod(shape)
        words = self.words64(n) if span >= 2**28 else self.words32(n)
        return ((words % np.uint64(span)).astype(np.int64) + low).reshape(shape)

    def permutation(self, n: int) -> np.ndarray:
        """PyTorch's ``randperm`` on the CPU: swap element i with one of i..n−1, in order."""
        order = np.arange(n, dtype=np.int64)
        if n < 2:
            return order
        offsets = self.words32(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)
        for i, offset in enumerate(offsets.tolist()):
            j = i + offset
            order[i], order[j] = order[j], order[i]
        return order

    def exponential(self, shape: tuple, dtype, rate: float = 1.0) -> np.ndarray:
        """Exp(rate): ``−log(1 − u) / rate`` with float64 uniforms u."""
        u = self.unit_uniform(math.prod(shape), np.float64)
        return (-1.0 / rate * np.log1p(-u)).astype(dtype).reshape(shape)

    def bernoulli(self, shape: tuple, p: float) -> np.ndarray:
        """1 with probability p, else 0 (bool): ``u < p`` with float64 uniforms u."""
        return (self.unit_uniform(math.prod(shape), np.float64) < p).reshape(shape)


# ----------------------------------------------------------------- under vmap
def check_vmap_randomness() -> None:
    """A random number is drawn: refused inside a ``vmap(randomness="error")`` (the
    default), as PyTorch refuses it; inside ``randomness="different"`` only the
    functions that draw one sample per example (:func:`per_example`) may draw."""
    modes = {vmap.randomness for vmap in state.transforms.levels}
    if "error" in modes:
        raise RuntimeError(
            "vmap: called random operation while in randomness error mode. Please either use "
            "the 'same' or 'different' randomness flags on vmap or perform the randomness "
            "operation out of vmap"
        )
    if "different" in modes and not state.transforms.drawing_per_example:
        raise RuntimeError(
            "vmap: this random operation has no batching rule for randomness='different' in "
            "the workbench (rand, randn, randint, normal with numbers, their _like forms, "
            "dropout and the in-place fills have one): use randomness='same', or draw "
            "outside vmap"
        )


def per_example(shape: tuple, draw):
    """``draw(shape)``, or inside ``vmap(randomness="different")`` one sample per example:
    ``draw`` of the batch sizes of those vmaps (outermost first) then ``shape``, as
    PyTorch draws it. Returns the values and the levels they are batched at (see
    :func:`batched_at`)."""
    levels = [vmap for vmap in state.transforms.levels if vmap.randomness == "different"]
    if not levels:
        return draw(shape), ()
    with state.drawing_per_example():
        values = draw((*(vmap.size for vmap in levels), *shape))
    return values, tuple(vmap.level for vmap in levels)


def batched_at(tensor, levels: tuple):
    """``tensor``, whose first dims are the batches of the vmaps at ``levels``, as a
    batched tensor at each of them (the innermost last)."""
    from ..func.batched import wrap  # (a higher layer: only under vmap)

    for level in levels:
        tensor = wrap(tensor, level)
    return tensor


def _box_muller(data: np.ndarray, mean: float, std: float) -> np.ndarray:
    """PyTorch's ``normal_fill_16`` on whole blocks: in each block of 16 uniforms,
    u₁ = 1 − data[j] and u₂ = data[j + 8] for j < 8 give the values j and j + 8."""
    blocks = data.reshape(-1, 2, BLOCK // 2)
    u1, u2 = 1 - blocks[:, 0], blocks[:, 1]
    radius = np.sqrt(-2 * np.log(u1))
    theta = data.dtype.type(TWO_PI) * u2
    out = np.stack([radius * np.cos(theta), radius * np.sin(theta)], axis=1)
    if data.dtype == np.float32:  # PyTorch fuses z · std + mean: float64, then one rounding
        return (out * np.float64(np.float32(std)) + np.float32(mean)).astype(np.float32).ravel()
    return (out * std + mean).reshape(-1)


default_generator = Generator()


def generator_arg(op: str, generator) -> Generator:
    """The generator a random function draws from: ``generator=`` or the default one."""
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(
            f"{op}(): argument 'generator' must be a workbench.Generator, not "
            f"{type(generator).__name__}"
        )
    return generator


def manual_seed(seed) -> Generator:
    """Seed the default generator (behind rand, randn, dropout, init and DataLoader).
    As ``torch.manual_seed``, the seed goes through ``int()``: 1.5 seeds as 1, and what
    ``int()`` refuses is refused with the error kind it gives (TypeError, ValueError...)."""
    try:
        value = int(seed)
    except (TypeError, ValueError, OverflowError) as error:
        raise type(error)(
            f"manual_seed(): the seed must be an int, got {seed!r}: {error}"
        ) from None
    return default_generator.manual_seed(value)


def seed() -> int:
    """Seed the default generator from the operating system's entropy; return the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state (a uint8 tensor), for :func:`set_rng_state`."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)
