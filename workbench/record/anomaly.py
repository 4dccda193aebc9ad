"""Anomaly mode: find the op whose backward produced NaN, and where it was created.

Inside ``detect_anomaly()`` every node remembers the Python stack of the forward
call that made it; when a gradient rule returns NaN (or inf) the engine raises an
error naming the node and shows that stack.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core import events, state
from ..core.tensor import is_differentiable_dtype
from .grad_mode import DecoratorContextManager


def is_anomaly_enabled() -> bool:
    return state.anomaly.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return state.anomaly_checks_nan()


class detect_anomaly(DecoratorContextManager):
    """Context manager (and decorator) that turns anomaly detection on."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.",
            UserWarning,
            stacklevel=2,
        )

    def __enter__(self) -> None:
        self.prev = state.set_anomaly(True, self.check_nan)

    def __exit__(self, *exc) -> None:
        state.set_anomaly(*self.prev)

    def clone(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.__class__(self.check_nan)


class set_detect_anomaly(DecoratorContextManager):
    """Turn anomaly detection on or off now; as a context manager, restore it on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.mode = mode
        self.check_nan = check_nan
        self.prev = state.set_anomaly(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        state.set_anomaly(*self.prev)

    def clone(self):
        return self.__class__(self.mode, self.check_nan)


def warn_forward_stack(node) -> None:
    """Show where ``node``'s forward op was called (only in anomaly mode)."""
    if not is_anomaly_enabled():
        return
    if node._forward_stack is None:
        warnings.warn(
            "Error detected in "
            f"{node.name()}. No forward pass information available. Enable detect anomaly "
            "during forward pass for more information.",
            UserWarning,
            stacklevel=4,
        )
    else:
        warnings.warn(
            f"Error detected in {node.name()}. Traceback of forward call that caused the "
            f"error:\n{node._forward_stack}",
            UserWarning,
            stacklevel=4,
        )


def check_outputs(node, grads_out) -> None:
    for i, grad in enumerate(grads_out):
        if grad is None:
            continue
        data = grad._data
        if is_differentiable_dtype(data.dtype) and not bool(np.isfinite(data).all()):
            bad = "nan" if bool(np.isnan(data).any()) else "inf"
            message = f"Function '{node.name()}' returned {bad} values in its {i}th output."
            if events.listening:
                events.publish(
                    events.Anomaly(
                        node=node.uid,
                        name=node.name(),
                        message=message,
                        forward_stack=node._forward_stack,
                    )
                )
            warn_forward_stack(node)
            raise RuntimeError(message)
