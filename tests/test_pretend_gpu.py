"""Every op, forward and backward, on a pretend GPU that refuses to meet CPU arrays.

test_kernel_devices.py reads the kernels for array-creating numpy calls; this runs
them. A kernel that makes an array on the CPU while its inputs are on the (pretend)
GPU fails here with the op's name, on a machine without a GPU. The values must be
the CPU's, bit for bit: the pretend GPU computes with numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from tests.fake_gpu import FakeGpuArray, MixedDevices, pretend_gpu  # noqa: F401 (the fixture)
from tests.samples import all_samples
from workbench import nn, optim
from workbench.core import backend
from workbench.nn import functional as F

pytestmark = pytest.mark.usefixtures("pretend_gpu")  # device="cuda" is the pretend GPU

# Samples whose function puts something on the CPU on purpose.
CPU_ON_PURPOSE = {
    "to_device": "moves its input to the CPU",
    "getitem_backward_scatter_add": "hands the backward op a raw numpy index, as no caller does",
}
SAMPLES = [s for s in all_samples() if s.name not in CPU_ON_PURPOSE]


def _run(sample, device) -> list:
    """The sample's output, its gradients and its gradients' gradients, on ``device``."""
    inputs = [
        wb.tensor(a, requires_grad=r, device=device) if isinstance(a, np.ndarray) else a
        for a, r in zip(sample.arrays(), sample.requires())
    ]
    out = sample.fn(*inputs)
    results = [out]
    wanted = [x for x in inputs if isinstance(x, wb.Tensor) and x.requires_grad]
    if out.requires_grad and wanted:
        grads = [
            g
            for g in wb.autograd.grad(out.sum().real, wanted, create_graph=True, allow_unused=True)
            if g is not None
        ]
        results += grads
        second = [g.sum().real for g in grads if g.requires_grad]  # real: complex samples
        if second:
            total = wb.stack(second).sum()
            results += [
                g for g in wb.autograd.grad(total, wanted, allow_unused=True) if g is not None
            ]
    return results


def _same_on_the_gpu(gpu_results, cpu_results) -> None:
    assert len(gpu_results) == len(cpu_results)
    for i, (gpu, cpu) in enumerate(zip(gpu_results, cpu_results)):
        assert isinstance(gpu._data, FakeGpuArray), f"result {i} came back on the CPU"
        np.testing.assert_array_equal(
            backend.to_numpy(gpu.detach()._data), cpu.detach().numpy(), err_msg=f"result {i}"
        )


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_sample_runs_on_the_pretend_gpu(sample):
    wb.manual_seed(0)
    cpu = _run(sample, "cpu")
    wb.manual_seed(0)
    _same_on_the_gpu(_run(sample, "cuda"), cpu)


def _training_step(device) -> list:
    """Layers, a loss with ignored targets and label smoothing, three optimizers, init."""
    wb.manual_seed(3)
    model = nn.Sequential(
        nn.Conv2d(2, 3, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Dropout(0.2),
        nn.Flatten(),
        nn.Linear(12, 3),
    ).double()
    nn.init.zeros_(model[5].bias)
    model.to(device)
    x = wb.tensor(np.random.default_rng(0).standard_normal((5, 2, 4, 4)), device=device)
    y = wb.tensor([0, 2, 1, -100, 2], device=device)
    for opt in (
        optim.Adam(model.parameters(), lr=0.01, amsgrad=True, weight_decay=0.1),
        optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True),
    ):
        opt.zero_grad()
        F.cross_entropy(model(x), y, label_smoothing=0.1).backward()
        opt.step()
    return list(model.parameters())


def _in_place(device) -> list:
    x = wb.tensor(np.arange(12.0).reshape(4, 3), device=device)
    x.fill_(2.0)
    x.add_(1.5, alpha=2)
    x[[0, 2]] = 7.0
    x[np.array([1])] = 3.0
    y = wb.zeros(3, dtype=wb.float64, device=device)
    y.copy_([1.0, 2.0, 3.0])
    return [x, y, x.masked_fill(wb.tensor([True, False, True], device=device), -1.0)]


def _indices(device) -> list:
    x = wb.tensor(np.random.default_rng(1).standard_normal((1, 2, 4, 4)), device=device)
    _, where = F.max_pool2d(x, 2, return_indices=True)
    _, first = wb.tensor(2.0, device=device).max(0)
    return [where, first]


class _TwoOutputs(wb.autograd.Function):
    """A custom Function whose second output gets no gradient: it is materialized as zeros."""

    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, first, second):
        return first * 2 + second * 3


def _autograd_tools(device) -> list:
    x = wb.tensor([0.5, -1.0, 2.0], dtype=wb.float64, device=device, requires_grad=True)
    first, _ = _TwoOutputs.apply(x)
    (custom,) = wb.autograd.grad(first.sum(), x)
    jacobian = wb.autograd.functional.jacobian(lambda v: (v * v).tanh(), x)
    (full,) = wb.gradient(x.sin(), x)  # te.gradient: one head per output element
    (headed,) = wb.gradient(x.sin(), x, head=[1.0, 2.0, 3.0])
    return [custom, jacobian, full, headed]


def _gpu_kernels(device) -> list:
    """Kernels that take another road on a GPU (a select where the CPU multiplies by a mask;
    no question the GPU would have to stop and answer): the same values as on the CPU."""
    x = wb.tensor([-1.0, 0.0, 2.0, float("nan")], device=device, requires_grad=True)
    relu_grad = wb.tensor([float("inf"), float("-inf"), float("inf"), 1.0], device=device)
    (through_relu,) = wb.autograd.grad(x.relu(), x, relu_grad)
    logits = wb.tensor([[0.5, 1.0, -1.0], [2.0, 0.0, 1.0]], device=device, requires_grad=True)
    targets = wb.tensor([2, -100], device=device)
    loss = F.cross_entropy(logits, targets)
    loss.backward()
    return [through_relu, loss, logits.grad]


@pytest.mark.parametrize(
    "case",
    [_training_step, _in_place, _indices, _autograd_tools, _gpu_kernels],
    ids=lambda f: f.__name__,
)
def test_layers_optimizers_and_in_place_ops_run_on_the_pretend_gpu(case):
    wb.manual_seed(0)
    cpu = case("cpu")
    wb.manual_seed(0)
    _same_on_the_gpu(case("cuda"), cpu)


def test_the_pretend_gpu_refuses_cpu_arrays():
    x = wb.ones(3, device="cuda")
    assert x.device.type == "cuda" and isinstance(x._data, FakeGpuArray)
    with pytest.raises(MixedDevices, match="np.add"):
        np.add(x._data, np.ones(3, dtype=np.float32))
    with pytest.raises(RuntimeError, match="mul: .*same device"):
        x * wb.ones(3)


def test_a_pytorch_programs_device_lines_pick_the_gpu_when_there_is_one():
    """torch.cuda.is_available() is True with the CuPy backend's GPU (here the pretend one),
    so the usual device line, .to(device) and set_default_device put tensors there."""
    assert wb.cuda.is_available() and wb.accelerator.is_available()
    assert wb.accelerator.current_accelerator() == wb.device("cuda")
    device = "cuda" if wb.cuda.is_available() else "cpu"
    model = nn.Linear(3, 2).to(device)
    assert model.weight.is_cuda and model.weight.device == wb.device("cuda", 0)
    assert model(wb.randn(4, 3, device=device)).device.type == "cuda"
    try:
        wb.set_default_device("cuda")
        made = wb.zeros(2)
        assert isinstance(made._data, FakeGpuArray) and made.device.type == "cuda"
    finally:
        wb.set_default_device(None)
    assert wb.zeros(2).device.type == "cpu"


def test_a_training_step_asks_the_gpu_one_question(monkeypatch):
    """Reading a GPU value on the host (``bool``, ``float``, ``.item()``, ``.get()``) makes
    the CPU wait for every queued kernel, so a step's host reads are counted: one, the
    check that every target is a class."""
    asked = []
    for name in ("__bool__", "__float__", "__int__", "__index__", "item", "get", "tolist"):
        read = getattr(FakeGpuArray, name)

        def counted(self, *args, _read=read, _name=name, **kwargs):
            asked.append(_name)
            return _read(self, *args, **kwargs)

        monkeypatch.setattr(FakeGpuArray, name, counted)
    wb.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).to("cuda")
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = wb.randn(5, 6).to("cuda")
    y = wb.tensor([0, 1, 2, 1, 0], device="cuda")
    for _ in range(2):
        asked.clear()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        assert asked == ["__bool__"]
