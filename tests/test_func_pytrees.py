"""``jvp``, ``jacfwd``, ``hessian`` and ``linearize`` take torch.func's pytrees (dicts,
tuples and lists of tensors) as arguments and outputs, nested as torch.func nests them
(issue 36: ``jacfwd`` and ``hessian`` of a dict leaked ``AttributeError: 'dict' object has
no attribute 'device'``, ``jvp`` refused dicts; ``jacrev`` and ``hessian`` refused a dict,
tuple or list output)."""

from __future__ import annotations

import pytest
import torch

import workbench as wb


def _plain(x):
    """Numbers and nesting of an answer (dict, tuple, list, tensor), or the error's type."""
    if isinstance(x, dict):
        return {key: _plain(v) for key, v in x.items()}
    if isinstance(x, (tuple, list)):
        return type(x).__name__, [_plain(v) for v in x]
    return (
        tuple(x.shape),
        str(x.dtype).split(".")[-1],
        [round(v, 5) for v in x.reshape(-1).tolist()],
    )


def _params(lib):
    return {"w": lib.tensor([1.0, 2.0]), "b": lib.tensor(0.5)}


def _weighted(d):
    return (d["w"] ** 2).sum() * d["b"]


def _affine(d, x):
    return d["w"] * x + d["b"]


def _named_outputs(x):
    return {"sin": x.sin(), "square": (x * x).sum(), "both": [x.exp(), x[0] * x[1]]}


def _closed_over(lib):
    """A weight that requires grad: the Jacobian keeps its history (the looped road)."""
    return lib.tensor([2.0, 3.0], requires_grad=True)


CASES = {
    "jvp of a dict": lambda lib: lib.func.jvp(
        _weighted, (_params(lib),), ({"w": lib.tensor([1.0, 0.0]), "b": lib.tensor(1.0)},)
    ),
    "jvp with a dict out": lambda lib: lib.func.jvp(
        lambda d: {"y": d["w"] * 2}, (_params(lib),), (_params(lib),)
    ),
    "jvp of a list": lambda lib: lib.func.jvp(
        lambda pair: pair[0] * pair[1],
        ([lib.ones(2), lib.tensor([3.0, 4.0])],),
        ([lib.ones(2)] * 2,),
    ),
    "jvp, structures differ": lambda lib: lib.func.jvp(
        _weighted, (_params(lib),), ({"w": lib.ones(2)},)
    ),
    "jacfwd of a dict": lambda lib: lib.func.jacfwd(_weighted)(_params(lib)),
    "jacfwd, a dict and a tensor": lambda lib: lib.func.jacfwd(_affine)(
        _params(lib), lib.tensor([3.0, 4.0])
    ),
    "jacfwd, argnums (0, 1)": lambda lib: lib.func.jacfwd(_affine, argnums=(0, 1))(
        _params(lib), lib.tensor([3.0, 4.0])
    ),
    "jacfwd with a dict out": lambda lib: lib.func.jacfwd(lambda d: {"y": d["w"] * d["b"]})(
        _params(lib)
    ),
    "jacfwd of a tuple": lambda lib: lib.func.jacfwd(lambda pair: pair[0] * pair[1])(
        (lib.tensor([3.0, 4.0]), lib.tensor([1.0, 2.0]))
    ),
    "jacfwd with aux": lambda lib: lib.func.jacfwd(
        lambda d: (d["w"] * d["b"], d["b"] + 1), has_aux=True
    )(_params(lib)),
    "hessian of a dict": lambda lib: lib.func.hessian(_weighted)(_params(lib)),
    "jacrev with a dict out": lambda lib: lib.func.jacrev(_named_outputs)(lib.tensor([1.0, 2.0])),
    "jacrev, a dict out, argnums (0, 1)": lambda lib: lib.func.jacrev(
        lambda d, x: {"y": _affine(d, x), "pair": [x.sum(), d["b"] * x]}, argnums=(0, 1)
    )(_params(lib), lib.tensor([3.0, 4.0])),
    "jacrev, a tuple out in chunks": lambda lib: lib.func.jacrev(
        lambda x: (x.sin(), x.cumsum(0), x.prod()), chunk_size=2
    )(lib.tensor([1.0, 2.0, 3.0])),
    "jacrev, a dict out with aux": lambda lib: lib.func.jacrev(
        lambda x: (_named_outputs(x), x.sum()), has_aux=True
    )(lib.tensor([1.0, 2.0])),
    "jacrev, a dict out reaching outside": lambda lib: lib.func.jacrev(
        lambda x: {"w": x * _closed_over(lib), "s": (x * x).sum()}
    )(lib.tensor([1.0, 2.0])),
    "jacrev, a float64 output of a float32 input": lambda lib: lib.func.jacrev(
        lambda x: {"a": x.sum(), "b": x.double() * 2}
    )(lib.tensor([1.0, 2.0])),
    "jacrev, an empty output among others": lambda lib: lib.func.jacrev(
        lambda x: {"none": x[:0], "a": x * 3}
    )(lib.tensor([1.0, 2.0])),
    "jacrev, a number in the output": lambda lib: lib.func.jacrev(lambda x: {"a": x, "b": 1.0})(
        lib.tensor([1.0, 2.0])
    ),
    "jacrev, an empty dict": lambda lib: lib.func.jacrev(lambda x: {})(lib.tensor([1.0, 2.0])),
    "hessian with a dict out": lambda lib: lib.func.hessian(_named_outputs)(lib.tensor([1.0, 2.0])),
    "jacfwd with a list out": lambda lib: lib.func.jacfwd(lambda x: [x.exp(), x.sum()])(
        lib.tensor([1.0, 2.0])
    ),
    "linearize of a dict": lambda lib: lib.func.linearize(_weighted, _params(lib))[1](
        {"w": lib.tensor([1.0, 0.0]), "b": lib.tensor(1.0)}
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pytree_arguments_as_torch_func(case):
    def run(lib):
        try:
            return _plain(CASES[case](lib))
        except Exception as error:  # noqa: BLE001  (compared with torch.func's)
            # torch.func then prints both structures as its TreeSpecs
            return type(error).__name__, str(error).split(" Got primals with structure")[0]

    assert run(wb) == run(torch)
