"""A ``wb.compile``d training step (forward, loss.backward(), opt.step()) runs as one
program: its steps equal eager workbench's and PyTorch eager's, it prints its backward,
update and write-backs, and what it cannot replay falls back to eager, put back first."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench import nn, optim
from workbench.program import TraceError, gradient, trace

torch = pytest.importorskip("torch")

STEPS = 5

OPTIMIZERS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.95), weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3)),
]


def _batches(dtype=np.float32):
    rng = np.random.default_rng(0)
    return [
        (rng.standard_normal((6, 4)).astype(dtype), rng.integers(0, 3, 6)) for _ in range(STEPS)
    ]


def _model(dtype=wb.float32):
    wb.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).to(dtype)


def _step_with(zero_grad: bool = True, result=lambda loss: loss, calls=None):
    """The training step as PyTorch users write it (with ``zero_grad()`` or not),
    returning ``result(loss)``; ``calls`` counts the runs of its Python code."""

    def stepper(model, opt):
        def train_step(x, y):
            if calls is not None:
                calls.append(1)  # a Python side effect: it happens when the step is traced
            if zero_grad:
                opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return result(loss)

        return train_step

    return stepper


_step = _step_with()


def _torch_twin(model, name, options):
    twin = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    with torch.no_grad():
        for theirs, ours in zip(twin.parameters(), model.parameters()):
            theirs.copy_(torch.from_numpy(ours.detach().numpy().copy()))
    return twin, getattr(torch.optim, name)(twin.parameters(), **options)


@pytest.mark.parametrize(("name", "options"), OPTIMIZERS, ids=str)
def test_a_compiled_training_step_equals_eager_and_pytorch_step_by_step(name, options):
    eager_model, model = _model(), _model()
    eager = _step(eager_model, getattr(optim, name)(eager_model.parameters(), **options))
    opt = getattr(optim, name)(model.parameters(), **options)
    calls = []
    compiled = wb.compile(_step_with(calls=calls)(model, opt))
    twin, twin_opt = _torch_twin(model, name, options)
    for x, y in _batches():
        ours = compiled(wb.tensor(x), wb.tensor(y))
        theirs = eager(wb.tensor(x), wb.tensor(y))
        twin_opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(twin(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        twin_opt.step()
        assert ours.grad_fn is None  # the backward inside the step used the graph
        assert abs(ours.item() - theirs.item()) < 1e-6 and abs(ours.item() - loss.item()) < 1e-5
        for p, e, t in zip(model.parameters(), eager_model.parameters(), twin.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), e.detach().numpy(), atol=1e-6)
            np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), atol=1e-5)
            np.testing.assert_allclose(p.grad.numpy(), e.grad.numpy(), atol=1e-6)
            np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), atol=1e-5)
    for p, t in zip(model.parameters(), twin.parameters()):  # the state was written too
        for key, value in opt.state[p].items():
            np.testing.assert_allclose(
                value.numpy(), twin_opt.state[t][key].numpy(), atol=1e-5, err_msg=key
            )
    # traced twice at most (the first step makes the optimizer's state); then the program
    assert len(calls) <= 2
    (program,) = [entry.program for entry in compiled.cache.values()]
    assert program.writes and program.grads


def test_a_float64_training_step_matches_pytorch_closely():
    model = _model(wb.float64)
    opt = optim.Adam(model.parameters(), lr=0.05)
    compiled = wb.compile(_step(model, opt))
    twin, twin_opt = _torch_twin(model, "Adam", dict(lr=0.05))
    twin.double()
    for x, y in _batches(np.float64):
        compiled(wb.tensor(x), wb.tensor(y))
        twin_opt.zero_grad()
        torch.nn.functional.cross_entropy(twin(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        twin_opt.step()
    for p, t in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=0, atol=1e-12)


def test_the_program_of_a_training_step_prints_backward_update_and_write_backs():
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = wb.compile(_step(model, opt))
    x, y = (wb.tensor(a) for a in _batches()[0])
    for _ in range(2):
        step(x, y)
    (entry,) = step.cache.values()
    text = str(entry.program)
    assert text.index("# ---- backward ----") < text.index("# ---- SGD.step() ----")
    assert "%model.0.weight.momentum_buffer_1 = mul(%model.0.weight.momentum_buffer, 0.9)" in text
    assert "%model.0.weight <- %model.0.weight_1  # written in place" in text
    assert "%model.0.weight.grad = %model.0.weight_bar" in text
    assert "no_grad" not in text  # the update is no gradient's business: it runs after one


def test_tracing_a_training_step_takes_that_step():
    """wb.program.trace runs the function once: a step traced is a step taken."""
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1)
    before = [p.detach().numpy().copy() for p in model.parameters()]
    x, y = (wb.tensor(a) for a in _batches()[0])
    program = trace(_step(model, opt), x, y)
    assert program.has_effects
    assert not all(
        np.array_equal(b, p.detach().numpy()) for b, p in zip(before, model.parameters())
    )
    with pytest.raises(RuntimeError, match="zero_grad"):  # .grad is set: the program would
        program.run(x, y)  # set it again where eager adds (its step zeroes them first: no)
    with pytest.raises(TraceError, match="training step"):
        gradient(program)


def _compiled_against_eager(make_opt, stepper, steps: int = 3):
    """Take ``steps`` steps compiled and eagerly; the parameters and .grad must agree.
    Returns the compiled side's optimizer and both sides' results."""
    eager_model, model = _model(), _model()
    opt = make_opt(model.parameters())
    compiled = wb.compile(stepper(model, opt))
    eager = stepper(eager_model, make_opt(eager_model.parameters()))
    results = [
        (compiled(wb.tensor(x), wb.tensor(y)), eager(wb.tensor(x), wb.tensor(y)))
        for x, y in _batches()[:steps]
    ]
    for p, e in zip(model.parameters(), eager_model.parameters()):  # one update per call
        np.testing.assert_allclose(p.detach().numpy(), e.detach().numpy(), atol=1e-6)
        np.testing.assert_allclose(p.grad.numpy(), e.grad.numpy(), atol=1e-6)
    return opt, results


def test_a_step_the_tracer_refuses_is_put_back_and_runs_eagerly_with_one_note(capsys):
    # RMSprop writes the arrays themselves, not through an op: refused after the write
    _compiled_against_eager(lambda ps: optim.RMSprop(ps, lr=0.01), _step_with())
    printed = capsys.readouterr().out
    assert printed.count("runs eagerly") == 1 and "not through an op" in printed


def test_fullgraph_raises_and_leaves_the_parameters_and_state_as_they_were():
    model = _model()
    opt = optim.RMSprop(model.parameters(), lr=0.01)
    before = [p.detach().numpy().copy() for p in model.parameters()]
    x, y = (wb.tensor(a) for a in _batches()[0])
    with pytest.raises(TraceError, match="not through an op"):
        wb.compile(_step_with()(model, opt), fullgraph=True)(x, y)
    for b, p in zip(before, model.parameters()):
        np.testing.assert_array_equal(b, p.detach().numpy())
        assert p.grad is None
    assert not opt.state


def test_a_step_that_reads_a_value_after_the_update_is_put_back_and_runs_eagerly(capsys):
    # loss.item(): read into Python after the update, refused, put back, run eagerly
    stepper = _step_with(result=lambda loss: loss.item())
    opt, results = _compiled_against_eager(lambda ps: optim.Adam(ps, lr=0.05), stepper)
    assert all(ours == theirs for ours, theirs in results)
    assert all(per_param["step"].item() == 3 for per_param in opt.state.values())
    assert "item()" in capsys.readouterr().out


def test_a_step_without_zero_grad_adds_into_grad_as_eager_does(capsys):
    # the second call would add into the .grad the first left: traced again, refused
    _compiled_against_eager(lambda ps: optim.SGD(ps, lr=0.1), _step_with(zero_grad=False))
    assert "zero_grad" in capsys.readouterr().out


def test_writes_a_program_cannot_replay_are_refused():
    w = wb.ones(3, 2)
    with pytest.raises(TraceError, match="view.*after an in-place write"):
        trace(lambda x: _read_view_after_write(x, w), wb.ones(3, 2))
    with pytest.raises(TraceError, match="not through an op"):
        bn = nn.BatchNorm1d(3)
        trace(lambda x: bn(x), wb.randn(4, 3))  # the running statistics: written directly
    program = trace(lambda x: (x * 1).mul_(2) + 1, wb.ones(3))  # an intermediate: a binding
    assert [b.op.name for b in program.bindings] == ["mul", "mul", "add"]
    assert program.run(wb.tensor([1.0, 2.0, 3.0])).tolist() == [3.0, 5.0, 7.0]
    p = wb.ones(2, requires_grad=True)
    with pytest.raises(TraceError, match="create_graph"), pytest.warns(UserWarning):
        trace(lambda x: (x * p).sum().backward(create_graph=True) or x, wb.ones(2))


def _read_view_after_write(x, w):
    view = w.t()  # a view of w...
    with wb.no_grad():
        w.add_(x)
    return view * 1  # ...read after the write: the program would read the old values


def test_a_written_tensor_from_outside_is_written_back_at_every_run():
    counter = wb.zeros(())

    def count(x):
        with wb.no_grad():
            counter.add_(1)
        return x * counter

    compiled = wb.compile(count)
    for expected in (1.0, 2.0, 3.0):
        assert compiled(wb.ones(2)).tolist() == [expected, expected]
    assert counter.item() == 3.0
    (entry,) = compiled.cache.values()
    assert "%counter <- %counter_1  # written in place" in str(entry.program)


def test_a_refused_trace_puts_back_the_tensors_the_function_names(capsys):
    counter = wb.zeros(())

    def count(x):
        with wb.no_grad():
            counter.add_(1)
        return x * counter.item()  # refused after the write: put back, then run eagerly

    compiled = wb.compile(count)
    assert compiled(wb.ones(2)).tolist() == [1.0, 1.0]
    assert compiled(wb.ones(2)).tolist() == [2.0, 2.0]
    assert "item()" in capsys.readouterr().out


# ------------------------------------------------------- the runner's buffers
def test_the_runner_reuses_its_buffers_and_never_the_arrays_it_hands_out():
    from workbench.program import Runner

    def chain(x, w):
        for _ in range(4):
            x = (x @ w).tanh() * 0.5 + x  # matmul, mul and add write into buffers
        return x, x @ w

    x, w = wb.randn(8, 8), wb.randn(8, 8)
    runner = Runner(trace(chain, x, w))
    buffered = sum(1 for step in runner.steps if step[-1] is not None)
    assert buffered >= 12 and len(runner.buffers) <= 3  # a few buffers serve them all
    first = runner(x, w)
    kept = [t.numpy().copy() for t in first]
    second = runner(x * 2, w)
    for out, values in zip(first, kept):  # the second run wrote nothing the first handed out
        np.testing.assert_array_equal(out.numpy(), values)
        assert not any(np.may_share_memory(out.numpy(), b) for b in runner.buffers)
    for ours, eager in zip(second, chain(x * 2, w)):
        np.testing.assert_array_equal(ours.numpy(), eager.numpy())
