"""Bad input on the public surface around the registry's ops (issue 36): modules, data
loading, seeds, schedulers, state dicts, ``grad``/``backward`` arguments, factories,
reshape, optimizers, bitwise ops, mixed-dtype matmul and traces.

The table style is tests/test_bad_input.py's (its ``case``, ``WB`` and ``TORCH``): each
row is one call written once for both libraries, the exception type PyTorch 2.13 raises,
and patterns the workbench's message must contain; the error must be raised by a
``raise`` in workbench's own code. ``torch=False`` marks a row where the workbench is
stricter than PyTorch on purpose (the comment says why).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import workbench as wb
import workbench.utils.data
from tests.test_bad_input import Lib, _assert_raised_by_workbench, _kinds, case
from tests.test_bad_input import torch as real_torch

# test_bad_input's libraries, with torch.utils.data as ``m.data``
WB = Lib(wb, nn=wb.nn, F=wb.nn.functional, optim=wb.optim, data=wb.utils.data)
TORCH = None
if real_torch is not None:
    TORCH = Lib(
        real_torch,
        nn=real_torch.nn,
        F=real_torch.nn.functional,
        optim=real_torch.optim,
        data=real_torch.utils.data,
    )


# ------------------------------------------------------------------ helpers
def plateau(m, min_lr):
    groups = [{"params": [m.nn.Parameter(m.ones(2))]}, {"params": [m.nn.Parameter(m.ones(1))]}]
    m.optim.lr_scheduler.ReduceLROnPlateau(m.optim.SGD(groups, lr=0.1), min_lr=min_lr)


def load_weight(m, value):
    layer = m.nn.Linear(2, 2)
    layer.load_state_dict({"weight": value, "bias": m.ones(2)})


def loader(m, **options):
    return m.data.DataLoader(m.data.TensorDataset(m.ones(4, 2)), **options)


def grad_of(m, inputs=None, **kwargs):
    """``grad`` of ``(x * 2).sum()`` for a leaf x, w.r.t. ``inputs(x)`` (default: x)."""
    x = m.ones(2, requires_grad=True)
    y = (x * 2).sum() if "grad_outputs" not in kwargs else x * 2
    m.autograd.grad(y, x if inputs is None else inputs(x), **kwargs)


def backward_into(m, make_inputs):
    x, t = m.ones(2, requires_grad=True), m.ones(2)
    (x * t).sum().backward(inputs=make_inputs(x, t))


def complex_root_real_gradient(m):
    z = m.ones(2, dtype=m.complex64, requires_grad=True)
    (z * 2).backward(m.ones(2))


def optimizer(m, name, **options):
    getattr(m.optim, name)([m.nn.Parameter(m.ones(2))], **options)


def matrices(m, *dtypes):
    return [m.ones(2, 2, dtype=getattr(m, d)) for d in dtypes]


NAN = float("nan")


def buffer_over_parameter(m):
    m.nn.Linear(2, 2).register_buffer("weight", m.ones(2))


def parameter_over_buffer(m):
    norm = m.nn.BatchNorm1d(2)
    norm.register_parameter("running_mean", m.nn.Parameter(m.ones(2)))


def module_over_parameter(m):
    m.nn.Linear(2, 2).add_module("bias", m.nn.ReLU())


# ----------------------------------------------------------------- the table
CASES = [
    # ------------------------------------------------------------- modules
    case(
        "register_buffer over a parameter",
        buffer_over_parameter,
        KeyError,
        r"register_buffer",
        r"'weight' already exists",
        r"Linear",
    ),
    case(
        "register_parameter over a buffer",
        parameter_over_buffer,
        KeyError,
        r"register_parameter",
        r"'running_mean' already exists",
    ),
    case(
        "add_module over a parameter",
        module_over_parameter,
        KeyError,
        r"add_module",
        r"'bias' already exists",
    ),
    case(
        "load_state_dict nested list",
        lambda m: load_weight(m, [[1.0, 2.0], [3.0, 4.0]]),
        RuntimeError,
        r"state_dict for Linear",
        r'"weight"',
        r"list",
    ),
    case(
        "load_state_dict number",
        lambda m: load_weight(m, 1.0),
        RuntimeError,
        r'"weight"',
        r"float",
    ),
    # --------------------------------------------------------- data loading
    case(
        "DataLoader prefetch_factor without workers",
        lambda m: loader(m, prefetch_factor=2),
        ValueError,
        r"DataLoader",
        r"prefetch_factor",
        r"num_workers > 0",
    ),
    case(
        "DataLoader persistent_workers without workers",
        lambda m: loader(m, persistent_workers=True),
        ValueError,
        r"persistent_workers",
        r"num_workers > 0",
    ),
    case(
        "DataLoader negative timeout",
        lambda m: loader(m, timeout=-1),
        ValueError,
        r"timeout",
        r"non-negative",
    ),
    # ---------------------------------------------------------------- seeds
    case(
        "Generator.manual_seed float",
        lambda m: m.Generator().manual_seed(1.5),
        RuntimeError,
        r"manual_seed",
        r"float",
    ),
    case(
        "Generator.manual_seed str",
        lambda m: m.Generator().manual_seed("3"),
        RuntimeError,
        r"manual_seed",
        r"str",
    ),
    case(
        "Generator.manual_seed bool",
        lambda m: m.Generator().manual_seed(True),
        RuntimeError,
        r"manual_seed",
        r"bool",
    ),
    case(
        "manual_seed beyond 64 bits",
        lambda m: m.manual_seed(2**64),
        ValueError,
        r"Overflow",
        r"manual_seed",
    ),
    # ----------------------------------------------------------- schedulers
    case(
        "ReduceLROnPlateau min_lr too long",
        lambda m: plateau(m, [0.1, 0.2, 0.3]),
        ValueError,
        r"ReduceLROnPlateau",
        r"expected 2 min_lrs",
        r"got 3",
    ),
    case(
        "ReduceLROnPlateau min_lr too short",
        lambda m: plateau(m, (0.1,)),
        ValueError,
        r"expected 2 min_lrs",
        r"got 1",
    ),
    # ------------------------------------------------- grad() and backward() arguments
    case(
        "grad inputs a str",
        lambda m: grad_of(m, lambda x: "x"),
        RuntimeError,
        r"grad\(\)",
        r"all inputs have to be Tensors",
        r"str",
    ),
    case(
        "grad inputs a list with None",
        lambda m: grad_of(m, lambda x: [x, None]),
        RuntimeError,
        r"inputs\[1\]",
        r"NoneType",
    ),
    # PyTorch's AssertionError ("Expected output to be a torch.Tensor"), saying which one
    case(
        "grad outputs a str",
        lambda m: m.autograd.grad(["y"], m.ones(1, requires_grad=True)),
        AssertionError,
        r"grad\(\)",
        r"outputs\[0\] is str",
    ),
    # the flags are read as PyTorch's engine reads them: a bool or an int from 0 to 255
    case(
        "backward retain_graph 256",
        lambda m: (m.ones(2, requires_grad=True) * 2).sum().backward(retain_graph=256),
        OverflowError,
        r"backward\(\)",
        r"'retain_graph'",
        r"256",
    ),
    case(
        "grad create_graph a numpy bool",
        lambda m: grad_of(m, create_graph=np.True_),
        TypeError,
        r"grad\(\)",
        r"'create_graph' must be bool",
    ),
    case(
        "grad materialize_grads a str",
        lambda m: grad_of(m, materialize_grads="yes"),
        TypeError,
        r"grad\(\)",
        r"'materialize_grads' must be bool",
    ),
    case(
        "grad allow_unused a float tensor",
        lambda m: grad_of(m, allow_unused=m.ones(())),
        TypeError,
        r"'allow_unused' must be bool",
        r"float32 Tensor",
    ),
    case(
        "backward tensors None",
        lambda m: m.autograd.backward(None),
        TypeError,
        r"backward\(\)",
        r"'tensors' must be a Tensor or a sequence of Tensors, not NoneType",
    ),
    case(
        "backward gradient a number",
        lambda m: (m.ones(2, requires_grad=True) * 2).backward(2.0),
        TypeError,
        r"backward\(\)",
        r"'gradient' must be a Tensor or a sequence of Tensors, not float",
    ),
    # PyTorch checks a gradient's type before whether its output needs one
    case(
        "backward a str gradient for a constant output",
        lambda m: m.autograd.backward([m.ones(2)], ["a"]),
        TypeError,
        r"gradients can be either Tensors or None, but got str",
    ),
    case(
        "backward inputs a str",
        lambda m: backward_into(m, lambda x, t: ["x"]),
        RuntimeError,
        r"backward\(\)",
        r"all inputs have to be Tensors",
        r"str",
    ),
    case(
        "backward inputs not requiring grad",
        lambda m: backward_into(m, lambda x, t: [x, t]),
        RuntimeError,
        r"backward\(\)",
        r"inputs\[1\] does not require grad",
    ),
    case(
        "backward input not requiring grad alone",
        lambda m: backward_into(m, lambda x, t: t),
        RuntimeError,
        r"inputs\[0\] does not require grad",
    ),
    case(
        "grad complex grad_outputs for a real output",
        lambda m: grad_of(m, grad_outputs=m.ones(2, dtype=m.complex64)),
        RuntimeError,
        r"same dtype",
        r"complex64",
        r"float32",
    ),
    case(
        "backward real gradient for a complex output",
        complex_root_real_gradient,
        RuntimeError,
        r"same dtype",
        r"grad_output\[0\] has a dtype of float32",
    ),
    # ------------------------------------------------------------------ factories
    case(
        "tensor nan as int64",
        lambda m: m.tensor([NAN], dtype=m.int64),
        RuntimeError,
        r"tensor\(\)",
        r"int64",
        r"overflow",
    ),
    case(
        "tensor inf as int32",
        lambda m: m.tensor([float("inf")], dtype=m.int32),
        RuntimeError,
        r"int32",
        r"overflow",
    ),
    case(
        "tensor 1e30 as int64",
        lambda m: m.tensor([1e30], dtype=m.int64),
        RuntimeError,
        r"int64",
        r"overflow",
    ),
    case(
        "tensor 2**63",
        lambda m: m.tensor([2**63]),
        ValueError,
        r"Overflow",
        r"9223372036854775808",
    ),
    case(
        "full str",
        lambda m: m.full((2,), "a"),
        TypeError,
        r"full\(\)",
        r"fill_value",
        r"str",
    ),
    case("full None", lambda m: m.full((2,), None), TypeError, r"fill_value", r"NoneType"),
    case("full list", lambda m: m.full((2,), [1]), TypeError, r"fill_value", r"list"),
    case(
        "full a tensor of two",
        lambda m: m.full((2,), m.ones(2)),
        TypeError,
        r"fill_value",
        r"Tensor",
    ),
    case(
        "full_like str",
        lambda m: m.full_like(m.ones(2), "a"),
        TypeError,
        r"full_like\(\)",
        r"fill_value",
    ),
    case(
        "full nan as int64",
        lambda m: m.full((2,), NAN, dtype=m.int64),
        RuntimeError,
        r"full",
        r"int64",
        r"overflow",
    ),
    case(
        "full beyond 64 bits",
        lambda m: m.full((2,), 2**70),
        OverflowError,
        r"full\(\)",
        r"fill_value",
    ),
    # ----------------------------------------------------------- activations' numbers
    case(
        "leaky_relu str slope",
        lambda m: m.F.leaky_relu(m.ones(3), "a"),
        TypeError,
        r"leaky_relu\(\)",
        r"negative_slope",
        r"str",
    ),
    case(
        "LeakyReLU str slope",
        lambda m: m.nn.LeakyReLU("a")(m.ones(3)),
        TypeError,
        r"negative_slope",
    ),
    case(
        "leaky_relu None slope",
        lambda m: m.F.leaky_relu(m.ones(3), None),
        TypeError,
        r"negative_slope",
        r"NoneType",
    ),
    case("elu None alpha", lambda m: m.F.elu(m.ones(3), None), TypeError, r"elu\(\)", r"alpha"),
    case(
        "softplus str beta",
        lambda m: m.F.softplus(m.ones(3), "a"),
        TypeError,
        r"softplus\(\)",
        r"beta",
    ),
    # ------------------------------------------------------------- shapes as ints
    case(
        "reshape 1.5",
        lambda m: m.ones(1).reshape(1.5),
        TypeError,
        r"reshape\(\)",
        r"tuple of ints",
        r"float",
    ),
    case(
        "reshape (1.5,)",
        lambda m: m.reshape(m.ones(1), (1.5,)),
        TypeError,
        r"reshape\(\)",
        r"float at pos 0",
    ),
    case("reshape 1.0", lambda m: m.ones(1).reshape(1.0), TypeError, r"reshape", r"float"),
    case("reshape True", lambda m: m.ones(1).reshape(True), TypeError, r"reshape", r"bool"),
    case("view 1.5", lambda m: m.ones(1).view(1.5), TypeError, r"view\(\)", r"float"),
    case("view None", lambda m: m.ones(2).view(2, None), TypeError, r"view", r"NoneType"),
    case("expand 1.5", lambda m: m.ones(2, 1).expand(2, 1.5), TypeError, r"expand", r"float"),
    case("permute 1.0", lambda m: m.ones(2, 1).permute(1.0, 0), TypeError, r"permute", r"float"),
    case(
        "split sizes start with True",
        lambda m: m.ones(2).split([True, 1]),
        TypeError,
        r"split\(\)",
        r"split_size",
        r"bool at pos 0",
    ),
    case(
        "split size beyond 64 bits",
        lambda m: m.ones(2).split([1, 2**70]),
        TypeError,
        r"split\(\)",
        r"split_size",
        r"pos 1",
    ),
    case(
        "index_select list index",
        lambda m: m.ones(2, 3).index_select(0, [0, 1]),
        TypeError,
        r"index_select\(\)",
        r"'index' must be Tensor, not list",
    ),
    case(
        "index_select 2-D float index",
        lambda m: m.ones(2, 3).index_select(0, m.ones(2, 2)),
        IndexError,
        r"index_select\(\)",
        r"vector",
    ),
    case(
        "masked_fill NaN into int64",
        lambda m: m.ones(2, dtype=m.int64).masked_fill(m.ones(2) > 0, NAN),
        RuntimeError,
        r"masked_fill\(\)",
        r"'value' is nan",
        r"int64 without overflow",
    ),
    case(
        "fill_ beyond float16",
        lambda m: m.ones(2, dtype=m.float16).fill_(1e5),
        RuntimeError,
        r"fill_\(\)",
        r"'value'",
        r"float16 without overflow",
    ),
    case(
        "fill_ 256 into uint8",
        lambda m: m.ones(2, dtype=m.uint8).fill_(256),
        RuntimeError,
        r"fill_\(\)",
        r"-255 to 255",
    ),
    case(  # an int wraps into an unsigned dtype, a negative float has nothing to wrap
        "full -1.0 into uint8",
        lambda m: m.full((2,), -1.0, dtype=m.uint8),
        RuntimeError,
        r"full\(\)",
        r"'fill_value'",
        r"0 to 255",
    ),
    case(
        "full_like -0.25 into uint8",
        lambda m: m.full_like(m.ones(2, dtype=m.uint8), -0.25),
        RuntimeError,
        r"full_like\(\)",
        r"uint8 without overflow",
    ),
    case(
        "full 1e39 into complex64",
        lambda m: m.full((2,), 1e39, dtype=m.complex64),
        RuntimeError,
        r"full\(\)",
        r"float32 without overflow",
    ),
    case(
        "linspace -1.0 into uint8",
        lambda m: m.linspace(0, -1.0, 3, dtype=m.uint8),
        RuntimeError,
        r"linspace\(\)",
        r"'end'",
        r"0 to 255",
    ),
    case(
        "linspace nan into int64",
        lambda m: m.linspace(float("nan"), 1, 3, dtype=m.int64),
        RuntimeError,
        r"linspace\(\)",
        r"'start'",
        r"int64 without overflow",
    ),
    case(
        "linspace beyond float16",
        lambda m: m.linspace(0, 7e4, 3, dtype=m.float16),
        RuntimeError,
        r"linspace\(\)",
        r"float16 without overflow",
    ),
    case(
        "linspace bool",
        lambda m: m.linspace(0, 1, 3, dtype=m.bool),
        NotImplementedError,
        r"linspace",
        r"Bool",
    ),
    case(
        "fill_ a 1-d tensor",
        lambda m: m.ones(2).fill_(m.ones(2)),
        RuntimeError,
        r"fill_\(\)",
        r"0-dimensional",
        r"\(2,\)",
    ),
    case(
        "clamp beyond float32",
        lambda m: m.ones(2).clamp(min=1e300),
        RuntimeError,
        r"clamp\(\)",
        r"'min'",
        r"float32 without overflow",
    ),
    case(
        "std complex correction",
        lambda m: m.ones(3).std(correction=1 + 1j),
        RuntimeError,
        r"std\(\)",
        r"'correction'",
    ),
    case(
        "squeeze dims repeated",
        lambda m: m.ones(1, 3).squeeze((0, 0)),
        RuntimeError,
        r"squeeze\(\)",
        r"dim 0 appears multiple times",
    ),
    case("torch.softmax None dim", lambda m: m.softmax(m.ones(2), None), TypeError, r"'dim'"),
    case(
        "view size beyond 64 bits",
        lambda m: m.ones(2, 3).view(3, 2**63),
        TypeError,
        r"view\(\)",
        r"'size'",
        r"pos 1",
    ),
    case("view True first", lambda m: m.ones(1).view(True, 1), TypeError, r"bool at pos 0"),
    case("split size True", lambda m: m.ones(2).split(True), TypeError, r"split", r"bool"),
    case(
        "roll beyond 64 bits",
        lambda m: m.ones(4).roll(2**70),
        ValueError,
        r"roll\(\)",
        r"shifts",
        r"1180591620717411303424",
    ),
    case("roll float", lambda m: m.ones(4).roll(1.5), TypeError, r"roll\(\)", r"float"),
    case(
        "std correction beyond 64 bits",
        lambda m: m.ones(2, 3).std(correction=2**70),
        OverflowError,
        r"std\(\)",
        r"correction",
    ),
    case(
        "nll_loss ignore_index beyond 64 bits",
        lambda m: m.F.nll_loss(m.ones(2, 3), m.tensor([0, 1]), ignore_index=2**70),
        ValueError,
        r"nll_loss\(\)",
        r"ignore_index",
    ),
    case(
        "cross_entropy ignore_index float",
        lambda m: m.F.cross_entropy(m.ones(2, 3), m.tensor([0, 1]), ignore_index=1.5),
        TypeError,
        r"ignore_index",
        r"float",
    ),
    # ---------------------------------------------------------------- optimizers
    case(
        "Adam lr nan",
        lambda m: optimizer(m, "Adam", lr=NAN),
        ValueError,
        r"Invalid learning rate: nan",
    ),
    case(
        "Adam eps nan",
        lambda m: optimizer(m, "Adam", eps=NAN),
        ValueError,
        r"Invalid epsilon value: nan",
    ),
    case(
        "Adam weight_decay nan",
        lambda m: optimizer(m, "Adam", weight_decay=NAN),
        ValueError,
        r"Invalid weight_decay value: nan",
    ),
    case(
        "RMSprop lr nan",
        lambda m: optimizer(m, "RMSprop", lr=NAN),
        ValueError,
        r"Invalid learning rate: nan",
    ),
    case(
        "RMSprop alpha nan",
        lambda m: optimizer(m, "RMSprop", alpha=NAN),
        ValueError,
        r"Invalid alpha value: nan",
    ),
    # Stricter than PyTorch, whose SGD checks lr < 0.0, which NaN passes: a NaN rate
    # makes every weight NaN at the first step (optim/optimizer.py, check_non_negative)
    case(
        "SGD lr nan",
        lambda m: optimizer(m, "SGD", lr=NAN),
        ValueError,
        r"Invalid learning rate: nan",
        torch=False,
    ),
    # ------------------------------------------------------- bitwise operators
    case(
        "and floats",
        lambda m: m.ones(2) & m.ones(2),
        NotImplementedError,
        r"bitwise_and",
        r"float32",
    ),
    case(
        "or float and int",
        lambda m: m.ones(2) | m.ones(2, dtype=m.int64),
        NotImplementedError,
        r"bitwise_or",
        r"float32",
    ),
    case("xor floats", lambda m: m.ones(2) ^ m.ones(2), NotImplementedError, r"bitwise_xor"),
    case(
        "and int with a float number",
        lambda m: m.ones(2, dtype=m.int64) & 1.5,
        NotImplementedError,
        r"bitwise_and",
        r"float",
    ),
    case("rand a float tensor", lambda m: 1 & m.ones(2), NotImplementedError, r"bitwise_and"),
    case(
        "and a numpy float",
        lambda m: (m.ones(2) > 0) & np.float64(1.0),
        NotImplementedError,
        r"bitwise_and",
        r"float64",
    ),
    case(
        "invert float",
        lambda m: ~m.ones(2),
        TypeError,
        r"~",
        r"integer and Boolean",
        r"float32",
    ),
    case("lshift floats", lambda m: m.ones(2) << 1, NotImplementedError, r"lshift"),
    case("rshift a float number", lambda m: m.tensor([4]) >> 1.5, NotImplementedError, r"rshift"),
    case(
        "lshift two bools",
        lambda m: m.tensor([True]) << m.tensor([True]),
        NotImplementedError,
        r"lshift",
        r"[Bb]ool",
    ),
    case("rlshift a float number", lambda m: 1.5 << m.tensor([1]), NotImplementedError, r"lshift"),
    # ---------------------------------------------------- mixed dtypes in products
    case(
        "matmul float32 @ float64",
        lambda m: m.matmul(*matrices(m, "float32", "float64")),
        RuntimeError,
        r"^matmul:",
        r"same dtype",
        r"float32 \(2, 2\)",
        r"float64 \(2, 2\)",
    ),
    case(
        "matmul bfloat16 @ float32",
        lambda m: m.matmul(*matrices(m, "bfloat16", "float32")),
        RuntimeError,
        r"matmul",
        r"bfloat16",
    ),
    case(
        "matmul float16 @ float32",
        lambda m: m.matmul(*matrices(m, "float16", "float32")),
        RuntimeError,
        r"float16",
    ),
    case(
        "matmul int64 @ float32",
        lambda m: m.matmul(*matrices(m, "int64", "float32")),
        RuntimeError,
        r"int64",
    ),
    case(
        "matmul vector float32 @ float64",
        lambda m: m.ones(2) @ m.ones(2, dtype=m.float64),
        RuntimeError,
        r"matmul",
        r"same dtype",
    ),
    case(
        "mm float32, float64",
        lambda m: m.mm(*matrices(m, "float32", "float64")),
        RuntimeError,
        r"^mm:",
        r"mat2 float64",
    ),
    case(
        "bmm float32, float64",
        lambda m: m.bmm(*[a[None] for a in matrices(m, "float32", "float64")]),
        RuntimeError,
        r"^bmm:",
    ),
    case(
        "mv float32, float64",
        lambda m: m.mv(m.ones(2, 2), m.ones(2, dtype=m.float64)),
        RuntimeError,
        r"^mv:",
        r"vec float64",
    ),
    case(
        "dot float32, float64",
        lambda m: m.dot(m.ones(2), m.ones(2, dtype=m.float64)),
        RuntimeError,
        r"^dot:",
    ),
    case(
        "linear float32 input, float64 weight",
        lambda m: m.F.linear(*matrices(m, "float32", "float64")),
        RuntimeError,
        r"^linear:",
        r"weight float64",
    ),
    case(
        "linear float64 bias",
        lambda m: m.F.linear(*matrices(m, "float32", "float32"), m.ones(2, dtype=m.float64)),
        RuntimeError,
        r"linear",
        r"bias float64",
    ),
    case(
        "linear bfloat16 input",
        lambda m: m.F.linear(*matrices(m, "bfloat16", "float32")),
        RuntimeError,
        r"bfloat16",
    ),
    case(
        "addmm float64 input",
        lambda m: m.addmm(*matrices(m, "float64", "float32", "float32")),
        RuntimeError,
        r"^addmm:",
        r"input float64",
    ),
    case(
        "addmm float64 mat2",
        lambda m: m.addmm(*matrices(m, "float32", "float32", "float64")),
        RuntimeError,
        r"mat2 float64",
    ),
    case(
        "Linear given float64",
        lambda m: m.nn.Linear(2, 2)(m.ones(2, 2, dtype=m.float64)),
        RuntimeError,
        r"linear",
        r"input float64",
        r"weight float32",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input_gets_an_error_that_teaches(case):
    with pytest.raises(case.error) as info:
        case.call(WB)
    message = str(info.value)
    for pattern in case.patterns:
        assert re.search(pattern, message), f"{pattern!r} not in {message!r}"
    _assert_raised_by_workbench(info.value)


@pytest.mark.skipif(TORCH is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("case", [c for c in CASES if c.torch is not False], ids=lambda c: c.id)
def test_pytorch_raises_the_same_kind_of_error(case):
    call = case.torch if callable(case.torch) else case.call
    with pytest.raises(Exception) as theirs:
        call(TORCH)
    with pytest.raises(Exception) as ours:
        case.call(WB)
    torch_kinds, our_kinds = _kinds(theirs.value), _kinds(ours.value)
    assert isinstance(theirs.value, case.error), f"torch raised {theirs.value!r}"
    assert torch_kinds <= our_kinds and our_kinds - {RuntimeError} <= torch_kinds, (
        f"torch: {type(theirs.value).__name__}: {theirs.value}\n"
        f"workbench: {type(ours.value).__name__}: {ours.value}"
    )


# ------------------------------------------------- what backward() accepts as PyTorch
FLAGS = {
    "2": lambda m: 2,
    "255": lambda m: 255,
    "0": lambda m: 0,
    "numpy int": lambda m: np.int64(1),
    "int tensor": lambda m: m.tensor(1),
    "bool tensor": lambda m: m.tensor(False),
}


def _twice(m, flag) -> list:
    """backward with ``retain_graph=flag``, then again: the second runs only if it kept."""
    x = m.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=flag(m))
    try:
        y.backward()
    except RuntimeError:
        return [x.grad.tolist(), "freed"]
    return [x.grad.tolist(), "kept"]


@pytest.mark.skipif(TORCH is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("flag", FLAGS.values(), ids=list(FLAGS))
def test_an_int_flag_reads_as_pytorch_reads_it(flag):
    """PyTorch's engine takes an int from 0 to 255 (or a one-element integer tensor) for
    a bool flag, True when not 0; the workbench too, so a program ports either way."""
    assert _twice(WB, flag) == _twice(real_torch, flag)


@pytest.mark.skipif(TORCH is None, reason="PyTorch is not installed")
def test_tensor_backward_takes_its_gradient_in_a_list_as_pytorch():
    """``y.backward(gradient)`` is ``autograd.backward(y, gradient)``: a sequence holding
    the one gradient is taken as well as the gradient itself."""
    grads = []
    for m in (wb, real_torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        (x * 3).backward([m.tensor([1.0, 10.0])])
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == [3.0, 30.0]


# PyTorch's parser checks only the first element of a list of ints: a later bool is 0 or 1
LATER_BOOLS = {
    "split": lambda m: m.ones(2, 3).split([1, True]),
    "view": lambda m: [m.ones(2, 3).view(6, True)],
    "reshape": lambda m: [m.ones(2, 3).reshape((6, True))],
    "permute": lambda m: [m.ones(2, 3).permute(0, True)],
    "expand": lambda m: [m.ones(3, 1).expand(2, 3, True)],
    "zeros": lambda m: [m.zeros(2, True)],
    "zeros, a 0-d int tensor as a size": lambda m: [m.zeros(m.tensor(2), np.int64(3))],
}


@pytest.mark.skipif(TORCH is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("call", LATER_BOOLS.values(), ids=list(LATER_BOOLS))
def test_a_bool_after_the_first_int_of_a_list_counts_as_an_int(call):
    theirs, ours = call(TORCH), call(WB)
    assert [tuple(t.shape) for t in ours] == [tuple(t.shape) for t in theirs]


# A number filled into a tensor (or a bound, a correction) is converted to its dtype as
# PyTorch converts a Scalar
FILLS = {
    "2.7 into int64": lambda m: m.ones(2, dtype=m.int64).fill_(2.7),
    "1.5 masked into int64": lambda m: m.ones(2, dtype=m.int64).masked_fill(m.ones(2) > 0, 1.5),
    "-1 into uint8 (wraps)": lambda m: m.ones(2, dtype=m.uint8).fill_(-1),
    "complex into bool": lambda m: m.ones(2, dtype=m.bool).fill_(1 + 2j),
    "1+0j into float32": lambda m: m.ones(2).fill_(1 + 0j),
    "inf into float16": lambda m: m.ones(2, dtype=m.float16).fill_(float("inf")),
    "2**64 - 1 into float32": lambda m: m.ones(2).masked_fill(m.ones(2) > 0, 2**64 - 1),
    "3 into bfloat16": lambda m: m.ones(2, dtype=m.bfloat16).masked_fill(m.ones(2) > 0, 3),
    "clamp to 1+0j": lambda m: m.arange(3.0).clamp(max=1 + 0j),
    "std with correction 1+0j": lambda m: m.arange(3.0).std(correction=1 + 0j),
    "full 1+0j as float32": lambda m: m.full((2,), 1 + 0j, dtype=m.float32),
    "full_like -255 into uint8": lambda m: m.full_like(m.ones(2, dtype=m.uint8), -255),
}


@pytest.mark.skipif(TORCH is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("call", FILLS.values(), ids=list(FILLS))
def test_a_number_filled_in_takes_the_tensors_dtype_as_in_pytorch(call):
    theirs, ours = call(TORCH), call(WB)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    assert ours.float().tolist() == theirs.float().tolist()


# ------------------------------------------------------------------ traces
HUGE = 2**70
CALLS_WITH_A_HUGE_INT = {
    "roll": lambda x: x.roll(HUGE),
    "std correction": lambda x: x.std(correction=HUGE),
    "var correction": lambda x: x.var(0, correction=HUGE),
    "nll_loss ignore_index": lambda x: wb.nn.functional.nll_loss(
        x, wb.tensor([0, 1]), ignore_index=HUGE
    ),
    "cross_entropy ignore_index": lambda x: wb.nn.functional.cross_entropy(
        x, wb.tensor([0, 1]), ignore_index=HUGE
    ),
    "slice": lambda x: x[HUGE:],
    "tril": lambda x: x.tril(HUGE),
    "pad": lambda x: wb.nn.functional.pad(x, (HUGE, 0)),
    "mul": lambda x: x * HUGE,
    "reshape": lambda x: x.reshape(-1, HUGE),
}


@pytest.mark.filterwarnings("ignore::UserWarning")  # (std: degrees of freedom <= 0)
@pytest.mark.parametrize("call", CALLS_WITH_A_HUGE_INT.values(), ids=list(CALLS_WITH_A_HUGE_INT))
def test_a_trace_of_a_python_int_beyond_64_bits_reads_back(call, tmp_path):
    """Either the op refuses the int where it is given, or the trace that recorded it
    reads back: ``Trace.load`` takes integers of at most 64 bits (issue 36)."""
    from workbench.trace import Trace

    x = wb.ones(2, 3, requires_grad=True)
    with wb.trace() as trace:
        try:
            call(x)
        except (TypeError, ValueError, OverflowError, RuntimeError):
            pass  # refused where given
    path = tmp_path / "trace.json"
    trace.save(path)
    assert Trace.load(path).records == trace.records
