"""Silent wrong results from the hardening issue: each gave an answer where PyTorch
raises, or an answer PyTorch does not give. One test per item; the comparison with
PyTorch runs only where torch is installed."""

from __future__ import annotations

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
    assert message.endswith(("not NoneType", "not str"))

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
    with pytest.raises(IndexError) as info:
        call()
    message = str(info.value)
    assert message.startswith(f"{name}(): index -1 is out of bounds for size 3")
    assert isinstance(info.value, RuntimeError)  # PyTorch's gather raises RuntimeError

    torch = torch_or_skip()
    _, torch_call = index_calls(torch, torch.nn.functional)[which]
    with pytest.raises((IndexError, RuntimeError)):
        torch_call()


def test_2_take_still_counts_a_negative_index_from_the_end():
    assert wb.take(wb.arange(6.0), wb.tensor([-1])).tolist() == [5.0]
    torch = torch_or_skip()
    assert torch.take(torch.arange(6.0), torch.tensor([-1])).tolist() == [5.0]
