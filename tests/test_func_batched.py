"""jacrev, jacfwd and hessian push the whole basis through one batched pass (issue 40,
point 6): the passes are counted, and the batched answers equal the loop's on every
registry sample (values, dtypes, and the same errors where there is one)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf

import workbench as wb
from tests.fake_gpu import pretend_gpu  # noqa: F401  (a fixture)
from tests.samples import all_samples
from tests.samples.complex_numbers import COMPLEX_NAMES, complex_variant
from workbench.autograd import entry_points
from workbench.func import forward, hessian, jacfwd, jacrev, reverse


def _counted(monkeypatch):
    """Counts of backward passes (``entry_points.grad`` calls) and of batched passes."""
    counts = {"backward": 0, "looped rows": 0, "looped columns": 0}

    def counting(name, function):
        def counted(*args, **kwargs):
            counts[name] += 1
            return function(*args, **kwargs)

        return counted

    monkeypatch.setattr(entry_points, "grad", counting("backward", entry_points.grad))
    monkeypatch.setattr(reverse, "_looped_rows", counting("looped rows", reverse._looped_rows))
    monkeypatch.setattr(
        forward, "_looped_columns", counting("looped columns", forward._looped_columns)
    )
    return counts


def _f_counting(calls: list, w):
    def f(x):
        calls.append(1)
        return (w @ x).tanh() * x

    return f


def _w_and_x(n=6):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, n)), rng.standard_normal(n)


def test_jacrev_runs_one_forward_and_one_batched_backward(monkeypatch):
    w, x = _w_and_x()
    counts, calls = _counted(monkeypatch), []
    ours = jacrev(_f_counting(calls, wb.tensor(w)))(wb.tensor(x))
    assert (len(calls), counts["backward"], counts["looped rows"]) == (1, 1, 0)
    theirs = tf.jacrev(lambda t: (torch.from_numpy(w) @ t).tanh() * t)(torch.from_numpy(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)


def test_jacfwd_runs_one_batched_forward_per_argument(monkeypatch):
    w, x = _w_and_x()
    counts, calls = _counted(monkeypatch), []
    ours = jacfwd(_f_counting(calls, wb.tensor(w)))(wb.tensor(x))
    assert (len(calls), counts["looped columns"]) == (1, 0)
    theirs = tf.jacfwd(lambda t: (torch.from_numpy(w) @ t).tanh() * t)(torch.from_numpy(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)
    calls.clear()
    jacfwd(lambda a, b: a * b.sin(), argnums=(0, 1))(wb.tensor(x), wb.tensor(x))
    assert counts["looped columns"] == 0


def test_hessian_runs_one_forward_and_one_backward(monkeypatch):
    w, x = _w_and_x()
    counts, calls = _counted(monkeypatch), []
    f = _f_counting(calls, wb.tensor(w))
    ours = hessian(lambda v: f(v).sum())(wb.tensor(x))
    assert (len(calls), counts["backward"], counts["looped columns"]) == (1, 1, 0)
    theirs = tf.hessian(lambda t: ((torch.from_numpy(w) @ t).tanh() * t).sum())(torch.from_numpy(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)


def test_a_scalar_output_is_one_backward_pass_without_a_vmap(monkeypatch):
    """One row of the basis is one backward pass: jacrev takes it as the loop does, not
    through a vmap of one example (hessian's inner jacrev, forward over reverse)."""
    w, x = _w_and_x()
    counts, calls = _counted(monkeypatch), []
    f = _f_counting(calls, wb.tensor(w))
    vmaps = []
    monkeypatch.setattr(reverse, "through_vmap", lambda *a: vmaps.append(a))
    ours = jacrev(lambda v: f(v).sum())(wb.tensor(x))
    assert (len(calls), counts["backward"], counts["looped rows"], len(vmaps)) == (1, 1, 1, 0)
    theirs = tf.jacrev(lambda t: ((torch.from_numpy(w) @ t).tanh() * t).sum())(torch.from_numpy(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)


def test_chunk_size_splits_the_basis_as_torch_func():
    w, x = _w_and_x(7)
    f = lambda t: (wb.tensor(w) @ t).tanh() * t  # noqa: E731
    whole = jacrev(f)(wb.tensor(x)).numpy()
    for chunk_size in (1, 3, 7, 50):
        np.testing.assert_array_equal(jacrev(f, chunk_size=chunk_size)(wb.tensor(x)).numpy(), whole)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="jacrev: `chunk_size` should be greater than 0"):
            jacrev(f, chunk_size=bad)
        with pytest.raises(ValueError, match="jacrev: `chunk_size` should be greater than 0"):
            tf.jacrev(torch.sin, chunk_size=bad)


def test_what_must_keep_its_history_takes_the_loop(monkeypatch):
    """jacrev of jacrev: the inner gradients are differentiated again, so they keep their
    history (an outer level sees them), which the batched pass cannot give: the loop."""
    w, x = _w_and_x(4)
    counts = _counted(monkeypatch)
    f = lambda t: ((wb.tensor(w) @ t).tanh() * t).sum()  # noqa: E731
    ours = jacrev(jacrev(f))(wb.tensor(x))
    assert counts["looped rows"] == 1  # the inner one; the outer one batches
    theirs = tf.hessian(lambda t: ((torch.from_numpy(w) @ t).tanh() * t).sum())(torch.from_numpy(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)


def test_an_op_without_a_batching_rule_falls_back_to_the_loop(monkeypatch):
    """A refusal to batch (here: every batching rule of mul removed) sends jacrev and
    jacfwd down the loop, with the same answer; other errors are not swallowed."""
    from workbench.func import batching

    x = wb.tensor(np.arange(1.0, 4.0))
    f = lambda t: t * t.exp()  # noqa: E731
    batched = jacrev(f)(x).numpy(), jacfwd(f)(x).numpy()
    counts = _counted(monkeypatch)
    monkeypatch.delitem(batching.RULES, "mul")
    looped = jacrev(f)(x).numpy(), jacfwd(f)(x).numpy()
    assert counts["looped rows"] == counts["looped columns"] == 1
    for a, b in zip(batched, looped):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        jacfwd(lambda t: wb.nn.functional.dropout(t, 0.5))(x)


# ---------------------------------------------------------------- the registry
def _loop_only(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise RuntimeError("vmap: the loop, for comparison")

    monkeypatch.setattr(reverse, "_batched_rows", refuse)
    monkeypatch.setattr(forward, "_batched_columns", refuse)


def _outcome(transform, sample):
    """The Jacobian (as numpy arrays) of ``sample.fn`` w.r.t. its float inputs, or the
    error's type and message."""
    arrays, requires = sample.arrays(), sample.requires()
    args = [wb.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]
    argnums = tuple(i for i, r in enumerate(requires) if r)
    try:
        jac = transform(sample.fn, argnums=argnums)(*args)
    except Exception as error:  # noqa: BLE001  (compared between the two roads)
        return type(error), str(error)
    return [(j.numpy(), j.dtype) for j in jac]


def _registry_samples() -> list:
    samples = [s for s in all_samples() if any(s.requires())]
    by_name = {s.name: s for s in samples}
    return samples + [complex_variant(by_name[n]) for n in COMPLEX_NAMES if n in by_name]


@pytest.mark.parametrize("transform", [jacrev, jacfwd], ids=["jacrev", "jacfwd"])
def test_every_registry_sample_gives_the_loops_answer(transform, monkeypatch):
    import workbench.nn  # noqa: F401  (registers the losses' ops)

    samples = [s for s in _registry_samples() if "dropout" not in s.ops]
    counts = _counted(monkeypatch)
    batched = [_outcome(transform, s) for s in samples]
    fell_back = counts["looped rows"] + counts["looped columns"]
    _loop_only(monkeypatch)
    for sample, got in zip(samples, batched):
        want = _outcome(transform, sample)
        if isinstance(want, tuple):  # an error: the same one (complex refusals, ...)
            assert got == want, sample.name
            continue
        assert isinstance(got, list), (sample.name, got)
        for (a, a_dtype), (b, b_dtype) in zip(got, want):
            assert a_dtype == b_dtype and a.shape == b.shape, sample.name
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=sample.name)
    assert fell_back < len(samples) // 4, f"{fell_back} of {len(samples)} took the loop"


def test_vmap_of_linear_with_only_the_bias_batched_matches_torch():
    """(jacfwd w.r.t. a bias batches only the bias's tangent: the rule once took the
    product for batched and broadcast it wrongly against the bias.)"""
    rng = np.random.default_rng(1)
    x, w, biases = (
        rng.standard_normal((2, 3)),
        rng.standard_normal((4, 3)),
        rng.standard_normal((5, 4)),
    )
    ours = wb.func.vmap(lambda b: wb.nn.functional.linear(wb.tensor(x), wb.tensor(w), b))(
        wb.tensor(biases)
    )
    theirs = tf.vmap(
        lambda b: torch.nn.functional.linear(torch.from_numpy(x), torch.from_numpy(w), b)
    )(torch.from_numpy(biases))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.usefixtures("pretend_gpu")
def test_on_a_gpu_the_jacobians_take_the_loop():
    """vmap runs on the CPU only: on a GPU the loop builds the Jacobians there."""
    x = wb.randn(3, device="cuda")
    for transform, f in [
        (jacrev, lambda r: r.tanh() * r),
        (jacfwd, lambda r: r.tanh() * r),
        (hessian, lambda r: (r.tanh() * r).sum()),
    ]:
        jac = transform(f)(x)
        assert jac.device.type == "cuda"
        expected = transform(f)(x.cpu()).numpy()
        np.testing.assert_allclose(jac.cpu().numpy(), expected, rtol=1e-6, atol=1e-7)
