"""Optimizers with PyTorch's names and update formulas: ``wb.optim.SGD``, ``Adam``, ``AdamW``,
``RMSprop``, ``Adagrad``, ``Adadelta``; learning-rate schedules in ``wb.optim.lr_scheduler``."""

from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import Adadelta, Adagrad, RMSprop
from .sgd import SGD


def __getattr__(name: str):
    from ..compat.torch_alias import not_here

    raise AttributeError(not_here(__name__, name))
