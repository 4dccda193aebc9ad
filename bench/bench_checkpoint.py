"""Checkpointing trades compute for memory: how much of each, for us and for PyTorch.

Workload: 64 layers ``h = tanh(h @ W + b)`` of width 256 on a batch of 4096 (float32),
``loss = h.sum()``, one forward + backward step. Each variant (ours / torch, plain /
``checkpoint_sequential(..., 8 segments, use_reentrant=False)``) runs in fresh
subprocesses -- one for memory, one for time -- so allocator caches of one variant
never flatter another. Both frameworks get ``--threads`` BLAS/OpenMP threads (default
1: the machine is shared, and oversubscribed thread pools time very badly).

Memory, three ways (ratios are checkpointed / plain):

* ``saved``: peak bytes held by saved tensors. Ours: the engine's own counter,
  ``wb.autograd.saved_memory().peak``. Torch (plain only): a ``saved_tensors_hooks``
  pair whose holders add their storage's bytes when packed and subtract them when the
  graph frees them (each storage counted once). Inside torch's checkpoint its own
  hooks take over and its recomputed tensors never pass through user hooks, so torch
  gets no checkpointed ``saved`` figure.
* ``rss``: peak resident memory of the step above the memory in use just before it
  (``VmHWM`` reset through ``/proc/self/clear_refs``; ``ru_maxrss`` as a fallback).
  Same method for both frameworks: every buffer of the step, saved or not. The memory
  subprocess runs with ``MALLOC_MMAP_THRESHOLD_=65536`` so that glibc gives every large
  buffer back to the system when it is freed: resident memory then follows the live
  buffers instead of the allocator's cache.
* ``traced`` (ours only): the peak of the step's numpy buffers, from ``tracemalloc``
  (numpy reports its allocations to it), measured in a separate step.

Time: best of ``--repeat`` steps after a warm-up step, in its own subprocess with the
default allocator. The machine is shared, so timings are noisy; read the ratios.

Run: ``.venv/bin/python bench/bench_checkpoint.py`` (prints one JSON line);
``--small`` for a quick smoke run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# ----------------------------------------------------------------- memory probes
def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _peak_rss_of(step) -> int:
    """Bytes the step added at its peak above what was resident before it."""
    if _reset_peak_rss() and _status_kib("VmHWM") is not None:
        before = _status_kib("VmRSS")
        step()
        return (_status_kib("VmHWM") - before) * 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    step()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024


def _traced_peak_of(step) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        step()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _best_time(step, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - start)
    return best


# ---------------------------------------------------------------------- workers
def _training_step(args, layers, params, x, checkpoint_sequential):
    """One forward + backward through the layers, plain or in checkpointed segments.

    Written once for both libraries: only their ``checkpoint_sequential`` differs.
    """

    def step(batch=x):
        if args.mode == "plain":
            h = batch
            for layer in layers:
                h = layer(h)
        else:
            h = checkpoint_sequential(layers, args.segments, batch, use_reentrant=False)
        h.sum().backward()
        for w, b in params:
            w.grad = None
            b.grad = None

    return step


def _ours(args) -> dict:
    sys.path.insert(0, str(ROOT))
    import numpy as np

    import workbench as wb
    from workbench.utils.checkpoint import checkpoint_sequential

    rng = np.random.default_rng(0)
    scale = 1 / np.sqrt(args.width)
    params = [
        (
            wb.tensor(rng.standard_normal((args.width, args.width)) * scale, dtype=wb.float32),
            wb.tensor(rng.standard_normal(args.width) * 0.1, dtype=wb.float32),
        )
        for _ in range(args.layers)
    ]
    for w, b in params:
        w.requires_grad_()
        b.requires_grad_()
    layers = [lambda h, w=w, b=b: (h @ w + b).tanh() for w, b in params]
    x = wb.tensor(rng.standard_normal((args.batch, args.width)), dtype=wb.float32)

    step = _training_step(args, layers, params, x, checkpoint_sequential)

    step(x[:64])  # load BLAS and friends outside the measurement
    if args.measure == "time":
        step()
        return {"seconds": _best_time(step, args.repeat)}
    wb.autograd.reset_peak_saved_memory()
    base = wb.autograd.saved_memory().current
    rss = _peak_rss_of(step)
    saved = wb.autograd.saved_memory().peak - base
    return {"rss": rss, "saved": saved, "traced": _traced_peak_of(step)}


def _torch(args) -> dict:
    import numpy as np
    import torch
    from torch.utils.checkpoint import checkpoint_sequential

    rng = np.random.default_rng(0)
    scale = 1 / np.sqrt(args.width)
    params = [
        (
            torch.tensor(rng.standard_normal((args.width, args.width)) * scale).float(),
            torch.tensor(rng.standard_normal(args.width) * 0.1).float(),
        )
        for _ in range(args.layers)
    ]
    for w, b in params:
        w.requires_grad_()
        b.requires_grad_()
    layers = [lambda h, w=w, b=b: torch.tanh(h @ w + b) for w, b in params]
    x = torch.tensor(rng.standard_normal((args.batch, args.width))).float()

    step = _training_step(args, layers, params, x, checkpoint_sequential)

    torch.set_num_threads(args.threads)
    step(x[:64])
    if args.measure == "time":
        step()
        return {"seconds": _best_time(step, args.repeat)}
    rss = _peak_rss_of(step)
    saved = _torch_saved_peak(step) if args.mode == "plain" else None
    return {"rss": rss, "saved": saved}


def _torch_saved_peak(step) -> int:
    """Peak bytes of storages held by torch's saved tensors (plain graphs only)."""
    import torch

    counts: dict = {}
    state = {"current": 0, "peak": 0}

    class Holder:
        def __init__(self, t) -> None:
            self.t = t
            self.key = t.untyped_storage().data_ptr()
            if self.key not in counts:
                counts[self.key] = [t.untyped_storage().nbytes(), 0]
                state["current"] += counts[self.key][0]
                state["peak"] = max(state["peak"], state["current"])
            counts[self.key][1] += 1

        def __del__(self) -> None:
            entry = counts[self.key]
            entry[1] -= 1
            if entry[1] == 0:
                state["current"] -= entry[0]
                del counts[self.key]

    with torch.autograd.graph.saved_tensors_hooks(Holder, lambda holder: holder.t):
        step()
    return state["peak"]


def _worker(args) -> None:
    result = _ours(args) if args.framework == "ours" else _torch(args)
    print(json.dumps(result))


# ------------------------------------------------------------------------ driver
def _run_variant(args, framework: str, mode: str) -> dict:
    result = {}
    for measure in ("memory", "time"):
        result.update(_run_worker(args, framework, mode, measure))
    return result


def _run_worker(args, framework: str, mode: str, measure: str) -> dict:
    threads = str(args.threads)
    env = dict(os.environ, OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads)
    env.update(MKL_NUM_THREADS=threads)
    if measure == "memory":
        env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    command = [
        sys.executable,
        __file__,
        "--worker",
        framework,
        mode,
        "--measure",
        measure,
        "--threads",
        threads,
        "--layers",
        str(args.layers),
        "--width",
        str(args.width),
        "--batch",
        str(args.batch),
        "--segments",
        str(args.segments),
        "--repeat",
        str(args.repeat),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ratio(a, b):
    return None if a is None or b is None or not b else round(a / b, 4)


def _summary(plain: dict, ckpt: dict) -> dict:
    out = {"plain": plain, "checkpoint": ckpt}
    out["time_ratio"] = _ratio(ckpt["seconds"], plain["seconds"])
    for key in ("saved", "rss", "traced"):
        if key in plain:
            out[f"{key}_memory_ratio"] = _ratio(ckpt.get(key), plain.get(key))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=2, metavar=("FRAMEWORK", "MODE"))
    parser.add_argument("--layers", type=int, default=64)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--segments", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--measure", choices=("memory", "time"), default="memory")
    parser.add_argument("--small", action="store_true", help="a quick smoke run")
    args = parser.parse_args()
    if args.small:
        args.layers, args.width, args.batch, args.segments, args.repeat = 16, 64, 256, 4, 2
    if args.worker:
        args.framework, args.mode = args.worker
        _worker(args)
        return
    keys = ("layers", "width", "batch", "segments", "repeat", "threads")
    config = {k: getattr(args, k) for k in keys}
    report = {"bench": "checkpoint", "config": config, "dtype": "float32"}
    for framework in ("ours", "torch"):
        plain = _run_variant(args, framework, "plain")
        ckpt = _run_variant(args, framework, "checkpoint")
        report[framework] = _summary(plain, ckpt)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
