"""The basics tutorial's optimization loop: hyperparameters as names, train_loop and
test_loop functions (model.train()/model.eval(), enumerate(dataloader), the progress
line with batch * batch_size + len(X), size = len(dataloader.dataset)), SGD with Nesterov
momentum, an ExponentialLR decay and CrossEntropyLoss with label smoothing; three
Gaussian blobs made with numpy."""

import json

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

learning_rate = 0.1
batch_size = 20
epochs = 5
torch.manual_seed(3)

rng = np.random.default_rng(3)
centres = np.array([[0.0, 2.0], [2.0, -1.0], [-2.0, -1.0]], dtype=np.float32)
labels = rng.integers(0, 3, 300)
features = (centres[labels] + rng.normal(0, 0.9, (300, 2))).astype(np.float32)
train_data = TensorDataset(torch.from_numpy(features[:240]), torch.from_numpy(labels[:240]))
test_data = TensorDataset(torch.from_numpy(features[240:]), torch.from_numpy(labels[240:]))
train_dataloader = DataLoader(train_data, batch_size=batch_size, shuffle=True)
test_dataloader = DataLoader(test_data, batch_size=batch_size)


class Blobs(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 3))

    def forward(self, x):
        return self.layers(x)


model = Blobs()
loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate, momentum=0.9, nesterov=True)
scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.8)
progress = []


def train_loop(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if batch % 4 == 0:
            loss, current = loss.item(), batch * batch_size + len(X)
            progress.append(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test_loop(dataloader, model, loss_fn):
    model.eval()
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    return test_loss / num_batches, correct / size


for t in range(epochs):
    train_loop(train_dataloader, model, loss_fn, optimizer)
    scheduler.step()
test_loss, accuracy = test_loop(test_dataloader, model, loss_fn)
print(
    "RESULT",
    json.dumps(
        {
            "progress_lines": len(progress),
            "last_progress_count": progress[-1].split("[")[1],
            "test_loss": test_loss,
            "accuracy": accuracy,
            "lr": scheduler.get_last_lr(),
        }
    ),
)
