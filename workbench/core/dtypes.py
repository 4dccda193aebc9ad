"""The small floating-point dtypes, bfloat16 and float16, and what sets them apart.

numpy has float16 but no bfloat16; the ``ml_dtypes`` package adds it as a numpy dtype.
Two quirks of that dtype shape the code that handles it:

- its numpy *kind* is ``'V'`` (void), not ``'f'``: code that asks "is this a float?"
  must ask :func:`kind`, which answers ``'f'`` for bfloat16 and ``dtype.kind`` otherwise;
- numpy's rules for Python numbers do not reach it: ``bfloat16_array * 2.5`` is float32
  in numpy, where PyTorch keeps bfloat16. ``promote`` (workbench/ops/arithmetic.py)
  turns such a number into a bfloat16 scalar first.

PyTorch computes with these dtypes in float32 (its "opmath" type) and rounds the result
once; sums, means, matrix products and convolutions accumulate in float32. numpy's
elementwise loops for float16 and ml_dtypes' for bfloat16 already do so; the kernels that
sum (sum, mean, matmul, linear, conv2d, softmax...) and scan (cumsum, cumprod) call
:func:`in_float32`. PyTorch's ops that are made of other ops round after each of them:
``logsumexp`` is ``amax``, ``exp``, ``sum``, ``log``, ``+``, each rounded, and so is ours.

One deliberate difference: PyTorch's CPU ``prod`` multiplies float16/bfloat16 in that
dtype, in as many running products as the CPU's vector registers have lanes, so its
answer depends on the machine (AVX2 or AVX-512) and drifts on long inputs. Ours is the
float32 product rounded once, the same everywhere, and never further from the exact
product than PyTorch's (tests/test_small_floats.py measures both).
"""

from __future__ import annotations

import numpy as np

try:
    import ml_dtypes

    bfloat16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # ml_dtypes is a dependency; without it there is simply no bfloat16
    bfloat16 = None

float16 = np.dtype("float16")
float32 = np.dtype("float32")

SMALL_FLOATS = tuple(d for d in (float16, bfloat16) if d is not None)


def kind(dtype: np.dtype) -> str:
    """numpy's one-letter kind (``'f'`` float, ``'c'`` complex, ``'i'`` int...), with
    bfloat16 counted as the float it is (numpy says ``'V'``)."""
    return "f" if dtype == bfloat16 else dtype.kind


def is_floating(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype == bfloat16


def from_name(name: str) -> np.dtype:
    """The dtype called ``name`` (``'bfloat16'`` too, which numpy knows only once
    ml_dtypes is imported)."""
    if name == "bfloat16" and bfloat16 is not None:
        return bfloat16
    return np.dtype(name)


def finfo(dtype: np.dtype | None = None):
    """``np.finfo`` for any float dtype, bfloat16 included (numpy's refuses it); the
    default dtype (float32) when none is given, as ``torch.finfo()``."""
    if dtype is None:
        dtype = float32
    if dtype == bfloat16:
        return ml_dtypes.finfo(bfloat16)
    return np.finfo(dtype)


# numpy's one-character codes of float16 ('e') and bfloat16 ('E'): kernels test
# ``x.dtype.char in SMALL_FLOAT_CHARS``, one string lookup, so float32 pays next to nothing.
SMALL_FLOAT_CHARS = "".join(d.char for d in SMALL_FLOATS)


def in_float32(kernel, *args, **attrs):
    """``kernel(*args, **attrs)`` with every float16/bfloat16 array as float32, its result
    rounded back to that dtype once: what PyTorch's CPU kernels do for these dtypes (they
    compute and accumulate in float32, their "opmath" type). Kernels that sum call it."""
    small = next(a.dtype for a in args if _is_small_array(a))
    wide = [a.astype(float32) if _is_small_array(a) else a for a in args]
    out = kernel(*wide, **attrs)
    if isinstance(out, tuple):
        return tuple(o.astype(small) if o.dtype == float32 else o for o in out)
    return out.astype(small)


def _is_small_array(a) -> bool:
    # An array, not the shape-and-dtype stand-in a rule gets for an input nobody saved.
    return isinstance(a, np.ndarray) and a.dtype.char in SMALL_FLOAT_CHARS


# PyTorch's legacy type names, which ``x.type()`` prints and ``x.type(name)`` accepts.
LEGACY_TYPE_NAMES = {
    "float32": "FloatTensor",
    "float64": "DoubleTensor",
    "float16": "HalfTensor",
    "bfloat16": "BFloat16Tensor",
    "int64": "LongTensor",
    "int32": "IntTensor",
    "int16": "ShortTensor",
    "int8": "CharTensor",
    "uint8": "ByteTensor",
    "bool": "BoolTensor",
    "complex64": "ComplexFloatTensor",
    "complex128": "ComplexDoubleTensor",
}


def legacy_type_name(dtype: np.dtype, on_gpu: bool = False) -> str:
    """``float32`` → ``'torch.FloatTensor'`` (``'torch.cuda.FloatTensor'`` on a GPU)."""
    return ("torch.cuda." if on_gpu else "torch.") + LEGACY_TYPE_NAMES[dtype.name]


def dtype_of_type_name(name: str) -> np.dtype:
    """``'torch.LongTensor'`` (or ``'torch.cuda.LongTensor'``) → int64."""
    short = name.rsplit(".", 1)[-1]
    for dtype_name, type_name in LEGACY_TYPE_NAMES.items():
        if type_name == short:
            return from_name(dtype_name)
    raise ValueError(f"invalid type: '{name}'")


def iinfo(dtype: np.dtype):
    """The range of an integer dtype (``.min``, ``.max``, ``.bits``), as ``torch.iinfo``."""
    return np.iinfo(dtype)
