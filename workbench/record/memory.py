"""Saved-tensor memory: how many bytes the live graphs hold for backward, now and at the peak.

A *saver* is an object that keeps an array for backward: a node's saved tensor, a
checkpoint's saved input, a checkpoint handle once its value was recomputed. Its
``held`` attribute is that array (None once it let go); its class is named here with
:func:`saver`. An array held by several savers
(``y = x.tanh()`` saves ``y`` and ``z = y @ w`` saves it again) is counted once,
because it is one buffer.

The two figures are found in two ways:

* ``current`` is computed when asked: the bytes of the distinct arrays that the savers
  alive hold (:func:`held_now`), found among the objects that Python's cyclic collector
  tracks (``gc.get_objects``, which sees every instance of a class with slots). Recording
  an op pays nothing for it: a list of the savers cost every save a weak reference and
  its sweeping, 2.5% of an op on (8, 8) tensors (callgrind, bench_overhead.py's chain).
* ``peak`` cannot be recovered after the fact, so it is counted, from the moment
  someone asks for it: :func:`reset_peak_saved_memory` starts the counters from what
  is held then (and so does an event listener: the memory events carry running
  totals). From then on each saver adds its bytes when it takes an array
  (:func:`hold`) and takes them off when it lets go (:func:`let_go`): when backward
  frees it, or when its graph is dropped without a backward (a weak reference with a
  callback tells). Once started, the counters keep running, as PyTorch's memory
  statistics do; they cost about a microsecond per op. ::

    wb.autograd.reset_peak_saved_memory()
    loss = model(x); loss.backward()
    wb.autograd.saved_memory().peak      # bytes

The counters are plain integers updated without a lock, to keep recording an op
cheap: exact when one thread at a time records and frees graphs, approximate when
several threads do so at once.
"""

from __future__ import annotations

import gc
import weakref
from typing import NamedTuple

from ..core import events
from . import collector

SAVER_TYPES: set = set()  # the classes whose instances keep an array for backward


def saver(cls: type) -> type:
    """Class decorator: instances of ``cls`` are savers (they have ``held``)."""
    SAVER_TYPES.add(cls)
    return cls


class _Book:
    """The counters (bytes), once started.

    While ``counting``: ``held`` maps ``id(array)`` to its number of
    counted savers, and ``counted`` maps ``id(saver)`` to ``(weak reference with a
    callback, array, saver.dropped_as)``, the last naming the saver in the event of its
    end. An id is safe as a key: a saver keeps its array alive, and the callback runs as
    the saver dies, before its id can be reused. (One instance with slots: its fields
    are quicker to update than a module's or a class's attributes.)
    """

    __slots__ = ("counting", "current", "peak", "held", "counted")

    def __init__(self) -> None:
        self.counting = False
        self.current = 0
        self.peak = 0
        self.held: dict = {}
        self.counted: dict = {}


SavedMemory = _Book()


class SavedMemoryStats(NamedTuple):
    """What :func:`saved_memory` returns."""

    current: int  # bytes held for backward right now
    peak: int  # the most held at any moment since the last reset


def track(saver) -> int:
    """``saver`` has just taken its ``held`` array: the bytes this added to the running
    count (0 while nothing counts, or when the array was already held)."""
    return count(saver) if SavedMemory.counting or events.listening else 0


def savers_holding() -> list:
    """The savers alive that hold an array, found among the objects the cyclic collector
    tracks (what recording froze out of its sight is handed back to it first)."""
    collector.thaw()
    return [o for o in gc.get_objects() if type(o) in SAVER_TYPES and o.held is not None]


def held_now() -> int:
    """The bytes that the savers alive hold now, each array once (computed, not counted)."""
    return sum({id(s.held): s.held.nbytes for s in savers_holding()}.values())


def counting() -> bool:
    """Whether the counters run; an event listener starts them (its events carry totals)."""
    if events.listening and not SavedMemory.counting:
        start_counting()
    return SavedMemory.counting


def start_counting(but=None) -> None:
    """Count every array held now, and each saver's array from now on. (``but``: a saver
    that has just taken its array and is counted by its own :func:`count`.)"""
    SavedMemory.counting = True
    for holder in savers_holding():
        if holder is not but:
            count(holder)


def count(saver) -> int:
    """Count the array of ``saver`` until it lets go; returns the bytes this added."""
    if not SavedMemory.counting:
        start_counting(but=saver)
    key = id(saver)
    when_dies = weakref.ref(saver, lambda _, key=key: _died(key))
    SavedMemory.counted[key] = (when_dies, saver.held, saver.dropped_as)
    return hold(saver.held)


def uncount(saver) -> int:
    """``saver`` lets go now (backward freed it); returns the bytes this freed."""
    if not counting():
        return 0
    entry = SavedMemory.counted.pop(id(saver), None)  # its callback goes with it
    return 0 if entry is None else let_go(entry[1])


def _died(key: int) -> None:
    """A counted saver died still holding its array: backward freed its slot, or its graph
    was dropped without a backward (listeners hear of that one only: when someone
    listens, backward lets go first, with :func:`uncount`)."""
    entry = SavedMemory.counted.pop(key, None)
    if entry is None:
        return
    _, array, (slot, tensor) = entry
    freed = let_go(array)
    if events.listening:
        events.publish(
            events.SavedTensorFreed(
                node="",
                slot=slot,
                nbytes=freed,
                total_bytes=SavedMemory.current,
                tensor=None if tensor is None else tensor.uid,
            )
        )


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
    savers = SavedMemory.held.pop(id(array), 0)
    if savers > 1:
        SavedMemory.held[id(array)] = savers - 1
    freed = array.nbytes if savers == 1 else 0
    SavedMemory.current -= freed
    return freed


def running_total() -> int:
    """The counted total (bytes), for an event about to be published."""
    counting()
    return SavedMemory.current


def saved_memory() -> SavedMemoryStats:
    """Bytes held by saved tensors of live graphs: ``current`` and ``peak``.

    Before :func:`reset_peak_saved_memory` has started the count, nothing was counted
    and the peak is the current figure.
    """
    if SavedMemory.counting:
        return SavedMemoryStats(SavedMemory.current, SavedMemory.peak)
    now = held_now()
    return SavedMemoryStats(now, now)


def reset_peak_saved_memory() -> None:
    """Start measuring a new peak from what is held now (``torch.cuda.reset_peak_memory_stats``).

    The first call starts the counters (:func:`start_counting`)."""
    if not SavedMemory.counting:
        start_counting()
    SavedMemory.peak = SavedMemory.current
