"""``wb.accelerator``: PyTorch's device-neutral questions (``torch.accelerator``).

Recent PyTorch tutorials open with
``device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available()
else "cpu"``; here the only accelerator is a CUDA GPU through CuPy.
"""

from __future__ import annotations

from ..core.devices import device
from . import cuda


def is_available() -> bool:
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> device | None:
    """``device("cuda")`` when a GPU is usable, else None."""
    return device("cuda") if cuda.is_available() else None


def device_count() -> int:
    return cuda.device_count()


def synchronize(device=None) -> None:
    cuda.synchronize(device)
