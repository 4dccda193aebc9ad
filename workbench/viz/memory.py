"""The saved-tensor memory of a training step, over time, read from the engine's events.

::

    with watch_memory() as memory:
        loss = model(x).pow(2).mean()
        loss.backward()
    memory.peak_bytes            # the most the step's saved tensors held at once
    memory.held()                # bytes held after each change: the timeline
    plot_memory(ax, {"plain": memory})

Every time a node saves tensors (``SavedTensorPacked``) or lets them go
(``SavedTensorFreed``), the event carries ``total_bytes``, the engine's counter after
the change (:func:`workbench.autograd.saved_memory`). One point per event is the
timeline. ``CheckpointRecompute`` events bracket each rerun of a checkpoint segment.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from ..core import events
from ..record import memory


@dataclass
class MemoryTimeline:
    """What :func:`watch_memory` heard. Bytes are counted above ``base``.

    ``base`` is what other live graphs held when watching started, so two steps
    watched one after the other are drawn on the same footing.
    """

    base: int
    totals: list = field(default_factory=list)  # total_bytes of each memory event
    backward_at: int | None = None  # index into totals where backward started
    recomputes: list = field(default_factory=list)  # segment id of each rerun, in order
    recompute_at: list = field(default_factory=list)  # index into totals of each rerun
    recomputed_nodes: int = 0  # nodes that got saved values back, over all reruns
    peak: int = 0  # the engine's peak counter when watching ended

    @property
    def peak_bytes(self) -> int:
        """The most saved-tensor memory the watched code added at any moment."""
        return self.peak - self.base

    def held(self) -> np.ndarray:
        """Bytes held above ``base`` after each memory event (the y values of the timeline)."""
        return np.asarray(self.totals, dtype=np.int64) - self.base

    def hear(self, event: events.Event) -> None:
        """The event listener: one point per memory change, a mark per recomputation."""
        if isinstance(event, (events.SavedTensorPacked, events.SavedTensorFreed)):
            self.totals.append(event.total_bytes)
        elif isinstance(event, events.CheckpointRecompute) and event.phase == "begin":
            self.recomputes.append(event.segment)
            self.recompute_at.append(len(self.totals))
            self.recomputed_nodes += len(event.nodes)
        elif isinstance(event, events.BackwardStarted) and self.backward_at is None:
            self.backward_at = len(self.totals)


@contextlib.contextmanager
def watch_memory() -> Iterator[MemoryTimeline]:
    """Record the saved-tensor timeline of the block; measure its peak from a fresh start.

    Resets the engine's peak counter (like ``torch.cuda.reset_peak_memory_stats``).
    """
    memory.reset_peak_saved_memory()
    timeline = MemoryTimeline(base=memory.saved_memory().current)
    with events.subscribe(timeline.hear):
        yield timeline
    timeline.peak = memory.saved_memory().peak


def plot_memory(ax, timelines: dict) -> None:
    """Draw each named :class:`MemoryTimeline` on matplotlib axes ``ax``, in KiB.

    A dotted line marks where each backward pass starts, a triangle each recomputation.
    """
    for name, timeline in timelines.items():
        kib = timeline.held() / 1024
        (line,) = ax.plot(kib, drawstyle="steps-post", label=name)
        if timeline.backward_at is not None:
            ax.axvline(timeline.backward_at, color=line.get_color(), linestyle=":", linewidth=1)
        at = [i for i in timeline.recompute_at if i < len(kib)]
        if at:
            ax.plot(at, kib[at], "v", color=line.get_color(), markersize=5)
    ax.set_xlabel("memory event (dotted: backward starts, ▼: a segment is recomputed)")
    ax.set_ylabel("held by saved tensors (KiB)")
    ax.legend(loc="upper right", fontsize=8)
