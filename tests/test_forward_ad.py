"""Forward mode: every registry sample's JVP against torch.autograd.forward_ad.

The samples are the gradient tests' (tests/samples, real and complex). For each, the
inputs that require grad become dual tensors with random tangents, in both engines, and
the outputs' tangents must agree. A second pass runs the backward pass inside the dual
level (forward over reverse), which is what carries tangents through the ops that only
run in backward (sigmoid_backward, conv2d_input_grad...), and compares the gradients'
tangents with PyTorch's.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from tests.samples import all_samples
from tests.samples.complex_numbers import COMPLEX_NAMES, complex_variant
from workbench.ops.registry import OPS

torch = pytest.importorskip("torch")
tfw = torch.autograd.forward_ad
fw = wb.autograd.forward_ad

REAL_SAMPLES = all_samples()
_BY_NAME = {s.name: s for s in REAL_SAMPLES}
SAMPLES = REAL_SAMPLES + [complex_variant(_BY_NAME[name]) for name in COMPLEX_NAMES]
TORCH_SAMPLES = [s for s in SAMPLES if s.torch_fn is not None]


def _random_like(rng, shape, dtype) -> np.ndarray:
    values = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


def _tangents(sample) -> list:
    """A random tangent for each input that requires grad (None elsewhere), seeded."""
    rng = np.random.default_rng(11)
    return [
        _random_like(rng, a.shape, a.dtype) if req else None
        for a, req in zip(sample.arrays(), sample.requires())
    ]


def _ours(sample, tangents):
    inputs = []
    for array, req in zip(sample.arrays(), sample.requires()):
        inputs.append(
            wb.tensor(array, requires_grad=req) if isinstance(array, np.ndarray) else array
        )
    duals = [x if t is None else fw.make_dual(x, wb.tensor(t)) for x, t in zip(inputs, tangents)]
    return inputs, duals


def _theirs(sample, tangents):
    inputs = []
    for array, req in zip(sample.arrays(), sample.requires()):
        inputs.append(
            torch.tensor(array, requires_grad=req) if isinstance(array, np.ndarray) else array
        )
    duals = [
        x if t is None else tfw.make_dual(x, torch.tensor(t)) for x, t in zip(inputs, tangents)
    ]
    return inputs, duals


def _assert_tangents_match(ours, theirs, what: str) -> None:
    if theirs is None or ours is None:  # no tangent: the other's must be zero (or none)
        other = ours if theirs is None else theirs
        assert other is None or not np.any(other.detach().numpy()), (
            f"{what}: only one has a tangent"
        )
        return
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().numpy(force=True), atol=1e-7, rtol=1e-5, err_msg=what
    )


@pytest.mark.parametrize("sample", TORCH_SAMPLES, ids=lambda s: s.name)
def test_jvp_matches_torch(sample):
    tangents = _tangents(sample)  # (none for a sample of an op without a derivative)
    with fw.dual_level(), tfw.dual_level():
        _, ours_in = _ours(sample, tangents)
        _, theirs_in = _theirs(sample, tangents)
        ours, theirs = sample.fn(*ours_in), sample.torch_fn(*theirs_in)
        np.testing.assert_allclose(
            ours.detach().numpy(), theirs.detach().numpy(), atol=1e-8, rtol=1e-6, err_msg="value"
        )
        _assert_tangents_match(
            fw.unpack_dual(ours).tangent, tfw.unpack_dual(theirs).tangent, "tangent"
        )


GRADGRAD_SAMPLES = [s for s in TORCH_SAMPLES if s.gradgrad and any(s.requires())]


def _wb_grads(sample, leaves, out, cotangent):
    wanted = [leaves[i] for i, r in enumerate(sample.requires()) if r]
    return wb.autograd.grad(out, wanted, wb.tensor(cotangent), allow_unused=True)


def _torch_grad_jvp(sample, tangents, cotangent):
    """PyTorch's gradients and their tangents: torch.func.jvp of the function
    xs ↦ vjp(f, xs)(cotangent). (torch.func, not forward_ad around autograd.grad: in
    PyTorch 2.13 the latter gives wrong tangents for cumprod of inputs with zeros,
    where torch.func.jvp, jacfwd and jacrev agree with finite differences.)"""
    arrays, wanted = sample.arrays(), [i for i, r in enumerate(sample.requires()) if r]

    def f(*xs):
        args = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]
        for i, x in zip(wanted, xs):
            args[i] = x
        return sample.torch_fn(*args)

    def grads(*xs):
        return torch.func.vjp(f, *xs)[1](torch.tensor(cotangent))

    primals = tuple(torch.tensor(arrays[i]) for i in wanted)
    directions = tuple(torch.tensor(tangents[i]) for i in wanted)
    return torch.func.jvp(grads, primals, directions)


def _torch_grad_jvp_forward_ad(sample, tangents, cotangent):
    """The same through torch.autograd.forward_ad around torch.autograd.grad: for the
    samples whose torch_fn calls requires_grad_() itself, which torch.func refuses."""
    wanted = [i for i, r in enumerate(sample.requires()) if r]
    with tfw.dual_level():
        leaves, duals = _theirs(sample, tangents)
        grads = torch.autograd.grad(
            sample.torch_fn(*duals), [leaves[i] for i in wanted], torch.tensor(cotangent)
        )
        unpacked = [tfw.unpack_dual(g) for g in grads]
    zeros = [torch.zeros_like(p) for p, _ in unpacked]
    return [p for p, _ in unpacked], [z if t is None else t for (_, t), z in zip(unpacked, zeros)]


TORCH_FN_CALLS_REQUIRES_GRAD = {"max_pool2d_backward", "avg_pool2d_backward", "nll_loss_backward"}


@pytest.mark.parametrize("sample", GRADGRAD_SAMPLES, ids=lambda s: s.name)
def test_forward_over_reverse_matches_torch(sample):
    """Backward inside a dual level: the gradients carry tangents (the Hessian-vector
    products of ⟨f, v⟩), through the rules' own ops (sigmoid_backward, conv2d_input_grad...)."""
    tangents = _tangents(sample)
    with fw.dual_level():
        leaves, duals = _ours(sample, tangents)
        out = sample.fn(*duals)
        if not out.requires_grad:
            return
        cotangent = _random_like(np.random.default_rng(5), tuple(out.shape), out.dtype)
        ours = _wb_grads(sample, leaves, out, cotangent)
        ours_tangents = [None if g is None else fw.unpack_dual(g).tangent for g in ours]
    if sample.name in TORCH_FN_CALLS_REQUIRES_GRAD:
        theirs, theirs_tangents = _torch_grad_jvp_forward_ad(sample, tangents, cotangent)
    else:
        theirs, theirs_tangents = _torch_grad_jvp(sample, tangents, cotangent)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        if a is None:  # unused: PyTorch's vjp gives zeros
            assert not torch.any(b) and not torch.any(theirs_tangents[k])
            continue
        np.testing.assert_allclose(a.detach().numpy(), b.numpy(), atol=1e-7, rtol=1e-5)
        _assert_tangents_match(ours_tangents[k], theirs_tangents[k], f"gradient {k}'s tangent")


# ------------------------------------------------------------ every op has a rule
def test_every_differentiable_op_has_a_jvp_rule_with_formula():
    import workbench.nn.functional  # noqa: F401  (registers the loss ops)

    for op in OPS.values():
        if not op.differentiable:
            assert op.jvp is None, f"{op.name} has no derivative, so no JVP rule"
            continue
        assert op.jvp is not None, f"op '{op.name}' has no JVP rule (register_jvp)"
        lines = op.jvp_formula.splitlines()
        assert [ln.split(":")[0] for ln in lines] == ["Forward", "JVP"], (
            f"the JVP rule of '{op.name}' needs a 'Forward: ... / JVP: ...' docstring"
        )


def test_every_jvp_rule_runs_in_a_sample(monkeypatch):
    """Each rule is exercised by the comparisons above: first order, or forward over reverse
    for the ops that run only in backward. (No sample, no comparison.)"""
    ran = set()
    for op in OPS.values():
        if op.jvp is not None:

            def recording(orig, tangents, rule=op.jvp, name=op.name):
                ran.add(name)
                return rule(orig, tangents)

            monkeypatch.setattr(op, "jvp", recording)
    for sample in SAMPLES:
        tangents = _tangents(sample)
        with fw.dual_level():
            leaves, duals = _ours(sample, tangents)
            out = sample.fn(*duals)
            if out.requires_grad:
                cotangent = _random_like(np.random.default_rng(5), tuple(out.shape), out.dtype)
                _wb_grads(sample, leaves, out, cotangent)
    with fw.dual_level():  # the no_grad sample has no input that requires grad
        wb.ops.grad.no_grad(fw.make_dual(wb.tensor([1.0]), wb.tensor([1.0])))
    with fw.dual_level(), pytest.raises(NotImplementedError):  # its rule is PyTorch's refusal
        wb.floor_divide(fw.make_dual(wb.tensor([5.0]), wb.tensor([1.0])), 2.0)
    rules = {op.name for op in OPS.values() if op.jvp is not None}
    assert rules - ran == set(), f"JVP rules no sample runs: {sorted(rules - ran)}"


def test_no_grad_marker_stops_the_tangent():
    """The one sample without a torch_fn: TVM's no_grad marker, PyTorch's detach."""
    x = wb.tensor([1.0, 2.0])
    with fw.dual_level(), tfw.dual_level():
        ours = wb.ops.grad.no_grad(fw.make_dual(x, wb.tensor([1.0, 1.0])))
        theirs = tfw.make_dual(torch.tensor([1.0, 2.0]), torch.ones(2)).detach()
        assert fw.unpack_dual(ours).tangent is None
        assert tfw.unpack_dual(theirs).tangent is None


# ------------------------------------------------------- the API, as PyTorch's
def _error(fn):
    try:
        fn()
    except Exception as err:  # noqa: BLE001  (the test compares whatever was raised)
        return type(err), str(err)
    return None, None


def test_errors_match_torch():
    x, t = wb.tensor([1.0, 2.0, 3.0]), wb.tensor([1.0, 0.0, 0.0])
    tx, tt = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 0.0])
    assert _error(lambda: fw.make_dual(x, t)) == _error(lambda: tfw.make_dual(tx, tt))
    with fw.dual_level(), tfw.dual_level():
        cases = [
            (lambda: fw.make_dual(x, wb.ones(4)), lambda: tfw.make_dual(tx, torch.ones(4))),
            (lambda: fw.make_dual(x, wb.ones(3, 1)), lambda: tfw.make_dual(tx, torch.ones(3, 1))),
            (
                lambda: fw.make_dual(wb.arange(3), wb.arange(3)),
                lambda: tfw.make_dual(torch.arange(3), torch.arange(3)),
            ),
            (lambda: fw.make_dual(x, wb.arange(3)), lambda: tfw.make_dual(tx, torch.arange(3))),
            (
                lambda: fw.make_dual(fw.make_dual(x, t), t),
                lambda: tfw.make_dual(tfw.make_dual(tx, tt), tt),
            ),
            (lambda: fw.make_dual(x, t, level=3), lambda: tfw.make_dual(tx, tt, level=3)),
            (lambda: fw.unpack_dual(3.0), lambda: tfw.unpack_dual(3.0)),
        ]
        for ours, theirs in cases:
            got, want = _error(ours), _error(theirs)
            assert got[0] is not None and issubclass(got[0], want[0]) and got[1] == want[1], (
                got,
                want,
            )
        nested = _error(lambda: fw.dual_level().__enter__())
        assert nested == _error(lambda: tfw.dual_level().__enter__())


def test_a_tangent_of_another_float_dtype_is_kept_as_torch_keeps_it():
    x = wb.tensor([1.0, 2.0], dtype=wb.float64)
    with fw.dual_level(), tfw.dual_level():
        ours = fw.unpack_dual(fw.make_dual(x, wb.ones(2, dtype=wb.float32))).tangent
        theirs = tfw.unpack_dual(
            tfw.make_dual(torch.tensor([1.0, 2.0], dtype=torch.float64), torch.ones(2))
        ).tangent
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.") == "float32"


def test_unpack_dual_and_the_end_of_a_level():
    x = wb.tensor([0.5, -1.0], requires_grad=True)
    plain = fw.unpack_dual(x)
    assert plain.primal is x and plain.tangent is None and plain._fields == ("primal", "tangent")
    with fw.dual_level() as level:
        assert level == 0
        dual = fw.make_dual(x, wb.tensor([1.0, 2.0]))
        y = dual.tanh()
        primal, tangent = fw.unpack_dual(y)
        assert fw.unpack_dual(primal).tangent is None  # the primal is a plain view
        np.testing.assert_allclose(
            tangent.detach().numpy(), [1.0, 2.0] * (1 - np.tanh(x.detach().numpy()) ** 2)
        )
        assert (y > 0).dtype == wb.bool and fw.unpack_dual(y > 0).tangent is None
        assert fw.unpack_dual(y.argmax()).tangent is None
    assert fw.unpack_dual(y).tangent is None and fw.unpack_dual(dual).tangent is None
    with fw.dual_level():  # a new level does not see the old tangents
        assert fw.unpack_dual(y).tangent is None


def test_a_dual_level_is_seen_by_every_thread_as_in_torch():
    """PyTorch keeps forward levels in one process-wide list: a tangent made in one
    thread flows through ops run in another (grad mode, by contrast, is per thread)."""
    torch = pytest.importorskip("torch")
    import threading

    import torch.autograd.forward_ad as torch_fw

    tangents = {}
    for lib, fwd in ((torch, torch_fw), (wb, fw)):
        with fwd.dual_level():
            x = fwd.make_dual(
                lib.ones(2, dtype=lib.float64), lib.full((2,), 2.0, dtype=lib.float64)
            )

            def in_another_thread(lib=lib, fwd=fwd, x=x):
                tangents[lib.__name__] = fwd.unpack_dual(x * 3).tangent

            thread = threading.Thread(target=in_another_thread)
            thread.start()
            thread.join()
    assert tangents["torch"] is not None and tangents["workbench"] is not None
    np.testing.assert_array_equal(tangents["workbench"].numpy(), tangents["torch"].numpy())


def test_reverse_mode_flows_through_make_dual_and_the_tangent():
    """make_dual is a view of its primal; a tangent has a history where its primal has one
    (reverse over forward), both as in PyTorch."""
    values, direction = [0.3, -0.7, 1.1], [1.0, 2.0, -1.0]
    x = wb.tensor(values, dtype=wb.float64, requires_grad=True)
    tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    with fw.dual_level(), tfw.dual_level():
        ours = fw.make_dual(x, wb.tensor(direction, dtype=wb.float64)).sigmoid()
        theirs = tfw.make_dual(tx, torch.tensor(direction, dtype=torch.float64)).sigmoid()
        ours_t, theirs_t = fw.unpack_dual(ours).tangent, tfw.unpack_dual(theirs).tangent
        (ours_g,) = wb.autograd.grad((ours * 2 + ours_t).sum(), [x])
        (theirs_g,) = torch.autograd.grad((theirs * 2 + theirs_t).sum(), [tx])
    np.testing.assert_allclose(ours_g.numpy(), theirs_g.numpy(), rtol=1e-12)


# ------------------------------------------------------------- nn and losses
def test_a_dual_tensor_through_nn_layers_and_losses():
    rng = np.random.default_rng(0)
    images, direction = rng.standard_normal((2, 1, 6, 6)), rng.standard_normal((2, 1, 6, 6))
    targets = np.array([1, 3])
    wb.manual_seed(0)
    ours_model = wb.nn.Sequential(
        wb.nn.Conv2d(1, 3, 3),
        wb.nn.BatchNorm2d(3),
        wb.nn.ReLU(),
        wb.nn.MaxPool2d(2),
        wb.nn.Flatten(),
        wb.nn.Linear(12, 8),
        wb.nn.LayerNorm(8),
        wb.nn.GELU(),
        wb.nn.Linear(8, 4),
    ).double()
    theirs_model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3),
        torch.nn.BatchNorm2d(3),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(12, 8),
        torch.nn.LayerNorm(8),
        torch.nn.GELU(),
        torch.nn.Linear(8, 4),
    ).double()
    theirs_model.load_state_dict(
        {k: torch.tensor(v.detach().numpy()) for k, v in ours_model.state_dict().items()}
    )
    with fw.dual_level(), tfw.dual_level():
        ours_out = ours_model(fw.make_dual(wb.tensor(images), wb.tensor(direction)))
        theirs_out = theirs_model(tfw.make_dual(torch.tensor(images), torch.tensor(direction)))
        losses = [
            (wb.nn.functional.cross_entropy, torch.nn.functional.cross_entropy, targets),
            (wb.nn.functional.mse_loss, torch.nn.functional.mse_loss, np.ones((2, 4))),
            (
                wb.nn.functional.binary_cross_entropy_with_logits,
                torch.nn.functional.binary_cross_entropy_with_logits,
                np.full((2, 4), 0.25),
            ),
        ]
        for ours_loss, theirs_loss, target in losses:
            ours = fw.unpack_dual(ours_loss(ours_out, wb.tensor(target))).tangent
            theirs = tfw.unpack_dual(theirs_loss(theirs_out, torch.tensor(target))).tangent
            np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-9)
        probabilities = ours_out.sigmoid()
        ours = fw.unpack_dual(
            wb.nn.functional.binary_cross_entropy(probabilities, wb.tensor(np.full((2, 4), 0.25)))
        ).tangent
        theirs = tfw.unpack_dual(
            torch.nn.functional.binary_cross_entropy(
                theirs_out.sigmoid(), torch.tensor(np.full((2, 4), 0.25))
            )
        ).tangent
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-9)


# ------------------------------------------------- forward over reverse: Hessians
def _hvp_ours(f, x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """H v by forward over reverse: the gradient computed inside a dual level."""
    leaf = wb.tensor(x, requires_grad=True)
    with fw.dual_level():
        (g,) = wb.autograd.grad(f(fw.make_dual(leaf, wb.tensor(v))), [leaf])
        return fw.unpack_dual(g).tangent.numpy()


HESSIAN_FUNCTIONS = {
    "softmax_entropy": (
        lambda x: -(x.softmax(0) * x.log_softmax(0)).sum(),
        lambda x: -(x.softmax(0) * x.log_softmax(0)).sum(),
    ),
    "sigmoid_product": (
        lambda x: (x.sigmoid() * x.tanh()).prod(),
        lambda x: (x.sigmoid() * x.tanh()).prod(),
    ),
    "logsumexp_of_squares": (
        lambda x: (x * x).logsumexp(0) + x.norm(),
        lambda x: (x * x).logsumexp(0) + x.norm(),
    ),
    "quadratic_form": (
        lambda x: (x @ wb.tensor(np.arange(25.0).reshape(5, 5) / 10) @ x).exp(),
        lambda x: (x @ torch.tensor(np.arange(25.0).reshape(5, 5) / 10) @ x).exp(),
    ),
}


@pytest.mark.parametrize("name", sorted(HESSIAN_FUNCTIONS))
def test_forward_over_reverse_hessian_matches_torch_func(name):
    ours_f, theirs_f = HESSIAN_FUNCTIONS[name]
    x = np.random.default_rng(3).uniform(-0.5, 0.5, 5)
    hessian = torch.func.hessian(theirs_f)(torch.tensor(x)).numpy()
    columns = [_hvp_ours(ours_f, x, unit) for unit in np.eye(5)]  # one forward pass each
    np.testing.assert_allclose(np.stack(columns, axis=1), hessian, rtol=1e-9, atol=1e-12)
    v = np.random.default_rng(4).standard_normal(5)
    _, theirs_hvp = torch.autograd.functional.hvp(theirs_f, torch.tensor(x), torch.tensor(v))
    np.testing.assert_allclose(_hvp_ours(ours_f, x, v), theirs_hvp.numpy(), rtol=1e-9, atol=1e-12)


# ----------------------------------------------- gradcheck(check_forward_ad=True)
def test_gradcheck_checks_forward_mode_as_torch_does():
    x = wb.tensor(np.random.default_rng(0).uniform(0.1, 1, (2, 3)), requires_grad=True)
    z = wb.tensor(np.array([0.3 + 0.4j, -1.2 + 0.1j]), requires_grad=True)
    assert wb.autograd.gradcheck(lambda x: x.sigmoid().cumprod(1), (x,), check_forward_ad=True)
    assert wb.autograd.gradcheck(
        lambda z: (z * z.exp()).conj() * z.abs(),
        (z,),
        check_forward_ad=True,
        check_backward_ad=False,
    )
    want = _error(
        lambda: torch.autograd.gradcheck(
            torch.sin,
            (torch.zeros(1, dtype=torch.float64, requires_grad=True),),
            check_forward_ad=False,
            check_backward_ad=False,
        )
    )
    got = _error(
        lambda: wb.autograd.gradcheck(wb.sin, (x,), check_forward_ad=False, check_backward_ad=False)
    )
    assert got == want


def test_gradcheck_catches_a_wrong_jvp_rule(monkeypatch):
    """The product rule with its second term forgotten: ẏ = ȧ · b. Reverse mode is right,
    so only the forward-mode check can fail, naming the input whose column is wrong."""
    mul = OPS["mul"]
    monkeypatch.setattr(mul, "jvp", lambda orig, tangents: tangents[0] * orig.args[1])
    a = wb.tensor([0.5, 2.0], dtype=wb.float64, requires_grad=True)
    b = wb.tensor([1.5, -1.0], dtype=wb.float64, requires_grad=True)
    assert wb.autograd.gradcheck(wb.mul, (a, b))
    with pytest.raises(
        wb.autograd.GradcheckError,
        match="Jacobian computed with forward mode mismatch for output 0 with respect to input 1",
    ):
        wb.autograd.gradcheck(wb.mul, (a, b), check_forward_ad=True)
    assert not wb.autograd.gradcheck(wb.mul, (a, b), check_forward_ad=True, raise_exception=False)


# -------------------------------------------------------------- in-place ops
def _in_place_program(F, make):
    """In-place ops on duals, on plain tensors given a dual value, and through views."""
    with F.dual_level():
        x = F.make_dual(make([1.0, 2.0, 3.0]), make([1.0, 0.5, 2.0]))
        y = x * 1.0
        y.mul_(x)
        y.add_(2.0)
        y[1:].mul_(3.0)
        y.t().sub_(x)
        copied = make([0.0, 0.0, 0.0])
        copied.copy_(y)
        written = make([1.0, 1.0, 1.0])
        written[0] = x[2]
        written[1:] = 5.0
        zeroed, clamped = x * 2, x * 2
        zeroed.zero_()
        clamped.clamp_(0, 3)
        return [F.unpack_dual(t).tangent for t in (y, copied, written, zeroed, clamped)]


def test_in_place_ops_carry_tangents_as_torch():
    ours = _in_place_program(fw, lambda v: wb.tensor(v, dtype=wb.float64))
    theirs = _in_place_program(tfw, lambda v: torch.tensor(v, dtype=torch.float64))
    for k, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), err_msg=f"tensor {k}")


# ------------------------------------------------- constants in a product rule
def _tangent_of_each(F, make, build):
    """The tangent of ``build(v, c)`` for a dual ``v`` (on the tape) and a constant ``c``."""
    x = make([0.5, float("inf"), 3.0]).requires_grad_(True)
    c = make([1.0, 2.0, float("nan")])
    with F.dual_level():
        v = F.make_dual(x, make([1.0, 1.0, 1.0]))
        return F.unpack_dual(build(v, c)).tangent


@pytest.mark.parametrize(
    "name, build",
    [
        ("v * c", lambda v, c: v * c),
        ("c * v", lambda v, c: c * v),
        ("v / c", lambda v, c: v / c),
        ("v * 0.5", lambda v, c: v * 0.5),
        ("0.5 * v", lambda v, c: 0.5 * v),
        ("v / 2", lambda v, c: v / 2),
        ("v.mul_(0.5)", lambda v, c: v.clone().mul_(0.5)),
        ("v.sub(c, alpha=2)", lambda v, c: v.sub(c, alpha=2)),
        ("v.add(v, alpha=2)", lambda v, c: v.add(v, alpha=2)),
        ("v + 1", lambda v, c: v + 1),
    ],
)
def test_a_constant_moves_by_pytorchs_zero_tensor(name, build):
    """A constant's missing tangent is PyTorch's zero tensor in the product rule: its term
    is exactly 0 (0 · ∞ is 0, not NaN: v * c with v = ∞ has a finite tangent) and is
    recorded on the tape of the other factor (``x * 0.5``'s tangent requires grad where x
    does); add's and sub's alpha has no such term."""
    ours = _tangent_of_each(fw, lambda v: wb.tensor(v, dtype=wb.float64), build)
    theirs = _tangent_of_each(tfw, lambda v: torch.tensor(v, dtype=torch.float64), build)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy(), err_msg=name)
    assert ours.requires_grad == theirs.requires_grad, name
