"""Features that pass their own tests, combined (issue 36): casts that end the graph,
``to()``'s arguments, gradients that must be 0 rather than NaN, and the public surface
around the registry's ops. Each case runs the same code on the workbench and on PyTorch
(``lib`` is ``wb`` or ``torch``) and compares what comes out, errors included."""

from __future__ import annotations

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
