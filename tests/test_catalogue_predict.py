"""Misconception catalogue of lesson 2's prediction session (02-predict-session).

The learner predicts all six steps of ``(x * w + b).sum()``'s backward pass at once;
the check hands them to a stepper in predict mode. Each mistake below is one a learner
makes by hand: the check must name it at the step where it is made, and a mistake that
only carries an earlier one on must be said to be that, not given a cause of its own.
"""

from __future__ import annotations

import numpy as np
import torch
from catalogue import Catalogue, Mistake, Right

import workbench as wb
from workbench.exercises.whole_pass import check_whole_pass

ONES = np.ones((2, 2))
X = np.array([[1.0, 2.0], [3.0, 4.0]])
W = np.array([0.5, -1.0])
X_BAR = ONES * W  # ȳ · w
W_BAR = np.array([4.0, 6.0])  # ȳ · x, summed over the rows
B_BAR = np.array([4.0])  # ȳ summed over everything


def steps(x_bar=X_BAR, w_bar=W_BAR, b_bar=B_BAR, first=ONES, to_mul=ONES, w_grad=None):
    """A learner's six predictions, consistent with the gradients they give."""
    w_grad = w_bar if w_grad is None else w_grad
    return lambda: [first, [to_mul, b_bar], b_bar, [x_bar, w_bar], x_bar, w_grad]


SESSION = Catalogue(
    exercise="02-predict-session",
    check=check_whole_pass,
    mistakes=[
        Mistake(
            "b̄ not summed back to b's shape",
            steps(b_bar=ONES),
            [
                "4 of 6 steps right",
                "Step 2 (AddBackward0)",
                "not summed back",
                "collapse_sum_like(g, b)",
                "Step 3 (AccumulateGrad): your answer is the gradient you predicted at step 2",
            ],
            kind="shape",
        ),
        Mistake(
            "w̄ not summed over the rows",
            steps(w_bar=ONES * X),
            [
                "Step 4 (MulBackward0)",
                "gradient for w has shape (2, 2)",
                "not summed back",
                "Step 6 (AccumulateGrad): your answer is the gradient you predicted at step 4",
            ],
            ["Step 5"],
            kind="shape",
        ),
        Mistake(
            "the sum sends the number 1",
            steps(first=1.0),
            ["5 of 6 steps right", "Step 1 (SumBackward0)", "shape () where (2, 2)"],
            kind="shape",
        ),
        Mistake(
            "x̄ from x itself, not from the other input",
            steps(x_bar=ONES * X),
            ["Step 4 (MulBackward0)", "at [0, 0] it is 1 where 0.5 was expected", "step 4"],
            kind="elements",
        ),
        Mistake(
            "a sign slip in w̄",
            steps(w_bar=-W_BAR),
            ["Step 4 (MulBackward0)", "wrong sign", "you predicted at step 4"],
            kind="sign",
        ),
        Mistake(
            "b̄ as a mean, not a sum",
            steps(b_bar=np.array([1.0])),
            ["Step 2 (AddBackward0)", "factor of 4", "you predicted at step 2"],
            ["local derivative alone"],
            kind="factor",
        ),
        Mistake(
            "w.grad doubled: the leaf's gradient added twice",
            steps(w_grad=2 * W_BAR),
            ["5 of 6 steps right", "Step 6 (AccumulateGrad)", "2 times the expected value"],
            kind="factor",
        ),
        Mistake(
            "one step left out",
            lambda: steps()()[:5],
            ["returns 5 predictions; this backward pass has 6 steps"],
        ),
    ],
    rights=[
        Right("numpy arrays", steps()),
        Right(
            "nested lists of whole numbers where they are whole",
            lambda: [
                [[1, 1], [1, 1]],
                [[[1, 1], [1, 1]], [4]],
                [4],
                [[[0.5, -1], [0.5, -1]], [4, 6]],
                [[0.5, -1], [0.5, -1]],
                (4, 6),
            ],
        ),
        Right(
            "workbench tensors",
            lambda: [wb.tensor(v) if isinstance(v, np.ndarray) else v for v in steps()()],
        ),
        Right(
            "PyTorch tensors",
            lambda: [
                [torch.tensor(g) for g in v] if isinstance(v, list) else torch.tensor(v)
                for v in steps()()
            ],
        ),
    ],
)

CATALOGUES = [SESSION]
