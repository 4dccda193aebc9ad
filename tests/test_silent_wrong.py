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
