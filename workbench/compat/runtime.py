"""PyTorch's process-wide switches, accepted where they change nothing here.

``torch.compile`` is not here: it traces a model into a program and runs that, so it
lives with the programs (:func:`workbench.program.compile`, bound as ``wb.compile``).
``use_deterministic_algorithms(True)`` asks for reproducible kernels: the workbench's
always are. ``set_num_threads`` is PyTorch's CPU thread pool:
numpy's BLAS keeps its own (set ``OMP_NUM_THREADS`` before starting Python).
"""

from __future__ import annotations

import os


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Accepted: every workbench kernel is deterministic already."""


def are_deterministic_algorithms_enabled() -> bool:
    return True


def set_num_threads(count: int) -> None:
    """Accepted; numpy's BLAS threads are set by ``OMP_NUM_THREADS`` before Python starts."""


def get_num_threads() -> int:
    return int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))
