"""Argument checks for the public boundary: one shared place for the errors that teach.

Public functions (ops, factories, layers, losses) check their arguments with these
before any kernel runs, so bad input gets one clear sentence that names the op, the
argument and the value or shapes, raised as the exception type PyTorch raises for it
(``RuntimeError`` for most bad sizes, ``IndexError`` for a dim or an index out of
range, ``TypeError`` for a value of the wrong type, ``ValueError`` for a bad option).
Without these checks the same mistakes surface from deep inside numpy:
``ZeroDivisionError`` for a zero stride, "could not broadcast input array" for a
negative padding.

Each check is cheap: it looks at the arguments (a stride, a dim, a shape), never at
the elements of a tensor, except :func:`indices_in_range`, which finds the
smallest and largest index in one pass each.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from . import dtypes
from .tensor import Tensor

INTEGERS = (int, np.integer)


def type_name(value) -> str:
    return type(value).__name__


# ------------------------------------------------------------------ names, Python ints
def name_arg(op: str, arg: str, name) -> str:
    """A name for a tensor or a scope: a string a UTF-8 file can hold, since traces keep it.

    A lone surrogate (``"\\ud800"``, what decoding broken bytes with ``surrogateescape``
    leaves) is a Python string no UTF-8 text can hold: refused here, where it is given,
    rather than when a trace that recorded it is saved.
    """
    if not isinstance(name, str):
        raise TypeError(f"{op}(): argument '{arg}' must be str, not {type_name(name)}")
    if not name.isascii():
        try:
            name.encode("utf-8")
        except UnicodeEncodeError as err:
            raise ValueError(
                f"{op}(): argument '{arg}' holds the lone surrogate {name[err.start]!r} at "
                f"position {err.start}, which no UTF-8 text can hold (a trace could not "
                "save it)"
            ) from None
    return name


# PyTorch converts a Python int operand to a 64-bit integer, signed or unsigned.
INT_LOW, INT_HIGH = -(2**63), 2**64 - 1


def int_overflow(op: str, arg: str, value: int) -> OverflowError:
    """The error for a Python int operand outside ``INT_LOW..INT_HIGH`` (PyTorch's type)."""
    shown = f"{value}" if value.bit_length() <= 128 else f"an int of {value.bit_length()} bits"
    return OverflowError(
        f"{op}(): argument '{arg}' is {shown}, too big to convert: Python ints given to an "
        "op must lie between -2**63 and 2**64 - 1"
    )


# ------------------------------------------------------------------ tensors, numbers
def tensor_arg(op: str, name: str, value):
    """``value`` itself when it is a Tensor; TypeError otherwise (``exp("a")``)."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type_name(value)}")
    return value


def flag(op: str, name: str, value) -> bool:
    """A bool option (``keepdim``, ``unbiased``): ``keepdim="a"`` is PyTorch's TypeError,
    where Python's truth would quietly take any non-empty string as True."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}(): argument '{name}' must be bool, not {type_name(value)}")
    return bool(value)


def engine_flag(op: str, name: str, value, default: bool | None = None) -> bool:
    """A flag of ``backward()``/``grad()`` (``retain_graph``, ``create_graph``), read as
    PyTorch's engine reads it: a bool, or an int from 0 to 255 (a C byte; a one-element
    integer tensor counts as its int), True when not 0. None means ``default`` where the
    flag has one. ``"no"``, 0.5 or None otherwise are its TypeError and -1 its
    OverflowError, where Python's truth would read each of them as a quiet True."""
    if value is None and default is not None:
        return default
    if isinstance(value, Tensor) and value._data.size == 1 and value._data.dtype.kind in "iub":
        value = value.item()
    if isinstance(value, bool):
        return value
    if isinstance(value, Tensor):
        raise TypeError(
            f"{op}(): argument '{name}' must be bool, not a {value.dtype} Tensor of shape "
            f"{tuple(value.shape)} (only an integer Tensor of one element stands for a bool)"
        )
    if not isinstance(value, INTEGERS):
        raise TypeError(f"{op}(): argument '{name}' must be bool, not {type_name(value)}")
    if not 0 <= value <= 255:
        raise OverflowError(
            f"{op}(): argument '{name}' must be bool, not the int {value}: an int stands for "
            "a bool here only from 0 to 255 (PyTorch reads it as one byte)"
        )
    return bool(value)


def reduction_args(op: str, input, keepdim) -> None:
    """A reduction's tensor and ``keepdim``; its callers test the common case inline
    first, so that a learner stepping through ``x.sum()`` meets no check at all."""
    tensor_arg(op, "input", input)
    flag(op, "keepdim", keepdim)


def int_arg(op: str, name: str, value) -> int:
    """An int option (``diagonal``, ``chunks``): a float or a string is PyTorch's TypeError,
    an int beyond 64 bits its ValueError."""
    if isinstance(value, bool) or not isinstance(value, INTEGERS):
        raise TypeError(
            f"{op}(): argument '{name}' must be int, not {type_name(value)} ({value!r})"
        )
    if not fits_c_long(value):
        raise ValueError(f"{op}(): argument '{name}' is {value}, too large to convert to a C long")
    return int(value)


def fits_c_long(value: int) -> bool:
    """Whether PyTorch can take ``value`` as an int argument (a C long: 64 bits, signed)."""
    return -(2**63) <= value < 2**63


def int_list(op: str, name: str, values) -> tuple:
    """A list of ints (sizes, dims, split sizes) read as PyTorch's argument parser reads one.

    Each element is an int or anything with ``__index__`` (a numpy int, an integer 0-d
    tensor); a float or a string is PyTorch's TypeError naming its position, and so is an
    int that an int64 cannot hold, where numpy would round or overflow. PyTorch's parser
    checks the first element's type only: a bool there is refused, a later one is read
    as 0 or 1 (``x.view(6, True)`` is ``x.view(6, 1)``).
    """
    if not isinstance(values, (tuple, list)):
        raise TypeError(
            f"{op}(): argument '{name}' must be tuple of ints, not {type_name(values)} ({values!r})"
        )
    ints = []
    for pos, value in enumerate(values):
        number = _index(value) if pos or not isinstance(value, bool) else None
        if number is None:
            raise TypeError(
                f"{op}(): argument '{name}' must be tuple of ints, but found element of type "
                f"{type_name(value)} at pos {pos} ({value!r})"
            )
        if not fits_c_long(number):
            raise TypeError(
                f"{op}(): argument '{name}' failed to unpack the element at pos {pos}: {number} "
                "is beyond an int64 (-2**63 to 2**63 - 1)"
            )
        ints.append(number)
    return tuple(ints)


def _index(value) -> int | None:
    """``value`` as an int where it stands for one (``operator.index``), else None."""
    try:
        return operator.index(value)
    except TypeError:
        return None


def number_arg(op: str, name: str, value, complex_ok: bool = False):
    """A number option (``rtol``, ``alpha``, ``correction``): anything else is PyTorch's
    TypeError naming the option, where numpy would fail inside the kernel."""
    kinds = (int, float, np.integer, np.floating) + (
        (complex, np.complexfloating) if complex_ok else ()
    )
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise TypeError(
            f"{op}(): argument '{name}' must be a number, not {type_name(value)} ({value!r})"
        )
    return value


def scalar_arg(op: str, name: str, value):
    """PyTorch's ``Number`` (Scalar) argument: a bool, int, float or complex, a numpy
    number or a 0-d tensor, as a Python number. ``full((2,), "a")`` or
    ``leaky_relu(x, None)`` is PyTorch's TypeError naming the argument, where numpy
    would fail inside the kernel with its own message (or fill with NaN)."""
    if isinstance(value, Tensor) and value.ndim == 0:
        return value.item()
    if not isinstance(value, (bool, int, float, complex, np.number)):
        raise TypeError(
            f"{op}(): argument '{name}' must be Number, not {type_name(value)} ({value!r})"
        )
    if isinstance(value, int) and not INT_LOW <= value <= INT_HIGH:
        raise int_overflow(op, name, value)
    return value


def value_fits(op: str, name: str, value, dtype, count: int | None = None) -> object:
    """A Python number that ``dtype`` can hold, as PyTorch converts a Scalar to it: the
    number itself (a complex one with no imaginary part as its real part, a negative one
    for an unsigned dtype wrapped).

    ``count`` is the number of elements a fill writes (``full``, ``fill_``): PyTorch's CPU
    fill of a single element (its ``scalar_fill``) converts a float16 or bfloat16 value
    without the overflow check, so ``full((1,), 70000., dtype=float16)`` is inf there (the
    value rounded), where two elements are its overflow error; other dtypes are checked
    either way.

    Anything else is PyTorch's RuntimeError "value cannot be converted to type ... without
    overflow", where numpy would drop the imaginary part, wrap an int or give inf: a
    complex number with an imaginary part in a real dtype; NaN, inf or an int out of range
    in an integer dtype (an unsigned one takes an int down to minus its maximum, which
    wraps, as PyTorch's check allows, but no negative float: -1.0 has no two's complement);
    a finite float beyond the largest of a float dtype (or of a complex dtype's parts). A
    bool dtype holds anything.
    """
    kind = dtypes.kind(np.dtype(dtype))
    if kind == "b":
        return value
    if kind == "c":  # each part as its float: 1e39 does not fit complex64's float32
        for part in (complex(value).real, complex(value).imag):
            value_fits(op, name, part, np.finfo(dtype).dtype)
        return value
    if isinstance(value, (complex, np.complexfloating)):
        if value.imag:
            raise _cannot_convert(op, name, value, dtype, "a complex number in a real dtype")
        value = value.real
    if kind in "iu" and not isinstance(value, bool):
        high = int(np.iinfo(dtype).max)
        wraps = kind == "u" and isinstance(value, (int, np.integer))
        low = -high if wraps else int(np.iinfo(dtype).min)
        if not (math.isfinite(value) and low <= value <= high):
            raise _cannot_convert(op, name, value, dtype, f"it holds {low} to {high}")
        if value < 0 and wraps:
            value = int(value) + high + 1  # wrapped as PyTorch's cast does; numpy refuses it
    elif kind == "f" and math.isfinite(value) and abs(value) > float(dtypes.finfo(dtype).max):
        if count == 1 and np.dtype(dtype) in dtypes.SMALL_FLOATS:
            with np.errstate(over="ignore"):
                return float(np.asarray(value).astype(dtype))  # inf, or the largest if nearer
        raise _cannot_convert(op, name, value, dtype, "beyond its largest finite value")
    return value


def _cannot_convert(op: str, name: str, value, dtype, why: str) -> RuntimeError:
    return RuntimeError(
        f"{op}(): argument '{name}' is {value!r}: value cannot be converted to type "
        f"{np.dtype(dtype)} without overflow ({why})"
    )


def tensor_args(op: str, optional: tuple = (), **named) -> None:
    """Each named argument is a Tensor (``None`` too where its name is in ``optional``):
    ``F.linear(x, "w")`` is PyTorch's TypeError naming ``weight``, not an AttributeError
    from the first line that reads ``weight.shape``."""
    for name, value in named.items():
        if value is None and name in optional:
            continue
        tensor_arg(op, name, value)


def not_bool(op: str, name: str, value: Tensor, error=NotImplementedError) -> None:
    """PyTorch has no bool kernel for a pool, a convolution or most losses: its error type
    (NotImplementedError, "not implemented for 'Bool'"), naming the argument, where numpy
    would fail inside the kernel ("The numpy boolean negative... is not supported")."""
    if value.dtype == np.bool_:
        raise error(
            f"{op}(): argument '{name}' is a bool tensor (shape {tuple(value.shape)}): "
            "not implemented for 'Bool'"
        )


def as_tensor(op: str, name: str, value) -> Tensor:
    """``value`` as a tensor: a Tensor itself, numbers (in lists, arrays) a constant one.

    Anything else is PyTorch's TypeError naming the op and the argument, where the
    conversion's own message would name only ``tensor()``, which the user never called.
    """
    if isinstance(value, Tensor):
        return value
    try:
        return Tensor(value)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(
            f"{op}(): argument '{name}' must be a Tensor or numbers, not {type_name(value)} ({err})"
        ) from None


def operand(op: str, name: str, value):
    """An operand of arithmetic: a Tensor, a number, or numbers in a list or an array.

    A string (``x * "a"``) or any other object is a TypeError that names the op, where
    numpy would say "could not convert string to float".
    """
    if not is_operand(value):
        raise TypeError(
            f"{op}(): argument '{name}' must be a Tensor or a number, not "
            f"{type_name(value)} ({value!r})"
        )
    return value


def is_operand(value) -> bool:
    """Whether ``value`` is a Tensor, a number, or numbers in a list or an array."""
    numeric = (Tensor, int, float, complex, np.generic, np.ndarray, list, tuple)
    if isinstance(value, (str, bytes)):
        return False
    return isinstance(value, numeric) or hasattr(type(value), "__array__")  # array-likes


def flag_arg(op: str, name: str, value, none_is_false: bool = False) -> bool:
    """A True/False argument (``requires_grad=``): PyTorch's TypeError for anything else,
    where Python's truth would read ``"no"``, ``-1`` or NaN as True. (``zeros``, ``rand``
    and the other factories of a size take None as False, as PyTorch's do.)"""
    if value is None and none_is_false:
        return False
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}(): argument '{name}' must be bool, not {type_name(value)}")
    return bool(value)


def truth_arg(op: str, name: str, value) -> bool:
    """An option PyTorch reads with Python's ``if value:`` (``persistent``, ``keep_vars``,
    ``weights_only``): any object, a one-element tensor as its element. A tensor of
    several elements (or none) has no truth: PyTorch's RuntimeError, here naming the
    option rather than only the tensor."""
    if isinstance(value, Tensor) and value.numel() != 1:
        count = "no value" if value.numel() == 0 else "more than one value"
        raise RuntimeError(
            f"{op}(): argument '{name}' is a tensor of shape {tuple(value.shape)}: Boolean "
            f"value of Tensor with {count} is ambiguous"
        )
    return bool(value)


def dtype_arg(op: str, dtype) -> np.dtype:
    """A dtype (``wb.float32``, ``np.float64``, ``float``...); a string is a TypeError, as
    in PyTorch, which has no dtype names."""
    if isinstance(dtype, str):
        raise TypeError(
            f"{op}(): argument 'dtype' must be a dtype such as wb.float32, not the string {dtype!r}"
        )
    if not isinstance(dtype, (type, np.dtype)) and hasattr(dtype, "shape"):
        # numpy reads any object with a ``.dtype`` (a tensor, an array) as its dtype
        raise TypeError(
            f"{op}(): argument 'dtype' must be a dtype such as wb.float32, not {type_name(dtype)}"
        )
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(
            f"{op}(): argument 'dtype' must be a dtype such as wb.float32, not "
            f"{type_name(dtype)} ({dtype!r})"
        ) from None


def nested_lengths(op: str, data, dim: int = 0) -> None:
    """Raise PyTorch's ValueError where nested lists are ragged (``[[1, 2], [3]]``):
    "expected sequence of length 2 at dim 1 (got 1)". Called only once numpy has
    refused the data, so the common path never walks a list."""
    if not isinstance(data, (list, tuple)) or not data:
        return
    first = data[0]
    expected = len(first) if isinstance(first, (list, tuple)) else None
    for item in data:
        length = len(item) if isinstance(item, (list, tuple)) else None
        if length != expected:
            got = "a number" if length is None else length
            wanted = "a number" if expected is None else f"length {expected}"
            raise ValueError(f"{op}(): expected sequence of {wanted} at dim {dim + 1} (got {got})")
        nested_lengths(op, item, dim + 1)


# ------------------------------------------------------------------------- sizes
def shape_arg(op: str, size, name: str = "size") -> tuple:
    """Sizes given as ``f(2, 3)`` or ``f((2, 3))``, as a tuple of ints.

    The sizes are read by :func:`int_list`, as PyTorch's parser reads them (``zeros(2,
    True)`` is ``zeros(2, 1)``, ``zeros(True, 2)`` a TypeError, 2**70 a TypeError); a
    negative size is PyTorch's RuntimeError "Trying to create tensor with negative
    dimension".
    """
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    shape = int_list(op, name, tuple(size))
    if shape and min(shape) < 0:
        raise RuntimeError(
            f"{op}(): argument '{name}' holds a negative size: Trying to create tensor with "
            f"negative dimension {min(shape)}: {list(shape)}"
        )
    return shape


def size_sequence(op: str, size, name: str = "size") -> tuple:
    """A size given as one sequence, as ``full``'s: ``full(2, 1.0)`` is PyTorch's
    TypeError (a lone int is taken only where sizes may come one by one, as ``zeros(2)``)."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(
            f"{op}(): argument '{name}' must be tuple of ints, not {type_name(size)} ({size!r})"
        )
    return shape_arg(op, (tuple(size),), name)


def storage_fits(op: str, shape: tuple, dtype) -> None:
    """PyTorch's RuntimeError for a tensor whose size in bytes overflows an int64.

    numpy says "array is too big" (a ValueError) or, for a 64-dim shape, fails in its
    iterator; PyTorch refuses such a size before allocating, and so do the factories.
    """
    nbytes = np.dtype(dtype).itemsize
    for size in shape:
        nbytes *= size
    if nbytes > 2**63 - 1:
        raise RuntimeError(
            f"{op}: Storage size calculation overflowed with sizes={[int(s) for s in shape]}"
        )


def int_pair(op: str, name: str, value) -> tuple:
    """``3`` → ``(3, 3)``; one or two ints stay; anything else names ``name`` and ``value``."""
    if isinstance(value, INTEGERS) and not isinstance(value, bool):
        return (int(value), int(value))
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, INTEGERS) for v in value):
        raise TypeError(
            f"{op}(): argument '{name}' must be an int or a tuple of 2 ints, not "
            f"{type_name(value)} ({value!r})"
        )
    if len(value) not in (1, 2):
        raise RuntimeError(
            f"{op}: expected {name} to be a single integer value or a list of 2 values, but "
            f"got {name}={tuple(value)}"
        )
    pair = tuple(int(v) for v in value)
    return pair * 2 if len(pair) == 1 else pair


def positive(op: str, name: str, value, error=RuntimeError):
    """Kernel sizes, strides, dilations, groups (an int or a tuple of ints): each must be
    greater than zero (PyTorch's RuntimeError "non-positive stride is not supported";
    ``nn.Conv2d`` raises ValueError for its ``groups``)."""
    if min(value if isinstance(value, tuple) else (value,)) <= 0:
        raise error(f"{op}: {name} should be greater than zero, but got {name}={value}")
    return value


def non_negative(op: str, name: str, value):
    """Paddings (an int or a tuple of ints): a negative one is a RuntimeError."""
    if min(value if isinstance(value, tuple) else (value,)) < 0:
        raise RuntimeError(f"{op}: negative {name} is not supported, but got {name}={value}")
    return value


# ------------------------------------------------------------------ dims, indices
def dim_in_range(op: str, dim, ndim: int) -> int:
    """``dim`` as an axis in [0, ndim), accepting negatives. A 0-d tensor takes dims -1
    and 0, as in PyTorch."""
    dim = int_arg(op, "dim", dim)  # not a bool, a float, nor beyond 64 bits
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise IndexError(
            f"{op}: Dimension out of range (expected to be in range of [{-size}, {size - 1}], "
            f"but got {dim})"
        )
    return dim % size


def non_empty_reduction(op: str, shape: tuple, dims: tuple | None, error=RuntimeError) -> None:
    """max, min, argmax...: a maximum over no elements does not exist. Over all dims it is
    ``error`` (RuntimeError; argmax's is IndexError), over an empty dim an IndexError."""
    if dims is None:
        if 0 in shape:
            raise error(
                f"{op}(): Expected reduction dim to be specified for input.numel() == 0 (input "
                f"shape {tuple(shape)}). Specify the reduction dim with the 'dim' argument."
            )
        return
    for d in dims:
        if shape and shape[d] == 0:
            raise IndexError(
                f"{op}(): Expected reduction dim {d} to have non-zero size (input shape "
                f"{tuple(shape)})."
            )


def indices_in_range(
    op: str,
    index: np.ndarray,
    size: int,
    dim: int,
    shape: tuple,
    error=IndexError,
    negative_ok: bool = True,
) -> None:
    """Every index in [-size, size), or in [0, size) where ``negative_ok`` is False.

    ``error`` is the type PyTorch raises for this op (IndexError for take, embedding and
    index_select but along dim 1, RuntimeError for gather). PyTorch's ``take`` counts a
    negative index from the end, as numpy does; its ``index_select``, ``gather`` and ``embedding``
    refuse one, so those must not let numpy wrap it to the last rows.
    """
    if not index.size:
        return
    high, low = index.max(), index.min()
    if high >= size or low < (-size if negative_ok else 0):
        bad = int(high if high >= size else low)
        raise error(
            f"{op}(): index {bad} is out of bounds for dimension {dim} with size {size} "
            f"(input shape {tuple(shape)})"
        )


def integer_index(op: str, index) -> None:
    """An index tensor must hold integers (PyTorch's RuntimeError otherwise)."""
    if index.dtype.kind not in "iu":
        raise RuntimeError(
            f"{op}(): Expected dtype int32 or int64 for index, but got {index.dtype}"
        )


# ------------------------------------------------------------------------ options
def one_of(op: str, name: str, value, choices: tuple, error=ValueError):
    """``value`` when it is one of ``choices``; otherwise name the choices."""
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise error(f"{op}: {name} must be one of {listed}, but got {value!r}")
    return value


def reduction(op: str, value: str) -> str:
    """A loss's ``reduction``: 'none', 'mean' or 'sum' (PyTorch's ValueError otherwise)."""
    if value not in ("none", "mean", "sum"):
        raise ValueError(
            f"{op}: {value} is not a valid value for reduction (use 'none', 'mean' or 'sum')"
        )
    return value


def probability(op: str, p) -> float:
    """A dropout probability, in [0, 1]."""
    number_arg(op, "p", p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    return p
