"""Every program the fuzzer (tests/test_fuzz_programs.py) found failing, cut down to
what shows the bug, kept so that it stays fixed. Each runs through the fuzzer's own
check: values, gradients and second-order gradients against PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest
from fuzz_programs import Leaf, Program, Step, check_program, index_key
from hypothesis import given
from hypothesis import strategies as st

import workbench as wb

torch = pytest.importorskip("torch")

SCALAR = Leaf(shape=(), dtype="float64", seed=0)
MATRIX = Leaf(shape=(2, 3), dtype="float64", seed=1)

REGRESSIONS = {
    # torch accepts dim 0 (or -1) of a 0-d tensor and flips nothing; workbench's numpy
    # kernel raised "axis 0 is out of bounds for array of dimension 0".
    "flip of a 0-d tensor": Program(leaves=(SCALAR,), steps=(Step("flip", (0,), ((0,),)),)),
    # squeeze(0) of a 0-d tensor returns it; workbench raised IndexError.
    "squeeze(0) of a 0-d tensor": Program(leaves=(SCALAR,), steps=(Step("squeeze", (0,), (0,)),)),
    # dim=() reduces every dim in torch; workbench reduced none (and so returned x).
    "logsumexp over dim=()": Program(
        leaves=(MATRIX,), steps=(Step("logsumexp", (0,), ((), True)),)
    ),
    "sum over dim=()": Program(leaves=(MATRIX,), steps=(Step("sum", (0,), ((), False)),)),
    "norm over dim=()": Program(leaves=(MATRIX,), steps=(Step("norm", (0,), (2, (), False)),)),
    # index_select and gather of a 0-d tensor take its one element; workbench raised
    # IndexError.
    "index_select of a 0-d tensor": Program(
        leaves=(SCALAR,), steps=(Step("index_select", (0,), (-1, (0,))),)
    ),
    "gather of a 0-d tensor": Program(leaves=(SCALAR,), steps=(Step("gather", (0,), (0, 7)),)),
    # prod(dim) of a 0-d tensor that is exactly 0: the gradient's zero-safe path looked
    # up dims[0] of an empty dims tuple (IndexError in backward).
    "prod(dim) of a 0-d zero": Program(
        leaves=(Leaf(shape=(), dtype="float64", seed=0, low=0.25, high=0.75),),
        steps=(Step("trunc", (0,)), Step("prod_dim", (1,), (0, True))),
    ),
    # max(dim) and amax of an empty tensor along a dim of non-zero size give an empty
    # result in torch; workbench refused every empty tensor.
    "max(dim) of an empty tensor": Program(
        leaves=(MATRIX,),
        steps=(Step("getitem", (0,), ((slice(0, 0),),)), Step("max_dim", (1,), (1, False))),
    ),
    "amax of an empty tensor": Program(
        leaves=(MATRIX,),
        steps=(Step("getitem", (0,), ((slice(0, 0),),)), Step("amax", (1,), ((-1,), True))),
    ),
    # torch.cat skips a legacy empty 1-D tensor, but its dtype still counts (float32 with
    # float64 gives float64) and it stays in the graph (its gradient is empty, not None);
    # workbench dropped it before both.
    "cat with a skipped empty tensor": Program(
        leaves=(
            Leaf(shape=(3,), dtype="float32", seed=2),
            Leaf(shape=(2,), dtype="float64", seed=3, low=-2.0, high=-1.0),
        ),
        steps=(Step("positive_part", (1,)), Step("cat", (0, 2), (0,))),
    ),
    # grad() with an output given twice (x.double() of a float64 x is x itself): the
    # walk that finds the nodes leading to the inputs started from that root twice,
    # counted its edges down twice, and so skipped an earlier output's node.
    "grad of an output given twice": Program(
        leaves=(SCALAR,),
        steps=(
            Step("sin", (0,)),
            Step("cos", (0,)),
            Step("double", (2,)),
            Step("double", (2,)),
        ),
    ),
    # softmax and log_softmax of an empty tensor are empty in torch; workbench's kernels
    # took the max of nothing and raised.
    "log_softmax of an empty tensor": Program(
        leaves=(Leaf(shape=(2,), dtype="float64", seed=5, low=-2.0, high=-1.0),),
        steps=(Step("positive_part", (0,)), Step("log_softmax", (1,), (0,))),
    ),
    "softmax of an empty tensor": Program(
        leaves=(MATRIX,),
        steps=(Step("getitem", (0,), ((slice(0, 0),),)), Step("softmax", (1,), (0,))),
    ),
    # softmax of a transposed (non-contiguous) tensor is contiguous in torch, so .view
    # works on it; workbench kept the input's column-major order and view refused.
    "view of a softmax of a transposed tensor": Program(
        leaves=(Leaf(shape=(2, 2), dtype="float64", seed=0),),
        steps=(Step("mT", (0,)), Step("softmax", (1,), (0,)), Step("view", (2,), ((4,),))),
    ),
    "view of a log_softmax of a transposed tensor": Program(
        leaves=(Leaf(shape=(2, 2), dtype="float64", seed=0),),
        steps=(Step("mT", (0,)), Step("log_softmax", (1,), (0,)), Step("view", (2,), ((4,),))),
    ),
    # flatten(0, 0) of a (0, 0) tensor is (0, 0); workbench asked reshape for (-1, 0),
    # which is ambiguous with no elements.
    "flatten beside an empty dim": Program(
        leaves=(Leaf(shape=(0, 0), dtype="float64", seed=0),),
        steps=(Step("flatten", (0,), (0, 0)),),
    ),
    # logsumexp over an empty dim is −∞ (a sum of nothing is 0); workbench took the max
    # of nothing to shift by and raised.
    "logsumexp over an empty dim": Program(
        leaves=(Leaf(shape=(0, 3), dtype="float32", seed=0),),  # stays float32
        steps=(Step("logsumexp", (0,), ((0,), True)),),
    ),
    # chunk(n) of an empty dim gives n empty pieces in torch; workbench gave one.
    "chunk of an empty dim": Program(
        leaves=(Leaf(shape=(0,), dtype="float64", seed=0),),
        steps=(Step("chunk", (0,), (2, 0, 1)),),
    ),
    # Failures of the fuzzer itself. A float64 value computed from float32 ones carries
    # float32's rounding: the tolerance is that of the least precise dtype the program
    # computes in, not the dtype of the value compared.
    "float32 log, then double": Program(
        leaves=(Leaf(shape=(), dtype="float32", seed=115),),
        steps=(Step("log", (0,)), Step("double", (1,))),
    ),
    # torch's second-order gradients through stack are views of a ZeroTensor, and
    # torch 2.13's .numpy(force=True) crashes on those (a segmentation fault).
    "second order through stack": Program(
        leaves=(SCALAR, Leaf(shape=(), dtype="float64", seed=3714248)),
        steps=(Step("stack", (0, 1), (0,)), Step("abs", (2,))),
        seed=88,
    ),
    # x[0, :, [1, 1]]: torch takes the int first (a select), then indexes what is left
    # with the list: (3, 2). numpy counts the int among the index arrays and, as they are
    # not next to each other, puts their dim first: (2, 3), which workbench gave.
    "an int and an index list in one key": Program(
        leaves=(Leaf(shape=(2, 3, 4), dtype="float64", seed=4),),
        steps=(Step("getitem", (0,), ((0, slice(None), [1, 1]),)),),
    ),
}


@pytest.mark.parametrize("name", list(REGRESSIONS))
def test_program_the_fuzzer_found(name):
    check_program(REGRESSIONS[name])


# The same key elsewhere, found while fixing getitem: the write, and a 0-d tensor as the int.
def _same_as_torch(fn):
    x = np.arange(24.0).reshape(2, 3, 4)
    ours = fn(wb, wb.tensor(x, requires_grad=True))
    theirs = fn(torch, torch.tensor(x, requires_grad=True))
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


def test_setitem_with_an_int_and_an_index_list_writes_as_torch():
    def write(lib, x):
        y = x * 1
        y[0, :, [1, 2]] = lib.tensor(np.arange(6.0).reshape(3, 2))  # (3, 2), as x[0, :, [1, 2]]
        return y

    _same_as_torch(write)


def test_a_0d_integer_tensor_in_a_key_counts_as_an_int():
    _same_as_torch(lambda lib, x: x[lib.tensor(0), :, [1, 2]])


def test_var_over_dim_empty_tuple_is_var_over_all_dims():
    """dim=() reduces all dims (a bug above); torch 2.13's var and std count one element
    in backward then, so the fuzzer leaves dim=() out of var and std, and this checks
    workbench against torch's dim=None instead."""
    x = np.random.default_rng(5).uniform(-2, 2, (2, 3))
    for name in ("var", "std"):
        ours_x, theirs_x = wb.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ours = getattr(ours_x, name)(dim=(), correction=1)
        theirs = getattr(theirs_x, name)(dim=None, correction=1)
        (ours_g,) = wb.autograd.grad(ours, ours_x)
        (theirs_g,) = torch.autograd.grad(theirs, theirs_x)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours_g.numpy(), theirs_g.numpy(), rtol=1e-12)


@given(st.data())
def test_the_key_drawer_copes_with_an_empty_dim(data):
    """The fuzzer's own failure: for x[key] on an empty dim it drew an int from an empty
    range (hypothesis's InvalidArgument)."""
    (key,) = index_key(data.draw, torch.zeros(0, 3))
    assert len([k for k in key if k is not None]) <= 2


@pytest.mark.parametrize(
    "key",
    [
        (..., ...),
        (..., 0, ...),
        (1, ..., 2, ...),
        (..., None, ...),
        (..., ..., slice(None)),
        (..., None, ..., slice(None)),  # make fuzz: each '...' spans the same dims
        (..., 1, ..., slice(None)),
        (..., [False, True, True], ..., slice(None)),
        (None, ..., ..., slice(0, None, 1)),
    ],
    ids=str,
)
def test_a_key_with_several_ellipses_reads_as_torch_reads_it(key):
    """test_fuzz_indexing found these once it drew keys with more than one ``...``: the
    workbench refused them (numpy takes one), PyTorch spans the dims with the first."""
    _same_as_torch(lambda lib, x: x[key])


def test_a_second_ellipsis_leaves_no_dim_to_index_as_in_torch():
    x = wb.ones(2, 3)
    for key in ((..., ..., 1), (..., ..., None), (..., ..., slice(1, None)), (..., 0, ..., None)):
        with pytest.raises(IndexError, match="second '...'"):
            x[key]
        with pytest.raises(IndexError):
            torch.ones(2, 3)[key]


def test_an_empty_result_reads_no_index_as_in_torch():
    """``x[[5], 0:0]`` is empty in PyTorch whatever the 5; the workbench refused it (and a
    non-empty result still checks its indices)."""
    _same_as_torch(lambda lib, x: x[[5], 0:0])
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        wb.ones(2, 3)[[5]]


def test_a_subnormal_answer_is_a_wrong_value_not_a_gap_in_the_checker():
    """make fuzz's hostile answers found it: ``(False, 2.2e-309)`` for ``[1, 2]`` looked like
    ``[1, 2]`` times a factor of 5.6e-310, whose reciprocal overflows, and the check gave
    up ("cannot convert Infinity to integer ratio") instead of a verdict."""
    from workbench.exercises import ExerciseError, check_answer

    with pytest.raises(ExerciseError) as info:
        check_answer("x.grad", [1.0, 2.0], (False, 2.225073858507203e-309))
    message = str(info.value)
    assert "gap in the checker" not in message
    assert "at [0] it is 0 where 1 was expected" in message


@pytest.mark.parametrize("p", [-(2**63), 2**63 - 1, -3, 4])
def test_pow_by_an_int_at_int64s_ends_has_torchs_gradient_and_tangent(p):
    """Found by the trace round trip's fuzzing: x ** -2⁶³ ran forward, and its backward
    raised OverflowError, for the slope's exponent p − 1 left int64 (PyTorch computes it
    in double)."""
    import workbench.record.forward_ad as fw

    values = [-1.0, 1.5, 0.5]
    x = wb.tensor(values, dtype=wb.float64, requires_grad=True)
    (x**p).sum().backward()
    tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (tx**p).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    with fw.dual_level():
        dual = fw.make_dual(wb.tensor(values, dtype=wb.float64), wb.ones(3, dtype=wb.float64))
        tangent = fw.unpack_dual(dual**p).tangent
    np.testing.assert_allclose(tangent.numpy(), tx.grad.numpy())


def test_elu_bends_only_below_zero_in_second_order_as_torch():
    """make fuzz: elu(b − a) with a = b has x = 0 exactly. elu'(0) is α (the branch below
    0), but PyTorch's second derivative there is 0 (it masks with x < 0); the rule's eˣ
    gave α."""
    values = [0.0, -0.0, -0.5, 0.5]
    grads = []
    for lib in (wb, torch):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        (slope,) = lib.autograd.grad(
            lib.nn.functional.elu(x, alpha=1.5).sum(), x, create_graph=True
        )
        (bend,) = lib.autograd.grad(slope.sum(), x)
        grads.append((slope.detach().numpy(), bend.numpy()))
    (ours_slope, ours_bend), (their_slope, their_bend) = grads
    np.testing.assert_array_equal(ours_slope, their_slope)
    np.testing.assert_allclose(ours_bend, their_bend, rtol=1e-15)
    assert ours_bend[0] == ours_bend[1] == 0.0
