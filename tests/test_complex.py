"""Complex autodiff as PyTorch defines it: z.grad = ∂L/∂x + i·∂L/∂y for a real loss L."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.autograd.gradcheck import GradcheckError
from workbench.ops.registry import OPS, register_gradient, register_op

Z = np.array([3 + 4j, -1 + 0.5j, 0.2 - 0.7j])


def _grad_both(fn, *arrays):
    """z.grad of Σ|fn(z)|² in workbench and in torch (a real loss of a complex output)."""
    ours = [wb.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    (fn(*ours).abs() ** 2).sum().backward()
    (fn(*theirs).abs() ** 2).sum().backward()
    return [t.grad.numpy() for t in ours], [t.grad.numpy() for t in theirs]


def test_the_issue_example():
    z = wb.tensor(np.array([3 + 4j]), requires_grad=True)
    (z * z).abs().sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [6 + 8j])


@pytest.mark.parametrize(
    "name, fn",
    [
        ("exp", lambda z: z.exp()),
        ("sin", lambda z: z.sin()),
        ("one_over_z", lambda z: 1 / z),
        ("sqrt", lambda z: z.sqrt()),
        ("matmul", lambda z: z.reshape(3, 1) @ z.reshape(1, 3)),
    ],
)
def test_holomorphic_ops_match_torch(name, fn):
    ours, theirs = _grad_both(fn, Z)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)


def test_second_order_matches_torch():
    ours_z = wb.tensor(Z, requires_grad=True)
    theirs_z = torch.tensor(Z, requires_grad=True)
    (g,) = wb.autograd.grad((ours_z.sin() * ours_z).abs().sum(), ours_z, create_graph=True)
    (h,) = torch.autograd.grad((theirs_z.sin() * theirs_z).abs().sum(), theirs_z, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), h.detach().numpy(), rtol=1e-12)
    (gg,) = wb.autograd.grad((g * g.conj()).real.sum(), ours_z)
    (hh,) = torch.autograd.grad((h * h.conj()).real.sum(), theirs_z)
    np.testing.assert_allclose(gg.numpy(), hh.numpy(), rtol=1e-10)


def test_backward_on_a_complex_scalar_raises_as_torch():
    z = wb.tensor(Z, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real scalar"):
        (z * z).sum().backward()


def test_a_real_leaf_gets_the_real_part_in_its_own_dtype():
    x = wb.tensor(np.array([1.0, 2.0, -0.5], dtype=np.float32), requires_grad=True)
    z = wb.tensor(Z, requires_grad=True)
    with warnings.catch_warnings(record=True) as record:  # numpy's ComplexWarning: none
        warnings.simplefilter("always")
        (x * z).exp().abs().sum().backward()
    assert not record, [str(w.message) for w in record]
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    tz = torch.tensor(Z, requires_grad=True)
    (tx * tz).exp().abs().sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(z.grad.numpy(), tz.grad.numpy(), rtol=1e-5)


def test_gradient_descent_on_squared_modulus_goes_downhill():
    z = wb.tensor(np.array([3 + 4j, -2 + 1j]), requires_grad=True)
    losses = []
    for _ in range(5):
        z.grad = None
        loss = (z * z.conj()).real.sum()
        loss.backward()
        losses.append(loss.item())
        with wb.no_grad():
            z -= 0.1 * z.grad
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    np.testing.assert_allclose(losses[1], losses[0] * 0.8**2)  # z.grad = 2z: z shrinks by 0.8


def test_abs_and_angle_at_zero_and_on_reals_as_torch():
    values = np.array([0j, 2 + 0j, -3 + 0j, 1 - 1j])
    for fn in (lambda z: z.abs(), lambda z: z.angle()):
        ours, theirs = (
            wb.tensor(values, requires_grad=True),
            torch.tensor(values, requires_grad=True),
        )
        fn(ours).sum().backward()
        fn(theirs).sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-15)
    x = wb.tensor(np.array([-1.0, 0.0, 2.0]), requires_grad=True)
    x.angle().sum().backward()
    np.testing.assert_allclose(x.angle().detach().numpy(), [np.pi, 0, 0])
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])


def test_real_imag_send_back_complex_gradients():
    z = wb.tensor(Z, requires_grad=True)
    (z.real * 2 + z.imag * 3).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), np.full(3, 2 + 3j))


def test_complex_from_parts_and_its_gradients():
    re = wb.tensor(np.array([1.0, 2.0]), requires_grad=True)
    im = wb.tensor(np.array([0.5, -1.0]), requires_grad=True)
    z = wb.complex(re, im)
    assert z.dtype == wb.complex128
    (z * z).abs().sum().backward()  # |z|²: gradient 2 re, 2 im
    np.testing.assert_allclose(re.grad.numpy(), [2.0, 4.0])
    np.testing.assert_allclose(im.grad.numpy(), [1.0, -2.0])
    single = wb.complex(re.detach().to(wb.float32), im.detach().to(wb.float32))
    assert single.dtype == wb.complex64


def test_conj_of_a_real_tensor_is_the_tensor_and_records_nothing():
    x = wb.tensor(np.array([1.0, 2.0]), requires_grad=True)
    assert x.conj() is x
    assert wb.real(x) is x


def test_complex64_results_stay_complex64():
    z = wb.tensor(Z.astype(np.complex64), requires_grad=True)
    (z.exp() * z).abs().sum().backward()
    assert z.grad.dtype == wb.complex64


# ----------------------------------------------------------------- gradcheck
@pytest.fixture
def broken_exp():
    """exp with the real rule ȳ · y: wrong for complex z, where it must be ȳ · conj(y).

    Registered only while a test runs: no sample covers it, the registry must not see it."""
    op = register_op("exp_without_conj", saves=("out",))(np.exp)

    @register_gradient("exp_without_conj")
    def exp_without_conj_grad(orig, grad):
        """Forward: y = exp(x)
        Backward: x̄ = ȳ · y"""
        return [grad * orig.out]

    yield lambda z: wb.record.dispatch.apply_op(op, (z,))
    del OPS["exp_without_conj"]


def test_gradcheck_catches_a_missing_conj_and_names_the_elements(broken_exp):
    z = wb.tensor(Z, requires_grad=True)
    with pytest.raises(GradcheckError) as caught:
        wb.autograd.gradcheck(broken_exp, (z,))
    message = str(caught.value)
    assert message.startswith("While considering the imaginary part of complex outputs only")
    assert "(0, 0), (1, 1), (2, 2)" in message
    assert not wb.autograd.gradcheck(broken_exp, (z,), raise_exception=False)
    assert wb.autograd.gradcheck(lambda z: z.exp(), (z,))


def test_gradcheck_checks_complex_inputs_with_real_outputs():
    z = wb.tensor(Z, requires_grad=True)
    assert wb.autograd.gradcheck(lambda z: z.abs(), (z,))

    class RealPartOnly(wb.autograd.Function):
        """|z| with a gradient that misses the i·∂/∂y part."""

        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z.abs()

        @staticmethod
        def backward(ctx, grad):
            (z,) = ctx.saved_tensors
            return (grad * z.real / z.abs()).to(z.dtype)

    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to"):
        wb.autograd.gradcheck(RealPartOnly.apply, (z,))


def test_gradgradcheck_with_complex_inputs(broken_exp):
    z = wb.tensor(Z, requires_grad=True)
    assert wb.autograd.gradgradcheck(lambda z: z.sin() * z.exp(), (z,))
    assert not wb.autograd.gradgradcheck(broken_exp, (z,), raise_exception=False)


def test_complex128_gradcheck_does_not_warn():
    z = wb.tensor(Z, requires_grad=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        wb.autograd.gradcheck(lambda z: z * z, (z,))
    assert not record, [str(w.message) for w in record]


# ------------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    "name, fn",
    [
        ("relu", wb.relu),
        ("floor", wb.floor),
        ("ceil", wb.ceil),
        ("round", wb.round),
        ("trunc", wb.trunc),
        ("sign", wb.sign),
        ("erf", wb.erf),
        ("clamp", lambda z: wb.clamp(z, min=0)),
        ("maximum", lambda z: wb.maximum(z, z)),
        ("minimum", lambda z: wb.minimum(z, z)),
        ("amax", wb.amax),
        ("max", wb.max),
        ("min", wb.min),
        ("lt", lambda z: z < z),
        ("ge", lambda z: z >= 1.0),
        ("gelu", wb.gelu),
    ],
)
def test_ops_without_an_order_refuse_complex_as_torch(name, fn):
    with pytest.raises(NotImplementedError, match=f"{name} is not supported.*complex128"):
        fn(wb.tensor(Z))


def test_requires_grad_on_an_integer_tensor_stays_refused():
    with pytest.raises(RuntimeError, match="floating point and complex dtype"):
        wb.tensor(np.array([1, 2]), requires_grad=True)


# ------------------------------------------------ refusals checked against torch
_F = wb.nn.functional
_TF = torch.nn.functional
_ZS = np.array([[0.5 + 1j, -1 - 0.5j, 2j], [1 + 0j, 0.3 - 0.2j, -0.7 + 0.1j]])


def _z(framework, requires_grad=False):
    if framework is torch:
        return torch.tensor(_ZS, requires_grad=requires_grad)
    return wb.tensor(_ZS, requires_grad=requires_grad)


# name → fn(framework module, functional module, complex tensor)
REFUSED = {
    "argmax": lambda m, F, z: m.argmax(z),
    "argmin": lambda m, F, z: m.argmin(z, 1),
    "softmax": lambda m, F, z: F.softmax(z, 1),
    "log_softmax": lambda m, F, z: F.log_softmax(z, 1),
    "cross_entropy": lambda m, F, z: F.cross_entropy(z, m.tensor([0, 2])),
    "nll_loss": lambda m, F, z: F.nll_loss(z, m.tensor([0, 2])),
    "mse_loss": lambda m, F, z: F.mse_loss(z, z),
    "binary_cross_entropy": lambda m, F, z: F.binary_cross_entropy(z, z),
    "binary_cross_entropy_with_logits": lambda m, F, z: F.binary_cross_entropy_with_logits(z, z),
    "layer_norm": lambda m, F, z: F.layer_norm(z, (3,)),
    "dropout": lambda m, F, z: F.dropout(z, 0.5),
    "elu": lambda m, F, z: F.elu(z),
    "leaky_relu": lambda m, F, z: F.leaky_relu(z),
    "softplus": lambda m, F, z: F.softplus(z),
    "max_pool2d": lambda m, F, z: F.max_pool2d(z.reshape(1, 1, 2, 3), 1),
    "avg_pool2d": lambda m, F, z: F.avg_pool2d(z.reshape(1, 1, 2, 3), 1),
    "clamp": lambda m, F, z: m.clamp(z, 0, 1),
    "amax": lambda m, F, z: m.amax(z),
    "relu": lambda m, F, z: F.relu(z),
    "sign": lambda m, F, z: m.sign(z),
    "embedding": lambda m, F, z: F.embedding(m.tensor([1, 0]), z),
    "silu": lambda m, F, z: F.silu(z),  # computed, but not differentiated
}


@pytest.mark.parametrize("name", REFUSED)
def test_refused_for_complex_as_torch(name):
    """PyTorch 2.13 refuses each of these for complex inputs; so do we, with an error of
    the same type (NotImplementedError for most, RuntimeError for argmax/argmin/embedding)
    that names the op and the dtype."""
    fn = REFUSED[name]
    with pytest.raises(RuntimeError) as theirs:
        fn(torch, _TF, _z(torch, requires_grad=True))
    with pytest.raises(RuntimeError) as ours:
        fn(wb, _F, _z(wb, requires_grad=True))
    assert type(ours.value) is type(theirs.value) or (
        isinstance(ours.value, type(theirs.value)) and type(theirs.value) is RuntimeError
    ), (type(ours.value), type(theirs.value))
    assert name in str(ours.value) and "complex128" in str(ours.value), str(ours.value)


MATRIX_PRODUCTS = {
    "matmul": lambda m, F, a, b: a @ b,
    "mm": lambda m, F, a, b: m.mm(b, a),
    "dot": lambda m, F, a, b: m.dot(a[0], b[0]),
    "linear": lambda m, F, a, b: F.linear(a, b),
    "conv2d": lambda m, F, a, b: F.conv2d(a.reshape(1, 1, 3, 3), b.reshape(1, 1, 3, 3)),
}


@pytest.mark.parametrize("name", MATRIX_PRODUCTS)
def test_mixed_real_complex_matrix_products_are_refused_as_torch(name):
    fn = MATRIX_PRODUCTS[name]
    real = np.arange(9.0).reshape(3, 3)
    with pytest.raises(RuntimeError):
        fn(torch, _TF, torch.tensor(real), torch.tensor(real + 1j))
    with pytest.raises(RuntimeError, match="(float64 and complex128|complex128 and float64)") as e:
        fn(wb, _F, wb.tensor(real), wb.tensor(real + 1j))
    assert str(e.value).startswith(name)
    both = fn(wb, _F, wb.tensor(real + 0j), wb.tensor(real + 1j))  # one dtype: fine
    assert both.dtype == wb.complex128


def test_sgn_and_its_gradient_as_torch():
    values = np.array([3 + 4j, 0j, -2 + 0j, 1e-3 - 1j])
    weights = np.array([1 + 2j, 0.5 - 1j, 1 + 0j, 2j])
    ours, theirs = wb.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    np.testing.assert_allclose(wb.sgn(ours).detach().numpy(), torch.sgn(theirs).detach().numpy())
    (wb.sgn(ours) * wb.tensor(weights)).real.sum().backward()
    (torch.sgn(theirs) * torch.tensor(weights)).real.sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-15)
    assert ours.grad[1].item() == 0  # 0 at z = 0, as PyTorch
    x = wb.tensor([-2.0, 0.0, 3.0])
    np.testing.assert_array_equal(x.sgn().numpy(), [-1.0, 0.0, 1.0])  # sign on reals


def test_complex_to_real_cast_warns_as_torch_and_sends_back_the_real_part():
    z = wb.tensor(_ZS, requires_grad=True)
    with pytest.warns(UserWarning, match="Casting complex values to real discards the imaginary"):
        x = z.to(wb.float64)
    np.testing.assert_array_equal(x.detach().numpy(), _ZS.real)
    (x * 2).sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), np.full(_ZS.shape, 2 + 0j))


def test_l1_loss_of_complex_numbers_as_torch():
    """PyTorch takes |z − t| of complex numbers, and its gradient through sgn."""
    target = np.array([[1 + 0j, 0j, 1j], [0.5j, 2 + 0j, -1 + 1j]])
    ours, theirs = _z(wb, True), _z(torch, True)
    loss = _F.l1_loss(ours, wb.tensor(target))
    their_loss = _TF.l1_loss(theirs, torch.tensor(target))
    loss.backward()
    their_loss.backward()
    assert loss.dtype == wb.float64
    np.testing.assert_allclose(loss.item(), their_loss.item())
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-15)


PYTHON_COMPLEX = {
    "tensor": lambda m: m.tensor([1j, 2]),
    "as_tensor": lambda m: m.as_tensor(1 + 2j),
    "full": lambda m: m.full((2,), 1j),
    "linspace": lambda m: m.linspace(0, 1j, 3),
    "add": lambda m: m.ones(2) + 1j,
}


@pytest.mark.parametrize("default", ["float32", "float64"])
@pytest.mark.parametrize("name", PYTHON_COMPLEX)
def test_a_python_complex_takes_the_default_floats_complex_as_torch(name, default):
    """PyTorch's dtype for a Python complex follows the default float: complex64 by
    float32, complex128 by float64 (the factories once made complex128 always)."""
    made = {}
    for m in (wb, torch):
        before = m.get_default_dtype()
        m.set_default_dtype(getattr(m, default))
        try:
            made[m] = str(PYTHON_COMPLEX[name](m).dtype).removeprefix("torch.")
        finally:
            m.set_default_dtype(before)
    assert made[wb] == made[torch]
