"""``wb.func`` against ``torch.func`` in the same process, and vmap against a loop.

The reverse-mode transforms (grad, grad_and_value, vjp, jacrev) run on the same
functions as torch.func's, with the same errors for bad use; vmap runs every registry
sample on a batch and must give what a Python loop over the examples gives, or refuse
with an error that names one of the sample's ops; and every registry op has a
batching rule or a refusal.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf

import workbench as wb
import workbench.nn.functional as F
from tests.fake_gpu import pretend_gpu  # noqa: F401  (a fixture)
from tests.samples import all_samples
from workbench.func import grad, grad_and_value, jacrev, vjp, vmap
from workbench.func.batching import REFUSED, RULES
from workbench.ops.registry import OPS

RNG = np.random.default_rng(25)


def pair(*shape):
    """The same random float64 array as a workbench tensor and a torch tensor."""
    array = RNG.standard_normal(shape)
    return wb.tensor(array), torch.tensor(array)


def same(ours, theirs, atol=1e-10):
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same(a, b, atol)
        return
    assert isinstance(ours, wb.Tensor)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), atol=atol, rtol=1e-7)


def mlp_loss(lib):
    """The same two-layer MLP's cross-entropy in either library (``lib`` is wb or torch)."""
    functional = F if lib is wb else torch.nn.functional

    def loss(w1, b1, w2, x, y):
        hidden = functional.linear(x, w1, b1).tanh()
        return functional.cross_entropy(hidden @ w2.T, y)

    return loss


SCALAR_FUNCTIONS = {
    "elementwise": lambda lib: lambda x: (x.sin() * x.exp()).sum(),
    "reductions": lambda lib: lambda x: x.amax(-1).sum() + x.logsumexp(0).mean() + x.var(),
    "matmul": lambda lib: lambda x: (x @ x.T).tanh().sum(),
    "softmax": lambda lib: lambda x: (x.softmax(-1) * x).sum(),
}


# ---------------------------------------------------------------- grad and friends
@pytest.mark.parametrize("name", SCALAR_FUNCTIONS)
def test_grad_and_grad_of_grad_match_torch(name):
    x, tx = pair(3, 4)
    ours, theirs = SCALAR_FUNCTIONS[name](wb), SCALAR_FUNCTIONS[name](torch)
    same(grad(ours)(x), tf.grad(theirs)(tx))
    # grad of grad: the gradient of ⟨∇f, 1⟩
    same(
        grad(lambda x: grad(ours)(x).sum())(x),
        tf.grad(lambda x: tf.grad(theirs)(x).sum())(tx),
        atol=1e-8,
    )
    # jacrev of grad is the Hessian
    same(jacrev(grad(ours))(x), tf.hessian(theirs)(tx), atol=1e-8)


def test_mlp_loss_gradients_with_tuples_and_argnums():
    ours, theirs = mlp_loss(wb), mlp_loss(torch)
    w1, tw1 = pair(5, 3)
    b1, tb1 = pair(5)
    w2, tw2 = pair(4, 5)
    x, tx = pair(6, 3)
    y = RNG.integers(0, 4, size=6)
    args = (w1, b1, w2, x, wb.tensor(y))
    targs = (tw1, tb1, tw2, tx, torch.tensor(y))
    same(grad(ours, argnums=(0, 1, 2))(*args), tf.grad(theirs, argnums=(0, 1, 2))(*targs))
    same(grad(ours, argnums=-2)(*args), tf.grad(theirs, argnums=-2)(*targs))
    (g, value) = grad_and_value(ours, argnums=2)(*args)
    (tg, tvalue) = tf.grad_and_value(theirs, argnums=2)(*targs)
    same([g, value], [tg, tvalue])
    assert not g.requires_grad and not value.requires_grad  # the outermost transform detaches


def test_a_tuple_argument_gets_a_tuple_of_gradients():
    (a, ta), (b, tb) = pair(3), pair(3)
    ours = grad(lambda pair: (pair[0] * pair[1].exp()).sum())((a, b))
    theirs = tf.grad(lambda pair: (pair[0] * pair[1].exp()).sum())((ta, tb))
    assert isinstance(ours, tuple)
    same(ours, theirs)


def test_has_aux_and_unused_inputs():
    x, tx = pair(4)
    ours = grad(lambda x, y: ((x * x).sum(), {"x": x.sum()}), has_aux=True)
    theirs = tf.grad(lambda x, y: ((x * x).sum(), {"x": x.sum()}), has_aux=True)
    (g, aux), (tg, taux) = ours(x, x), theirs(tx, tx)
    same([g, aux["x"]], [tg, taux["x"]])
    # an argument the output does not reach: zeros, as torch.func gives
    same(grad(lambda x, y: (y * 2).sum())(x, x), tf.grad(lambda x, y: (y * 2).sum())(tx, tx))
    value, aux = grad_and_value(lambda x: (x.sum(), 3), has_aux=True)(x)[1]
    assert aux == 3


def test_vjp_matches_torch():
    (x, tx), (v, tv) = pair(3, 4), pair(4, 4)
    ours, vjp_fn = vjp(lambda x: (x.T @ x).sigmoid(), x)
    theirs, tvjp_fn = tf.vjp(lambda x: (x.T @ x).sigmoid(), tx)
    same(ours, theirs)
    same(vjp_fn(v), tvjp_fn(tv))
    same(vjp_fn(v), tvjp_fn(tv))  # a vjp_fn can be called again
    # two primals, a tuple output, aux
    (y, ty) = pair(4)
    two = lambda a, b: (((a * b).sum(0), a - b), b.mean())  # noqa: E731
    out, fn, aux = vjp(two, x, y, has_aux=True)
    tout, tfn, taux = tf.vjp(two, tx, ty, has_aux=True)
    same([*out, aux], [*tout, taux])
    same(fn((wb.ones(4), wb.ones(3, 4))), tfn((torch.ones(4), torch.ones(3, 4))))
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\]"):
        vjp_fn(wb.ones(2))


def test_jacrev_matches_torch_with_argnums():
    (x, tx), (w, tw) = pair(3), pair(4, 3)
    ours = jacrev(lambda x, w: (w @ x).tanh(), argnums=(0, 1))(x, w)
    theirs = tf.jacrev(lambda x, w: (w @ x).tanh(), argnums=(0, 1))(tx, tw)
    same(ours, theirs)
    same(jacrev(lambda x: x.cumsum(0) * x)(x), tf.jacrev(lambda x: x.cumsum(0) * x)(tx))


BAD_USES = [
    (lambda f: f(lambda x: x * 2), "Expected f(*args) to return a scalar Tensor"),
    (lambda f: f(lambda x: 3.0), "Expected f(*args) to return a Tensor"),
    (lambda f: f(lambda x: x.sum(), argnums=1), "Got argnum=1, but only 1 positional inputs"),
    (lambda f: f(lambda x: x.sum(), argnums=-2), "Got argnum=-2, but only 1 positional inputs"),
    (lambda f: f(lambda x: x.sum(), argnums=(0, 0)), "argnums elements must be unique"),
    (lambda f: f(lambda x: x.sum(), argnums=1.5), "argnums must be int or Tuple"),
    (lambda f: f(lambda x: x.sum(), argnums=()), "argnums must be non-empty"),
    (lambda f: f(lambda x: x.sum(), has_aux=True), "should be a tuple: (output, aux)"),
]


@pytest.mark.parametrize("use, message", BAD_USES)
def test_bad_use_raises_as_torch_does(use, message):
    x, tx = pair(3)
    with pytest.raises(RuntimeError, match=_literal(message)):
        use(tf.grad)(tx)
    with pytest.raises(RuntimeError, match=_literal(message)):
        use(grad)(x)


def test_bad_arguments_raise_as_torch_does():
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor"):
        tf.grad(lambda x: x)(3.0)
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor"):
        grad(lambda x: x)(3.0)
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        tf.grad(lambda x: x.sum())(torch.arange(3))
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        grad(lambda x: x.sum())(wb.arange(3))
    with pytest.raises(RuntimeError, match="Got argnum=2"):
        jacrev(lambda x: x, argnums=2)(wb.ones(2))


def _literal(text: str) -> str:
    import re

    return re.escape(text)


# ---------------------------------------------------------------- vmap
def test_every_registry_op_has_a_batching_rule_or_a_refusal():
    import workbench.nn  # noqa: F401  (registers the losses' ops)

    missing = [name for name in OPS if name not in RULES and name not in REFUSED]
    assert not missing, f"ops with neither a batching rule nor a refusal: {missing}"
    assert not set(RULES) & set(REFUSED)


def _batch_of(array: np.ndarray, rng) -> np.ndarray:
    """Three examples around ``array``: itself, a nudged copy, and a scaled one (integer
    arrays, indices, are repeated: their range is the sample's business). Both copies shrink
    each value a little towards 0, so they stay in the op's domain ([0, 1] for
    binary_cross_entropy's target, positive for log's input)."""
    if array.dtype.kind not in "fc":
        return np.stack([array, array, array])
    nudged = array * rng.uniform(0.95, 1.0, array.shape)
    return np.stack([array, nudged, array * 0.9])


# Random ops: vmap's default randomness="error" refuses them (PyTorch's message names no
# op); their rules are checked against torch.func's "same" and "different" modes in
# tests/test_func_compose.py.
RANDOM_OPS = {"dropout"}


def _vmap_against_loop(sample, batched_inputs: list) -> bool:
    """True when vmap gave the loop's answer; False when it refused an op of the sample
    (the message must name one); anything else fails."""
    rng = np.random.default_rng(0)
    arrays = sample.arrays()
    batches = [
        _batch_of(a, rng) if i in batched_inputs and isinstance(a, np.ndarray) else None
        for i, a in enumerate(arrays)
    ]
    if all(b is None for b in batches):
        return False
    args = [_tensor(a) if b is None else wb.tensor(b) for a, b in zip(arrays, batches)]
    dims = tuple(None if b is None else 0 for b in batches)
    try:
        out = vmap(sample.fn, in_dims=dims)(*args)
    except RuntimeError as err:
        message = str(err)
        assert message.startswith("vmap:"), message
        if set(sample.ops) & RANDOM_OPS:
            assert "randomness error mode" in message, message
            return False
        assert any(name in message for name in sample.ops), (sample.ops, message)
        return False
    for i in range(3):
        example = [_tensor(a) if b is None else wb.tensor(b[i]) for a, b in zip(arrays, batches)]
        expected = sample.fn(*example)
        for got, want in zip(_flat(out), _flat(expected)):
            assert got.shape[1:] == want.shape and got.dtype == want.dtype, sample.name
            np.testing.assert_allclose(got.numpy()[i], want.numpy(), rtol=1e-10, atol=1e-12)
    return True


def _tensor(value):
    return wb.tensor(value) if isinstance(value, np.ndarray) else value


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def test_vmap_of_every_registry_sample_matches_a_loop():
    """Each sample twice: every array input batched, then only the first. Each rule
    must match the loop on at least one sample that uses its op."""
    import workbench.nn  # noqa: F401

    checked = set()
    for sample in all_samples():
        count = len(sample.inputs)
        for batched_inputs in (range(count), [0]):
            if _vmap_against_loop(sample, list(batched_inputs)):
                checked.update(sample.ops)
    unchecked = sorted(set(RULES) - checked - RANDOM_OPS)
    assert not unchecked, f"batching rules no sample checked against a loop: {unchecked}"


def test_in_dims_out_dims_and_negative_dims():
    x, tx = pair(3, 4)
    w, tw = pair(5, 3)
    ours = vmap(lambda x, w: w @ x, in_dims=(1, None), out_dims=1)(x, w)
    theirs = tf.vmap(lambda x, w: w @ x, in_dims=(1, None), out_dims=1)(tx, tw)
    same(ours, theirs)
    same(vmap(lambda x: x.softmax(0), in_dims=-1)(x), tf.vmap(lambda x: x.softmax(0), -1)(tx))
    # nested in_dims for a tuple argument, and an output that ignores the batch
    f = lambda pair, c: (pair[0] * pair[1] + c, c * 2)  # noqa: E731
    (y, ty), (c, tc) = pair(4, 3), pair(3)
    same(
        vmap(f, in_dims=((1, 0), None))((x, y), c),
        tf.vmap(f, in_dims=((1, 0), None))((tx, ty), tc),
    )


def test_nested_vmap_matches_torch():
    x, tx = pair(2, 3, 4)
    w, tw = pair(4, 5)
    f = lambda row, w: (row @ w).relu().sum()  # noqa: E731
    same(
        vmap(vmap(f, in_dims=(0, None)), in_dims=(0, None))(x, w),
        tf.vmap(tf.vmap(f, in_dims=(0, None)), in_dims=(0, None))(tx, tw),
    )
    # the inner vmap over the other dim
    same(
        vmap(vmap(lambda v: v.cumsum(0), in_dims=1, out_dims=1))(x),
        tf.vmap(tf.vmap(lambda v: v.cumsum(0), in_dims=1, out_dims=1))(tx),
    )


def test_per_example_hessians_vmap_of_jacrev_of_grad():
    x, tx = pair(3, 4)
    f = lambda v: (v.sin() * v).sum() + (v @ v) ** 2  # noqa: E731
    same(vmap(jacrev(grad(f)))(x), tf.vmap(tf.hessian(f))(tx), atol=1e-8)


def test_per_sample_gradients_of_an_mlp_match_torch_func():
    ours, theirs = mlp_loss(wb), mlp_loss(torch)
    w1, tw1 = pair(8, 6)
    b1, tb1 = pair(8)
    w2, tw2 = pair(3, 8)
    x, tx = pair(16, 6)
    y = RNG.integers(0, 3, size=16)

    def per_example(loss, lib):
        def one(w1, b1, w2, x, y):  # one example as a batch of one, as torch's tutorial does
            return loss(w1, b1, w2, x.unsqueeze(0), y.unsqueeze(0))

        transforms = wb.func if lib is wb else tf
        return transforms.vmap(
            transforms.grad(one, argnums=(0, 1, 2)), in_dims=(None, None, None, 0, 0)
        )

    got = per_example(ours, wb)(w1, b1, w2, x, wb.tensor(y))
    want = per_example(theirs, torch)(tw1, tb1, tw2, tx, torch.tensor(y))
    same(got, want)
    # and each is the gradient of that example's loss alone
    for i in (0, 7):
        alone = grad(ours, argnums=(0, 1, 2))(w1, b1, w2, x[i : i + 1], wb.tensor(y[i : i + 1]))
        same([g[i] for g in got], [torch.tensor(a.numpy()) for a in alone])


VMAP_ERRORS = [
    (lambda v: v(lambda x: x * 2, in_dims="a"), ValueError, "expected `in_dims` to be int"),
    (lambda v: v(lambda x: x * 2, in_dims=(0, 0)), ValueError, "in_dims is not compatible"),
    (lambda v: v(lambda x: x * 2, in_dims=1), ValueError, "Got in_dim=1 for some input"),
    (lambda v: v(lambda x: x * 2, in_dims=None), ValueError, "expected `in_dims` to be int"),
    (lambda v: v(lambda x: 3.0), ValueError, "must only return Tensors"),
    (lambda v: v(lambda x: x.item()), RuntimeError, "calling .item() on a Tensor"),
    (lambda v: v(lambda x: x, out_dims=1), IndexError, "Dimension out of range"),
    (lambda v: v(lambda x: x, out_dims=None), ValueError, "can not return a BatchedTensor"),
]


@pytest.mark.parametrize("use, kind, message", VMAP_ERRORS)
def test_vmap_bad_use_raises_as_torch_does(use, kind, message):
    x, tx = pair(3)
    with pytest.raises(kind, match=_literal(message)):
        use(tf.vmap)(tx)
    with pytest.raises(kind, match=_literal(message)):
        use(vmap)(x)


def test_vmap_refuses_what_it_cannot_batch_and_never_reads_placeholders():
    x, tx = pair(3, 4)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        vmap(lambda a, b: a * b)(x, wb.ones(4))
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        tf.vmap(lambda a, b: a * b)(tx, torch.ones(4))
    # a mask that differs per example: torch refuses it too (data-dependent shape)
    with pytest.raises(RuntimeError, match="vmap: .*not supported for index"):
        vmap(lambda r: r[r > 0])(x)
    with pytest.raises(RuntimeError, match="random operation"):
        vmap(lambda r: F.dropout(r, 0.5))(x)
    with pytest.raises(RuntimeError, match="vmap: .*batch_norm"):
        vmap(lambda r: F.batch_norm(r.reshape(2, 2), None, None, training=True))(x)
    # in place: the write goes into every example (of the input itself, as PyTorch's)
    same(vmap(lambda r: r.add_(1))(x), tf.vmap(lambda r: r.add_(1))(tx))
    same(x, tx)
    # a raw numpy call on a batched tensor's data fails instead of reading placeholders
    with pytest.raises(RuntimeError, match="vmap: numpy's"):
        vmap(lambda r: wb.tensor(np.exp(r._data)))(x)


def test_an_output_that_does_not_depend_on_the_batch_keeps_its_history():
    w = wb.randn(4, requires_grad=True)
    out = vmap(lambda r: w * 2)(wb.randn(3, 4))
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full(4, 6.0))


@pytest.mark.usefixtures("pretend_gpu")
def test_on_a_gpu_the_reverse_transforms_work_and_vmap_refuses():
    x = wb.randn(4, 3, device="cuda")
    g = grad(lambda r: (r.tanh() * r).sum())(x)
    assert g.device.type == "cuda"
    expected = grad(lambda r: (r.tanh() * r).sum())(x.cpu())
    np.testing.assert_allclose(g.cpu().numpy(), expected.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="vmap runs on the CPU only"):
        vmap(lambda r: r.sum())(x)
