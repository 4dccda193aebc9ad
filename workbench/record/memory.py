"""Saved-tensor memory: how many bytes the live graphs hold for backward, now and at the peak.

Every array a graph keeps for backward is *held* here while it is kept: by a node's
saved tensor, by a checkpoint's saved inputs, or by a checkpoint handle once its
value was recomputed. An array held by several savers (``y = x.tanh()`` saves ``y``
and ``z = y @ w`` saves it again) is counted once, because it is one buffer.

The counters change in three places only: when a saver takes an array
(:func:`hold`), and when it lets go (:func:`let_go`), either because backward freed
the graph or because the graph was dropped without a backward. That is what makes
the number trustworthy enough to plot::

    wb.autograd.reset_peak_saved_memory()
    loss = model(x); loss.backward()
    wb.autograd.saved_memory().peak      # bytes

The counters are plain integers updated without a lock, to keep recording an op
cheap: exact when one thread at a time records and frees graphs, approximate when
several threads do so at once.
"""

from __future__ import annotations

from typing import NamedTuple


class _Counters:
    """The counters (bytes). ``held`` maps ``id(array)`` to its number of savers.

    An id is safe as a key: every saver keeps its array alive until it lets go, so the
    id cannot be reused by another array while it is in the table. (One instance with
    slots: its fields are quicker to update than a module's or a class's attributes.)
    """

    __slots__ = ("current", "peak", "held")

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0
        self.held: dict = {}


SavedMemory = _Counters()


class SavedMemoryStats(NamedTuple):
    """What :func:`saved_memory` returns."""

    current: int  # bytes held for backward right now
    peak: int  # the most held at any moment since the last reset


def hold(array) -> int:
    """Count ``array`` as saved for backward; returns the bytes this added (0 if already held)."""
    held = SavedMemory.held
    key = id(array)
    savers = held.get(key, 0)
    held[key] = savers + 1
    if savers:
        return 0
    nbytes = array.nbytes
    current = SavedMemory.current + nbytes
    SavedMemory.current = current
    if current > SavedMemory.peak:
        SavedMemory.peak = current
    return nbytes


def let_go(array) -> int:
    """One saver of ``array`` lets go; returns the bytes freed (its size when it was the last)."""
    savers = SavedMemory.held.pop(id(array), 0)  # (0 is not expected; a destructor calls this)
    if savers > 1:
        SavedMemory.held[id(array)] = savers - 1
    freed = array.nbytes if savers == 1 else 0
    SavedMemory.current -= freed
    return freed


def saved_memory() -> SavedMemoryStats:
    """Bytes held by saved tensors of live graphs: ``current`` and ``peak``."""
    return SavedMemoryStats(SavedMemory.current, SavedMemory.peak)


def reset_peak_saved_memory() -> None:
    """Start measuring a new peak from what is held now (``torch.cuda.reset_peak_memory_stats``)."""
    SavedMemory.peak = SavedMemory.current
