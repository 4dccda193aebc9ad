"""The random numbers are PyTorch's: after the same seed, every random function draws what
PyTorch draws, and leaves the generator where PyTorch leaves it (the next draw agrees too).

Normals of 16 values or more are the exception in the last bits (PyTorch fills them with
vectorized log, sin and cos, and fuses the multiply-add of mean and std): they agree
within 10⁻⁶ relative. Everything else is compared for equality.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")
TF = torch.nn.functional
SEED = 2147483647


def pair(seed: int = SEED):
    return torch.Generator().manual_seed(seed), wb.Generator().manual_seed(seed)


def same(ours, theirs, close: bool = False) -> None:
    a, b = np.asarray(ours.detach().numpy()), theirs.detach().numpy()
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    if close:  # normals in blocks: the last bits
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    else:
        np.testing.assert_array_equal(a, b)


def in_step(tg, wg) -> None:
    """Both generators are at the same place: their next words agree."""
    same(wb.randint(0, 2**31, (4,), generator=wg), torch.randint(0, 2**31, (4,), generator=tg))


CALLS = {
    "rand": (lambda m, g: m.rand(5, 3, generator=g), False),
    "rand_float64": (lambda m, g: m.rand(7, generator=g, dtype=m.float64), False),
    "randn_few": (lambda m, g: m.randn(5, generator=g), False),
    "randn_scalar": (lambda m, g: m.randn((), generator=g), False),
    "randn_blocks": (lambda m, g: m.randn(27, 27, generator=g), True),
    "randn_float64_blocks": (lambda m, g: m.randn(40, generator=g, dtype=m.float64), False),
    "randint_high_size": (lambda m, g: m.randint(10, (6,), generator=g), False),
    "randint_low_high_size": (lambda m, g: m.randint(-5, 5, (2, 3), generator=g), False),
    "randint_wide": (lambda m, g: m.randint(0, 2**40, (3,), generator=g), False),
    "randperm": (lambda m, g: m.randperm(50, generator=g), False),
    "normal_size": (lambda m, g: m.normal(1.0, 2.0, (30,), generator=g), True),
    "normal_tensors": (
        lambda m, g: m.normal(m.tensor([0.0, 10.0]), m.tensor([1.0, 0.1]), generator=g),
        False,
    ),
    "bernoulli_probs": (lambda m, g: m.bernoulli(m.full((9,), 0.3), generator=g), False),
    "multinomial_one": (
        lambda m, g: m.multinomial(m.tensor([[0.1, 0.6, 0.3], [0.5, 0.0, 0.5]]), 1, generator=g),
        False,
    ),
    "multinomial_with_replacement": (
        lambda m, g: m.multinomial(m.tensor([0.2, 0.3, 0.5]), 8, True, generator=g),
        False,
    ),
    "multinomial_without": (
        lambda m, g: m.multinomial(m.tensor([1.0, 2.0, 3.0, 4.0]), 3, generator=g),
        False,
    ),
    "uniform_": (lambda m, g: m.empty(20).uniform_(-0.3, 0.3, generator=g), False),
    "normal_": (lambda m, g: m.empty(20, dtype=m.float64).normal_(2, 3, generator=g), True),
    "exponential_": (lambda m, g: m.empty(6).exponential_(2.0, generator=g), False),
    "bernoulli_": (lambda m, g: m.empty(12).bernoulli_(0.25, generator=g), False),
    "random_range": (lambda m, g: m.empty(5, dtype=m.int64).random_(3, 9, generator=g), False),
    "random_full": (lambda m, g: m.empty(5, dtype=m.int64).random_(generator=g), False),
    "rand_like": (lambda m, g: m.rand_like(m.zeros(2, 3), generator=g), False),
    "randn_like": (lambda m, g: m.randn_like(m.zeros(4), generator=g), False),
    "randint_like": (lambda m, g: m.randint_like(m.zeros(5), 2, 9, generator=g), False),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_random_function_draws_pytorchs_numbers(name):
    call, close = CALLS[name]
    tg, wg = pair()
    same(call(wb, wg), call(torch, tg), close)
    in_step(tg, wg)


def test_the_default_generator_and_manual_seed():
    torch.manual_seed(7)
    assert isinstance(wb.manual_seed(7), wb.Generator)
    same(wb.rand(4), torch.rand(4))
    same(wb.randn(3), torch.randn(3))
    assert wb.initial_seed() == torch.initial_seed() == 7
    same(wb.randint(0, 99, (5,)), torch.randint(0, 99, (5,)))


def test_a_cached_normal_carries_over_to_the_next_call():
    """PyTorch's Box–Muller makes pairs; an odd count keeps the second for the next call."""
    tg, wg = pair(3)
    for _ in range(3):
        same(
            wb.randn(1, generator=wg, dtype=wb.float64),
            torch.randn(1, generator=tg, dtype=torch.float64),
        )


def test_state_round_trips_and_manual_seed_forgets_the_cached_normal():
    wg = wb.Generator().manual_seed(5)
    wb.randn(1, generator=wg)  # leaves a cached value
    state = wg.get_state()
    first = wb.randn(4, generator=wg)
    wg.set_state(state)
    assert wb.equal(wb.randn(4, generator=wg), first)
    assert state.dtype == wb.uint8
    with pytest.raises(RuntimeError, match="uint8 tensor"):
        wg.set_state(wb.zeros(3))
    wg.manual_seed(5)
    tg = torch.Generator().manual_seed(5)
    same(wb.randn(3, generator=wg), torch.randn(3, generator=tg))


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.nn.Linear(7, 5),
        lambda m: m.nn.Conv2d(3, 4, 3),
        lambda m: m.nn.Embedding(6, 4),
        lambda m: m.nn.LazyLinear(3),
    ],
    ids=["Linear", "Conv2d", "Embedding", "LazyLinear"],
)
def test_layers_start_with_pytorchs_weights_after_the_same_seed(make):
    torch.manual_seed(11)
    wb.manual_seed(11)
    theirs, ours = make(torch), make(wb)
    if isinstance(ours, wb.nn.LazyLinear):
        theirs(torch.ones(2, 4))
        ours(wb.ones(2, 4))
    normals = isinstance(ours, wb.nn.Embedding)  # Embedding starts from normal_
    for a, b in zip(ours.parameters(), theirs.parameters()):
        same(a, b, close=normals)


def test_init_functions_draw_as_pytorchs():
    for init in ("xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_"):
        tg, wg = pair(21)
        theirs = getattr(torch.nn.init, init)(torch.empty(16, 9), generator=tg)
        ours = getattr(wb.nn.init, init)(wb.empty(16, 9), generator=wg)
        same(ours, theirs, close="normal" in init)


def test_dropout_drops_what_pytorch_drops():
    torch.manual_seed(4)
    wb.manual_seed(4)
    x = np.arange(1, 41, dtype=np.float32).reshape(5, 8)
    same(wb.nn.functional.dropout(wb.tensor(x), 0.3), TF.dropout(torch.tensor(x), 0.3))
    same(wb.nn.Dropout(0.5)(wb.tensor(x)), torch.nn.Dropout(0.5)(torch.tensor(x)))
    same(wb.rand(2), torch.rand(2))


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: wb.randint(5, 2, (3,)), RuntimeError, "from=5 >= to=2"),
        (lambda: wb.randint(5), TypeError, "size"),
        (lambda: wb.rand(2, generator=np.random.default_rng()), TypeError, "generator"),
        (lambda: wb.normal(0.0, -1.0, (2,)), RuntimeError, "std >= 0.0"),
        (lambda: wb.multinomial(wb.tensor([1.0, -1.0]), 1), RuntimeError, "element < 0"),
        (lambda: wb.multinomial(wb.tensor([0.0, 0.0]), 1), RuntimeError, "sum of probabilities"),
        (lambda: wb.multinomial(wb.tensor([1.0, 2.0]), 3), RuntimeError, "without replacement"),
        (lambda: wb.multinomial(wb.ones(2, 2, 2), 1), RuntimeError, "1 or 2 dim"),
        (lambda: wb.randperm(-1), RuntimeError, "non-negative"),
    ],
)
def test_bad_arguments_are_refused_as_pytorch_refuses_them(call, error, words):
    with pytest.raises(error, match=words):
        call()
