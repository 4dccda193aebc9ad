"""d2l's softmax regression from scratch: softmax with keepdims=True, cross entropy by
fancy indexing y_hat[list(range(len(y_hat))), y], the accuracy with argmax(axis=1) and
.type(y.dtype), an L2 penalty torch.sum(w.pow(2)) / 2, and minibatches from a DataLoader."""

import json

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(6)
centers = rng.normal(0, 2, (4, 5))
labels = rng.integers(0, 4, 300)
points = centers[labels] + rng.normal(0, 1, (300, 5))
X_all = torch.tensor(points, dtype=torch.float32)
y_all = torch.tensor(labels)


def softmax(X):
    X_exp = torch.exp(X)
    partition = X_exp.sum(1, keepdims=True)
    return X_exp / partition


def cross_entropy(y_hat, y):
    return -torch.log(y_hat[list(range(len(y_hat))), y])


def accuracy(y_hat, y):
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


W = torch.tensor(rng.normal(0, 0.01, (5, 4)), dtype=torch.float32, requires_grad=True)
b = torch.zeros(4, requires_grad=True)
torch.manual_seed(0)
loader = DataLoader(TensorDataset(X_all, y_all), batch_size=32, shuffle=True)
for epoch in range(3):
    for X, y in loader:
        y_hat = softmax(torch.matmul(X.reshape((-1, W.shape[0])), W) + b)
        l = cross_entropy(y_hat, y).mean() + 0.001 * torch.sum(W.pow(2)) / 2  # noqa: E741
        l.backward()
        with torch.no_grad():
            for param in (W, b):
                param -= 0.1 * param.grad
                param.grad.zero_()
with torch.no_grad():
    y_hat = softmax(X_all @ W + b)
print(
    "RESULT",
    json.dumps(
        {
            "loss": float(cross_entropy(y_hat, y_all).mean()),
            "accuracy": accuracy(y_hat, y_all) / 300,
        }
    ),
)
