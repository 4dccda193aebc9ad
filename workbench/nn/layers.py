"""Layers: modules that hold weights (or settings) and call one function of ``F``.

Each layer is small on purpose: ``__init__`` makes the parameters and initialises
them the way PyTorch does; ``forward`` is one call into
:mod:`workbench.nn.functional`, where the op and its gradient live.
"""

from __future__ import annotations

import math

import workbench as wb
from workbench import Tensor
from workbench.core import checks
from workbench.ops.linalg import linear_in_steps

from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _pair(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def _settings(**values) -> dict:
    """The keyword arguments worth passing on: those that are not None."""
    return {key: value for key, value in values.items() if value is not None}


def reset_like_torch(weight: Parameter, bias: Parameter | None) -> None:
    """PyTorch's default init for Linear and Conv2d.

    Weights: kaiming-uniform with a = √5, i.e. U(−1/√fan_in, 1/√fan_in); bias: the same bound.
    """
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init.calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


def add_weight_and_bias(layer: Module, shape: tuple, bias: bool, device, dtype) -> None:
    """Give ``layer`` a weight of ``shape`` and a bias of one value per output (``shape[0]``),
    or a bias of None, registered as PyTorch does; then initialise them with the layer's
    ``reset_parameters``."""
    layer.weight = Parameter(wb.empty(*shape, dtype=dtype, device=device))
    if bias:
        layer.bias = Parameter(wb.empty(shape[0], dtype=dtype, device=device))
    else:
        layer.register_parameter("bias", None)
    layer.reset_parameters()


class _Configured(Module):
    """A layer without weights, set up by its arguments: it keeps them as attributes
    (``self.alpha``), as torch.nn's layers do, and its repr shows them in order, as PyTorch's
    (``ELU(alpha=1.0)``), ``inplace`` only when it is on (``ELU(alpha=1.0, inplace=True)``)."""

    def __init__(self, **arguments) -> None:
        super().__init__()
        self._shown = tuple(arguments)
        for name, value in arguments.items():
            setattr(self, name, value)

    def extra_repr(self) -> str:
        shown = [f"{name}={getattr(self, name)!r}" for name in self._shown if name != "inplace"]
        if getattr(self, "inplace", False):
            shown.append("inplace=True")
        return ", ".join(shown)


class Identity(Module):
    """Returns its input unchanged (a placeholder in a Sequential)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """``y = x Wᵀ + b`` with ``W`` of shape ``(out_features, in_features)``.

    Weights start as U(−1/√in, 1/√in) (kaiming-uniform with a=√5), the bias too:
    PyTorch's defaults, so a learner's curves look like PyTorch's.
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        add_weight_and_bias(self, (out_features, in_features), bias, device, dtype)

    def reset_parameters(self) -> None:
        reset_like_torch(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        # PyTorch's steps (TBackward0, AddmmBackward0), so the graph reads as PyTorch's
        return linear_in_steps(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Conv2d(Module):
    """2-D convolution (cross-correlation, as in PyTorch) over ``(N, C, H, W)`` inputs.

    The weight has shape ``(out_channels, in_channels // groups, kH, kW)``, initialised
    like Linear with fan-in ``in_channels // groups · kH · kW``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        _check_conv_settings(in_channels, out_channels, stride, padding, groups)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _pair(kernel_size)
        self.stride = _pair(stride)
        self.padding = padding if isinstance(padding, str) else _pair(padding)
        self.dilation = _pair(dilation)
        self.groups = groups
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        add_weight_and_bias(self, shape, bias, device, dtype)

    def reset_parameters(self) -> None:
        reset_like_torch(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        extras = _settings(
            dilation=self.dilation if self.dilation != (1, 1) else None,
            groups=self.groups if self.groups != 1 else None,
        )
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, **extras)

    def extra_repr(self) -> str:
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


def _check_conv_settings(in_channels, out_channels, stride, padding, groups) -> None:
    """What ``nn.Conv2d`` refuses when it is built (ValueError, as PyTorch), before any input."""
    checks.positive("Conv2d", "groups", groups, error=ValueError)
    for name, channels in (("in_channels", in_channels), ("out_channels", out_channels)):
        if channels % groups:
            raise ValueError(f"Conv2d: {name}={channels} must be divisible by groups={groups}")
    if isinstance(padding, str):
        checks.one_of("Conv2d", "padding", padding, ("valid", "same"))
        if padding == "same" and _pair(stride) != (1, 1):
            raise ValueError(
                f"Conv2d: padding='same' is not supported for strided convolutions "
                f"(stride={stride})"
            )


class MaxPool2d(_Configured):
    """The maximum of each ``kernel_size`` window; the gradient goes to the winner."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False) -> None:
        stride = stride if stride is not None else kernel_size
        super().__init__(
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            ceil_mode=ceil_mode,
        )

    def forward(self, input: Tensor) -> Tensor:
        extras = _settings(
            dilation=self.dilation if self.dilation != 1 else None,
            ceil_mode=self.ceil_mode or None,
        )
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, **extras)


class AvgPool2d(_Configured):
    """The mean of each ``kernel_size`` window; the gradient is shared out evenly."""

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        stride = stride if stride is not None else kernel_size
        super().__init__(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding)


# ------------------------------------------------------------------ activations
class ReLU(_Configured):
    """``max(x, 0)``; ``inplace=True`` overwrites the input instead of making a new tensor."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(inplace=inplace)

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace) if self.inplace else wb.relu(input)


class Sigmoid(Module):
    """``1 / (1 + e⁻ˣ)``."""

    def forward(self, input: Tensor) -> Tensor:
        return wb.sigmoid(input)


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return wb.tanh(input)


class GELU(_Configured):
    """``x · Φ(x)``; ``approximate='tanh'`` uses the tanh formula of the GPT-2 era."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__(approximate=approximate)

    def forward(self, input: Tensor) -> Tensor:
        if self.approximate == "none":
            return F.gelu(input)
        return F.gelu(input, approximate=self.approximate)


class LeakyReLU(_Configured):
    """``x`` where positive, ``negative_slope · x`` elsewhere."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__(negative_slope=negative_slope, inplace=inplace)

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)


class ELU(_Configured):
    """``x`` where positive, ``α · (eˣ − 1)`` elsewhere."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__(alpha=alpha, inplace=inplace)

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)


class SiLU(_Configured):
    """``x · σ(x)`` (also called swish)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(inplace=inplace)

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, self.inplace)


class Softplus(_Configured):
    """``log(1 + e^(β·x)) / β``, a smooth ReLU (linear above ``threshold``)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__(beta=beta, threshold=threshold)

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)


class Softmax(_Configured):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__(dim=dim)

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)


class LogSoftmax(Softmax):
    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)


# ------------------------------------------------------------ regularisation, norms
class Dropout(Module):
    """Zero each element with probability ``p`` while training; scale the rest by 1/(1−p).

    In ``eval()`` mode it passes its input through unchanged.
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        checks.probability("Dropout", p)
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class LayerNorm(Module):
    """Normalise over the last ``len(normalized_shape)`` dims, then scale and shift."""

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(wb.ones(*self.normalized_shape, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(wb.zeros(*self.normalized_shape, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class Embedding(Module):
    """A lookup table: row ``i`` of ``weight`` is the vector of token ``i``.

    Rows start as N(0, 1); the row at ``padding_idx`` starts (and stays) at zero.
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.weight = Parameter(wb.empty(num_embeddings, embedding_dim, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with wb.no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor) -> Tensor:
        extras = _settings(padding_idx=self.padding_idx)
        return F.embedding(input, self.weight, **extras)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text


class Flatten(_Configured):
    """Flatten dims ``start_dim..end_dim`` into one (by default: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__(start_dim=start_dim, end_dim=end_dim)

    def forward(self, input: Tensor) -> Tensor:
        return wb.flatten(input, self.start_dim, self.end_dim)


class _BatchNorm(Module):
    """Normalize each channel with the batch's statistics while training, and with their
    running averages in eval mode (``model.eval()``); then scale and shift per channel."""

    expected_dims: tuple = ()

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.has_bias = affine and bias
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(wb.ones(num_features, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(wb.zeros(num_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", wb.zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", wb.ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", wb.tensor(0))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in self.expected_dims:
            raise ValueError(
                f"expected {' or '.join(f'{d}D' for d in self.expected_dims)} input (got "
                f"{input.ndim}D input)"
            )
        use_batch_stats = self.training or self.running_mean is None
        momentum = self.momentum
        if self.training and self.num_batches_tracked is not None:
            with wb.no_grad():
                self.num_batches_tracked.add_(1)
            if momentum is None:  # PyTorch's cumulative average: batch k weighs 1/k
                momentum = 1.0 / float(self.num_batches_tracked.item())
        return F.batch_norm(
            input,
            self.running_mean if self.training or self.track_running_stats else None,
            self.running_var if self.training or self.track_running_stats else None,
            self.weight,
            self.bias,
            use_batch_stats,
            momentum,
            self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.has_bias}, track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch norm of ``(N, C)`` or ``(N, C, L)`` inputs."""

    expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm of ``(N, C, H, W)`` images."""

    expected_dims = (4,)


class LazyLinear(Linear):
    """A ``Linear`` whose ``in_features`` is read from the first input it sees.

    Its weight starts as an empty Parameter and is filled in (the same Parameter
    object, so an optimizer made before the first call still holds it) and
    initialised, as ``Linear``'s, on the first ``forward``.
    """

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        Module.__init__(self)
        self.in_features = 0
        self.out_features = out_features
        self._factory = {"dtype": dtype, "device": device}
        self.weight = Parameter(wb.empty(0, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(wb.empty(0, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        if self.in_features == 0:
            self._materialize(input.shape[-1])
        return super().forward(input)

    def _materialize(self, in_features: int) -> None:
        self.in_features = in_features
        shaped = wb.empty(self.out_features, in_features, **self._factory)
        self.weight._data = shaped._data
        if self.bias is not None:
            self.bias._data = wb.empty(self.out_features, **self._factory)._data
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.in_features:
            super().reset_parameters()
