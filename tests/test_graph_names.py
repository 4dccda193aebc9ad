"""A graph reads like PyTorch's: the same node names for the same program, and the same
steps, in the same order, in the backward stepper (workbench) and in the replay of
PyTorch's own backward (``wb.from_torch``).

Where PyTorch records one node for a composite (``MseLossBackward0``,
``BinaryCrossEntropyWithLogitsBackward0``), the workbench records one op with that
name; ``nn.Linear`` records PyTorch's ``TBackward0`` and ``AddmmBackward0``. The names
that still differ are listed in docs/pytorch_compatibility.md (and in ``STILL_DIFFERENT``
below, which this file also checks, so the list stays true).
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")

SAME = [
    "x.sum()",
    "x.sum(1)",
    "x.mean(0, keepdim=True)",
    "x.max()",
    "x.max(1).values",
    "x.min(0).values",
    "x @ w",
    "x @ w[:, 0]",
    "x[0] @ x[0]",
    "x.view(-1)",
    "x.reshape(4, 3)",
    "x.flatten()",
    "x.T",
    "x.t()",
    "x.transpose(0, 1)",
    "x[0]",
    "x[:, 1]",
    "x[1:3]",
    "x[idx]",
    "x[:, None]",
    "x.unsqueeze(0)",
    "x.squeeze()",
    "x.unsqueeze(1).squeeze(1)",
    "1 - x",
    "x - 1",
    "x ** 2",
    "2 ** x",
    "x ** x",
    "x.square()",
    "x.norm()",
    "x.double()",
    "F.mse_loss(x, t)",
    "F.mse_loss(x, t, reduction='sum')",
    "F.l1_loss(x, t)",
    "F.cross_entropy(x, y)",
    "F.nll_loss(F.log_softmax(x, 1), y)",
    "F.binary_cross_entropy(x.sigmoid(), t01)",
    "F.binary_cross_entropy_with_logits(x, t01)",
    "F.dropout(x, 0.5)",
    "F.layer_norm(x, (3,))",
    "F.batch_norm(x, None, None, training=True)",
    "lin(x)",
    "lin_no_bias(x)",
    "lin(x[0])",
    "lin(x3)",
    "lin(x).grad_fn.next_functions[2][0]",
    "emb(idx)",
    "F.softmax(x, 1)",
    "F.relu(x)",
    "F.gelu(x)",
]
# Names that differ, with what each library records (PyTorch, workbench).
STILL_DIFFERENT = {
    "x[0] @ w": ("SqueezeBackward4", "MatmulBackward0"),
    "x.clamp(min=0)": ("ClampBackward1", "WhereBackward0"),
    "x.masked_fill(x > 0.5, 0.0)": ("MaskedFillBackward0", "WhereBackward0"),
    "x.chunk(2)[0]": ("SplitBackward0", "SliceBackward0"),
    "2 / x": ("MulBackward0", "DivBackward0"),
    "x.index_select(0, idx)": ("IndexSelectBackward0", "TakeBackward0"),
}


def _env(m):
    rng = np.random.default_rng(0)
    m.manual_seed(0)
    values = {
        "x": m.tensor(rng.uniform(0.1, 1, (4, 3)).astype(np.float32), requires_grad=True),
        "x3": m.tensor(rng.uniform(0.1, 1, (2, 4, 3)).astype(np.float32), requires_grad=True),
        "w": m.tensor(rng.uniform(0.1, 1, (3, 2)).astype(np.float32), requires_grad=True),
        "t": m.tensor(rng.uniform(0.1, 1, (4, 3)).astype(np.float32)),
        "t01": m.tensor(rng.uniform(0, 1, (4, 3)).astype(np.float32)),
        "y": m.tensor([0, 2, 1, 0]),
        "idx": m.tensor([0, 2]),
        "lin": m.nn.Linear(3, 2),
        "lin_no_bias": m.nn.Linear(3, 2, bias=False),
        "emb": m.nn.Embedding(4, 3),
        "F": m.nn.functional,
    }
    return values


def node_name(value) -> str:
    node = value if not hasattr(value, "grad_fn") else value.grad_fn
    return str(node).split()[0].lstrip("<")  # as print(y.grad_fn) shows it


def names_of(expression: str) -> tuple[str, str]:
    return tuple(node_name(eval(expression, _env(m))) for m in (torch, wb))


@pytest.mark.parametrize("expression", SAME)
def test_the_node_has_pytorchs_name(expression):
    theirs, ours = names_of(expression)
    assert ours == theirs


@pytest.mark.parametrize("expression", sorted(STILL_DIFFERENT))
def test_the_documented_differences_are_still_the_only_ones(expression):
    assert names_of(expression) == STILL_DIFFERENT[expression]


def test_a_linear_layer_has_pytorchs_edges_in_pytorchs_order():
    """AddmmBackward0 → (bias's AccumulateGrad, the input, TBackward0 → weight's)."""
    shapes = []
    for m in (torch, wb):
        env = _env(m)
        node = env["lin"](env["x"]).grad_fn
        shapes.append([node_name(child) if child else None for child, _ in node.next_functions])
    assert shapes[0] == shapes[1] == ["AccumulateGrad", "AccumulateGrad", "TBackward0"]


def _programs(m):
    """Small programs, as a tutorial writes them (and lesson 9's last section): their losses."""
    nn, F = m.nn, m.nn.functional
    rng = np.random.default_rng(1)
    x = m.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    m.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    conv = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
    head = nn.Linear(2, 1)
    images = m.tensor(rng.standard_normal((2, 1, 6, 6)).astype(np.float32))
    m.manual_seed(0)
    regression = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))  # lesson 9's
    points = m.linspace(-2, 2, 64).unsqueeze(1)
    return {
        "lesson_9_regression": lambda: nn.MSELoss()(regression(points), points**3 - points),
        "mlp_cross_entropy": lambda: F.cross_entropy(mlp(x), m.tensor([0, 1, 0, 1, 1])),
        "conv_mse": lambda: nn.MSELoss()(head(conv(images)[:, :2]), m.ones(2, 1)),
        "bce_with_logits": lambda: F.binary_cross_entropy_with_logits(
            mlp(x)[:, 0], m.tensor([1.0, 0.0, 1.0, 1.0, 0.0])
        ),
    }


def _stepper_names(target) -> list[str]:
    from workbench.widgets import BackwardStepper

    stepper = BackwardStepper(target)
    source = stepper.cursor.source
    source.load_all()
    names = [record.name for record in source.records]
    stepper.close()
    return names


@pytest.mark.parametrize(
    "program", ["lesson_9_regression", "mlp_cross_entropy", "conv_mse", "bce_with_logits"]
)
def test_the_stepper_shows_pytorchs_steps_for_the_same_program(program):
    ours = _stepper_names(_programs(wb)[program]())
    theirs = _stepper_names(wb.from_torch(_programs(torch)[program]()))
    assert ours == theirs
    assert theirs[0].endswith("Backward0") and "AccumulateGrad" in theirs
