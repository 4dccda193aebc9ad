"""Samples for the TVM checkpoint markers (identity ops that bound a recomputed stage)."""

from __future__ import annotations

from tests.samples import Sample
from workbench.ops.markers import end_checkpoint, start_checkpoint


def _stage(x):
    """sin(x) inside a stage: its saved input is recomputed in backward (also for grad-of-grad)."""
    return end_checkpoint(start_checkpoint(x).sin())


SAMPLES = [
    Sample(
        "checkpoint_stage",
        ("start_checkpoint", "end_checkpoint"),
        _stage,
        ((3, 4),),
        lambda x: x.sin(),
    ),
]
