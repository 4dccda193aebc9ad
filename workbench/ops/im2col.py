"""Sliding windows over NCHW images: the array plumbing under conv2d and the pools.

Nothing here records a graph; these are helpers for kernels. The ideas:

* ``windows`` gives every window of a padded image as a strided *view* of shape
  (N, C, OH, OW, kh, kw): no copy, just numpy stride tricks.
* ``im2col`` copies those windows into columns, so a convolution becomes one matmul.
* ``offsets`` turns it around: for each of the kh·kw positions inside a window, the
  strided slice of the image that this position reads in *every* window at once.
  Pooling reduces over these kh·kw slices, and ``fold`` (the adjoint of ``windows``)
  adds per-window values back through them. Loops run over kernel offsets, never
  over pixels.

Padding is always four numbers ``(top, left, bottom, right)``, as TVM writes it.

The arrays may be numpy arrays or CuPy arrays on the GPU. Calls such as ``np.maximum(a, b)``
run wherever ``a`` and ``b`` live, but a new array made from a shape (``np.zeros(shape)``)
would always be a numpy array, so those are made with ``xp = backend.xp(x)``, the module
(numpy or cupy) that holds the input.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..core import backend


def pair(value, name: str = "value") -> tuple:
    """``3`` → ``(3, 3)``; a pair stays a pair."""
    if isinstance(value, (int, np.integer)):
        return (int(value), int(value))
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * 2
    if len(value) != 2:
        raise ValueError(f"{name} must be an int or a pair of ints, got {value}")
    return value


def four(padding) -> tuple:
    """Padding as ``(top, left, bottom, right)`` from an int, a (h, w) pair or four ints."""
    if isinstance(padding, (int, np.integer)):
        return (int(padding),) * 4
    padding = tuple(int(p) for p in padding)
    if len(padding) == 2:
        return padding + padding
    if len(padding) == 4:
        return padding
    raise ValueError(f"padding must be an int, 2 ints or 4 ints, got {padding}")


@dataclass(frozen=True)
class Geometry:
    """Where the windows of one 2-D sliding operation fall.

    ``pads`` is the padding asked for (top, left, bottom, right); ``extra`` is what
    ``ceil_mode`` pooling adds at the bottom/right so that the last window fits.
    """

    in_size: tuple  # (H, W)
    out_size: tuple  # (OH, OW)
    kernel: tuple
    stride: tuple
    dilation: tuple
    pads: tuple
    extra: tuple = (0, 0)

    @property
    def applied_pads(self) -> tuple:
        """The padding actually put around the image: ``pads`` plus the ceil_mode extra."""
        top, left, bottom, right = self.pads
        return (top, left, bottom + self.extra[0], right + self.extra[1])

    @property
    def padded_size(self) -> tuple:
        top, left, bottom, right = self.applied_pads
        return (self.in_size[0] + top + bottom, self.in_size[1] + left + right)


def conv_geometry(in_size, kernel, stride, padding, dilation) -> Geometry:
    """Convolution: ``out = ⌊(in + pads − dilation·(k − 1) − 1) / stride⌋ + 1``."""
    top, left, bottom, right = padding
    out = tuple(
        (n + p0 + p1 - d * (k - 1) - 1) // s + 1
        for n, p0, p1, k, s, d in zip(
            in_size, (top, left), (bottom, right), kernel, stride, dilation
        )
    )
    return Geometry(tuple(in_size), out, tuple(kernel), tuple(stride), tuple(dilation), padding)


def pool_geometry(in_size, kernel, stride, padding, dilation, ceil_mode) -> Geometry:
    """Pooling: as convolution, but ``ceil_mode`` rounds up, PyTorch style.

    With ``ceil_mode`` one more window is allowed as long as it *starts* inside the
    input or its top/left padding; the bottom/right padding grows to hold it.
    """
    top, left, bottom, right = padding
    out, extra = [], []
    for n, p0, p1, k, s, d in zip(in_size, (top, left), (bottom, right), kernel, stride, dilation):
        span = d * (k - 1) + 1
        size = (n + p0 + p1 - span + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (size - 1) * s >= n + p0:
            size -= 1
        out.append(size)
        extra.append(max(0, (size - 1) * s + span - (n + p0 + p1)))
    return Geometry(
        tuple(in_size),
        tuple(out),
        tuple(kernel),
        tuple(stride),
        tuple(dilation),
        padding,
        tuple(extra),
    )


def pad_image(x: np.ndarray, pads: tuple, value=0.0) -> np.ndarray:
    """Pad the last two axes by ``(top, left, bottom, right)``."""
    top, left, bottom, right = pads
    if not (top or left or bottom or right):
        return x
    h, w = x.shape[-2:]
    shape = x.shape[:-2] + (top + h + bottom, left + w + right)
    out = backend.xp(x).full(shape, value, dtype=x.dtype)
    out[..., top : top + h, left : left + w] = x
    return out


def crop_image(x: np.ndarray, geometry: Geometry) -> np.ndarray:
    """Undo ``pad_image``: the part of a padded image that covers the input."""
    top, left = geometry.pads[:2]
    h, w = geometry.in_size
    return x[..., top : top + h, left : left + w]


def windows(padded: np.ndarray, geometry: Geometry) -> np.ndarray:
    """Every window of ``padded`` as a view of shape (N, C, OH, OW, kh, kw)."""
    (kh, kw), (sh, sw), (dh, dw) = geometry.kernel, geometry.stride, geometry.dilation
    oh, ow = geometry.out_size
    span = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
    view = sliding_window_view(padded, span, axis=(-2, -1))
    return view[..., : sh * (oh - 1) + 1 : sh, : sw * (ow - 1) + 1 : sw, ::dh, ::dw]


def offsets(geometry: Geometry):
    """For each kernel offset (a, b): the index of the padded image it reads in every window.

    ``padded[key]`` has shape (N, C, OH, OW): element (i, j) is the value at offset
    (a, b) of window (i, j), i.e. at row ``i·stride + a·dilation``.
    """
    (kh, kw), (sh, sw), (dh, dw) = geometry.kernel, geometry.stride, geometry.dilation
    oh, ow = geometry.out_size
    for a in range(kh):
        for b in range(kw):
            rows = slice(a * dh, a * dh + sh * (oh - 1) + 1, sh)
            cols = slice(b * dw, b * dw + sw * (ow - 1) + 1, sw)
            yield a, b, (Ellipsis, rows, cols)


def fold(patches: np.ndarray, geometry: Geometry) -> np.ndarray:
    """The adjoint of ``windows``: add each window's values back onto a padded image.

    ``patches`` has shape (N, C, kh, kw, OH, OW); overlapping windows add up.
    """
    xp = backend.xp(patches)
    out = xp.zeros(patches.shape[:2] + geometry.padded_size, dtype=patches.dtype)
    for a, b, key in offsets(geometry):
        out[key] += patches[:, :, a, b]
    return out


# ------------------------------------------------------------- convolution
def im2col(x: np.ndarray, geometry: Geometry, groups: int) -> np.ndarray:
    """Windows of ``x`` as columns: shape (N, G, Cg·kh·kw, OH·OW), one column per window."""
    win = windows(pad_image(x, geometry.pads), geometry)
    n, c, oh, ow, kh, kw = win.shape
    cols = win.transpose(0, 1, 4, 5, 2, 3)  # (N, C, kh, kw, OH, OW): the one copy is next
    return cols.reshape(n, groups, (c // groups) * kh * kw, oh * ow)


def col2im(cols: np.ndarray, x_shape: tuple, geometry: Geometry) -> np.ndarray:
    """The adjoint of ``im2col``: columns (N, G, Cg·kh·kw, OH·OW) summed back into an image."""
    n, c = x_shape[:2]
    (kh, kw), (oh, ow) = geometry.kernel, geometry.out_size
    patches = cols.reshape(n, c, kh, kw, oh, ow)
    return crop_image(fold(patches, geometry), geometry)


def grouped_weight(w: np.ndarray, groups: int) -> np.ndarray:
    """Weight (O, Cg, kh, kw) as matrices (G, O/G, Cg·kh·kw)."""
    return w.reshape(groups, w.shape[0] // groups, -1)


def grouped_output(y: np.ndarray, groups: int) -> np.ndarray:
    """An output-shaped array (N, O, OH, OW) as matrices (N, G, O/G, OH·OW); no copy."""
    n, o, oh, ow = y.shape
    return y.reshape(n, groups, o // groups, oh * ow)


# ----------------------------------------------------------------- pooling
def window_max(padded: np.ndarray, geometry: Geometry) -> np.ndarray:
    """The largest value of each window (NaN wins, as in PyTorch): (N, C, OH, OW)."""
    best = None
    for _, _, key in offsets(geometry):
        best = padded[key].copy() if best is None else np.maximum(best, padded[key], out=best)
    return best


def window_sum(padded: np.ndarray, geometry: Geometry) -> np.ndarray:
    """The sum of each window: (N, C, OH, OW)."""
    total = None
    for _, _, key in offsets(geometry):
        total = padded[key].copy() if total is None else np.add(total, padded[key], out=total)
    return total


def window_argmax(x: np.ndarray, geometry: Geometry) -> np.ndarray:
    """For each window, the kernel offset ``a·kw + b`` of its first largest value.

    Padding is −∞, so it never wins; NaN counts as the largest (as in PyTorch). A later
    offset replaces the best only when strictly larger, so ties keep the first one in
    row-major order. (Masks are applied by arithmetic, ``arg += better · (k − arg)``,
    which numpy does much faster than masked assignment.)
    """
    padded = pad_image(x, geometry.applied_pads, value=-np.inf)
    has_nan = bool(np.isnan(x).any())
    best = arg = None
    for k, (_, _, key) in enumerate(offsets(geometry)):
        values = padded[key]
        if best is None:
            best, arg = values, backend.xp(x).zeros(values.shape, dtype=np.int32)
            continue
        better = values > best
        if has_nan:
            better |= np.isnan(values) & ~np.isnan(best)
        best = np.maximum(best, values)
        arg += better * (k - arg)
    return arg


def scatter_to_argmax(values: np.ndarray, arg: np.ndarray, x_shape, geometry) -> np.ndarray:
    """Add each window's value at its argmax position; return the (unpadded) image."""
    xp = backend.xp(values)
    out = xp.zeros(tuple(x_shape[:2]) + geometry.padded_size, dtype=values.dtype)
    for k, (_, _, key) in enumerate(offsets(geometry)):
        out[key] += _masked(values, arg == k)
    return crop_image(out, geometry)


def gather_at_argmax(image: np.ndarray, arg: np.ndarray, geometry) -> np.ndarray:
    """The value of ``image`` (zero-padded) at each window's argmax position."""
    padded = pad_image(image, geometry.applied_pads)
    out = backend.xp(image).zeros(arg.shape, dtype=image.dtype)
    finite = bool(np.isfinite(image).all())
    for k, (_, _, key) in enumerate(offsets(geometry)):
        out += _masked(padded[key], arg == k, finite)
    return out


def _masked(values: np.ndarray, mask: np.ndarray, finite: bool | None = None) -> np.ndarray:
    """``values`` where ``mask``, else 0. Multiplying by the mask is fast, but inf · 0 is
    NaN, so non-finite values take the slower ``np.where``."""
    if finite is None:
        finite = bool(np.isfinite(values).all())
    return values * mask if finite else np.where(mask, values, 0)


def argmax_flat_index(arg: np.ndarray, geometry: Geometry) -> np.ndarray:
    """PyTorch's ``return_indices``: each argmax as ``row · W + col`` within its plane."""
    (sh, sw), (dh, dw) = geometry.stride, geometry.dilation
    xp = backend.xp(arg)
    a, b = np.divmod(arg, geometry.kernel[1])
    oh, ow = geometry.out_size
    rows = xp.arange(oh).reshape(oh, 1) * sh + a * dh - geometry.pads[0]
    cols = xp.arange(ow) * sw + b * dw - geometry.pads[1]
    return (rows * geometry.in_size[1] + cols).astype(np.int64)


def avg_divisor(geometry: Geometry, count_include_pad: bool, like) -> np.ndarray:
    """How many values each average-pooling window divides by, shape (OH, OW), as PyTorch.

    A window counts the padding it covers when ``count_include_pad`` (but never the
    extra ceil_mode padding); otherwise only the input values inside it. The divisor is
    made on the device of ``like`` (the array it will divide).
    """
    xp = backend.xp(like)
    sizes = []
    for axis in range(2):
        n, k, s = geometry.in_size[axis], geometry.kernel[axis], geometry.stride[axis]
        before, after = geometry.pads[axis], geometry.pads[axis + 2]
        start = xp.arange(geometry.out_size[axis]) * s - before
        end = np.minimum(start + k, n + after)
        inside = np.minimum(end, n) - np.maximum(start, 0)
        sizes.append(end - start if count_include_pad else inside)
    return np.outer(sizes[0], sizes[1])
