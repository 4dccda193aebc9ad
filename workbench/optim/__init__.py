"""Optimizers with PyTorch's names and update formulas: ``wb.optim.SGD``, ``Adam``, ``AdamW``."""

from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD
