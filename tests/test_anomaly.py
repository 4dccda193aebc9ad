"""Anomaly mode (REFERENCE D18): NaN detection, forward stacks, nesting, warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import workbench as wb
from workbench.autograd import detect_anomaly, is_anomaly_enabled, set_detect_anomaly


def zero_leaf():
    return wb.tensor([0.0, 1.0], dtype=wb.float64, requires_grad=True)


def sqrt_times_zero(x):
    return (x.sqrt() * 0).sum()  # sqrt'(0) = inf, times a zero gradient: NaN


def test_nan_in_backward_names_the_node_and_shows_the_forward_stack():
    x = zero_leaf()
    with pytest.warns(UserWarning) as record:
        with detect_anomaly():
            loss = sqrt_times_zero(x)
            with pytest.raises(RuntimeError) as err:
                loss.backward()
    assert str(err.value) == "Function 'SqrtBackward0' returned nan values in its 0th output."
    messages = [str(w.message) for w in record]
    traces = [m for m in messages if m.startswith("Error detected in SqrtBackward0.")]
    assert traces and "Traceback of forward call that caused the error:" in traces[0]
    assert "sqrt_times_zero" in traces[0]  # the stack points at the user's forward code


def test_without_anomaly_mode_nan_gradients_pass_silently():
    x = zero_leaf()
    sqrt_times_zero(x).backward()
    assert np.isnan(x.grad.numpy()[0])


def test_check_nan_false_lets_nan_through_and_nesting_restores_it():
    x = zero_leaf()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with detect_anomaly(check_nan=False):
            sqrt_times_zero(x).backward()
            assert np.isnan(x.grad.numpy()[0])
            with detect_anomaly(check_nan=True):
                with pytest.raises(RuntimeError, match="returned nan values"):
                    sqrt_times_zero(x).backward()
            x.grad = None
            sqrt_times_zero(x).backward()  # the outer check_nan=False is back
            assert np.isnan(x.grad.numpy()[0])


def test_entering_warns_that_it_is_slow():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled. This mode will"):
        with detect_anomaly():
            assert is_anomaly_enabled()
    assert not is_anomaly_enabled()


def test_set_detect_anomaly_toggles_the_mode():
    set_detect_anomaly(True)
    assert is_anomaly_enabled()
    set_detect_anomaly(False)
    assert not is_anomaly_enabled()
    with set_detect_anomaly(True):
        assert is_anomaly_enabled()
    assert not is_anomaly_enabled()


def test_forward_outside_backward_inside_has_no_forward_information():
    x = zero_leaf()
    loss = sqrt_times_zero(x)
    with pytest.warns(UserWarning) as record:
        with detect_anomaly():
            with pytest.raises(RuntimeError, match="SqrtBackward0"):
                loss.backward()
    assert any("No forward pass information" in str(w.message) for w in record)


def test_inf_gradients_are_reported_too():
    x = wb.tensor([0.0], dtype=wb.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with detect_anomaly():
            y = x.reciprocal().sum()
            with pytest.raises(RuntimeError, match="'ReciprocalBackward0' returned inf values"):
                y.backward()


def test_an_error_inside_a_rule_shows_where_the_op_was_created():
    class Broken(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            raise ValueError("broken backward")

    x = wb.tensor([1.0], requires_grad=True)
    with pytest.warns(UserWarning) as record:
        with detect_anomaly():
            y = Broken.apply(x).sum()
            with pytest.raises(ValueError, match="broken backward"):
                y.backward()
    assert any("Traceback of forward call" in str(w.message) for w in record)


def test_the_inplace_error_says_good_luck_in_anomaly_mode():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with detect_anomaly():
            y = x.exp()
            y.add_(1)
            with pytest.raises(RuntimeError, match="Good luck!"):
                y.sum().backward()


def test_a_second_order_nan_is_caught_in_the_double_backward():
    x = wb.tensor([0.0], dtype=wb.float64, requires_grad=True)
    (g,) = wb.autograd.grad((x.abs() ** 1.5).sum(), x, create_graph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with detect_anomaly():
            with pytest.raises(RuntimeError, match="returned nan values"):
                (g * 0).sum().backward()
