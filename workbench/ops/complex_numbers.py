"""Complex numbers: conj, real, imag, angle and complex(real, imag).

PyTorch's convention, followed by every rule: for a real loss L of z = x + iy, the
gradient is z̄ = ∂L/∂x + i·∂L/∂y (twice the conjugate Wirtinger derivative ∂L/∂z̄), so
``z -= lr * z.grad`` goes downhill as it does for real numbers. A holomorphic op
y = f(z) therefore sends back z̄ = ȳ · conj(f'(z)): the rules of exp, sin, mul, matmul…
read ``conj(...)`` where PyTorch's derivatives.yaml does. ``conj`` of a real tensor is
the tensor itself, with nothing recorded, so on real dtypes those rules are the real
formulas and cost nothing more.
"""

from __future__ import annotations

import numpy as np

from ..core import checks
from ..core.tensor import Tensor, is_differentiable_dtype
from ..record.dispatch import apply_op
from .registry import register_gradient, register_jvp, register_linear_jvp, register_op

_COMPLEX_OF = {
    np.dtype("float32"): np.dtype("complex64"),
    np.dtype("float64"): np.dtype("complex128"),
}


def is_complex(x) -> bool:
    return isinstance(x, Tensor) and x._data.dtype.kind == "c"


# ---------------------------------------------------------------------- conj
_conj = register_op("conj")(np.conj)


@register_gradient("conj")
def conj_grad(orig, grad):
    """Forward: y = conj(z)   (x − iy for z = x + iy)
    Backward: z̄ = conj(ȳ)"""
    return [conj(grad)]


register_linear_jvp(
    "conj",
    "y = conj(z)",
    "ẏ = conj(ż)   (conj is ℝ-linear, not holomorphic: the tangent is conjugated too)",
)


def conj(input: Tensor) -> Tensor:
    """The complex conjugate. A real tensor is returned as it is, nothing recorded, as
    ``torch.conj`` does: rules call ``conj`` freely and real dtypes pay nothing.

    Unlike ``torch.conj`` (a lazy view), the result is a new tensor.
    """
    checks.tensor_arg("conj", "input", input)
    if input._data.dtype.kind != "c":
        return input
    return apply_op(_conj, (input,))


# ---------------------------------------------------------------- real, imag
@register_op("real")
def _real(z):
    return z.real.copy()


@register_gradient("real")
def real_grad(orig, grad):
    """Forward: y = Re z
    Backward: z̄ = ȳ + 0i"""
    (z,) = orig.args
    return [grad.to(z.dtype)]


register_linear_jvp("real", "y = Re z", "ẏ = Re ż")


@register_op("imag")
def _imag(z):
    return z.imag.copy()


@register_gradient("imag")
def imag_grad(orig, grad):
    """Forward: y = Im z
    Backward: z̄ = ȳ · i"""
    return [grad * 1j]


register_linear_jvp("imag", "y = Im z", "ẏ = Im ż")


def real(input: Tensor) -> Tensor:
    """The real part (a real tensor is returned as it is, as ``torch.real`` does).

    Unlike ``torch.real`` (a view), the result is a new tensor.
    """
    checks.tensor_arg("real", "input", input)
    if input._data.dtype.kind != "c":
        return input
    return apply_op(_real, (input,))


def imag(input: Tensor) -> Tensor:
    """The imaginary part; a new tensor, where ``torch.imag`` gives a view."""
    checks.tensor_arg("imag", "input", input)
    if input._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return apply_op(_imag, (input,))


# --------------------------------------------------------------------- angle
@register_op("angle", saves=("z",), inputs=("z",))
def _angle(z):
    out = np.angle(z)
    if z.dtype.kind == "f":
        out = np.where(np.isnan(z), z, out)  # torch.angle keeps NaN, np.angle gives 0
    return out.astype(z.real.dtype, copy=False)


@register_gradient("angle")
def angle_grad(orig, grad):
    """Forward: y = angle(z) = atan2(Im z, Re z)
    Backward: z̄ = ȳ · i · z / |z|²   (= ȳ · (−Im z + i Re z) / |z|²; 0 at z = 0 and for real z)"""
    from .arithmetic import where, zeros_like_grad

    (z,) = orig.args
    if not is_complex(z):
        return [zeros_like_grad(z)]
    squared = real(z * conj(z))
    # The division by a safe 1 where z = 0 keeps NaN out of the branch `where` drops.
    safe = where(squared == 0, 1.0, squared)
    return [where(squared == 0, 0.0, grad * 1j * z / safe)]


@register_jvp("angle")
def angle_jvp(orig, tangents):
    """Forward: y = angle(z) = atan2(Im z, Re z)
    JVP: ẏ = Im(conj(z) · ż) / |z|²   (0 at z = 0 and for real z)"""
    from .arithmetic import where, zeros_like_grad

    (z,), (dz,) = orig.args, tangents
    if not is_complex(z):
        return zeros_like_grad(orig.out)
    squared = real(z * conj(z))
    safe = where(squared == 0, 1.0, squared)  # as the gradient rule: no 0/0 anywhere
    return where(squared == 0, 0.0, imag(conj(z) * dz) / safe)


def angle(input: Tensor) -> Tensor:
    """The argument of each element, in (−π, π]; π for negative reals, 0 for the rest."""
    checks.tensor_arg("angle", "input", input)
    if not is_differentiable_dtype(input._data.dtype):
        input = input.to(np.float32)
    return apply_op(_angle, (input,))


# ------------------------------------------------------------- complex(re, im)
@register_op("complex", inputs=("real", "imag"))
def _complex(re, im):
    return (re + 1j * im).astype(_COMPLEX_OF[re.dtype], copy=False)


@register_gradient("complex")
def complex_grad(orig, grad):
    """Forward: z = re + i · im
    Backward: re̅ = Re z̄, im̅ = Im z̄"""
    from .broadcasting import collapse_sum_like

    re, im = orig.args
    need_re, need_im = orig.needs_input_grad
    return [
        collapse_sum_like(real(grad), re) if need_re else None,
        collapse_sum_like(imag(grad), im) if need_im else None,
    ]


register_linear_jvp(
    "complex", "z = re + i · im", "ż = r̊e + i · i̊m   (linear: the op on the tangents)"
)


def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001  (torch.complex)
    """``real + i · imag`` from two real tensors of one dtype (float32 or float64)."""
    checks.tensor_args("complex", real=real, imag=imag)
    if real.dtype != imag.dtype:
        raise RuntimeError(
            f"complex(): expected 'imag' of 'real''s scalar type {real.dtype}, but got scalar "
            f"type {imag.dtype}"
        )
    if real.dtype == np.float16:
        raise RuntimeError(
            "complex(): float16 parts make complex32 in PyTorch (its experimental ComplexHalf), "
            "a dtype numpy lacks: convert the parts with .float() first"
        )
    if real.dtype not in _COMPLEX_OF:
        raise RuntimeError(
            "complex(): Expected both inputs to be Half, Float or Double tensors but got "
            f"{real.dtype} and {imag.dtype}"
        )
    return apply_op(_complex, (real, imag))


# ------------------------------------------------------------------- refusals
def refuse_complex(name: str, *operands, error: type = NotImplementedError) -> None:
    """Ops that need an order (max, relu, floor, <) have none on complex numbers, and
    PyTorch has no complex kernel for others (softmax, the losses, layer_norm): it raises
    NotImplementedError (a RuntimeError; a plain RuntimeError for argmax, argmin and
    embedding), and so do we, naming the op and the dtype."""
    for x in operands:
        if is_complex(x):
            raise error(f"{name} is not supported for complex inputs ({x.dtype})")


def refuse_mixed_complex(name: str, *operands) -> None:
    """Matrix products (matmul, dot, linear, conv2d) of a real and a complex tensor:
    PyTorch refuses them (its kernels take one dtype) with a RuntimeError; so do we."""
    tensors = [x for x in operands if isinstance(x, Tensor)]
    kinds = {is_complex(x) for x in tensors}
    if len(kinds) > 1:
        dtypes = " and ".join(str(x.dtype) for x in tensors)
        raise RuntimeError(
            f"{name}: expected real and complex operands not to be mixed, but got {dtypes}: "
            "convert the real one with .to(the complex dtype)"
        )
