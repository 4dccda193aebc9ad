"""Utilities under PyTorch's names: ``wb.utils.checkpoint`` is ``torch.utils.checkpoint``.

Loaded on first use of ``wb.utils`` (see ``workbench/__init__.py``).
"""

from . import checkpoint

__all__ = ["checkpoint"]
