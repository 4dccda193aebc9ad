"""Conformance with PyTorch, REFERENCE D9–D10: no_grad, enable_grad, set_grad_enabled and
inference_mode, as context managers, decorators, in generators and in threads."""

from __future__ import annotations

import threading

import pytest

import workbench as wb


def T(data, requires_grad=False):
    return wb.tensor(data, dtype=wb.float64, requires_grad=requires_grad)


def values(t) -> list:
    return t.detach().numpy().tolist()


def in_thread(fn):
    """Run ``fn`` in a new thread and return its result."""
    result = []
    worker = threading.Thread(target=lambda: result.append(fn()))
    worker.start()
    worker.join()
    return result[0]


# ------------------------------------------------------------------ D9 grad modes
def test_d9_62_no_grad_records_nothing():
    """test_no_grad"""
    x = T([1.0], requires_grad=True)
    with wb.no_grad():
        assert wb.is_grad_enabled() is False
        y = x * 2
    assert wb.is_grad_enabled() is True
    assert y.requires_grad is False and y.grad_fn is None


def test_d9_63_no_grad_decorates_with_or_without_parentheses():
    """test_no_grad, test_enable_grad_decorator_no_paren"""
    x = T([1.0], requires_grad=True)

    @wb.no_grad()
    def with_parens(t):
        return t * 2

    @wb.no_grad
    def without_parens(t):
        return t * 2

    for fn in (with_parens, without_parens, wb.no_grad()(lambda t: t * 2)):
        assert fn(x).requires_grad is False
    assert wb.no_grad(lambda t: t * 2)(x).requires_grad is False
    assert with_parens.__name__ == "with_parens"


def test_d9_64_enable_grad_inside_no_grad():
    x = T([1.0], requires_grad=True)
    with wb.no_grad():
        with wb.enable_grad():
            y = x * 2
    assert y.requires_grad is True

    @wb.enable_grad
    def double(t):
        return t * 2

    with wb.no_grad():
        assert double(x).requires_grad is True
        assert wb.is_grad_enabled() is False


def test_d9_65_set_grad_enabled_call_context_and_decorator():
    """test_set_grad_enabled, test_set_grad_enabled_wraps"""
    x = T([1.0], requires_grad=True)
    wb.set_grad_enabled(False)
    assert (x * 2).requires_grad is False
    wb.set_grad_enabled(True)
    with wb.set_grad_enabled(False):
        assert wb.is_grad_enabled() is False
    assert wb.is_grad_enabled() is True

    @wb.set_grad_enabled(False)
    def double(t):
        return t * 2

    assert wb.is_grad_enabled() is True  # decorating changes nothing for the caller
    assert double(x).requires_grad is False
    assert wb.is_grad_enabled() is True


def test_d9_66_set_grad_enabled_needs_a_bool():
    with pytest.raises(TypeError):
        wb.set_grad_enabled("yes")
    assert wb.is_grad_enabled() is True


def test_d9_67_grad_mode_is_thread_local():
    with wb.no_grad():
        assert in_thread(wb.is_grad_enabled) is True

    def disable_here():
        wb.set_grad_enabled(False)
        return wb.is_grad_enabled()

    assert in_thread(disable_here) is False
    assert wb.is_grad_enabled() is True


def test_d9_68_an_exception_restores_the_outer_mode():
    with wb.no_grad():
        with pytest.raises(ValueError):
            with wb.enable_grad():
                raise ValueError("boom")
        assert wb.is_grad_enabled() is False
    assert wb.is_grad_enabled() is True


def test_d9_69_decorated_generators_switch_modes_step_by_step():
    """test_set_grad_generator_functions"""

    @wb.no_grad()
    def inside():
        for _ in range(3):
            yield wb.is_grad_enabled()

    seen_between = []
    seen_inside = []
    for flag in inside():
        seen_inside.append(flag)
        seen_between.append(wb.is_grad_enabled())
    assert seen_inside == [False, False, False]
    assert seen_between == [True, True, True]

    @wb.enable_grad()
    def enabling():
        yield wb.is_grad_enabled()
        received = yield wb.is_grad_enabled()
        yield received

    with wb.no_grad():
        gen = enabling()
        assert next(gen) is True
        assert wb.is_grad_enabled() is False
        next(gen)
        assert gen.send("hello") == "hello"


def test_d9_70_factories_given_requires_grad_make_leaves_even_in_no_grad():
    with wb.no_grad():
        made = [
            wb.ones(2, requires_grad=True),
            wb.zeros(2, requires_grad=True),
            wb.tensor([1.0], requires_grad=True),
            wb.randn(2, requires_grad=True),
        ]
    for a in made:
        assert a.requires_grad is True and a.is_leaf is True


def test_d9_71_in_place_on_a_leaf_is_allowed_under_no_grad():
    """test_no_grad_assignment"""
    x = T([1.0, 2.0], requires_grad=True)
    with wb.no_grad():
        x.mul_(2)
    assert x.requires_grad and x.grad_fn is None
    (x * x).sum().backward()
    assert values(x.grad) == [4.0, 8.0]


def test_d9_72_in_place_under_no_grad_still_bumps_the_version():
    """test_no_grad_modifies_version"""
    x = T([1.0, 2.0], requires_grad=True)
    y = T([3.0, 4.0], requires_grad=True)
    z = (x * y).sum()
    with wb.no_grad():
        x *= 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_d9_73_backward_inside_no_grad_still_computes_gradients():
    x = T([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with wb.no_grad():
        y.backward()
    assert values(x.grad) == [2.0, 4.0]


def test_d9_74_custom_functions_record_nothing_under_no_grad():
    """test_no_grad_python_function"""

    class Double(wb.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = T([1.0], requires_grad=True)
    with wb.no_grad():
        y = Double.apply(x)
    assert y.grad_fn is None and y.requires_grad is False


# ------------------------------------------------------------- D10 inference_mode
def test_d10_75_inference_mode_makes_inference_tensors():
    """test_inference_mode_context_manager"""
    x = T([1.0], requires_grad=True)
    with wb.inference_mode():
        assert wb.is_inference_mode_enabled() and not wb.is_grad_enabled()
        y = x * 2
        with wb.inference_mode(False):
            assert not wb.is_inference_mode_enabled() and wb.is_grad_enabled()
            z = x * 2
    assert not wb.is_inference_mode_enabled() and wb.is_grad_enabled()
    assert y.requires_grad is False and y.is_inference()
    assert z.requires_grad is True and not z.is_inference()


def test_d10_76_inference_mode_decorator_forms():
    """test_inference_mode_decorator"""
    x = T([1.0], requires_grad=True)

    @wb.inference_mode()
    def with_parens(t):
        return t * 2

    @wb.inference_mode
    def without_parens(t):
        return t * 2

    def plain(t):
        return t * 2

    assert with_parens(x).is_inference() and without_parens(x).is_inference()
    off = wb.inference_mode(mode=False)(plain)(x)
    assert not off.is_inference() and off.requires_grad


def test_d10_77_inference_tensors_cannot_be_saved_for_backward():
    """test_mix_inference_and_normal_tensor_functional_op"""
    x = T([1.0, 2.0], requires_grad=True)
    with wb.inference_mode():
        c = T([3.0, 4.0])
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        x * c
    out = x + c  # add saves nothing: allowed
    out.sum().backward()
    assert values(x.grad) == [1.0, 1.0]


def test_d10_78_inference_tensors_outside_the_mode():
    with wb.inference_mode():
        c = T([1.0, 2.0])
    with pytest.raises(
        RuntimeError,
        match="Inplace update to inference tensor outside InferenceMode is not allowed",
    ):
        c.add_(1)
    with pytest.raises(
        RuntimeError,
        match="Setting requires_grad=True on inference tensor outside InferenceMode is not "
        "allowed.",
    ):
        c.requires_grad_()
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter."):
        c._version  # noqa: B018


def test_d10_79_no_grad_tensors_are_not_inference_tensors():
    with wb.no_grad():
        y = T([1.0]) * 2
    assert not y.is_inference()
    assert y._version == 0


# ---------------------------------------------- modes as PyTorch keeps them (issue 24)
def _recording_inside_inference_mode(lib) -> list:
    """What records a graph inside inference_mode: nothing that turns grad mode on."""
    a = lib.ones(2, requires_grad=True)
    seen = []

    @lib.enable_grad()
    def decorated(t):
        return t * 4

    with lib.inference_mode():
        with lib.enable_grad():
            seen.append((lib.is_grad_enabled(), (a * 2).requires_grad, (a * 2).is_inference()))
        with lib.set_grad_enabled(True):
            seen.append((lib.is_grad_enabled(), (a * 3).requires_grad))
        seen.append(decorated(a).requires_grad)
        with lib.inference_mode(False):
            seen.append(((a * 5).requires_grad, lib.is_inference_mode_enabled()))
    return seen


def test_inference_mode_wins_over_enable_grad_as_in_torch():
    torch = pytest.importorskip("torch")
    ours = _recording_inside_inference_mode(wb)
    assert ours == _recording_inside_inference_mode(torch)
    assert ours[0] == (True, False, True)


def _grad_mode_after_a_hook_turns_it_off(lib, where: str) -> tuple:
    """A hook calls set_grad_enabled(False) in a create_graph=True pass: the later nodes
    still run with grad mode on (each node's mode is the pass's), and so does the caller."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    mid = (x * x).sin()

    def turn_off(*args):
        lib.set_grad_enabled(False)

    if where == "tensor hook":
        mid.register_hook(turn_off)
    elif where == "node pre-hook":
        mid.grad_fn.register_prehook(turn_off)
    else:
        mid.grad_fn.register_hook(turn_off)
    (g,) = lib.autograd.grad((mid * 3).sum(), x, create_graph=True)
    after = lib.is_grad_enabled()
    lib.set_grad_enabled(True)
    return g.requires_grad, after


@pytest.mark.parametrize("where", ["tensor hook", "node pre-hook", "node post-hook"])
def test_a_hook_turning_grad_mode_off_does_not_leak_into_later_nodes(where):
    torch = pytest.importorskip("torch")
    ours = _grad_mode_after_a_hook_turns_it_off(wb, where)
    assert ours == _grad_mode_after_a_hook_turns_it_off(torch, where) == (True, True)


FACTORIES = {
    "tensor": lambda m: m.tensor([1.0]),
    "as_tensor": lambda m: m.as_tensor([1.0]),
    "zeros": lambda m: m.zeros(2),
    "full": lambda m: m.full((2,), 1.0),
    "arange": lambda m: m.arange(3),
    "linspace": lambda m: m.linspace(0, 1, 3),
    "eye": lambda m: m.eye(2),
    "zeros_like": lambda m: m.zeros_like(m.ones(2)),
    "rand": lambda m: m.rand(2),
    "randn_like": lambda m: m.randn_like(m.ones(2)),
}


@pytest.mark.parametrize("name", FACTORIES)
def test_factories_make_inference_tensors_in_inference_mode_as_torch(name):
    """A tensor made by a factory inside ``inference_mode`` is an inference tensor, as
    one made by an op is (the factories once made ordinary ones)."""
    torch = pytest.importorskip("torch")
    for m in (wb, torch):
        with m.inference_mode():
            made = FACTORIES[name](m)
        assert made.is_inference(), f"{m.__name__}.{name}"
        assert not FACTORIES[name](m).is_inference(), f"{m.__name__}.{name} outside"
