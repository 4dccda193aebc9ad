"""Samples for prod, var, std, logsumexp, cumsum, cumprod, norm, softmax, log_softmax."""

from __future__ import annotations

import numpy as np

import workbench as wb
from tests.samples import Sample

try:
    import torch
except ImportError:
    torch = None

# Zeros make prod and cumprod take their no-division formulas: one zero in a row,
# two zeros in a row, and a row without zeros.
WITH_ZEROS = np.array([[0.5, 0.0, 1.5, -2.0], [0.0, 1.2, 0.0, 0.7], [1.1, -0.9, 1.3, 0.6]])
# Norm inputs with a distinct largest |x| per row (no ties) and an all-zero row.
NORM_ROWS = np.array([[0.3, -1.7, 0.9, 0.2], [0.0, 0.0, 0.0, 0.0], [2.1, 0.4, -0.8, 1.0]])


def _s(name, ops, fn, inputs, torch_fn, **kw):
    return Sample(name, ops, fn, inputs, torch_fn, **kw)


SAMPLES = [
    _s("prod:all", ("prod",), lambda x: x.prod(), ((2, 3),), lambda x: x.prod(), low=0.5, high=1.5),
    _s(
        "prod:dim_keepdim",
        ("prod",),
        lambda x: wb.prod(x, 1, keepdim=True),
        ((3, 4),),
        lambda x: torch.prod(x, 1, keepdim=True),
        low=-1.5,
        high=1.5,
    ),
    _s("prod:zeros_dim", ("prod",), lambda x: x.prod(1), (WITH_ZEROS,), lambda x: x.prod(1)),
    _s("prod:zeros_all", ("prod",), lambda x: x[0].prod(), (WITH_ZEROS,), lambda x: x[0].prod()),
    _s("cumsum:dim1", ("cumsum",), lambda x: x.cumsum(1), ((3, 4),), lambda x: x.cumsum(1)),
    _s("cumsum:1d", ("cumsum",), lambda x: wb.cumsum(x, 0), ((5,),), lambda x: x.cumsum(0)),
    _s("cumprod:dim1", ("cumprod",), lambda x: x.cumprod(1), ((3, 4),), lambda x: x.cumprod(1)),
    _s(
        "cumprod:zeros",
        ("cumprod",),
        lambda x: wb.cumprod(x, -1),
        (WITH_ZEROS,),
        lambda x: torch.cumprod(x, -1),
    ),
    _s(
        "cumprod:zeros_dim0",
        ("cumprod",),
        lambda x: wb.cumprod(x, 0),
        (WITH_ZEROS,),
        lambda x: torch.cumprod(x, 0),
    ),
    _s("var:unbiased", ("var",), lambda x: x.var(), ((3, 4),), lambda x: x.var()),
    _s(
        "var:population_dims",
        ("var",),
        lambda x: wb.var(x, (0, 2), correction=0),
        ((2, 3, 4),),
        lambda x: torch.var(x, (0, 2), correction=0),
    ),
    _s(
        "var:keepdim_unbiased_false",
        ("var",),
        lambda x: x.var(1, False, True),
        ((3, 4),),
        lambda x: x.var(1, False, True),
    ),
    _s(
        "std:dim",
        ("std",),
        lambda x: x.std(1),
        ((3, 5),),
        lambda x: x.std(1),
    ),
    _s(
        "std:all_population_keepdim",
        ("std",),
        lambda x: wb.std(x, (0, 1), correction=0, keepdim=True),
        ((3, 4),),
        lambda x: torch.std(x, (0, 1), correction=0, keepdim=True),
    ),
    _s(
        "logsumexp:dim",
        ("logsumexp",),
        lambda x: x.logsumexp(1),
        ((3, 4),),
        lambda x: x.logsumexp(1),
        low=-3,
        high=3,
    ),
    _s(
        "logsumexp:all_keepdim",
        ("logsumexp",),
        lambda x: wb.logsumexp(x, (0, 1), keepdim=True),
        ((3, 4),),
        lambda x: torch.logsumexp(x, (0, 1), keepdim=True),
    ),
    _s("norm:fro", ("norm",), lambda x: x.norm(), ((3, 4),), lambda x: x.norm()),
    _s(
        "norm:p2_zero_row",
        ("norm",),
        lambda x: wb.norm(x, 2, dim=1),
        (NORM_ROWS,),
        lambda x: torch.norm(x, 2, dim=1),
        gradgrad=False,
        note="the Hessian of ‖x‖ is unbounded near x = 0; first order is checked at the zero row",
    ),
    _s(
        "norm:p2_dim",
        ("norm",),
        lambda x: wb.norm(x, 2, dim=1),
        (NORM_ROWS[[0, 2]],),
        lambda x: torch.norm(x, 2, dim=1),
    ),
    _s(
        "norm:p1",
        ("norm",),
        lambda x: x.norm(1, dim=1),
        (NORM_ROWS[[0, 2]],),
        # torch's own norm(1) has a ZeroTensor second derivative, which .numpy() refuses
        lambda x: (x * x.sign().detach()).sum(1),
    ),
    _s(
        "norm:inf",
        ("norm",),
        lambda x: x.norm(float("inf"), dim=1, keepdim=True),
        (NORM_ROWS[[0, 2]],),
        lambda x: (x * x.sign().detach()).amax(1, keepdim=True),  # (ZeroTensor, as above)
    ),
    _s(
        "norm:p3",
        ("norm",),
        lambda x: wb.norm(x, 3),
        (NORM_ROWS[[0, 2]],),
        lambda x: torch.norm(x, 3),
    ),
    _s(
        "softmax:last",
        ("softmax",),
        lambda x: x.softmax(-1),
        ((3, 4),),
        lambda x: x.softmax(-1),
        low=-2,
        high=2,
    ),
    _s(
        "softmax:dim0",
        ("softmax",),
        lambda x: wb.softmax(x, 0),
        ((3, 4),),
        lambda x: torch.softmax(x, 0),
    ),
    _s(
        "log_softmax:dim1",
        ("log_softmax",),
        lambda x: x.log_softmax(1),
        ((2, 3, 4),),
        lambda x: x.log_softmax(1),
        low=-2,
        high=2,
    ),
]
