"""A classifier on spirals: an nn.Module with BatchNorm1d and Dropout, a DataLoader with
its own generator and drop_last, RMSprop with StepLR, train() and eval() modes, the
accuracy line; the seed, the shuffles and the dropout masks are PyTorch's in both."""

import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(3)
n = 150
t = rng.random(n) * 3 * np.pi
labels = rng.integers(0, 2, n)
radius = t / (3 * np.pi)
points = np.stack([radius * np.cos(t + np.pi * labels), radius * np.sin(t + np.pi * labels)], 1)
points += rng.normal(0, 0.02, points.shape)
X = torch.tensor(points, dtype=torch.float32)
y = torch.tensor(labels)

torch.manual_seed(42)
g = torch.Generator().manual_seed(7)
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True, drop_last=True, generator=g)


class SpiralNet(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.fc1 = nn.Linear(2, hidden, bias=False)  # BatchNorm's shift makes a bias moot
        self.bn = nn.BatchNorm1d(hidden)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(hidden, 2)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.bn(self.fc1(x)))))


model = SpiralNet()
optimizer = torch.optim.RMSprop(model.parameters(), lr=0.01)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
loss_fn = nn.CrossEntropyLoss()
for epoch in range(8):
    model.train()
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
    scheduler.step()

model.eval()
with torch.no_grad():
    logits = model(X)
    accuracy = (logits.argmax(dim=1) == y).type(torch.float).mean().item()
print(
    "RESULT",
    json.dumps(
        {
            "loss": loss.item(),
            "accuracy": accuracy,
            "lr": scheduler.get_last_lr()[0],
            "batches": len(loader),
            "running_mean": model.bn.running_mean[:3].tolist(),
        }
    ),
)
