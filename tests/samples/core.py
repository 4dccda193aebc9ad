"""Samples for the ops of the engine core (issue 2): elementwise, reductions, shapes, matmul.

Inputs keep away from kinks, as TVM's numeric tests do: relu and abs get ±U(0.2, 1),
max/min and their relatives get values at least 1 apart, log and sqrt get U(0.1, 1),
powers and divisions get U(1, 2). What happens *at* a kink is tested on its own in
tests/test_kinks.py, against PyTorch's conventions (REFERENCE A20).
"""

from __future__ import annotations

import numpy as np

import workbench as wb
from tests.samples import Sample
from workbench.ops.shape import getitem_backward

_rng = np.random.default_rng(20240)


def away_from_zero(*shape: int, low: float = 0.2, high: float = 1.0) -> np.ndarray:
    """±U(low, high): no element near 0, where relu and abs have their kink."""
    magnitude = _rng.uniform(low, high, size=shape)
    return magnitude * _rng.choice([-1.0, 1.0], size=shape)


def distinct(*shape: int, gap: float = 1.0) -> np.ndarray:
    """Values at least ``0.9 * gap`` apart in random order: no ties for max, min, argmax."""
    n = int(np.prod(shape))
    values = _rng.permutation(n) * gap + _rng.uniform(0.0, 0.1 * gap, size=n)
    return (values - n * gap / 2).reshape(shape)


def apart_from(x: np.ndarray) -> np.ndarray:
    """A partner for ``x`` that differs from it by 1 to 2 everywhere (maximum/minimum)."""
    return x + _rng.choice([-1.0, 1.0], size=x.shape) * _rng.uniform(1.0, 2.0, size=x.shape)


def index(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _t(array: np.ndarray):
    """A torch constant for torch_fn (imported lazily: torch is optional)."""
    import torch

    return torch.tensor(array)


def sample(name, ops, fn, inputs, torch_fn=None, **options) -> Sample:
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    return Sample(name, ops, fn, tuple(inputs), torch_fn, **options)


DIVIDENDS = np.array([[5.3, -5.3, 2.7], [-1.4, 7.9, -0.6]])
DIVISORS = np.array([[2.1, 2.1, -1.7], [1.3, -2.2, 0.9]])

# ---------------------------------------------------------------- arithmetic
ARITHMETIC = [
    sample("add", "add", lambda a, b: a + b, [(2, 3), (2, 3)], lambda a, b: a + b),
    sample(
        "add_broadcast_row",
        ("add", "collapse_sum_like"),
        lambda a, b: a + b,
        [(2, 3), (3,)],
        lambda a, b: a + b,
    ),
    sample(
        "add_broadcast_outer",
        ("add", "collapse_sum_like"),
        lambda a, b: a + b,
        [(3, 1), (1, 4)],
        lambda a, b: a + b,
    ),
    sample(
        "add_scalar_alpha",
        "add",
        lambda a: wb.add(a, 2.5, alpha=2),
        [(2, 3)],
        lambda a: a.add(2.5, alpha=2),
    ),
    sample("radd_scalar", "add", lambda a: 1.5 + a, [(4,)], lambda a: 1.5 + a),
    sample("sub_broadcast", "sub", lambda a, b: a - b, [(2, 3), (3,)], lambda a, b: a - b),
    sample("rsub_scalar", "sub", lambda a: 2.0 - a, [(3,)], lambda a: 2.0 - a),
    sample("mul", "mul", lambda a, b: a * b, [(2, 3), (2, 3)], lambda a, b: a * b),
    sample(
        "mul_broadcast_outer",
        ("mul", "collapse_sum_like"),
        lambda a, b: a * b,
        [(3, 1), (1, 4)],
        lambda a, b: a * b,
    ),
    sample("mul_broadcast_row", "mul", lambda a, b: a * b, [(2, 3), (3,)], lambda a, b: a * b),
    sample("mul_scalar", "mul", lambda a: a * 3.0, [(2, 2)], lambda a: a * 3.0),
    sample(
        "mul_constant",
        "mul",
        lambda a, b: a * b,
        [(2, 3), (2, 3)],
        lambda a, b: a * b,
        grad=(True, False),
    ),
    sample(
        "div", "div", lambda a, b: a / b, [(2, 3), (2, 3)], lambda a, b: a / b, low=1.0, high=2.0
    ),
    sample(
        "div_broadcast",
        "div",
        lambda a, b: a / b,
        [(3, 1), (1, 4)],
        lambda a, b: a / b,
        low=1.0,
        high=2.0,
    ),
    sample("rdiv_scalar", "div", lambda a: 2.0 / a, [(3,)], lambda a: 2.0 / a, low=1.0, high=2.0),
    sample("div_scalar", "div", lambda a: a / 4.0, [(3,)], lambda a: a / 4.0),
    # dividends and divisors whose quotients keep away from integers (the jumps)
    sample("remainder", "remainder", lambda a, b: a % b, [DIVIDENDS, DIVISORS], lambda a, b: a % b),
    sample(
        "remainder_scalar",
        "remainder",
        lambda a: wb.remainder(a, -1.5),
        [DIVIDENDS],
        lambda a: a.remainder(-1.5),
    ),
    sample("fmod", "fmod", wb.fmod, [DIVIDENDS, DIVISORS], lambda a, b: a.fmod(b)),
    sample("fmod_scalar", "fmod", lambda a: a.fmod(1.5), [DIVIDENDS], lambda a: a.fmod(1.5)),
    sample(
        "floor_divide",
        "floor_divide",
        lambda a, b: a // b,
        [DIVIDENDS, DIVISORS],
        lambda a, b: a // b,
        grad=(False, False),
        note="no derivative: PyTorch's backward and forward AD through floor_divide raise",
    ),
    sample("neg", "neg", lambda a: -a, [(2, 3)], lambda a: -a),
    sample(
        "pow_tensor",
        "pow",
        lambda a, b: a**b,
        [(2, 3), (2, 3)],
        lambda a, b: a**b,
        low=1.0,
        high=2.0,
    ),
    sample(
        "pow_broadcast",
        "pow",
        lambda a, b: a**b,
        [(2, 3), (3,)],
        lambda a, b: a**b,
        low=1.0,
        high=2.0,
    ),
    sample("pow_scalar_exponent", "pow", lambda a: a**3.0, [(2, 3)], lambda a: a**3.0),
    sample(
        "pow_negative_exponent",
        "pow",
        lambda a: a**-1.5,
        [(3,)],
        lambda a: a**-1.5,
        low=1.0,
        high=2.0,
    ),
    sample("rpow_scalar_base", "pow", lambda b: 2.0**b, [(3,)], lambda b: 2.0**b),
]

# ---------------------------------------------------------------- unary math
UNARY = [
    sample("exp", "exp", wb.exp, [(3, 3)], lambda x: x.exp()),
    sample("log", "log", wb.log, [(3, 3)], lambda x: x.log(), low=0.1, high=1.0),
    sample("sqrt", "sqrt", wb.sqrt, [(3, 3)], lambda x: x.sqrt(), low=0.1, high=1.0),
    sample("sign", "sign", wb.sign, [away_from_zero(3, 3)], lambda x: x.sign()),
    sample("abs", "abs", wb.abs, [away_from_zero(3, 3)], lambda x: x.abs()),
    sample("sin", "sin", wb.sin, [(3, 3)], lambda x: x.sin()),
    sample("cos", "cos", wb.cos, [(3, 3)], lambda x: x.cos()),
    sample("tanh", "tanh", wb.tanh, [(3, 3)], lambda x: x.tanh()),
    sample("sigmoid", "sigmoid", wb.sigmoid, [(3, 3)], lambda x: x.sigmoid()),
    sample(
        "sigmoid_large",
        "sigmoid",
        wb.sigmoid,
        [np.array([-30.0, -3.0, 0.5, 3.0, 30.0])],
        lambda x: x.sigmoid(),
    ),
    sample("relu", "relu", wb.relu, [away_from_zero(3, 4)], lambda x: x.relu()),
]

# ----------------------------------------------------- maximum, minimum, where
_mx = distinct(2, 3)
SELECTION = [
    sample("maximum", "maximum", wb.maximum, [_mx, apart_from(_mx)], lambda a, b: a.maximum(b)),
    sample("minimum", "minimum", wb.minimum, [_mx, apart_from(_mx)], lambda a, b: a.minimum(b)),
    sample(
        "maximum_broadcast",
        "maximum",
        wb.maximum,
        [distinct(3, 1), distinct(1, 4) + 0.5],
        lambda a, b: a.maximum(b),
    ),
    sample(
        "where",
        "where",
        lambda c, x, y: wb.where(c > 0, x, y),
        [away_from_zero(2, 3), (2, 3), (2, 3)],
        lambda c, x, y: x.where(c > 0, y),
        grad=(False, True, True),
    ),
    sample(
        "where_broadcast",
        "where",
        lambda c, x, y: wb.where(c > 0, x, y),
        [away_from_zero(3, 1), (3, 4), (4,)],
        lambda c, x, y: x.where(c > 0, y),
        grad=(False, True, True),
    ),
    sample(
        "where_scalar_other",
        "where",
        lambda x: wb.where(x > 0, x, 0.0),
        [away_from_zero(2, 3)],
        lambda x: x.where(x > 0, 0.0),
    ),
]

# -------------------------------------------- comparisons and logical ops (no grad)
COMPARISONS = [
    sample(f"compare_{name}", name, fn, [_mx, apart_from(_mx)], tfn)
    for name, fn, tfn in [
        ("lt", lambda a, b: a < b, lambda a, b: a < b),
        ("le", lambda a, b: a <= b, lambda a, b: a <= b),
        ("gt", lambda a, b: a > b, lambda a, b: a > b),
        ("ge", lambda a, b: a >= b, lambda a, b: a >= b),
        ("ne", lambda a, b: a != b, lambda a, b: a != b),
    ]
] + [
    sample(
        "compare_eq",
        "eq",
        lambda a, b: a == b,
        [np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])],
        lambda a, b: a == b,
    ),
    sample("compare_gt_scalar", "gt", lambda a: a > 0.0, [away_from_zero(4)], lambda a: a > 0.0),
    sample(
        "logical_and",
        ("logical_and", "gt"),
        lambda a, b: wb.logical_and(a > 0, b > 0),
        [away_from_zero(6), away_from_zero(6)],
        lambda a, b: (a > 0).logical_and(b > 0),
    ),
    sample(
        "logical_or",
        "logical_or",
        lambda a, b: wb.logical_or(a > 0, b > 0),
        [away_from_zero(6), away_from_zero(6)],
        lambda a, b: (a > 0).logical_or(b > 0),
    ),
    sample(
        "logical_xor",
        "logical_xor",
        lambda a, b: (a > 0) ^ (b > 0),
        [away_from_zero(6), away_from_zero(6)],
        lambda a, b: (a > 0) ^ (b > 0),
    ),
    sample(
        "logical_not", "logical_not", lambda a: ~(a > 0), [away_from_zero(6)], lambda a: ~(a > 0)
    ),
    # & | ^ ~ of integer tensors work on the bits (the inputs' values times 8, as int64)
    sample(
        "bitwise_and",
        "bitwise_and",
        lambda a, b: (a * 8).long() & (b * 8).long(),
        [(2, 3), (3,)],
        lambda a, b: (a * 8).long() & (b * 8).long(),
    ),
    sample(
        "bitwise_or",
        "bitwise_or",
        lambda a, b: (a * 8).long() | (b * 8).int(),
        [(2, 3), (2, 3)],
        lambda a, b: (a * 8).long() | (b * 8).int(),
    ),
    sample(
        "bitwise_xor",
        "bitwise_xor",
        lambda a, b: (a * 8).long() ^ (b > 0),
        [(2, 3), (2, 3)],
        lambda a, b: (a * 8).long() ^ (b > 0),
    ),
    sample(
        "bitwise_not", "bitwise_not", lambda a: ~(a * 8).long(), [(2, 3)], lambda a: ~(a * 8).long()
    ),
    sample(
        "bitwise_left_shift",
        "bitwise_left_shift",
        lambda a, b: (a * 8).long() << (b * 4).abs().long(),
        [(2, 3), (3,)],
        lambda a, b: (a * 8).long() << (b * 4).abs().long(),
    ),
    sample(
        "bitwise_right_shift",
        "bitwise_right_shift",
        lambda a: (a * 64).long() >> 2,
        [(2, 3)],
        lambda a: (a * 64).long() >> 2,
    ),
]

# ---------------------------------------------------------------- reductions
REDUCTIONS = [
    sample("sum_all", "sum", lambda x: x.sum(), [(2, 3, 4)], lambda x: x.sum()),
    sample("sum_dim", "sum", lambda x: x.sum(1), [(2, 3, 4)], lambda x: x.sum(1)),
    sample(
        "sum_dims_keepdim",
        "sum",
        lambda x: x.sum((0, 2), keepdim=True),
        [(2, 3, 4)],
        lambda x: x.sum((0, 2), keepdim=True),
    ),
    sample("sum_negative_dim", "sum", lambda x: x.sum(-1), [(2, 3, 4)], lambda x: x.sum(-1)),
    # REFERENCE D20 item 151: axis=[1, 3] on (2, 3, 4, 5), and keepdims with axis=1.
    sample("sum_dims_1_3", "sum", lambda x: x.sum((1, 3)), [(2, 3, 4, 5)], lambda x: x.sum((1, 3))),
    sample(
        "mean_dims_1_3", "mean", lambda x: x.mean((1, 3)), [(2, 3, 4, 5)], lambda x: x.mean((1, 3))
    ),
    sample(
        "mean_keepdim_1_of_4d",
        "mean",
        lambda x: x.mean(1, keepdim=True),
        [(2, 3, 4, 5)],
        lambda x: x.mean(1, keepdim=True),
    ),
    sample("mean_all", "mean", lambda x: x.mean(), [(2, 3, 4)], lambda x: x.mean()),
    sample("mean_dims", "mean", lambda x: x.mean((0, 2)), [(2, 3, 4)], lambda x: x.mean((0, 2))),
    sample(
        "mean_keepdim",
        "mean",
        lambda x: x.mean(1, keepdim=True),
        [(2, 3, 4)],
        lambda x: x.mean(1, keepdim=True),
    ),
    sample("amax_all", "amax", lambda x: x.amax(), [distinct(3, 4)], lambda x: x.amax()),
    sample("max_all", "max", lambda x: x.max(), [distinct(3, 4)], lambda x: x.max()),
    sample("amax_dim", "amax", lambda x: x.amax(1), [distinct(3, 4)], lambda x: x.amax(1)),
    sample(
        "amin_dims_keepdim",
        "amin",
        lambda x: x.amin((0, 2), keepdim=True),
        [distinct(2, 3, 4)],
        lambda x: x.amin((0, 2), keepdim=True),
    ),
    sample("min_all", "min", lambda x: x.min(), [distinct(3, 4)], lambda x: x.min()),
    sample(
        "max_dim",
        ("max_dim", "first_extreme_mask"),
        lambda x: x.max(1).values,
        [distinct(3, 4)],
        lambda x: x.max(1).values,
    ),
    sample(
        "min_dim_keepdim",
        ("max_dim", "first_extreme_mask"),
        lambda x: x.min(0, keepdim=True).values,
        [distinct(3, 4)],
        lambda x: x.min(0, keepdim=True).values,
    ),
    sample(
        "max_dim_indices",
        "argmax",
        lambda x: x.max(-1).indices,
        [distinct(3, 4)],
        lambda x: x.max(-1).indices,
    ),
    sample("argmax_all", "argmax", lambda x: x.argmax(), [distinct(3, 4)], lambda x: x.argmax()),
    sample(
        "argmax_dim_keepdim",
        "argmax",
        lambda x: x.argmax(1, keepdim=True),
        [distinct(3, 4)],
        lambda x: x.argmax(1, keepdim=True),
    ),
    sample("argmin_dim", "argmin", lambda x: x.argmin(0), [distinct(3, 4)], lambda x: x.argmin(0)),
]

# ----------------------------------------------------------- shapes and views
SHAPES = [
    sample("reshape", "reshape", lambda x: x.reshape(4, 6), [(2, 3, 4)], lambda x: x.reshape(4, 6)),
    sample(
        "reshape_infer",
        "reshape",
        lambda x: x.reshape(-1, 2),
        [(2, 3, 4)],
        lambda x: x.reshape(-1, 2),
    ),
    sample(
        "unsqueeze_squeeze",
        "reshape",
        lambda x: x.unsqueeze(1).squeeze(),
        [(3, 1, 2)],
        lambda x: x.unsqueeze(1).squeeze(),
    ),
    sample("flatten", "reshape", lambda x: x.flatten(1), [(2, 3, 2)], lambda x: x.flatten(1)),
    sample("view", "view", lambda x: x.view(6, 2), [(3, 4)], lambda x: x.view(6, 2)),
    sample(
        "permute",
        "permute",
        lambda x: x.permute(2, 0, 1),
        [(2, 3, 4)],
        lambda x: x.permute(2, 0, 1),
    ),
    sample(
        "permute_4d",
        "permute",
        lambda x: x.permute(0, 3, 1, 2),
        [(2, 1, 3, 2)],
        lambda x: x.permute(0, 3, 1, 2),
    ),
    sample(
        "transpose",
        "transpose",
        lambda x: x.transpose(0, -1),
        [(2, 3, 4)],
        lambda x: x.transpose(0, -1),
    ),
    sample("matrix_T", "permute", lambda x: x.T, [(2, 3)], lambda x: x.T),
    sample(
        "expand",
        ("expand", "collapse_sum_like"),
        lambda x: x.expand(2, 3, 4),
        [(3, 1)],
        lambda x: x.expand(2, 3, 4),
    ),
    sample(
        "broadcast_to",
        "expand",
        lambda x: wb.broadcast_to(x, (2, 3, 4)),
        [(3, 4)],
        lambda x: x.broadcast_to((2, 3, 4)),
    ),
    sample(
        "permute_reverse_4d",
        "permute",
        lambda x: x.permute(3, 2, 1, 0),
        [(2, 3, 4, 5)],
        lambda x: x.permute(3, 2, 1, 0),
    ),
    sample(
        "unsqueeze_several",
        "reshape",
        lambda x: x.unsqueeze(0).unsqueeze(2).unsqueeze(3),
        [(3, 4)],
        lambda x: x.unsqueeze(0).unsqueeze(2).unsqueeze(3),
    ),
    sample("expand_keep", "expand", lambda x: x.expand(-1, 4), [(3, 1)], lambda x: x.expand(-1, 4)),
    sample(
        "sum_to",
        "collapse_sum_like",
        lambda g: wb.ops.sum_to(g, (3, 1)),
        [(2, 3, 4)],
        lambda g: g.sum_to_size(3, 1),
    ),
    sample("clone", "clone", lambda x: x.clone(), [(2, 3)], lambda x: x.clone()),
    sample("contiguous", "clone", lambda x: x.T.contiguous(), [(2, 3)], lambda x: x.T.contiguous()),
    sample(
        "astype_float32",
        "astype",
        lambda x: x.to(wb.float32),
        [(2, 3)],
        lambda x: x.float(),
        eps=1e-3,
        note="the float32 output needs a larger finite-difference step",
    ),
    sample(
        "to_device",
        "to_device",
        lambda x: wb.ops.to_device(x, "cpu") * 2,
        [(3,)],
        lambda x: x.to("cpu", copy=True) * 2,
    ),
]

# ------------------------------------------------------------------ indexing
INDEXING = [
    sample("getitem_int", "getitem", lambda x: x[1], [(3, 4)], lambda x: x[1]),
    sample("getitem_slices", "getitem", lambda x: x[1:, ::2], [(3, 4)], lambda x: x[1:, ::2]),
    sample(
        "getitem_ellipsis_none",
        "getitem",
        lambda x: x[..., None, 1],
        [(2, 3)],
        lambda x: x[..., None, 1],
    ),
    sample(
        "index_duplicates",
        "index",
        lambda x: x[[0, 0, 2]],
        [(4, 3)],
        lambda x: x[[0, 0, 2]],
    ),
    sample(
        "index_tensor_dim1",
        "index",
        lambda x: x[:, wb.tensor([2, 1, 2, 0])],
        [(2, 3)],
        lambda x: x[:, _t(index(2, 1, 2, 0))],
    ),
    sample(
        "index_flat",
        ("index", "reshape"),
        lambda x: x.reshape(-1)[index(5, 0, 5, 11)],
        [(3, 4)],
        lambda x: x.reshape(-1)[_t(index(5, 0, 5, 11))],
    ),
    sample(
        "index_pairs",
        "index",
        lambda x: x[index(0, 2, 0), index(1, 1, 1)],
        [(3, 2)],
        lambda x: x[_t(index(0, 2, 0)), _t(index(1, 1, 1))],
    ),
    sample(
        "index_mask",
        "index",
        lambda x: x[x > 0],
        [away_from_zero(3, 4)],
        lambda x: x[x > 0],
    ),
    sample(
        "getitem_backward_scatter_add",
        "getitem_backward",
        lambda g: getitem_backward(g, (4, 3), index(0, 0, 2)),
        [(3, 3)],
        lambda g: g.new_zeros(4, 3).index_add(0, _t(index(0, 0, 2)), g),
    ),
    sample(
        "getitem_backward_basic",
        "getitem_backward",
        lambda g: getitem_backward(g, (3, 4), (slice(1, None), 2)),
        [(2,)],
        lambda g: g.new_zeros(3, 4).index_put((_t(index(1, 2)), _t(index(2, 2))), g),
    ),
    sample(
        "index_put_slice",
        "index_put",
        lambda x, v: wb.ops.index_put(x, (slice(None), 1), v),
        [(3, 4), (3,)],
        lambda x, v: x.index_put((_t(index(0, 1, 2)), _t(index(1, 1, 1))), v),
    ),
    sample(
        "index_put_broadcast_value",
        "index_put",
        lambda x, v: wb.ops.index_put(x, index(0, 2), v),
        [(3, 4), (4,)],
        lambda x, v: x.index_put((_t(index(0, 2)),), v),
    ),
]

# ------------------------------------------------------------- matrix product
MATMUL = [
    sample(f"matmul_{name}", "matmul", lambda a, b: a @ b, [sa, sb], lambda a, b: a @ b)
    for name, sa, sb in [
        ("2d_2d", (2, 3), (3, 4)),
        ("1d_1d", (4,), (4,)),
        ("1d_batched", (4,), (2, 3, 4, 5)),
        ("batched_1d", (2, 3, 4, 5), (5,)),
        ("batch_broadcast", (2, 3, 1, 4, 5), (3, 2, 5, 4)),
    ]
] + [
    sample(
        "matmul_constant_right",
        "matmul",
        lambda a, b: a @ b,
        [(2, 3), (3, 2)],
        lambda a, b: a @ b,
        grad=(True, False),
    ),
    sample("mm", "matmul", wb.mm, [(2, 3), (3, 2)], lambda a, b: a.mm(b)),
    sample("dot", "matmul", wb.dot, [(3,), (3,)], lambda a, b: a.dot(b)),
]

SAMPLES = ARITHMETIC + UNARY + SELECTION + COMPARISONS + REDUCTIONS + SHAPES + INDEXING + MATMUL
