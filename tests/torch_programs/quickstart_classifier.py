"""The quickstart's shape: device line, Dataset/DataLoader, an nn.Module, SGD, train/test
loops with the accuracy line. Data: 28×28 "images" made with numpy (no torchvision)."""

import json

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = (
    "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
)
device = "cpu"  # the comparison runs on the CPU in both libraries
torch.manual_seed(0)

rng = np.random.default_rng(0)
images = rng.random((240, 1, 28, 28), dtype=np.float32)
labels = rng.random(240) < 0.5
images[labels, :, :14] += 0.25  # class 1: a brighter top half
training_data = TensorDataset(
    torch.from_numpy(images[:192]), torch.from_numpy(labels[:192].astype(np.int64))
)
test_data = TensorDataset(
    torch.from_numpy(images[192:]), torch.from_numpy(labels[192:].astype(np.int64))
)

train_dataloader = DataLoader(training_data, batch_size=32, shuffle=True)
test_dataloader = DataLoader(test_data, batch_size=32)


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Linear(64, 2),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


model = NeuralNetwork().to(device)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-1)


def train(dataloader, model, loss_fn, optimizer):
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return loss.item()


def test(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    return test_loss / num_batches, correct / size


for t in range(4):
    last = train(train_dataloader, model, loss_fn, optimizer)
test_loss, accuracy = test(test_dataloader, model, loss_fn)
print("RESULT", json.dumps({"train_loss": last, "test_loss": test_loss, "accuracy": accuracy}))
