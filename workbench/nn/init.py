"""Weight initialisation, as ``torch.nn.init``: fill a tensor in place, without history.

Every draw comes from the generator that ``wb.manual_seed`` seeds (or the one passed
as ``generator=``), and the draws are PyTorch's, in PyTorch's order: after the same
``manual_seed``, ``nn.Linear(3, 2)`` starts with the weights it has in PyTorch. The
bounds are computed with PyTorch's formulas (``√3 · std``), to the last bit.

Why the scales: a layer's output variance grows with its fan-in (the number of
inputs each output sums). Kaiming (He) init draws weights with variance
``gain² / fan_in`` so activations keep their size through many ReLU layers; Xavier
(Glorot) init uses ``2 / (fan_in + fan_out)`` to balance forward and backward.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import workbench as wb
from workbench import Tensor


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The factor that keeps a nonlinearity's output variance near its input's."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """Fan-in and fan-out of a weight: ``(out, in, *kernel)`` → ``(in·k, out·k)``."""
    if tensor.ndim < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _no_op_on_empty(tensor: Tensor, op: str) -> Tensor:
    """A weight with no elements (``nn.Linear(0, 3)``) has no fan to scale by: PyTorch
    warns and leaves it alone, rather than dividing by a fan-in of zero."""
    warnings.warn(
        f"{op}: Initializing zero-element tensors is a no-op (shape {tuple(tensor.shape)})",
        UserWarning,
        stacklevel=3,
    )
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with samples from U(a, b)."""
    with wb.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with samples from N(mean, std²)."""
    with wb.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    with wb.no_grad():
        tensor.fill_(val)
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def _kaiming(name: str, draw: Callable, doc: str) -> Callable[..., Tensor]:
    """``kaiming_uniform_`` or ``kaiming_normal_`` (He et al., 2015): values of standard
    deviation ``std = gain / √fan``, drawn by ``draw(tensor, std, generator)``. Both keep
    PyTorch's signature."""

    def kaiming_(
        tensor: Tensor,
        a: float = 0.0,
        mode: str = "fan_in",
        nonlinearity: str = "leaky_relu",
        generator=None,
    ) -> Tensor:
        if tensor.numel() == 0:
            return _no_op_on_empty(tensor, name)
        std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
        return draw(tensor, std, generator)

    kaiming_.__name__ = kaiming_.__qualname__ = name
    kaiming_.__doc__ = doc
    return kaiming_


def _uniform_of_std(tensor: Tensor, std: float, generator) -> Tensor:
    bound = math.sqrt(3.0) * std  # U(−b, b) has standard deviation b / √3
    return uniform_(tensor, -bound, bound, generator)


def _normal_of_std(tensor: Tensor, std: float, generator) -> Tensor:
    return normal_(tensor, 0.0, std, generator)


kaiming_uniform_ = _kaiming(
    "kaiming_uniform_",
    _uniform_of_std,
    """U(−bound, bound) with ``bound = √3 · gain / √fan``: He et al., 2015.

    ``Linear`` and ``Conv2d`` call this with ``a=√5``, which works out to
    ``bound = 1 / √fan_in``, PyTorch's default.
    """,
)
kaiming_normal_ = _kaiming(
    "kaiming_normal_", _normal_of_std, "N(0, std²) with ``std = gain / √fan``."
)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(−bound, bound) with ``bound = √3 · gain · √(2 / (fan_in + fan_out))``: Glorot & Bengio."""
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return _uniform_of_std(tensor, std, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)
