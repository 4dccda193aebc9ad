"""The tensors tutorial's idioms: tensors from lists, numpy arrays and other tensors
(ones_like, rand_like with a dtype), shape tuples, attributes (shape, dtype, device),
indexing and slicing, cat and stack, arithmetic three ways (@, matmul, mul), a one-element
sum's item(), in-place add_, and the numpy bridge in both directions (shared memory)."""

import json

import numpy as np
import torch

torch.manual_seed(0)
data = [[1, 2], [3, 4]]
x_data = torch.tensor(data)
x_np = torch.from_numpy(np.array(data))
x_ones = torch.ones_like(x_data)
x_rand = torch.rand_like(x_data, dtype=torch.float)

shape = (2, 3)
rand_tensor = torch.rand(shape)
ones_tensor = torch.ones(shape)
zeros_tensor = torch.zeros(shape)

tensor = torch.ones(4, 4)
tensor[:, 1] = 0
first_row, first_column, last_column = tensor[0], tensor[:, 0], tensor[..., -1]
t1 = torch.cat([tensor, tensor, tensor], dim=1)
stacked = torch.stack([x_rand, x_rand * 2])

y1 = tensor @ tensor.T
y2 = tensor.matmul(tensor.T)
z1 = tensor * tensor
z2 = tensor.mul(tensor)
agg = rand_tensor.sum()
agg_item = agg.item()

tensor.add_(5)
t = torch.ones(5)
n = t.numpy()
t.add_(1)  # the change shows in n: they share memory
n2 = np.ones(5)
t2 = torch.from_numpy(n2)
np.add(n2, 1, out=n2)  # and in t2

print(
    "RESULT",
    json.dumps(
        {
            "x_np_equal": bool(torch.equal(x_np, x_data)),
            "x_ones": x_ones.tolist(),
            "x_rand": x_rand.tolist(),
            "rand_tensor": rand_tensor.tolist(),
            "zeros_plus_ones": (zeros_tensor + ones_tensor).sum().item(),
            "shape": str(t1.shape),
            "stacked_size": str(stacked.size()),
            "dtype_is_float32": rand_tensor.dtype == torch.float32,
            "device": str(rand_tensor.device),
            "type": x_data.type(),
            "rows": [first_row.tolist(), first_column.tolist(), last_column.tolist()],
            "products_agree": bool(torch.equal(y1, y2) and torch.equal(z1, z2)),
            "y1": y1.tolist(),
            "agg_item": agg_item,
            "tensor_after_add": tensor[0].tolist(),
            "n": n.tolist(),
            "t2": t2.tolist(),
            "numel": t1.numel(),
        }
    ),
)
