"""MLP training step on the GPU: workbench on CuPy against PyTorch on CUDA.

784-4096-4096-10, batch 1024, float32: forward, cross-entropy, backward, SGD
update, timed with the device synchronised before the clock is read. Where
there is no CuPy or no GPU (or torch has no CUDA), the JSON line says what was
skipped and why.
"""

from __future__ import annotations

import time

import _common
from _common import emit, machine, np, torch
from bench_mlp import make_torch, make_workbench

import workbench as wb
from workbench import nn
from workbench.core import backend

HIDDEN, BATCH, IN, OUT = 4096, 1024, 784, 10
STEPS, ROUNDS = 10, 5


def timed(step, synchronize) -> float:
    """Best seconds per step over ROUNDS rounds of STEPS steps, the GPU drained each time."""
    step()
    synchronize()
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(STEPS):
            step()
        synchronize()
        best = min(best, (time.perf_counter() - start) / STEPS)
    return best


def workbench_step(x_np, y_np):
    """One training step of bench_mlp's network, moved to the GPU."""
    model, opt = make_workbench(HIDDEN)
    model = model.to("cuda")
    loss_fn = nn.CrossEntropyLoss()
    x, y = wb.tensor(x_np, device="cuda"), wb.tensor(y_np, device="cuda")

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    return step, model


def torch_step(x_np, y_np, weights):
    """The same step in PyTorch on CUDA, from the same starting weights."""
    device = torch.device("cuda")
    model, opt = make_torch(weights)
    model = model.to(device)
    loss_fn = torch.nn.CrossEntropyLoss()
    x, y = torch.from_numpy(x_np).to(device), torch.from_numpy(y_np).to(device)

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    return step


def main() -> None:
    record = {"bench": "gpu", "layers": [IN, HIDDEN, HIDDEN, OUT], "batch": BATCH}
    if not backend.cuda_available():
        reason = "no CuPy or no CUDA GPU (pip install 'autodiff-workbench[cuda]')"
        record.update(skipped=True, reason=reason)
        emit({**record, "machine": machine()})
        return
    cupy = backend.cupy_module()
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((BATCH, IN)).astype(np.float32)
    y_np = rng.integers(0, OUT, BATCH)
    step, model = workbench_step(x_np, y_np)
    weights = [backend.to_numpy(p.detach()._data) for p in model.parameters()]
    ours = timed(step, cupy.cuda.Device().synchronize)
    record.update(skipped=False, device=cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())
    record["workbench_ms"] = round(ours * 1e3, 3)
    if torch is not None and torch.cuda.is_available():
        theirs = timed(torch_step(x_np, y_np, weights), torch.cuda.synchronize)
        record["torch_ms"] = round(theirs * 1e3, 3)
        record["ratio_vs_torch"] = round(ours / theirs, 3)
    else:
        record["torch_skipped"] = "torch has no CUDA here"
    emit({**record, "machine": machine()})


if __name__ == "__main__":
    _common  # noqa: B018  (imported first for its thread settings)
    main()
