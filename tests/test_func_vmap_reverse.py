"""Reverse mode through ``wb.func.vmap``, against ``torch.func`` 2.13 (issue 36, point 5;
shared/REFERENCE.md D23).

A batched tensor has two histories, as torch.func's levels give it: its own, for the
grad transforms opened inside the vmap, and the batch's, for those outside it and for
an ordinary ``backward()``. Each program runs with both libraries (``compare``, from
tests/test_func_compose.py): values, gradients and ``requires_grad`` flags must agree.
The custom Function and the in-place steps are the composition property test's.
"""

from __future__ import annotations

import numpy as np
import torch
from test_func_compose import check_same, compare, run_both
from test_func_compose_property import _cube, _in_place

import workbench as wb

XS = np.array([[0.3, -1.2, 0.8], [1.1, 0.4, -0.6]])
W = np.array([0.5, -1.5, 2.0])


def test_grad_of_a_vmap():
    def program(lib, func):
        f = lambda v: (v.sin() * v).sum()  # noqa: E731
        return {"grad": func.grad(lambda x: func.vmap(f)(x).sum())(lib.tensor(XS))}

    compare(program)


def test_backward_through_a_vmap_output_fills_the_inputs_and_the_parameters():
    def program(lib, func):
        x = lib.tensor(XS.T.copy(), requires_grad=True)
        w = lib.tensor(W, requires_grad=True)
        out = func.vmap(lambda v: (v.tanh() * w).sum(), in_dims=1)(x)
        (out**2).sum().backward()
        return {"out": out, "x.grad": x.grad, "w.grad": w.grad}

    compare(program)


def test_jacrev_of_a_vmap():
    def program(lib, func):
        f = func.vmap(lambda v: v.exp() * v.sum())
        return {"jacobian": func.jacrev(f)(lib.tensor(XS))}

    compare(program)


def test_per_example_gradients_then_backward_fill_the_parameters():
    """The per-example gradients of a parameter that requires grad are on its tape: a
    penalty on them fills ``w.grad`` (inner and outer gradients meet)."""

    def program(lib, func):
        w = lib.tensor(W, requires_grad=True)
        loss = lambda w, x: ((x * w).tanh() ** 2).sum()  # noqa: E731
        grads = func.vmap(func.grad(loss), in_dims=(None, 0))(w, lib.tensor(XS))
        (grads**2).sum().backward()
        return {"grads": grads, "w.grad": w.grad}

    compare(program)


def test_a_grad_inside_a_vmap_inside_a_grad_with_a_parameter_closed_over():
    def program(lib, func):
        w = lib.tensor(W, requires_grad=True)
        inner = lambda v: (v.tanh() * w).sum()  # noqa: E731
        g = func.grad(lambda x: func.vmap(func.grad(inner))(x).sum())(lib.tensor(XS))
        g.sum().backward()
        return {"g": g, "w.grad": w.grad}

    compare(program)


def test_per_example_gradients_through_a_parameter_closed_over_then_backward():
    """``w`` is closed over, not watched: the batched calls that read it have no edge to
    it on the vmap's tape, yet the gradients depend on it for the tape outside, so the
    inner backward pass must be recorded there (``batching.mark_seen_outside``)."""

    def program(lib, func):
        w = lib.tensor(2.5, requires_grad=True)
        grads = func.vmap(func.grad(lambda x: x.sin() * w))(lib.tensor(W))
        (grads**2).sum().backward()
        return {"grads": grads, "w.grad": w.grad}

    compare(program)


def test_grad_of_per_example_gradients_of_a_custom_function():
    """The Function's node is all the inner grad sees of the batch's outer history: its
    gradient is recorded for the outer grad (6x, not 0)."""

    def program(lib, func):
        cube = _cube(lib)
        inner = func.vmap(func.grad(cube.apply))
        return {"grad": func.grad(lambda xs: inner(xs).sum())(lib.tensor(W))}

    compare(program)


def test_an_argument_not_batched_watched_inside_the_vmap_leaves_no_history():
    """A grad opened inside the vmap watches ``w``, given unbatched: its leaf is an input
    of the rules' ops, but outside the vmap it is no tensor at all."""

    def program(lib, func):
        loss = lambda w, x: (x * w).sin().sum()  # noqa: E731
        return {
            "grads": func.vmap(func.grad(loss), in_dims=(None, 0))(lib.tensor(W), lib.tensor(XS))
        }

    compare(program)


def test_vjp_of_a_vmap_of_a_custom_function_runs_its_backward_per_example():
    """Property seed 773: the Function's backward, under a fresh vmap, on the outer tape."""

    def program(lib, func):
        f = func.vmap(lambda v: _cube(lib).apply(v).tanh())
        out, vjp_fn = func.vjp(f, lib.tensor(XS))
        return {"out": out, "vjp": vjp_fn(lib.ones_like(out) * 0.5)[0]}

    compare(program)


def test_forward_over_reverse_through_a_custom_function_under_vmap():
    """The batches of the Function's outputs carry the tangents its jvp gave them."""

    def program(lib, func):
        cube = _cube(lib)
        h = lambda x: func.vmap(lambda v: cube.apply(v) * v)(x).sum()  # noqa: E731
        x = lib.tensor(XS)
        return {"jvp": func.jvp(func.grad(h), (x,), (lib.ones_like(x),))[1]}

    compare(program)


def test_forward_over_reverse_through_a_custom_function_under_nested_vmaps():
    """Property seed 7109: the batch of a batch carries the tangents too."""

    def program(lib, func):
        cube = _cube(lib)
        h = lambda x: func.vmap(func.vmap(lambda v: cube.apply(v) * v))(x).sum()  # noqa: E731
        x = lib.tensor(np.stack([XS, XS[::-1] * 0.5]))
        return {"jvp": func.jvp(func.grad(h), (x,), (lib.ones_like(x),))[1]}

    compare(program)


def test_forward_over_reverse_through_a_function_jvp_with_a_tangent_batched_inside():
    """Property seed 9570: jacfwd inside vmap batches the Function's tangent at an inner
    vmap; the rule's reshape of the primal keeps its tangents, though the Function's jvp
    runs with forward mode off."""

    def program(lib, func):
        cube = _cube(lib)
        eye = lib.eye(3, dtype=lib.float64)
        per_example = lambda v: func.vmap(lambda t: func.jvp(cube.apply, (v,), (t,))[1])(eye)  # noqa: E731
        h = lambda x: func.vmap(per_example)(x).sum()  # noqa: E731
        x = lib.tensor(XS)
        return {"jvp": func.jvp(func.grad(h), (x,), (lib.ones_like(x),))[1]}

    compare(program)


def test_in_place_ops_and_views_under_vmap_are_on_the_outer_tape():
    """Property seed 766's kind: an in-place write into the batch is an in-place copy on
    the batch's tape; through a view, the base's batch gets the new history."""

    def program(lib, func):
        w = lib.tensor(W, requires_grad=True)
        x = lib.tensor(XS, requires_grad=True)
        f = func.vmap(lambda v: _in_place(v, w).exp().sum())
        hess = func.hessian(lambda x: f(x).sum())(x)
        hess.sum().backward()
        return {"hessian": hess, "x.grad": x.grad, "w.grad": w.grad}

    compare(program)


def test_in_place_under_nested_vmaps_under_vjp():
    """Property seed 103: the batch of a batch is on the tape of its own outer levels."""

    def program(lib, func):
        w = lib.tensor(W)
        f = func.vmap(func.vmap(lambda v: _in_place(v, w), in_dims=1), in_dims=1)
        xs = lib.tensor(np.stack([XS.T, XS.T[::-1]], axis=1))
        out, vjp_fn = func.vjp(f, xs)
        return {"out": out, "vjp": vjp_fn(lib.ones_like(out))[0]}

    compare(program)


def test_detach_under_vmap_ends_the_outer_tape_too():
    def program(lib, func):
        x = lib.tensor(XS, requires_grad=True)
        out = func.vmap(lambda v: v.detach() * v)(x)
        out.sum().backward()
        return {"out": out, "x.grad": x.grad}

    ours, theirs = run_both(program)
    np.testing.assert_allclose(theirs["x.grad"].numpy(), XS)  # one path, not two
    check_same(ours, theirs)


def test_a_vmap_of_tensors_without_history_hands_back_none():
    x = wb.tensor(XS)
    out = wb.func.vmap(wb.func.grad(lambda v: (v * v).sum()))(x)
    assert not out.requires_grad
    assert not torch.func.vmap(torch.func.grad(lambda v: (v * v).sum()))(
        torch.tensor(XS)
    ).requires_grad
