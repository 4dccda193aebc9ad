"""The parts of PyTorch's surface that tutorials lean on, against PyTorch 2.13: devices,
Size, Tensor.type, numel, numpy's axis=/keepdims=, the small ops a program reaches for
(log10, one_hot, all, isclose, mv, bmm, histogram, meshgrid...), the layers (BatchNorm,
LazyLinear, the activations), and saving a state_dict."""

from __future__ import annotations

import io

import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")
F, TF = wb.nn.functional, torch.nn.functional
DATA = np.random.default_rng(0).uniform(0.5, 2.0, (3, 4)).astype(np.float32)


def both(make):
    return make(wb), make(torch)


def equal_values(ours, theirs, **tol) -> None:
    np.testing.assert_allclose(
        np.asarray(ours.detach().numpy()), theirs.detach().numpy(), **(tol or {"rtol": 1e-6})
    )


# -------------------------------------------------------------------- devices
def test_device_objects_print_and_compare_as_pytorchs():
    for spec in ("cpu", "cuda", "cuda:1"):
        ours, theirs = wb.device(spec), torch.device(spec)
        assert (repr(ours), str(ours), ours.type, ours.index) == (
            repr(theirs),
            str(theirs),
            theirs.type,
            theirs.index,
        )
    assert wb.device("cuda", 0) == wb.device("cuda:0") and wb.device("cpu") != "cpu"
    assert torch.device("cpu") != "cpu"  # the same (surprising) answer in PyTorch
    assert wb.ones(2).device == wb.device("cpu") and not wb.ones(2).is_cuda


@pytest.mark.parametrize(
    "spec, error", [("gpu", "Expected one of cpu, cuda"), ("cuda:x", "Invalid")]
)
def test_a_bad_device_string_is_refused_as_in_pytorch(spec, error):
    for lib in (wb, torch):
        with pytest.raises(RuntimeError, match=error):
            lib.device(spec)


def test_without_a_gpu_cuda_is_not_available_and_the_usual_line_picks_the_cpu():
    if wb.cuda.is_available():
        pytest.skip("this machine has CuPy and a GPU")
    assert wb.cuda.device_count() == 0 and wb.accelerator.current_accelerator() is None
    assert not wb.backends.mps.is_available()
    device = "cuda" if wb.cuda.is_available() else "cpu"
    assert wb.ones(2).to(device).device.type == "cpu"
    with pytest.raises(RuntimeError, match="needs CuPy and a CUDA GPU"):
        wb.ones(2).to("cuda")


def test_set_default_device_and_back():
    try:
        wb.set_default_device("cpu")
        assert wb.get_default_device() == wb.device("cpu")
        assert wb.zeros(2).device.type == "cpu"
    finally:
        wb.set_default_device(None)


# --------------------------------------------------------- Size, type, numel
def test_size_prints_and_behaves_as_pytorchs():
    ours, theirs = both(lambda m: m.ones(6, 1, 5, 5))
    assert repr(ours.size()) == repr(theirs.size()) == "torch.Size([6, 1, 5, 5])"
    assert str(ours.shape[1:]) == str(theirs.shape[1:])
    assert ours.shape == (6, 1, 5, 5) and ours.size(0) == 6 and ours.shape.numel() == 150
    assert isinstance(ours.shape[1:], wb.Size) and isinstance(ours.shape[0], int)
    n, c, h, w = ours.shape
    assert (n, c, h, w) == (6, 1, 5, 5)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool", "float16"])
def test_tensor_type_names_and_converts_as_pytorch(dtype):
    ours = wb.ones(2, dtype=getattr(wb, dtype if dtype != "bool" else "bool_"))
    theirs = torch.ones(2, dtype=getattr(torch, dtype))
    assert ours.type() == theirs.type()
    assert ours.type(wb.float64).dtype == wb.float64
    assert ours.type("torch.LongTensor").dtype == wb.int64
    assert ours.numel() == ours.nelement() == wb.numel(ours) == 2
    assert ours.element_size() == theirs.element_size()


def test_new_tensors_take_dtype_and_device_from_the_tensor():
    x = wb.ones(2, dtype=wb.float64)
    assert x.new_zeros(3).dtype == x.new_ones((2, 2)).dtype == x.new_tensor([1, 2]).dtype
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0] and x.new_empty(1).shape == (1,)


# ----------------------------------------------------- axis= and keepdims=
@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.sum(axis=1, keepdims=True),
        lambda x: x.mean(axis=0),
        lambda x: x.max(axis=1).values,
        lambda x: x.argmax(axis=1),
        lambda x: x.std(axis=0, keepdims=True),
        lambda x: x.var(axis=1),
        lambda x: x.prod(axis=0),
        lambda x: x.logsumexp(axis=1),
        lambda x: x.amax(axis=0),
        lambda x: x.norm(dim=0),
        lambda x: x.all(axis=0),
    ],
)
def test_numpy_names_are_accepted_as_pytorch_accepts_them(call):
    ours, theirs = both(lambda m: m.tensor(DATA))
    equal_values(call(ours), call(theirs))


def test_a_dim_given_both_ways_is_refused():
    for lib in (wb, torch):
        with pytest.raises(TypeError, match="axis"):
            lib.ones(2, 2).sum(dim=0, axis=0)
    with pytest.raises(TypeError, match="axis"):
        wb.sum(wb.ones(2, 2), 0, axis=0)


# ----------------------------------------------------------- small ops
@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.log10(),
        lambda m, x: m.log2(x),
        lambda m, x: m.tensor([10.0, 100.0, 1000.0]).log10(),
        lambda m, x: m.mv(x, x[0, :4]),
        lambda m, x: m.bmm(x.unsqueeze(0), x.t().unsqueeze(0)),
        lambda m, x: m.outer(x[0], x[1]),
        lambda m, x: x.mm(x.t()),
        lambda m, x: m.addmm(x[0, :3], x, x.t()),
        lambda m, x: m.isclose(x, x + 1e-6),
        lambda m, x: m.any(x > 1.5, dim=1),
        lambda m, x: m.tensor([m.allclose(x, x * (1 + 1e-7)), m.equal(x, x + 0)]),
        lambda m, x: m.nn.functional.one_hot(m.tensor([0, 3, 1]), 5),
        lambda m, x: m.histogram(x.flatten(), bins=4).hist,
        lambda m, x: m.histogram(x.flatten(), bins=4, density=True).bin_edges,
        lambda m, x: m.stack(m.meshgrid(x[0], x[1, :2], indexing="ij")),
        lambda m, x: m.stack(m.meshgrid(x[0], x[1, :2], indexing="xy")),
        lambda m, x: m.from_numpy(np.arange(3.0)),
        lambda m, x: x.masked_fill_(x > 1.5, 0.0),
        lambda m, x: x.view_as(x.t()),
    ],
)
def test_small_ops_give_pytorchs_values(call):
    ours, theirs = both(lambda m: m.tensor(DATA))
    equal_values(call(wb, ours), call(torch, theirs))


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda m: m.mv(m.ones(2, 3), m.ones(2)), RuntimeError, "size mismatch"),
        (lambda m: m.bmm(m.ones(2, 3), m.ones(3, 2)), RuntimeError, "3D tensor"),
        (lambda m: m.mm(m.ones(2, 3), m.ones(2, 2)), RuntimeError, "cannot be multiplied"),
        (lambda m: m.nn.functional.one_hot(m.tensor([0, 3]), 3), RuntimeError, "smaller than"),
        (lambda m: m.nn.functional.one_hot(m.tensor([-1]), 3), RuntimeError, "non-negative"),
        (lambda m: m.nn.functional.one_hot(m.tensor([1.0]), 3), RuntimeError, "LongTensor"),
    ],
)
def test_small_ops_refuse_as_pytorch_refuses(call, error, words):
    for lib in (wb, torch):
        with pytest.raises(error, match=words):
            call(lib)


def test_the_grads_of_log10_and_log2_are_pytorchs():
    results = []
    for lib in (wb, torch):
        x = lib.tensor(DATA, requires_grad=True)
        (x.log10() * 2 + x.log2()).sum().backward()
        results.append(x.grad)
    equal_values(*results)


# ---------------------------------------------------------------- layers
@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda m: m.nn.BatchNorm1d(4), (6, 4)),
        (lambda m: m.nn.BatchNorm1d(4, affine=False), (6, 4, 3)),
        (lambda m: m.nn.BatchNorm2d(4, momentum=0.3), (2, 4, 3, 3)),
        (lambda m: m.nn.LeakyReLU(0.2), (6, 4)),
        (lambda m: m.nn.ELU(0.5), (6, 4)),
        (lambda m: m.nn.SiLU(), (6, 4)),
        (lambda m: m.nn.Softplus(2.0), (6, 4)),
    ],
)
def test_layers_train_and_evaluate_as_pytorchs(make, shape):
    x0 = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    results = []
    for lib in (wb, torch):
        layer = make(lib)
        x = lib.tensor(x0, requires_grad=True)
        (layer(x) ** 3).sum().backward()
        layer.eval()
        evaluated = layer(lib.tensor(x0 * 2))
        buffers = [b.detach().numpy().astype(np.float64) for b in layer.buffers()]
        results.append((x.grad, evaluated, buffers, repr(layer)))
    (g1, e1, b1, r1), (g2, e2, b2, r2) = results
    equal_values(g1, g2, rtol=1e-4, atol=1e-5)
    equal_values(e1, e2, rtol=1e-5, atol=1e-6)
    for a, b in zip(b1, b2):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert r1 == r2


def test_batch_norm_refuses_a_single_value_per_channel_when_training():
    for lib in (wb, torch):
        with pytest.raises(ValueError, match="more than 1 value per channel"):
            lib.nn.BatchNorm1d(3)(lib.ones(1, 3))


def test_lazy_linear_keeps_its_parameter_objects_for_an_optimizer_made_before():
    layer = wb.nn.LazyLinear(2)
    weight = layer.weight
    opt = wb.optim.SGD(layer.parameters(), lr=0.1)
    layer(wb.ones(3, 5)).sum().backward()
    opt.step()
    assert layer.weight is weight and weight.shape == (2, 5) and layer.in_features == 5


# -------------------------------------------------------- save and load
def test_state_dict_saved_and_loaded():
    model = wb.nn.Sequential(wb.nn.Linear(3, 2), wb.nn.ReLU())
    buffer = io.BytesIO()
    wb.save(model.state_dict(), buffer)
    buffer.seek(0)
    restored = wb.nn.Sequential(wb.nn.Linear(3, 2), wb.nn.ReLU())
    restored.load_state_dict(wb.load(buffer))
    assert wb.equal(restored[0].weight, model[0].weight)


def test_a_weights_only_load_refuses_other_objects():
    buffer = io.BytesIO()
    wb.save({"w": wb.ones(2), "f": print}, buffer)
    with pytest.raises(Exception, match=r"weights_only=True\) refuses to build builtins.print"):
        wb.load(io.BytesIO(buffer.getvalue()))
    assert wb.load(io.BytesIO(buffer.getvalue()), weights_only=False)["f"] is print


# ------------------------------------------------------------ the rest
def test_process_switches_are_accepted():
    fn = lambda x: x * 2  # noqa: E731
    x = wb.tensor([1.0, 2.0])
    assert wb.compile(fn)(x).tolist() == wb.compile()(fn)(x).tolist() == [2.0, 4.0]
    assert wb.compile(fn, disable=True) is fn  # torch.compile's disable=: the model as it is
    wb.use_deterministic_algorithms(True)
    assert wb.are_deterministic_algorithms_enabled() and wb.get_num_threads() >= 1
    wb.backends.cudnn.deterministic = True


def test_set_printoptions_changes_the_printed_digits():
    try:
        wb.set_printoptions(precision=2)
        assert repr(wb.tensor([1.23456])) == "tensor([1.23])"
    finally:
        wb.set_printoptions(profile="default")
    assert repr(wb.tensor([1.23456])) == "tensor([1.2346])"


def test_finfo_and_iinfo():
    assert wb.finfo(wb.float32).eps == torch.finfo(torch.float32).eps
    assert wb.finfo().tiny == torch.finfo().tiny
    assert wb.iinfo(wb.int64).max == torch.iinfo(torch.int64).max


def test_an_integer_tensor_indexes_a_python_list_as_in_pytorch():
    classes = ["plane", "car", "bird"]
    assert classes[wb.tensor(2)] == classes[torch.tensor(2)] == "bird"
    assert list(range(wb.tensor(3))) == [0, 1, 2]
    for lib in (wb, torch):
        with pytest.raises(TypeError, match="only integer tensors of a single element"):
            classes[lib.tensor(1.0)]


def test_cumsum_takes_numpy_axis_too():
    ours, theirs = both(lambda m: m.tensor(DATA))
    equal_values(ours.cumsum(axis=0), theirs.cumsum(axis=0))
    equal_values(ours.cumprod(axis=1), theirs.cumprod(axis=1))
    with pytest.raises(TypeError, match="dim"):
        ours.cumsum()


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.ones(3, 4),
        lambda m: m.ones(3, 4).T,
        lambda m: m.ones(3, 4).T.contiguous(),
        lambda m: m.ones(3, 4)[:, 1:],
        lambda m: m.ones(3, 4)[1:],
        lambda m: m.ones(2, 3, 4).permute(0, 2, 1),
    ],
)
def test_is_contiguous_as_pytorch(make):
    ours, theirs = both(make)
    assert ours.is_contiguous() == theirs.is_contiguous()
