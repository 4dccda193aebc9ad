"""Python's cyclic garbage collector, kept away from big graphs.

A graph of 100,000 nodes is about half a million Python objects that the cyclic
collector tracks. Left alone, its collections would walk them again and again while
the graph is recorded and while backward runs, and both would grow faster than the
graph (15-30x the time for 10x the ops, measured here). Graph objects never form
reference cycles (nodes hold their outputs weakly) and are freed by reference counting,
so the collector can never free them anyway. Two measures, both pinned by
``tests/test_engine_gc.py``:

- :func:`freeze_recorded_graph`: every ``FREEZE_EVERY`` nodes recorded, the young
  cyclic garbage is collected and everything the collector tracks is moved out of its
  sight (``gc.freeze``); a frozen object is still freed by reference counting. The
  next backward pass unfreezes everything, so nothing the collector could free is
  kept from it for longer than one training step.
- :func:`pause` / :func:`resume`: the collector is paused while a backward pass
  through a graph of ``BIG_GRAPH`` nodes or more runs (backward makes no reference
  cycles of its own; on a smaller graph a collection costs little, and the pass does
  not touch the collector). Passes in several threads share one pause: the first to
  start remembers whether the collector was on, the last to end restores it.
"""

from __future__ import annotations

import gc
import threading

FREEZE_EVERY = 4096  # recorded nodes between two freezes
BIG_GRAPH = 1000  # nodes: a backward pass through a graph this big pauses the collector
freeze_at = 0  # the node number at which OpNode freezes next (read on every node)

_lock = threading.Lock()
_passes = 0  # backward passes running now, all threads together
_was_enabled = False  # whether the collector was on when the first of them started
_froze = False  # whether recording froze objects since the last pass


def freeze_recorded_graph(seq: int) -> None:
    """Collect young cyclic garbage, then hide every tracked object from the collector.

    Called by ``OpNode`` for node number ``seq`` once ``seq`` reaches ``freeze_at``.
    """
    global freeze_at, _froze
    freeze_at = seq + FREEZE_EVERY
    with _lock:
        if gc.isenabled():
            gc.collect(1)  # the young generations: cheap, and cycles there are freed
        gc.freeze()
        _froze = True


def pause() -> None:
    """A backward pass starts: the collector stops (see the module docstring)."""
    global _passes, _was_enabled
    with _lock:
        if _passes == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _passes += 1


def resume() -> None:
    """A backward pass ends: the last one gives the collector back what recording froze,
    and turns it on again if it was on."""
    global _passes
    with _lock:
        _passes -= 1
        if _passes > 0:
            return
        _unfreeze()
        if _was_enabled:
            gc.enable()


def thaw() -> None:
    """Give the collector back what recording froze, now (``gc.get_objects`` sees it
    again: memory.py looks for the saved tensors there)."""
    with _lock:
        _unfreeze()


def _unfreeze() -> None:
    global _froze
    if _froze:
        gc.unfreeze()
        _froze = False
