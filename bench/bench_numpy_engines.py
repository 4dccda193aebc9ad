"""The workbench against the other numpy autodiff engines, and PyTorch, in one run.

HIPS autograd (traces a function, then differentiates it), MyGrad and DeZero (tensors
that record, as here) are what a learner meets beside micrograd. Two programs, each
forward + backward, float32 (DeZero and autograd keep float32 too), one thread:

- the elementwise chain: ``y = sin(tanh(y * w + b))`` 16 times on (8, 8) tensors,
  64 ops, where each engine's cost per op dominates;
- the matmul chain: ``y = tanh(y @ W_i)`` through 8 layers of (64, 64) at batch 64,
  where the kernels start to count.

The three engines are benchmark-only dependencies, pinned below. If they are missing,
this script installs them with pip into ``build/bench-deps`` (not into the project's
environment) and imports them from there. DeZero 0.0.13 (2020) still names ``np.int``,
which NumPy removed in 1.24: the script gives it back that alias before importing it.

Prints one JSON line: microseconds per step for each contender, and the workbench's
time as a multiple of each (``below_1_is_faster``). Target (issue 40): faster than all
three on both chains.
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

from _common import best_per_call, emit, machine, np, torch, us

import workbench as wb

PINNED = {"autograd": "autograd==1.9.1", "mygrad": "mygrad==2.5.0", "dezero": "dezero==0.0.13"}
DEPS = Path(__file__).resolve().parent.parent / "build" / "bench-deps"
REPEATS, SHAPE = 16, (8, 8)
LAYERS, WIDTH, BATCH = 8, 64, 64
NUMBER, ROUNDS = 20, 7


def engines() -> dict:
    """The three modules, installed into ``build/bench-deps`` first if they are missing."""
    sys.path.insert(0, str(DEPS))
    if not hasattr(np, "int"):
        np.int = int  # DeZero 0.0.13's default dtype argument (see the module docstring)
    missing = [spec for name, spec in PINNED.items() if importlib.util.find_spec(name) is None]
    if missing:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--target", str(DEPS), *missing],
            check=True,
        )
        importlib.invalidate_caches()
    return {name: importlib.import_module(name) for name in PINNED}


def arrays(rng) -> dict:
    small = [rng.standard_normal(SHAPE).astype(np.float32) * 0.5 for _ in range(3)]
    scale = np.float32(1 / np.sqrt(WIDTH))
    layers = [rng.standard_normal((WIDTH, WIDTH)).astype(np.float32) * scale for _ in range(LAYERS)]
    batch = rng.standard_normal((BATCH, WIDTH)).astype(np.float32)
    return {"small": small, "layers": layers, "batch": batch}


def elementwise(x, w, b, sin, tanh):
    y = x
    for _ in range(REPEATS):
        y = sin(tanh(y * w + b))
    return y


def matmuls(x, layers, matmul, tanh):
    y = x
    for weight in layers:
        y = tanh(matmul(y, weight))
    return y


def tensor_engine(make, sin, tanh, matmul, total, grad_of) -> dict:
    """Steps for an engine whose tensors record (workbench, PyTorch, MyGrad, DeZero)."""

    def steps(data):
        x, w, b = (make(a) for a in data["small"])
        batch, layers = make(data["batch"]), [make(a) for a in data["layers"]]

        def chain():
            total(elementwise(x, w, b, sin, tanh)).backward()
            return grad_of(w)

        def matmul_chain():
            total(matmuls(batch, layers, matmul, tanh)).backward()
            return grad_of(layers[0])

        return {"elementwise": chain, "matmul": matmul_chain}

    return steps


def torch_like_steps(lib, data) -> dict:
    """The workbench's steps, or PyTorch's: the same API, ``lib`` is ``wb`` or ``torch``."""

    def make(a):
        return lib.tensor(a, requires_grad=True)

    def fresh(t):
        grad, t.grad = t.grad, None
        return grad

    return tensor_engine(make, lib.sin, lib.tanh, lib.matmul, lambda y: y.sum(), fresh)(data)


def mygrad_steps(mg, data) -> dict:
    def fresh(t):
        grad = t.grad
        t.null_grad()
        return grad

    return tensor_engine(mg.tensor, mg.sin, mg.tanh, mg.matmul, mg.sum, fresh)(data)


def dezero_steps(dezero, data) -> dict:
    F = dezero.functions

    def fresh(v):
        grad = v.grad
        v.cleargrad()
        return grad

    return tensor_engine(dezero.Variable, F.sin, F.tanh, F.matmul, F.sum, fresh)(data)


def autograd_steps(autograd, data) -> dict:
    """HIPS autograd differentiates a function: ``grad`` traces it on every call."""
    anp = importlib.import_module("autograd.numpy")
    x, w, b = data["small"]
    batch, layers = data["batch"], data["layers"]
    chain_grad = autograd.grad(
        lambda w: anp.sum(elementwise(x, w, b, anp.sin, anp.tanh))
    )  # the gradient for w only; x and b are constants of the traced function
    layers_grad = autograd.grad(
        lambda layers: anp.sum(matmuls(batch, layers, anp.dot, anp.tanh))
    )  # all layers
    return {"elementwise": lambda: chain_grad(w), "matmul": lambda: layers_grad(layers)}


def same_gradients(results: dict) -> bool:
    """Every contender's gradient agrees with the workbench's (so each ran the same program)."""
    reference = {k: np.asarray(v) for k, v in results["workbench"].items()}
    for got in results.values():
        for program, value in got.items():
            value = value.detach().numpy() if hasattr(value, "detach") else value
            value = value[0] if program == "matmul" and isinstance(value, list) else value
            value = getattr(value, "data", value)
            if not np.allclose(np.asarray(value), reference[program], rtol=1e-3, atol=1e-5):
                return False
    return True


def main() -> None:
    modules = engines()
    data = arrays(np.random.default_rng(0))
    contenders = {
        "workbench": torch_like_steps(wb, data),
        "autograd": autograd_steps(modules["autograd"], data),
        "mygrad": mygrad_steps(modules["mygrad"], data),
        "dezero": dezero_steps(modules["dezero"], data),
    }
    if torch is not None:
        contenders["torch"] = torch_like_steps(torch, data)
    gradients = {
        name: {program: step() for program, step in steps.items()}
        for name, steps in contenders.items()
    }
    gradients["workbench"] = {k: v.numpy() for k, v in gradients["workbench"].items()}
    record = {"bench": "numpy_engines", "machine": machine(), "same_gradients": None}
    record["same_gradients"] = same_gradients(gradients)
    for program in ("elementwise", "matmul"):
        steps = {name: contender[program] for name, contender in contenders.items()}
        best = best_per_call(steps, NUMBER, ROUNDS)
        mine_name = "workbench"
        mine = best[mine_name]
        record[program] = {
            "us_per_step": {name: us(seconds) for name, seconds in best.items()},
            "workbench_over": {
                name: round(mine / seconds, 3)
                for name, seconds in best.items()
                if name != "workbench"
            },
        }
    record["versions"] = {
        name: getattr(m, "__version__", PINNED[name]) for name, m in modules.items()
    }
    emit(record)


if __name__ == "__main__":
    main()
