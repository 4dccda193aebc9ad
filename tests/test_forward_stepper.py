"""ForwardStepper: the tangent shown at each step is PyTorch's forward-mode tangent.

Each program is written once for both libraries; in PyTorch every intermediate is kept
and its tangent read with ``torch.autograd.forward_ad.unpack_dual``. The stepper's k-th
record must be the k-th intermediate: same primal, same tangent.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import workbench as wb

pytest.importorskip("ipywidgets")
torch = pytest.importorskip("torch")
tfw = torch.autograd.forward_ad

from workbench.widgets import ForwardStepper  # noqa: E402


def sigmoid_mul(keep, x):
    a = keep(x.sigmoid())
    b = keep(a * x)
    return keep(b.sum())


def broadcasting(keep, x, b):
    s = keep(x + b)  # (2, 3) + (3,)
    t = keep(s.tanh())
    u = keep(t * b)  # broadcast again
    return keep(u.mean())


def matmul_layer(keep, x, w):
    h = keep(x @ w)
    r = keep(h.exp())
    return keep(r.sum())


PROGRAMS = {
    "sigmoid_mul": (sigmoid_mul, [(3,)]),
    "broadcasting": (broadcasting, [(2, 3), (3,)]),
    "matmul": (matmul_layer, [(2, 4), (4, 3)]),
}


def _arrays(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _torch_steps(program, primals, tangents):
    kept = []

    def keep(t):
        kept.append(tfw.unpack_dual(t))
        return t

    with tfw.dual_level():
        duals = [tfw.make_dual(torch.tensor(p), torch.tensor(t)) for p, t in zip(primals, tangents)]
        program(keep, *duals)
        return [(p.detach().numpy().copy(), t.detach().numpy().copy()) for p, t in kept]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_each_step_shows_pytorchs_tangent(name):
    program, shapes = PROGRAMS[name]
    primals, tangents = _arrays(shapes, 1), _arrays(shapes, 2)
    expected = _torch_steps(program, primals, tangents)

    def f(*xs):
        return program(lambda t: t, *xs)

    stepper = ForwardStepper(f, [wb.tensor(p) for p in primals], [wb.tensor(t) for t in tangents])
    assert stepper.total == len(expected)
    for k, (primal, tangent) in enumerate(expected, start=1):
        assert stepper.go(k)
        assert stepper.step == k
        np.testing.assert_allclose(stepper.record.primal, primal, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(stepper.record.tangent, tangent, rtol=1e-5, atol=1e-6)
        assert f"Step {k} of {len(expected)}" in stepper.panel.value
    stepper.close()


def test_panel_shows_the_rules_jvp_formula_and_the_tangent():
    x, v = wb.tensor([0.0, 1.0]), wb.tensor([1.0, 2.0])
    stepper = ForwardStepper(lambda x: x.sigmoid() * x, x, v)
    panel = stepper.panel.value
    assert "sigmoid" in panel and "ẏ = ẋ · y · (1 − y)" in panel
    assert "[0.25" in panel  # σ'(0) · 1 = 0.25: the tangent's first element
    stepper.next()
    assert "Step 2 of 2: mul" in stepper.panel.value
    assert "JVP" in stepper.panel.value and "sigmoid" not in stepper.panel.value


def test_moves_light_the_op_of_each_step_on_the_forward_picture():
    x, v = wb.tensor([1.0, 2.0]), wb.tensor([1.0, 0.0])
    stepper = ForwardStepper(lambda x: (x.exp() * 2).sum(), (x,), (v,))
    nodes = [r.node for r in stepper.records]
    assert [r.op for r in stepper.records] == ["exp", "mul", "sum"]
    assert stepper.graph.step_nodes[1:] == [stepper.picture.vertex_of(n) for n in nodes]
    assert stepper.next() and stepper.next()
    assert (stepper.step, stepper.graph.step, stepper.slider.value) == (3, 3, 3)
    assert not stepper.next() and "last step" in stepper.panel.value
    assert stepper.next_button.disabled
    stepper.slider.value = 1  # the slider moves the stepper
    assert stepper.step == 1 and "Step 1 of 3: exp" in stepper.panel.value
    assert not stepper.prev() and stepper.prev_button.disabled
    stepper.play.playing = True
    stepper.slider.value = 2  # as Play moves it, in the browser (jslink)
    stepper.stop_button.click()
    assert not stepper.play.playing and stepper.step == 2


def test_the_panel_names_an_op_as_a_learner_tells_it_apart_never_by_node_id():
    x, v = wb.tensor([1.0, 2.0]), wb.tensor([1.0, 0.0])
    stepper = ForwardStepper(lambda x: ((x * 2).exp() * 3).sum(), (x,), (v,))
    titles = []
    for step in range(1, stepper.total + 1):
        stepper.go(step)
        titles.append(re.search(r"class='wb-title'>([^<]*)<", stepper.panel.value).group(1))
    assert titles == [
        "Step 1 of 4: mul (the first mul)",
        "Step 2 of 4: exp",
        "Step 3 of 4: mul (the second mul)",
        "Step 4 of 4: sum",
    ]


def test_output_and_its_tangent_are_jvps():
    x, v = wb.tensor([0.5, -1.0, 2.0]), wb.tensor([1.0, 2.0, 3.0])

    def f(x):
        return (x * x).sin()

    stepper = ForwardStepper(f, (x,), (v,))
    out, tangent = wb.func.jvp(f, (x,), (v,))
    np.testing.assert_allclose(stepper.output.numpy(), out.numpy())
    np.testing.assert_allclose(stepper.output_tangent, tangent.numpy(), rtol=1e-6)
    assert x.grad is None and not x.requires_grad  # the learner's inputs are untouched


def test_bad_arguments_say_what_is_wrong():
    x = wb.tensor([1.0])
    with pytest.raises(RuntimeError, match="same length"):
        ForwardStepper(lambda a, b: a * b, (x, x), (x,))
    with pytest.raises(TypeError, match="must be Tensors"):
        ForwardStepper(lambda a: a * 2, ([1.0],), (x,))
    with pytest.raises(ValueError, match="ran no op"):
        ForwardStepper(lambda a: a, (x,), (x,))


# ---------------------------------------------------------------- JacobianBuilder
def tall(lib, x):  # R² → R⁵
    return (x[0] * x[1]).sin() * lib.arange(1.0, 6.0) + x.exp().sum()


def wide(lib, x):  # R⁵ → R²
    return lib.stack([(x * x).sum(), (x.tanh() * lib.arange(1.0, 6.0)).sum()])


@pytest.mark.parametrize(
    ("program", "size", "passes"), [(tall, 2, (2, 5)), (wide, 5, (5, 2))], ids=["tall", "wide"]
)
def test_jacobian_builder_counts_its_passes_and_agrees_with_torch(program, size, passes):
    from workbench.widgets import JacobianBuilder

    x = np.random.default_rng(3).standard_normal(size).astype(np.float32)
    builder = JacobianBuilder(lambda t: program(wb, t), wb.tensor(x))
    assert (builder.forward_passes, builder.backward_passes) == (0, 0)
    assert builder.forward_pass() and builder.backward_pass()
    assert (builder.forward_passes, builder.backward_passes) == (1, 1)
    assert not np.isnan(builder.by_columns[:, 0]).any() and np.isnan(builder.by_columns[:, 1]).all()
    assert not np.isnan(builder.by_rows[0]).any() and np.isnan(builder.by_rows[1]).all()
    builder.run_all()
    assert (builder.forward_passes, builder.backward_passes) == passes
    assert not builder.forward_pass() and not builder.backward_pass()  # nothing left to fill
    assert (builder.forward_passes, builder.backward_passes) == passes
    theirs = torch.func.jacfwd(lambda t: program(torch, t))(torch.tensor(x)).numpy()
    np.testing.assert_allclose(builder.by_columns, theirs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(builder.by_rows, theirs, rtol=1e-5, atol=1e-6)
    ours = wb.func.jacrev(lambda t: program(wb, t))(wb.tensor(x)).numpy()
    np.testing.assert_allclose(builder.by_rows, ours, rtol=1e-5, atol=1e-6)
    text = builder.summary.value
    assert f"Forward passes run: {passes[0]}. Backward passes run: {passes[1]}." in text
    assert "equal" in text
    assert f"{passes[0]} of {size} passes" in builder.forward_view.value


def test_jacobian_builder_takes_a_function_closing_over_weights_that_require_grad():
    """An MLP's Jacobian: f's weights require grad, so its passes' outputs do too."""
    from workbench.widgets import JacobianBuilder

    rng = np.random.default_rng(5)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    weights = wb.tensor(w, requires_grad=True)
    builder = JacobianBuilder(lambda t: (t @ weights).tanh(), wb.tensor([0.5, -1.0, 2.0]))
    builder.run_all()
    x = torch.tensor([0.5, -1.0, 2.0])
    theirs = torch.func.jacrev(lambda t: (t @ torch.tensor(w)).tanh())(x).numpy()
    np.testing.assert_allclose(builder.by_columns, theirs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(builder.by_rows, theirs, rtol=1e-5, atol=1e-6)


def test_jacobian_builder_refuses_what_is_not_a_vector_function():
    from workbench.widgets import JacobianBuilder

    with pytest.raises(ValueError, match="1-D Tensor"):
        JacobianBuilder(lambda t: t.sum(), wb.tensor([1.0, 2.0]))


# ---------------------------------------------------------------- TwoModes
def test_two_modes_walk_one_graph_forward_then_back():
    from workbench.widgets import TwoModes

    x = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    v = np.array([1.0, 2.0, -1.0], dtype=np.float32)
    w = np.array([0.3, 0.1, -0.2], dtype=np.float32)  # the reverse pass's ȳ

    def f(lib, t):
        return (t.sigmoid() * t).exp()

    modes = TwoModes(lambda t: f(wb, t), wb.tensor(x), wb.tensor(v), cotangent=wb.tensor(w))
    forward_nodes = [r.node for r in modes.forward.records]
    assert [r.op for r in modes.forward.records] == ["sigmoid", "mul", "exp"]
    # the backward pass runs the same ops' nodes, last made first
    ran = [uid for uid in modes.backward.order if uid in forward_nodes]
    assert ran == forward_nodes[::-1]
    assert modes.backward.active == forward_nodes[-1]
    modes.backward.continue_()  # to the end: the leaf's gradient is the VJP
    _, pull_back = torch.func.vjp(lambda t: f(torch, t), torch.tensor(x))
    (expected,) = pull_back(torch.tensor(w))
    np.testing.assert_allclose(modes.forward.inputs[0].grad.numpy(), expected.numpy(), rtol=1e-5)
    _, tangent = torch.func.jvp(lambda t: f(torch, t), (torch.tensor(x),), (torch.tensor(v),))
    np.testing.assert_allclose(modes.forward.output_tangent, tangent.numpy(), rtol=1e-5)
    modes.close()
    assert modes.forward.result is None  # closing lets go of the graph
