"""``wb.backends``: the switches PyTorch programs set at the top, accepted and explained.

``torch.backends.cudnn.deterministic = True`` and ``benchmark = False`` ask for
reproducible GPU kernels; the workbench's kernels (numpy, CuPy) are deterministic
already, so the settings are kept and change nothing. ``torch.backends.mps`` is Apple's
GPU, which the workbench cannot use: ``mps.is_available()`` is False, so the usual
``"cuda" if ... else "mps" if torch.backends.mps.is_available() else "cpu"`` picks the CPU.
"""

from __future__ import annotations

from types import SimpleNamespace

from . import cuda as _cuda

cudnn = SimpleNamespace(
    enabled=True,
    deterministic=False,
    benchmark=False,
    allow_tf32=True,
    is_available=_cuda.is_available,
)

mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
