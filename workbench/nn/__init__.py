"""Neural-network building blocks, as ``torch.nn``: ``wb.nn.functional`` holds the functions."""

from . import functional as functional
