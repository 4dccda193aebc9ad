"""Compiled MLP step (wb.compile) against eager workbench and PyTorch eager, one process.

The step is forward + cross-entropy + backward (no optimizer update: the compiled road
does not fuse it yet) on the 784-256-256-10 network at batch 128 and on the
784-1024-1024-10 network at batch 512, float32, one thread.
The three contenders alternate round by round (``best_per_call``). Also printed: the
time ``wb.compile`` spends on its first call (trace + Gradient transform + DCE + the
split into forward and backward runners), and the peak memory of the step's adjoint
program (plain, and with the min-cut partitioner's recomputation) and what each keeps
for backward; and the same three on a 64-op elementwise chain on (8, 8) tensors, where the
per-op cost dominates. Prints one JSON line.
"""

from __future__ import annotations

import time

import _common
from _common import best_per_call, emit, machine, ms, np, torch
from bench_mlp import make_torch  # the same network in PyTorch, from bench_mlp's weights

import workbench as wb
from workbench import nn
from workbench.program import eliminate_dead_code, gradient, min_cut_partition, trace

IN, OUT = 784, 10
SIZES = {  # hidden width, batch, calls per round, rounds
    "small": (256, 128, 20, 15),
    "large": (1024, 512, 3, 5),
}


def make_model(hidden: int):
    wb.manual_seed(0)
    return nn.Sequential(
        nn.Linear(IN, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, OUT),
    )


def main() -> None:
    record = {"bench": "compile_mlp", "step": "forward + cross_entropy + backward"}
    for size, (hidden, batch, number, rounds) in SIZES.items():
        record[size] = mlp_step(hidden, batch, number, rounds)
    record["chain_64_ops"] = chain()
    record["machine"] = machine()
    emit(record)


def mlp_step(hidden: int, batch: int, number: int, rounds: int) -> dict:
    """The MLP step eager, compiled and in PyTorch, and what the compiled program keeps."""
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((batch, IN)).astype(np.float32)
    y_np = rng.integers(0, OUT, batch)
    x, y = wb.tensor(x_np), wb.tensor(y_np)
    model = make_model(hidden)
    loss_fn = nn.CrossEntropyLoss()

    def loss_of(x, y):
        return loss_fn(model(x), y)

    start = time.perf_counter()
    compiled_loss = wb.compile(loss_of)
    compiled_loss(x, y)  # the first call traces and transforms
    first_call = time.perf_counter() - start
    start = time.perf_counter()
    program = trace(loss_of, x, y)
    traced = time.perf_counter() - start
    adjoint = eliminate_dead_code(gradient(program))
    transformed = time.perf_counter() - start
    cut = min_cut_partition(eliminate_dead_code(gradient(program)))

    def step(loss_fn_to_use):
        def run():
            for p in model.parameters():
                p.grad = None
            loss = loss_fn_to_use(x, y)
            loss.backward()
            return loss

        return run

    contenders = {"eager": step(loss_of), "compiled": step(compiled_loss)}
    same_loss = abs(contenders["eager"]().item() - contenders["compiled"]().item()) < 1e-6
    if torch is not None:
        t_model, _ = make_torch([p.detach().numpy().copy() for p in model.parameters()])
        t_loss = torch.nn.CrossEntropyLoss()
        tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)

        def torch_step():
            t_model.zero_grad(set_to_none=True)
            loss = t_loss(t_model(tx), ty)
            loss.backward()
            return loss

        contenders["torch"] = torch_step
    best = best_per_call(contenders, number, rounds)
    record = {
        "layers": [IN, hidden, hidden, OUT],
        "batch": batch,
        "eager_ms": ms(best["eager"]),
        "compiled_ms": ms(best["compiled"]),
        "compiled_vs_eager": round(best["compiled"] / best["eager"], 3),
        "same_loss": same_loss,
        "first_call_ms": ms(first_call),
        "trace_ms": ms(traced),
        "trace_and_transform_ms": ms(transformed),
        "bindings": {"forward": len(program.bindings), "adjoint": len(adjoint.bindings)},
        "peak_memory_bytes": {
            "forward": program.peak_memory(),
            "adjoint": adjoint.peak_memory(),
            "adjoint_min_cut": cut.peak_memory(),
        },
        "saved_for_backward_bytes": {
            "adjoint": adjoint.saved_bytes(),
            "min_cut": cut.saved_bytes(),
        },
    }
    if torch is not None:
        record["torch_ms"] = ms(best["torch"])
        record["compiled_vs_torch"] = round(best["compiled"] / best["torch"], 3)
        record["eager_vs_torch"] = round(best["eager"] / best["torch"], 3)
    return record


def chain() -> dict:
    """A 64-op elementwise chain on (8, 8) float32, forward + backward: where the per-op
    cost of eager Python shows (milliseconds per step, and microseconds per op)."""

    def ops(x):
        for _ in range(16):
            x = (x * 1.01).tanh() + 0.1
            x = x.sigmoid()
        return x.sum()

    x_np = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32)
    x = wb.tensor(x_np, requires_grad=True)
    compiled = wb.compile(ops)

    def step(fn, leaf):
        def run():
            leaf.grad = None
            fn(leaf).backward()

        return run

    contenders = {"eager": step(ops, x), "compiled": step(compiled, x)}
    if torch is not None:
        contenders["torch"] = step(ops, torch.tensor(x_np, requires_grad=True))
    best = best_per_call(contenders, 50, 15)
    record = {name + "_ms": ms(seconds) for name, seconds in best.items()}
    record["compiled_us_per_op"] = round(best["compiled"] / 64 * 1e6, 2)
    if torch is not None:
        record["compiled_vs_torch"] = round(best["compiled"] / best["torch"], 3)
        record["eager_vs_torch"] = round(best["eager"] / best["torch"], 3)
    return record


if __name__ == "__main__":
    _common  # noqa: B018  (imported first for its thread settings)
    main()
