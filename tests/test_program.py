"""wb.program: traced programs, the Gradient transform, the passes and the runner agree
with eager on every registry sample; printing is readable; refusals name the line."""

from __future__ import annotations

import zlib

import fuzz_programs
import numpy as np
import pytest
from hypothesis import given, settings

import workbench as wb
from tests.samples import all_samples
from tests.samples.complex_numbers import COMPLEX_NAMES, complex_variant
from workbench.ops.markers import end_checkpoint, start_checkpoint
from workbench.program import (
    TraceError,
    eliminate_common_subexpressions,
    eliminate_dead_code,
    gradient,
    min_cut_partition,
    trace,
)

_REAL = all_samples()
_BY_NAME = {s.name: s for s in _REAL}
SAMPLES = _REAL + [complex_variant(_BY_NAME[name]) for name in COMPLEX_NAMES]

# The samples a program refuses, and why. Anything else must trace, run and differentiate.
REFUSED = {
    # dropout draws its mask from the random generator: a program would replay one mask
    # at every run, so tracing refuses random draws (a learner passes the mask in instead)
    "dropout:seeded": "random numbers",
}


def _inputs(sample, other: bool = False) -> list:
    """The sample's inputs; ``other``: fresh values of the same shapes where the sample
    draws them, so a program that baked the example's values in would be caught."""
    arrays = sample.arrays()
    if other:
        rng = np.random.default_rng(zlib.crc32(sample.name.encode()) + 1)
        arrays = [
            rng.uniform(sample.low, sample.high, size=spec).astype(a.dtype)
            if isinstance(spec, tuple) and isinstance(a, np.ndarray)
            else a
            for spec, a in zip(sample.inputs, arrays)
        ]
    return [
        wb.tensor(a, requires_grad=r) if isinstance(a, np.ndarray) else a
        for a, r in zip(arrays, sample.requires())
    ]


def _same(eager: wb.Tensor, ours: wb.Tensor) -> None:
    assert ours.dtype == eager.dtype and ours.shape == eager.shape
    np.testing.assert_allclose(ours.numpy(), eager.detach().numpy(), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_every_sample_traces_runs_and_differentiates_as_eager(sample):
    if sample.name in REFUSED:
        with pytest.raises(TraceError, match=REFUSED[sample.name]):
            trace(sample.fn, *_inputs(sample))
        return
    program = trace(sample.fn, *_inputs(sample))
    inputs = _inputs(sample, other=True)
    tensors = [x for x in inputs if isinstance(x, wb.Tensor)]
    eager = sample.fn(*inputs)
    eager_outs = list(eager) if isinstance(eager, (tuple, list)) else [eager]
    got = program.run(*tensors)
    for e, o in zip(eager_outs, got if isinstance(got, tuple) else [got]):
        _same(e, o)
    wanted = [x for x in tensors if x.requires_grad]
    differentiable = [o for o in eager_outs if o.requires_grad]
    if not wanted or not differentiable:
        return
    adjoint = gradient(program)
    ours = adjoint.run(*tensors)[adjoint.forward_outputs :]
    ones = [wb.ones_like(o) for o in differentiable]
    theirs = wb.autograd.grad(differentiable, wanted, grad_outputs=ones, allow_unused=True)
    for e, o in zip(theirs, ours):
        if e is None:
            assert o is None
        else:
            _same(e, o)


# --------------------------------------------------------------- printing
def _mlp(x, w1, b1, w2, t):
    h = (x @ w1 + b1).relu()
    h.name = "h"
    loss = ((h @ w2 - t) ** 2).mean()
    loss.name = "loss"
    return loss


def _mlp_inputs():
    wb.manual_seed(0)
    return (
        wb.randn(4, 3),
        wb.randn(3, 5, requires_grad=True),
        wb.randn(5, requires_grad=True),
        wb.randn(5, 2, requires_grad=True),
        wb.randn(4, 2),
    )


def test_the_program_of_a_small_mlp_prints_as_a_dataflow_block():
    text = str(trace(_mlp, *_mlp_inputs()))
    lines = [line.strip() for line in text.splitlines()]
    assert lines[0] == (
        "program _mlp(%x: (4, 3) float32, %w1: (3, 5) float32, %b1: (5,) float32, "
        "%w2: (5, 2) float32, %t: (4, 2) float32) {"
    )
    assert "%0 = matmul(%x, %w1)  # shape (4, 5) float32" in lines
    assert "%h = relu(%1)  # shape (4, 5) float32" in lines
    assert "%loss = mean(%4, dims=None, keepdim=False)  # shape () float32" in lines
    assert lines[-2:] == ["return %loss", "}"]
    assert str(trace(_mlp, *_mlp_inputs())) == text  # stable


def test_the_adjoint_of_a_small_mlp_reads_like_hand_written_backward_code():
    adjoint = eliminate_dead_code(gradient(trace(_mlp, *_mlp_inputs())))
    lines = [line.strip() for line in str(adjoint).splitlines()]
    assert lines[0].endswith("%t: (4, 2) float32, %loss_bar: () float32) {")
    assert "# ---- backward ----" in lines
    assert any(
        line.startswith("%w2_bar = matmul(") and line.endswith("# matmul_grad") for line in lines
    )
    assert any(line.startswith("%h_bar = matmul(%3_bar, ") for line in lines)
    assert any("# matmul_grad: Ā = Ȳ @ Bᵀ, B̄ = Aᵀ @ Ȳ" in line for line in lines)
    assert any(
        line.startswith("%b1_bar = collapse_sum_like(%1_bar, shape=(5,))") and "add_grad" in line
        for line in lines
    )
    assert any(line.startswith("%1_bar = relu_backward(%h_bar, %h)") for line in lines)
    assert lines[-2] == "return %loss, %w1_bar, %b1_bar, %w2_bar"
    x, w1, b1, w2, t = _mlp_inputs()
    _mlp(x, w1, b1, w2, t).backward()
    outs = adjoint.run(x, w1, b1, w2, t)  # ȳ left out: 1, as for a loss
    for param, grad in zip((w1, b1, w2), outs[1:]):
        _same(param.grad, grad)


def test_a_name_a_learner_chose_is_text_and_cannot_inject_code():
    def f(x):
        y = x * 2
        y.name = 'x); import os; os.system("echo hacked'
        return y + 1

    x = wb.tensor([1.0, 2.0])
    program = trace(f, x)
    assert '%"x); import os; os.system(\\"echo hacked" = mul(%x, 2)' in str(program)
    assert program.run(x).tolist() == [3.0, 5.0]


# ------------------------------------------------------------------ passes
def test_dead_code_elimination_drops_what_nothing_reads():
    def f(x):
        unused = (x.exp() * 3).sum()  # noqa: F841  (dead on purpose)
        return x.sin()

    program = trace(f, wb.ones(3))
    assert [b.op.name for b in program.bindings] == ["exp", "mul", "sum", "sin"]
    pruned = eliminate_dead_code(program)
    assert [b.op.name for b in pruned.bindings] == ["sin"]
    _same(program.run(wb.ones(3)), pruned.run(wb.ones(3)))


def test_common_subexpression_elimination_merges_repeated_bindings():
    def f(x):
        return x.tanh() * 2 + x.tanh() * 2 + x.tanh() * 2.0000001

    x = wb.tensor([0.5, -1.0])
    program = trace(f, x)
    merged = eliminate_dead_code(eliminate_common_subexpressions(program))
    assert [b.op.name for b in program.bindings].count("tanh") == 3
    assert [b.op.name for b in merged.bindings] == ["tanh", "mul", "add", "mul", "add"]
    _same(program.run(x), merged.run(x))


def test_the_adjoint_of_a_repeated_use_sums_both_contributions():
    program = trace(lambda x: x * x, wb.tensor([3.0], requires_grad=True))
    adjoint = gradient(program)
    assert "x̄ = x̄₁ + x̄₂" in str(adjoint)
    assert adjoint.run(wb.tensor([3.0]))[1].tolist() == [6.0]


# ----------------------------------------------------------- checkpoints
def _stage(x, w):
    h = start_checkpoint(x @ w)
    e = end_checkpoint(h.tanh().tanh().tanh())
    return (e * e).sum()


def _plain(x, w):
    e = (x @ w).tanh().tanh().tanh()
    return (e * e).sum()


def test_checkpoint_markers_become_recomputation_with_a_lower_peak():
    x, w = wb.randn(8, 16), wb.randn(16, 16, requires_grad=True)
    staged = eliminate_dead_code(gradient(trace(_stage, x, w)))
    plain = eliminate_dead_code(gradient(trace(_plain, x, w)))
    backward = [b for b in staged.bindings[staged.forward_count :]]
    assert [b.out.name for b in backward if b.recomputed] == ["2_re", "3_re"]
    assert "%2_re = tanh(%1)" in str(staged) and "# recomputed (checkpoint)" in str(staged)
    assert staged.peak_memory() < plain.peak_memory()
    _same(plain.run(x, w)[1], staged.run(x, w)[1])
    # CSE never merges a recomputation into the forward value it stands for
    merged = eliminate_common_subexpressions(staged)
    assert sum(b.recomputed for b in merged.bindings) == 2
    assert merged.peak_memory() < plain.peak_memory()


# -------------------------------------------------------------- refusals
def test_data_dependent_control_flow_is_refused_naming_the_line():
    def f(x):
        y = x.sum()
        if y > 0:  # the line the error names
            return x * 2
        return x

    with pytest.raises(TraceError, match=r"test_program\.py, line \d+: if y > 0:"):
        trace(f, wb.ones(3))
    for read in (lambda y: float(y.sum()), lambda y: y.sum().item(), lambda y: y.numpy()):
        with pytest.raises(TraceError, match="data-dependent"):
            trace(read, wb.ones(3))


def test_in_place_writes_and_escaped_values_are_refused():
    with pytest.raises(TraceError, match="in-place write.*builds a graph"):
        trace(lambda x: (x * 1).mul_(2), wb.ones(3, requires_grad=True))
    with pytest.raises(TraceError, match="in-place write.*argument %x"):
        trace(lambda x: x.mul_(2), wb.ones(3))
    with pytest.raises(TraceError, match="detach"):
        trace(lambda x: (x * 2).detach() + 1, wb.ones(3))
    with pytest.raises(TraceError, match="detach"):  # histogram reads the values, detached
        trace(lambda x: wb.histogram(x * 2, bins=3)[0] + x.sum(), wb.ones(3))
    with pytest.raises(TraceError, match="detach"):  # the shared memory, wrapped again
        trace(lambda x: wb.Tensor._make((x * 2)._data[:1]) + 1, wb.ones(3))


# ----------------------------------------------------------------- compile
def test_compile_runs_the_program_and_backward_through_the_adjoint():
    wb.manual_seed(0)
    model = wb.nn.Sequential(wb.nn.Linear(6, 5), wb.nn.Tanh(), wb.nn.Linear(5, 3))
    compiled = wb.compile(model)
    x = wb.randn(4, 6)
    out = compiled(x)
    assert out.grad_fn.name() == "CompiledFunctionBackward"  # one node: the compiled backward
    loss = out.pow(2).sum()
    loss.backward()
    ours = [p.grad for p in model.parameters()]
    for p in model.parameters():
        p.grad = None
    model(x).pow(2).sum().backward()
    for grad, p in zip(ours, model.parameters()):
        _same(p.grad, grad)
    compiled(wb.randn(4, 6))
    compiled(wb.randn(2, 6))  # a new signature: traced again
    assert len(compiled.cache) == 2
    with wb.no_grad():
        assert compiled(x).grad_fn is None


def _branchy(x):
    if x.sum() > 0:
        return x * 2
    return x * 3


def test_compile_falls_back_to_eager_with_one_note(capsys):
    compiled = wb.compile(_branchy)
    x = wb.tensor([1.0, 2.0])
    assert compiled(x).tolist() == [2.0, 4.0]
    assert compiled(-x).tolist() == [-3.0, -6.0]
    printed = capsys.readouterr().out
    assert printed.count("wb.compile: _branchy runs eagerly") == 1
    assert "if x.sum() > 0:" in printed


def test_compile_fullgraph_makes_the_refusal_an_error():
    with pytest.raises(TraceError, match="if x.sum"):
        wb.compile(_branchy, fullgraph=True)(wb.tensor([1.0]))


def test_a_no_grad_block_inside_the_function_stops_the_gradient_as_in_eager():
    def f(x):
        with wb.no_grad():
            scale = x.abs().sum()
        return x * scale

    x = wb.tensor([1.0, -2.0], requires_grad=True)
    program = trace(f, x)
    assert "no_grad: the gradient stops here" in str(program)
    assert "no_grad" not in str(trace(lambda x: (x > 0) * x, x))  # a comparison: no gradient
    f(x).sum().backward()
    _same(x.grad, gradient(program).run(x, wb.ones(2))[1])


def test_backward_code_the_transform_cannot_see_is_refused():
    class Double(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad  # not the derivative: the program's rules would disagree

    with pytest.raises(TraceError, match="custom Function Double"):
        trace(lambda x: Double.apply(x), wb.ones(2, requires_grad=True))
    with pytest.raises(TraceError, match="register_hook"):
        trace(lambda x: (x * 2).register_hook(lambda g: g), wb.ones(2, requires_grad=True))


def test_a_compiled_function_inside_a_trace_is_traced_inline():
    inner = wb.compile(lambda x: x.exp())
    program = trace(lambda x: inner(x) + 1, wb.ones(2))
    assert [b.op.name for b in program.bindings] == ["exp", "add"]


def test_peak_memory_follows_the_schedule_it_is_given():
    def f(x):
        a = x.exp()  # 8 x 1000 float32: 32,000 bytes each
        b = x.sin()
        return a.sum() + b.sum()

    program = trace(f, wb.ones(8, 1000))
    exp_, sin_, sum_a, sum_b, add = program.bindings
    assert program.peak_memory() == 3 * 32_000  # x, exp(x) and sin(x) alive at once
    assert program.peak_memory([exp_, sum_a, sin_, sum_b, add]) == 2 * 32_000 + 4
    with pytest.raises(ValueError, match="scheduled before"):
        program.peak_memory([sum_a, exp_, sin_, sum_b, add])


def test_compiled_checkpoint_markers_recompute_in_the_compiled_backward():
    x, w = wb.randn(8, 16), wb.randn(16, 16, requires_grad=True)
    wb.compile(_stage)(x, w).backward()
    ours, w.grad = w.grad, None
    _stage(x, w).backward()
    _same(w.grad, ours)


def test_a_compiled_backward_checks_versions_and_refuses_double_backward():
    w = wb.tensor([1.0, 2.0], requires_grad=True)
    compiled = wb.compile(lambda x: (x * w).sum())
    x = wb.tensor([3.0, 4.0])
    loss = compiled(x)
    x.mul_(2)  # changed after the forward: eager would refuse too
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    with pytest.raises(RuntimeError, match="not differentiable again"):
        wb.autograd.grad(compiled(x), w, create_graph=True)


# ------------------------------------------------------- fuzz programs
@settings(max_examples=40, deadline=None)
@given(fuzz=fuzz_programs.programs(max_steps=8))
def test_random_programs_trace_and_differentiate_as_eager(fuzz):
    """The program fuzzer's random programs (tests/fuzz_programs.py): traced, their values
    and their leaves' gradients (for random ȳ) equal eager's."""
    outputs = fuzz_programs.output_indices(fuzz)

    def fn(*leaves):
        values = list(leaves)
        for step in fuzz.steps:
            operands = [values[i] for i in step.args]
            values.append(fuzz_programs.OPS[step.op].fn(wb, *operands, *step.params))
        return tuple(values[i] for i in outputs)

    leaves = [wb.tensor(fuzz_programs.leaf_array(leaf), requires_grad=True) for leaf in fuzz.leaves]
    program = trace(fn, *leaves)
    eager = fn(*leaves)
    for e, o in zip(eager, program.run(*leaves)):
        _same(e, o)
    differentiable = [o for o in eager if o.requires_grad]
    if not differentiable:
        return
    seeds = [
        wb.tensor(fuzz_programs.random_like(o, fuzz.seed + i)) for i, o in enumerate(differentiable)
    ]
    theirs = wb.autograd.grad(differentiable, leaves, seeds, allow_unused=True)
    adjoint = gradient(program)
    ours = adjoint.run(*leaves, *seeds)[adjoint.forward_outputs :]
    for e, o in zip(theirs, ours):
        if e is None:
            assert o is None
        else:
            _same(e, o)


def test_the_min_cut_keeps_the_matmul_and_recomputes_the_cheap_chain():
    x, w = wb.randn(8, 16), wb.randn(16, 16, requires_grad=True)
    plain = eliminate_dead_code(gradient(trace(_plain, x, w)))
    cut = min_cut_partition(eliminate_dead_code(gradient(trace(_plain, x, w))))
    assert [v.name for v in plain.saved_for_backward()] == ["3", "2", "1"]  # the tanh outputs
    assert [v.name for v in cut.saved_for_backward()] == ["0"]  # x @ w only
    assert cut.saved_bytes() == 8 * 16 * 4 < plain.saved_bytes()
    assert [b.out.name for b in cut.bindings if b.recomputed] == ["1_re", "2_re", "3_re"]
    assert "# recomputed (min-cut)" in str(cut)
    _same(plain.run(x, w)[1], cut.run(x, w)[1])


def test_an_output_returned_twice_gets_both_gradients():
    def twice(x):
        y = x * 2
        return y, y

    x = wb.tensor([1.0, 2.0], requires_grad=True)
    a, b = wb.compile(twice)(x)
    (a.sum() + 3 * b.sum()).backward()
    assert x.grad.tolist() == [8.0, 8.0]


@pytest.mark.parametrize(
    "transform",
    [
        lambda g, x: wb.func.jvp(g, (x,), (wb.tensor([1.0, 0.5, 0.0]),))[1],
        lambda g, x: wb.func.grad(g)(x),
        lambda g, x: wb.func.hessian(g)(x),
        lambda g, x: wb.func.vmap(g)(wb.ones(4, 3) * x),
    ],
    ids=["jvp", "grad", "hessian", "vmap"],
)
def test_a_compiled_function_under_a_func_transform_runs_eagerly(transform):
    """Tangents and batches ride on the ops, which the compiled program does not call:
    inside a transform the function runs eagerly, with the transform's results."""

    def f(x):
        return (x.sin() * x).sum()

    x = wb.tensor([1.0, 2.0, 3.0])
    _same(transform(f, x), transform(wb.compile(f), x))


def test_a_backward_pass_inside_a_traced_function_is_refused():
    """The engine sums gradients with numpy, outside the ops: traced, the sum would be a
    constant from the example's values."""

    def f(x):
        return wb.autograd.grad((x * x).sum(), x, create_graph=False)[0]

    with pytest.raises(TraceError, match="backward pass"):
        trace(f, wb.tensor([1.0, 2.0], requires_grad=True))


def test_values_copied_out_of_ops_are_refused_or_traced_never_baked_in():
    with pytest.raises(TraceError, match=r"wb.tensor\(t\)"):
        trace(lambda x: wb.tensor(x * 2) + 1, wb.ones(2))
    program = trace(lambda x: (x * 2).long().exp(), wb.ones(2))  # exp casts the integers
    y = wb.tensor([1.0, 3.0])
    _same((y * 2).long().exp(), program.run(y))
    program = trace(lambda x, i: x + i, wb.ones(2), wb.tensor([1, 2]))  # + casts i
    assert "%0 = astype(%i, dtype=float32)" in str(program)
    _same(y + wb.tensor([10, 20]), program.run(y, wb.tensor([10, 20])))


def test_the_partitioners_leave_the_program_they_are_given_as_it_was():
    x, w = wb.randn(8, 16), wb.randn(16, 16, requires_grad=True)
    adjoint = eliminate_dead_code(gradient(trace(_plain, x, w)))
    text = str(adjoint)
    min_cut_partition(adjoint)
    assert str(adjoint) == text


def test_backward_bindings_are_differentiable_code_not_no_grad_blocks():
    """The rules run without recording, but an adjoint's backward bindings are a program
    like any other: they print no no_grad note, and its gradient is the second derivative."""
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    adjoint = gradient(trace(lambda x: (x * x * x).sum(), x))
    assert "no_grad" not in str(adjoint)
    second = gradient(adjoint).run(x)[2:]  # d/dx (x³ + 3x²), both outputs seeded with 1
    assert second[0].tolist() == [9.0, 24.0]
