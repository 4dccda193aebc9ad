"""Devices: CPU semantics everywhere, the mixed-device error, and real GPU runs (CuPy).

Tests marked ``gpu`` need CuPy and a CUDA device; elsewhere they skip. They compare
every result on the GPU with the same computation on the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench import nn, optim
from workbench.core import backend
from workbench.nn import functional as F

needs_gpu = pytest.mark.skipif(
    not backend.cuda_available(),
    reason="needs CuPy and a CUDA GPU (pip install 'autodiff-workbench[cuda]')",
)


# ------------------------------------------------------------------------ CPU
def test_tensors_start_on_the_cpu():
    x = wb.tensor([1.0, 2.0])
    assert x.device.type == "cpu"
    assert wb.zeros(2, device="cpu").device.type == "cpu"
    assert wb.tensor([1.0], device="cpu").device.type == "cpu"
    assert (x * 2).device.type == "cpu"
    assert backend.xp(x._data) is np


def test_moving_to_the_same_device_is_a_no_op():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    assert x.to("cpu") is x
    assert x.cpu() is x


def test_unknown_devices_are_refused():
    with pytest.raises(RuntimeError, match="unknown device 'tpu'"):
        wb.tensor([1.0], device="tpu")


@pytest.mark.parametrize(
    "index, error, words",
    [(-1, RuntimeError, "must not be negative"), (2**70, ValueError, "too big")],
)
def test_an_int_device_is_an_accelerator_index_as_in_torch(index, error, words):
    """PyTorch reads ``to(0)`` or ``device=-1`` as an accelerator's index: a negative one
    is its RuntimeError, one beyond 64 bits its ValueError (not an unknown device)."""
    torch = pytest.importorskip("torch")
    for make in (lambda m: m.zeros(2, device=index), lambda m: m.ones(2).to(index)):
        with pytest.raises(error):
            make(torch)
        with pytest.raises(error, match=words):
            make(wb)


@pytest.mark.skipif(backend.cuda_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_says_how_to_get_one():
    with pytest.raises(RuntimeError, match=r"workbench\[cuda\]"):
        wb.tensor([1.0], device="cuda")
    with pytest.raises(RuntimeError, match="CuPy"):
        wb.ones(2).to("cuda")
    with pytest.raises(RuntimeError, match=r"to\(\): device='cuda:0' needs CuPy"):
        wb.ones(2).to(0)  # the accelerator of index 0, as in PyTorch
    assert not backend.gpu_in_use  # so apply_op never pays for the device check


def test_module_to_changes_dtype_in_place():
    layer = nn.Linear(3, 2)
    weight = layer.weight
    layer.to(wb.float64)
    assert layer.weight is weight and weight.dtype == wb.float64
    assert layer.to("cpu") is layer


class _FakeGpuArray(np.ndarray):
    """A numpy array that the backend is told lives on another device (for the error path)."""


@pytest.fixture
def fake_second_device(monkeypatch):
    real_device_of = backend.device_of

    def device_of(array):
        return "cuda" if isinstance(array, _FakeGpuArray) else real_device_of(array)

    monkeypatch.setattr(backend, "device_of", device_of)
    monkeypatch.setattr(backend, "gpu_in_use", True)


def test_mixing_devices_names_the_op_and_the_devices(fake_second_device):
    on_gpu = wb.Tensor._make(np.ones(3).view(_FakeGpuArray))
    on_cpu = wb.ones(3, dtype=wb.float64)
    with pytest.raises(RuntimeError, match=r"mul: .*same device.*cuda and cpu"):
        on_gpu * on_cpu
    assert (on_cpu * 2.0).device.type == "cpu"  # Python numbers go anywhere
    assert (on_gpu + on_gpu).shape == (3,)


# ------------------------------------------------------------------------ GPU
def _pair(shape, low=-1.0, high=1.0, seed=0):
    """The same float64 values as a CPU leaf and a GPU leaf, both requiring grad."""
    array = np.random.default_rng(seed).uniform(low, high, size=shape)
    cpu = wb.tensor(array, requires_grad=True)
    gpu = wb.tensor(array, device="cuda", requires_grad=True)
    return cpu, gpu


def _same(gpu_tensor, cpu_tensor, atol=1e-8):
    assert gpu_tensor.device.type == "cuda"
    np.testing.assert_allclose(
        backend.to_numpy(gpu_tensor.detach()._data), cpu_tensor.detach().numpy(), atol=atol
    )


GPU_CASES = {
    "add_broadcast": (((3, 4), (4,)), lambda a, b: a + b),
    "mul_div": (((3, 4), (3, 1)), lambda a, b: a * b / (b * b + 1)),
    "exp_log_sqrt": (((5,),), lambda a: (a.exp() + 1).log().sqrt()),
    "tanh_sigmoid_relu": (((4, 4),), lambda a: a.tanh() + a.sigmoid() * a.relu()),
    "matmul": (((3, 4), (4, 2)), lambda a, b: a @ b),
    "sum_mean_max": (((3, 4),), lambda a: a.sum(1) + a.mean(0)[:3] + a.amax(1)),
    "reshape_transpose_index": (((2, 6),), lambda a: a.reshape(3, 4).T[1:, ::2]),
    "linear": (((5, 4), (3, 4), (3,)), lambda x, w, b: F.linear(x, w, b)),
    "softmax": (((4, 5),), lambda a: F.softmax(a, dim=1) * F.log_softmax(a, dim=1)),
    "conv2d": (((2, 3, 6, 6), (4, 3, 3, 3)), lambda x, w: F.conv2d(x, w, padding=1)),
    "max_pool2d": (((2, 3, 6, 6),), lambda x: F.max_pool2d(x, 2)),
    "avg_pool2d": (((2, 3, 6, 6),), lambda x: F.avg_pool2d(x, 2)),
    "layer_norm": (((4, 6),), lambda x: F.layer_norm(x, (6,))),
    "gelu": (((4, 6),), lambda x: F.gelu(x)),
}


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", list(GPU_CASES))
def test_ops_forward_and_backward_match_the_cpu(name):
    shapes, fn = GPU_CASES[name]
    pairs = [_pair(shape, seed=i) for i, shape in enumerate(shapes)]
    cpu_out = fn(*[c for c, _ in pairs])
    gpu_out = fn(*[g for _, g in pairs])
    _same(gpu_out, cpu_out)
    weights = np.random.default_rng(9).standard_normal(cpu_out.shape)
    (cpu_out * wb.tensor(weights)).sum().backward()
    (gpu_out * wb.tensor(weights, device="cuda")).sum().backward()
    for cpu, gpu in pairs:
        _same(gpu.grad, cpu.grad)


@pytest.mark.gpu
@needs_gpu
def test_mixing_real_devices_is_refused():
    cpu, gpu = _pair((3,))
    with pytest.raises(RuntimeError, match="add: .*same device"):
        cpu + gpu


@pytest.mark.gpu
@needs_gpu
def test_to_is_differentiable_across_devices():
    x = wb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x.to("cuda") ** 2).sum()
    assert y.device.type == "cuda" and "device='cuda:0'" in repr(y.detach())
    y.backward()
    assert x.grad.device.type == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


@pytest.mark.gpu
@needs_gpu
def test_mlp_training_step_matches_the_cpu():
    def make():
        wb.manual_seed(3)
        return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).double()

    data = np.random.default_rng(0).standard_normal((10, 8))
    labels = np.arange(10) % 4
    results = []
    for device in ("cpu", "cuda"):
        model = make().to(device)
        opt = optim.Adam(model.parameters(), lr=0.01)
        x = wb.tensor(data, device=device)
        y = wb.tensor(labels, device=device)
        for _ in range(3):
            opt.zero_grad()
            loss = nn.CrossEntropyLoss()(model(x), y)
            loss.backward()
            opt.step()
        assert all(p.device.type == device for p in model.parameters())
        results.append([backend.to_numpy(p.detach()._data) for p in model.parameters()])
    for cpu, gpu in zip(*results):
        np.testing.assert_allclose(gpu, cpu, atol=1e-8)
