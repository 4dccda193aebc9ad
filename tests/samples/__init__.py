"""Sample inputs for every registered op, in one table the registry test walks.

Each module in this package defines ``SAMPLES: list[Sample]``. The registry test
(tests/test_registry.py) fails if any op in ``workbench.ops.OPS`` is covered by no
sample, runs gradcheck and gradgradcheck (float64) on every differentiable sample,
and, when torch is installed, compares values, gradients and second-order gradients
with ``torch_fn``. The samples named in ``complex_numbers.COMPLEX_NAMES`` run a second
time with complex128 inputs, and their values and gradients are compared with PyTorch
in complex64 too.
"""

from __future__ import annotations

import importlib
import pkgutil
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Sample:
    """One way of calling an op.

    ``fn`` takes workbench tensors (float64, requiring grad where ``grad`` says) and
    returns a tensor; ``torch_fn`` is the same computation written with torch (None
    when torch has no equivalent). ``inputs`` are numpy arrays, or shapes from which
    random arrays in [low, high) are drawn (seeded by the sample's name).
    """

    name: str
    ops: tuple  # the registered op names this sample exercises
    fn: Callable
    inputs: tuple
    torch_fn: Callable | None = None
    grad: tuple | None = None  # which inputs require grad (default: every float input)
    low: float = -1.0
    high: float = 1.0
    gradgrad: bool = True  # False only with a reason in `note`
    note: str = ""
    atol: float = 1e-5
    rtol: float = 1e-3
    eps: float = 1e-6  # finite-difference step (larger only for low-precision outputs)
    extra: dict = field(default_factory=dict)

    def arrays(self) -> list:
        # crc32, not hash(): str hashes change from run to run, the inputs must not.
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        out = []
        for spec in self.inputs:
            if isinstance(spec, np.ndarray):
                out.append(spec.copy())
            elif isinstance(spec, tuple):
                out.append(rng.uniform(self.low, self.high, size=spec))
            else:
                out.append(spec)
        return out

    def requires(self) -> list:
        arrays = self.arrays()
        if self.grad is not None:
            return list(self.grad)
        return [isinstance(a, np.ndarray) and a.dtype.kind in "fc" for a in arrays]


def all_samples() -> list:
    samples = []
    for module in pkgutil.iter_modules(__path__):
        mod = importlib.import_module(f"{__name__}.{module.name}")
        samples.extend(getattr(mod, "SAMPLES", []))
    return samples
