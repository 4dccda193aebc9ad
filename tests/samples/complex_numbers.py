"""Complex numbers: samples for conj, real, imag, angle and complex(), and the list of
samples of other modules that the registry test also runs with complex inputs.

``complex_variant`` turns a sample into its complex128 twin: every float input gets an
imaginary part drawn from [low, high), as the real part is, so values stay where the
real sample keeps them (log and sqrt in the first quadrant, divisors away from 0).
Integer inputs (indices) stay as they are, and so do the conditions of ``where``.
"""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np

import workbench as wb
from tests.samples import Sample

# Samples of ops that PyTorch differentiates for complex inputs.
COMPLEX_NAMES = (
    "add add_broadcast_row add_broadcast_outer add_scalar_alpha radd_scalar sub_broadcast "
    "rsub_scalar mul mul_broadcast_outer mul_broadcast_row mul_scalar mul_constant div "
    "div_broadcast rdiv_scalar neg pow_tensor pow_broadcast pow_scalar_exponent "
    "pow_negative_exponent rpow_scalar_base exp log sqrt abs sin cos tanh sigmoid where "
    "where_broadcast sum_all sum_dim sum_dims_keepdim mean_all mean_dims reshape permute "
    "expand clone getitem_slices index_duplicates matmul_2d_2d matmul_1d_1d matmul_1d_batched "
    "matmul_batched_1d matmul_batch_broadcast matmul_constant_right mm dot linear "
    "linear:batched_no_bias linear:vector linear:weight_only log1p expm1 reciprocal rsqrt "
    "square tan prod:all prod:dim_keepdim prod:zeros_dim cumsum:dim1 cumprod:dim1 "
    "cumprod:zeros var:unbiased std:dim norm:fro norm:p2_dim cat:three_dim1 stack:dim1 flip "
    "gather:dim1 "
    # checked against torch 2.13 (each differentiates these for complex inputs)
    "checkpoint_stage div_scalar sigmoid_large compare_ne compare_eq sum_negative_dim "
    "sum_dims_1_3 mean_dims_1_3 mean_keepdim_1_of_4d mean_keepdim reshape_infer "
    "unsqueeze_squeeze flatten view permute_4d transpose matrix_T broadcast_to "
    "permute_reverse_4d unsqueeze_several expand_keep sum_to contiguous "
    "to_device getitem_int getitem_ellipsis_none index_tensor_dim1 index_flat index_pairs "
    "getitem_backward_scatter_add getitem_backward_basic index_put_slice "
    "index_put_broadcast_value tanh_backward sigmoid_backward conv2d:basic conv2d:stride_2_1 "
    "conv2d:padding_3_2 conv2d:dilation_2 conv2d:groups_2 conv2d:stride_2_leftover conv2d:same "
    "conv2d:bias conv2d:unbatched prod:zeros_all cumsum:1d cumprod:zeros_dim0 "
    "var:population_dims var:keepdim_unbiased_false std:all_population_keepdim logsumexp:dim "
    "logsumexp:all_keepdim norm:p2_zero_row norm:p3 cat:one_constant split:sizes chunk:uneven "
    "unbind roll:dims roll:flat pad:constant pad:negative_crops pad:reflect pad:replicate "
    "pad:circular take:flat_duplicates take:axis1 index_select:duplicates take_backward:axis0 "
    "take_backward:flat gather:smaller_index gather_backward tril tril:k1 triu triu:k-1 "
    "repeat:new_dim tile where:broadcast masked_fill:broadcast_mask masked_fill:tensor_value"
).split()


def complex_variant(sample: Sample, dtype=np.complex128) -> Sample:
    """The sample with complex inputs where it has gradient-requiring ones."""
    arrays, requires = sample.arrays(), sample.requires()
    rng = np.random.default_rng(zlib.crc32(f"{sample.name}:complex".encode()))
    inputs = []
    keep_constants = sample.name.startswith("where")  # the condition stays real
    for array, req in zip(arrays, requires):
        if (
            isinstance(array, np.ndarray)
            and array.dtype.kind == "f"
            and (req or not keep_constants)
        ):
            imag = rng.uniform(sample.low, sample.high, size=array.shape)
            array = (array + 1j * imag).astype(dtype)
        elif isinstance(array, np.ndarray) and array.dtype.kind == "c":
            array = array.astype(dtype)  # a sample of this module: complex already
        inputs.append(array)
    name = f"{sample.name}:{np.dtype(dtype).name}"
    return dataclasses.replace(sample, name=name, inputs=tuple(inputs), grad=tuple(requires))


def _complex_input(*shape):
    rng = np.random.default_rng(zlib.crc32(str(shape).encode()))
    return rng.uniform(-1, 1, size=shape) + 1j * rng.uniform(-1, 1, size=shape)


SAMPLES = [
    # conj_physical: torch's conj is a lazy view, which .numpy() refuses; same gradient.
    Sample("conj", ("conj",), wb.conj, (_complex_input(2, 3),), lambda z: z.conj_physical()),
    Sample("real", ("real",), lambda z: z.real * 1, (_complex_input(2, 3),), lambda z: z.real * 1),
    Sample("imag", ("imag",), lambda z: z.imag * 1, (_complex_input(2, 3),), lambda z: z.imag * 1),
    Sample("angle", ("angle",), lambda z: z.angle(), (_complex_input(2, 3),), lambda z: z.angle()),
    Sample("angle:real", ("angle",), wb.angle, ((2, 3),), lambda x: x.angle()),
    Sample("sgn", ("sgn",), wb.sgn, (_complex_input(2, 3),), lambda z: z.sgn()),
    # + 0·x: torch's gradient of sgn on reals is a ZeroTensor, which .numpy() refuses
    Sample("sgn:real", ("sgn",), lambda x: wb.sgn(x) + 0 * x, ((2, 3),), lambda x: x.sgn() + 0 * x),
    Sample(
        "norm:p1:complex",
        ("norm", "sgn"),
        lambda z: z.norm(1, dim=1),
        (_complex_input(2, 3),),
        lambda z: __import__("torch").linalg.vector_norm(z, 1, dim=1),
    ),
    Sample(
        "norm:inf:complex",
        ("norm", "sgn"),
        lambda z: z.norm(float("inf"), dim=1, keepdim=True),
        (_complex_input(2, 3),),
        lambda z: __import__("torch").linalg.vector_norm(z, float("inf"), dim=1, keepdim=True),
    ),
    Sample(
        "complex",
        ("complex",),
        wb.complex,
        ((2, 3), (2, 3)),
        lambda re, im: __import__("torch").complex(re, im),
    ),
    Sample(
        "complex:broadcast",
        ("complex", "collapse_sum_like"),
        wb.complex,
        ((3, 1), (4,)),
        lambda re, im: __import__("torch").complex(re, im),
    ),
]
