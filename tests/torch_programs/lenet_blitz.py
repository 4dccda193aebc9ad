"""The blitz's LeNet: conv2d, max_pool2d, view, three Linear layers, MSELoss; the walk back
along grad_fn.next_functions; zero_grad; backward; one SGD step (input from numpy)."""

import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


def shown(node):
    """The node's name as print(node) shows it: <MulBackward0 object at ...>."""
    return str(node).split()[0].lstrip("<")


torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, self.num_flat_features(x))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)

    def num_flat_features(self, x):
        size = x.size()[1:]
        num_features = 1
        for s in size:
            num_features *= s
        return num_features


net = Net()
params = list(net.parameters())
rng = np.random.default_rng(2)
input = torch.tensor(rng.standard_normal((1, 1, 32, 32)), dtype=torch.float32)
target = torch.tensor(rng.standard_normal(10), dtype=torch.float32).view(1, -1)
criterion = nn.MSELoss()
output = net(input)
loss = criterion(output, target)
walk = [
    shown(loss.grad_fn),
    shown(loss.grad_fn.next_functions[0][0]),
    shown(loss.grad_fn.next_functions[0][0].next_functions[0][0]),
]
net.zero_grad()
before = net.conv1.bias.grad
loss.backward()
optimizer = optim.SGD(net.parameters(), lr=0.01)
optimizer.step()
after = criterion(net(input), target)
print(
    "RESULT",
    json.dumps(
        {
            "n_params": len(params),
            "size0": list(params[0].size()),
            "loss": loss.item(),
            "after": after.item(),
            "walk": walk,
            "bias_grad": net.conv1.bias.grad.tolist(),
            "before_none": before is None,
            "size_repr": str(params[0].size()),
        }
    ),
)
