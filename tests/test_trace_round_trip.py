"""Every trace the workbench writes, it reads back: random programs with odd names and
odd attributes round-trip exactly through ``Trace.save`` and ``Trace.load``; what a trace
file cannot hold is refused where it is given, with a sentence naming the argument.

A trace file is UTF-8 JSON, and ``Trace.load`` reads integers of at most 64 bits (the
range PyTorch converts a Python int operand to). So a tensor's or a scope's name must be
a string without lone surrogates, and a Python int operand must lie between -2**63 and
2**64 - 1: PyTorch refuses a larger one with ``OverflowError``, and so does the workbench.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.trace import Trace

# Names: any text a UTF-8 file can hold (quotes, newlines, NUL, emoji, right-to-left).
NAMES = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)
LONE_SURROGATES = st.characters(categories=["Cs"])
NUMBERS = st.one_of(
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.complex_numbers(allow_nan=True, allow_infinity=True),
)
STEPS = {  # an op of a float tensor and one Python number: the number becomes an attr
    "mul": lambda t, n: t * n,
    "add": lambda t, n: t + n,
    "rsub": lambda t, n: n - t,
    "div": lambda t, n: t / n,
    "pow": lambda t, n: t**n,
    "where": lambda t, n: wb.where(t > 0, t, n),
    "eq": lambda t, n: t == n,
}
DTYPES = [wb.float32, wb.float64, wb.bfloat16, wb.float16]


@st.composite
def programs(draw):
    """Leaves with odd names, then steps, some inside scopes with odd names."""
    leaves = [
        (draw(st.none() | NAMES), draw(st.sampled_from(DTYPES)), draw(st.integers(1, 3)))
        for _ in range(draw(st.integers(1, 3)))
    ]
    steps = [
        (
            draw(st.sampled_from(sorted(STEPS))),
            draw(st.integers(0, 20)),  # which earlier value, modulo how many there are
            draw(NUMBERS),
            draw(st.none() | NAMES),  # a scope around the step, or none
        )
        for _ in range(draw(st.integers(1, 6)))
    ]
    return leaves, steps, draw(st.booleans())


def run_program(program) -> None:
    leaves, steps, backward = program
    values = [
        wb.tensor(np.linspace(-1, 1, size), dtype=dtype, requires_grad=True, name=name)
        for name, dtype, size in leaves
    ]
    for op, pick, number, scope in steps:
        source = values[pick % len(values)]
        if source.dtype not in DTYPES:  # a comparison's bools: take a leaf instead
            source = values[0]
        if scope is None:
            values.append(STEPS[op](source, number))
        else:
            with wb.name_scope(scope):
                values.append(STEPS[op](source, number))
    if backward:
        total = sum(
            (v.abs() if v.dtype.kind == "c" else v).float().sum() for v in values if v.requires_grad
        )
        total.backward()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=programs())
def test_random_programs_with_odd_names_and_attributes_round_trip(program, tmp_path):
    with wb.trace() as recorded:
        run_program(program)
    path = recorded.save(tmp_path / "run.json")
    assert Trace.load(path).records == recorded.records


def test_the_attributes_at_the_ends_of_the_ranges_round_trip(tmp_path):
    x = wb.ones(2, requires_grad=True, name='x "quoted"\n\x00 ✓ 𝔵')
    with wb.trace() as recorded, wb.name_scope("שָׁלוֹם 🙂"):
        for number in (2**64 - 1, -(2**63), math.nan, -math.inf, 5e-324, -0.0, 1e308, 1j):
            x * number
    path = recorded.save(tmp_path / "run.json")
    assert Trace.load(path).records == recorded.records


# ------------------------------------------------ refused where given, as in PyTorch
@pytest.mark.parametrize("number", [2**64, 2**70, -(2**63) - 1, -(10**400)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64"])
def test_a_python_int_over_64_bits_is_an_overflow_error_as_in_torch(number, dtype):
    torch = pytest.importorskip("torch")
    with pytest.raises(OverflowError):
        torch.ones(2, dtype=getattr(torch, dtype)) * number
    with wb.trace() as recorded, pytest.raises(OverflowError, match=r"mul\(\).*-2\*\*63"):
        wb.ones(2, dtype=getattr(wb, dtype)) * number
    assert recorded.records == []  # nothing a trace could not hold was recorded


@pytest.mark.parametrize(
    "call",
    [
        lambda n: wb.ones(2) + n,
        lambda n: wb.ones(2) ** n,
        lambda n: wb.where(wb.ones(2) > 0, wb.ones(2), n),
        lambda n: wb.ones(2).clamp(max=n),
        lambda n: wb.ones(2) == n,
    ],
    ids=["add", "pow", "where", "clamp", "eq"],
)
def test_every_op_taking_a_python_int_refuses_one_over_64_bits(call, tmp_path):
    with wb.trace() as recorded, pytest.raises(OverflowError, match="too big to convert"):
        call(2**70)
    path = recorded.save(tmp_path / "run.json")
    assert Trace.load(path).records == recorded.records


@pytest.mark.parametrize("name", [5, b"x", 1.5, ("a",)])
def test_a_name_that_is_not_a_string_is_a_type_error(name):
    with pytest.raises(TypeError, match=r"tensor\(\): argument 'name' must be str, not"):
        wb.tensor([1.0], name=name)
    with pytest.raises(TypeError, match="must be str|non-empty string"):
        wb.ones(2, name=name)


@given(surrogate=LONE_SURROGATES, before=NAMES)
def test_a_name_with_a_lone_surrogate_is_refused_where_it_is_given(surrogate, before):
    name = before + surrogate
    with pytest.raises(ValueError, match=r"tensor\(\): argument 'name' holds the lone"):
        wb.tensor([1.0], requires_grad=True, name=name)
    with pytest.raises(ValueError, match=r"name_scope\(\): argument 'name' holds the lone"):
        with wb.name_scope(name):
            pass
    with pytest.raises(ValueError, match=r"add_module\(\): argument 'name' holds the lone"):
        wb.nn.Sequential().add_module(name, wb.nn.Linear(1, 1))


def test_the_issue_examples_leave_a_trace_that_reads_back(tmp_path):
    """x * 2**70, a non-string name= and a lone surrogate, under wb.trace()."""
    x = wb.ones(2, requires_grad=True)
    with wb.trace() as recorded:
        y = x * 3
        for bad in (lambda: x * 2**70, lambda: wb.tensor([1.0], name=5)):
            with pytest.raises((OverflowError, TypeError)):
                bad()
        with pytest.raises(ValueError):
            wb.tensor([1.0], name="a\ud800")
        y.sum().backward()
    path = recorded.save(tmp_path / "run.json")
    assert Trace.load(path).records == recorded.records
    assert np.array_equal(x.grad.numpy(), [3.0, 3.0])
