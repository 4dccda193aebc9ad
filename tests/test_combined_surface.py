"""Features that pass their own tests, combined (issue 36): casts that end the graph,
``to()``'s arguments, gradients that must be 0 rather than NaN, and the public surface
around the registry's ops. Each case runs the same code on the workbench and on PyTorch
(``lib`` is ``wb`` or ``torch``) and compares what comes out, errors included."""

from __future__ import annotations

import math

import numpy as np
import pytest

import workbench as wb
from tests.helpers import torch

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch to compare with")
LIBS = [wb] + ([torch] if torch is not None else [])


def outcome(run, lib):
    """What ``run(lib)`` gives: its value as numpy/Python data, or the error's type name."""
    try:
        value = run(lib)
    except Exception as err:  # noqa: BLE001 - the type is what is compared
        return type(err).__name__
    return plain(value)


def plain(value):
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [plain(v) for v in value]
    if hasattr(value, "detach"):
        return value.detach().numpy().tolist()
    return value


def same_outcome(run):
    got, expected = outcome(run, wb), outcome(run, torch)
    assert got == expected, f"workbench {got!r}, PyTorch {expected!r}"


# ------------------------------------------------------------------ casts
CASTS = {
    "bool()": lambda x, lib: x.bool(),
    "long()": lambda x, lib: x.long(),
    "int()": lambda x, lib: x.int(),
    "to(int64)": lambda x, lib: x.to(lib.int64),
    "to(dtype=bool)": lambda x, lib: x.to(dtype=lib.bool),
    "type(int32)": lambda x, lib: x.type(lib.int32),
    "type('torch.LongTensor')": lambda x, lib: x.type("torch.LongTensor"),
}


@needs_torch
@pytest.mark.parametrize("cast", CASTS, ids=list(CASTS))
def test_integer_and_bool_casts_end_the_graph(cast):
    for lib in LIBS:
        x = lib.tensor([1.5, -2.0], requires_grad=True)
        y = CASTS[cast](x, lib)
        assert not y.requires_grad and y.grad_fn is None, (lib.__name__, cast)
        with pytest.raises(RuntimeError, match="does not require grad"):
            y.sum().backward()


@needs_torch
def test_a_mask_made_by_a_cast_is_a_constant():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        (x.bool().float() * x).sum().backward()
        return x.grad

    assert outcome(run, wb) == outcome(run, torch) == [1.0, 1.0]


@needs_torch
def test_forward_mode_tangent_stops_at_an_integer_cast():
    for lib, fwad in ((wb, wb.autograd.forward_ad), (torch, torch.autograd.forward_ad)):
        with fwad.dual_level():
            dual = fwad.make_dual(lib.tensor([1.0, 2.0]), lib.ones(2))
            assert fwad.unpack_dual(dual.long()).tangent is None, lib.__name__
            assert fwad.unpack_dual(dual.double()).tangent is not None, lib.__name__


TRANSFORMS_THROUGH_A_CAST = {  # x + (2x).long() has derivative 1; x · bool(x) has x's
    "grad of x + (2x).long()": lambda lib, x: lib.func.grad(lambda v: (v + (v * 2).long()).sum())(
        x
    ),
    "jvp of x * x.bool()": lambda lib, x: lib.func.jvp(lambda v: v * v.bool(), (x,), (x.cos(),)),
    "jacfwd of x * x.to(int32)": lambda lib, x: lib.func.jacfwd(lambda v: v * v.to(lib.int32))(x),
    "jacrev of x.int() * x": lambda lib, x: lib.func.jacrev(lambda v: v.int() * v)(x),
}


@needs_torch
@pytest.mark.parametrize("name", TRANSFORMS_THROUGH_A_CAST, ids=list(TRANSFORMS_THROUGH_A_CAST))
def test_a_transform_does_not_differentiate_through_an_integer_cast(name):
    """Issue 36: ``wb.func.grad`` and ``jvp`` differentiated through integer casts too."""
    same_outcome(lambda lib: TRANSFORMS_THROUGH_A_CAST[name](lib, lib.tensor([1.25, -2.5])))


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_to_with_copy_returns_a_new_tensor(dtype):
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0])
        y = x.to(getattr(lib, dtype), copy=True)
        assert y is not x
        y[0] = 9.0
        assert x.tolist() == [1.0, 2.0], lib.__name__
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        assert w.to(lib.float32, copy=True).grad_fn.name() == "ToCopyBackward0"


@needs_torch
def test_to_without_a_change_returns_self():
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0])
        assert x.to(lib.float32) is x and x.to("cpu") is x and x.to(x) is x
        assert x.to("cpu", lib.float32, False, False) is x


@needs_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda x, lib: x.to(lib.float64, nonblocking=True),
        lambda x, lib: x.to(device="cpu", colour="red"),
        lambda x, lib: x.to(lib.float64, False, False, True),
    ],
    ids=["misspelt keyword", "unknown keyword", "too many positional"],
)
def test_to_refuses_what_pytorch_refuses(call):
    same_outcome(lambda lib: call(lib.tensor([1.0]), lib))
    with pytest.raises(TypeError, match="to()"):
        call(wb.tensor([1.0]), wb)


@needs_torch
def test_module_to_an_integer_dtype_is_refused():
    for lib in LIBS:
        with pytest.raises(TypeError, match="floating point or complex"):
            lib.nn.Linear(2, 2).to(lib.int64)
    layer = wb.nn.Linear(2, 2).to("cpu", wb.float64)
    assert layer.weight.dtype == wb.float64


# ------------------------------------------------- gradients that are 0, not NaN
def _grad_of(loss_of, lib):
    x = lib.tensor([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0]], requires_grad=True)
    loss = loss_of(x, lib)
    loss.backward()
    return math.isnan(loss.item()), x.grad


ALL_IGNORED = {
    "cross_entropy": lambda x, lib: lib.nn.functional.cross_entropy(x, lib.tensor([-100, -100])),
    "nll_loss": lambda x, lib: lib.nn.functional.nll_loss(
        x.log_softmax(1), lib.tensor([-100, -100])
    ),
    "ignore_index=1": lambda x, lib: lib.nn.functional.cross_entropy(
        x, lib.tensor([1, 1]), ignore_index=1
    ),
    "class weights": lambda x, lib: lib.nn.functional.cross_entropy(
        x, lib.tensor([-100, -100]), weight=lib.tensor([1.0, 2.0, 3.0])
    ),
    "label_smoothing": lambda x, lib: lib.nn.functional.cross_entropy(
        x, lib.tensor([-100, -100]), label_smoothing=0.1
    ),
    "CrossEntropyLoss": lambda x, lib: lib.nn.CrossEntropyLoss()(x, lib.tensor([-100, -100])),
}


@needs_torch
@pytest.mark.parametrize("loss", ALL_IGNORED, ids=list(ALL_IGNORED))
def test_a_loss_with_every_target_ignored_has_zero_gradients(loss):
    """The mean over no targets is NaN (0/0), as PyTorch's; its gradient is 0, as
    PyTorch's: ignored rows are never written, so one optimizer step changes nothing."""
    for lib in LIBS:
        is_nan, grad = _grad_of(ALL_IGNORED[loss], lib)
        assert is_nan, lib.__name__
        assert grad.tolist() == [[0.0] * 3] * 2, (lib.__name__, grad)


@needs_torch
def test_a_zero_class_weight_still_gives_nan_as_pytorch():
    """Not ignored, but weighing 0: PyTorch divides by the total weight 0 and writes NaN."""
    run = lambda lib: _grad_of(  # noqa: E731
        lambda x, lib: lib.nn.functional.nll_loss(x, lib.tensor([1, 1]), weight=lib.zeros(3)),
        lib,
    )[1]
    assert str(outcome(run, wb)) == str(outcome(run, torch)) == str([[0.0, float("nan"), 0.0]] * 2)


NORM_ORDERS = [0.5, 0.3, -0.5, -1.0, 1.5, 3.0, 1.0, 2.0, math.inf, -math.inf]


@needs_torch
@pytest.mark.parametrize("p", NORM_ORDERS, ids=str)
@pytest.mark.parametrize(
    "values", [[0.0, 1.0, -2.0], [[0.0, 0.0], [1.0, 0.0]]], ids=["vector", "rows"]
)
def test_norm_gradient_at_a_zero_element_is_pytorchs(p, values):
    """For p < 1 the slope |x|^(p−1) is infinite at 0; PyTorch's norm_backward gives 0
    there (and 0 everywhere when the norm itself is 0, as for p < 0 with a zero)."""

    def run(lib):
        x = lib.tensor(values, requires_grad=True)
        dim = None if x.ndim == 1 else 1
        x.norm(p=p, dim=dim).sum().backward()
        return x.grad

    got, expected = outcome(run, wb), outcome(run, torch)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@needs_torch
def test_norm_zero_sends_no_gradient_as_pytorch():
    """p = 0 counts the nonzero elements: PyTorch's rule returns no gradient at all."""
    for lib in LIBS:
        x = lib.tensor([0.0, 1.0, -2.0], requires_grad=True)
        x.norm(p=0).backward()
        assert x.grad is None, lib.__name__


# ------------------------------------------------------------- modules and optimizers
@needs_torch
def test_a_module_registered_twice_is_saved_under_both_names():
    """PyTorch's state_dict walks every name a module is registered under (parameters()
    still lists a shared parameter once)."""

    def run(lib):
        shared = lib.nn.Linear(2, 2)
        model = lib.nn.Sequential(shared, lib.nn.ReLU(), shared)
        holder = lib.nn.Module()
        holder.a, holder.b = shared, shared
        return [list(model.state_dict()), list(holder.state_dict()), len(list(model.parameters()))]

    assert outcome(run, wb) == outcome(run, torch)
    assert run(wb)[1] == ["a.weight", "a.bias", "b.weight", "b.bias"]


@needs_torch
def test_a_module_registered_twice_loads_back():
    for lib in LIBS:
        shared = lib.nn.Linear(2, 2)
        model = lib.nn.Sequential(shared, shared)
        state = {k: v * 0 + 3 for k, v in model.state_dict().items()}
        assert model.load_state_dict(state) is not None
        assert shared.weight.tolist() == [[3.0, 3.0]] * 2, lib.__name__


@needs_torch
@pytest.mark.parametrize("name", ["Adam", "RMSprop", "SGD"])
def test_loaded_optimizer_state_takes_the_parameters_dtype(name):
    """PyTorch casts a loaded state's tensors (Adam's moments...) to a floating parameter's
    dtype: float32 moments saved from a float32 model must not step a float64 one."""

    def run(lib):
        single = lib.nn.Parameter(lib.ones(2))
        kwargs = {"lr": 0.1, "momentum": 0.9} if name != "Adam" else {"lr": 0.1}
        saved = getattr(lib.optim, name)([single], **kwargs)
        single.grad = lib.ones(2)
        saved.step()
        double = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
        loaded = getattr(lib.optim, name)([double], **kwargs)
        loaded.load_state_dict(saved.state_dict())
        state = loaded.state[double]
        return {k: str(v.dtype).split(".")[-1] for k, v in state.items() if k != "step"}

    assert outcome(run, wb) == outcome(run, torch)
    assert set(outcome(run, wb).values()) == {"float64"}


@needs_torch
@pytest.mark.parametrize("seed", [1.5, 2.0, True])
def test_module_manual_seed_takes_int_of_the_seed_as_pytorch(seed):
    """torch.manual_seed converts with int() (its Generator.manual_seed refuses floats:
    tests/test_surface_errors.py)."""
    assert wb.manual_seed(seed).initial_seed() == torch.manual_seed(seed).initial_seed()
    assert wb.rand(3).tolist() == pytest.approx(torch.rand(3).tolist())


# ------------------------------------------- what the refusals of issue 36 still let through
ACCEPTED = {
    "full complex": lambda lib: lib.full((2,), 1j),
    "full 0-d tensor": lambda lib: lib.full((2,), lib.tensor(1.5)),
    "full numpy float": lambda lib: lib.full((2,), np.float64(1.5)),
    "full bool": lambda lib: lib.full((2,), True),
    "full int64 max": lambda lib: lib.full((1,), 2**63 - 1),
    "tensor int64 max": lambda lib: lib.tensor([2**63 - 1, -(2**63)]),
    "leaky_relu 0-d slope": lambda lib: lib.nn.functional.leaky_relu(
        lib.tensor([-1.0, 1.0]), lib.tensor(0.5)
    ),
    "leaky_relu bool slope": lambda lib: lib.nn.functional.leaky_relu(lib.tensor([-1.0]), True),
    "reshape numpy int": lambda lib: lib.ones(2).reshape(np.int64(2)),
    "reshape 0-d int tensor": lambda lib: lib.ones(2).reshape(lib.tensor(2)),
    "mask and": lambda lib: (lib.tensor([1, 2]) > 1) & (lib.tensor([3, 0]) > 0),
    "mask or bool": lambda lib: (lib.tensor([1, 2]) > 1) | True,
    "mask xor": lambda lib: False ^ (lib.tensor([1, 2]) > 1),
    "mask invert": lambda lib: ~(lib.tensor([1, 2]) > 1),
    "outer mixed dtypes": lambda lib: lib.outer(lib.ones(2), lib.ones(2, dtype=lib.float64)),
    "matmul int64": lambda lib: lib.ones(2, 2, dtype=lib.int64) @ lib.ones(2, 2, dtype=lib.int64),
    "SGD lr inf": lambda lib: lib.optim.SGD(
        [lib.nn.Parameter(lib.ones(1))], lr=math.inf
    ).param_groups[0]["lr"],
    "roll tuple": lambda lib: lib.arange(4.0).roll((1,), (0,)),
}


@needs_torch
@pytest.mark.parametrize("run", ACCEPTED.values(), ids=list(ACCEPTED))
def test_what_pytorch_accepts_still_works(run):
    got, expected = outcome(run, wb), outcome(run, torch)
    assert got == expected, f"workbench {got!r}, PyTorch {expected!r}"
    assert not isinstance(got, str), got


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
def test_grad_outputs_of_another_real_dtype_are_cast_as_pytorch(dtype):
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        (g,) = lib.autograd.grad(x * 2, x, grad_outputs=lib.ones(2, dtype=getattr(lib, dtype)))
        return [g.tolist(), str(g.dtype).split(".")[-1]]

    assert outcome(run, wb) == outcome(run, torch)


@needs_torch
def test_backward_into_a_non_leaf_input_still_works():
    for lib in LIBS:
        x = lib.ones(2, requires_grad=True)
        h = x * 2
        (h * h).sum().backward(inputs=[h])
        assert h.grad.tolist() == [4.0, 4.0] and x.grad is None, lib.__name__
