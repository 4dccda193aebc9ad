"""check_value_recorder (lesson 4, Exercise 3) on answers its catalogue does not hold:
the stub, untrusted classes (a cycle, an endless backward, unhashable Values, numpy
numbers), closures run some other way, and a mistake it cannot name — shown as expected
against got, with no cause. The named mistakes are in tests/test_catalogue_engine.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from catalogue import CAUSES
from test_catalogue_engine import RIGHT_VALUE, value_class

from workbench.exercises import ExerciseError, NotAnswered, guard
from workbench.exercises.value_recorder import PROBES, ScalarValue, check_value_recorder


def wrong(answer) -> str:
    with pytest.raises(ExerciseError) as caught:
        check_value_recorder(answer)
    assert not isinstance(caught.value, NotAnswered), str(caught.value)
    message = str(caught.value)
    assert "Traceback" not in message and "gap in the checker" not in message, message
    return message


def test_the_workbench_value_matches_the_engine_on_every_probe():
    assert check_value_recorder(ScalarValue)
    assert len(PROBES) >= 12


def test_a_stub_is_not_answered_yet():
    class Value(RIGHT_VALUE):
        def backward(self):
            raise NotImplementedError()

    with pytest.raises(NotAnswered, match="Value class still raises NotImplementedError"):
        check_value_recorder(Value)


def test_a_value_instead_of_the_class_is_named():
    assert "Value itself" in wrong(1.5)


def test_wrong_forward_data_is_named_before_any_gradient():
    class Value(RIGHT_VALUE):
        def __add__(self, other):
            out = super().__add__(other)
            out.data -= 2 * out._prev[1].data  # a - b, not a + b
            return out

    assert "On a + b, your Value's data is 5; the engine's is -1" in wrong(Value)


def test_a_missing_out_grad_shows_expected_and_got_without_a_cause():
    """tanh's closure forgets to multiply by out.grad: right wherever out.grad is 1."""

    class Value(RIGHT_VALUE):
        def tanh(self):
            out = Value(math.tanh(self.data), (self,), "tanh")

            def _backward():
                self.grad += 1 - out.data**2

            out._backward = _backward
            return out

    message = wrong(Value)
    assert message.startswith("On tanh(tanh(a * b) * c + 1)"), message
    assert "the engine's is" in message and "every leaf, yours:" in message
    assert not [cause for cause in CAUSES if cause in message.lower()], message


def test_a_cycle_in_prev_ends_in_a_sentence():
    class Value(RIGHT_VALUE):
        def __add__(self, other):
            out = super().__add__(other)
            out._prev = (*out._prev, out)  # the result its own parent
            return out

    assert "the parents (_prev) of the root lead back to it" in wrong(Value)


def test_a_backward_that_never_ends_is_stopped(monkeypatch):
    monkeypatch.setattr(guard, "TIME_LIMIT_S", 0.5)

    class Value(RIGHT_VALUE):
        def backward(self):
            stack = [self]
            while stack:  # the parents go back on: a cycle in their order
                node = stack.pop()
                stack.extend(node._prev or [self])

    assert "did not finish in 0.5 seconds" in wrong(Value)


def test_unhashable_values_walked_by_their_own_backward_pass():
    """A Value whose == compares data (so Python drops its hash): the check walks by id."""

    class Value(RIGHT_VALUE):
        def __eq__(self, other):
            return isinstance(other, Value) and self.data == other.data

        __hash__ = None

        def backward(self):
            order, seen = [], set()

            def visit(node):
                if id(node) not in seen:
                    seen.add(id(node))
                    for parent in node._prev:
                        visit(parent)
                    order.append(node)

            visit(self)
            self.grad = 1.0
            for node in reversed(order):
                node._backward()

    assert check_value_recorder(Value)


def test_numpy_numbers_as_data_and_grad_pass():
    class Value(RIGHT_VALUE):
        def __init__(self, data, _parents=(), _op=""):
            super().__init__(data, _parents, _op)
            self.data = np.float64(data)
            self.grad = np.float64(0.0)

    assert check_value_recorder(Value)


def closures_in_a_list(assign: bool):
    """Closures kept in a list beside ``_backward``: the check cannot watch their order."""

    class Value(value_class(assign={"+"} if assign else ())):
        def backward(self):
            order, seen = [], set()

            def visit(node):
                if node not in seen:
                    seen.add(node)
                    for parent in node._prev:
                        visit(parent)
                    order.append(node)

            visit(self)
            closures = [node._backward for node in reversed(order)]
            for node in order:
                node._backward = None  # the check's watch is thrown away
            self.grad = 1.0
            for run in closures:
                run()

    return Value


def test_closures_run_another_way_are_judged_by_their_values():
    assert check_value_recorder(closures_in_a_list(assign=False))
    assert "one use's part alone" in wrong(closures_in_a_list(assign=True))


def test_a_seed_other_than_one_is_named():
    class Doubled(RIGHT_VALUE):
        def backward(self):
            super().backward()
            self.grad = 2.0
            for parent in self._prev:
                parent.grad *= 2

    assert "the root's grad is 2 after backward()" in wrong(Doubled)
