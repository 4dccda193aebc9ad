"""Forward mode inside forward mode, against torch.func (issue 36, point 5).

Each ``jvp`` opens a dual level of its own, as torch.func's levels: ``jvp(jvp(f))``,
``jacfwd(jacfwd(f))`` (a Hessian), forward mode mixed with reverse mode in either order,
and none of them mistakes an outer tangent for its own (perturbation confusion). A plain
``forward_ad.dual_level()`` still does not nest, as PyTorch's does not.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from tests.test_func_compose_property import _cube
from tests.test_func_forward import _close, _error
from workbench.autograd import forward_ad as fw

torch = pytest.importorskip("torch")
tf = torch.func
tfw = torch.autograd.forward_ad

RNG = np.random.default_rng(36)
X, W = RNG.uniform(-1, 1, (3,)), RNG.uniform(-1, 1, (3,))
U, V = RNG.standard_normal((3,)), RNG.standard_normal((3,))


def _in(lib, values, **kwargs):
    return lib.tensor(values, dtype=lib.float64, **kwargs)


def compare(program):
    """``program(lib, func)`` run in both libraries: the same results."""
    _close(program(wb, wb.func), program(torch, tf))


# Programs of one vector, written once for both libraries.
FUNCTIONS = {
    "cubes": lambda x: (x**3).sum(),
    "tanh_of_products": lambda x: (x * x.flip(0)).tanh().sum(),
    "softmax_log": lambda x: (x.softmax(-1) * x.exp()).sum().log(),
    "vector_valued": lambda x: x.sin() * x.sum(),
}


# ------------------------------------------------------------ forward over forward
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jvp_of_jvp_matches_torch_func(name):
    f = FUNCTIONS[name]

    def program(lib, func):
        u, v = _in(lib, U), _in(lib, V)
        inner = lambda x: func.jvp(f, (x,), (u,))[1]  # noqa: E731
        return func.jvp(inner, (_in(lib, X),), (v,))

    compare(program)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jacfwd_of_jacfwd_is_torchs_hessian(name):
    f = FUNCTIONS[name]
    ours = wb.func.jacfwd(wb.func.jacfwd(f))(_in(wb, X))
    _close(ours, tf.jacfwd(tf.jacfwd(f))(_in(torch, X)))
    _close(ours, tf.hessian(f)(_in(torch, X)))


def test_three_forward_levels_match_torch_func():
    f = FUNCTIONS["tanh_of_products"]
    compare(lambda lib, func: func.jacfwd(func.jacfwd(func.jacfwd(f)))(_in(lib, X)))


def test_jacfwd_of_jacfwd_with_two_arguments_matches_torch_func():
    def f(a, b):
        return (a * b.exp()).sum() * a.sum()

    compare(
        lambda lib, func: func.jacfwd(func.jacfwd(f, argnums=(0, 1)), argnums=(0, 1))(
            _in(lib, X), _in(lib, W)
        )
    )


# ------------------------------------------------------- forward mixed with reverse
MIXED = {
    "jvp(grad)": lambda func, f, u: lambda x: func.jvp(func.grad(f), (x,), (u,)),
    "grad(jvp)": lambda func, f, u: func.grad(lambda x: func.jvp(f, (x,), (u,))[1]),
    "jacfwd(jacrev)": lambda func, f, u: func.jacfwd(func.jacrev(f)),
    "jacrev(jacfwd)": lambda func, f, u: func.jacrev(func.jacfwd(f)),
    "jvp(hessian)": lambda func, f, u: lambda x: func.jvp(func.hessian(f), (x,), (u,)),
    "jacfwd(hessian)": lambda func, f, u: func.jacfwd(func.hessian(f)),
    "jvp(grad(jvp))": lambda func, f, u: (
        lambda x: func.jvp(func.grad(lambda y: func.jvp(f, (y,), (u,))[1]), (x,), (u.cos(),))
    ),
}


@pytest.mark.parametrize("name", sorted(MIXED))
@pytest.mark.parametrize("f_name", ["cubes", "softmax_log"])
def test_forward_mixed_with_reverse_matches_torch_func(name, f_name):
    compare(lambda lib, func: MIXED[name](func, FUNCTIONS[f_name], _in(lib, U))(_in(lib, X)))


def test_nested_forward_levels_under_and_over_vmap_match_torch_func():
    f = FUNCTIONS["tanh_of_products"]
    xs = RNG.uniform(-1, 1, (2, 3))

    def program(lib, func):
        u = _in(lib, U)
        inner = lambda x: func.jvp(f, (x,), (u,))[1]  # noqa: E731
        return {
            "vmap(jacfwd(jacfwd))": func.vmap(func.jacfwd(func.jacfwd(f)))(_in(lib, xs)),
            "jvp(vmap(jvp))": func.jvp(func.vmap(inner), (_in(lib, xs),), (_in(lib, xs).sin(),)),
            "jacfwd(vmap(jacfwd))": func.jacfwd(func.vmap(func.jacfwd(f)))(_in(lib, xs)),
        }

    ours, theirs = program(wb, wb.func), program(torch, tf)
    for key in theirs:
        _close(ours[key], theirs[key])


def test_nested_forward_levels_keep_the_outer_graph_as_torch():
    """A tensor closed over stays on the tape through both levels: backward through a
    Hessian made by forward over forward fills its ``.grad`` as PyTorch does."""

    def run(lib, func):
        w = _in(lib, W, requires_grad=True)
        h = func.jacfwd(func.jacfwd(lambda x: (w * x.sin() * x).sum()))(_in(lib, X))
        (h * h).sum().backward()
        return h, w.grad

    _close(run(wb, wb.func), run(torch, tf))


# ---------------------------------------------------------- perturbation confusion
def test_no_perturbation_confusion_between_levels():
    """d/dx [x · d/dy (x + y)] = d/dx [x · 1] = 1 at any x; a forward mode that lets
    the inner level see the outer tangent of x answers 2."""

    def program(lib, func):
        one = _in(lib, 1.0)

        def outer(x):
            return x * func.jvp(lambda y: x + y, (one,), (one,))[1]

        return func.jvp(outer, (one,), (one,))[1], func.jacfwd(outer)(_in(lib, 3.0))

    ours = program(wb, wb.func)
    _close(ours, program(torch, tf))
    assert [float(t) for t in ours] == [1.0, 1.0]


def test_an_inner_level_reads_an_outer_tangent_as_a_value():
    """d/dx [d/dy (x · y)] = d/dx [x] = 1: the inner derivative is x, itself a dual of
    the outer level, whose tangent the outer jvp then reads."""

    def program(lib, func):
        def outer(x):
            return func.jvp(lambda y: x * y, (_in(lib, 2.0),), (_in(lib, 1.0),))[1]

        return func.jvp(outer, (_in(lib, 5.0),), (_in(lib, 1.0),))

    ours = program(wb, wb.func)
    _close(ours, program(torch, tf))
    assert [float(t) for t in ours] == [5.0, 1.0]


# ---------------------------------------------------------- custom Functions
def test_a_functions_jvp_is_first_order_in_forward_over_forward_as_torch():
    """PyTorch runs a custom Function's ``jvp`` with forward mode off: the tangent it
    gives carries no outer tangent, so the second derivative through it is 0."""

    def program(lib, func):
        f = lambda x: _cube(lib).apply(x.sin()).sum()  # noqa: E731
        return func.jacfwd(func.jacfwd(f))(_in(lib, X)), func.jacfwd(f)(_in(lib, X))

    compare(program)


# ------------------------------------------------------ refused as PyTorch refuses
def _jvp_inside_a_dual_level(lib, func, forward_ad):
    with forward_ad.dual_level():
        return func.jvp(lambda x: x * x, (_in(lib, X),), (_in(lib, U),))


def _a_dual_level_inside_jvp(lib, func, forward_ad):
    def f(x):
        with forward_ad.dual_level():
            return x * x

    return func.jvp(f, (_in(lib, X),), (_in(lib, U),))


def _a_dual_level_inside_a_dual_level(lib, func, forward_ad):
    with forward_ad.dual_level(), forward_ad.dual_level():
        pass


@pytest.mark.parametrize(
    "program",
    [_jvp_inside_a_dual_level, _a_dual_level_inside_jvp, _a_dual_level_inside_a_dual_level],
)
def test_plain_dual_levels_still_do_not_nest_as_torch(program):
    ours = _error(lambda: program(wb, wb.func, fw))
    assert ours == _error(lambda: program(torch, tf, tfw))
    assert ours[0] is RuntimeError and "Nested forward mode AD is not supported" in ours[1]
    assert not fw.LEVELS  # the refusal left no level open
    with fw.dual_level() as level:
        assert level == 0


def test_a_tangent_lives_at_its_own_level_only():
    """Inside two jvps the inner level's ``unpack_dual`` sees the inner tangent, and the
    primal it hands back still carries the outer one; at the end of each level its
    tangents are gone."""
    seen = {}

    def inner(y):
        seen["inner"] = fw.unpack_dual(y)
        return y * 2

    def outer(x):
        seen["outer before"] = fw.unpack_dual(x)
        out = wb.func.jvp(inner, (x,), (wb.ones_like(x) * 10,))[1]
        seen["outer after"] = fw.unpack_dual(x)
        return out

    x = _in(wb, [1.0, 2.0])
    wb.func.jvp(outer, (x,), (wb.ones_like(x),))
    primal, tangent = seen["inner"]
    np.testing.assert_array_equal(tangent.numpy(), [10.0, 10.0])
    assert seen["outer before"].tangent is not None and seen["outer after"].tangent is not None
    assert not fw.LEVELS and fw.unpack_dual(primal).tangent is None
