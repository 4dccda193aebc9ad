"""The child process of tests/test_no_crash.py: random indexing, shapes and sizes.

Run as ``python tests/no_crash_child.py EXAMPLES``. Each example is printed to stderr
before it runs, so that a crash (a signal: numpy writing past a buffer) leaves the last
one in the parent's hands. Any Python exception is a fine outcome here: it is an error
message. Only a child that does not exit normally fails the test. The address space is
limited to 4 GiB, so a huge allocation is a MemoryError, never the machine's memory.
"""

from __future__ import annotations

import math
import resource
import sys

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench as wb

resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))

HUGE = [2**62, 2**63 - 1, 2**31, 2**40, 2**33, 0, 1, 3]
SHAPES = st.lists(st.sampled_from([1, 1, 1, 2, 3]), max_size=40).filter(
    lambda s: math.prod(s) <= 256
)
INDEX_ARRAY = st.builds(
    lambda ndim, value: np.full((1,) * ndim, value, dtype=np.int64),
    st.integers(0, 64),
    st.sampled_from([0, 0, -1, 1, 2]),  # mostly in range: the index must reach the kernels
)
KEY_PARTS = st.one_of(
    st.integers(-4, 4),
    st.builds(
        slice,
        st.none() | st.integers(-4, 4),
        st.none() | st.integers(-4, 4),
        st.none() | st.integers(-3, 3).filter(bool),
    ),
    st.none(),
    st.just(Ellipsis),
    INDEX_ARRAY,
    st.lists(st.integers(-3, 3), max_size=4),
    st.lists(st.booleans(), min_size=1, max_size=3),
)
KEYS = st.one_of(
    st.tuples(INDEX_ARRAY),  # one index array, often of more than 32 dims
    st.tuples(st.just(Ellipsis), INDEX_ARRAY),
    st.lists(KEY_PARTS, max_size=6).map(tuple),
)


def attempt(what: str, action) -> None:
    print(what, file=sys.stderr, flush=True)
    try:
        action()
    except Exception:  # noqa: BLE001 - an error message is a normal exit; only crashes count
        pass


def index_and_backward(shape, key, dtype):
    x = wb.ones(*shape, dtype=dtype, requires_grad=True)
    y = x[tuple(wb.tensor(k) if isinstance(k, np.ndarray) else k for k in key)]
    y.sum().backward()


def index_put(shape, key):
    x = wb.zeros(*shape)
    x[tuple(wb.tensor(k) if isinstance(k, np.ndarray) else k for k in key)] = 1.0


def gather_and_take(shape, index):
    x = wb.ones(*shape, requires_grad=True)
    i = wb.tensor(index)
    wb.take(x, i).sum().backward()
    if x.ndim == i.ndim and x.ndim:
        x.gather(0, i.abs() % max(shape[0], 1)).sum().backward()


def sizes(op, size):
    getattr(wb, op)(*size)


def reshape_and_expand(shape, new_shape):
    x = wb.ones(*shape, requires_grad=True)
    x.reshape(new_shape).sum().backward()
    wb.ones(1).expand(*new_shape).sum()


def run(examples: int) -> None:
    @settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(
        shape=SHAPES,
        key=KEYS,
        dtype=st.sampled_from([wb.float32, wb.float64, wb.bfloat16, wb.complex64]),
        index=INDEX_ARRAY,
        op=st.sampled_from(["ones", "zeros", "empty", "rand", "randn"]),
        size=st.lists(st.sampled_from(HUGE), min_size=1, max_size=4),
        new_shape=st.lists(st.sampled_from(HUGE + [-1]), max_size=5),
    )
    def example(shape, key, dtype, index, op, size, new_shape):
        attempt(
            f"x = ones{tuple(shape)} {dtype}; x[{key!r}]",
            lambda: index_and_backward(shape, key, dtype),
        )
        attempt(f"zeros{tuple(shape)}[{key!r}] = 1.0", lambda: index_put(shape, key))
        attempt(
            f"take/gather ones{tuple(shape)} at {index.shape}",
            lambda: gather_and_take(shape, index),
        )
        attempt(f"{op}{tuple(size)}", lambda: sizes(op, size))
        attempt(
            f"ones{tuple(shape)}.reshape{tuple(new_shape)}",
            lambda: reshape_and_expand(shape, new_shape),
        )

    example()
    print("finished", examples, "examples", flush=True)


if __name__ == "__main__":
    run(int(sys.argv[1]))
