"""workbench.func.forward against torch.func: jvp, jacfwd, hessian, linearize."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")
tf = torch.func

RNG = np.random.default_rng(2)
A, B = RNG.uniform(-1, 1, (3,)), RNG.uniform(-1, 1, (2, 3))
U, V = RNG.standard_normal((3,)), RNG.standard_normal((2, 3))


@pytest.fixture(scope="module")
def fwd():
    """``wb.func``, where the forward-mode transforms sit beside the reverse-mode ones."""
    return wb.func


def _both(values):
    return wb.tensor(values), torch.tensor(values)


def _close(ours, theirs):
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _close(a, b)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12
    )


# f(wb or torch module-like namespace, a, b): the same program written once
FUNCTIONS = {
    "sigmoid_of_matmul": lambda a, b: (b @ a).sigmoid(),
    "softmax_times": lambda a, b: (b * a).softmax(-1) * a,
    "two_outputs": lambda a, b: ((a.tanh() * b).sum(0), (a * a).logsumexp(0)),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jvp_matches_torch_func(fwd, name):
    f = FUNCTIONS[name]
    (a, ta), (b, tb), (u, tu), (v, tv) = _both(A), _both(B), _both(U), _both(V)
    ours = fwd.jvp(f, (a, b), (u, v))
    theirs = tf.jvp(f, (ta, tb), (tu, tv))
    _close(ours[0], theirs[0])
    _close(ours[1], theirs[1])


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,)])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jacfwd_matches_torch_func(fwd, name, argnums):
    f = FUNCTIONS[name]
    (a, ta), (b, tb) = _both(A), _both(B)
    _close(fwd.jacfwd(f, argnums)(a, b), tf.jacfwd(f, argnums)(ta, tb))


def test_jacfwd_with_aux_and_a_non_float_argument(fwd):
    def f(x, index):
        return (x[index] * x.exp()).sum(), x.sum()

    (x, tx) = _both(A)
    ours, ours_aux = fwd.jacfwd(lambda x: f(x, 1), has_aux=True)(x)
    theirs, theirs_aux = tf.jacfwd(lambda x: f(x, 1), has_aux=True)(tx)
    _close(ours, theirs)
    _close(ours_aux, theirs_aux)


HESSIAN_FUNCTIONS = {
    "entropy": lambda a: -(a.softmax(0) * a.log_softmax(0)).sum(),
    "product": lambda a: (a.sigmoid() * a.cos()).prod(),
    "two_arguments": lambda a, b: ((b @ a).tanh() * (b * b).sum(1)).sum(),
}


@pytest.mark.parametrize("name", sorted(HESSIAN_FUNCTIONS))
def test_hessian_is_forward_over_reverse_as_torch_func(fwd, name):
    f = HESSIAN_FUNCTIONS[name]
    args = [_both(A)] if name != "two_arguments" else [_both(A), _both(B)]
    ours_args, theirs_args = [o for o, _ in args], [t for _, t in args]
    _close(fwd.hessian(f)(*ours_args), tf.hessian(f)(*theirs_args))
    if name == "two_arguments":
        _close(fwd.hessian(f, (0, 1))(*ours_args), tf.hessian(f, (0, 1))(*theirs_args))


@pytest.mark.parametrize("name", ["entropy", "product"])
def test_jvp_of_grad_is_a_hessian_vector_product_as_torch_func(fwd, name):
    """Forward over reverse, as torch.func composes it: grad's fresh leaf keeps the tangent
    jvp gave its argument, and so does the gradient it hands back (it gave zeros once)."""
    f = HESSIAN_FUNCTIONS[name]
    (a, ta), (u, tu) = _both(A), _both(U)
    ours = fwd.jvp(fwd.grad(f), (a,), (u,))
    theirs = tf.jvp(tf.grad(f), (ta,), (tu,))
    _close(ours, theirs)
    assert not ours[1].requires_grad  # as torch.func's: no history on what it hands back
    _close(ours[1], fwd.hessian(f)(a) @ wb.tensor(U))


def test_linearize_matches_torch_func(fwd):
    f = FUNCTIONS["sigmoid_of_matmul"]
    (a, ta), (u, tu) = _both(A), _both(U)
    b, tb = _both(B)
    ours_out, ours_fn = fwd.linearize(lambda x: f(x, b), a)
    theirs_out, theirs_fn = tf.linearize(lambda x: f(x, tb), ta)
    _close(ours_out, theirs_out)
    _close(ours_fn(u), theirs_fn(tu))
    _close(ours_fn(u * 2), theirs_fn(tu * 2))


@pytest.mark.parametrize("weight_first", [True, False])
def test_a_constant_matmul_operand_moves_by_a_zero_that_meets_an_inf_as_torch(fwd, weight_first):
    """PyTorch's matmul JVP keeps the term of an operand without a tangent (0 @ x): where
    x holds an inf, the tangent is NaN there, not W @ ẋ alone. Leaving the term out would
    be faster and differ from PyTorch (pinned: a speed change once tried it)."""
    w, x, t = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([np.inf, 1.0]), np.array([0.0, 1.0])

    def f(v, m):
        return m @ v if weight_first else v @ m

    ours = fwd.jvp(lambda v: f(v, wb.tensor(w)), (wb.tensor(x),), (wb.tensor(t),))
    theirs = tf.jvp(lambda v: f(v, torch.tensor(w)), (torch.tensor(x),), (torch.tensor(t),))
    assert np.isnan(theirs[1].numpy()).all()
    _close(ours, theirs)


def _error(fn):
    try:
        fn()
    except Exception as err:  # noqa: BLE001  (compared with PyTorch's, whatever it is)
        return type(err), str(err)
    return None, None


def test_errors_as_torch_func(fwd):
    (x, tx) = _both(A)
    cases = [
        (lambda: fwd.jvp(wb.sin, x, (x,)), lambda: tf.jvp(torch.sin, tx, (tx,))),
        (lambda: fwd.jvp(wb.sin, (), ()), lambda: tf.jvp(torch.sin, (), ())),
        (lambda: fwd.jvp(wb.sin, (3.0,), (1.0,)), lambda: tf.jvp(torch.sin, (3.0,), (1.0,))),
        (lambda: fwd.jacfwd(wb.sin, argnums=2)(x), lambda: tf.jacfwd(torch.sin, argnums=2)(tx)),
        (lambda: fwd.jacfwd(wb.sin, argnums="a")(x), lambda: tf.jacfwd(torch.sin, argnums="a")(tx)),
        (lambda: fwd.jvp(lambda x: 3.0, (x,), (x,)), lambda: tf.jvp(lambda x: 3.0, (tx,), (tx,))),
    ]
    for ours, theirs in cases:
        assert _error(ours) == _error(theirs)
    got_type, got = _error(lambda: fwd.jvp(wb.sin, (x,), (x, x)))
    want_type, want = _error(lambda: tf.jvp(torch.sin, (tx,), (tx, tx)))
    assert got_type is want_type and want.startswith(got)


def test_forward_over_forward_nests_as_torch_func(fwd):
    """Each jvp its own dual level (more in test_func_forward_nested.py)."""
    (x, tx) = _both(A)
    ours = fwd.jacfwd(fwd.jacfwd(lambda a: a.sin().sum()))(x)
    _close(ours, tf.jacfwd(tf.jacfwd(lambda a: a.sin().sum()))(tx))
