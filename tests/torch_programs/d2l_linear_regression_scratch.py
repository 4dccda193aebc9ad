"""d2l's linear regression from scratch: a data iterator that shuffles with Python's random
and indexes with torch.tensor(indices), w and b with requires_grad, squared loss, and a
minibatch SGD that updates under no_grad and zeroes .grad."""

import json
import random

import numpy as np
import torch

rng = np.random.default_rng(5)
true_w = torch.tensor([2, -3.4])
true_b = 4.2
features = torch.tensor(rng.normal(0, 1, (200, 2)), dtype=torch.float32)
labels = torch.matmul(features, true_w) + true_b
labels += torch.tensor(rng.normal(0, 0.01, labels.shape), dtype=torch.float32)
labels = labels.reshape((-1, 1))


def data_iter(batch_size, features, labels):
    num_examples = len(features)
    indices = list(range(num_examples))
    random.shuffle(indices)
    for i in range(0, num_examples, batch_size):
        batch_indices = torch.tensor(indices[i : min(i + batch_size, num_examples)])
        yield features[batch_indices], labels[batch_indices]


def linreg(X, w, b):
    return torch.matmul(X, w) + b


def squared_loss(y_hat, y):
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def sgd(params, lr, batch_size):
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


random.seed(0)
w = torch.tensor(rng.normal(0, 0.01, (2, 1)), dtype=torch.float32, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
for epoch in range(3):
    for X, y in data_iter(10, features, labels):
        l = squared_loss(linreg(X, w, b), y)  # noqa: E741  (d2l's name)
        l.sum().backward()
        sgd([w, b], 0.03, 10)
    with torch.no_grad():
        train_l = squared_loss(linreg(features, w, b), labels)
print(
    "RESULT",
    json.dumps(
        {
            "loss": float(train_l.mean()),
            "w_error": (true_w - w.reshape(true_w.shape)).tolist(),
            "b_error": true_b - b.item(),
        }
    ),
)
