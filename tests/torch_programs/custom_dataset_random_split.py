"""A Dataset subclass (__len__, __getitem__ returning a numpy array and an int label),
random_split with a generator, DataLoaders over the Subsets with default collation of
numpy arrays and Python ints, enumerate(dataloader) and len(dataloader.dataset)."""

import json

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, random_split


class Blobs(Dataset):
    def __init__(self, n=120):
        rng = np.random.default_rng(11)
        self.labels = rng.integers(0, 3, n)
        self.points = (rng.normal(0, 0.5, (n, 2)) + self.labels[:, None]).astype(np.float32)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.points[idx], int(self.labels[idx])


dataset = Blobs()
train_set, test_set = random_split(
    dataset, [0.75, 0.25], generator=torch.Generator().manual_seed(42)
)
torch.manual_seed(13)
train_loader = DataLoader(train_set, batch_size=10, shuffle=True, num_workers=0)
test_loader = DataLoader(test_set, batch_size=10)
model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
seen = 0
for epoch in range(5):
    for batch, (X, y) in enumerate(train_loader):
        loss = loss_fn(model(X), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        seen += len(X)
correct = 0
with torch.no_grad():
    for X, y in test_loader:
        correct += (model(X).argmax(1) == y).type(torch.float).sum().item()
first_batch = next(iter(DataLoader(train_set, batch_size=4)))
print(
    "RESULT",
    json.dumps(
        {
            "loss": loss.item(),
            "accuracy": correct / len(test_loader.dataset),
            "seen": seen,
            "sizes": [len(train_set), len(test_set)],
            "indices": train_set.indices[:5],
            "batch_types": [
                first_batch[0].dtype == torch.float32,
                first_batch[1].dtype == torch.int64,
            ],
        }
    ),
)
