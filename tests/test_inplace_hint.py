"""The in-place (version counter) error names the workbench's own API and what the learner
sees: no PyTorch function to call, no "backtrace further above" that is not there."""

from __future__ import annotations

import warnings

import pytest

import workbench as wb


def saved_then_changed():
    """sigmoid saves its output; add_ changes it: backward must refuse."""
    x = wb.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = wb.sigmoid(x)
    y.add_(1)
    return (y * y).sum()


def version_error(loss) -> str:
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as caught:
        loss.backward()
    return str(caught.value)


def test_outside_anomaly_mode_the_hint_says_what_happened_and_how_to_find_where():
    message = version_error(saved_then_changed())
    assert "[output 0 of SigmoidBackward0] is at version 1; expected version 0 instead" in message
    assert "SigmoidBackward0 saved this tensor in the forward pass" in message
    assert "wb.autograd.set_detect_anomaly(True)" in message
    assert "wb.autograd.detect_anomaly()" in message
    assert "torch." not in message and "backtrace" not in message


def test_in_anomaly_mode_the_hint_points_at_the_warning_that_is_really_shown():
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with wb.autograd.detect_anomaly():
            message = version_error(saved_then_changed())
    texts = [str(w.message) for w in shown]
    assert any(t.startswith("Error detected in SigmoidBackward0. Traceback") for t in texts)
    assert '"Error detected in SigmoidBackward0", shows the traceback' in message
    assert message.endswith("Good luck!")  # PyTorch's ending, as its conformance test asks
    assert "torch." not in message


def test_a_graph_made_before_anomaly_mode_says_its_warning_has_no_traceback():
    loss = saved_then_changed()
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with wb.autograd.detect_anomaly():
            message = version_error(loss)
    assert any("No forward pass information" in str(w.message) for w in shown)
    assert "has no traceback of the forward call" in message
    assert "inside wb.autograd.detect_anomaly() too" in message
    assert message.endswith("Good luck!")
