"""Utilities under PyTorch's names: ``wb.utils.checkpoint`` is ``torch.utils.checkpoint``,
``wb.utils.data`` is ``torch.utils.data`` (datasets and the DataLoader).

Loaded on first use of ``wb.utils`` (see ``workbench/__init__.py``).
"""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
