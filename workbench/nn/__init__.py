"""Neural-network building blocks with PyTorch's names: ``wb.nn.Linear``, ``wb.nn.Module``...

``wb.nn.functional`` (imported as ``F``) holds the differentiable functions
(linear, conv2d, losses...); the modules here hold parameters and settings and
call those functions.
"""

from . import functional, init
from .containers import ModuleList, Sequential
from .layers import (
    GELU,
    AvgPool2d,
    Conv2d,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    Linear,
    LogSoftmax,
    MaxPool2d,
    ReLU,
    Sigmoid,
    Softmax,
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
