"""wb.optim against torch.optim: same start, same gradients, several steps, same values."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench import nn, optim

torch = pytest.importorskip("torch")

STEPS = 6


def _problem(seed: int = 0):
    """Initial weights and data of a tiny regression, as float64 numpy arrays."""
    rng = np.random.default_rng(seed)
    return {
        "w": rng.standard_normal((3, 4)),
        "b": rng.standard_normal(3),
        "x": rng.standard_normal((5, 4)),
        "t": rng.standard_normal((5, 3)),
    }


def _wb_loss(w, b, x, t):
    return (((x @ w.T + b).tanh() - t) ** 2).mean()


def _torch_loss(w, b, x, t):
    return (((x @ w.T + b).tanh() - t) ** 2).mean()


def _run_both(make_wb, make_torch, steps: int = STEPS):
    """Run ``steps`` steps of both optimizers; yield (step, wb params, torch params)."""
    data = _problem()
    w = nn.Parameter(wb.tensor(data["w"]))
    b = nn.Parameter(wb.tensor(data["b"]))
    tw = torch.nn.Parameter(torch.tensor(data["w"]))
    tb = torch.nn.Parameter(torch.tensor(data["b"]))
    x, t = wb.tensor(data["x"]), wb.tensor(data["t"])
    tx, tt = torch.tensor(data["x"]), torch.tensor(data["t"])
    opt, topt = make_wb([w, b]), make_torch([tw, tb])
    for step in range(steps):
        opt.zero_grad()
        topt.zero_grad()
        _wb_loss(w, b, x, t).backward()
        _torch_loss(tw, tb, tx, tt).backward()
        opt.step()
        topt.step()
        yield step, (w, b), (tw, tb)


CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.5, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.95), eps=1e-6)),
    ("Adam", dict(lr=0.05, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
]


@pytest.mark.parametrize(("name", "options"), CONFIGS, ids=lambda v: str(v))
def test_matches_torch_step_by_step(name, options):
    make_wb = lambda ps: getattr(optim, name)(ps, **options)  # noqa: E731
    make_torch = lambda ps: getattr(torch.optim, name)(ps, **options)  # noqa: E731
    for step, ours, theirs in _run_both(make_wb, make_torch):
        for p, tp in zip(ours, theirs):
            np.testing.assert_allclose(
                p.detach().numpy(), tp.detach().numpy(), rtol=0, atol=1e-6, err_msg=f"step {step}"
            )


def test_the_parameters_actually_move():
    """Guards the comparison above: a do-nothing optimizer must not pass it by accident."""
    data = _problem()
    *_, (_, (w, _), _) = _run_both(
        lambda ps: optim.SGD(ps, lr=0.1), lambda ps: torch.optim.SGD(ps, lr=0.1)
    )
    assert np.abs(w.detach().numpy() - data["w"]).max() > 1e-3


def test_sgd_lowers_the_loss():
    data = _problem()
    w = nn.Parameter(wb.tensor(data["w"]))
    b = nn.Parameter(wb.tensor(data["b"]))
    x, t = wb.tensor(data["x"]), wb.tensor(data["t"])
    opt = optim.SGD([w, b], lr=0.5, momentum=0.9)
    first = _wb_loss(w, b, x, t).item()
    for _ in range(30):
        opt.zero_grad()
        _wb_loss(w, b, x, t).backward()
        opt.step()
    assert _wb_loss(w, b, x, t).item() < 0.5 * first


def test_param_groups_have_their_own_settings():
    w = nn.Parameter(wb.ones(2, dtype=wb.float64))
    b = nn.Parameter(wb.ones(2, dtype=wb.float64))
    opt = optim.SGD([{"params": [w]}, {"params": [b], "lr": 1.0}], lr=0.1)
    (w.sum() + b.sum()).backward()
    opt.step()
    np.testing.assert_allclose(w.detach().numpy(), [0.9, 0.9])
    np.testing.assert_allclose(b.detach().numpy(), [0.0, 0.0])
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 1.0


def test_zero_grad_sets_none_by_default_or_zeros():
    w = nn.Parameter(wb.ones(3))
    opt = optim.SGD([w], lr=0.1)
    (w * 2).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert w.grad is not None and not w.grad.numpy().any()
    (w * 2).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [2, 2, 2])
    opt.zero_grad()
    assert w.grad is None


def test_parameters_without_grad_are_skipped():
    w = nn.Parameter(wb.ones(2))
    unused = nn.Parameter(wb.ones(2))
    opt = optim.Adam([w, unused], lr=0.1)
    w.sum().backward()
    opt.step()
    np.testing.assert_allclose(unused.detach().numpy(), [1, 1])
    assert unused not in opt.state and w in opt.state


def test_step_records_no_graph_and_bumps_the_version():
    w = nn.Parameter(wb.ones(2))
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    (w * w).sum().backward()
    before = w._version
    opt.step()
    assert w.is_leaf and w.grad_fn is None and w.requires_grad
    assert w._version > before
    assert opt.state[w]["momentum_buffer"].grad_fn is None


@pytest.mark.parametrize("options", [dict(), dict(momentum=0.9)], ids=str)
def test_a_step_counts_as_an_in_place_write_for_traces(options):
    """Traces drop what they cached about arrays when ``workbench.core.tensor.writes`` moves."""
    from workbench.core.tensor import writes

    w = nn.Parameter(wb.ones(2))
    opt = optim.SGD([w], lr=0.1, **options)
    (w * w).sum().backward()
    before = writes[0]
    opt.step()
    assert writes[0] > before
    before = writes[0]
    with wb.no_grad():
        w.sub_(w.grad, alpha=0.1)  # add_/sub_ write straight into memory when nothing records
    assert writes[0] > before


def test_a_step_invalidates_graphs_that_saved_the_old_value():
    w = nn.Parameter(wb.ones(2))
    opt = optim.SGD([w], lr=0.1)
    loss = (w * w).sum()
    loss.backward(retain_graph=True)
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_closure_is_evaluated_with_grad_enabled():
    w = nn.Parameter(wb.ones(2))
    opt = optim.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with wb.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 2.0
    np.testing.assert_allclose(w.detach().numpy(), [0.8, 0.8])


def test_state_dict_round_trip_continues_identically():
    def make():
        w = nn.Parameter(wb.tensor([1.0, -2.0], dtype=wb.float64))
        return w, optim.Adam([w], lr=0.1)

    w1, opt1 = make()
    for _ in range(3):
        opt1.zero_grad()
        (w1**2).sum().backward()
        opt1.step()
    w2, opt2 = make()
    with wb.no_grad():
        w2.copy_(w1)
    opt2.load_state_dict(opt1.state_dict())
    for w, opt in ((w1, opt1), (w2, opt2)):
        opt.zero_grad()
        (w**2).sum().backward()
        opt.step()
    np.testing.assert_allclose(w1.detach().numpy(), w2.detach().numpy(), atol=1e-12)
    assert opt2.state[w2]["step"] == 4


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda ps: optim.SGD(ps, lr=-1.0), "Invalid learning rate"),
        (lambda ps: optim.SGD(ps, lr=0.1, nesterov=True), "Nesterov"),
        (lambda ps: optim.Adam(ps, betas=(1.0, 0.9)), "beta parameter at index 0"),
        (lambda ps: optim.Adam(ps, eps=-1.0), "epsilon"),
        (lambda ps: optim.SGD([], lr=0.1), "empty parameter list"),
    ],
)
def test_bad_settings_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make([nn.Parameter(wb.ones(1))])


def test_non_leaf_tensors_are_refused():
    w = nn.Parameter(wb.ones(2))
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([w * 2], lr=0.1)


def test_a_parameter_in_two_groups_is_refused():
    w = nn.Parameter(wb.ones(2))
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)


def test_works_with_module_parameters_and_float32():
    model = nn.Linear(3, 2)
    opt = optim.AdamW(model.parameters(), lr=0.01)
    before = model.weight.detach().numpy().copy()
    model(wb.randn(4, 3)).sum().backward()
    opt.step()
    assert model.weight.dtype == wb.float32
    assert not np.allclose(model.weight.detach().numpy(), before)
