"""numpy's argument names, which PyTorch accepts too: ``axis=`` for ``dim=`` and ``keepdims=``
for ``keepdim=``. So ``x.sum(axis=1, keepdims=True)`` (as makemore and d2l write it) works.

The reductions (``sum``, ``mean``, ``max``, ``argmax``, ``std``...) take them in
``**numpy_names`` and call :func:`numpy_style`; giving a dim both ways is a TypeError,
as in PyTorch.
"""

from __future__ import annotations

NUMPY_NAMES = ("axis", "keepdims")


def numpy_style(op: str, dim, keepdim, numpy_names: dict) -> tuple:
    """``(dim, keepdim)`` with ``axis=`` and ``keepdims=`` from ``numpy_names`` put in."""
    for name in numpy_names:
        if name not in NUMPY_NAMES:
            raise TypeError(f"{op}() got an unexpected keyword argument '{name}'")
    if "axis" in numpy_names:
        if dim not in (None, ()):
            raise TypeError(
                f"{op}() got an unexpected keyword argument 'axis' (numpy's name for 'dim', "
                "which was given too)"
            )
        dim = numpy_names["axis"]
    if "keepdims" in numpy_names:
        keepdim = numpy_names["keepdims"]
    return dim, keepdim
