"""PyTorch's process-wide switches, accepted where they change nothing here.

``torch.compile(model)`` speeds a model up without changing its numbers: here it traces
the model into a program and runs that (``workbench/program/``).
``use_deterministic_algorithms(True)`` asks for reproducible kernels: the workbench's
always are. ``set_num_threads`` is PyTorch's CPU thread pool:
numpy's BLAS keeps its own (set ``OMP_NUM_THREADS`` before starting Python).
"""

from __future__ import annotations

import os
from collections.abc import Callable


def compile(model: Callable | None = None, **options):  # noqa: A001  (torch.compile's name)
    """``torch.compile``: see :func:`workbench.program.compile` (imported when first used)."""
    from ..program import compile as compile_program

    return compile_program(model, **options)


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Accepted: every workbench kernel is deterministic already."""


def are_deterministic_algorithms_enabled() -> bool:
    return True


def set_num_threads(count: int) -> None:
    """Accepted; numpy's BLAS threads are set by ``OMP_NUM_THREADS`` before Python starts."""


def get_num_threads() -> int:
    return int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))
