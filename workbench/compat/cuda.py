"""``wb.cuda``: PyTorch's ``torch.cuda`` questions, answered by the CuPy backend.

``wb.cuda.is_available()`` is True only when CuPy is installed and sees a CUDA GPU
(``pip install 'autodiff-workbench[cuda]'``); then ``x.to("cuda")`` puts a tensor's memory on it.
Random numbers for GPU tensors come from the CPU generator (see ``workbench/core/random.py``),
so the seeding functions here only seed that one.
"""

from __future__ import annotations

from ..core import backend
from ..core.random import manual_seed as _seed_cpu_generator


def is_available() -> bool:
    """Whether tensors can go to ``"cuda"``: CuPy installed and a GPU it can use."""
    return backend.cuda_available()


def device_count() -> int:
    if not is_available():
        return 0
    return int(backend.cupy_module().cuda.runtime.getDeviceCount())


def current_device() -> int:
    _require_gpu("current_device")
    return int(backend.cupy_module().cuda.Device().id)


def get_device_name(device=None) -> str:
    _require_gpu("get_device_name")
    index = device if isinstance(device, int) else getattr(device, "index", None) or 0
    return backend.cupy_module().cuda.runtime.getDeviceProperties(index)["name"].decode()


def synchronize(device=None) -> None:
    """Wait for the GPU to finish its queued work (nothing to wait for without one)."""
    if is_available():
        backend.cupy_module().cuda.Device().synchronize()


def empty_cache() -> None:
    """Give CuPy's cached, unused GPU memory back."""
    if is_available():
        backend.cupy_module().get_default_memory_pool().free_all_blocks()


def manual_seed(seed: int) -> None:
    """Seeds the generator that GPU tensors draw from: the CPU one."""
    _seed_cpu_generator(seed)


manual_seed_all = manual_seed


def _require_gpu(name: str) -> None:
    if not is_available():
        raise RuntimeError(
            f"cuda.{name}(): no GPU is available to the workbench (it needs CuPy and a CUDA "
            "GPU: pip install 'autodiff-workbench[cuda]')"
        )
