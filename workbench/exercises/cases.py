"""The inputs a rule is checked on: several shapes per op, broadcast pairs for binary ops.

A :class:`Case` is one call of an op: the shapes of its tensor inputs, how their
values are drawn (``log`` needs positive numbers, ``relu`` numbers away from its
kink at 0, where finite differences would straddle the kink), and the public
function that calls the op (``F.avg_pool2d(x, 2)``; ``x.sum(dim=1)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.tensor import Tensor
from ..nn import functional as F
from ..ops import registry
from .diagnose import shape_text
from .report import CheckerMisuse


@dataclass(frozen=True)
class Case:
    shapes: tuple  # one shape per tensor input
    call: Callable[..., Tensor]
    domains: tuple = ()  # how each input's values are drawn; "any" where left out
    note: str = ""  # the attributes, for messages: "dim=1"
    needs: tuple = ()  # which inputs require grad; all where left out

    def inputs(self, rng: np.random.Generator, complex_values: bool = False) -> list:
        """Fresh float64 leaves (that require grad as ``needs`` says), one per shape;
        complex128 ones with ``complex_values`` (an imaginary part in [−1, 1))."""
        count = len(self.shapes)
        domains = self.domains + ("any",) * (count - len(self.domains))
        needs = self.needs or (True,) * count
        values = [draw(rng, shape, domain) for shape, domain in zip(self.shapes, domains)]
        if complex_values:
            values = [v + 1j * rng.uniform(-1.0, 1.0, v.shape) for v in values]
        return [Tensor(v, requires_grad=need) for v, need in zip(values, needs)]

    def label(self, names: tuple) -> str:
        """``x of shape (2, 3) and y of shape (3,)``, with the attributes if any."""
        parts = [f"{name} of shape {shape_text(s)}" for name, s in zip(names, self.shapes)]
        text = " and ".join(parts)
        unwanted = [name for name, need in zip(names, self.needs) if not need]
        if unwanted:
            text += f" ({' and '.join(unwanted)} needing no gradient)"
        return f"{text}, {self.note}" if self.note else text


def draw(rng: np.random.Generator, shape: tuple, domain: str) -> np.ndarray:
    """Values where the op is smooth and finite differences are accurate."""
    if domain == "positive":
        return rng.uniform(0.5, 2.0, shape)
    if domain == "away_from_zero":  # clear of a kink or a pole at 0
        return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 1.5, shape)
    if domain == "small":  # tan: clear of its poles at ±π/2
        return rng.uniform(-1.0, 1.0, shape)
    if domain == "above_minus_one":  # log1p
        return rng.uniform(-0.5, 2.0, shape)
    return rng.standard_normal(shape)


UNARY = {  # op name -> domain of its input
    "sigmoid": "any",
    "tanh": "any",
    "exp": "any",
    "log": "positive",
    "sqrt": "positive",
    "rsqrt": "positive",
    "reciprocal": "positive",
    "sin": "any",
    "cos": "any",
    "tan": "small",
    "neg": "any",
    "square": "any",
    "abs": "away_from_zero",
    "sign": "away_from_zero",
    "erf": "any",
    "expm1": "any",
    "log1p": "above_minus_one",
    "relu": "away_from_zero",
    "leaky_relu": "away_from_zero",
    "elu": "away_from_zero",
    "gelu": "any",
    "silu": "any",
    "softplus": "any",
}
UNARY_SHAPES = [(5,), (2, 3), ()]

BINARY = {  # op name -> domains of its two inputs
    "add": (),
    "sub": (),
    "mul": (),
    "div": ("any", "away_from_zero"),
    "maximum": (),
    "minimum": (),
    "pow": ("positive", "any"),
}
BINARY_SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((3,), (2, 3)), ((2, 1), (1, 3))]

REDUCTIONS = ("sum", "mean", "amax", "amin", "prod", "var", "logsumexp", "norm")
ALONG_A_DIM = ("softmax", "log_softmax", "cumsum", "cumprod")


def public_function(op_name: str) -> Callable:
    """The function a learner calls for the op: ``F.relu``, ``wb.mul``..."""
    import workbench

    function = getattr(F, op_name, None) or getattr(workbench, op_name, None)
    if function is None:
        raise CheckerMisuse(f"no public function calls the op '{op_name}': pass cases yourself")
    return function


def default_cases(op_name: str, shapes: list | None = None) -> list[Case]:
    """The cases ``check_rule`` runs for ``op_name`` (``shapes`` replaces the default shapes)."""
    if op_name not in registry.OPS:
        raise CheckerMisuse(f"there is no op called '{op_name}'")
    if op_name in UNARY:
        return unary_cases(op_name, shapes)
    if op_name in BINARY:
        return binary_cases(op_name, shapes)
    if op_name in REDUCTIONS:
        return reduction_cases(op_name, shapes)
    if op_name in ALONG_A_DIM:
        return along_a_dim_cases(op_name, shapes)
    if op_name in SPECIAL:
        return SPECIAL[op_name](shapes)
    if shapes is None:
        known = sorted([*UNARY, *BINARY, *REDUCTIONS, *ALONG_A_DIM, *SPECIAL])
        raise CheckerMisuse(
            f"check_rule has no default inputs for '{op_name}': pass shapes=[...] "
            f"(ops with defaults: {', '.join(known)})"
        )
    call = public_function(op_name)
    return [Case(as_shapes(s, 1), call) for s in shapes]


def as_shapes(entry, count: int) -> tuple:
    """One case's shapes: ``(2, 3)`` for a one-input op, ``((2, 3), (3,))`` for more."""
    entry = tuple(entry)
    if count == 1 and all(isinstance(s, int) for s in entry):
        return (entry,)
    return tuple(tuple(s) for s in entry)


def unary_cases(op_name: str, shapes) -> list[Case]:
    call = public_function(op_name)
    domain = UNARY[op_name]
    return [Case(as_shapes(s, 1), call, (domain,)) for s in shapes or UNARY_SHAPES]


def binary_cases(op_name: str, shapes) -> list[Case]:
    """Each pair of shapes, then the first pair again with ``y`` needing no gradient (as
    in ``x * 2``: a rule must then leave ``y``'s gradient out)."""
    call = public_function(op_name)
    domains = BINARY[op_name]
    cases = [Case(as_shapes(s, 2), call, domains) for s in shapes or BINARY_SHAPES]
    return [*cases, Case(cases[0].shapes, call, domains, needs=(True, False))]


def reduction_cases(op_name: str, shapes) -> list[Case]:
    def reduce(**kwargs):
        return lambda x: getattr(x, op_name)(**kwargs)

    if shapes is not None:
        return [Case(as_shapes(s, 1), reduce()) for s in shapes]
    return [
        Case(((2, 3),), reduce()),
        Case(((2, 3),), reduce(dim=1), note="dim=1"),
        Case(((2, 3),), reduce(dim=0, keepdim=True), note="dim=0, keepdim=True"),
        Case(((4,),), reduce(dim=0), note="dim=0"),
    ]


def along_a_dim_cases(op_name: str, shapes) -> list[Case]:
    function = public_function(op_name)

    def along(dim):
        return lambda x: function(x, dim)

    if shapes is not None:
        return [Case(as_shapes(s, 1), along(-1), note="dim=-1") for s in shapes]
    return [
        Case(((2, 3),), along(1), note="dim=1"),
        Case(((2, 3),), along(0), note="dim=0"),
        Case(((4,),), along(0), note="dim=0"),
    ]


def matmul_cases(shapes) -> list[Case]:
    from ..ops import matmul

    shapes = shapes or [((2, 3), (3, 4)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 2, 3), (3, 4))]
    return [Case(as_shapes(s, 2), matmul) for s in shapes]


def linear_cases(shapes) -> list[Case]:
    shapes = shapes or [((2, 3), (4, 3), (4,)), ((3,), (2, 3), (2,)), ((2, 2, 3), (4, 3), (4,))]
    return [Case(as_shapes(s, 3), F.linear) for s in shapes]


def pool_cases(pool: Callable) -> Callable[[list | None], list[Case]]:
    def cases(shapes) -> list[Case]:
        if shapes is not None:
            return [Case(as_shapes(s, 1), lambda x: pool(x, 2), note="kernel 2") for s in shapes]
        return [
            Case(((1, 1, 4, 4),), lambda x: pool(x, 2), note="kernel 2"),
            Case(
                ((2, 2, 5, 5),),
                lambda x: pool(x, 3, 2, 1),
                note="kernel 3, stride 2, padding 1",
            ),
        ]

    return cases


def conv2d_cases(shapes) -> list[Case]:
    if shapes is not None:
        return [Case(as_shapes(s, 2), F.conv2d) for s in shapes]
    return [
        Case(((1, 2, 4, 4), (3, 2, 3, 3)), F.conv2d),
        Case(
            ((2, 1, 5, 5), (2, 1, 3, 3)),
            lambda x, w: F.conv2d(x, w, None, 2, 1),
            note="stride 2, padding 1",
        ),
    ]


SPECIAL = {
    "matmul": matmul_cases,
    "linear": linear_cases,
    "avg_pool2d": pool_cases(F.avg_pool2d),
    "max_pool2d": pool_cases(F.max_pool2d),
    "conv2d": conv2d_cases,
}
