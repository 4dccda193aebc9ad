"""Samples for joining, slicing, reordering and gathering ops (workbench/ops/indexing.py)."""

from __future__ import annotations

import numpy as np

import workbench as wb
from tests.samples import Sample

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

DUPLICATES = np.array([0, 0, 2])  # index 0 twice: its gradient must accumulate
GATHER_INDEX = np.array([[0, 0, 3], [2, 1, 2]])
MASK = np.array([[True], [False], [True]])


def _pieces(pieces, lib):
    """Weight each piece differently, so a mix-up of pieces changes the gradient."""
    return lib.cat([p * (i + 1) for i, p in enumerate(pieces)], 0)


SAMPLES = [
    Sample(
        "cat:three_dim1",
        ("cat",),
        lambda a, b, c: wb.cat([a, b, c], 1),
        ((3, 3), (3, 4), (3, 5)),
        lambda a, b, c: torch.cat([a, b, c], 1),
    ),
    Sample(
        "cat:one_constant",
        ("cat",),
        lambda a, b: wb.cat([a, b], -1),
        ((2, 2), (2, 3)),
        lambda a, b: torch.cat([a, b], -1),
        grad=(True, False),
    ),
    Sample(
        "stack:dim1",
        ("stack",),
        lambda a, b: wb.stack([a, b], 1),
        ((2, 3), (2, 3)),
        lambda a, b: torch.stack([a, b], 1),
    ),
    Sample(
        "split:sizes",
        ("cat", "getitem"),
        lambda x: _pieces(wb.split(x, [3, 7]), wb),
        ((10, 2),),
        lambda x: _pieces(torch.split(x, [3, 7]), torch),
    ),
    Sample(
        "chunk:uneven",
        ("cat", "getitem"),
        lambda x: _pieces(x.chunk(3), wb),
        ((7, 2),),
        lambda x: _pieces(x.chunk(3), torch),
    ),
    Sample(
        "unbind",
        ("stack", "getitem"),
        lambda x: wb.stack([p * (i + 1) for i, p in enumerate(x.unbind(1))]),
        ((2, 3),),
        lambda x: torch.stack([p * (i + 1) for i, p in enumerate(x.unbind(1))]),
    ),
    Sample(
        "flip",
        ("flip",),
        lambda x: x.flip((0, 2)),
        ((2, 3, 4),),
        lambda x: x.flip((0, 2)),
    ),
    Sample(
        "roll:dims",
        ("roll",),
        lambda x: x.roll((1, -2), (0, 1)),
        ((3, 4),),
        lambda x: x.roll((1, -2), (0, 1)),
    ),
    Sample("roll:flat", ("roll",), lambda x: wb.roll(x, 5), ((3, 4),), lambda x: x.roll(5)),
    Sample(
        "pad:constant",
        ("pad",),
        lambda x: wb.pad(x, (1, 2, 0, 1), value=0.5),
        ((2, 3, 4),),
        lambda x: TF.pad(x, (1, 2, 0, 1), value=0.5),
    ),
    Sample(
        "pad:negative_crops",
        ("pad",),
        lambda x: wb.nn.functional.pad(x, (-1, 2, 1, -2)),
        ((3, 4),),
        lambda x: TF.pad(x, (-1, 2, 1, -2)),
    ),
    Sample(
        "pad:reflect",
        ("take",),
        lambda x: wb.pad(x, (2, 1), mode="reflect"),
        ((2, 3, 4),),
        lambda x: TF.pad(x, (2, 1), mode="reflect"),
    ),
    Sample(
        "pad:replicate",
        ("take",),
        lambda x: wb.pad(x, (1, 2, 2, 0), mode="replicate"),
        ((1, 2, 3, 3),),
        lambda x: TF.pad(x, (1, 2, 2, 0), mode="replicate"),
    ),
    Sample(
        "pad:circular",
        ("take",),
        lambda x: wb.pad(x, (1, 2), mode="circular"),
        ((1, 2, 4),),
        lambda x: TF.pad(x, (1, 2), mode="circular"),
    ),
    Sample(
        "take:flat_duplicates",
        ("take",),
        lambda x, i: wb.take(x, i),
        ((2, 3), np.array([[0, 5], [0, 3]])),
        lambda x, i: torch.take(x, i),
    ),
    Sample(
        "take:axis1",
        ("take",),
        lambda x, i: wb.take(x, i, axis=1),
        ((2, 4), DUPLICATES),
        lambda x, i: torch.index_select(x, 1, i),
    ),
    Sample(
        "index_select:duplicates",
        ("take",),
        lambda x, i: x.index_select(0, i),
        ((3, 2), DUPLICATES),
        lambda x, i: x.index_select(0, i),
    ),
    Sample(
        "take_backward:axis0",
        ("take_backward",),
        lambda g, x, i: wb.ops.grad.take_backward(g, x, i, axis=0),
        ((3, 2), (4, 2), DUPLICATES),
        lambda g, x, i: torch.zeros_like(x).index_add(0, i, g),
        grad=(True, False, False),
    ),
    Sample(
        "take_backward:flat",
        ("take_backward",),
        lambda g, x, i: wb.ops.grad.take_backward(g, x, i),
        ((3,), (2, 2), DUPLICATES),
        lambda g, x, i: torch.zeros_like(x).view(-1).index_add(0, i, g).view(2, 2),
        grad=(True, False, False),
    ),
    Sample(
        "gather:dim1",
        ("gather",),
        lambda x, i: x.gather(1, i),
        ((2, 4), GATHER_INDEX),
        lambda x, i: x.gather(1, i),
    ),
    Sample(
        "gather:smaller_index",
        ("gather",),
        lambda x, i: wb.gather(x, 0, i),
        ((4, 5), GATHER_INDEX),
        lambda x, i: torch.gather(x, 0, i),
    ),
    Sample(
        "gather_backward",
        ("gather_backward",),
        lambda g, x, i: wb.ops.indexing.gather_backward(g, x, 1, i),
        ((2, 3), (2, 4), GATHER_INDEX),
        lambda g, x, i: torch.zeros_like(x).scatter_add(1, i, g),
        grad=(True, False, False),
    ),
    Sample("tril", ("tril",), lambda x: x.tril(), ((2, 3, 4),), lambda x: x.tril()),
    Sample("tril:k1", ("tril",), lambda x: wb.tril(x, 1), ((3, 4),), lambda x: x.tril(1)),
    Sample("triu", ("triu",), lambda x: x.triu(), ((3, 4),), lambda x: x.triu()),
    Sample("triu:k-1", ("triu",), lambda x: wb.triu(x, -1), ((4, 3),), lambda x: x.triu(-1)),
    Sample(
        "repeat:new_dim",
        ("repeat",),
        lambda x: x.repeat(2, 1, 3),
        ((2, 3),),
        lambda x: x.repeat(2, 1, 3),
    ),
    Sample("tile", ("repeat",), lambda x: x.tile((2,)), ((2, 3),), lambda x: x.tile((2,))),
    Sample(
        "where:broadcast",
        ("where",),
        lambda c, a, b: wb.where(c, a, b),
        (MASK, (1, 4), (3, 1)),
        lambda c, a, b: torch.where(c, a, b),
    ),
    Sample(
        "masked_fill:broadcast_mask",
        ("where",),
        lambda x, m: x.masked_fill(m, -1.5),
        ((3, 4), MASK),
        lambda x, m: x.masked_fill(m, -1.5),
    ),
    Sample(
        "masked_fill:tensor_value",
        ("where",),
        lambda x, m, v: wb.masked_fill(x, m, v),
        (
            (3, 4),
            MASK,
            (0.7 * np.ones(())),
        ),
        lambda x, m, v: torch.masked_fill(x, m, v),
    ),
]
