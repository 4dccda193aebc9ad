"""Silent wrong results from the hardening issue: each gave an answer where PyTorch
raises, or an answer PyTorch does not give. One test per item; the comparison with
PyTorch runs only where torch is installed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import workbench as wb


def torch_or_skip():
    return pytest.importorskip("torch")


# ------------------------------------------------ 1. None is not an operand
@pytest.mark.parametrize(
    "name, call, torch_call",
    [
        ("add", lambda x: x + None, lambda x: x + None),
        ("add", lambda x: None + x, lambda x: None + x),
        ("sub", lambda x: x - None, lambda x: x - None),
        ("mul", lambda x: x * None, lambda x: x * None),
        ("div", lambda x: x / None, lambda x: x / None),
        ("pow", lambda x: x**None, lambda x: x**None),
        ("pow", lambda x: None**x, lambda x: None**x),
        ("maximum", lambda x: wb.maximum(x, None), lambda x: x.maximum(None)),
        ("minimum", lambda x: wb.minimum(None, x), lambda x: x.minimum(None)),
        ("where", lambda x: wb.where(x > 0, x, None), lambda x: x.where(x > 0, None)),
        ("add", lambda x: x + "a", lambda x: x + "a"),
    ],
)
def test_1_an_operand_that_is_not_a_number_is_a_type_error(name, call, torch_call):
    with pytest.raises(TypeError) as info:
        call(wb.ones(3))
    message = str(info.value)
    assert message.startswith(f"{name}():")
    assert "not NoneType" in message or "not str ('a')" in message

    torch = torch_or_skip()
    with pytest.raises(TypeError):
        torch_call(torch.ones(3))


# ----------------------------------- 2. negative indices do not wrap where PyTorch refuses
def index_calls(lib, F):
    """(name, call) for the index-taking ops that refuse a negative index, on 3 rows."""
    return [
        ("embedding", lambda: F.embedding(lib.tensor([-1]), lib.ones(3, 2))),
        ("index_select", lambda: lib.ones(3, 2).index_select(0, lib.tensor([-1]))),
        ("gather", lambda: lib.ones(3, 2).gather(0, lib.tensor([[-1, 0]]))),
    ]


@pytest.mark.parametrize("which", range(3))
def test_2_a_negative_index_is_refused_where_pytorch_refuses_it(which):
    name, call = index_calls(wb, wb.nn.functional)[which]
    expected = RuntimeError if name == "gather" else IndexError  # PyTorch's types
    with pytest.raises(expected) as info:
        call()
    message = str(info.value)
    assert message.startswith(f"{name}(): index -1 is out of bounds for dimension 0 with size 3")

    torch = torch_or_skip()
    _, torch_call = index_calls(torch, torch.nn.functional)[which]
    with pytest.raises(expected):
        torch_call()


def test_2_take_still_counts_a_negative_index_from_the_end():
    assert wb.take(wb.arange(6.0), wb.tensor([-1])).tolist() == [5.0]
    torch = torch_or_skip()
    assert torch.take(torch.arange(6.0), torch.tensor([-1])).tolist() == [5.0]


# ------------------------------ 3. std of a constant, BCE at 0 and 1, clamp with min > max
@pytest.mark.parametrize("reduce", ["std", "var"])
def test_3_std_and_var_of_a_constant_input_have_zero_gradients(reduce):
    x = wb.full((2, 3), 0.5, dtype=wb.float64, requires_grad=True)
    (first,) = wb.autograd.grad(getattr(x, reduce)(1).sum(), x, create_graph=True)
    (second,) = wb.autograd.grad(first.sum(), x)
    assert first.tolist() == [[0.0] * 3] * 2
    assert second.tolist() == [[0.0] * 3] * 2

    torch = torch_or_skip()
    t = torch.full((2, 3), 0.5, dtype=torch.float64, requires_grad=True)
    (first_t,) = torch.autograd.grad(getattr(t, reduce)(1).sum(), t, create_graph=True)
    (second_t,) = torch.autograd.grad(first_t.sum(), t)
    assert first_t.tolist() == first.tolist() and second_t.tolist() == second.tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_3_binary_cross_entropy_at_0_and_1_clamps_its_logs_and_still_learns(dtype):
    probs, labels = [0.0, 1.0, 0.0, 1.0, 0.3, 1e-30], [1.0, 0.0, 0.0, 1.0, 0.6, 1.0]
    x = wb.tensor(probs, dtype=getattr(wb, dtype), requires_grad=True)
    t = wb.tensor(labels, dtype=getattr(wb, dtype), requires_grad=True)
    loss = wb.nn.functional.binary_cross_entropy(x, t, reduction="none")
    loss.sum().backward()
    assert loss.tolist()[:4] == [100.0, 100.0, 0.0, 0.0]
    assert x.grad.tolist()[:4] == pytest.approx([-1e12, 1e12, 0.0, 0.0])

    torch = torch_or_skip()
    xt = torch.tensor(probs, dtype=getattr(torch, dtype), requires_grad=True)
    tt = torch.tensor(labels, dtype=getattr(torch, dtype), requires_grad=True)
    loss_t = torch.nn.functional.binary_cross_entropy(xt, tt, reduction="none")
    loss_t.sum().backward()
    rel = 1e-6 if dtype == "float32" else 1e-12
    assert loss.tolist() == pytest.approx(loss_t.tolist(), rel=rel)
    assert x.grad.tolist() == pytest.approx(xt.grad.tolist(), rel=rel)
    assert t.grad.tolist() == pytest.approx(tt.grad.tolist(), rel=rel)


def test_3_clamp_with_min_above_max_gives_max_everywhere():
    x = wb.tensor([0.0, 1.5, 3.0], requires_grad=True)
    for out in (x.clamp(2.0, 1.0), x.clamp(wb.tensor(2.0), wb.tensor([1.0, 1.0, 1.0]))):
        x.grad = None
        out.sum().backward()
        assert out.tolist() == [1.0, 1.0, 1.0] and x.grad.tolist() == [0.0, 0.0, 0.0]

    torch = torch_or_skip()
    xt = torch.tensor([0.0, 1.5, 3.0], requires_grad=True)
    out_t = xt.clamp(2.0, 1.0)
    out_t.sum().backward()
    assert out_t.tolist() == [1.0, 1.0, 1.0] and xt.grad.tolist() == [0.0, 0.0, 0.0]


# ---------------------------------- 4. PyTorch's result_type: 0-d tensors and numbers rank lower
DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64", "complex64"]
# Operands: (dtype, is_0d) for tensors, ("number", value) for Python numbers.
OPERANDS = [(dtype, zero_d) for dtype in DTYPES for zero_d in (False, True)]
OPERANDS += [("number", value) for value in (True, 2, 2.5, 1j)]
PAIRS = [(a, b) for a in OPERANDS for b in OPERANDS if not a[0] == b[0] == "number"]


def operand(lib, spec):
    kind, extra = spec
    if kind == "number":
        return extra
    return lib.ones(() if extra else (2,), dtype=getattr(lib, kind))


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (("float32", False), ("float64", True), "float32"),  # the case
        (("float64", True), ("float32", False), "float32"),
        (("float32", True), ("float64", True), "float64"),  # two 0-d tensors: plain promotion
        (("int32", False), ("int64", True), "int32"),
        (("int32", False), ("float64", True), "float64"),  # a higher category does promote
        (("int64", False), ("float16", False), "float16"),  # numpy says float64
        (("int64", False), ("number", 2.5), "float32"),
        (("bool", False), ("number", 2), "int64"),
        (("float32", False), ("complex64", True), "complex64"),
        (("float16", False), ("number", 2.5), "float16"),
    ],
)
def test_4_binary_ops_compute_in_pytorchs_result_type(a, b, expected):
    x, y = operand(wb, a), operand(wb, b)
    assert str(wb.result_type(x, y)) == expected
    ordered = not expected.startswith("complex")  # PyTorch refuses max and < for complex
    ops = [wb.add, wb.mul, lambda u, v: wb.where(wb.tensor(True), u, v)]
    for op in ops + ([wb.maximum] if ordered else []):
        assert str(op(x, y).dtype) == expected
    if ordered:
        assert str((x < y).dtype) == "bool"


def test_4_a_0d_float64_that_requires_grad_gets_a_float64_gradient():
    x = wb.ones(3, requires_grad=True)
    scale = wb.tensor(2.0, dtype=wb.float64, requires_grad=True)
    y = x * scale
    y.sum().backward()
    assert y.dtype == wb.float32
    assert x.grad.dtype == wb.float32 and x.grad.tolist() == [2.0, 2.0, 2.0]
    assert scale.grad.dtype == wb.float64 and scale.grad.item() == 3.0


def test_4_result_type_matches_torch_on_every_pair():
    torch = torch_or_skip()
    wrong = []
    for a, b in PAIRS:
        expected = str(torch.result_type(operand(torch, a), operand(torch, b)))[len("torch.") :]
        if expected == "complex32":
            continue  # float16 with complex: numpy has no complex32, workbench gives complex64
        got = str(wb.result_type(operand(wb, a), operand(wb, b)))
        for name in ("add", "mul", "div", "maximum"):
            try:
                torch_dtype = str(getattr(torch, name)(operand(torch, a), operand(torch, b)).dtype)
            except (RuntimeError, TypeError):
                continue  # PyTorch refuses the pair (bool - bool, a number first, ...)
            got_dtype = str(getattr(wb, name)(operand(wb, a), operand(wb, b)).dtype)
            if got_dtype != torch_dtype[len("torch.") :]:
                wrong.append((name, a, b, torch_dtype, got_dtype))
        if got != expected:
            wrong.append(("result_type", a, b, expected, got))
    assert not wrong


# --------------------------------------------- 5. take_backward counts a negative axis from the end
@pytest.mark.parametrize("axis", [-1, -2])
def test_5_take_backward_takes_a_negative_axis(axis):
    grad_shape = (2, 2, 3) if axis == -2 else (2, 3, 2)
    output_grad = wb.arange(12.0).reshape(*grad_shape)
    x, indices = wb.ones(2, 3, 3), wb.tensor([2, 2])
    got = wb.ops.grad.take_backward(output_grad, x, indices, axis=axis)
    expected = wb.ops.grad.take_backward(output_grad, x, indices, axis=3 + axis)
    assert got.tolist() == expected.tolist()
    assert got.sum().item() == output_grad.sum().item()

    torch = torch_or_skip()
    xt = torch.ones(2, 3, 3, requires_grad=True)
    picked = xt.index_select(axis, torch.tensor([2, 2]))
    picked.backward(torch.arange(12.0).reshape(grad_shape))
    assert got.tolist() == xt.grad.tolist()


# ------------------------------- 6. second-order pow on 0-d float64 keeps float64 precision
BASE_F32 = float(np.float32(1.7))  # a float32 base, as a float64 number
POWERS = {
    # name: (function of x and the library, first and second derivative at x)
    "x**3": (lambda x, lib: x**3, lambda x: (3 * x**2, 6 * x)),
    "2**x": (lambda x, lib: 2**x, lambda x: (2**x * math.log(2), 2**x * math.log(2) ** 2)),
    "x**x": (
        lambda x, lib: x**x,
        lambda x: (x**x * (math.log(x) + 1), x**x * ((math.log(x) + 1) ** 2 + 1 / x)),
    ),
    "float32 0-d ** x": (
        lambda x, lib: lib.tensor(1.7, dtype=lib.float32) ** x,
        lambda x: (BASE_F32**x * math.log(BASE_F32), BASE_F32**x * math.log(BASE_F32) ** 2),
    ),
    "clamp, then two x**3 meet": (
        lambda x, lib: x.clamp(min=0.0) ** 3 * 1.1 + x.clamp(min=0.0) ** 3 * 1.3,
        lambda x: (2.4 * 3 * x**2, 2.4 * 6 * x),
    ),
}


def first_and_second(lib, name, value):
    x = lib.tensor(value, dtype=lib.float64, requires_grad=True)
    (first,) = lib.autograd.grad(POWERS[name][0](x, lib), x, create_graph=True)
    (second,) = lib.autograd.grad(first, x)
    assert first.dtype == second.dtype == lib.float64
    return first.item(), second.item()


@pytest.mark.parametrize("name", POWERS)
@pytest.mark.parametrize("value", [0.1, 1.3])
def test_6_second_order_pow_of_a_0d_float64_keeps_float64_precision(name, value):
    got = first_and_second(wb, name, value)
    assert got == pytest.approx(POWERS[name][1](value), rel=1e-13)

    torch = torch_or_skip()
    assert got == pytest.approx(first_and_second(torch, name, value), rel=1e-14)


# ------------------------------- 7. a start_checkpoint without end_checkpoint is closed at backward
def test_7_a_stage_left_open_is_closed_with_a_warning_and_its_tape_stays_bounded():
    from workbench.ops.grad import start_checkpoint
    from workbench.record import recompute

    w = wb.nn.Parameter(wb.randn(4, 4) * 0.1)
    optimizer = wb.optim.SGD([w], lr=0.01)
    x = wb.randn(8, 4)
    h = x @ w
    (plain,) = wb.autograd.grad((h.tanh() * h).sum(), w)  # the gradient without markers
    tapes = []
    with pytest.warns(UserWarning) as record:
        for _ in range(300):
            optimizer.zero_grad()
            h = start_checkpoint(x @ w)  # the end_checkpoint is forgotten
            loss = (h.tanh() * h).sum()
            tapes.append(len(recompute.open_stage().tape))
            loss.backward()
            if not tapes[1:]:
                np.testing.assert_allclose(w.grad.numpy(), plain.numpy(), rtol=1e-6)
            optimizer.step()
            assert recompute.open_stage() is None
    assert set(tapes) == {3}  # tanh, mul, sum: the tape does not grow from step to step
    messages = [str(r.message) for r in record if "start_checkpoint" in str(r.message)]
    assert len(messages) == 300
    assert "end_checkpoint is missing" in messages[0] and "3 ops recorded" in messages[0]
    assert record[0].filename == __file__  # the warning points at the loss.backward() line


# ------------------------------------------ 8. accepted where PyTorch refuses: refused now
def refused_calls(lib):
    """(what workbench's message says, call, PyTorch's exception type)."""
    F = lib.nn.functional
    logits, labels = lib.zeros(2, 3), lib.tensor([0, 1])
    return [
        ("sum: dim 0 appears multiple times", lambda: lib.ones(2, 3).sum(dim=(0, 0)), RuntimeError),
        ("mean: dim 0 appears", lambda: lib.ones(2, 3).mean(dim=(0, -2)), RuntimeError),
        ("std: dim 0 appears", lambda: lib.ones(2, 3).std(dim=(0, 0)), RuntimeError),
        ("softmax: Dimension out of range", lambda: lib.tensor(1.0).softmax(dim=1), IndexError),
        ("log_softmax: Dimension", lambda: lib.tensor(1.0).log_softmax(dim=1), IndexError),
        (
            "where expected condition to be a boolean tensor, but got a tensor with dtype float32",
            lambda: lib.where(lib.ones(3), lib.ones(3), lib.zeros(3)),
            RuntimeError,
        ),
        (
            "cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: 2.0",
            lambda: F.cross_entropy(logits, labels, label_smoothing=2.0),
            RuntimeError,
        ),
        (
            "tensor(): Could not infer dtype of NoneType in None",
            lambda: lib.tensor(None),
            RuntimeError,
        ),
        ("dtype of dict in {'a': 1.0}", lambda: lib.tensor({"a": 1.0}), RuntimeError),
        ("NoneType in [1.0, None]", lambda: lib.tensor([1.0, None]), RuntimeError),
        ("tensor(): invalid data type 'str'", lambda: lib.tensor([1.0, "a"]), TypeError),
        ("ones(): argument 'size' must be tuple of ints", lambda: lib.ones(2.5), TypeError),
        ("element of type float at pos 1 (2.5)", lambda: lib.randn(2, 2.5), TypeError),
    ]


@pytest.mark.parametrize("which", range(13))
def test_8_what_pytorch_refuses_is_refused_with_its_exception_type(which):
    message, call, kind = refused_calls(wb)[which]
    with pytest.raises(kind) as info:
        call()
    assert message in str(info.value)

    torch = torch_or_skip()
    _, torch_call, _ = refused_calls(torch)[which]
    with pytest.raises(kind):
        torch_call()


# ------------------- 9. the stepper says at once what is wrong with a non-scalar or freed loss
def stepper_class():
    pytest.importorskip("ipywidgets")
    from workbench.widgets import BackwardStepper

    return BackwardStepper


def test_9_a_stepper_on_a_non_scalar_output_asks_for_a_sum_or_a_gradient():
    BackwardStepper = stepper_class()
    x = wb.tensor([0.1, 0.2, 0.3], requires_grad=True)
    y = (x * 2).sin()
    stepper = BackwardStepper(y)
    assert stepper.error.startswith("grad can be implicitly created only for scalar outputs")
    assert "(3,)" in stepper.error and "y.sum()" in stepper.error and "gradient=" in stepper.error
    assert stepper.next_button.disabled and stepper.next() is False

    stepper = BackwardStepper(y, gradient=wb.tensor([1.0, 2.0, 3.0]))
    assert stepper.error is None
    stepper.continue_()
    expected = 2 * (x * 2).cos().detach() * wb.tensor([1.0, 2.0, 3.0])
    assert x.grad.tolist() == pytest.approx(expected.tolist())

    torch = torch_or_skip()
    with pytest.raises(RuntimeError) as info:
        (torch.tensor([0.1, 0.2, 0.3], requires_grad=True) * 2).sin().backward()
    assert stepper_class()(y).error.startswith(str(info.value))


def test_9_a_stepper_on_a_freed_graph_says_so_when_it_is_built():
    BackwardStepper = stepper_class()
    x = wb.tensor([0.1, 0.2, 0.3], requires_grad=True)
    loss = (x * 2).sin().sum()
    loss.backward()
    stepper = BackwardStepper(loss)  # before: built fine, then the first Next failed
    assert stepper.error.startswith("Trying to backward through the graph a second time")
    assert "An earlier backward() already ran" in stepper.error
    assert "retain_graph=True" in stepper.message.value
    assert stepper.next_button.disabled

    kept = (x * 2).sin().sum()
    kept.backward(retain_graph=True)
    assert BackwardStepper(kept).error is None

    torch = torch_or_skip()
    t = torch.tensor([0.1, 0.2, 0.3], requires_grad=True)
    torch_loss = (t * 2).sin().sum()
    torch_loss.backward()
    with pytest.raises(RuntimeError) as info:
        torch_loss.backward()
    assert stepper.error.startswith(str(info.value))
