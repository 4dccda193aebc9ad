"""bfloat16 and float16 as PyTorch 2.13 has them: creation, promotion, every registry op
(values and gradients) and a training step, against PyTorch within its tolerances."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from tests.samples import all_samples

torch = pytest.importorskip("torch")

SMALL = {"bfloat16": (wb.bfloat16, torch.bfloat16), "float16": (wb.float16, torch.float16)}
# torch.testing.assert_close's defaults for these dtypes: (rtol, atol).
TOLERANCE = {"bfloat16": (1.6e-2, 1e-5), "float16": (1e-3, 1e-5)}

TORCH_DTYPES = {
    wb.bfloat16: torch.bfloat16,
    wb.float16: torch.float16,
    wb.float32: torch.float32,
    wb.float64: torch.float64,
    wb.complex64: torch.complex64,
    wb.complex128: torch.complex128,
    wb.int64: torch.int64,
    wb.int32: torch.int32,
    wb.bool: torch.bool,
}
OUR_DTYPES = {v: k for k, v in TORCH_DTYPES.items()}


def _dtype_of(t) -> np.dtype:
    return OUR_DTYPES[t.dtype]


# ------------------------------------------------------------------ creation
def test_the_dtypes_and_their_kind():
    assert wb.bfloat16.name == "bfloat16" and wb.half is wb.float16
    assert wb.bfloat16.kind == "V"  # ml_dtypes' bfloat16: numpy calls it void
    assert wb.core.dtypes.kind(wb.bfloat16) == "f"


@pytest.mark.parametrize("name", SMALL)
def test_creation_conversion_and_requires_grad(name):
    ours, theirs = SMALL[name]
    x = wb.tensor([1.0, 2.3, -0.7], dtype=ours, requires_grad=True)
    t = torch.tensor([1.0, 2.3, -0.7], dtype=theirs)
    assert x.dtype == ours and x.requires_grad
    np.testing.assert_array_equal(x.detach().float().numpy(), t.float().numpy())  # same rounding
    assert isinstance(x[1].item(), float) and x[1].item() == t[1].item()
    for factory in (wb.zeros, wb.ones, wb.randn, wb.rand, wb.empty):
        assert factory(2, 3, dtype=ours).dtype == ours
    assert wb.full((2,), 1.5, dtype=ours).dtype == ours
    assert wb.arange(0, 3, dtype=ours).dtype == ours
    y = wb.tensor([1.0, 2.0])
    assert y.half().dtype == wb.float16 and y.bfloat16().dtype == wb.bfloat16
    assert y.to(ours).float().dtype == wb.float32 and y.to(dtype=ours).dtype == ours
    assert f"dtype={name}" in repr(x)


@pytest.mark.parametrize("name", SMALL)
def test_as_the_default_dtype(name):
    ours, theirs = SMALL[name]
    before = wb.get_default_dtype()
    wb.set_default_dtype(ours)
    try:
        assert wb.tensor([1.5]).dtype == ours
        assert (wb.ones(2, dtype=wb.int64) * 1.5).dtype == ours
    finally:
        wb.set_default_dtype(before)
    assert wb.tensor([1.5]).dtype == wb.float32


FILLS = {
    "full": lambda lib, n, dtype, v: lib.full((n,), v, dtype=dtype),
    "full 0-d": lambda lib, n, dtype, v: lib.full((), v, dtype=dtype),
    "full_like": lambda lib, n, dtype, v: lib.full_like(lib.zeros(n, dtype=dtype), v),
    "new_full": lambda lib, n, dtype, v: lib.zeros(2, dtype=dtype).new_full((n,), v),
    "fill_": lambda lib, n, dtype, v: lib.zeros(n, dtype=dtype).fill_(v),
    "fill_ a view": lambda lib, n, dtype, v: lib.zeros(4, dtype=dtype)[1 : 1 + n].fill_(v),
    "linspace": lambda lib, n, dtype, v: lib.linspace(v, v, n, dtype=dtype),
    "masked_fill": lambda lib, n, dtype, v: lib.zeros(n, dtype=dtype).masked_fill(
        lib.ones(n, dtype=lib.bool), v
    ),
    "tensor": lambda lib, n, dtype, v: lib.tensor([v] * n, dtype=dtype),
}


@pytest.mark.filterwarnings("ignore:ComplexHalf")
@pytest.mark.parametrize("count", [0, 1, 2])
@pytest.mark.parametrize("fill", sorted(FILLS))
def test_a_value_beyond_the_dtype_fills_as_pytorch(fill, count):
    """PyTorch checks a fill value against the dtype's largest finite value (its
    RuntimeError "value cannot be converted ... without overflow"), except where its CPU
    fill writes a single float16 or bfloat16 element (``scalar_fill``): that value is
    rounded, to inf beyond the largest (``full((1,), 70000., dtype=float16)``). tensor()
    rounds without a check; masked_fill checks always. The workbench
    refused the single elements too (issue 36)."""

    def outcomes(lib):
        found = {}
        for dtype in ("float16", "bfloat16", "float32"):
            for value in (7e4, -7e4, 65519.0, 1e39, 1e300, 1 + 1j):
                try:
                    made = FILLS[fill](lib, count, getattr(lib, dtype), value)
                except (RuntimeError, TypeError) as error:
                    found[dtype, value] = type(error).__name__
                else:
                    found[dtype, value] = str(made.dtype).split(".")[-1], made.float().tolist()
        return found

    assert outcomes(wb) == outcomes(torch)


def test_conversions_are_differentiable():
    x = wb.tensor([1.5, -2.0], requires_grad=True)
    x.bfloat16().half().float().sum().backward()
    assert x.grad.dtype == wb.float32
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


def test_integer_tensors_still_refuse_requires_grad():
    with pytest.raises(RuntimeError, match="floating point"):
        wb.tensor([1, 2], requires_grad=True)


# ------------------------------------------------------------------ promotion
def _operand(kind, dtype, framework):
    """A tensor with dims, a 0-d tensor, or a Python number, as both frameworks build it."""
    if kind == "number":
        return dtype  # the number itself
    shape = (2,) if kind == "tensor" else ()
    if framework is torch:
        return torch.ones(shape, dtype=TORCH_DTYPES[dtype])
    return wb.ones(*shape, dtype=dtype)


PROMOTIONS = [
    # (left kind, left dtype, right kind, right dtype-or-number)
    ("tensor", wb.bfloat16, "tensor", wb.float16),  # → float32: neither holds the other
    ("tensor", wb.bfloat16, "tensor", wb.float32),
    ("tensor", wb.bfloat16, "tensor", wb.float64),
    ("tensor", wb.bfloat16, "tensor", wb.complex64),
    ("tensor", wb.bfloat16, "tensor", wb.complex128),
    ("tensor", wb.bfloat16, "tensor", wb.int64),
    ("tensor", wb.bfloat16, "tensor", wb.bool),
    ("tensor", wb.float16, "tensor", wb.int32),
    ("tensor", wb.float16, "tensor", wb.complex64),
    ("tensor", wb.float32, "zero_d", wb.bfloat16),  # float32 stays float32
    ("tensor", wb.float16, "zero_d", wb.bfloat16),  # same category: the tensor wins
    ("tensor", wb.bfloat16, "zero_d", wb.float64),
    ("tensor", wb.int64, "zero_d", wb.bfloat16),  # a higher category: bfloat16
    ("tensor", wb.bfloat16, "zero_d", wb.complex128),  # → complex64
    ("zero_d", wb.bfloat16, "zero_d", wb.float16),
    ("tensor", wb.bfloat16, "number", 2.5),
    ("tensor", wb.bfloat16, "number", 3),
    ("tensor", wb.bfloat16, "number", 1j),  # → complex64
    ("tensor", wb.float16, "number", 2.5),
    ("tensor", wb.float32, "number", 1j),  # → complex64
    ("tensor", wb.complex64, "tensor", wb.float64),  # → complex128
    ("tensor", wb.complex64, "zero_d", wb.float64),  # → complex64
    ("tensor", wb.float64, "tensor", wb.complex64),  # → complex128
    ("tensor", wb.int64, "number", 1j),  # → complex64
]


@pytest.mark.parametrize("left_kind, left, right_kind, right", PROMOTIONS, ids=str)
def test_promotion_as_torch(left_kind, left, right_kind, right):
    a_ours, b_ours = _operand(left_kind, left, wb), _operand(right_kind, right, wb)
    a_theirs, b_theirs = _operand(left_kind, left, torch), _operand(right_kind, right, torch)
    expected = OUR_DTYPES[torch.result_type(a_theirs, b_theirs)]
    assert wb.result_type(a_ours, b_ours) == expected
    for op in (lambda a, b: a * b, lambda a, b: b + a):
        out = op(a_ours, b_ours)
        assert out.dtype == _dtype_of(op(a_theirs, b_theirs)) == expected


def test_float16_times_a_complex_number_is_complex64_where_torch_has_complex32():
    """numpy has no complex32 (PyTorch's experimental ComplexHalf): the one difference."""
    with pytest.warns(UserWarning, match="ComplexHalf support is experimental"):
        assert (torch.ones(2, dtype=torch.float16) * 1j).dtype == torch.complex32
    assert (wb.ones(2, dtype=wb.float16) * 1j).dtype == wb.complex64


def test_complex_from_small_parts_is_refused():
    """bfloat16 parts: refused as PyTorch does. float16 parts: PyTorch makes complex32,
    which numpy lacks, so they are refused with a way out."""
    with pytest.raises(RuntimeError, match="Expected both inputs to be Half, Float or Double"):
        torch.complex(torch.ones(2, dtype=torch.bfloat16), torch.ones(2, dtype=torch.bfloat16))
    with pytest.raises(RuntimeError, match="Expected both inputs to be Half, Float or Double"):
        wb.complex(wb.ones(2, dtype=wb.bfloat16), wb.ones(2, dtype=wb.bfloat16))
    with pytest.raises(RuntimeError, match=r"complex32.*\.float\(\)"):
        wb.complex(wb.ones(2, dtype=wb.float16), wb.ones(2, dtype=wb.float16))


# ------------------------------------------------------- accumulating in float32
@pytest.mark.parametrize("name", SMALL)
def test_sums_and_matmul_accumulate_in_float32_and_return_the_dtype(name):
    """Adding 4096 ones in bfloat16 itself would stop at 256 (256 + 1 rounds back to 256)."""
    ours, theirs = SMALL[name]
    x, t = wb.ones(4096, dtype=ours), torch.ones(4096, dtype=theirs)
    for fn in (
        lambda v: v.sum(),
        lambda v: v.mean() * 4096,
        lambda v: v.reshape(1, -1) @ v.reshape(-1, 1),
        lambda v: v.cumsum(0)[-1],
        lambda v: (
            wb.nn.functional.linear(v.reshape(1, -1), v.reshape(1, -1))
            if isinstance(v, wb.Tensor)
            else torch.nn.functional.linear(v.reshape(1, -1), v.reshape(1, -1))
        ),
    ):
        got, want = fn(x), fn(t)
        assert got.dtype == ours == _dtype_of(want)
        assert float(got.float().sum()) == float(want.float().sum()) == 4096.0


# ------------------------------------------------------- every registry op
def _real_floats(sample) -> bool:
    """A sample whose array inputs are real (the complex ones are tests/test_complex.py's)."""
    return not any(isinstance(a, np.ndarray) and a.dtype.kind == "c" for a in sample.arrays())


def _small_samples():
    samples = [
        s
        for s in all_samples()
        if s.torch_fn is not None and _real_floats(s) and not s.name.startswith("complex")
    ]
    return [(s, name) for s in samples for name in SMALL]


def _inputs(sample, name):
    ours_dtype, theirs_dtype = SMALL[name]
    ours, theirs = [], []
    for array, req in zip(sample.arrays(), sample.requires()):
        if isinstance(array, np.ndarray) and array.dtype.kind == "f":
            small = array.astype(ours_dtype)  # both get the same rounded values
            ours.append(wb.tensor(small, requires_grad=req))
            theirs.append(torch.tensor(small.astype(np.float32), dtype=theirs_dtype))
            theirs[-1].requires_grad_(req)
        elif isinstance(array, np.ndarray):
            ours.append(wb.tensor(array))
            theirs.append(torch.tensor(array))
        else:
            ours.append(array)
            theirs.append(array)
    return ours, theirs


def assert_close_as_torch(ours: wb.Tensor, theirs, name: str, what: str) -> None:
    """PyTorch's default tolerances for ``name``, with atol measured against the tensor's
    largest element: results of sums with cancellation (a gradient summed over a batch)
    are only accurate to rtol of the terms, so an element near 0 is judged on that scale."""
    assert ours.dtype == _dtype_of(theirs), f"{what} dtype"
    got = ours.detach().to(wb.float64).numpy()
    want = theirs.detach().double().numpy()
    rtol, atol = TOLERANCE[name]
    atol = max(atol, rtol * float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


@pytest.mark.parametrize(
    "sample, name", _small_samples(), ids=lambda v: v if isinstance(v, str) else v.name
)
def test_registry_sample_matches_torch(sample, name):
    ours_in, theirs_in = _inputs(sample, name)
    ours, theirs = sample.fn(*ours_in), sample.torch_fn(*theirs_in)
    assert_close_as_torch(ours, theirs, name, "value")
    if not ours.requires_grad:
        assert not theirs.requires_grad
        return
    wanted = [i for i, r in enumerate(sample.requires()) if r]
    cotangent = np.random.default_rng(7).standard_normal(ours.shape).astype(ours.dtype)
    ours_g = wb.autograd.grad(
        ours, [ours_in[i] for i in wanted], wb.tensor(cotangent), allow_unused=True
    )
    theirs_g = torch.autograd.grad(
        theirs,
        [theirs_in[i] for i in wanted],
        torch.tensor(cotangent.astype(np.float32), dtype=theirs.dtype),
        allow_unused=True,
    )
    for a, b in zip(ours_g, theirs_g):
        if b is None:
            assert a is None or not np.any(a.float().numpy())
            continue
        assert_close_as_torch(a, b, name, "gradient")


# ---------------------------------------------------------- a training step
def _network_step(framework, dtype, weights, x, target, steps=3):
    """Linear(4→8) → tanh → Linear(8→2), MSE loss, SGD(lr=0.1): losses and final weights."""
    nn = framework.nn
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    with framework.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(framework.tensor(w))
    model = model.to(dtype)
    optim = framework.optim.SGD(model.parameters(), lr=0.1)
    x, target = framework.tensor(x).to(dtype), framework.tensor(target).to(dtype)
    losses = []
    for _ in range(steps):
        optim.zero_grad()
        loss = nn.functional.mse_loss(model(x), target)
        loss.backward()
        optim.step()
        losses.append(loss.detach())
    return losses, [p.detach() for p in model.parameters()]


@pytest.mark.parametrize("name", SMALL)
def test_network_step_matches_torch(name):
    ours_dtype, theirs_dtype = SMALL[name]
    rng = np.random.default_rng(0)
    shapes = [(8, 4), (8,), (2, 8), (2,)]
    weights = [rng.uniform(-0.5, 0.5, s).astype(np.float32) for s in shapes]
    x = rng.standard_normal((16, 4)).astype(np.float32)
    target = rng.standard_normal((16, 2)).astype(np.float32)
    ours = _network_step(wb, ours_dtype, weights, x, target)
    theirs = _network_step(torch, theirs_dtype, weights, x, target)
    for a, b in zip(ours[0], theirs[0]):
        assert_close_as_torch(a, b, name, "loss")
    assert ours[0][-1].float().item() < ours[0][0].float().item()  # it learns
    for a, b in zip(ours[1], theirs[1]):
        assert a.dtype == ours_dtype
        assert_close_as_torch(a, b, name, "parameter after 3 steps")


# ------------------------------------------- every reduction and scan, long inputs
# How each op's answer compares with PyTorch's CPU kernel on 4,096 elements:
# "same": bit for bit; "rounded": ours is the exact answer correctly rounded, PyTorch's
# last-dim softmax and log_softmax kernels for these dtypes round a partial result to the
# dtype (log_softmax is off by up to 3 units in the last place in bfloat16, 17 in float16),
# so the two agree within assert_close's tolerances; "prod": PyTorch's own answer depends
# on the CPU's vector width (workbench/core/dtypes.py), ours is the float32 product rounded
# once and never further from the exact one; "ulp": addmm (nn.Linear's node) computes
# in float32 and rounds once, PyTorch's bfloat16 kernel sums in another order: a few
# elements in 4,096 differ by one unit in the last place. matmul is "ulp" for the same
# reason: PyTorch's half and bfloat16 matmul sums in float32 in an order its CPU kernel
# picks for the machine (CI's machine differed from ours in 2 of 4,096 elements, by one
# unit), so only the once-rounded result's distance is the machine-independent claim.
ACCUMULATING = {
    "sum": ("same", lambda v: v.sum(), lambda v: v.sum(0)),
    "mean": ("same", lambda v: v.mean(), lambda v: v.mean(1)),
    "var": ("same", lambda v: v.var(), lambda v: v.var(0)),
    "std": ("same", lambda v: v.std(), lambda v: v.std(1, correction=0)),
    "norm": ("same", lambda v: v.norm(), lambda v: v.norm(3, 1)),
    "amax": ("same", lambda v: v.amax(), lambda v: v.amax(0)),
    "amin": ("same", lambda v: v.amin(), lambda v: v.amin(1)),
    "max_dim": ("same", lambda v: v.max(0)[0], lambda v: v.max(1)[0]),
    "argmax": ("same", lambda v: v.argmax(), lambda v: v.argmax(0)),
    "argmin": ("same", lambda v: v.argmin(), lambda v: v.argmin(1)),
    "logsumexp": ("same", lambda v: v.logsumexp(0), lambda v: v.logsumexp(1)),
    "cumsum": ("same", lambda v: v.cumsum(0), lambda v: v.cumsum(1)),
    "cumprod": ("same", lambda v: v.cumprod(0), lambda v: v.cumprod(1)),
    "matmul": ("ulp", lambda v: v @ v, lambda v: v @ v.T),
    "softmax": ("rounded", lambda v: v.softmax(0), lambda v: v.softmax(1)),
    "log_softmax": ("rounded", lambda v: v.log_softmax(0), lambda v: v.log_softmax(1)),
    "prod": ("prod", lambda v: v.prod(), lambda v: v.prod(1)),
    "max": ("same", lambda v: v.max(), lambda v: v.max()),
    "min": ("same", lambda v: v.min(), lambda v: v.min()),
    "all": ("same", lambda v: (v > 0).all(), lambda v: (v > -1).all(1)),
    "any": ("same", lambda v: (v > 5).any(), lambda v: (v > 5).any(0)),
    "addmm": ("ulp", lambda v: _addmm(v.reshape(64, 64)), lambda v: _addmm(v)),
}


def _addmm(m):
    """``bias + m @ mᵀ`` with the first row as the bias: nn.Linear's one node."""
    library = wb if isinstance(m, wb.Tensor) else torch
    return library.addmm(m[0], m, m.T)


# Registered in the modules of reductions, scans and softmax, yet no reduction a user calls:
NOT_ACCUMULATING = {"first_extreme_mask", "log_softmax_backward"}


def test_every_reduction_and_scan_is_in_the_long_input_table():
    from workbench.ops.registry import OPS

    modules = {f"workbench.ops.{m}" for m in ("reductions", "scans", "softmax", "linalg")}
    registered = {n for n, op in OPS.items() if op.forward.__module__ in modules}
    assert registered - NOT_ACCUMULATING - {"linear"} == set(ACCUMULATING)


def _long_input(op: str, shape) -> np.ndarray:
    """Products near 1 (so 4,096 of them stay in range), everything else N(0, 3²)."""
    rng = np.random.default_rng(sum(map(ord, op)))
    if op in ("prod", "cumprod"):
        return 1 + rng.standard_normal(shape) * 0.01
    return rng.standard_normal(shape) * 3


def _log_softmax_in_float64(data: np.ndarray, dim: int) -> np.ndarray:
    x = data.astype(np.float64)
    shifted = x - x.max(axis=dim, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))


def _in_small_ulps(got: np.ndarray, want: np.ndarray, dtype) -> np.ndarray:
    """|got − want| in units of the small dtype's last place at ``want``."""
    info = wb.core.dtypes.finfo(dtype)
    magnitude = np.maximum(np.abs(want), float(info.smallest_normal))
    ulp = float(info.eps) * 2.0 ** np.floor(np.log2(magnitude))
    return np.abs(got - want) / ulp


@pytest.mark.parametrize("shape", [(4096,), (64, 64)], ids=["1-d", "2-d"])
@pytest.mark.parametrize("op", ACCUMULATING)
@pytest.mark.parametrize("name", SMALL)
def test_long_reductions_and_scans_accumulate_as_torch(name, op, shape):
    ours_dtype, theirs_dtype = SMALL[name]
    how, whole, along = ACCUMULATING[op]
    fn = whole if len(shape) == 1 else along
    if op == "matmul" and len(shape) == 1:
        fn = lambda v: v @ v  # noqa: E731 - a dot product of 4,096 terms
    data = _long_input(op, shape).astype(ours_dtype)
    x = wb.tensor(data)
    t = torch.tensor(data.astype(np.float32)).to(theirs_dtype)
    got, want = fn(x), fn(t)
    assert got.dtype == _dtype_of(want)
    got, want = got.to(wb.float64).numpy(), want.double().numpy()
    if how == "same":
        np.testing.assert_array_equal(got, want, err_msg=f"{op} in {name}")
    elif how == "rounded":
        exact = _log_softmax_in_float64(data, dim=len(shape) - 1)
        exact = np.exp(exact) if op == "softmax" else exact
        assert _in_small_ulps(got, exact, ours_dtype).max() <= 0.5
        assert_close_as_torch(fn(x), fn(t), name, op)
    elif how == "ulp":
        assert _in_small_ulps(got, want, ours_dtype).max() <= 1
    else:  # prod: PyTorch's error depends on the machine; ours is never the larger
        exact = np.prod(data.astype(np.float64), axis=-1 if len(shape) == 2 else None)
        assert np.all(np.abs(got - exact) <= np.abs(want - exact) + 1e-12)
        as_float32 = np.prod(data.astype(np.float32), axis=-1 if len(shape) == 2 else None)
        np.testing.assert_array_equal(got, as_float32.astype(ours_dtype).astype(np.float64))


@pytest.mark.parametrize("name", SMALL)
def test_cumprod_of_200_times_1_01_accumulates_in_float32(name):
    """Accumulating in bfloat16 itself gives 4.25; PyTorch gives 4.75; exactly 4.7448."""
    ours_dtype, theirs_dtype = SMALL[name]
    got = wb.full((200,), 1.01, dtype=ours_dtype).cumprod(0)[-1].item()
    want = torch.full((200,), 1.01, dtype=theirs_dtype).cumprod(0)[-1].item()
    assert got == want
    if name == "bfloat16":
        assert got == 4.75


@pytest.mark.parametrize("op", ["sum", "prod", "cumsum", "cumprod"])
@pytest.mark.parametrize("name", SMALL)
def test_an_accumulating_op_given_a_dtype_returns_that_dtype(name, op):
    """PyTorch converts first, then accumulates as the dtype asked for (float64 here)."""
    ours_dtype, theirs_dtype = SMALL[name]
    data = _long_input("prod", (300,)).astype(ours_dtype)
    x, t = wb.tensor(data), torch.tensor(data.astype(np.float32)).to(theirs_dtype)
    args = (0,) if op.startswith("cum") else ()
    got = getattr(x, op)(*args, dtype=wb.float64)
    want = getattr(t, op)(*args, dtype=torch.float64)
    assert got.dtype == wb.float64 == _dtype_of(want)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
