"""Sliding windows over NCHW images: the array plumbing under conv2d and the pools.

Nothing here records a graph; these are helpers for kernels. The idea in three steps:

* ``windows`` gives every window of a padded image as a strided *view* of shape
  (N, C, OH, OW, kh, kw): no copy, just numpy stride tricks.
* ``im2col`` copies those windows into a matrix, so a convolution becomes one matmul.
* ``fold`` is the adjoint of ``windows``: it adds per-window values back onto the
  image positions they came from (windows overlap, so positions collect sums).

Padding is always four numbers ``(top, left, bottom, right)``, as TVM writes it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


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
    widths = ((0, 0),) * (x.ndim - 2) + ((top, bottom), (left, right))
    return np.pad(x, widths, constant_values=value)


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


def fold(patches: np.ndarray, geometry: Geometry) -> np.ndarray:
    """The adjoint of ``windows``: add each window's values back onto a padded image.

    ``patches`` has shape (N, C, kh, kw, OH, OW). The loop runs over the kh·kw kernel
    offsets, each step adding a whole strided slice at once.
    """
    n, c, kh, kw = patches.shape[:4]
    (sh, sw), (dh, dw) = geometry.stride, geometry.dilation
    oh, ow = geometry.out_size
    out = np.zeros((n, c) + geometry.padded_size, dtype=patches.dtype)
    for a in range(kh):
        for b in range(kw):
            rows = slice(a * dh, a * dh + sh * (oh - 1) + 1, sh)
            cols = slice(b * dw, b * dw + sw * (ow - 1) + 1, sw)
            out[:, :, rows, cols] += patches[:, :, a, b]
    return out


# ------------------------------------------------------------- convolution
def im2col(x: np.ndarray, geometry: Geometry, groups: int) -> np.ndarray:
    """Windows of ``x`` as columns: shape (G, Cg·kh·kw, N·OH·OW), one column per window."""
    win = windows(pad_image(x, geometry.applied_pads), geometry)
    n, c, oh, ow, kh, kw = win.shape
    win = win.reshape(n, groups, c // groups, oh, ow, kh, kw)
    cols = win.transpose(1, 2, 5, 6, 0, 3, 4)  # (G, Cg, kh, kw, N, OH, OW)
    return cols.reshape(groups, (c // groups) * kh * kw, n * oh * ow)


def col2im(cols: np.ndarray, x_shape: tuple, geometry: Geometry, groups: int) -> np.ndarray:
    """The adjoint of ``im2col``: columns (G, Cg·kh·kw, N·OH·OW) summed back into an image."""
    n, c = x_shape[:2]
    (kh, kw), (oh, ow) = geometry.kernel, geometry.out_size
    patches = cols.reshape(groups, c // groups, kh, kw, n, oh, ow)
    patches = patches.transpose(4, 0, 1, 2, 3, 5, 6).reshape(n, c, kh, kw, oh, ow)
    return crop_image(fold(patches, geometry), geometry)


def grouped_weight(w: np.ndarray, groups: int) -> np.ndarray:
    """Weight (O, Cg, kh, kw) as matrices (G, O/G, Cg·kh·kw)."""
    return w.reshape(groups, w.shape[0] // groups, -1)


def grouped_output(y: np.ndarray, groups: int) -> np.ndarray:
    """Output gradient (N, O, OH, OW) as matrices (G, O/G, N·OH·OW)."""
    n, o, oh, ow = y.shape
    y = y.reshape(n, groups, o // groups, oh * ow).transpose(1, 2, 0, 3)
    return y.reshape(groups, o // groups, n * oh * ow)


def ungroup_output(y: np.ndarray, n: int, geometry: Geometry) -> np.ndarray:
    """Matrices (G, O/G, N·OH·OW) back to an image batch (N, O, OH, OW)."""
    groups, og = y.shape[:2]
    oh, ow = geometry.out_size
    y = y.reshape(groups, og, n, oh, ow).transpose(2, 0, 1, 3, 4)
    return np.ascontiguousarray(y).reshape(n, groups * og, oh, ow)


# ----------------------------------------------------------------- pooling
def window_argmax(x: np.ndarray, geometry: Geometry) -> np.ndarray:
    """For each window, the flat index (into the padded image) of its first largest value.

    Padding is −∞, so it never wins; NaN counts as the largest, so it propagates (both as
    in PyTorch). Ties go to the first element in row-major order within the window.
    """
    padded = pad_image(x, geometry.applied_pads, value=-np.inf)
    win = windows(padded, geometry)
    n, c, oh, ow, kh, kw = win.shape
    best = win.reshape(n, c, oh, ow, kh * kw).argmax(axis=-1)
    a, b = np.divmod(best, kw)
    (sh, sw), (dh, dw) = geometry.stride, geometry.dilation
    hp, wp = geometry.padded_size
    rows = np.arange(oh).reshape(oh, 1) * sh + a * dh
    cols = np.arange(ow) * sw + b * dw
    planes = np.arange(n * c).reshape(n, c, 1, 1) * (hp * wp)
    return planes + rows * wp + cols


def scatter_to_windows(values: np.ndarray, index: np.ndarray, x_shape, geometry) -> np.ndarray:
    """Add ``values`` at the flat padded positions ``index``; return the unpadded image."""
    n, c = x_shape[:2]
    hp, wp = geometry.padded_size
    flat = np.bincount(index.ravel(), weights=values.ravel(), minlength=n * c * hp * wp)
    image = flat.reshape(n, c, hp, wp).astype(values.dtype, copy=False)
    return crop_image(image, geometry)


def gather_from_windows(image: np.ndarray, index: np.ndarray, geometry) -> np.ndarray:
    """The value of ``image`` (zero-padded) at the flat padded positions ``index``."""
    return pad_image(image, geometry.applied_pads).reshape(-1)[index]


def avg_divisor(geometry: Geometry, count_include_pad: bool) -> np.ndarray:
    """How many values each average-pooling window divides by, shape (OH, OW), as PyTorch.

    A window counts the padding it covers when ``count_include_pad`` (but never the
    extra ceil_mode padding); otherwise only the input values inside it.
    """
    sizes = []
    for axis in range(2):
        n, k, s = geometry.in_size[axis], geometry.kernel[axis], geometry.stride[axis]
        before, after = geometry.pads[axis], geometry.pads[axis + 2]
        start = np.arange(geometry.out_size[axis]) * s - before
        end = np.minimum(start + k, n + after)
        inside = np.minimum(end, n) - np.maximum(start, 0)
        sizes.append(end - start if count_include_pad else inside)
    return np.outer(sizes[0], sizes[1])
