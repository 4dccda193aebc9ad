"""Neural-network building blocks with PyTorch's names: ``wb.nn.Linear``, ``wb.nn.Module``...

``wb.nn.functional`` (imported as ``F``) holds the differentiable functions
(linear, conv2d, losses...); the modules here hold parameters and settings and
call those functions.
"""

from . import functional, init, utils
from .containers import ModuleList, Sequential
from .layers import (
    ELU,
    GELU,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    Conv2d,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    LazyLinear,
    LeakyReLU,
    Linear,
    LogSoftmax,
    MaxPool2d,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from .losses import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
)
from .module import Module
from .parameter import Parameter


def __getattr__(name: str):
    from ..compat.torch_alias import not_here

    raise AttributeError(not_here("workbench.nn", name))
